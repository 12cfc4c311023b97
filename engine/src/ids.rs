//! Resource identifiers: a prefix, an underscore and 24 base62 characters,
//! e.g. `conv_0bX3k9…`. The first 8 characters are the creation time in
//! milliseconds, the other 16 are random (about 95 bits). Ids made together
//! sort together, so a batch's new records share B-tree leaves and a commit
//! rewrites far fewer pages than with fully random ids.
//!
//! The writer makes ids with `new_id_at` and its batch's time from the
//! engine's clock, so a test that holds the clock holds ids' time too.
//! `new_ordered_id` makes ids that also sort in the order they were made
//! within one millisecond (a request log keeps its entries in that order).

use std::sync::{Mutex, PoisonError};

use crate::clock::{Clock, SystemClock};
use crate::id_parts::{RANDOM_LEN, spell};
use crate::records::TimestampMs;

/// A new id made now by the machine's clock, for callers outside the
/// writer (the API layer's own records).
pub fn new_id(prefix: &str) -> String {
    new_id_at(prefix, SystemClock.now_ms())
}

/// A new id whose time part is `now_ms` (a time before 1970 counts as 0).
pub fn new_id_at(prefix: &str, now_ms: TimestampMs) -> String {
    let now_ms = u64::try_from(now_ms).unwrap_or(0);
    let random: [u8; RANDOM_LEN] = rand::random();
    // The modulo bias of 8/256 on one character in 62 is irrelevant for identifiers.
    spell(prefix, now_ms, &random.map(|b| b % 62))
}

/// The time and random digits (0 to 61) of the last `new_ordered_id`.
static LAST_ORDERED: Mutex<(u64, [u8; RANDOM_LEN])> = Mutex::new((0, [0; RANDOM_LEN]));

/// A new id made now that sorts after every id this process made with
/// this function before, as ULID's monotonic ids do: in the same
/// millisecond as the last (or when the clock stepped back), the time part
/// stays and the random part is the last one's plus a random step, so the
/// next id is not the last plus one.
pub fn new_ordered_id(prefix: &str) -> String {
    let now_ms = u64::try_from(SystemClock.now_ms()).unwrap_or(0);
    let mut last = LAST_ORDERED.lock().unwrap_or_else(PoisonError::into_inner);
    let (time, digits) = if now_ms > last.0 {
        let random: [u8; RANDOM_LEN] = rand::random();
        (now_ms, random.map(|b| b % 62))
    } else {
        let mut digits = last.1;
        match count_up(&mut digits, u64::from(rand::random::<u32>()).saturating_add(1)) {
            true => (last.0, digits),
            // The millisecond's ids are used up: the next one's first.
            false => (last.0.saturating_add(1), [0; RANDOM_LEN]),
        }
    };
    *last = (time, digits);
    spell(prefix, time, &digits)
}

/// Adds `step` to the base-62 number `digits` (most significant first);
/// false when it would overflow, leaving `digits` unspecified.
fn count_up(digits: &mut [u8; RANDOM_LEN], mut step: u64) -> bool {
    for digit in digits.iter_mut().rev() {
        // At most 61 + 61, and u64::MAX / 62 + 1: neither can overflow.
        let sum = u64::from(*digit).saturating_add(step % 62);
        *digit = (sum % 62) as u8;
        step = (step / 62).saturating_add(sum / 62);
        if step == 0 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordered_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..10_000).map(|_| super::new_ordered_id("req")).collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "every id sorts after the one before");
        assert!(ids.iter().all(|id| id.len() == 4 + 24));
    }

    #[test]
    fn counting_up_carries_and_refuses_to_overflow() {
        let mut digits = [0u8; super::RANDOM_LEN];
        digits[15] = 61;
        assert!(super::count_up(&mut digits, 1));
        assert_eq!((digits[14], digits[15]), (1, 0));
        assert!(!super::count_up(&mut [61; super::RANDOM_LEN], 1));
    }

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
