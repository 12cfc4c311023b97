//! What kinds of event the engine records.
//!
//! Each kind is one variant of [`EventKind`]; everything that lists, checks
//! or stores kinds (the webhook subscription list, the event a command
//! records, the `kind` an [`EventRecord`](crate::EventRecord) stores)
//! derives from these variants, so a new kind is one new variant.
//!
//! A kind's name is its variant's words in snake case with the first
//! separator a dot: the first word names the resource, the rest what
//! happened to it (`OrderAwaitingFunds` is `order.awaiting_funds`). That
//! name is what events store, byte for byte as before the enum existed.

use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strum::{IntoStaticStr, VariantArray};

use crate::error::EngineError;
use crate::records::{
    EventPayload, EventRecord, MovementStatus, PayoutRecord, Spelling, StoredId, StoredText, TimestampMs,
};

/// One kind of event. Not `non_exhaustive`: code that maps kinds to
/// behaviour matches on every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum EventKind {
    PayoutCompleted,
    PayoutFailed,
    PayoutReversed,
    CollectionPending,
    CollectionCompleted,
    CollectionFailed,
    AccountCredited,
    ConversionCompleted,
    OrderAwaitingFunds,
    OrderAwaitingConfirmations,
    OrderFundsReceived,
    OrderOverpaid,
    OrderUnderpaid,
    OrderProcessingPayout,
    OrderCompleted,
    OrderFailed,
    OrderExpired,
    DisputeCreated,
    DisputeUpdated,
    DisputeClosed,
    WebhookTest,
    RefundPending,
    RefundCompleted,
    RefundFailed,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [EventKind] = Self::VARIANTS;

    /// The kind's name, e.g. `payout.completed` (see the module's docs).
    pub fn name(self) -> &'static str {
        static NAMES: OnceLock<Vec<String>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            Self::VARIANTS
                .iter()
                .map(|kind| {
                    let snake: &'static str = kind.into();
                    snake.replacen('_', ".", 1)
                })
                .collect()
        });
        // `self as usize` is the variant's index in `VARIANTS`: the enum has
        // no explicit discriminants and `VARIANTS` lists it in order.
        names.get(self as usize).map_or("", String::as_str)
    }

    /// The kind `name` names, if any.
    pub fn from_name(name: &str) -> Option<EventKind> {
        Self::VARIANTS.iter().copied().find(|kind| kind.name() == name)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        EventKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event kind '{name}'")))
    }
}

/// What a payout's event stores instead of the whole payout (since format
/// 9): the payout's id and the fields that had changed by the event. A
/// payout's other fields never change once it is created and its timeline
/// only grows, so the payout as it stood at the event is the stored payout
/// with these fields and the first `timeline_len` lines of its timeline:
/// what readers get back ([`decode_event`]), so a webhook body rendered at
/// delivery is the one the payout had when the event happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutMark {
    pub id: String,
    pub status: MovementStatus,
    pub status_message: String,
    pub timeline_len: u32,
    pub updated_at: TimestampMs,
    pub completed_at: Option<TimestampMs>,
}

impl PayoutMark {
    /// What `payout` will need to be told apart from its later states.
    pub fn of(payout: &PayoutRecord) -> PayoutMark {
        PayoutMark {
            id: payout.id.clone(),
            status: payout.status,
            status_message: payout.status_message.clone(),
            timeline_len: u32::try_from(payout.timeline.len()).expect("a timeline of fewer than 2^32 lines"),
            updated_at: payout.updated_at,
            completed_at: payout.completed_at,
        }
    }

    /// `payout` (as stored now) as it stood at the mark; `Corrupt` when it
    /// cannot be that payout's later state.
    pub fn applied_to(&self, mut payout: PayoutRecord) -> Result<PayoutRecord, EngineError> {
        let len = self.timeline_len as usize;
        if payout.id != self.id || payout.timeline.len() < len {
            return Err(EngineError::Corrupt(format!(
                "an event of payout {} is later than the payout it names ({}, {} timeline lines)",
                self.id,
                payout.id,
                payout.timeline.len()
            )));
        }
        payout.timeline.truncate(len);
        payout.status = self.status;
        payout.status_message.clone_from(&self.status_message);
        payout.updated_at = self.updated_at;
        payout.completed_at = self.completed_at;
        Ok(payout)
    }
}

