//! Deposit addresses derived from the operator's BIP32 extended public key.
//!
//! A `[[live.receiving.crypto]]` route may name an `xpub` instead of a pool
//! of addresses: each session, order and virtual account then gets the
//! address of the key at `0/<index>` below it (BIP44's external chain), so
//! every payment lands on its own address and the node never holds a key
//! that can spend. Which index belongs to which payment is the caller's
//! business; this module only turns (chain, xpub, index) into an address.
//!
//! EVM chains (Ethereum, Base, Polygon) use the last 20 bytes of the
//! Keccak-256 of the uncompressed key, written EIP-55 checksummed. Tron uses
//! the same 20 bytes behind its `0x41` prefix, in base58check. Solana keys
//! are ed25519, which has no public derivation: such a chain needs a pool.
//!
//! The curve arithmetic and the CKDpub step are the `bip32` crate's (on
//! `k256`); base58check is `bs58`'s and Keccak-256 `sha3`'s.

use std::fmt;
use std::str::FromStr;

use bip32::secp256k1::ecdsa::VerifyingKey;
use bip32::{ChildNumber, ExtendedKey, XPub};
use sha3::{Digest, Keccak256};

/// The length of a serialized extended key before its 4-byte checksum
/// (BIP32, "Serialization format").
const EXTENDED_KEY_BYTES: usize = 78;

/// The longest text decoded. An extended key is 111 or 112 characters; the
/// rest leaves room to report a near miss by its length, and since base58
/// decoding is quadratic, a pasted file is refused unread.
const EXTENDED_KEY_TEXT_LEN_MAX: usize = 256;

/// Indices from 2^31 up are hardened: only a private key can derive them.
const INDEX_HARDENED_MIN: u32 = 1 << 31;

/// BIP44's external (receiving) chain, the `0` of `0/<index>`.
const CHAIN_EXTERNAL: u32 = 0;

/// The levels below the configured key: the chain, then the index.
const ADDRESS_PATH_DEPTH: u8 = 2;

/// Tron's address version byte (mainnet and its test networks alike).
const TRON_ADDRESS_PREFIX: u8 = 0x41;

/// An extended key's version bytes and the four characters they show as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    bytes: u32,
    label: &'static str,
}

const fn version(bytes: u32, label: &'static str) -> Version {
    Version { bytes, label }
}

/// SLIP-132's public versions for Bitcoin and its testnet. They share
/// BIP32's layout and derivation and differ only in the Bitcoin script a
/// wallet meant, which an EVM or Tron address does not use, so accepting
/// them costs this table.
const VERSIONS_PUBLIC: [Version; 10] = [
    version(0x0488_b21e, "xpub"),
    version(0x0435_87cf, "tpub"),
    version(0x049d_7cb2, "ypub"),
    version(0x04b2_4746, "zpub"),
    version(0x0295_b43f, "Ypub"),
    version(0x02aa_7ed3, "Zpub"),
    version(0x044a_5262, "upub"),
    version(0x045f_1cf6, "vpub"),
    version(0x0242_89ef, "Upub"),
    version(0x0257_5483, "Vpub"),
];

/// Their private counterparts, recognized only to refuse them by name.
const VERSIONS_PRIVATE: [Version; 10] = [
    version(0x0488_ade4, "xprv"),
    version(0x0435_8394, "tprv"),
    version(0x049d_7878, "yprv"),
    version(0x04b2_430c, "zprv"),
    version(0x0295_b005, "Yprv"),
    version(0x02aa_7a99, "Zprv"),
    version(0x044a_4e28, "uprv"),
    version(0x045f_18bc, "vprv"),
    version(0x0242_85b5, "Uprv"),
    version(0x0257_5048, "Vprv"),
];

