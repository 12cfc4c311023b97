//! Resource identifiers: a prefix, an underscore and 24 base62 characters,
//! e.g. `conv_0bX3k9…`. The first 8 characters are the creation time in
//! milliseconds, the other 16 are random (about 95 bits). Ids made together
//! sort together, so a batch's new records share B-tree leaves and a commit
//! rewrites far fewer pages than with fully random ids.

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TIME_LEN: usize = 8;
const RANDOM_LEN: usize = 16;

pub fn new_id(prefix: &str) -> String {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
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
}
