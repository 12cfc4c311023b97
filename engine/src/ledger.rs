//! The books: accounts created on first touch, transfers that keep every
//! organization account non-negative, the hash-chained journal, the event
//! outbox and the per-organization list index. Everything here runs inside
//! the writer, against the current command's layer of the overlay.

use crate::balance_changes::{BalanceAfter, EntryChange, EntryChanges, account_number, change_of};
use crate::committed::{Effects, MovementKind, MovementTouched};
use crate::error::{EngineError, Field, Problem};
use crate::events::EventKind;
use crate::money::Currency;
use crate::records::*;
use crate::storage::{Counter, Overlay, TakenAccount, debug_assert_decodes_to, keys};

/// The first account number handed out; numbers count up from here.
const ACCOUNT_NUMBER_FIRST: u64 = ACCOUNT_NUMBERS_AFTER + 1;

pub(crate) struct Books<'o, 't> {
    pub store: &'o mut Overlay<'t>,
    pub now: TimestampMs,
    /// What the command did that followers of the ledger act on once it
    /// is committed (`crate::committed`).
    pub effects: Effects,
    /// The resource the command listed last (`index`), and where: a
    /// create's idempotency entry names its resource by the position
    /// (`ResourceRef::Listed`).
    pub listed: Option<Position>,
}

/// Where `index` listed a resource: the list's kind, the resource's id and
/// its position (`Counter::ListSeq`, one count for every list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub kind: String,
    pub id: String,
    pub seq: u64,
}

/// What one transfer asks for, before the engine resolves accounts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TransferSpec {
    Posted { debit: AccountRef, credit: AccountRef, currency: String, amount: i128, memo: String },
    Pending { debit: AccountRef, credit: AccountRef, currency: String, amount: i128, memo: String },
    PostPending { pending_id: TransferId },
    VoidPending { pending_id: TransferId },
}

/// Whether a command only reads an account, or updates it and saves it
/// back (`Books::save`): an update moves the account cache's entry out
/// instead of copying it (`Overlay::take_account`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Update,
}

pub fn system_account_id(kind: SystemAccount, currency: &str) -> String {
    kind.account_id(currency)
}

impl Books<'_, '_> {
    /// A new id made at the batch's time (from the engine's clock).
    pub fn new_id(&self, prefix: &str) -> String {
        crate::ids::new_id_at(prefix, self.now)
    }

    fn counter_next(&mut self, counter: Counter, first: u64) -> Result<u64, EngineError> {
        self.store.counter_next(counter, first)
    }

    /// The account `reference` names in `currency`, created if this is its
    /// first touch.
    pub fn resolve(&mut self, reference: &AccountRef, currency: &str) -> Result<AccountRecord, EngineError> {
        self.resolve_entry(reference, currency, Access::Read).map(|taken| taken.entry.account)
    }

    /// `resolve`, as the books store the account (with its head).
    fn resolve_entry(
        &mut self,
        reference: &AccountRef,
        currency: &str,
        access: Access,
    ) -> Result<TakenAccount, EngineError> {
        Currency::find(currency)?;
        match reference {
            AccountRef::Organization(organization) => {
                let index_key = keys::org_account(organization, currency);
                if access == Access::Update
                    && let Some(entry) = self.store.take_cached_org_account(&index_key)
                {
                    return Ok(entry);
                }
                if let Some(id) = self.store.org_account_id(&index_key)? {
                    return self.entry(&id, access);
                }
                let number = self.counter_next(Counter::AccountNumber, ACCOUNT_NUMBER_FIRST)?;
                let owner = AccountOwner::Organization(organization.clone());
                let record = AccountRecord::opened(
                    organization_account_id(currency, number),
                    owner,
                    currency,
                    self.now,
                );
                self.store.put(index_key, &record.id);
                let entry = AccountEntry::opened(record);
                self.save(entry.clone());
                Ok(TakenAccount::uncached(entry))
            }
            AccountRef::System(kind) => {
                let id = system_account_id(*kind, currency);
                if let Some(record) = self.stored_entry(&keys::account(&id), access)? {
                    return Ok(record);
                }
                let record = AccountRecord::opened(id, AccountOwner::System(*kind), currency, self.now);
                let entry = AccountEntry::opened(record);
                self.save(entry.clone());
                Ok(TakenAccount::uncached(entry))
            }
        }
    }