/// The payload tag of an event stored with a [`PayoutMark`]: far past
/// `EventPayload`'s own variants (postcard writes a variant as its index),
/// so a variant added to it later never reads as one.
const PAYOUT_MARK: u32 = 1_000;

/// The payload tag of a payout's event stored as a [`CompactMark`] (since
/// format 18).
const PAYOUT_MARK_COMPACT: u32 = 1_001;

/// The kinds of a payout's event, as a [`CompactMark`] stores them: a
/// byte where the event's head stored the kind's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum PayoutEvent {
    Completed,
    Failed,
    Reversed,
}

impl PayoutEvent {
    fn of(kind: EventKind) -> Option<PayoutEvent> {
        match kind {
            EventKind::PayoutCompleted => Some(PayoutEvent::Completed),
            EventKind::PayoutFailed => Some(PayoutEvent::Failed),
            EventKind::PayoutReversed => Some(PayoutEvent::Reversed),
            _ => None,
        }
    }

    fn kind(self) -> EventKind {
        match self {
            PayoutEvent::Completed => EventKind::PayoutCompleted,
            PayoutEvent::Failed => EventKind::PayoutFailed,
            PayoutEvent::Reversed => EventKind::PayoutReversed,
        }
    }
}

/// A [`PayoutMark`] as a payout's event stores it since format 18: with
/// the event's kind (the head's is left empty), and the payout's times as
/// the milliseconds after the event's own (`created_at`), which they
/// nearly always equal. 25 bytes fewer than the mark and the kind's name.
/// Since format 21 its status message is a [`StoredText`] (a phrase of the
/// node's own in two bytes), and since format 22 the payout's id a
/// [`StoredId`] (its parts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CompactMark<'a> {
    kind: PayoutEvent,
    #[serde(borrow)]
    id: StoredId<'a>,
    status: MovementStatus,
    #[serde(borrow)]
    status_message: StoredText<'a>,
    timeline_len: u32,
    updated_after: i128,
    completed_after: Option<i128>,
}

impl<'a> CompactMark<'a> {
    fn of(
        kind: PayoutEvent,
        mark: &'a PayoutMark,
        created_at: TimestampMs,
        (texts, ids): (Spelling, Spelling),
    ) -> CompactMark<'a> {
        let after = |at: TimestampMs| crate::records::ms_between(created_at, at);
        CompactMark {
            kind,
            updated_after: after(mark.updated_at),
            completed_after: mark.completed_at.map(after),
            id: StoredId::of(&mark.id, ids),
            status: mark.status,
            status_message: StoredText::of(&mark.status_message, texts),
            timeline_len: mark.timeline_len,
        }
    }

    /// The mark this stands for in an event made at `created_at`.
    fn into_mark(self, created_at: TimestampMs) -> Result<PayoutMark, EngineError> {
        let id = self.id.into_string();
        let at = |after: i128| {
            crate::records::time_after(created_at, after).ok_or_else(|| {
                EngineError::Corrupt(format!("an event of payout {id} stores a time out of range"))
            })
        };
        let updated_at = at(self.updated_after)?;
        let completed_at = self.completed_after.map(at).transpose()?;
        Ok(PayoutMark {
            updated_at,
            completed_at,
            id,
            status: self.status,
            status_message: self.status_message.into_string(),
            timeline_len: self.timeline_len,
        })
    }
}

