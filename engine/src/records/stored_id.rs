//! An id as a record stores it since format 22: an id of the node's own
//! shape (`id_parts`: a prefix, the time in 8 base-62 characters and 16
//! random ones) as its parts, any other id as its text.
//!
//! The parts are `0xFF` (a byte no UTF-8 text holds), the time in 6 bytes
//! and the random part in 12, both big-endian, then the prefix's text:
//! `pay_ghs_0VcKbj4mZDr14lPyD2rK6aDr` (32 bytes) in 26. Both are postcard
//! byte strings, as a `String` is, so every id an older format stored
//! reads the same, and the upgrade rewrites nothing. An id reads back as
//! the text written, byte for byte.

use std::borrow::Cow;
use std::fmt;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::EngineError;
use crate::id_parts::{self, Parts};
use crate::records::Spelling;

/// The first byte of an id stored as its parts.
const PARTS: u8 = 0xFF;

/// The longest prefix an id stored as its parts has; an id with a longer
/// one is stored as text.
const PREFIX_MAX: usize = 32;

/// The bytes before the prefix: the marker, the time and the random part.
const HEAD: usize = 1 + 6 + 12;

/// One stored id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredId<'a> {
    id: Cow<'a, str>,
    texts: Spelling,
}

impl<'a> StoredId<'a> {
    /// `id`, as its parts when `texts` is `Phrased` and it has them.
    pub(crate) fn of(id: &'a str, texts: Spelling) -> StoredId<'a> {
        StoredId { id: Cow::Borrowed(id), texts }
    }

    /// The id's text.
    pub(crate) fn as_str(&self) -> &str {
        &self.id
    }

    /// The id's text, owned.
    pub(crate) fn into_string(self) -> String {
        self.id.into_owned()
    }

    /// The id a record of its own (a list entry's value) stores as
    /// `bytes`, as text or as parts.
    pub(crate) fn read(bytes: &[u8]) -> Result<String, EngineError> {
        postcard::from_bytes::<StoredId>(bytes)
            .map(StoredId::into_string)
            .map_err(|e| EngineError::Corrupt(format!("an undecodable id: {e}")))
    }
}

/// An id field a derived record stores as its parts (`#[serde(with =
/// "stored_id::as_parts")]`), and reads in either form.
pub(crate) mod as_parts {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::StoredId;
    use crate::records::Spelling;

    pub(crate) fn serialize<S: Serializer>(id: &str, serializer: S) -> Result<S::Ok, S::Error> {
        StoredId::of(id, Spelling::Compact).serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        StoredId::deserialize(deserializer).map(StoredId::into_string)
    }
}

/// `id` as its parts, when it has them and they fit.
fn parts(id: &str) -> Option<([u8; HEAD], &str)> {
    let parts = id_parts::parts(id)?;
    if parts.prefix.len() > PREFIX_MAX {
        return None;
    }
    let mut head = [0u8; HEAD];
    head[0] = PARTS;
    head[1..7].copy_from_slice(&parts.time_ms.to_be_bytes()[2..]);
    head[7..].copy_from_slice(&parts.random.to_be_bytes()[4..]);
    Some((head, parts.prefix))
}

impl Serialize for StoredId<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.texts, parts(&self.id)) {
            (Spelling::Compact, Some((head, prefix))) => {
                let mut bytes = [0u8; HEAD + PREFIX_MAX];
                bytes[..HEAD].copy_from_slice(&head);
                let end = HEAD.saturating_add(prefix.len());
                bytes[HEAD..end].copy_from_slice(prefix.as_bytes());
                serializer.serialize_bytes(&bytes[..end])
            }
            // As formats before 22 stored every id.
            _ => serializer.serialize_str(&self.id),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StoredId<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_bytes(IdVisitor)
    }
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = StoredId<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an id's text or its parts")
    }

    fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
        read(bytes).map_err(E::custom)
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        let id = read(bytes).map_err(E::custom)?;
        Ok(StoredId { id: Cow::Owned(id.id.into_owned()), texts: Spelling::Compact })
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, id: &'de str) -> Result<Self::Value, E> {
        Ok(StoredId { id: Cow::Borrowed(id), texts: Spelling::Compact })
    }

    fn visit_str<E: serde::de::Error>(self, id: &str) -> Result<Self::Value, E> {
        Ok(StoredId { id: Cow::Owned(id.to_string()), texts: Spelling::Compact })
    }
}