    pub fn account(&mut self, id: &str) -> Result<AccountRecord, EngineError> {
        self.entry(id, Access::Read).map(|taken| taken.entry.account)
    }

    /// Account `id` as the books store it (with its head).
    fn entry(&mut self, id: &str, access: Access) -> Result<TakenAccount, EngineError> {
        self.stored_entry(&keys::account(id), access)?
            .ok_or_else(|| EngineError::Corrupt(format!("account {id} is indexed but missing")))
    }

    fn stored_entry(&mut self, key: &[u8], access: Access) -> Result<Option<TakenAccount>, EngineError> {
        match access {
            Access::Read => Ok(self.store.get_account(key)?.map(TakenAccount::uncached)),
            Access::Update => self.store.take_account(key),
        }
    }

    /// Writes an account. Its totals are sums of positive amounts, so none
    /// is ever negative, its balances always compute, and an organization's
    /// available balance never goes below zero (every debit checks funds
    /// first): an account breaking that is a bug in the books, and the
    /// command that wrote it fails (the writer catches the panic) rather
    /// than storing it.
    fn save(&mut self, entry: AccountEntry) {
        check_account(&entry);
        self.store.put_account(keys::account(&entry.account.id), entry);
    }

    /// `save` of an account taken to update.
    fn save_taken(&mut self, taken: TakenAccount) {
        check_account(&taken.entry);
        self.store.put_taken_account(taken);
    }
}

/// What every account written must be (see `Books::save`).
fn check_account(entry: &AccountEntry) {
    let account = &entry.account;
    let totals =
        [account.debits_posted, account.credits_posted, account.debits_pending, account.credits_pending];
    assert!(
        totals.iter().all(|total| *total >= 0),
        "account {} has a negative total: {totals:?}",
        account.id
    );
    let balances = account.balances();
    assert!(balances.is_ok(), "account {}'s balances overflow: {totals:?}", account.id);
    if account.is_organization() {
        assert!(
            balances.is_ok_and(|b| b.available >= 0),
            "organization account {} would go negative: {totals:?}",
            account.id
        );
    }
}

impl Books<'_, '_> {
    /// Applies one transfer and journals it. Checks come first, so a refused
    /// transfer changes nothing (and the caller drops the command's layer anyway).
    ///
    /// A transfer that raises an organization's available balance (a
    /// posted credit, a credit settling, a hold released) is an inflow:
    /// the disputes that balance still owes are served from it first, each
    /// by a ledger entry of its own in this same command
    /// (`fill_dispute_shortfalls`).
    pub fn transfer(&mut self, spec: &TransferSpec) -> Result<TransferRecord, EngineError> {
        let record = self.apply_transfer(spec)?;
        let raised = match record.kind {
            TransferKind::Posted | TransferKind::PostPending(_) => Some(&record.credit_account),
            TransferKind::VoidPending(_) => Some(&record.debit_account),
            TransferKind::Pending => None,
        };
        if let Some(account) = raised {
            self.fill_dispute_shortfalls(account)?;
        }
        Ok(record)
    }

    fn apply_transfer(&mut self, spec: &TransferSpec) -> Result<TransferRecord, EngineError> {
        match spec {
            TransferSpec::Posted { debit, credit, currency, amount, memo } => {
                self.new_transfer(debit, credit, currency, *amount, memo, TransferKind::Posted)
            }
            TransferSpec::Pending { debit, credit, currency, amount, memo } => {
                self.new_transfer(debit, credit, currency, *amount, memo, TransferKind::Pending)
            }
            TransferSpec::PostPending { pending_id } => self.settle(*pending_id, true),
            TransferSpec::VoidPending { pending_id } => self.settle(*pending_id, false),
        }
    }

