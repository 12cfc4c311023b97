//! Balance changes: what the journal already says, read per account.
//!
//! Every journal entry that changes an organization account's available
//! or total balance is one balance change of that account. The entry
//! stores it after its transfer (`EntryChanges`, since format 30: the
//! account's previous change and the balances after it, a few bytes per
//! side), so a change costs no record of its own. An account's changes
//! are a chain from its newest (the head in its account record) back to
//! its first, and every `MARK_EVERY`-th is marked by time
//! (`Space::BalanceMark`): the balances at an instant are one range read
//! of the marks and at most `MARK_EVERY` steps back, each one read of a
//! journal entry, whatever the account's history. Everything else a
//! statement shows (the time, the amount, the type, the source) is the
//! entry's own: no second copy of the postings is kept, and `sika verify`
//! checks the chains against the journal. Formats 10 to 29 stored each
//! change apart (`StoredChange` under `keys::balance_change`).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
// The head and the marking rule are part of the account record.
pub use crate::records::{BalanceAfter, ChangeHead, EntryChange, EntryChanges, MARK_EVERY};
use crate::records::{TimestampMs, TransferKind, TransferRecord};

/// What one journal entry did to one account's balances, signed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BalanceChange {
    pub available: i128,
    pub total: i128,
}

impl BalanceChange {
    pub fn is_zero(self) -> bool {
        self.available == 0 && self.total == 0
    }

    /// `before` moved by this change, or `Overflow`.
    pub fn applied_to(self, before: BalanceAfter) -> Result<BalanceAfter, EngineError> {
        let overflow = || EngineError::Overflow("balance after a change");
        Ok(BalanceAfter {
            available: before.available.checked_add(self.available).ok_or_else(overflow)?,
            total: before.total.checked_add(self.total).ok_or_else(overflow)?,
        })
    }
}

/// What `transfer` changed on `account_id`'s balances (nothing when the
/// account is neither side). An account's available balance is its posted
/// credits less its posted and pending debits, its total that plus its
/// pending credits (`AccountRecord::balances`), so:
///
/// | transfer | debited account | credited account |
/// |---|---|---|
/// | posted | both fall | both rise |
/// | pending (a hold) | both fall | total rises |
/// | posting a hold | nothing | available rises |
/// | voiding a hold | both rise | total falls |
pub fn change_of(transfer: &TransferRecord, account_id: &str) -> Result<BalanceChange, EngineError> {
    let amount = transfer.amount;
    let negative = amount.checked_neg().ok_or(EngineError::Overflow("balance change"))?;
    let change = |available, total| BalanceChange { available, total };
    let debited = transfer.debit_account == account_id;
    let credited = transfer.credit_account == account_id;
    Ok(match (&transfer.kind, debited, credited) {
        (_, false, false) | (_, true, true) => BalanceChange::default(),
        (TransferKind::Posted, true, false) => change(negative, negative),
        (TransferKind::Posted, false, true) => change(amount, amount),
        (TransferKind::Pending, true, false) => change(negative, negative),
        (TransferKind::Pending, false, true) => change(0, amount),
        (TransferKind::PostPending(_), true, false) => change(0, 0),
        (TransferKind::PostPending(_), false, true) => change(amount, 0),
        (TransferKind::VoidPending(_), true, false) => change(amount, amount),
        (TransferKind::VoidPending(_), false, true) => change(0, negative),
    })
}

/// The number of an organization account (`GHS1000000004` is 1000000004),
/// which keys its balance changes: eight bytes, whatever the currency.
pub fn account_number(account_id: &str) -> Option<u64> {
    let digits = account_id.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if digits.is_empty() || digits.len() == account_id.len() {
        return None;
    }
    digits.parse().ok()
}

/// Why a balance changed: the types a statement shows, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChangeType {
    Deposit,
    Collection,
    Payout,
    Fee,
    PayoutRelease,
    Conversion,
    Refund,
    RefundRelease,
    DisputeHold,
    DisputeRelease,
    DisputeLoss,
    Reversal,
    Adjustment,
}

