//! Disputes that move money: the hold at opening, the shortfall a balance
//! owes when it held less than the amount, and the resolution that takes
//! or releases the hold. The API layer owns the dispute's document (its
//! reason, thread and status); the engine owns its money
//! (`DisputeRecord`), and each command here writes both in one
//! transaction, so the document and the ledger never disagree after a
//! crash. The shortfall is filled by the books themselves
//! (`Books::fill_dispute_shortfalls`), from every inflow to the balance.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Field, Problem};
use crate::events::EventKind;
use crate::ledger::{Books, TransferSpec};
use crate::money::Currency;
use crate::records::*;
use crate::storage::keys;

/// A dispute to open: its id (`dsp_…`, chosen by the API layer, whose
/// document has the same id), whose balance, and how much it disputes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewDispute {
    pub id: String,
    pub organization: String,
    pub currency: String,
    pub amount: i128,
}

/// Opens a dispute: holds its amount on the organization's balance of its
/// currency as a pending debit, or what is available when that is less
/// (the balance never goes negative), and lists the rest as owed from the
/// next inflows. Fires `dispute.created` with the dispute's money.
pub(crate) fn open(books: &mut Books, new: &NewDispute) -> Result<DisputeRecord, EngineError> {
    Currency::find(&new.currency)?;
    if new.amount <= 0 || new.amount > crate::money::AMOUNT_MINOR_MAX {
        return Err(EngineError::invalid(Field::Amount, Problem::NotPositive));
    }
    if !new.id.starts_with("dsp_") || books.store.get_raw(&keys::dispute(&new.id))?.is_some() {
        return Err(EngineError::invalid(Field::Id, Problem::NotNew { id: new.id.clone() }));
    }
    let organization = AccountRef::Organization(new.organization.clone());
    let account = books.resolve(&organization, &new.currency)?;
    let available = account.balances()?.available.max(0);
    let mut dispute = DisputeRecord {
        id: new.id.clone(),
        organization: new.organization.clone(),
        currency: new.currency.clone(),
        amount: new.amount,
        state: DisputeState::Open,
        held: 0,
        taken: 0,
        transfer_ids: Vec::new(),
        created_at: books.now,
        updated_at: books.now,
        resolved_at: None,
    };
    let held = new.amount.min(available);
    if held > 0 {
        let hold = books.transfer(&TransferSpec::Pending {
            debit: organization,
            credit: AccountRef::System(SystemAccount::World),
            currency: new.currency.clone(),
            amount: held,
            memo: crate::records::MemoShape::DisputeHold.memo(&new.id),
        })?;
        dispute.held = held;
        dispute.transfer_ids.push(hold.id);
    }
    if dispute.shortfall()? > 0 {
        let key = keys::dispute_shortfalls(&new.organization, &new.currency);
        let mut waiting = books.store.get::<Vec<String>>(&key)?.unwrap_or_default();
        assert!(!waiting.contains(&new.id), "dispute {} is listed as short twice", new.id);
        waiting.push(new.id.clone());
        books.save_shortfalls(key, &waiting);
    }
    books.save_dispute(&dispute);
    books.emit(&new.organization, EventKind::DisputeCreated, EventPayload::Dispute(dispute.clone()))?;
    Ok(dispute)
}

/// Resolves an open dispute. `accepted` (the payer's claim stands): every
/// hold is taken, and what the balance still owes stays owed, taken from
/// the next inflows. Otherwise (declined): every hold is released and the
/// balance owes nothing more for it. Fires `dispute.updated` then
/// `dispute.closed`. A dispute resolves once: a second resolution is
/// refused (`Conflict`) before anything changes.
pub(crate) fn resolve(books: &mut Books, id: &str, accepted: bool) -> Result<DisputeRecord, EngineError> {
    let mut dispute = books.dispute(id)?;
    if dispute.state != DisputeState::Open {
        return Err(EngineError::Conflict(format!("dispute '{id}' is already resolved")));
    }
    let holds = pending_holds(books, &dispute)?;
    dispute.updated_at = books.now;
    dispute.resolved_at = Some(books.now);
    if accepted {
        for hold in holds {
            books.transfer(&TransferSpec::PostPending { pending_id: hold })?;
        }
        dispute.taken = dispute.held;
        dispute.held = 0;
        dispute.state = DisputeState::Lost;
        books.save_dispute(&dispute);
    } else {
        // Out of the list and written won before the holds are released:
        // what they free serves the balance's other disputes, not this one.
        let key = keys::dispute_shortfalls(&dispute.organization, &dispute.currency);
        if let Some(mut waiting) = books.store.get::<Vec<String>>(&key)? {
            waiting.retain(|waiting_id| waiting_id != id);
            books.save_shortfalls(key, &waiting);
        }
        dispute.held = 0;
        dispute.state = DisputeState::Won;
        books.save_dispute(&dispute);
        for hold in holds {
            books.transfer(&TransferSpec::VoidPending { pending_id: hold })?;
        }
    }
    let organization = dispute.organization.clone();
    books.emit(&organization, EventKind::DisputeUpdated, EventPayload::Dispute(dispute.clone()))?;
    books.emit(&organization, EventKind::DisputeClosed, EventPayload::Dispute(dispute.clone()))?;
    Ok(dispute)
}

/// The dispute's holds still pending; they add up to what it holds.
fn pending_holds(books: &Books, dispute: &DisputeRecord) -> Result<Vec<TransferId>, EngineError> {
    let mut holds = Vec::new();
    let mut sum: i128 = 0;
    for id in &dispute.transfer_ids {
        let transfer: TransferRecord = books.stored_transfer(*id)?.ok_or_else(|| {
            EngineError::Corrupt(format!("dispute {} names a missing transfer {id}", dispute.id))
        })?;
        if transfer.kind == TransferKind::Pending && transfer.pending_state == Some(PendingState::Pending) {
            sum = sum.checked_add(transfer.amount).ok_or(EngineError::Overflow("dispute holds"))?;
            holds.push(*id);
        }
    }
    assert_eq!(sum, dispute.held, "dispute {}'s pending holds do not add up to what it holds", dispute.id);
    Ok(holds)
}