    fn new_transfer(
        &mut self,
        debit: &AccountRef,
        credit: &AccountRef,
        currency: &str,
        amount: i128,
        memo: &str,
        kind: TransferKind,
    ) -> Result<TransferRecord, EngineError> {
        if amount <= 0 || amount > crate::money::AMOUNT_MINOR_MAX {
            return Err(EngineError::invalid(Field::Amount, Problem::NotPositive));
        }
        let mut debit_entry = self.resolve_entry(debit, currency, Access::Update)?;
        let mut credit_entry = self.resolve_entry(credit, currency, Access::Update)?;
        let (debit_account, credit_account) =
            (&mut debit_entry.entry.account, &mut credit_entry.entry.account);
        if debit_account.id == credit_account.id {
            return Err(EngineError::invalid(Field::Account, Problem::SameAccount));
        }
        self.check_funds(debit_account, amount)?;
        let pending = kind == TransferKind::Pending;
        if pending {
            debit_account.debits_pending = add(debit_account.debits_pending, amount, "debits pending")?;
            credit_account.credits_pending = add(credit_account.credits_pending, amount, "credits pending")?;
        } else {
            debit_account.debits_posted = add(debit_account.debits_posted, amount, "debits posted")?;
            credit_account.credits_posted = add(credit_account.credits_posted, amount, "credits posted")?;
        }
        let id = self.counter_next(Counter::TransferId, 1)?;
        let record = TransferRecord {
            id,
            kind,
            debit_account: debit_account.id.clone(),
            credit_account: credit_account.id.clone(),
            currency: currency.to_string(),
            amount,
            memo: memo.to_string(),
            created_at: self.now,
            pending_state: pending.then_some(PendingState::Pending),
            journal_seq: 0,
        };
        let record = self.record(record, [&mut debit_entry.entry, &mut credit_entry.entry])?;
        self.save_taken(debit_entry);
        self.save_taken(credit_entry);
        Ok(record)
    }

    fn check_funds(&self, debit_account: &AccountRecord, amount: i128) -> Result<(), EngineError> {
        if !debit_account.is_organization() {
            return Ok(());
        }
        let available = debit_account.balances()?.available;
        if available < amount {
            return Err(EngineError::InsufficientFunds {
                available,
                required: amount,
                currency: debit_account.currency.clone(),
            });
        }
        Ok(())
    }

    /// Posts (`post == true`) or voids a pending transfer for its full amount.
    fn settle(&mut self, pending_id: TransferId, post: bool) -> Result<TransferRecord, EngineError> {
        let mut hold =
            self.stored_transfer(pending_id)?.filter(|t| t.kind == TransferKind::Pending).ok_or_else(
                || EngineError::NotFound { resource: "pending transfer", id: pending_id.to_string() },
            )?;
        if hold.pending_state != Some(PendingState::Pending) {
            return Err(EngineError::NotPending(pending_id));
        }
        let mut debit_entry = self.entry(&hold.debit_account, Access::Update)?;
        let mut credit_entry = self.entry(&hold.credit_account, Access::Update)?;
        let (debit_account, credit_account) =
            (&mut debit_entry.entry.account, &mut credit_entry.entry.account);
        debit_account.debits_pending = subtract(debit_account.debits_pending, hold.amount, "debits pending")?;
        credit_account.credits_pending =
            subtract(credit_account.credits_pending, hold.amount, "credits pending")?;
        if post {
            debit_account.debits_posted = add(debit_account.debits_posted, hold.amount, "debits posted")?;
            credit_account.credits_posted =
                add(credit_account.credits_posted, hold.amount, "credits posted")?;
        }
        settle_hold(&mut hold, post);
        self.store.put_raw(keys::transfer(hold.id), TransferRef::of(&hold).encode(hold.id));
        let id = self.counter_next(Counter::TransferId, 1)?;
        let record = TransferRecord {
            id,
            kind: if post {
                TransferKind::PostPending(pending_id)
            } else {
                TransferKind::VoidPending(pending_id)
            },
            debit_account: hold.debit_account,
            credit_account: hold.credit_account,
            currency: hold.currency,
            amount: hold.amount,
            memo: hold.memo,
            created_at: self.now,
            pending_state: None,
            journal_seq: 0,
        };
        let record = self.record(record, [&mut debit_entry.entry, &mut credit_entry.entry])?;
        self.save_taken(debit_entry);
        self.save_taken(credit_entry);
        Ok(record)
    }