/// A stored id from its bytes: UTF-8 text, or `PARTS` and the parts.
fn read(bytes: &[u8]) -> Result<StoredId<'_>, &'static str> {
    let Some((&PARTS, rest)) = bytes.split_first() else {
        let id = std::str::from_utf8(bytes).map_err(|_| "an id that is neither text nor parts")?;
        return Ok(StoredId { id: Cow::Borrowed(id), texts: Spelling::Compact });
    };
    let (time, rest) = rest.split_first_chunk::<6>().ok_or("an id's parts without its time")?;
    let (random, prefix) = rest.split_first_chunk::<12>().ok_or("an id's parts without its random part")?;
    let mut wide = [0u8; 8];
    wide[2..].copy_from_slice(time);
    let time_ms = u64::from_be_bytes(wide);
    let mut whole = [0u8; 16];
    whole[4..].copy_from_slice(random);
    let random = u128::from_be_bytes(whole);
    let prefix = std::str::from_utf8(prefix).map_err(|_| "an id's prefix is not text")?;
    if prefix.is_empty() || prefix.len() > PREFIX_MAX {
        return Err("an id's prefix is empty or too long");
    }
    // `spell_parts` refuses a time or random part out of range. Any
    // non-empty prefix reads back from the id it spells (`parts` splits
    // at the last `_`, and the 24 characters after it hold none).
    let id =
        id_parts::spell_parts(Parts { prefix, time_ms, random }).ok_or("an id's parts are out of range")?;
    Ok(StoredId { id: Cow::Owned(id), texts: Spelling::Compact })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::StoredId;
    use crate::records::Spelling;

    fn stored(id: &str, texts: Spelling) -> Vec<u8> {
        postcard::to_allocvec(&StoredId::of(id, texts)).unwrap()
    }

    fn read(bytes: &[u8]) -> Result<String, postcard::Error> {
        postcard::from_bytes::<StoredId>(bytes).map(StoredId::into_string)
    }

    /// A payout's id is 26 bytes as its parts where its text took 33, and
    /// reads back the same from both.
    #[test]
    fn an_ids_parts_are_six_bytes_shorter_and_read_back_as_its_text() {
        let id = "pay_ghs_0VcKbj4mZDr14lPyD2rK6aDr";
        let (parts, text) = (stored(id, Spelling::Compact), stored(id, Spelling::Whole));
        assert_eq!(text, postcard::to_allocvec(id).unwrap());
        assert_eq!((parts.len(), text.len()), (27, 33));
        assert_eq!(read(&parts).unwrap(), id);
        assert_eq!(read(&text).unwrap(), id);
    }

    /// Text of any other shape is stored as text.
    #[test]
    fn other_ids_are_stored_as_text() {
        let long = format!("{}_0VcKbj4mZDr14lPyD2rK6aDr", "p".repeat(33));
        for id in ["", "sys_fee_revenue_GHS", "pay_ghs_0VcKbj4mZDr14lPyD2rK6aD", "naïve", long.as_str()] {
            assert_eq!(stored(id, Spelling::Compact), postcard::to_allocvec(id).unwrap(), "{id}");
            assert_eq!(read(&stored(id, Spelling::Compact)).unwrap(), id);
        }
    }

    /// Damaged parts are refused, not read as another id.
    #[test]
    fn damaged_parts_are_refused() {
        let parts = stored("pay_ghs_0VcKbj4mZDr14lPyD2rK6aDr", Spelling::Compact);
        let body = &parts[1..];
        let framed = |bytes: &[u8]| [&[u8::try_from(bytes.len()).unwrap()][..], bytes].concat();
        let mut out_of_range = body.to_vec();
        out_of_range[7..19].fill(0xFF);
        let mut late = body.to_vec();
        late[1..7].fill(0xFF);
        for bad in
            [&body[..5], &body[..19], &out_of_range[..], &late[..], &[&body[..19], &[0xC3][..]].concat()]
        {
            assert!(read(&framed(bad)).is_err(), "{bad:?}");
        }
    }

    proptest! {
        /// Any id of the node's shape reads back from its parts, and any
        /// text reads back as itself.
        #[test]
        fn every_id_reads_back_as_written(prefix in "[a-z]{1,6}(_[a-z]{1,4})?", text in ".{0,40}") {
            let id = crate::ids::new_id(&prefix);
            prop_assert_eq!(read(&stored(&id, Spelling::Compact)).unwrap(), id.clone());
            prop_assert!(stored(&id, Spelling::Compact).len() < stored(&id, Spelling::Whole).len());
            prop_assert_eq!(read(&stored(&text, Spelling::Compact)).unwrap(), text);
        }
    }
}