/// The stored bytes of a payout's event: the event as `EventRecord` would
/// encode, with the organization left empty (it is the payout's) and the
/// payload a [`CompactMark`] of `payout` under the tag
/// [`PAYOUT_MARK_COMPACT`], the kind's name left empty too (the mark says
/// it). (A kind that is not a payout's, which the books never record for a
/// payout, is stored as formats 9 to 17 stored every payout's event: the
/// kind's name, and a [`PayoutMark`] under [`PAYOUT_MARK`].) The payout
/// must be stored, in the state `payout` holds, by the command that
/// records the event.
pub fn encode_payout_event(
    seq: u64,
    id: &str,
    kind: EventKind,
    payout: &PayoutRecord,
    created_at: TimestampMs,
) -> Vec<u8> {
    let mark = PayoutMark::of(payout);
    let compactly = (Spelling::Compact, Spelling::Compact);
    match PayoutEvent::of(kind) {
        Some(event) => {
            let compact = CompactMark::of(event, &mark, created_at, compactly);
            encode_compact(seq, &StoredId::of(id, Spelling::Compact), &compact, created_at)
        }
        None => postcard::to_extend(&(seq, id, "", kind.name(), PAYOUT_MARK, mark, created_at), Vec::new())
            .expect("postcard encodes an event"),
    }
}

/// A payout's event with `compact` as its payload.
fn encode_compact(
    seq: u64,
    id: &StoredId<'_>,
    compact: &CompactMark<'_>,
    created_at: TimestampMs,
) -> Vec<u8> {
    let fields = (seq, id, "", "", PAYOUT_MARK_COMPACT, compact, created_at);
    postcard::to_extend(&fields, Vec::with_capacity(112)).expect("postcard encodes an event")
}

/// A payout's event stored as formats 18 to 20 stored them, its status
/// message and ids whole, for the layouts of older formats in tests;
/// `None` for any other event.
pub fn payout_event_as_format_20(bytes: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
    respelled(bytes, (Spelling::Whole, Spelling::Whole))
}

/// A payout's event stored as format 21 stored them, its ids whole, for
/// the layouts of older formats in tests; `None` for any other event.
pub fn payout_event_as_format_21(bytes: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
    respelled(bytes, (Spelling::Compact, Spelling::Whole))
}

/// A payout's compact event with its texts and ids spelled as given.
fn respelled(bytes: &[u8], (texts, ids): (Spelling, Spelling)) -> Result<Option<Vec<u8>>, EngineError> {
    let ((seq, id, _, _), rest) = take_head(bytes)?;
    let (tag, after_tag) = take::<u32>(rest)?;
    if tag != PAYOUT_MARK_COMPACT {
        return Ok(None);
    }
    let (compact, rest) = take_compact(after_tag)?;
    let (created_at, _) = take::<TimestampMs>(rest)?;
    let respelled = CompactMark {
        id: StoredId::of(compact.id.as_str(), ids),
        status_message: StoredText::of(compact.status_message.as_str(), texts),
        ..compact.clone()
    };
    Ok(Some(encode_compact(seq, &StoredId::of(&id, ids), &respelled, created_at)))
}

/// A payout's event stored as format 18 stores them (`encode_payout_event`)
/// as formats 9 to 17 stored them (the kind's name and a [`PayoutMark`]),
/// for the layouts of older formats in tests; `None` for any other event.
pub fn payout_event_as_format_17(bytes: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
    let ((seq, id, organization, _), rest) = take_head(bytes)?;
    let (tag, after_tag) = take::<u32>(rest)?;
    let Some((mark, Some(kind), created_at)) = payout_mark(tag, after_tag)? else {
        return Ok(None);
    };
    let fields = (seq, id, organization, kind.kind().name(), PAYOUT_MARK, mark, created_at);
    Ok(Some(postcard::to_allocvec(&fields).expect("postcard encodes an event")))
}

fn take<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<(T, &[u8]), EngineError> {
    postcard::take_from_bytes(bytes).map_err(|e| EngineError::Corrupt(format!("undecodable event: {e}")))
}

/// An event's number, id, organization and kind.
type Head = (u64, String, String, String);