    /// The transfer's balance changes (`balance_changes`), which its
    /// journal entry stores after it: for each organization account whose
    /// balances it changed, the account's change before and the balances
    /// after it (nothing else: the rest is the entry's own). Moves the
    /// account's head (`AccountEntry::changes`, saved with the account
    /// right after) and marks every `MARK_EVERY`-th change. `entries` are
    /// the two sides, debit first, as the transfer leaves them.
    fn index_balance_changes(
        &mut self,
        transfer: &TransferRecord,
        entries: [&mut AccountEntry; 2],
    ) -> Result<EntryChanges, EngineError> {
        let mut changes = EntryChanges::default();
        for (entry, side) in entries.into_iter().zip([&mut changes.debit, &mut changes.credit]) {
            let account = &entry.account;
            if !account.is_organization() || change_of(transfer, &account.id)?.is_zero() {
                continue;
            }
            let number = account_number(&account.id)
                .unwrap_or_else(|| panic!("organization account {} has no number", account.id));
            let balances = account.balances()?;
            let after = BalanceAfter { available: balances.available, total: balances.total };
            let head = entry.changes;
            let seq = transfer.journal_seq;
            assert!(
                head.newest().is_none_or(|newest| newest < seq),
                "account {}'s balance changes go back from journal entry {} to {seq}",
                account.id,
                head.newest
            );
            let (next, marked) = head.then(seq)?;
            *side = Some(EntryChange { previous: head.newest(), after });
            entry.changes = next;
            if marked {
                self.store.put(keys::balance_mark(number, transfer.created_at, seq), &());
            }
        }
        Ok(changes)
    }

    /// The transfer `id` as it stands now: its journal entry's transfer,
    /// with a hold's state now (`TransferRef`).
    pub fn stored_transfer(&self, id: TransferId) -> Result<Option<TransferRecord>, EngineError> {
        let stored = self.store.get_with(&keys::transfer(id), |bytes| TransferRef::decode(id, bytes))?;
        TransferRef::find(id, stored, |seq| self.store.get(&keys::journal(seq)))
    }

    /// Appends the transfer to the journal, with its balance changes
    /// (`index_balance_changes` of `sides`), and stores it by id.
    fn record(
        &mut self,
        mut transfer: TransferRecord,
        sides: [&mut AccountEntry; 2],
    ) -> Result<TransferRecord, EngineError> {
        let seq = self.counter_next(Counter::JournalSeq, 1)?;
        transfer.journal_seq = seq;
        let prev_hash = self.store.journal_head()?.unwrap_or([0; 32]);
        self.assert_follows_journal(seq, prev_hash)?;
        // The entry is encoded once, its hash over its stored transfer
        // (`JournalEntry::chained`). A hold's id names its entry
        // (`TransferRef`); any other transfer's id is its entry's number.
        let (hash, mut entry) = JournalEntry::chained(seq, &prev_hash, &transfer);
        self.store.set_journal_head(hash);
        self.store.set_journal_last(seq, hash);
        if cfg!(debug_assertions) {
            let stored = JournalEntry::stores_hash(seq).then_some(hash);
            debug_assert_decodes_to(&JournalEntry { seq, hash: stored, transfer: transfer.clone() }, &entry);
        }
        if TransferRef::is_stored_for(&transfer) {
            self.store.put_raw(keys::transfer(transfer.id), TransferRef::of(&transfer).encode(transfer.id));
        }
        self.index_balance_changes(&transfer, sides)?.append_to(&mut entry);
        self.store.put_raw(keys::journal(seq), entry);
        Ok(transfer)
    }

    /// Asserts that journal entry `seq`, chained to `prev_hash`, follows
    /// the last entry: numbered one more, chained to its hash, and not
    /// written before. The last entry is the one this batch wrote last, or
    /// for a batch's first entry the stored one (read once per batch, off
    /// the hot path), which stores its hash as the last of its batch. A
    /// counter or head out of step with the journal would otherwise fork
    /// or overwrite it; the command fails instead.
    fn assert_follows_journal(&mut self, seq: u64, prev_hash: [u8; 32]) -> Result<(), EngineError> {
        let (last_seq, last_hash) = match self.store.journal_last() {
            Some(last) => last,
            None => {
                assert!(
                    self.store.get_raw(&keys::journal(seq))?.is_none(),
                    "journal entry {seq} is written twice"
                );
                match seq.checked_sub(1) {
                    None | Some(0) => (0, [0; 32]),
                    Some(last) => {
                        let entry = self.store.get::<JournalEntry>(&keys::journal(last))?;
                        let entry = entry
                            .unwrap_or_else(|| panic!("journal entry {seq} follows a missing entry {last}"));
                        let hash = entry.hash.unwrap_or_else(|| {
                            panic!("journal entry {seq} follows entry {last}, which does not store its hash")
                        });
                        (entry.seq, hash)
                    }
                }
            }
        };
        assert_eq!(
            last_seq.checked_add(1),
            Some(seq),
            "journal entry {seq} does not follow entry {last_seq}"
        );
        assert!(prev_hash == last_hash, "journal entry {seq} does not chain to entry {last_seq}");
        Ok(())
    }