/// Why an extended public key was refused or an address not derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HdError {
    #[error("not a base58check extended public key: {0}")]
    NotBase58Check(&'static str),
    #[error("not an extended public key: it decodes to {0} bytes where one has 78")]
    WrongLength(usize),
    #[error(
        "this is an extended private key ({0}): configure the account's extended public key \
         (xpub) instead; the node must never hold a key that can spend"
    )]
    PrivateKey(&'static str),
    #[error("unknown extended key version 0x{0:08x}: expected an xpub or tpub (or ypub, zpub)")]
    UnknownVersion(u32),
    #[error("the extended public key's key data is not a valid compressed secp256k1 point")]
    InvalidPoint,
    #[error("the extended public key is malformed: {0}")]
    Malformed(&'static str),
    #[error("the extended public key is at depth {0}, too deep to derive 0/<index> below it")]
    TooDeep(u8),
    #[error("index must be below 2^31 (hardened indices need the private key), got {0}")]
    IndexHardened(u32),
    #[error(
        "the key at 0/{0} does not exist (BIP32 gives this a chance below 1 in 2^127); \
         use the next index"
    )]
    KeyAbsent(u32),
    #[error("chain {0} cannot derive addresses from an xpub; configure an address pool")]
    ChainUnsupported(String),
}

/// A parsed, validated extended public key (xpub or tpub, or one of the
/// other SLIP-132 public versions of Bitcoin and its testnet).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ExtendedPublicKey {
    version: Version,
    node: XPub,
}

impl FromStr for ExtendedPublicKey {
    type Err = HdError;

    fn from_str(text: &str) -> Result<Self, HdError> {
        let text = text.trim();
        let bytes = decode_base58check(text)?;
        let [v0, v1, v2, v3, ..] = bytes;
        let version = version_public(u32::from_be_bytes([v0, v1, v2, v3]))?;
        // The bytes are known good; bip32 reads the fields out of them.
        let extended =
            ExtendedKey::from_str(text).map_err(|_| HdError::NotBase58Check("its fields do not decode"))?;
        let attrs = &extended.attrs;
        if attrs.depth == 0 && attrs.parent_fingerprint != [0; 4] {
            return Err(HdError::Malformed("a master key (depth 0) with a parent fingerprint"));
        }
        if attrs.depth == 0 && attrs.child_number != ChildNumber(0) {
            return Err(HdError::Malformed("a master key (depth 0) with a child number"));
        }
        if attrs.depth > u8::MAX - ADDRESS_PATH_DEPTH {
            return Err(HdError::TooDeep(attrs.depth));
        }
        let key = public_key(&extended.key_bytes)?;
        Ok(ExtendedPublicKey { version, node: XPub::new(key, attrs.clone()) })
    }
}

impl ExtendedPublicKey {
    /// The compressed public key at `0/<index>` (non-hardened child
    /// derivation, so `index` must be below 2^31).
    #[cfg(test)]
    fn address_key(&self, index: u32) -> Result<[u8; 33], HdError> {
        Ok(self.address_node(index)?.node.to_bytes())
    }

    fn address_node(&self, index: u32) -> Result<ExtendedPublicKey, HdError> {
        if index >= INDEX_HARDENED_MIN {
            return Err(HdError::IndexHardened(index));
        }
        let chain = self.child(CHAIN_EXTERNAL).map_err(|_| HdError::KeyAbsent(index))?;
        chain.child(index).map_err(|_| HdError::KeyAbsent(index))
    }

    /// CKDpub: the non-hardened child `index` of this key.
    fn child(&self, index: u32) -> Result<ExtendedPublicKey, HdError> {
        let number = ChildNumber::new(index, false).map_err(|_| HdError::IndexHardened(index))?;
        let node = self.node.derive_child(number).map_err(|_| HdError::KeyAbsent(index))?;
        Ok(ExtendedPublicKey { version: self.version, node })
    }

    /// The key in BIP32's serialization, under the version it was parsed
    /// with.
    #[cfg(test)]
    fn to_base58(&self) -> String {
        let attrs = self.node.attrs();
        let mut bytes = Vec::with_capacity(EXTENDED_KEY_BYTES);
        bytes.extend_from_slice(&self.version.bytes.to_be_bytes());
        bytes.push(attrs.depth);
        bytes.extend_from_slice(&attrs.parent_fingerprint);
        bytes.extend_from_slice(&attrs.child_number.to_bytes());
        bytes.extend_from_slice(&attrs.chain_code);
        bytes.extend_from_slice(&self.node.to_bytes());
        bs58::encode(bytes).with_check().into_string()
    }
}

