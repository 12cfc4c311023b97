//! A payout as the payout space stores it (since format 18): the
//! `PayoutRecord` without its id, which its key holds, and with the lines
//! of its timeline that repeat the payout's own fields stored as marks,
//! and each time as the milliseconds after the one before it.
//!
//! A sandbox payout's seven lines held 175 of its 404 bytes: each line's
//! time (6 bytes, all within a few milliseconds of the payout's creation),
//! its amount and currency, the destination's code, the account the funds
//! were held on, and the rail's message a second time. Those lines are
//! stored as their kind alone (`StoredFact::Created`, `Held`, …) and read
//! back from the payout's fields, so a payout reads back exactly as it was
//! written. Any other line (the handover and the rail's note, a note the
//! rail sent, a reversal's, or a settled line whose message is no longer
//! the payout's status message) is stored whole. With its id left to its
//! key, that payout is 253 bytes; since format 21 its rail's name, the
//! handover's note and its status message are stored as phrases
//! (`records::StoredText`), and it is 169.
//!
//! `PayoutRecord`'s own encoding is unchanged: events of orders still hold
//! whole payouts (`EventPayload::OrderWithPayout`) in that encoding.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::records::{
    Destination, MovementStatus, PayoutRecord, Spelling, StoredId, StoredText, TimestampMs, TransferId,
    ms_between, time_after,
};
use crate::storage::keys;
use crate::timeline::{Actor, Fact, Handover, Movement, TimelineEntry};

/// The bytes the payout space stores for `payout`, under
/// `keys::payout(&payout.id)`.
pub fn encode(payout: &PayoutRecord) -> Vec<u8> {
    encode_with(payout, (Spelling::Compact, Spelling::Compact))
}

/// The bytes formats 18 to 20 stored for `payout`: every text whole, for
/// the layouts of older formats in tests.
pub fn encode_as_format_20(payout: &PayoutRecord) -> Vec<u8> {
    encode_with(payout, (Spelling::Whole, Spelling::Whole))
}

/// The bytes format 21 stored for `payout`: its ids whole, for the
/// layouts of older formats in tests.
pub fn encode_as_format_21(payout: &PayoutRecord) -> Vec<u8> {
    encode_with(payout, (Spelling::Compact, Spelling::Whole))
}

/// `payout`'s bytes with its texts and its ids spelled as given.
fn encode_with(payout: &PayoutRecord, spelling: (Spelling, Spelling)) -> Vec<u8> {
    let bytes = postcard::to_extend(&StoredPayout::of(payout, spelling), Vec::with_capacity(256))
        .expect("postcard encodes a payout");
    if cfg!(debug_assertions) {
        let back = decode(&keys::payout(&payout.id), &bytes).expect("a stored payout decodes");
        assert_eq!(&back, payout, "a payout reads back as it was written");
    }
    bytes
}

/// The payout stored under `key` as `bytes` by `encode`.
pub fn decode(key: &[u8], bytes: &[u8]) -> Result<PayoutRecord, EngineError> {
    let id = keys::payout_id(key)
        .ok_or_else(|| EngineError::Corrupt(format!("a payout's key is malformed: {key:?}")))?;
    let stored: StoredPayout = postcard::from_bytes(bytes)
        .map_err(|e| EngineError::Corrupt(format!("payout {id} is undecodable: {e}")))?;
    stored.into_record(id)
}

/// A stored payout's organization, from its first field alone.
pub fn organization(bytes: &[u8]) -> Result<String, EngineError> {
    let (organization, _) = postcard::take_from_bytes::<String>(bytes)
        .map_err(|e| EngineError::Corrupt(format!("a stored payout is undecodable: {e}")))?;
    Ok(organization)
}

/// A `PayoutRecord` as stored: the same fields in the same order but the
/// id (the organization first, which `organization` reads alone), the
/// timeline as `StoredLine`s, and `updated_at` and `completed_at` as
/// milliseconds after `created_at`.
#[derive(Serialize, Deserialize)]
struct StoredPayout<'a> {
    #[serde(borrow)]
    organization: Cow<'a, str>,
    status: MovementStatus,
    #[serde(borrow)]
    from_account: Cow<'a, str>,
    #[serde(borrow)]
    from_currency: Cow<'a, str>,
    from_amount: i128,
    to: Cow<'a, Destination>,
    #[serde(borrow)]
    to_currency: Cow<'a, str>,
    to_amount: i128,
    fee_amount: i128,
    #[serde(borrow)]
    rate: Cow<'a, str>,
    #[serde(borrow)]
    narration: Cow<'a, str>,
    #[serde(borrow)]
    external_reference: Cow<'a, str>,
    #[serde(borrow)]
    metadata: Cow<'a, str>,
    #[serde(borrow)]
    status_message: StoredText<'a>,
    hold_ids: Cow<'a, [TransferId]>,
    timeline: Vec<StoredLine<'a>>,
    #[serde(borrow)]
    rail: StoredText<'a>,
    /// Since format 22 as its parts (`StoredId`).
    #[serde(borrow)]
    api_key_id: Option<StoredId<'a>>,
    #[serde(borrow)]
    order_id: Option<StoredId<'a>>,
    created_at: TimestampMs,
    /// `updated_at - created_at`.
    updated_after: i128,
    /// `completed_at - created_at`.
    completed_after: Option<i128>,
}

