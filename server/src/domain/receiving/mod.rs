//! What a live payer is told to pay into. It comes only from the operator's
//! configuration (`[live.receiving]`, `[[live.virtual_accounts]]`), never
//! from a generator: a bank account per currency, a merchant number per
//! mobile-money method, and per payment a stablecoin address derived from
//! an extended public key (`hd`) or taken from a pool. Each derived index
//! and each pooled address or account is given to exactly one payment: the
//! claim is a create-if-absent write, so two requests racing for the same
//! one cannot both win.

pub(crate) mod hd;

use sika_engine::{Command, Document, Engine, EngineError, Expected};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::settings::{AddressSource, BankAccount, Receiving};
use crate::domain::stack::Stack;

/// Claims: `index:<asset>:<chain>:<n>`, `address:<address>` and
/// `account:<number>`, each holding the payment it was given to, and
/// `owner:<payment>` holding what that payment was given (so a replayed
/// request gets the same address, not another one).
const CLAIMS: &str = "receiving_claims";
/// The next derivation index to try per asset and chain (a hint: the
/// claims decide).
const NEXT_INDEX: &str = "receiving_next_index";

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

/// A deposit address on `chain` for the payment `owner`, claimed in
/// `ledger`, or `None` when the operator configured no route for the asset
/// on that chain in `receiving`.
pub(crate) async fn crypto_address(
    ledger: &Engine,
    receiving: &Receiving,
    asset: &str,
    chain: &str,
    owner: &str,
) -> ApiResult<Option<String>> {
    let Some(route) = receiving.crypto(asset, chain) else { return Ok(None) };
    let counter = format!("{asset}:{chain}");
    let mut index: u32 = crate::store::documents::load(&ledger.read()?, NEXT_INDEX, &counter)?.unwrap_or(0);
    let mut pool = match &route.addresses {
        AddressSource::Pool(pool) => pool.iter(),
        AddressSource::Xpub(_) => [].iter(),
    };
    loop {
        if let Some(given) = given_to(ledger, owner)? {
            return Ok(Some(given));
        }
        let (address, claimed, hint) = match &route.addresses {
            AddressSource::Xpub(key) => {
                let address = hd::derive_address(chain, key, index).map_err(|e| {
                    tracing::error!(error = %e, asset, chain, index, "cannot derive a deposit address");
                    ApiError::unavailable_because(format!(
                        "no more {asset} addresses can be derived on {chain}"
                    ))
                })?;
                let claimed = vec![format!("index:{counter}:{index}"), format!("address:{address}")];
                index = index
                    .checked_add(1)
                    .ok_or_else(|| ApiError::internal_from("the address index overflowed"))?;
                let hint = crate::store::documents::document(NEXT_INDEX, &counter, &index, None);
                (address, claimed, vec![hint])
            }
            AddressSource::Pool(_) => {
                let address = pool.next().ok_or_else(|| {
                    ApiError::unavailable_because(format!(
                        "every configured {asset} address on {chain} has been given out; the operator must add more"
                    ))
                })?;
                (address.clone(), vec![format!("address:{address}")], Vec::new())
            }
        };
        if claim(ledger, &claimed, owner, &address, hint).await? {
            return Ok(Some(address));
        }
    }
}

/// What the payment `owner` was given already, if anything.
fn given_to(ledger: &Engine, owner: &str) -> ApiResult<Option<String>> {
    let given = ledger.read()?.document(CLAIMS, &format!("owner:{owner}"))?;
    Ok(given.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// A real account from the operator's pool for the virtual account
/// `owner`; `503` when every one in `currency` is taken.
pub(crate) async fn virtual_account(
    engine: &sika_engine::Engine,
    receiving: &crate::domain::settings::Receiving,
    currency: &str,
    owner: &str,
) -> ApiResult<BankAccount> {
    let pool = receiving.virtual_accounts.iter().filter(|a| a.currency == currency);
    for account in pool {
        let claimed = [format!("account:{}", account.account_number)];
        if claim(engine, &claimed, owner, &account.account_number, Vec::new()).await? {
            return Ok(account.clone());
        }
    }
    Err(ApiError::unavailable_because(format!(
        "no {currency} account is left in the operator's pool for virtual accounts; the operator must add more"
    )))
}

/// Claims every id for `owner`, and records `given` as what `owner` got,
/// in one write; or nothing when any of them is taken.
async fn claim(
    ledger: &Engine,
    ids: &[String],
    owner: &str,
    given: &str,
    mut documents: Vec<Document>,
) -> ApiResult<bool> {
    let owner_id = format!("owner:{owner}");
    // Read first: a claim already taken costs a lookup, not a write through
    // the ledger's writer. The write's expectation still settles races.
    let snapshot = ledger.read()?;
    for id in ids.iter().chain([&owner_id]) {
        if snapshot.document(CLAIMS, id)?.is_some() {
            return Ok(false);
        }
    }
    drop(snapshot);
    let expect = ids
        .iter()
        .chain([&owner_id])
        .map(|id| Expected { collection: CLAIMS.into(), id: id.clone(), digest: None })
        .collect();
    documents.extend(ids.iter().map(|id| Document {
        collection: CLAIMS.into(),
        id: id.clone(),
        body: owner.as_bytes().to_vec(),
        list: None,
    }));
    documents.push(Document {
        collection: CLAIMS.into(),
        id: owner_id,
        body: given.as_bytes().to_vec(),
        list: None,
    });
    match ledger.execute(Command::Save { expect, documents, events: Vec::new() }).await {
        Ok(_) => Ok(true),
        Err(EngineError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