/// Shows where the key sits, not the key: an xpub reveals every address
/// below it, so it stays out of logs.
impl fmt::Debug for ExtendedPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attrs = self.node.attrs();
        f.debug_struct("ExtendedPublicKey")
            .field("version", &self.version.label)
            .field("depth", &attrs.depth)
            .field("child_number", &attrs.child_number.0)
            .finish_non_exhaustive()
    }
}

fn decode_base58check(text: &str) -> Result<[u8; EXTENDED_KEY_BYTES], HdError> {
    if text.len() > EXTENDED_KEY_TEXT_LEN_MAX {
        return Err(HdError::NotBase58Check("longer than any extended key"));
    }
    let bytes = bs58::decode(text).with_check(None).into_vec().map_err(|error| match error {
        bs58::decode::Error::InvalidCharacter { .. } | bs58::decode::Error::NonAsciiCharacter { .. } => {
            HdError::NotBase58Check("a character outside the base58 alphabet")
        }
        bs58::decode::Error::InvalidChecksum { .. } => {
            HdError::NotBase58Check("its checksum does not match (a character mistyped or missing?)")
        }
        _ => HdError::NotBase58Check("too short to carry a checksum"),
    })?;
    let length = bytes.len();
    bytes.try_into().map_err(|_| HdError::WrongLength(length))
}

fn version_public(bytes: u32) -> Result<Version, HdError> {
    if let Some(version) = VERSIONS_PUBLIC.iter().find(|version| version.bytes == bytes) {
        return Ok(*version);
    }
    match VERSIONS_PRIVATE.iter().find(|version| version.bytes == bytes) {
        Some(version) => Err(HdError::PrivateKey(version.label)),
        None => Err(HdError::UnknownVersion(bytes)),
    }
}

fn public_key(key_bytes: &[u8; 33]) -> Result<VerifyingKey, HdError> {
    match key_bytes.first() {
        Some(0x02 | 0x03) => VerifyingKey::from_sec1_bytes(key_bytes).map_err(|_| HdError::InvalidPoint),
        // BIP32 serializes a private key as 0x00 and its 32 bytes.
        Some(0x00) => Err(HdError::Malformed("a public version carrying private key data")),
        _ => Err(HdError::InvalidPoint),
    }
}

/// The address bytes of the key at `0/<index>`: the last 20 bytes of the
/// Keccak-256 of its uncompressed point, without the `0x04` tag.
fn address_hash(xpub: &ExtendedPublicKey, index: u32) -> Result<[u8; 20], HdError> {
    let node = xpub.address_node(index)?;
    let point = node.node.public_key().to_encoded_point(false);
    let (Some(x), Some(y)) = (point.x(), point.y()) else {
        return Err(HdError::InvalidPoint);
    };
    let digest: [u8; 32] = Keccak256::new().chain_update(x).chain_update(y).finalize().into();
    let [_, _, _, _, _, _, _, _, _, _, _, _, address @ ..] = digest;
    Ok(address)
}

/// The EIP-55 checksummed `0x…` address of the key at `0/<index>`.
pub(crate) fn evm_address(xpub: &ExtendedPublicKey, index: u32) -> Result<String, HdError> {
    Ok(eip55(&address_hash(xpub, index)?))
}

/// The Tron base58check `T…` address (`0x41` and the same 20 bytes as the
/// EVM address) of the key at `0/<index>`.
pub(crate) fn tron_address(xpub: &ExtendedPublicKey, index: u32) -> Result<String, HdError> {
    let payload: Vec<u8> = std::iter::once(TRON_ADDRESS_PREFIX).chain(address_hash(xpub, index)?).collect();
    Ok(bs58::encode(payload).with_check().into_string())
}

