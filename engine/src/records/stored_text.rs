//! A text as a record stores it since format 21: one of the node's own
//! phrases as its number, any other text as its UTF-8.
//!
//! Every sandbox payout spelled the same texts: its rail's name
//! (`sandbox_simulator`), the simulator's note when it took the payout
//! (`Sandbox simulator; expected outcome: completed`) and its status
//! message (`Delivered to the recipient`), the last once more in the
//! payout's event. Those are 120 of the 360 bytes of a payout and its
//! event. `PHRASES` numbers the texts the node itself writes (the rails'
//! names and the simulator's notes and messages), and a phrase is stored
//! as two bytes: `0xFF` (a byte no UTF-8 text holds) and its number.
//!
//! Both are postcard's length-prefixed bytes, as a `String` is, so every
//! text formats before 21 stored reads the same and the upgrade rewrites
//! nothing. A text is only ever a phrase or not: reading one back gives
//! the text written, byte for byte.

use std::borrow::Cow;
use std::fmt;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::records::Spelling;

/// The first of a phrase's two stored bytes.
const PHRASE: u8 = 0xFF;

/// The phrases, by their stored number. Records name them by place: new
/// phrases go at the end, and none is ever removed, reordered or
/// reworded (a text that is not here any more is stored as text).
pub const PHRASES: [&str; 27] = [
    // The rails' names (`Rail::name`).
    "sandbox_simulator",
    "manual_settlement",
    "flutterwave",
    // The sandbox simulator's notes when it takes a payout or collection.
    "Sandbox simulator; expected outcome: completed",
    "Sandbox simulator; expected outcome: rejected",
    "Sandbox simulator; expected outcome: timeout_then_reconciled",
    "Sandbox simulator; expected outcome: completed_then_reversed",
    "Sandbox simulator; expected outcome: delayed_completion",
    "Sandbox simulator; expected outcome: failed",
    "Sandbox simulator; expected outcome: customer_timeout",
    "Sandbox simulator; expected outcome: transient_error_then_reconciled",
    "Sandbox simulator; the outcome follows the amount's last two decimal digits",
    "Routed to Flutterwave",
    // What the simulator reports for payouts.
    "Delivered to the recipient",
    "The provider rejected the payout (sandbox trigger 01)",
    "No answer from the provider; reconciling (sandbox trigger 03)",
    "Delivered; confirmed by reconciliation",
    "The recipient's provider returned the funds (sandbox trigger 05)",
    // For refunds.
    "Refunded to the payer",
    "Refunded to the payer after a delay",
    "The provider could not return the money to the payer (sandbox trigger 61)",
    // For collections.
    "The payer approved the charge",
    "The payer approved after a delay",
    "The payer declined the charge",
    "The payer did not approve in time",
    "The provider returned an error; reconciling",
    "Approved; confirmed by reconciliation",
];

/// Whether `text` is stored as a phrase where records store phrases.
pub fn is_phrase(text: &str) -> bool {
    phrase_number(text).is_some()
}

/// `text`'s number in `PHRASES`.
fn phrase_number(text: &str) -> Option<u8> {
    PHRASES.iter().position(|phrase| *phrase == text).and_then(|place| u8::try_from(place).ok())
}

/// One stored text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredText<'a> {
    text: Cow<'a, str>,
    texts: Spelling,
}

impl<'a> StoredText<'a> {
    /// `text`, stored as `texts` says.
    pub(crate) fn of(text: &'a str, texts: Spelling) -> StoredText<'a> {
        StoredText { text: Cow::Borrowed(text), texts }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The text, owned.
    pub(crate) fn into_string(self) -> String {
        self.text.into_owned()
    }
}

impl Serialize for StoredText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.texts, phrase_number(&self.text)) {
            (Spelling::Compact, Some(number)) => serializer.serialize_bytes(&[PHRASE, number]),
            // As formats before 21 stored every text (postcard writes a
            // `str` as its length and bytes, as it does `bytes`).
            _ => serializer.serialize_str(&self.text),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StoredText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_bytes(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = StoredText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a text or a phrase's number")
    }

    fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
        read(bytes).map_err(E::custom)
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        let text = read(bytes).map_err(E::custom)?;
        Ok(StoredText { text: Cow::Owned(text.text.into_owned()), texts: Spelling::Compact })
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(StoredText { text: Cow::Borrowed(text), texts: Spelling::Compact })
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(StoredText { text: Cow::Owned(text.to_string()), texts: Spelling::Compact })
    }
}

/// A stored text from its bytes: UTF-8 text, or `PHRASE` and a phrase's
/// number.
fn read(bytes: &[u8]) -> Result<StoredText<'_>, &'static str> {
    let text = match bytes {
        [PHRASE, number] => {
            Cow::Borrowed(*PHRASES.get(usize::from(*number)).ok_or("a phrase of no known number")?)
        }
        [PHRASE, ..] => return Err("a phrase's bytes are not two"),
        _ => Cow::Borrowed(
            std::str::from_utf8(bytes).map_err(|_| "a text that is neither UTF-8 nor a phrase")?,
        ),
    };
    Ok(StoredText { text, texts: Spelling::Compact })
}

#[cfg(test)]
mod tests {
    use super::{PHRASES, StoredText, is_phrase};
    use crate::records::Spelling;

    fn stored(text: &str, texts: Spelling) -> Vec<u8> {
        postcard::to_allocvec(&StoredText::of(text, texts)).unwrap()
    }

    fn read(bytes: &[u8]) -> Result<String, postcard::Error> {
        postcard::from_bytes::<StoredText>(bytes).map(StoredText::into_string)
    }

    /// Each phrase is two bytes and reads back as itself; whole, it is
    /// stored as a `String` is.
    #[test]
    fn a_phrase_is_two_bytes_and_reads_back_as_its_text() {
        for (number, phrase) in PHRASES.iter().enumerate() {
            let bytes = stored(phrase, Spelling::Compact);
            assert_eq!(bytes, [2, 0xFF, u8::try_from(number).unwrap()], "{phrase}");
            assert_eq!(read(&bytes).unwrap(), *phrase);
            let whole = stored(phrase, Spelling::Whole);
            assert_eq!(whole, postcard::to_allocvec(phrase).unwrap());
            assert_eq!(read(&whole).unwrap(), *phrase);
        }
    }

    /// Any other text is stored as a `String` is, so every text an older
    /// format stored reads the same.
    #[test]
    fn other_texts_are_stored_as_strings() {
        for text in ["", "Delivered to the recipient.", "Sandbox simulator", "naïve ₵", "sandbox_simulator "]
        {
            assert!(!is_phrase(text));
            let bytes = stored(text, Spelling::Compact);
            assert_eq!(bytes, postcard::to_allocvec(&text.to_string()).unwrap());
            assert_eq!(read(&bytes).unwrap(), text);
        }
    }

    /// Bytes that are neither text nor a known phrase are refused, not
    /// read as something else.
    #[test]
    fn unknown_phrases_and_broken_bytes_are_refused() {
        let unknown = u8::try_from(PHRASES.len()).unwrap();
        for bytes in [vec![2, 0xFF, unknown], vec![1, 0xFF], vec![3, 0xFF, 0, 0], vec![2, 0xC3, 0x28]] {
            assert!(read(&bytes).is_err(), "{bytes:?}");
        }
    }

    /// No phrase repeats, and each fits its one byte.
    #[test]
    fn phrases_are_distinct() {
        let distinct: std::collections::BTreeSet<&str> = PHRASES.into_iter().collect();
        assert_eq!(distinct.len(), PHRASES.len());
        assert!(PHRASES.len() < 256);
    }
}