/// A timeline line: its time as the milliseconds after the line before
/// (the first line's after the payout's creation; negative if the clock
/// stepped back), and its fact.
#[derive(Serialize, Deserialize)]
struct StoredLine<'a> {
    after: i128,
    #[serde(borrow)]
    fact: StoredFact<'a>,
}

/// A fact as stored: whole, or as its kind when its values are the
/// payout's own.
#[derive(Serialize, Deserialize)]
enum StoredFact<'a> {
    /// Any fact, whole.
    Whole(Cow<'a, Fact>),
    /// `Fact::PayoutCreated` of the payout's `from_amount` and
    /// `from_currency` to its destination's code.
    Created,
    /// `Fact::FundsHeld` of `from_amount` in `from_currency` on
    /// `from_account`.
    Held,
    /// `Fact::FeeHeld` of `fee_amount` in `from_currency`.
    FeeHeld,
    /// `Fact::Settled` of a payout whose message is the payout's
    /// `status_message`.
    Settled { actor: Actor, success: bool },
    /// `Fact::FundsDebited` of `from_amount` in `from_currency`.
    Debited,
    /// `Fact::BalanceRefunded` of `from_amount + fee_amount` in
    /// `from_currency`.
    Refunded,
    /// `Fact::StatusChanged` of a payout.
    StatusChanged { completed: bool },
    /// `Fact::HandedOver`, its note a `StoredText` (since format 21).
    HandedOver {
        handover: Handover,
        #[serde(borrow)]
        note: StoredText<'a>,
    },
}

