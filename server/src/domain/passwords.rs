//! Passwords as argon2id hashes, computed with a bound on the node. One
//! hash needs argon2id's working memory (19 MiB at the crate's defaults),
//! so a burst of log-ins hashing at once is a burst of memory: a node keeps
//! at most `CHECKS_AT_ONCE_MAX` working memories and lends one to each
//! hash. Holding one is the permission to hash; a caller that finds none
//! free is refused at once rather than queued, and the memories are reused,
//! never given back to the allocator, so the node's memory stays flat
//! whatever arrives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};

/// Password hashes computed at once per node: each holds a working memory.
pub(crate) const CHECKS_AT_ONCE_MAX: usize = 3;

/// The node's working memories and the count of hashes computed.
#[derive(Default)]
pub(crate) struct Passwords {
    pool: Mutex<Pool>,
    /// Hashes computed since the node started (each check and each new
    /// password is one): what a test counts.
    computed: AtomicU64,
}

#[derive(Default)]
struct Pool {
    /// Memories not lent now; allocated on first need, then kept.
    free: Vec<Vec<Block>>,
    /// Memories lent to permits now.
    lent: usize,
}

/// The permission to compute hashes, with the working memory to do it in.
/// Dropping it returns the memory to the node.
pub(crate) struct Permit {
    passwords: Arc<Passwords>,
    memory: Vec<Block>,
}

impl Passwords {
    /// A permit, or `None` when `CHECKS_AT_ONCE_MAX` are lent already.
    pub(crate) fn try_permit(self: &Arc<Self>) -> Option<Permit> {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.lent >= CHECKS_AT_ONCE_MAX {
            return None;
        }
        pool.lent += 1;
        let memory = pool.free.pop().unwrap_or_default();
        Some(Permit { passwords: self.clone(), memory })
    }

    /// Hashes computed so far.
    #[cfg(test)]
    pub(crate) fn computed(&self) -> u64 {
        self.computed.load(Ordering::Relaxed)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut pool = self.passwords.pool.lock().unwrap_or_else(PoisonError::into_inner);
        pool.lent -= 1;
        pool.free.push(std::mem::take(&mut self.memory));
    }
}

/// A password could not be hashed (argon2's parameters or output refused):
/// the node's fault, never the caller's.
#[derive(Debug, thiserror::Error)]
#[error("cannot hash a password: {0}")]
pub(crate) struct HashError(argon2::password_hash::Error);

impl From<HashError> for crate::domain::error::ApiError {
    fn from(error: HashError) -> Self {
        crate::domain::error::ApiError::internal_from(error)
    }
}

impl Permit {
    /// A new argon2id hash of `password` (default parameters, a random
    /// salt) in PHC form.
    pub(crate) fn hash(&mut self, password: &str) -> Result<String, HashError> {
        let params = Params::default();
        let salt_bytes: [u8; 16] = rand::random();
        let salt = SaltString::encode_b64(&salt_bytes).map_err(HashError)?;
        let length = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        let output = Output::init_with(length, |out| {
            self.compute(&params, password, &salt_bytes, out)
                .map_err(|_| argon2::password_hash::Error::Crypto)
        })
        .map_err(HashError)?;
        phc(&params, salt, output)
    }

    /// Whether `password` is the one `hash` (PHC form) was made from. A
    /// hash that cannot be read matches nothing.
    pub(crate) fn verify(&mut self, hash: &str, password: &str) -> bool {
        let Ok(parsed) = PasswordHash::new(hash) else { return false };
        let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else { return false };
        let argon2id = Algorithm::try_from(parsed.algorithm).is_ok_and(|a| a == Algorithm::Argon2id);
        let current = parsed.version.is_none_or(|v| Version::try_from(v).is_ok_and(|v| v == Version::V0x13));
        let Ok(params) = Params::try_from(&parsed) else { return false };
        let mut salt_bytes = [0u8; 64];
        let Ok(salt) = salt.decode_b64(&mut salt_bytes) else { return false };
        if !argon2id || !current {
            return false;
        }
        let computed = Output::init_with(expected.len(), |out| {
            self.compute(&params, password, salt, out).map_err(|_| argon2::password_hash::Error::Crypto)
        });
        // `Output`'s equality takes the same time wherever the two differ.
        computed.is_ok_and(|computed| computed == expected)
    }