    /// Serves the disputes an organization's balance still owes (oldest
    /// first) from what is available on `account_id` now: an open dispute
    /// gets a pending hold, a lost one a posted debit, each its own ledger
    /// entry, and each fires `dispute.updated` with the dispute's new
    /// money. A balance never goes negative: no more than is available is
    /// ever held or taken. A system account owes no dispute.
    fn fill_dispute_shortfalls(&mut self, account_id: &str) -> Result<(), EngineError> {
        if !self.store.may_hold_dispute_shortfalls()? {
            return Ok(());
        }
        let account = self.account(account_id)?;
        let AccountOwner::Organization(organization) = &account.owner else { return Ok(()) };
        let key = keys::dispute_shortfalls(organization, &account.currency);
        let Some(mut waiting) = self.store.get::<Vec<String>>(&key)? else { return Ok(()) };
        let mut available = account.balances()?.available;
        while available > 0
            && let Some(id) = waiting.first().cloned()
        {
            let mut dispute = self.dispute(&id)?;
            let short = dispute.shortfall()?;
            assert!(short > 0, "dispute {id} is listed as short but owes nothing");
            assert!(
                dispute.organization == *organization && dispute.currency == account.currency,
                "dispute {id} is listed under another balance"
            );
            let amount = short.min(available);
            let (debit, credit) =
                (AccountRef::Organization(organization.clone()), AccountRef::System(SystemAccount::World));
            let currency = account.currency.clone();
            let transfer = match dispute.state {
                DisputeState::Open => {
                    let memo = crate::records::MemoShape::DisputeHold.memo(&id);
                    let t =
                        self.transfer(&TransferSpec::Pending { debit, credit, currency, amount, memo })?;
                    dispute.held = add(dispute.held, amount, "dispute held")?;
                    t
                }
                DisputeState::Lost => {
                    let memo = crate::records::MemoShape::DisputeLost.memo(&id);
                    let t = self.transfer(&TransferSpec::Posted { debit, credit, currency, amount, memo })?;
                    dispute.taken = add(dispute.taken, amount, "dispute taken")?;
                    t
                }
                DisputeState::Won => panic!("won dispute {id} is listed as short"),
            };
            dispute.transfer_ids.push(transfer.id);
            dispute.updated_at = self.now;
            available = subtract(available, amount, "available balance")?;
            if dispute.shortfall()? == 0 {
                waiting.remove(0);
            }
            self.save_dispute(&dispute);
            self.emit(organization, EventKind::DisputeUpdated, EventPayload::Dispute(dispute))?;
        }
        self.save_shortfalls(key, &waiting);
        Ok(())
    }

    /// A dispute's money record.
    pub fn dispute(&self, id: &str) -> Result<DisputeRecord, EngineError> {
        self.store
            .get::<DisputeRecord>(&keys::dispute(id))?
            .ok_or_else(|| EngineError::NotFound { resource: "dispute", id: id.to_string() })
    }

    /// Writes a dispute's money record, asserting its invariants first.
    pub fn save_dispute(&mut self, dispute: &DisputeRecord) {
        dispute.assert_consistent();
        self.store.put(keys::dispute(&dispute.id), dispute);
    }

    /// Writes the list of disputes a balance owes (none: the key goes).
    pub fn save_shortfalls(&mut self, key: Vec<u8>, waiting: &Vec<String>) {
        if waiting.is_empty() {
            self.store.delete(key);
        } else {
            self.store.put(key, waiting);
        }
    }

    /// Records an event in the outbox, in the same transaction as its change.
    pub fn emit(
        &mut self,
        organization: &str,
        kind: EventKind,
        payload: EventPayload,
    ) -> Result<(), EngineError> {
        let (seq, id) = self.new_event(organization, kind)?;
        let event = EventRecord {
            seq,
            id,
            organization: organization.to_string(),
            kind: kind.name().to_string(),
            payload,
            created_at: self.now,
        };
        self.store.put(keys::event(seq), &event);
        Ok(())
    }