impl<'a> StoredFact<'a> {
    fn of(fact: &'a Fact, payout: &PayoutRecord, texts: Spelling) -> StoredFact<'a> {
        let own =
            |amount: &i128, currency: &str| *amount == payout.from_amount && currency == payout.from_currency;
        match fact {
            Fact::PayoutCreated { amount, currency, destination }
                if own(amount, currency) && *destination == payout.to.code =>
            {
                StoredFact::Created
            }
            Fact::FundsHeld { amount, currency, account }
                if own(amount, currency) && *account == payout.from_account =>
            {
                StoredFact::Held
            }
            Fact::FeeHeld { amount, currency }
                if *amount == payout.fee_amount && *currency == payout.from_currency =>
            {
                StoredFact::FeeHeld
            }
            Fact::Settled { movement: Movement::Payout, actor, success, message }
                if *message == payout.status_message =>
            {
                StoredFact::Settled { actor: *actor, success: *success }
            }
            Fact::FundsDebited { amount, currency } if own(amount, currency) => StoredFact::Debited,
            Fact::BalanceRefunded { amount, currency }
                if payout.from_amount.checked_add(payout.fee_amount) == Some(*amount)
                    && *currency == payout.from_currency =>
            {
                StoredFact::Refunded
            }
            Fact::StatusChanged { movement: Movement::Payout, completed } => {
                StoredFact::StatusChanged { completed: *completed }
            }
            Fact::HandedOver { handover, note } if texts == Spelling::Compact => {
                StoredFact::HandedOver { handover: *handover, note: StoredText::of(note, texts) }
            }
            other => StoredFact::Whole(Cow::Borrowed(other)),
        }
    }

    /// The fact this stands for in `payout` (whose fields other than its
    /// timeline are read back already).
    fn into_fact(self, payout: &PayoutRecord) -> Result<Fact, EngineError> {
        let (amount, currency) = (payout.from_amount, payout.from_currency.clone());
        Ok(match self {
            StoredFact::Whole(fact) => fact.into_owned(),
            StoredFact::Created => {
                Fact::PayoutCreated { amount, currency, destination: payout.to.code.clone() }
            }
            StoredFact::Held => Fact::FundsHeld { amount, currency, account: payout.from_account.clone() },
            StoredFact::FeeHeld => Fact::FeeHeld { amount: payout.fee_amount, currency },
            StoredFact::Settled { actor, success } => Fact::Settled {
                movement: Movement::Payout,
                actor,
                success,
                message: payout.status_message.clone(),
            },
            StoredFact::Debited => Fact::FundsDebited { amount, currency },
            StoredFact::Refunded => Fact::BalanceRefunded {
                amount: amount.checked_add(payout.fee_amount).ok_or_else(|| {
                    EngineError::Corrupt(format!("payout {}'s refund overflows", payout.id))
                })?,
                currency,
            },
            StoredFact::StatusChanged { completed } => {
                Fact::StatusChanged { movement: Movement::Payout, completed }
            }
            StoredFact::HandedOver { handover, note } => {
                Fact::HandedOver { handover, note: note.into_string() }
            }
        })
    }
}

/// `since + after`, when it is a time.
fn at(since: TimestampMs, after: i128, id: &str) -> Result<TimestampMs, EngineError> {
    time_after(since, after)
        .ok_or_else(|| EngineError::Corrupt(format!("payout {id} stores a time out of range")))
}

impl<'a> StoredPayout<'a> {
    fn of(p: &'a PayoutRecord, (texts, ids): (Spelling, Spelling)) -> StoredPayout<'a> {
        let mut previous = p.created_at;
        let timeline = p
            .timeline
            .iter()
            .map(|line| {
                let stored = StoredLine {
                    after: ms_between(previous, line.at),
                    fact: StoredFact::of(&line.fact, p, texts),
                };
                previous = line.at;
                stored
            })
            .collect();
        StoredPayout {
            organization: Cow::Borrowed(&p.organization),
            status: p.status,
            from_account: Cow::Borrowed(&p.from_account),
            from_currency: Cow::Borrowed(&p.from_currency),
            from_amount: p.from_amount,
            to: Cow::Borrowed(&p.to),
            to_currency: Cow::Borrowed(&p.to_currency),
            to_amount: p.to_amount,
            fee_amount: p.fee_amount,
            rate: Cow::Borrowed(&p.rate),
            narration: Cow::Borrowed(&p.narration),
            external_reference: Cow::Borrowed(&p.external_reference),
            metadata: Cow::Borrowed(&p.metadata),
            status_message: StoredText::of(&p.status_message, texts),
            hold_ids: Cow::Borrowed(&p.hold_ids),
            timeline,
            rail: StoredText::of(&p.rail, texts),
            api_key_id: p.api_key_id.as_deref().map(|id| StoredId::of(id, ids)),
            order_id: p.order_id.as_deref().map(|id| StoredId::of(id, ids)),
            created_at: p.created_at,
            updated_after: ms_between(p.created_at, p.updated_at),
            completed_after: p.completed_at.map(|completed| ms_between(p.created_at, completed)),
        }
    }

    fn into_record(self, id: &str) -> Result<PayoutRecord, EngineError> {
        let id = id.to_string();
        let created_at = self.created_at;
        let updated_at = at(created_at, self.updated_after, &id)?;
        let completed_at = self.completed_after.map(|after| at(created_at, after, &id)).transpose()?;
        let mut payout = PayoutRecord {
            organization: self.organization.into_owned(),
            status: self.status,
            from_account: self.from_account.into_owned(),
            from_currency: self.from_currency.into_owned(),
            from_amount: self.from_amount,
            to: self.to.into_owned(),
            to_currency: self.to_currency.into_owned(),
            to_amount: self.to_amount,
            fee_amount: self.fee_amount,
            rate: self.rate.into_owned(),
            narration: self.narration.into_owned(),
            external_reference: self.external_reference.into_owned(),
            metadata: self.metadata.into_owned(),
            status_message: self.status_message.into_string(),
            hold_ids: self.hold_ids.into_owned(),
            timeline: Vec::with_capacity(self.timeline.len()),
            rail: self.rail.into_string(),
            api_key_id: self.api_key_id.map(StoredId::into_string),
            order_id: self.order_id.map(StoredId::into_string),
            created_at,
            updated_at,
            completed_at,
            id,
        };
        let mut previous = created_at;
        for line in self.timeline {
            let when = at(previous, line.after, &payout.id)?;
            let fact = line.fact.into_fact(&payout)?;
            payout.timeline.push(TimelineEntry::new(when, fact));
            previous = when;
        }
        Ok(payout)
    }
}

/// A sandbox payout as the node writes it, completed, for tests.
#[cfg(test)]
pub(crate) fn sandbox_payout() -> PayoutRecord {
    use crate::timeline::Handover;
    let (at, done) = (1_764_331_440_962, 1_764_331_440_966);
    let line = |at, fact| TimelineEntry::new(at, fact);
    PayoutRecord {
        id: "pay_ghs_0VcGilSUY5B4UYqdklLF0Tb2".into(),
        organization: "org_0VcGijAAO69YUzKu23435aMq".into(),
        status: MovementStatus::Completed,
        from_account: "GHS1000000001".into(),
        from_currency: "GHS".into(),
        from_amount: 1_000,
        to: Destination {
            code: "mtn_gh".into(),
            account_number: Some("+233241234567".into()),
            ..Destination::default()
        },
        to_currency: "GHS".into(),
        to_amount: 1_000,
        fee_amount: 110,
        rate: "1".into(),
        narration: String::new(),
        external_reference: "bytes-1".into(),
        metadata: "{}".into(),
        status_message: "Delivered to the recipient".into(),
        hold_ids: vec![2, 3],
        timeline: vec![
            line(
                at,
                Fact::PayoutCreated { amount: 1_000, currency: "GHS".into(), destination: "mtn_gh".into() },
            ),
            line(
                at,
                Fact::FundsHeld { amount: 1_000, currency: "GHS".into(), account: "GHS1000000001".into() },
            ),
            line(at, Fact::FeeHeld { amount: 110, currency: "GHS".into() }),
            line(
                at,
                Fact::HandedOver {
                    handover: Handover::Rail,
                    note: "Sandbox simulator; expected outcome: completed".into(),
                },
            ),
            line(
                done,
                Fact::Settled {
                    movement: Movement::Payout,
                    actor: Actor::Rail,
                    success: true,
                    message: "Delivered to the recipient".into(),
                },
            ),
            line(done, Fact::FundsDebited { amount: 1_000, currency: "GHS".into() }),
            line(done, Fact::StatusChanged { movement: Movement::Payout, completed: true }),
        ],
        rail: "sandbox_simulator".into(),
        api_key_id: Some("key_0VcGijABrifG1esmnijRjdvp".into()),
        order_id: None,
        created_at: at,
        updated_at: done,
        completed_at: Some(done),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_completed_sandbox_payout_reads_back_whole_in_over_a_quarter_fewer_bytes() {
        let payout = sandbox_payout();
        let key = keys::payout(&payout.id);
        let stored = encode(&payout);
        assert_eq!(decode(&key, &stored).unwrap(), payout);
        let whole = crate::storage::encode(&payout);
        assert!(stored.len() * 4 < whole.len() * 3, "{} bytes against {}", stored.len(), whole.len());
        // The organization comes first, as events read it.
        assert_eq!(organization(&stored).unwrap(), payout.organization);
        // A key that is not a payout's is corrupt, not a panic.
        let others = [Vec::new(), vec![key[0]], key[..key.len() - 1].to_vec(), keys::order("ord_1")];
        for other in others {
            assert!(matches!(decode(&other, &stored), Err(EngineError::Corrupt(_))), "{other:?}");
        }
    }

    /// The rail's name, the simulator's note and the status message are
    /// phrases: two bytes each where formats 18 to 20 spelled them, and the
    /// payout reads back the same from either.
    #[test]
    fn a_sandbox_payouts_phrases_are_stored_as_their_numbers() {
        let payout = sandbox_payout();
        let key = keys::payout(&payout.id);
        let (phrased, whole) = (encode_as_format_21(&payout), encode_as_format_20(&payout));
        assert_eq!(decode(&key, &whole).unwrap(), payout);
        assert_eq!(decode(&key, &phrased).unwrap(), payout);
        let spelled = [
            "sandbox_simulator",
            "Sandbox simulator; expected outcome: completed",
            "Delivered to the recipient",
        ]
        .iter()
        .map(|text| text.len() - 2)
        .sum::<usize>();
        // The handover line also leaves out its fact's variant byte.
        assert_eq!(
            whole.len() - phrased.len(),
            spelled + 1,
            "{} bytes against {}",
            phrased.len(),
            whole.len()
        );
        assert!(phrased.len() <= 170, "{} bytes", phrased.len());
    }

    #[test]
    fn lines_that_differ_from_the_payout_are_stored_whole_and_read_back() {
        let mut payout = sandbox_payout();
        // Reversed later: the status message changed, the settled line's did not.
        payout.status = MovementStatus::Reversed;
        payout.status_message = "Recipient's bank returned it".into();
        payout.timeline.push(TimelineEntry::new(payout.created_at - 5, Fact::PayoutReversed));
        payout.timeline[1].fact =
            Fact::FundsHeld { amount: 999, currency: "GHS".into(), account: "GHS1000000001".into() };
        payout.timeline.push(TimelineEntry::new(
            i64::MAX,
            Fact::BalanceRefunded { amount: 1_110, currency: "GHS".into() },
        ));
        let stored = encode(&payout);
        assert_eq!(decode(&keys::payout(&payout.id), &stored).unwrap(), payout);
    }

    #[test]
    fn a_refund_whose_sum_overflows_is_stored_whole() {
        let mut payout = sandbox_payout();
        payout.from_amount = i128::MAX;
        payout.timeline =
            vec![TimelineEntry::new(0, Fact::BalanceRefunded { amount: i128::MIN, currency: "GHS".into() })];
        assert_eq!(decode(&keys::payout(&payout.id), &encode(&payout)).unwrap(), payout);
    }

    #[test]
    fn a_stored_time_out_of_range_is_corrupt_not_a_panic() {
        let mut payout = sandbox_payout();
        payout.created_at = i64::MAX;
        let mut stored = StoredPayout::of(&payout, (Spelling::Compact, Spelling::Compact));
        stored.updated_after = 1;
        let bytes = postcard::to_allocvec(&stored).unwrap();
        let key = keys::payout(&payout.id);
        assert!(matches!(decode(&key, &bytes), Err(EngineError::Corrupt(_))));
        assert!(matches!(decode(&key, &bytes[..bytes.len() / 2]), Err(EngineError::Corrupt(_))));
    }

    fn fact(own: bool) -> impl Strategy<Value = (u8, i128, String, String)> {
        let amount = if own { Just(1_000i128).boxed() } else { any::<i128>().boxed() };
        let currency = if own { Just("GHS".to_string()).boxed() } else { "[A-Z]{0,4}".boxed() };
        let text = if own {
            prop_oneof![
                Just("mtn_gh"),
                Just("GHS1000000001"),
                Just("Delivered to the recipient"),
                Just("Sandbox simulator; expected outcome: rejected"),
            ]
            .prop_map(str::to_string)
            .boxed()
        } else {
            "[a-z_]{0,8}".boxed()
        };
        (0u8..10, amount, currency, text)
    }

    proptest! {
        /// Any payout reads back as written: its lines drawn from every
        /// kind the payout space stores as a mark, with the payout's own
        /// values or others, at any times.
        #[test]
        fn every_payout_reads_back_as_written(
            lines in proptest::collection::vec((any::<i64>(), any::<bool>().prop_flat_map(fact)), 0..12),
            created_at in any::<i64>(),
            updated_at in any::<i64>(),
            completed_at in any::<Option<i64>>(),
            fee in prop_oneof![Just(110i128), any::<i128>()],
        ) {
            let mut payout = sandbox_payout();
            payout.created_at = created_at;
            payout.updated_at = updated_at;
            payout.completed_at = completed_at;
            payout.fee_amount = fee;
            payout.timeline = lines
                .into_iter()
                .map(|(at, (kind, amount, currency, text))| {
                    let fact = match kind {
                        0 => Fact::PayoutCreated { amount, currency, destination: text },
                        1 => Fact::FundsHeld { amount, currency, account: text },
                        2 => Fact::FeeHeld { amount, currency },
                        3 => Fact::Settled { movement: Movement::Payout, actor: Actor::Operator, success: amount > 0, message: text },
                        4 => Fact::Settled { movement: Movement::Collection, actor: Actor::Rail, success: true, message: text },
                        5 => Fact::FundsDebited { amount, currency },
                        6 if amount == 1_000 => Fact::BalanceRefunded { amount: amount.checked_add(fee).unwrap_or(amount), currency },
                        6 => Fact::BalanceRefunded { amount, currency },
                        7 => Fact::StatusChanged { movement: Movement::Refund, completed: amount > 0 },
                        8 => Fact::HandedOver { handover: Handover::Prompt, note: text },
                        _ => Fact::Note { kind: currency, title: text.clone(), detail: text },
                    };
                    TimelineEntry::new(at, fact)
                })
                .collect();
            let key = keys::payout(&payout.id);
            prop_assert_eq!(&decode(&key, &encode_as_format_20(&payout)).unwrap(), &payout);
            prop_assert_eq!(&decode(&key, &encode_as_format_21(&payout)).unwrap(), &payout);
            prop_assert_eq!(decode(&key, &encode(&payout)).unwrap(), payout);
        }
    }
}