impl ChangeType {
    pub const ALL: [ChangeType; 13] = [
        ChangeType::Deposit,
        ChangeType::Collection,
        ChangeType::Payout,
        ChangeType::Fee,
        ChangeType::PayoutRelease,
        ChangeType::Conversion,
        ChangeType::Refund,
        ChangeType::RefundRelease,
        ChangeType::DisputeHold,
        ChangeType::DisputeRelease,
        ChangeType::DisputeLoss,
        ChangeType::Reversal,
        ChangeType::Adjustment,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ChangeType::Deposit => "deposit",
            ChangeType::Collection => "collection",
            ChangeType::Payout => "payout",
            ChangeType::Fee => "fee",
            ChangeType::PayoutRelease => "payout_release",
            ChangeType::Conversion => "conversion",
            ChangeType::Refund => "refund",
            ChangeType::RefundRelease => "refund_release",
            ChangeType::DisputeHold => "dispute_hold",
            ChangeType::DisputeRelease => "dispute_release",
            ChangeType::DisputeLoss => "dispute_loss",
            ChangeType::Reversal => "reversal",
            ChangeType::Adjustment => "adjustment",
        }
    }

    pub fn parse(name: &str) -> Option<ChangeType> {
        ChangeType::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What caused a change: the kind of resource and its id, as the memo the
/// engine wrote with the transfer names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posting {
    pub change_type: ChangeType,
    /// `payout`, `collection`, `order`, `conversion`, `refund`, `dispute`,
    /// `deposit`, or `transfer` for a transfer no resource made.
    pub source_type: &'static str,
    pub source_id: String,
}

/// Reads a transfer's memo, which the engine writes in one of a few fixed
/// shapes (`deposit dep_…`, `payout pay_…`, `fee for payout pay_…`,
/// `payout pay_… reversed`, `dispute dsp_… hold`, …), and the transfer's
/// kind: settling a hold is typed by what the hold was for, releasing one
/// as that type's release. Any other memo is an adjustment made directly on
/// the ledger (`Command::Transfers`), sourced by the transfer's own id.
pub fn classify(transfer: &TransferRecord) -> Posting {
    let memo = transfer.memo.as_str();
    let voided = matches!(transfer.kind, TransferKind::VoidPending(_));
    let posting =
        |change_type, source_type, id: &str| Posting { change_type, source_type, source_id: id.into() };
    let word = |prefix: &str, suffix: &str| {
        memo.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            .filter(|id| !id.is_empty() && !id.contains(' '))
            .map(str::to_string)
    };
    if let Some(id) = word("fee for payout ", "") {
        let kind = if voided { ChangeType::PayoutRelease } else { ChangeType::Fee };
        return posting(kind, "payout", &id);
    }
    if let Some(id) = word("payout ", " reversed") {
        return posting(ChangeType::Reversal, "payout", &id);
    }
    if let Some(id) = word("payout ", "") {
        let kind = if voided { ChangeType::PayoutRelease } else { ChangeType::Payout };
        return posting(kind, "payout", &id);
    }
    if let Some(id) = word("deposit ", "") {
        return posting(ChangeType::Deposit, "deposit", &id);
    }
    if let Some(id) = word("collection ", "") {
        return posting(ChangeType::Collection, "collection", &id);
    }
    if let Some(id) = word("order ", " funds") {
        return posting(ChangeType::Collection, "order", &id);
    }
    if let Some(id) = word("conversion ", "") {
        return posting(ChangeType::Conversion, "conversion", &id);
    }
    if let Some(id) = word("refund ", "") {
        let kind = if voided { ChangeType::RefundRelease } else { ChangeType::Refund };
        return posting(kind, "refund", &id);
    }
    if let Some(id) = word("dispute ", " hold") {
        let kind = match transfer.kind {
            TransferKind::VoidPending(_) => ChangeType::DisputeRelease,
            TransferKind::PostPending(_) => ChangeType::DisputeLoss,
            TransferKind::Pending | TransferKind::Posted => ChangeType::DisputeHold,
        };
        return posting(kind, "dispute", &id);
    }
    if let Some(id) = word("dispute ", " lost") {
        return posting(ChangeType::DisputeLoss, "dispute", &id);
    }
    posting(ChangeType::Adjustment, "transfer", &transfer.id.to_string())
}

