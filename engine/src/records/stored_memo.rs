//! A transfer's memo as its journal entry stores it (since format 19).
//!
//! The engine writes its memos in a few shapes, each naming the resource
//! the transfer moved money for: `payout pay_ghs_…`, `fee for payout
//! pay_ghs_…`, `payout pay_ghs_… delivered`, `deposit dep_…`, … A sandbox
//! payout's five transfers spelled 221 bytes of memos so. Such a memo is
//! stored as its shape (a byte), the id's time as the milliseconds after
//! the transfer's own, and the id's random part as one number in 12 bytes;
//! the id's prefix is left out when the shape and the transfer's currency
//! give it (`pay_ghs` for a payout in GHS). That is 16 or 17 bytes where
//! the text took 40 to 50. Any other memo is stored as text, as formats 14
//! to 18 stored every memo.
//!
//! Both are stored as postcard's length-prefixed bytes: a memo's text as
//! its UTF-8, a shaped memo starting with `0xFF`, a byte no UTF-8 text
//! holds. So every journal entry formats 14 to 18 wrote reads the same, and
//! the upgrade rewrites nothing. The hash chain covers each transfer with
//! its memo as text (`StoredTransfer::hashed`) however it is stored, so the
//! chain format 18 wrote goes on unchanged and `sika verify` checks both
//! kinds of entry the same way.

use std::borrow::Cow;
use std::fmt;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::id_parts::{self as ids, Parts, RANDOM_END};
use crate::records::TimestampMs;

/// The first byte of a shaped memo's bytes.
const SHAPED: u8 = 0xFF;

/// In the shape byte: the id's prefix is the shape's kind, `_` and the
/// transfer's currency in lower case.
const WITH_CURRENCY: u8 = 0x80;
/// In the shape byte: the id's prefix is stored (after the random part, to
/// the end of the bytes).
const OTHER_PREFIX: u8 = 0x40;
/// In the shape byte: the shape's place in `SHAPES`.
const SHAPE_INDEX: u8 = 0x3F;

/// The longest prefix a shaped memo stores; a memo naming an id with a
/// longer one is stored as text.
const PREFIX_MAX: usize = 32;

/// One shape of memo: words before the id, the kind of id the engine
/// makes for it (`ids::new_id`'s prefix), and words after.
struct Shape {
    before: &'static str,
    kind: &'static str,
    after: &'static str,
}

/// The shapes, by their stored number. Stored memos name them by place:
/// new shapes go at the end, and none is ever removed or reordered.
const SHAPES: [Shape; 12] = [
    Shape { before: "payout ", kind: "pay", after: "" },
    Shape { before: "fee for payout ", kind: "pay", after: "" },
    Shape { before: "payout ", kind: "pay", after: " delivered" },
    Shape { before: "payout ", kind: "pay", after: " reversed" },
    Shape { before: "deposit ", kind: "dep", after: "" },
    Shape { before: "collection ", kind: "col", after: "" },
    Shape { before: "order ", kind: "ord", after: " funds" },
    Shape { before: "conversion ", kind: "conv", after: "" },
    Shape { before: "refund ", kind: "rf", after: "" },
    Shape { before: "refund ", kind: "rf", after: " delivered" },
    Shape { before: "dispute ", kind: "dsp", after: " hold" },
    Shape { before: "dispute ", kind: "dsp", after: " lost" },
];

/// The memos the engine writes, each naming the resource its transfer
/// moved money for, in the order of `SHAPES`: every write site spells its
/// memo here (`MemoShape::PayoutDelivered.memo(id)` is `payout <id>
/// delivered`), so each memo it writes is stored shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoShape {
    Payout,
    PayoutFee,
    PayoutDelivered,
    PayoutReversed,
    Deposit,
    Collection,
    OrderFunds,
    Conversion,
    Refund,
    RefundDelivered,
    DisputeHold,
    DisputeLost,
}

impl MemoShape {
    /// The memo of this shape naming `id`.
    pub(crate) fn memo(self, id: &str) -> String {
        SHAPES[self as usize].memo(id)
    }

    /// Every shape, in the order of `SHAPES`.
    #[cfg(test)]
    const ALL: [MemoShape; SHAPES.len()] = [
        MemoShape::Payout,
        MemoShape::PayoutFee,
        MemoShape::PayoutDelivered,
        MemoShape::PayoutReversed,
        MemoShape::Deposit,
        MemoShape::Collection,
        MemoShape::OrderFunds,
        MemoShape::Conversion,
        MemoShape::Refund,
        MemoShape::RefundDelivered,
        MemoShape::DisputeHold,
        MemoShape::DisputeLost,
    ];
}

