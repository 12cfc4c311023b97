//! An id's text and its parts: `prefix_`, the time in 8 base-62
//! characters, then 16 random base-62 digits (`ids` makes them). Spelling
//! an id from its parts and reading the parts back from its text need
//! nothing else, so a stored record can keep an id as its parts
//! (`records::stored_memo`).

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TIME_LEN: usize = 8;
pub(crate) const RANDOM_LEN: usize = 16;

/// An id's parts: its prefix (the text before the last `_`), its time
/// and its random part, the 16 random digits read as one base-62 number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    pub prefix: &'a str,
    pub time_ms: u64,
    pub random: u128,
}

/// `62^16`: every random part is below it (it is below `2^96`, so one
/// fits in 12 bytes).
pub const RANDOM_END: u128 = 62u128.pow(RANDOM_LEN as u32);

/// `62^8`: every time part is below it.
pub const TIME_END: u64 = 62u64.pow(TIME_LEN as u32);

/// The parts of `id` when it has this module's shape (a prefix that is not
/// empty, `_`, 24 base-62 characters), so that `spell_parts` spells the
/// same id again; `None` for any other text.
pub fn parts(id: &str) -> Option<Parts<'_>> {
    let (prefix, rest) = id.rsplit_once('_')?;
    if prefix.is_empty() || rest.len() != TIME_LEN + RANDOM_LEN {
        return None;
    }
    let mut digits = rest.bytes().map(digit_of);
    let mut time_ms = 0u64;
    for _ in 0..TIME_LEN {
        // At most 62^8: no overflow.
        time_ms = time_ms.checked_mul(62)?.checked_add(u64::from(digits.next()??))?;
    }
    let mut random = 0u128;
    for _ in 0..RANDOM_LEN {
        // At most 62^16: no overflow.
        random = random.checked_mul(62)?.checked_add(u128::from(digits.next()??))?;
    }
    Some(Parts { prefix, time_ms, random })
}

/// The id `parts` names; `None` when its time or random part is out of
/// range (not below `TIME_END` or `RANDOM_END`).
pub fn spell_parts(parts: Parts<'_>) -> Option<String> {
    if parts.time_ms >= TIME_END || parts.random >= RANDOM_END {
        return None;
    }
    let mut digits = [0u8; RANDOM_LEN];
    let mut rest = parts.random;
    for digit in digits.iter_mut().rev() {
        *digit = (rest % 62) as u8;
        rest /= 62;
    }
    Some(spell(parts.prefix, parts.time_ms, &digits))
}

/// The value of a base-62 character of `ALPHABET`.
fn digit_of(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => byte.checked_sub(b'0'),
        b'A'..=b'Z' => byte.checked_sub(b'A')?.checked_add(10),
        b'a'..=b'z' => byte.checked_sub(b'a')?.checked_add(36),
        _ => None,
    }
}

/// `prefix_`, the time in 8 base-62 characters, then the 16 random digits.
pub(crate) fn spell(prefix: &str, time_ms: u64, digits: &[u8; RANDOM_LEN]) -> String {
    let mut id = String::with_capacity(prefix.len().saturating_add(1 + TIME_LEN + RANDOM_LEN));
    id.push_str(prefix);
    id.push('_');
    let mut time = [0u8; TIME_LEN];
    let mut rest = time_ms;
    for slot in time.iter_mut().rev() {
        *slot = ALPHABET[(rest % 62) as usize];
        rest /= 62;
    }
    id.extend(time.iter().map(|b| *b as char));
    id.extend(digits.iter().map(|d| ALPHABET[usize::from(*d)] as char));
    id
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_ids_parts_spell_it_again_and_other_text_has_none() {
        for prefix in ["pay_ghs", "dep", "a_b_c"] {
            for _ in 0..200 {
                let id = crate::ids::new_id(prefix);
                let parts = super::parts(&id).expect("an id has parts");
                assert_eq!(parts.prefix, prefix);
                assert_eq!(super::spell_parts(parts).as_deref(), Some(id.as_str()));
            }
        }
        let top = format!("x_{}", "z".repeat(24));
        let parts = super::parts(&top).unwrap();
        assert_eq!((parts.time_ms, parts.random), (super::TIME_END - 1, super::RANDOM_END - 1));
        assert_eq!(super::spell_parts(parts).as_deref(), Some(top.as_str()));
        for other in [
            "",
            "_",
            "pay",
            "_0000000000000000000000000",
            "x_000000000000000000000000_",
            "x_00000000000000000000000",
            "x_0000000000000000000000000",
            "x_00000000000000000000000-",
        ] {
            assert_eq!(super::parts(other), None, "{other:?}");
        }
        let out_of_range = [
            super::Parts { prefix: "x", time_ms: super::TIME_END, random: 0 },
            super::Parts { prefix: "x", time_ms: 0, random: super::RANDOM_END },
        ];
        for parts in out_of_range {
            assert_eq!(super::spell_parts(parts), None);
        }
    }
}