/// What one type of change added up to in a period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeTotal {
    pub count: u64,
    pub available: i128,
    pub total: i128,
}

/// An account's balances at the start and end of a period, and its
/// changes in between by type: `opening` plus every total is `closing`
/// (`Snapshot::statement` checks it as it adds them up, newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statement {
    pub opening: BalanceAfter,
    pub closing: BalanceAfter,
    /// In `ChangeType` order; only the types present.
    pub totals: std::collections::BTreeMap<ChangeType, TypeTotal>,
    pub count: u64,
}

impl Statement {
    /// Adds one change (of `change_type`) that left the balances at
    /// `after`, older than every change added so far: it must leave the
    /// balances the older end of the statement so far starts from, and
    /// the statement then starts from the balances before it.
    pub fn add_older(
        &mut self,
        change_type: ChangeType,
        change: BalanceChange,
        after: BalanceAfter,
    ) -> Result<(), EngineError> {
        if after != self.opening {
            return Err(EngineError::Corrupt(format!(
                "a balance change leaves {after:?}, but the change after it starts from {:?}",
                self.opening
            )));
        }
        let overflow = || EngineError::Overflow("statement totals");
        let undone = BalanceChange {
            available: change.available.checked_neg().ok_or_else(overflow)?,
            total: change.total.checked_neg().ok_or_else(overflow)?,
        };
        let sum = self.totals.entry(change_type).or_default();
        sum.count = sum.count.checked_add(1).ok_or_else(overflow)?;
        sum.available = sum.available.checked_add(change.available).ok_or_else(overflow)?;
        sum.total = sum.total.checked_add(change.total).ok_or_else(overflow)?;
        self.count = self.count.checked_add(1).ok_or_else(overflow)?;
        self.opening = undone.applied_to(after)?;
        Ok(())
    }
}

/// One balance change as formats 10 to 29 stored it apart
/// (`keys::balance_change`); since format 30 its entry holds it
/// (`EntryChanges`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredChange {
    /// When its journal entry was made (never before the change before it).
    pub at: TimestampMs,
    /// The journal number of the account's change before this one.
    pub previous: Option<u64>,
    pub after: BalanceAfter,
}

/// Account `number`'s change in `changes`, as one of `transfer`'s sides
/// (`transfer` being their entry's).
pub fn change_of_number(
    changes: &EntryChanges,
    transfer: &TransferRecord,
    number: u64,
) -> Option<EntryChange> {
    changes.sides(transfer).find(|(id, _)| account_number(id) == Some(number)).map(|(_, change)| change)
}

/// One balance change of an account, as read from the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexedChange {
    pub account_number: u64,
    pub at: TimestampMs,
    pub journal_seq: u64,
    pub previous: Option<u64>,
    pub after: BalanceAfter,
}

/// A balance change with the transfer that made it, both read from one
/// journal entry (`Snapshot::balance_changes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeWithTransfer {
    pub change: IndexedChange,
    pub transfer: TransferRecord,
}

/// Splits a balance change's key (`keys::balance_change`) into its
/// journal number and account number.
pub fn parse_key(key: &[u8]) -> Option<(u64, u64)> {
    let rest = key.get(1..)?;
    let (seq, rest) = rest.split_first_chunk::<8>()?;
    let number: &[u8; 8] = rest.try_into().ok()?;
    Some((u64::from_be_bytes(*seq), u64::from_be_bytes(*number)))
}