impl Shape {
    /// The memo of this shape naming `id`.
    fn memo(&self, id: &str) -> String {
        format!("{}{id}{}", self.before, self.after)
    }
}

/// A memo as a journal entry stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredMemo<'a> {
    /// Any memo, as its text.
    Text(Cow<'a, str>),
    /// A memo in one of `SHAPES`, naming an id of `ids`' shape.
    Shaped(Shaped<'a>),
}

/// A memo in one of `SHAPES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shaped<'a> {
    /// Its place in `SHAPES`, with `WITH_CURRENCY` when the prefix is the
    /// shape's kind and the currency (`OTHER_PREFIX` is written from
    /// `prefix`, not kept here).
    shape: u8,
    /// The id's prefix, when neither the shape nor the currency gives it.
    prefix: Option<Cow<'a, str>>,
    /// The id's time less the transfer's `created_at`.
    time_after: i64,
    /// The id's random part (below `ids::RANDOM_END`).
    random: u128,
}

impl<'a> StoredMemo<'a> {
    /// `memo` of a transfer in `currency` made at `created_at`, as stored:
    /// shaped when it is in one of `SHAPES` and reads back the same, else
    /// its text.
    pub(crate) fn of(memo: &'a str, currency: &str, created_at: TimestampMs) -> StoredMemo<'a> {
        match shaped(memo, currency, created_at) {
            Some(shaped) => StoredMemo::Shaped(shaped),
            None => StoredMemo::Text(Cow::Borrowed(memo)),
        }
    }

    /// Whether the memo is stored as its text.
    pub(crate) fn is_text(&self) -> bool {
        matches!(self, StoredMemo::Text(_))
    }

    /// The memo's text, for a transfer in `currency` made at `created_at`;
    /// an error when a shaped memo's id is out of range.
    pub(crate) fn into_text(self, currency: &str, created_at: TimestampMs) -> Result<String, String> {
        let shaped = match self {
            StoredMemo::Text(text) => return Ok(text.into_owned()),
            StoredMemo::Shaped(shaped) => shaped,
        };
        let shape = SHAPES.get(usize::from(shaped.shape & SHAPE_INDEX)).ok_or("a memo of no known shape")?;
        let prefix = match &shaped.prefix {
            Some(prefix) => Cow::Borrowed(prefix.as_ref()),
            None if shaped.shape & WITH_CURRENCY != 0 => {
                Cow::Owned(format!("{}_{}", shape.kind, currency.to_ascii_lowercase()))
            }
            None => Cow::Borrowed(shape.kind),
        };
        let time_ms = i128::from(created_at)
            .checked_add(i128::from(shaped.time_after))
            .and_then(|time| u64::try_from(time).ok())
            .ok_or("a memo's id has a time out of range")?;
        let id = ids::spell_parts(Parts { prefix: &prefix, time_ms, random: shaped.random })
            .ok_or("a memo's id has a time or random part out of range")?;
        Ok(shape.memo(&id))
    }
}

/// `memo` as a shaped memo, when it is one.
fn shaped<'a>(memo: &'a str, currency: &str, created_at: TimestampMs) -> Option<Shaped<'a>> {
    // The first shape whose words hold an id (`payout … delivered` has the
    // words of `payout …` too, but not an id between them).
    let (place, shape, parts) = SHAPES.iter().enumerate().find_map(|(place, shape)| {
        let id = memo.strip_prefix(shape.before)?.strip_suffix(shape.after)?;
        Some((place, shape, ids::parts(id)?))
    })?;
    let time_after = i64::try_from(i128::from(parts.time_ms).checked_sub(i128::from(created_at))?).ok()?;
    let mut byte = u8::try_from(place).ok()?;
    let prefix = if parts.prefix == shape.kind {
        None
    } else if is_kind_with_currency(parts.prefix, shape.kind, currency) {
        byte |= WITH_CURRENCY;
        None
    } else if parts.prefix.len() <= PREFIX_MAX {
        Some(Cow::Borrowed(parts.prefix))
    } else {
        return None;
    };
    Some(Shaped { shape: byte, prefix, time_after, random: parts.random })
}