    /// Numbers and names a new event of the organization's and indexes it
    /// (by id, in its list, in the batch's effects); the caller stores it
    /// under `keys::event(seq)`. Returns its sequence number and id.
    pub(crate) fn new_event(
        &mut self,
        organization: &str,
        kind: EventKind,
    ) -> Result<(u64, String), EngineError> {
        let seq = self.counter_next(Counter::EventSeq, 1)?;
        let id = self.new_id("evt");
        self.store.put(keys::event_id(&id), &seq);
        self.list(organization, "events", crate::records::Listed::event_bytes(seq))?;
        self.effects.events.push(kind);
        Ok((seq, id))
    }

    /// Notes a payout or collection created or advanced, for after-commit
    /// effects.
    pub fn touched(&mut self, kind: MovementKind, id: &str, rail: &str, open: bool) {
        self.effects.movements.push(MovementTouched {
            kind,
            id: id.to_string(),
            rail: rail.to_string(),
            open,
        });
    }

    /// Stores a document the API layer owns (an empty body deletes it) and,
    /// when it is new, adds it to the organization's list `list` names
    /// (organization, kind).
    pub fn put_document(
        &mut self,
        collection: &str,
        id: &str,
        body: &[u8],
        list: &Option<(String, String)>,
    ) -> Result<(), EngineError> {
        if crate::storage::is_engine_owned(collection) {
            return Err(EngineError::EngineOwned { collection: collection.to_string() });
        }
        let key = keys::document(collection, id);
        let is_new = self.store.get_raw(&key)?.is_none();
        if body.is_empty() {
            self.store.delete(key);
        } else {
            self.store.put_raw(key, body.to_vec());
        }
        if let Some((organization, kind)) = list
            && is_new
        {
            self.index(organization, kind, id)?;
        }
        Ok(())
    }

    /// Adds `id` to the organization's list of `kind`, newest last.
    pub fn index(&mut self, organization: &str, kind: &str, id: &str) -> Result<(), EngineError> {
        let seq =
            self.list(organization, kind, crate::storage::encode(&StoredId::of(id, Spelling::Compact)))?;
        self.listed = Some(Position { kind: kind.to_string(), id: id.to_string(), seq });
        Ok(())
    }

    /// Adds the entry `entry` (`records::Listed`) to the organization's
    /// list of `kind`, newest last; returns its position.
    fn list(&mut self, organization: &str, kind: &str, entry: Vec<u8>) -> Result<u64, EngineError> {
        let seq = self.counter_next(Counter::ListSeq, 1)?;
        let organization = self.store.name_number_or_new(organization)?;
        let kind = self.store.name_number_or_new(kind)?;
        self.store.put_raw(keys::list_entry(organization, kind, seq), entry);
        Ok(seq)
    }
}

/// Marks a pending transfer posted or voided. A hold is settled at most
/// once: the caller refuses one that is not pending (`NotPending`) before
/// it changes anything, so settling it again here is a bug.
fn settle_hold(hold: &mut TransferRecord, post: bool) {
    assert!(
        hold.kind == TransferKind::Pending && hold.pending_state == Some(PendingState::Pending),
        "transfer {} is settled a second time (it is {:?}, {:?})",
        hold.id,
        hold.kind,
        hold.pending_state
    );
    hold.pending_state = Some(if post { PendingState::Posted } else { PendingState::Voided });
}

/// `total + amount`; `what` names the total if the sum overflows.
fn add(total: i128, amount: i128, what: &'static str) -> Result<i128, EngineError> {
    total.checked_add(amount).ok_or(EngineError::Overflow(what))
}

/// `total - amount`; `what` names the total if the difference overflows.
fn subtract(total: i128, amount: i128, what: &'static str) -> Result<i128, EngineError> {
    total.checked_sub(amount).ok_or(EngineError::Overflow(what))
}

#[cfg(test)]
mod tests {
    use redb::Database;
    use sha2::{Digest, Sha256};

    use crate::storage::encode;

    use super::*;
    use crate::storage::RECORDS;