/// An event's head (its id as text, or since format 22 a payout event's as
/// its parts) and the bytes after it.
fn take_head(bytes: &[u8]) -> Result<(Head, &[u8]), EngineError> {
    let ((seq, id, organization, kind), rest) =
        postcard::take_from_bytes::<(u64, StoredId<'_>, String, String)>(bytes)
            .map_err(|e| EngineError::Corrupt(format!("undecodable event: {e}")))?;
    Ok(((seq, id.into_string(), organization, kind), rest))
}

/// The id of the event stored as `bytes`, from its head alone.
pub fn event_id(bytes: &[u8]) -> Result<String, EngineError> {
    take_head(bytes).map(|((_, id, _, _), _)| id)
}

/// A compact mark, borrowing its texts from `bytes`.
fn take_compact(bytes: &[u8]) -> Result<(CompactMark<'_>, &[u8]), EngineError> {
    postcard::take_from_bytes(bytes).map_err(|e| EngineError::Corrupt(format!("undecodable event: {e}")))
}

/// A payout's mark, read from the bytes after an event's head (`tag` and
/// what follows it), with the event's time and, for a compact mark, its
/// kind (a format 17 mark's is the head's); `None` when the event is
/// stored whole.
fn payout_mark(
    tag: u32,
    after_tag: &[u8],
) -> Result<Option<(PayoutMark, Option<PayoutEvent>, TimestampMs)>, EngineError> {
    Ok(Some(match tag {
        PAYOUT_MARK => {
            let (mark, rest) = take::<PayoutMark>(after_tag)?;
            let (created_at, _) = take::<TimestampMs>(rest)?;
            (mark, None, created_at)
        }
        PAYOUT_MARK_COMPACT => {
            let (compact, rest) = take_compact(after_tag)?;
            let (created_at, _) = take::<TimestampMs>(rest)?;
            let kind = compact.kind;
            (compact.into_mark(created_at)?, Some(kind), created_at)
        }
        _ => return Ok(None),
    }))
}

/// An event as stored, whole (`EventRecord`) or with a payout's mark, which
/// `payout` (the stored payout by id) turns back into the payout as it was.
pub fn decode_event(
    bytes: &[u8],
    payout: impl FnOnce(&str) -> Result<Option<PayoutRecord>, EngineError>,
) -> Result<EventRecord, EngineError> {
    let ((seq, id, organization, kind), rest) = take_head(bytes)?;
    let (tag, after_tag) = take::<u32>(rest)?;
    if let Some((mark, compact_kind, created_at)) = payout_mark(tag, after_tag)? {
        let kind = compact_kind.map_or(kind, |compact| compact.kind().name().to_string());
        let stored = payout(&mark.id)?.ok_or_else(|| {
            EngineError::Corrupt(format!("event {id} names payout {}, which is not stored", mark.id))
        })?;
        let organization = stored.organization.clone();
        let payload = EventPayload::Payout(mark.applied_to(stored)?);
        return Ok(EventRecord { seq, id, organization, kind, payload, created_at });
    }
    let (payload, rest) = take::<EventPayload>(rest)?;
    let (created_at, _) = take::<TimestampMs>(rest)?;
    Ok(EventRecord { seq, id, organization, kind, payload, created_at })
}

/// An event's number and organization, without its payload: enough for a
/// reader to tell whether the event concerns anyone it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHead {
    pub seq: u64,
    pub organization: String,
}

