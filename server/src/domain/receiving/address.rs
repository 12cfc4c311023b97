//! The shape of a deposit address on each chain: what a route, a recipient
//! or a payout to an address is checked against, and what the sandbox gives
//! out. A leaf, so the settings can check the operator's addresses without
//! the claims that hand them out.

use crate::domain::receiving::hd;

/// Why `address` cannot receive on `chain`, or `None` when it can.
pub(crate) fn address_problem(chain: &str, address: &str) -> Option<String> {
    let address = address.trim();
    let base58 = |c: char| c.is_ascii_alphanumeric() && !"0OIl".contains(c);
    match hd::address_kind(chain) {
        Some(hd::AddressKind::Evm) => {
            let Some(hex) = address.strip_prefix("0x") else {
                return Some("an EVM address starts with 0x".into());
            };
            if hex.len() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Some("an EVM address is 0x and 40 hexadecimal digits".into());
            }
            let mut bytes = [0u8; 20];
            for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks(2)) {
                *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
            }
            let mixed =
                hex.chars().any(|c| c.is_ascii_uppercase()) && hex.chars().any(|c| c.is_ascii_lowercase());
            (mixed && hd::eip55(&bytes) != address).then(|| "the EIP-55 checksum does not match".into())
        }
        Some(hd::AddressKind::Tron) => {
            (!(address.len() == 34 && address.starts_with('T') && address.chars().all(base58)))
                .then(|| "a Tron address is T and 33 base58 characters".into())
        }
        None => (!((32..=44).contains(&address.len()) && address.chars().all(base58)))
            .then(|| format!("not a {chain} address (32 to 44 base58 characters)")),
    }
}

/// A sandbox deposit address of `chain`'s form (the mainnet chain's name):
/// random, never funded, but shaped as a wallet would expect (EIP-55 on EVM
/// chains, base58check `T…` on Tron, 32 bytes of base58 elsewhere).
pub(crate) fn sandbox_address(chain: &str) -> String {
    let bytes: [u8; 20] = rand::random();
    match hd::address_kind(chain) {
        Some(hd::AddressKind::Evm) => hd::eip55(&bytes),
        Some(hd::AddressKind::Tron) => {
            let payload: Vec<u8> = std::iter::once(0x41).chain(bytes).collect();
            bs58::encode(payload).with_check().into_string()
        }
        None => bs58::encode(rand::random::<[u8; 32]>()).into_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::receiving::hd;

    /// Issue 30.2: the sandbox gave `0x…` for USDT on Tron. Each chain's
    /// sandbox address is of that chain's own form, and passes the same
    /// check a payout to it meets.
    #[test]
    fn sandbox_addresses_take_each_chains_own_form() {
        for _ in 0..50 {
            let tron = sandbox_address("tron");
            let payload = bs58::decode(&tron).with_check(None).into_vec().expect("base58check");
            assert!(tron.starts_with('T') && tron.len() == 34 && payload.len() == 21, "{tron}");
            assert_eq!(payload[0], 0x41, "Tron's mainnet prefix: {tron}");
            assert_eq!(address_problem("tron", &tron), None);

            for chain in ["ethereum", "base", "polygon"] {
                let evm = sandbox_address(chain);
                let hex = evm.strip_prefix("0x").expect("0x");
                let mut bytes = [0u8; 20];
                for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks(2)) {
                    *byte = u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap();
                }
                assert_eq!(hd::eip55(&bytes), evm, "EIP-55 checksummed");
                assert_eq!(address_problem(chain, &evm), None);
            }

            let solana = sandbox_address("solana");
            assert_eq!(bs58::decode(&solana).into_vec().expect("base58").len(), 32, "{solana}");
            assert_eq!(address_problem("solana", &solana), None);
        }
    }
}