    /// The hash covers the transfer as formats 24 to 27 stored it (its
    /// accounts numbered) with its id whole, whether it is checked on the
    /// stack or, past 512 bytes, on the heap; since format 28 an
    /// organization account numbered past 1,000,000,000 is stored as its
    /// count past it, four bytes fewer for the first 127, and an account
    /// numbered below is stored as before.
    #[test]
    fn the_chain_hash_covers_the_stored_transfer_whatever_its_length() {
        for (credit, saved) in [("NGN1000000001", 4), ("NGN1000000200", 3), ("NGN999", 0)] {
            for memo_length in [0, 40, 500, 600, 5_000] {
                let transfer = TransferRecord {
                    id: 3,
                    kind: TransferKind::Posted,
                    debit_account: "sys_world_NGN".into(),
                    credit_account: credit.into(),
                    currency: "NGN".into(),
                    amount: 10_000,
                    memo: "m".repeat(memo_length),
                    created_at: 1_700_000_000_000,
                    pending_state: None,
                    journal_seq: 3,
                };
                let (hash, entry) = JournalEntry::chained(3, &[7; 32], &transfer);
                // The entry: its number (one byte), no hash (0), its
                // transfer, whose id is stored as 0 (the entry's number).
                assert_eq!(entry.get(1), Some(&0));
                assert_eq!(entry.get(2), Some(&0));
                let numbered =
                    JournalEntry { seq: 3, hash: None, transfer: transfer.clone() }.encode_as_format_27();
                assert_eq!(numbered.len(), entry.len() + saved, "{credit}");
                let mut hashed = numbered[2..].to_vec();
                hashed[0] = 3;
                let expected: [u8; 32] =
                    Sha256::new().chain_update([7; 32]).chain_update(&hashed).finalize().into();
                assert_eq!(hash, expected, "{credit}, a memo of {memo_length} bytes");
                assert_eq!(
                    JournalEntry::chain_hash(&[7; 32], 3, &transfer),
                    hash,
                    "{credit}, a memo of {memo_length} bytes"
                );
                let decoded: JournalEntry = crate::storage::decode(&entry).unwrap();
                assert_eq!(decoded, JournalEntry { seq: 3, hash: None, transfer: transfer.clone() });
                let as_27: JournalEntry = crate::storage::decode(&numbered).unwrap();
                assert_eq!(as_27, decoded, "an entry format 27 stored reads the same");
            }
        }
    }

    /// Runs `f` with books over an empty in-memory database.
    fn with_books<R>(f: impl FnOnce(&mut Books) -> R) -> R {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut overlay = Overlay::new(&table, &[]);
        f(&mut Books {
            store: &mut overlay,
            now: 1_700_000_000_000,
            effects: Effects::default(),
            listed: None,
        })
    }

    fn organization() -> AccountRef {
        AccountRef::Organization("org_1".into())
    }

    fn posted(debit: AccountRef, credit: AccountRef, amount: i128) -> TransferSpec {
        TransferSpec::Posted { debit, credit, currency: "USD".into(), amount, memo: "test".into() }
    }

    #[test]
    fn a_total_that_would_overflow_is_an_error() {
        with_books(|books| {
            let mut taken = books.resolve_entry(&organization(), "USD", Access::Update).unwrap();
            taken.entry.account.credits_posted = i128::MAX - 5;
            books.save_taken(taken);
            let world = AccountRef::System(SystemAccount::World);
            assert_eq!(
                books.transfer(&posted(world.clone(), organization(), 10)),
                Err(EngineError::Overflow("credits posted"))
            );
            assert!(books.transfer(&posted(world, organization(), 5)).is_ok(), "up to the limit it adds");
        });
    }

    fn pending(debit: AccountRef, credit: AccountRef, amount: i128) -> TransferSpec {
        TransferSpec::Pending { debit, credit, currency: "USD".into(), amount, memo: "test".into() }
    }

    fn world() -> AccountRef {
        AccountRef::System(SystemAccount::World)
    }

    #[test]
    #[should_panic(expected = "transfer 1 is settled a second time")]
    fn a_hold_is_settled_at_most_once() {
        with_books(|books| {
            let hold = books.transfer(&pending(world(), organization(), 10)).unwrap();
            let mut stored: TransferRecord = books.stored_transfer(hold.id).unwrap().unwrap();
            settle_hold(&mut stored, true);
            assert_eq!(stored.pending_state, Some(PendingState::Posted));
            settle_hold(&mut stored, false);
        });
    }

