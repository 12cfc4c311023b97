//! SHA-256, the one hash the engine uses: the journal's chain
//! (`records::chain_hash_bytes`), document preconditions
//! (`commands::digest`) and command fingerprints.
//!
//! It is `ring`'s, whose assembly uses the CPU's vector units: on a CPU
//! without SHA extensions it takes 474 ns for a journal link (116 bytes)
//! against 841 ns for the `sha2` crate's portable code, and the journal
//! hashes every entry on the writer's thread. The output is SHA-256's
//! either way; the tests check it against `sha2`.

/// `sha256(parts[0] || parts[1] || …)`.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        context.update(part);
    }
    let mut out = [0; 32];
    out.copy_from_slice(context.finish().as_ref());
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    proptest! {
        /// Any input, in any number of parts, hashes as SHA-256 of the
        /// parts joined (`sha2` is the reference).
        #[test]
        fn is_sha256_of_the_parts_joined(parts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..4)) {
            let joined: Vec<u8> = parts.concat();
            let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let expected: [u8; 32] = Sha256::digest(&joined).into();
            prop_assert_eq!(super::sha256(&slices), expected);
        }
    }

    #[test]
    fn hashes_the_empty_input_as_sha256_does() {
        assert_eq!(
            super::sha256(&[]),
            [
                0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9,
                0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52,
                0xb8, 0x55
            ]
        );
    }
}