/// Whether `prefix` is `kind`, `_` and `currency` in lower case.
fn is_kind_with_currency(prefix: &str, kind: &str, currency: &str) -> bool {
    prefix.strip_prefix(kind).and_then(|rest| rest.strip_prefix('_')).is_some_and(|code| {
        code.len() == currency.len()
            && code.bytes().zip(currency.bytes()).all(|(stored, given)| stored == given.to_ascii_lowercase())
    })
}

impl Serialize for StoredMemo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shaped = match self {
            // As formats 14 to 18 stored every memo (postcard writes a
            // `str` as its length and bytes, as it does `bytes`).
            StoredMemo::Text(text) => return serializer.serialize_str(text),
            StoredMemo::Shaped(shaped) => shaped,
        };
        // The marker, the shape byte, the time (at most 10 bytes), the
        // random part and a prefix of at most `PREFIX_MAX` bytes.
        let mut bytes = [0u8; 2 + 10 + 12 + PREFIX_MAX];
        bytes[0] = SHAPED;
        bytes[1] = match shaped.prefix {
            Some(_) => shaped.shape | OTHER_PREFIX,
            None => shaped.shape,
        };
        let time_len = postcard::to_slice(&shaped.time_after, &mut bytes[2..12])
            .map_err(serde::ser::Error::custom)?
            .len();
        // At most 12 + 12 + `PREFIX_MAX`: no overflow.
        let mut end = time_len.saturating_add(2);
        bytes[end..end.saturating_add(12)].copy_from_slice(&shaped.random.to_be_bytes()[4..]);
        end = end.saturating_add(12);
        if let Some(prefix) = &shaped.prefix {
            let prefix = prefix.as_bytes();
            let room = bytes.get_mut(end..end.saturating_add(prefix.len())).ok_or_else(|| {
                serde::ser::Error::custom("a shaped memo's prefix is longer than it may be")
            })?;
            room.copy_from_slice(prefix);
            end = end.saturating_add(prefix.len());
        }
        serializer.serialize_bytes(&bytes[..end])
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StoredMemo<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_bytes(MemoVisitor)
    }
}

struct MemoVisitor;

impl<'de> Visitor<'de> for MemoVisitor {
    type Value = StoredMemo<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memo's text or a shaped memo's bytes")
    }

    fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
        read(bytes).map_err(E::custom)
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        read(bytes).map(StoredMemo::into_owned).map_err(E::custom)
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(StoredMemo::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(StoredMemo::Text(Cow::Owned(text.to_string())))
    }
}

impl StoredMemo<'_> {
    fn into_owned(self) -> StoredMemo<'static> {
        match self {
            StoredMemo::Text(text) => StoredMemo::Text(Cow::Owned(text.into_owned())),
            StoredMemo::Shaped(shaped) => StoredMemo::Shaped(Shaped {
                prefix: shaped.prefix.map(|prefix| Cow::Owned(prefix.into_owned())),
                ..shaped
            }),
        }
    }
}