    #[test]
    fn settling_a_settled_hold_is_refused_before_the_assertion() {
        with_books(|books| {
            let hold = books.transfer(&pending(world(), organization(), 10)).unwrap();
            books.transfer(&TransferSpec::PostPending { pending_id: hold.id }).unwrap();
            let again = books.transfer(&TransferSpec::VoidPending { pending_id: hold.id });
            assert_eq!(again, Err(EngineError::NotPending(hold.id)));
        });
    }

    #[test]
    #[should_panic(expected = "would go negative")]
    fn an_organization_account_is_never_written_negative() {
        with_books(|books| {
            // Corrupt state (or a bug that skipped the funds check): a debit
            // the balance does not cover.
            let mut taken = books.resolve_entry(&organization(), "USD", Access::Update).unwrap();
            taken.entry.account.debits_posted = 10;
            books.save_taken(taken);
        });
    }

    #[test]
    fn a_system_account_may_go_negative_but_no_total_may() {
        with_books(|books| {
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            let world =
                books.entry(&system_account_id(SystemAccount::World, "USD"), Access::Read).unwrap().entry;
            assert_eq!(world.account.balances().unwrap().available, -10);
            let mut broken = world.clone();
            broken.account.credits_pending = -1;
            let saved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| books.save(broken)));
            assert!(saved.is_err(), "a negative total is refused");
        });
    }

    #[test]
    #[should_panic(expected = "journal entry 2 does not chain to entry 1")]
    fn a_journal_head_out_of_step_is_caught_before_the_entry_is_written() {
        with_books(|books| {
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            books.store.set_journal_head([7; 32]);
            let _ = books.transfer(&posted(world(), organization(), 10));
        });
    }

    #[test]
    #[should_panic(expected = "journal entry 2 does not follow entry 2")]
    fn a_journal_counter_set_back_is_caught_before_the_entry_is_written() {
        with_books(|books| {
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            books.store.put(keys::meta(Counter::JournalSeq.name()), &1u64);
            let _ = books.transfer(&posted(world(), organization(), 10));
        });
    }

    /// Writes two transfers in one batch and commits it, then runs `tamper`
    /// on the table and a third transfer as the first of the next batch.
    fn next_batch_after(
        tamper: impl FnOnce(&mut redb::Table<&'static [u8], &'static [u8]>),
    ) -> TransferRecord {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap();
        let txn = db.begin_write().unwrap();
        let mut table = txn.open_table(RECORDS).unwrap();
        let layer = {
            let mut overlay = Overlay::new(&table, &[]);
            let mut books = Books { store: &mut overlay, now: 1, effects: Effects::default(), listed: None };
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            books.transfer(&posted(world(), organization(), 10)).unwrap();
            overlay.keep_command();
            overlay.into_layer()
        };
        crate::storage::write_changes(&mut table, &crate::storage::sorted(&layer)).unwrap();
        tamper(&mut table);
        let mut overlay = Overlay::new(&table, &[]);
        let mut books = Books { store: &mut overlay, now: 2, effects: Effects::default(), listed: None };
        books.transfer(&posted(world(), organization(), 10)).unwrap()
    }

    #[test]
    fn a_batch_first_entry_follows_the_stored_journal() {
        assert_eq!(next_batch_after(|_| {}).journal_seq, 3);
    }

    #[test]
    #[should_panic(expected = "journal entry 2 is written twice")]
    fn a_stored_journal_entry_is_never_overwritten() {
        next_batch_after(|table| {
            table.insert(keys::meta("journal_seq").as_slice(), encode(&1u64).as_slice()).unwrap();
        });
    }

    #[test]
    #[should_panic(expected = "journal entry 3 does not chain to entry 2")]
    fn a_stored_journal_head_out_of_step_is_caught() {
        next_batch_after(|table| {
            table.insert(keys::meta("journal_head").as_slice(), encode(&[7u8; 32]).as_slice()).unwrap();
        });
    }

    #[test]
    #[should_panic(expected = "journal entry 3 follows a missing entry 2")]
    fn a_missing_journal_entry_is_caught() {
        next_batch_after(|table| {
            table.remove(keys::journal(2).as_slice()).unwrap();
        });
    }
}
