//! Resource identifiers: a prefix, an underscore and 24 base62 characters,
//! e.g. `conv_0bX3k9…`. The first 8 characters are the creation time in
//! milliseconds, the other 16 are random (about 95 bits). Ids made together
//! sort together, so a batch's new records share B-tree leaves and a commit
//! rewrites far fewer pages than with fully random ids.
//!
//! The writer makes ids with `new_id_at` and its batch's time from the
//! engine's clock, so a test that holds the clock holds ids' time too.

use crate::clock::{Clock, SystemClock};
use crate::records::TimestampMs;

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TIME_LEN: usize = 8;
const RANDOM_LEN: usize = 16;

/// A new id made now by the machine's clock, for callers outside the
/// writer (the API layer's own records).
pub fn new_id(prefix: &str) -> String {
    new_id_at(prefix, SystemClock.now_ms())
}

/// A new id whose time part is `now_ms` (a time before 1970 counts as 0).
pub fn new_id_at(prefix: &str, now_ms: TimestampMs) -> String {
    let now_ms = u64::try_from(now_ms).unwrap_or(0);
    let mut id = String::with_capacity(prefix.len().saturating_add(1 + TIME_LEN + RANDOM_LEN));
    id.push_str(prefix);
    id.push('_');
    let mut time = [0u8; TIME_LEN];
    let mut rest = now_ms;
    for slot in time.iter_mut().rev() {
        *slot = ALPHABET[(rest % 62) as usize];
        rest /= 62;
    }
    id.extend(time.iter().map(|b| *b as char));
    let bytes: [u8; RANDOM_LEN] = rand::random();
    // The modulo bias of 8/256 on one character in 62 is irrelevant for identifiers.
    id.extend(bytes.iter().map(|b| ALPHABET[usize::from(*b) % 62] as char));
    id
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_have_prefix_and_length() {
        let id = super::new_id("conv");
        assert!(id.starts_with("conv_"));
        assert_eq!(id.len(), 5 + 24);
        assert_ne!(super::new_id("conv"), id);
        let later = super::new_id("conv");
        assert!(later[5..13] >= id[5..13], "the time prefix sorts");
    }

    #[test]
    fn the_time_part_is_the_time_given() {
        let (a, b) = (super::new_id_at("dep", 1_700_000_000_000), super::new_id_at("dep", 1_700_000_000_000));
        assert_eq!(a[4..12], b[4..12], "the same time, the same time part");
        assert_ne!(a, b, "the rest is random");
        assert!(super::new_id_at("dep", 1_700_000_000_001)[4..12] > a[4..12]);
        assert_eq!(&super::new_id_at("dep", -5)[4..12], "00000000");
        assert_eq!(&super::new_id_at("dep", 61)[4..12], "0000000z");
    }
}