/// EIP-55: the lowercase hex of the address, each letter uppercased where
/// the matching nibble of the Keccak-256 of that hex is 8 or more.
pub(crate) fn eip55(address: &[u8; 20]) -> String {
    const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
    let lowercase: Vec<u8> = address
        .iter()
        .flat_map(|byte| [HEX_DIGITS[usize::from(byte >> 4)], HEX_DIGITS[usize::from(byte & 0x0f)]])
        .collect();
    let hash = Keccak256::digest(&lowercase);
    let mut text = String::with_capacity(2 + lowercase.len());
    text.push_str("0x");
    // Two hex digits per address byte, two hash nibbles per hash byte.
    for (digits, hash_byte) in lowercase.chunks(2).zip(hash.iter()) {
        for (digit, nibble) in digits.iter().zip([hash_byte >> 4, hash_byte & 0x0f]) {
            text.push(char::from(if nibble >= 8 { digit.to_ascii_uppercase() } else { *digit }));
        }
    }
    text
}

/// How a chain's addresses come out of a secp256k1 key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressKind {
    Evm,
    Tron,
}

/// Whether a chain can derive from an xpub, and how. Other chains (Solana's
/// ed25519 keys have no public derivation) need an address pool.
pub(crate) fn address_kind(chain: &str) -> Option<AddressKind> {
    match chain {
        "ethereum" | "base" | "polygon" => Some(AddressKind::Evm),
        "tron" => Some(AddressKind::Tron),
        _ => None,
    }
}

