//! Standard Webhooks signatures: `v1,base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))`
//! where the key is the base64-decoded part of the secret after `whsec_`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a new signing secret (the spec allows 24 to 64).
const SECRET_BYTES: usize = 32;

/// A fresh `whsec_…` secret.
pub fn new_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// Why a message could not be signed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    #[error("the signing secret is not base64: {0}")]
    NotBase64(#[from] base64::DecodeError),
    #[error(transparent)]
    Key(#[from] hmac::digest::InvalidLength),
}

/// The `webhook-signature` header value for one attempt.
pub fn sign(secret: &str, message_id: &str, timestamp: i64, body: &[u8]) -> Result<String, SignError> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    let key = STANDARD.decode(encoded)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key)?;
    mac.update(message_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from the Standard Webhooks specification and its
    /// reference libraries' tests.
    #[test]
    fn reproduces_the_reference_vector() {
        let signature = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_have_the_prefix_and_decode() {
        let secret = new_secret();
        assert!(secret.starts_with("whsec_"));
        assert_eq!(STANDARD.decode(&secret[6..]).unwrap().len(), 32);
        assert_ne!(sign(&secret, "a", 1, b"x").unwrap(), sign(&secret, "a", 2, b"x").unwrap());
    }
}