/// The head of a stored event. A payout's event leaves its organization
/// empty (`encode_payout_event`): `payout_organization` reads the payout's.
pub fn decode_event_head(
    bytes: &[u8],
    payout_organization: impl FnOnce(&str) -> Result<Option<String>, EngineError>,
) -> Result<EventHead, EngineError> {
    let ((seq, id, organization, _kind), rest) = take_head(bytes)?;
    let (tag, after_tag) = take::<u32>(rest)?;
    let payout_id = match tag {
        PAYOUT_MARK => take::<PayoutMark>(after_tag)?.0.id,
        PAYOUT_MARK_COMPACT => {
            let ((_, id), _) = postcard::take_from_bytes::<(PayoutEvent, StoredId<'_>)>(after_tag)
                .map_err(|e| EngineError::Corrupt(format!("undecodable event: {e}")))?;
            id.into_string()
        }
        _ => return Ok(EventHead { seq, organization }),
    };
    let organization = payout_organization(&payout_id)?.ok_or_else(|| {
        EngineError::Corrupt(format!("event {id} names payout {payout_id}, which is not stored"))
    })?;
    Ok(EventHead { seq, organization })
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    /// The names events have always stored: changing one would change
    /// stored records and every webhook body, so each is pinned here.
    #[test]
    fn names_are_the_stored_ones() {
        let expected = [
            "payout.completed",
            "payout.failed",
            "payout.reversed",
            "collection.pending",
            "collection.completed",
            "collection.failed",
            "account.credited",
            "conversion.completed",
            "order.awaiting_funds",
            "order.awaiting_confirmations",
            "order.funds_received",
            "order.overpaid",
            "order.underpaid",
            "order.processing_payout",
            "order.completed",
            "order.failed",
            "order.expired",
            "dispute.created",
            "dispute.updated",
            "dispute.closed",
            "webhook.test",
            "refund.pending",
            "refund.completed",
            "refund.failed",
        ];
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, expected);
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.name()), Some(*kind));
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!(EventKind::from_name("payout_completed"), None);
        assert_eq!(EventKind::from_name("payout.done"), None);
    }

    /// A kind inside a command encodes as its name, as the `String` it
    /// replaced did.
    #[test]
    fn encodes_as_its_name() {
        let kind = EventKind::OrderAwaitingFunds;
        let as_kind = postcard::to_allocvec(&kind).unwrap();
        let as_string = postcard::to_allocvec(&"order.awaiting_funds".to_string()).unwrap();
        assert_eq!(as_kind, as_string);
        assert_eq!(postcard::from_bytes::<EventKind>(&as_kind).unwrap(), kind);
        let unknown = postcard::to_allocvec(&"order.vanished".to_string()).unwrap();
        assert!(postcard::from_bytes::<EventKind>(&unknown).is_err());
    }

    /// A whole event reads back as it was written; a payout's event, stored
    /// as a mark, reads back as the payout stood at the event, however the
    /// payout moved on since.
    #[test]
    fn a_payout_event_reads_back_as_the_payout_stood() {
        use super::decode_event;
        let (completed, reversed) = (completed(), reversed());
        let (event, bytes) = completed_event();
        assert!(bytes.len() < crate::storage::encode(&event).len() / 2, "{} bytes", bytes.len());
        let read = decode_event(&bytes, |id| Ok((id == "pay_ghs_1").then(|| reversed.clone()))).unwrap();
        assert_eq!(read, event);
        let whole = crate::storage::encode(&event);
        assert_eq!(decode_event(&whole, |_| panic!("a whole event reads no payout")).unwrap(), event);
        let missing = decode_event(&bytes, |_| Ok(None));
        assert!(matches!(missing, Err(crate::error::EngineError::Corrupt(_))), "{missing:?}");
        let mut shorter = completed.clone();
        shorter.timeline.pop();
        let earlier = decode_event(&bytes, |_| Ok(Some(shorter.clone())));
        assert!(matches!(earlier, Err(crate::error::EngineError::Corrupt(_))), "{earlier:?}");

        // Its head names the payout's organization, read from the payout's
        // first fields; a whole event's head reads no payout.
        use super::{EventHead, decode_event_head};
        use crate::stored_payout::{encode, organization as payout_organization};
        let stored = encode(&reversed);
        assert_eq!(payout_organization(&stored).unwrap(), "org_1");
        let head = decode_event_head(&bytes, |id| {
            assert_eq!(id, "pay_ghs_1");
            payout_organization(&stored).map(Some)
        });
        assert_eq!(head.unwrap(), EventHead { seq: 7, organization: "org_1".into() });
        let head = decode_event_head(&whole, |_| panic!("a whole event's head reads no payout"));
        assert_eq!(head.unwrap(), EventHead { seq: 7, organization: "org_1".into() });
        assert!(matches!(
            decode_event_head(&bytes, |_| Ok(None)),
            Err(crate::error::EngineError::Corrupt(_))
        ));
    }

    /// A payout's event as formats 9 to 17 stored it (the kind's name and
    /// a whole mark) reads as before; format 18's is shorter.
    #[test]
    fn a_payout_event_of_format_17_reads_the_same_and_format_18s_is_shorter() {
        use super::{EventHead, decode_event, decode_event_head, encode_payout_event};
        use crate::records::*;
        use crate::stored_payout::{encode, organization as payout_organization};
        let (completed, reversed) = (completed(), reversed());
        let stored = encode(&reversed);
        let (event, bytes) = completed_event();
        let whole = crate::storage::encode(&event);
        // Formats 9 to 17 stored the kind's name and a whole mark: such an
        // event reads as before. Format 18 stores the kind in a byte, and
        // the payout's times as the milliseconds after the event's.
        let old = super::payout_event_as_format_17(&bytes).unwrap().expect("a payout's event");
        assert_eq!(old.len(), bytes.len() + 15, "format 17's {} bytes against {}", old.len(), bytes.len());
        let now = 1_764_331_440_966;
        let mut settled = completed.clone();
        (settled.updated_at, settled.completed_at) = (now, Some(now));
        let compact = encode_payout_event(7, "evt_1", EventKind::PayoutCompleted, &settled, now);
        let whole_mark = super::payout_event_as_format_17(&compact).unwrap().unwrap();
        assert_eq!(whole_mark.len(), compact.len() + 25, "times of today");
        let read = decode_event(&old, |id| Ok((id == "pay_ghs_1").then(|| reversed.clone()))).unwrap();
        assert_eq!(read, event);
        let head = decode_event_head(&old, |id| {
            assert_eq!(id, "pay_ghs_1");
            payout_organization(&stored).map(Some)
        });
        assert_eq!(head.unwrap(), EventHead { seq: 7, organization: "org_1".into() });
        assert_eq!(super::payout_event_as_format_17(&old).unwrap(), None, "already format 17's");
        assert_eq!(super::payout_event_as_format_17(&whole).unwrap(), None, "a whole event");

        // Any kind and times read back, and a kind no payout's event has is
        // stored as before; a time out of range is corrupt, not a panic.
        for kind in [EventKind::PayoutFailed, EventKind::PayoutReversed, EventKind::OrderCompleted] {
            for (created_at, updated_at) in [(i64::MIN, i64::MAX), (5, -3)] {
                let mut payout = completed.clone();
                payout.updated_at = updated_at;
                payout.completed_at = Some(created_at);
                let bytes = encode_payout_event(7, "evt_1", kind, &payout, created_at);
                let read = decode_event(&bytes, |_| Ok(Some(payout.clone()))).unwrap();
                assert_eq!((read.kind.as_str(), read.created_at), (kind.name(), created_at));
                assert_eq!(read.payload, EventPayload::Payout(payout.clone()));
            }
        }
        let mut late = completed.clone();
        late.updated_at = i64::MAX;
        let bytes = encode_payout_event(7, "evt_1", EventKind::PayoutCompleted, &late, -1);
        let at = bytes.len() - 1;
        let moved = [&bytes[..at], &[2u8][..]].concat(); // the event's time, 1 for -1
        let corrupt = decode_event(&moved, |_| Ok(Some(late.clone())));
        assert!(matches!(corrupt, Err(crate::error::EngineError::Corrupt(_))), "{corrupt:?}");
    }

    /// A sandbox payout's event stores its status message as a phrase
    /// (two bytes where formats 18 to 20 spelled it) and its own and its
    /// payout's ids as their parts (6 bytes fewer each than formats up to
    /// 21); those read the same.
    #[test]
    fn a_payout_events_phrase_and_ids_are_compact_and_older_formats_read_the_same() {
        use super::{decode_event, decode_event_head, encode_payout_event};
        use super::{payout_event_as_format_20, payout_event_as_format_21};
        let payout = crate::stored_payout::sandbox_payout();
        let (at, id) = (payout.updated_at, crate::ids::new_id("evt"));
        let bytes = encode_payout_event(9, &id, EventKind::PayoutCompleted, &payout, at);
        let as_21 = payout_event_as_format_21(&bytes).unwrap().expect("a payout's event");
        let as_20 = payout_event_as_format_20(&bytes).unwrap().expect("a payout's event");
        assert_eq!(as_21.len(), bytes.len() + 6 + 6, "two ids as text");
        assert_eq!(as_20.len(), as_21.len() + "Delivered to the recipient".len() - 2);
        let stored = |id: &str| Ok((id == payout.id).then(|| payout.clone()));
        let read = decode_event(&bytes, stored).unwrap();
        assert_eq!((read.id.as_str(), read.seq), (id.as_str(), 9));
        assert_eq!(read.payload, crate::records::EventPayload::Payout(payout.clone()));
        for old in [&as_21, &as_20] {
            assert_eq!(decode_event(old, stored).unwrap(), read);
            let head =
                decode_event_head(old, |id| Ok((id == payout.id).then(|| payout.organization.clone())));
            assert_eq!(head.unwrap().organization, payout.organization);
        }
        assert_eq!(payout_event_as_format_20(&as_20).unwrap(), Some(as_20.clone()), "already whole");
        let (_, whole) = completed_event();
        let legacy = super::payout_event_as_format_17(&whole).unwrap().unwrap();
        assert_eq!(payout_event_as_format_20(&legacy).unwrap(), None, "not a compact mark");
    }

    /// `completed()`'s `payout.completed` event (number 7, at 2), and its
    /// stored bytes.
    fn completed_event() -> (crate::records::EventRecord, Vec<u8>) {
        let completed = completed();
        let bytes = super::encode_payout_event(7, "evt_1", EventKind::PayoutCompleted, &completed, 2);
        let event = crate::records::EventRecord {
            seq: 7,
            id: "evt_1".into(),
            organization: "org_1".into(),
            kind: "payout.completed".into(),
            payload: crate::records::EventPayload::Payout(completed),
            created_at: 2,
        };
        (event, bytes)
    }

    /// `completed()` as it stands once the rail took it back, at 9.
    fn reversed() -> crate::records::PayoutRecord {
        let mut reversed = completed();
        reversed.status = crate::records::MovementStatus::Reversed;
        reversed.status_message = "Returned".into();
        reversed.updated_at = 9;
        reversed.timeline.push(crate::timeline::TimelineEntry::new(9, crate::timeline::Fact::PayoutReversed));
        reversed
    }

    fn completed() -> crate::records::PayoutRecord {
        use crate::records::*;
        let line = |n: i64| crate::timeline::TimelineEntry::new(n, crate::timeline::Fact::PayoutReversed);
        PayoutRecord {
            id: "pay_ghs_1".into(),
            organization: "org_1".into(),
            status: MovementStatus::Completed,
            from_account: "GHS1001".into(),
            from_currency: "GHS".into(),
            from_amount: 1_000,
            to: Destination { code: "mtn_gh".into(), ..Destination::default() },
            to_currency: "GHS".into(),
            to_amount: 1_000,
            fee_amount: 10,
            rate: "1".into(),
            narration: String::new(),
            external_reference: "ref".into(),
            metadata: "{}".into(),
            status_message: "Delivered".into(),
            hold_ids: vec![1, 2],
            timeline: vec![line(1), line(2)],
            rail: "simulator".into(),
            api_key_id: None,
            order_id: None,
            created_at: 1,
            updated_at: 2,
            completed_at: Some(2),
        }
    }
}
