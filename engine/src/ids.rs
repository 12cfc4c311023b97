//! Resource identifiers: a prefix, an underscore and 24 random base62
//! characters (about 143 bits), e.g. `conv_4fQ…`.

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SUFFIX_LEN: usize = 24;

pub fn new_id(prefix: &str) -> String {
    let bytes: [u8; SUFFIX_LEN] = rand::random();
    let mut id = String::with_capacity(prefix.len() + 1 + SUFFIX_LEN);
    id.push_str(prefix);
    id.push('_');
    // 248 = 4 * 62: rejecting larger bytes would be unbiased; the modulo
    // bias of 8/256 on one character in 62 is irrelevant for identifiers.
    id.extend(bytes.iter().map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char));
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
    }
}