/// Splits a mark's key (`keys::balance_mark`) into its account number,
/// time and journal number.
pub fn parse_mark(key: &[u8]) -> Option<(u64, TimestampMs, u64)> {
    let rest = key.get(1..)?;
    let (number, rest) = rest.split_first_chunk::<8>()?;
    let (at, rest) = rest.split_first_chunk::<8>()?;
    let seq: &[u8; 8] = rest.try_into().ok()?;
    let at = i64::try_from(u64::from_be_bytes(*at)).ok()?;
    Some((u64::from_be_bytes(*number), at, u64::from_be_bytes(*seq)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(kind: TransferKind, memo: &str) -> TransferRecord {
        TransferRecord {
            id: 7,
            kind,
            debit_account: "GHS1000000001".into(),
            credit_account: "sys_world_GHS".into(),
            currency: "GHS".into(),
            amount: 2_500,
            memo: memo.into(),
            created_at: 0,
            pending_state: None,
            journal_seq: 7,
        }
    }

    #[test]
    fn each_kind_of_transfer_changes_each_side_as_the_balances_define() {
        let cases = [
            (TransferKind::Posted, (-2_500, -2_500), (2_500, 2_500)),
            (TransferKind::Pending, (-2_500, -2_500), (0, 2_500)),
            (TransferKind::PostPending(1), (0, 0), (2_500, 0)),
            (TransferKind::VoidPending(1), (2_500, 2_500), (0, -2_500)),
        ];
        for (kind, debit, credit) in cases {
            let t = transfer(kind.clone(), "x");
            let d = change_of(&t, "GHS1000000001").unwrap();
            let c = change_of(&t, "sys_world_GHS").unwrap();
            assert_eq!((d.available, d.total), debit, "{kind:?} debit");
            assert_eq!((c.available, c.total), credit, "{kind:?} credit");
            assert!(change_of(&t, "GHS1000000002").unwrap().is_zero());
        }
    }

    #[test]
    fn memos_name_their_type_and_source() {
        let cases = [
            (TransferKind::Posted, "deposit dep_1", ChangeType::Deposit, "deposit", "dep_1"),
            (TransferKind::Pending, "collection col_1", ChangeType::Collection, "collection", "col_1"),
            (TransferKind::Posted, "order ord_1 funds", ChangeType::Collection, "order", "ord_1"),
            (TransferKind::Pending, "payout pay_1", ChangeType::Payout, "payout", "pay_1"),
            (TransferKind::VoidPending(1), "payout pay_1", ChangeType::PayoutRelease, "payout", "pay_1"),
            (TransferKind::Pending, "fee for payout pay_1", ChangeType::Fee, "payout", "pay_1"),
            (
                TransferKind::VoidPending(1),
                "fee for payout pay_1",
                ChangeType::PayoutRelease,
                "payout",
                "pay_1",
            ),
            (TransferKind::Posted, "payout pay_1 reversed", ChangeType::Reversal, "payout", "pay_1"),
            (TransferKind::Posted, "conversion conv_1", ChangeType::Conversion, "conversion", "conv_1"),
            (TransferKind::Pending, "refund rf_1", ChangeType::Refund, "refund", "rf_1"),
            (TransferKind::VoidPending(1), "refund rf_1", ChangeType::RefundRelease, "refund", "rf_1"),
            (TransferKind::Pending, "dispute dsp_1 hold", ChangeType::DisputeHold, "dispute", "dsp_1"),
            (
                TransferKind::VoidPending(1),
                "dispute dsp_1 hold",
                ChangeType::DisputeRelease,
                "dispute",
                "dsp_1",
            ),
            (TransferKind::Posted, "dispute dsp_1 lost", ChangeType::DisputeLoss, "dispute", "dsp_1"),
            (TransferKind::Posted, "test", ChangeType::Adjustment, "transfer", "7"),
            (TransferKind::Posted, "payout pay_1 delivered", ChangeType::Adjustment, "transfer", "7"),
        ];
        for (kind, memo, change_type, source_type, source_id) in cases {
            let posting = classify(&transfer(kind, memo));
            assert_eq!(posting, Posting { change_type, source_type, source_id: source_id.into() }, "{memo}");
        }
    }

    #[test]
    fn an_account_number_is_the_digits_after_the_currency() {
        assert_eq!(account_number("GHS1000000004"), Some(1_000_000_004));
        assert_eq!(account_number("USDC1000000009"), Some(1_000_000_009));
        assert_eq!(account_number("sys_world_GHS"), None);
        assert_eq!(account_number("1000"), None);
        for name in ChangeType::ALL.map(ChangeType::name) {
            assert_eq!(ChangeType::parse(name).map(ChangeType::name), Some(name));
        }
    }
}