/// A stored memo from its bytes: text unless it starts with `SHAPED`.
fn read(bytes: &[u8]) -> Result<StoredMemo<'_>, &'static str> {
    let Some((&SHAPED, rest)) = bytes.split_first() else {
        return std::str::from_utf8(bytes)
            .map(|text| StoredMemo::Text(Cow::Borrowed(text)))
            .map_err(|_| "a memo that is neither text nor shaped");
    };
    let (&shape, rest) = rest.split_first().ok_or("a shaped memo without its shape")?;
    let known = usize::from(shape & SHAPE_INDEX) < SHAPES.len();
    let both = shape & WITH_CURRENCY != 0 && shape & OTHER_PREFIX != 0;
    if !known || both {
        return Err("a memo of no known shape");
    }
    let (time_after, rest) =
        postcard::take_from_bytes::<i64>(rest).map_err(|_| "a shaped memo without its id's time")?;
    let (random, rest) =
        rest.split_first_chunk::<12>().ok_or("a shaped memo without its id's random part")?;
    let mut whole = [0u8; 16];
    whole[4..].copy_from_slice(random);
    let random = u128::from_be_bytes(whole);
    if random >= RANDOM_END {
        return Err("a shaped memo's random part is out of range");
    }
    let stored_prefix = shape & OTHER_PREFIX != 0;
    let shape = shape & !OTHER_PREFIX;
    let prefix = if stored_prefix {
        let prefix = std::str::from_utf8(rest).map_err(|_| "a shaped memo's prefix is not text")?;
        if prefix.is_empty() || prefix.len() > PREFIX_MAX {
            return Err("a shaped memo's prefix is empty or too long");
        }
        Some(Cow::Borrowed(prefix))
    } else if rest.is_empty() {
        None
    } else {
        return Err("a shaped memo has bytes after its id");
    };
    Ok(StoredMemo::Shaped(Shaped { shape, prefix, time_after, random }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `memo` stored and read back, and its stored bytes.
    fn round_trip(memo: &str, currency: &str, created_at: TimestampMs) -> (String, Vec<u8>) {
        let bytes = postcard::to_allocvec(&StoredMemo::of(memo, currency, created_at)).unwrap();
        let (back, rest) = postcard::take_from_bytes::<StoredMemo>(&bytes).unwrap();
        assert!(rest.is_empty());
        (back.into_text(currency, created_at).unwrap(), bytes)
    }

    #[test]
    fn the_engines_memos_are_shaped_and_read_back_exactly() {
        let now = 1_790_000_000_000;
        let payout = crate::ids::new_id_at("pay_ghs", now);
        let memos = [
            format!("payout {payout}"),
            format!("fee for payout {payout}"),
            format!("payout {payout} delivered"),
            format!("payout {payout} reversed"),
            format!("deposit {}", crate::ids::new_id_at("dep", now - 5)),
            format!("collection {}", crate::ids::new_id_at("col", now)),
            format!("order {} funds", crate::ids::new_id_at("ord", now)),
            format!("conversion {}", crate::ids::new_id_at("conv", now)),
            format!("refund {}", crate::ids::new_id_at("rf", now)),
            format!("refund {} delivered", crate::ids::new_id_at("rf", now)),
            format!("dispute {} hold", crate::ids::new_id_at("dsp", now)),
            format!("dispute {} lost", crate::ids::new_id_at("dsp", now - 86_400_000)),
        ];
        for memo in &memos {
            assert!(!StoredMemo::of(memo, "GHS", now).is_text(), "{memo} is shaped");
            let (back, bytes) = round_trip(memo, "GHS", now);
            assert_eq!(&back, memo);
            assert!(bytes.len() <= 20, "{memo}: {} bytes stored", bytes.len());
            assert_eq!(bytes[1], SHAPED);
        }
        // A payout's memo, as the payout's own transfer stores it: 16 bytes
        // where its text took 40.
        let (_, bytes) = round_trip(&memos[0], "GHS", now);
        assert_eq!((memos[0].len() + 1, bytes.len()), (40, 16));
    }

    #[test]
    fn each_shape_spells_the_memo_the_engine_writes_and_stores_it_shaped() {
        let now = 1_790_000_000_000;
        let words = [
            "payout ID",
            "fee for payout ID",
            "payout ID delivered",
            "payout ID reversed",
            "deposit ID",
            "collection ID",
            "order ID funds",
            "conversion ID",
            "refund ID",
            "refund ID delivered",
            "dispute ID hold",
            "dispute ID lost",
        ];
        for (place, (shape, words)) in MemoShape::ALL.into_iter().zip(words).enumerate() {
            assert_eq!(shape as usize, place, "{shape:?} names its place in SHAPES");
            assert_eq!(shape.memo("ID"), words);
            let id = crate::ids::new_id_at(&format!("{}_ghs", SHAPES[place].kind), now);
            let memo = shape.memo(&id);
            assert!(!StoredMemo::of(&memo, "GHS", now).is_text(), "{memo} is shaped");
            assert_eq!(round_trip(&memo, "GHS", now).0, memo);
        }
    }

    #[test]
    fn a_memo_of_no_shape_is_stored_as_formats_14_to_18_stored_it() {
        let now = 1_790_000_000_000;
        let id = crate::ids::new_id_at("pay_ghs", now);
        for memo in [
            "test".to_string(),
            String::new(),
            "payout".to_string(),
            format!("payout {id} "),
            format!("payout {id}x"),
            format!("payout {}", &id[..id.len() - 1]),
            format!("Payout {id}"),
            format!("payout _{}", &id[8..]),
            format!("payout {}_{}", "p".repeat(PREFIX_MAX + 1), &id[8..]),
            "adjustment: ☃".to_string(),
        ] {
            assert!(StoredMemo::of(&memo, "GHS", now).is_text(), "{memo:?}");
            let (back, bytes) = round_trip(&memo, "GHS", now);
            assert_eq!(back, memo);
            assert_eq!(bytes, postcard::to_allocvec(&memo).unwrap(), "{memo:?} as a str");
        }
    }

    #[test]
    fn a_prefix_the_shape_does_not_give_is_stored() {
        let now = 1_790_000_000_000;
        for (id, currency) in [
            (crate::ids::new_id_at("pay_usd", now), "GHS"),
            (crate::ids::new_id_at("payout", now), "GHS"),
            (crate::ids::new_id_at("pay_ghs", now), "GHSX"),
            (crate::ids::new_id_at("x_y", now), "GHS"),
        ] {
            let memo = format!("payout {id}");
            let StoredMemo::Shaped(shaped) = StoredMemo::of(&memo, currency, now) else {
                panic!("{memo} is shaped");
            };
            assert_eq!(shaped.prefix.as_deref(), Some(&id[..id.len() - 25]));
            assert_eq!(round_trip(&memo, currency, now).0, memo);
        }
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let now = 1_790_000_000_000;
        let memo = format!("payout {}", crate::ids::new_id_at("pay_ghs", now));
        let good = postcard::to_allocvec(&StoredMemo::of(&memo, "GHS", now)).unwrap();
        let shaped = &good[1..];
        let with = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = shaped.to_vec();
            edit(&mut bytes);
            let mut stored = postcard::to_allocvec(&bytes.len()).unwrap();
            stored.extend_from_slice(&bytes);
            postcard::from_bytes::<StoredMemo>(&stored)
                .map_err(|e| e.to_string())
                .and_then(|memo| memo.into_text("GHS", now))
        };
        assert_eq!(with(&|_| {}), Ok(memo));
        assert!(with(&|b| b[1] = 12).is_err(), "no shape 12");
        assert!(with(&|b| b[1] |= WITH_CURRENCY | OTHER_PREFIX).is_err(), "two prefixes");
        assert!(with(&|b| b.truncate(10)).is_err(), "cut short");
        assert!(with(&|b| b.push(b'x')).is_err(), "a byte after the id");
        assert!(with(&|b| b[3..15].fill(0xFF)).is_err(), "a random part out of range");
        assert!(with(&|b| b[1] |= OTHER_PREFIX).is_err(), "an empty prefix");
        assert!(with(&|b| b.truncate(2)).is_err(), "no time");
        // A time far before the transfer's: no id can spell it.
        let far = StoredMemo::Shaped(Shaped { shape: 0, prefix: None, time_after: -now - 1, random: 0 });
        assert!(far.into_text("GHS", now).is_err());
        let far = StoredMemo::Shaped(Shaped { shape: 0, prefix: None, time_after: i64::MAX, random: 0 });
        assert!(far.into_text("GHS", now).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Any memo, in any currency, at any time, reads back as written;
        /// memos in the engine's shapes with ids of any time and prefix.
        #[test]
        fn any_memo_reads_back_as_written(
            shape in 0..SHAPES.len(),
            kind_given in 0..4u8,
            other in "[a-z_]{1,40}",
            time_ms in 0..ids::TIME_END,
            random in 0..RANDOM_END,
            created_at in prop_oneof![Just(1_790_000_000_000i64), any::<i64>(), 0..ids::TIME_END as i64],
            currency in "[A-Z]{3}|[a-zA-Z]{1,5}",
            text in ".{0,60}",
        ) {
            let Shape { before, kind, after } = &SHAPES[shape];
            let prefix = match kind_given {
                0 => kind.to_string(),
                1 => format!("{kind}_{}", currency.to_ascii_lowercase()),
                2 => other,
                _ => format!("{kind}_{currency}"),
            };
            let id = ids::spell_parts(Parts { prefix: &prefix, time_ms, random }).unwrap();
            let memo = format!("{before}{id}{after}");
            let time_fits = i64::try_from(i128::from(time_ms) - i128::from(created_at)).is_ok();
            if prefix.len() <= PREFIX_MAX && time_fits {
                prop_assert!(!StoredMemo::of(&memo, &currency, created_at).is_text(), "{} is shaped", memo);
            }
            for memo in [memo, text] {
                let (back, _) = round_trip(&memo, &currency, created_at);
                prop_assert_eq!(back, memo);
            }
        }
    }
}