    /// argon2id of `password` and `salt` into `out`, in this permit's memory.
    fn compute(
        &mut self,
        params: &Params,
        password: &str,
        salt: &[u8],
        out: &mut [u8],
    ) -> argon2::Result<()> {
        let blocks = params.block_count();
        if self.memory.len() < blocks {
            self.memory.resize(blocks, Block::new());
        }
        self.passwords.computed.fetch_add(1, Ordering::Relaxed);
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone()).hash_password_into_with_memory(
            password.as_bytes(),
            salt,
            out,
            &mut self.memory[..blocks],
        )
    }
}

fn phc(params: &Params, salt: SaltString, output: Output) -> Result<String, HashError> {
    let hash = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(params).map_err(HashError)?,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(hash.to_string())
}

/// A hash with the parameters every password gets, a random salt and a
/// random output: checking a password against it costs what a real check
/// costs and matches nothing. Checked when no member can be, so that an
/// unknown email costs as long as a wrong password.
pub(crate) fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| {
        let params = Params::default();
        let salt_bytes: [u8; 16] = rand::random();
        let output_bytes: [u8; Params::DEFAULT_OUTPUT_LEN] = rand::random();
        let made = SaltString::encode_b64(&salt_bytes).map_err(HashError).and_then(|salt| {
            let output = Output::new(&output_bytes).map_err(HashError)?;
            phc(&params, salt, output)
        });
        made.expect("the default parameters, a 16-byte salt and a 32-byte output make a PHC string")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::PasswordVerifier;

    #[test]
    fn a_hash_checks_its_password_only_and_reads_as_the_crate_writes() {
        let passwords = Arc::new(Passwords::default());
        let mut permit = passwords.try_permit().unwrap();
        let hash = permit.hash("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        assert!(permit.verify(&hash, "correct horse battery"));
        assert!(!permit.verify(&hash, "correct horse batterY"));
        // The crate's own verifier agrees, both ways.
        let parsed = PasswordHash::new(&hash).unwrap();
        assert!(Argon2::default().verify_password(b"correct horse battery", &parsed).is_ok());
        let theirs = argon2::PasswordHasher::hash_password(
            &Argon2::default(),
            b"another password",
            &SaltString::encode_b64(b"sixteen byte slt").unwrap(),
        )
        .unwrap()
        .to_string();
        assert!(permit.verify(&theirs, "another password"));
        assert!(!permit.verify("not a hash", "another password"));
        // One hash and three checks; what is no hash is not computed.
        assert_eq!(passwords.computed(), 4);
    }

    #[test]
    fn the_decoy_costs_a_full_check_and_matches_nothing() {
        let decoy = PasswordHash::new(decoy_hash()).unwrap();
        let (params, default) = (Params::try_from(&decoy).unwrap(), Params::default());
        assert_eq!(
            (params.m_cost(), params.t_cost(), params.p_cost()),
            (default.m_cost(), default.t_cost(), default.p_cost())
        );
        assert_eq!(decoy.algorithm, Algorithm::Argon2id.ident());
        let passwords = Arc::new(Passwords::default());
        assert!(!passwords.try_permit().unwrap().verify(decoy_hash(), ""));
        assert_eq!(passwords.computed(), 1);
    }

    #[test]
    fn at_most_the_bound_of_permits_are_lent_and_a_returned_one_is_lent_again() {
        let passwords = Arc::new(Passwords::default());
        let held: Vec<Permit> = (0..CHECKS_AT_ONCE_MAX).map(|_| passwords.try_permit().unwrap()).collect();
        assert!(passwords.try_permit().is_none());
        drop(held);
        let permits: Vec<Permit> = (0..CHECKS_AT_ONCE_MAX).map(|_| passwords.try_permit().unwrap()).collect();
        assert!(passwords.try_permit().is_none());
        assert_eq!(permits.len(), CHECKS_AT_ONCE_MAX);
    }
}