/// The address for `chain` of the key at `0/<index>` below `xpub`.
pub(crate) fn derive_address(chain: &str, xpub: &ExtendedPublicKey, index: u32) -> Result<String, HdError> {
    match address_kind(chain) {
        Some(AddressKind::Evm) => evm_address(xpub, index),
        Some(AddressKind::Tron) => tron_address(xpub, index),
        None => Err(HdError::ChainUnsupported(chain.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bip32::{Prefix, XPrv};

    /// BIP32 test vector 1 (seed 000102030405060708090a0b0c0d0e0f), from
    /// bip-0032.mediawiki: the extended public keys of each chain.
    const V1_M_0H: &str = "xpub68Gmy5EdvgibQVfPdqkBBCHxA5htiqg55crXYuXoQRKfDBFA1WEjWgP6LHhwBZeNK1VTsfTFUHCdrfp1bgwQ9xv5ski8PX9rL2dZXvgGDnw";
    const V1_M_0H_1: &str = "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ";
    const V1_M_0H_1_2H: &str = "xpub6D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7DogT5Uv6fcLW5";
    const V1_M_0H_1_2H_2: &str = "xpub6FHa3pjLCk84BayeJxFW2SP4XRrFd1JYnxeLeU8EqN3vDfZmbqBqaGJAyiLjTAwm6ZLRQUMv1ZACTj37sR62cfN7fe5JnJ7dh8zL4fiyLHV";
    const V1_M_0H_1_2H_2_1000000000: &str = "xpub6H1LXWLaKsWFhvm6RVpEL9P4KfRZSW7abD2ttkWP3SSQvnyA8FSVqNTEcYFgJS2UaFcxupHiYkro49S8yGasTvXEYBVPamhGW6cFJodrTHy";
    /// Vector 1's master private key: a valid key, of the wrong kind.
    const V1_M_PRIVATE: &str = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi";

    /// BIP32 test vector 2 (the 64-byte seed fffcf9f6…4542).
    const V2_M: &str = "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB";
    const V2_M_0: &str = "xpub69H7F5d8KSRgmmdJg2KhpAK8SR3DjMwAdkxj3ZuxV27CprR9LgpeyGmXUbC6wb7ERfvrnKZjXoUmmDznezpbZb7ap6r1D3tgFxHmwMkQTPH";
    const V2_M_0_2147483647H: &str = "xpub6ASAVgeehLbnwdqV6UKMHVzgqAG8Gr6riv3Fxxpj8ksbH9ebxaEyBLZ85ySDhKiLDBrQSARLq1uNRts8RuJiHjaDMBU4Zn9h8LZNnBC5y4a";
    const V2_M_0_2147483647H_1: &str = "xpub6DF8uhdarytz3FWdA8TvFSvvAh8dP3283MY7p2V4SeE2wyWmG5mg5EwVvmdMVCQcoNJxGoWaU9DCWh89LojfZ537wTfunKau47EL2dhHKon";
    const V2_M_0_2147483647H_1_2147483646H: &str = "xpub6ERApfZwUNrhLCkDtcHTcxd75RbzS1ed54G1LkBUHQVHQKqhMkhgbmJbZRkrgZw4koxb5JaHWkY4ALHY2grBGRjaDMzQLcgJvLJuZZvRcEL";
    const V2_M_0_2147483647H_1_2147483646H_2: &str = "xpub6FnCn6nSzZAw5Tw7cgR9bi15UV96gLZhjDstkXXxvCLsUXBGXPdSnLFbdpq8p9HmGsApME5hQTZ3emM2rnY5agb9rXpVGyy3bdW6EEgAtqt";

    /// The BIP39 seed of "abandon abandon … abandon about" with an empty
    /// passphrase.
    const ABANDON_SEED: &str = "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4";

    /// Its Ethereum account key `m/44'/60'/0'`, as wallets export it.
    const ABANDON_ETHEREUM_ACCOUNT: &str = "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt";

    fn parse(text: &str) -> ExtendedPublicKey {
        text.parse().unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    /// Derives `child` from the published `parent` and compares it, key and
    /// serialization, with the published child.
    fn assert_child(parent: &str, index: u32, child: &str) {
        let derived = parse(parent).child(index).unwrap();
        assert_eq!(derived.to_base58(), child, "{parent} / {index}");
        assert_eq!(derived.node.to_bytes(), parse(child).node.to_bytes());
    }

    #[test]
    fn bip32_vector_1_public_children_match_the_published_keys() {
        assert_child(V1_M_0H, 1, V1_M_0H_1);
        assert_child(V1_M_0H_1_2H, 2, V1_M_0H_1_2H_2);
        assert_child(V1_M_0H_1_2H_2, 1_000_000_000, V1_M_0H_1_2H_2_1000000000);
    }

    #[test]
    fn bip32_vector_2_public_children_match_the_published_keys() {
        assert_child(V2_M, 0, V2_M_0);
        assert_child(V2_M_0_2147483647H, 1, V2_M_0_2147483647H_1);
        assert_child(V2_M_0_2147483647H_1_2147483646H, 2, V2_M_0_2147483647H_1_2147483646H_2);
    }

    #[test]
    fn parsing_then_serializing_gives_the_published_text_back() {
        for text in [V1_M_0H, V1_M_0H_1_2H_2_1000000000, V2_M, V2_M_0_2147483647H_1_2147483646H_2] {
            assert_eq!(parse(text).to_base58(), text);
        }
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap()).collect()
    }

    /// The account xpub at `m/44'/<coin>'/0'` of the "abandon … about"
    /// seed, derived privately (as a wallet would before exporting it) and
    /// handed to the parser as text.
    fn abandon_account_xpub(coin: u32) -> ExtendedPublicKey {
        let mut xprv = XPrv::new(hex(ABANDON_SEED)).unwrap();
        for number in [44, coin, 0] {
            xprv = xprv.derive_child(ChildNumber::new(number, true).unwrap()).unwrap();
        }
        parse(&XPub::from(&xprv).to_extended_key(Prefix::XPUB).to_string())
    }

    /// MetaMask's and ethers' first two accounts for the "abandon … about"
    /// mnemonic, `m/44'/60'/0'/0/0` and `/1`.
    #[test]
    fn the_abandon_mnemonic_gives_metamasks_ethereum_addresses() {
        let xpub = abandon_account_xpub(60);
        assert_eq!(xpub.to_base58(), ABANDON_ETHEREUM_ACCOUNT);
        assert_eq!(evm_address(&xpub, 0).unwrap(), "0x9858EfFD232B4033E47d90003D41EC34EcaEda94");
        assert_eq!(evm_address(&xpub, 1).unwrap(), "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0");
        for chain in ["ethereum", "base", "polygon"] {
            assert_eq!(
                derive_address(chain, &xpub, 0).unwrap(),
                "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
            );
        }
    }

    /// The public path (CKDpub from the account xpub) and the private one
    /// (CKDpriv from the seed, then the public key) reach the same keys.
    #[test]
    fn public_derivation_matches_private_derivation() {
        let xpub = abandon_account_xpub(60);
        let mut xprv = XPrv::new(hex(ABANDON_SEED)).unwrap();
        for number in [44, 60, 0] {
            xprv = xprv.derive_child(ChildNumber::new(number, true).unwrap()).unwrap();
        }
        let chain = xprv.derive_child(ChildNumber::new(0, false).unwrap()).unwrap();
        for index in [0, 1, 7, INDEX_HARDENED_MIN - 1] {
            let key = chain.derive_child(ChildNumber::new(index, false).unwrap()).unwrap();
            assert_eq!(xpub.address_key(index).unwrap(), XPub::from(&key).to_bytes(), "index {index}");
        }
    }

    /// The examples of EIP-55's specification: all caps, all lower, mixed.
    #[test]
    fn eip55_round_trips_the_specifications_examples() {
        for expected in [
            "0x52908400098527886E0F7030069857D2E4169EE7",
            "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
            "0xde709f2102306220921060314715629080e2fb77",
            "0x27b1fdb04752bbc536007a920d24acb045561c26",
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            let bytes: [u8; 20] = hex(&expected[2..].to_ascii_lowercase()).try_into().unwrap();
            assert_eq!(eip55(&bytes), expected);
        }
    }

    /// `m/44'/195'/0'/0/0` and `/1` of the "abandon … about" mnemonic, as
    /// the Ledger Tron app's test and Ian Coleman's BIP39 tool show them.
    #[test]
    fn the_abandon_mnemonic_gives_the_published_tron_addresses() {
        let xpub = abandon_account_xpub(195);
        assert_eq!(tron_address(&xpub, 0).unwrap(), "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH");
        assert_eq!(tron_address(&xpub, 1).unwrap(), "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK");
        assert_eq!(derive_address("tron", &xpub, 1).unwrap(), "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK");
    }

    #[test]
    fn a_tron_address_carries_the_evm_address_bytes() {
        let xpub = parse(V2_M_0);
        for index in [0, 1, 1_000_000] {
            let tron = tron_address(&xpub, index).unwrap();
            assert!(tron.starts_with('T') && tron.len() == 34, "{tron}");
            let decoded = bs58::decode(&tron).with_check(None).into_vec().unwrap();
            let evm = hex(&evm_address(&xpub, index).unwrap()[2..].to_ascii_lowercase());
            assert_eq!(decoded[0], TRON_ADDRESS_PREFIX);
            assert_eq!(decoded[1..], evm[..]);
        }
    }

    fn refusal(text: &str) -> HdError {
        text.parse::<ExtendedPublicKey>().expect_err(text)
    }

    #[test]
    fn malformed_text_is_refused_with_its_reason() {
        let mut mistyped = V1_M_0H.to_owned();
        mistyped.replace_range(20..21, "z");
        assert!(matches!(refusal(&mistyped), HdError::NotBase58Check(reason) if reason.contains("checksum")));
        assert!(
            matches!(refusal("xpub0OIl"), HdError::NotBase58Check(reason) if reason.contains("alphabet"))
        );
        assert!(
            matches!(refusal(&V1_M_0H.repeat(2)), HdError::NotBase58Check(reason) if reason.contains("checksum"))
        );
        assert!(
            matches!(refusal(&V1_M_0H.repeat(3)), HdError::NotBase58Check(reason) if reason.contains("longer"))
        );
        assert!(matches!(refusal(""), HdError::NotBase58Check(_)));
        for length in [77, 79, 21] {
            let text = bs58::encode(vec![4; length]).with_check().into_string();
            assert_eq!(refusal(&text), HdError::WrongLength(length));
        }
        assert_eq!(parse(&format!("  {V1_M_0H}\n")), parse(V1_M_0H), "surrounding blanks are not the key");
    }

    #[test]
    fn a_private_key_is_refused_by_name() {
        let error = refusal(V1_M_PRIVATE);
        assert_eq!(error, HdError::PrivateKey("xprv"));
        assert!(error.to_string().contains("never hold a key that can spend"), "{error}");
    }

    /// BIP32 test vector 5: extended public keys that must be refused.
    #[test]
    fn bip32_vector_5_invalid_public_keys_are_refused() {
        let cases = [
            // pubkey version / prvkey mismatch
            (
                "xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6LBpB85b3D2yc8sfvZU521AAwdZafEz7mnzBBsz4wKY5fTtTQBm",
                HdError::Malformed("a public version carrying private key data"),
            ),
            // invalid pubkey prefix 04
            (
                "xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6Txnt3siSujt9RCVYsx4qHZGc62TG4McvMGcAUjeuwZdduYEvFn",
                HdError::InvalidPoint,
            ),
            // invalid pubkey prefix 01
            (
                "xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6N8ZMMXctdiCjxTNq964yKkwrkBJJwpzZS4HS2fxvyYUA4q2Xe4",
                HdError::InvalidPoint,
            ),
            // zero depth with non-zero parent fingerprint
            (
                "xpub661no6RGEX3uJkY4bNnPcw4URcQTrSibUZ4NqJEw5eBkv7ovTwgiT91XX27VbEXGENhYRCf7hyEbWrR3FewATdCEebj6znwMfQkhRYHRLpJ",
                HdError::Malformed("a master key (depth 0) with a parent fingerprint"),
            ),
            // zero depth with non-zero index
            (
                "xpub661MyMwAuDcm6CRQ5N4qiHKrJ39Xe1R1NyfouMKTTWcguwVcfrZJaNvhpebzGerh7gucBvzEQWRugZDuDXjNDRmXzSZe4c7mnTK97pTvGS8",
                HdError::Malformed("a master key (depth 0) with a child number"),
            ),
            // invalid pubkey 020000000000000000000000000000000000000000000000000000000000000007
            (
                "xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6Q5JXayek4PRsn35jii4veMimro1xefsM58PgBMrvdYre8QyULY",
                HdError::InvalidPoint,
            ),
            // invalid checksum (an xprv, refused before its version is read)
            (
                "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHL",
                HdError::NotBase58Check("its checksum does not match (a character mistyped or missing?)"),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(refusal(text), expected, "{text}");
        }
        // unknown extended key version, with public and with private key data
        for text in [
            "DMwo58pR1QLEFihHiXPVykYB6fJmsTeHvyTp7hRThAtCX8CvYzgPcn8XnmdfHGMQzT7ayAmfo4z3gY5KfbrZWZ6St24UVf2Qgo6oujFktLHdHY4",
            "DMwo58pR1QLEFihHiXPVykYB6fJmsTeHvyTp7hRThAtCX8CvYzgPcn8XnmdfHPmHJiEDXkTiJTVV9rHEBUem2mwVbbNfvT2MTcAqj3nesx8uBf9",
        ] {
            assert!(matches!(refusal(text), HdError::UnknownVersion(_)), "{text}");
        }
    }

    #[test]
    fn hardened_indices_are_refused() {
        let xpub = parse(V2_M);
        for index in [INDEX_HARDENED_MIN, INDEX_HARDENED_MIN + 1, u32::MAX] {
            assert_eq!(xpub.address_key(index), Err(HdError::IndexHardened(index)));
            assert_eq!(evm_address(&xpub, index), Err(HdError::IndexHardened(index)));
            assert_eq!(tron_address(&xpub, index), Err(HdError::IndexHardened(index)));
        }
        assert!(xpub.address_key(INDEX_HARDENED_MIN - 1).is_ok());
        let error = evm_address(&xpub, u32::MAX).unwrap_err().to_string();
        assert!(error.starts_with("index must be below 2^31"), "{error}");
    }

    #[test]
    fn chains_without_public_derivation_are_refused() {
        let xpub = parse(V2_M);
        for chain in ["solana", "bitcoin", "Ethereum", ""] {
            assert_eq!(address_kind(chain), None);
            assert_eq!(derive_address(chain, &xpub, 0), Err(HdError::ChainUnsupported(chain.to_owned())));
        }
        assert_eq!(
            derive_address("solana", &xpub, 0).unwrap_err().to_string(),
            "chain solana cannot derive addresses from an xpub; configure an address pool"
        );
        assert_eq!(address_kind("tron"), Some(AddressKind::Tron));
        assert_eq!(address_kind("base"), Some(AddressKind::Evm));
    }
}
