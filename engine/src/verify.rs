//! `sika verify`: an offline audit of a ledger database. It trusts nothing
//! stored as a total: it replays the journal, walks the hash chain, and
//! compares what it finds with the accounts, transfers and idempotency index.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use redb::ReadableDatabase;

use crate::error::EngineError;
use crate::records::*;
use crate::storage::{
    MovementKind, NameNumber, RECORDS, Space, decode, keys, names_by_number, prefix_end, read, scan,
    stored_transfer, transfer_ref,
};

/// What an audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub journal_entries: u64,
    pub accounts: u64,
    pub idempotency_entries: u64,
    /// Groups of collections whose stored tally was recomputed.
    pub collection_tallies: u64,
    /// Payments whose refunds were recounted against their refund tally.
    pub refund_tallies: u64,
    /// One sentence per inconsistency; empty when the ledger is consistent.
    pub problems: Vec<String>,
}

impl Report {
    pub fn is_consistent(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn summary(&self) -> String {
        if self.is_consistent() {
            format!(
                "consistent: {} journal entries, {} accounts, {} idempotency entries, {} collection tallies; debits equal credits in every currency",
                self.journal_entries, self.accounts, self.idempotency_entries, self.collection_tallies
            )
        } else {
            format!("INCONSISTENT: {} problem(s) found", self.problems.len())
        }
    }
}

/// Audits the database file at `path`, opened read-only, after replaying
/// its write-ahead log into it and upgrading an older format with `steps`
/// (what the node does when it opens).
pub fn verify_path(path: &Path, steps: &crate::format::Steps) -> Result<Report, EngineError> {
    crate::wal::replay_file(path, steps)?;
    let db = redb::Database::builder().open_read_only(path)?;
    verify(&db)
}

/// Audits one stack's records in the PostgreSQL database at `url` (the
/// database itself, not a node's cache of it); `None` when the database
/// holds no such stack.
pub fn verify_postgres(url: &str, stack: &str) -> Result<Option<Report>, EngineError> {
    crate::postgres::stack_snapshot(url, stack)?.map(|db| verify(&db)).transpose()
}

#[derive(Default, Clone, Copy)]
struct Totals {
    debits_posted: i128,
    credits_posted: i128,
    debits_pending: i128,
    credits_pending: i128,
}

type Table = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// Audits any open database.
pub fn verify(db: &impl ReadableDatabase) -> Result<Report, EngineError> {
    let txn = db.begin_read()?;
    let table = match txn.open_table(RECORDS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Report::default()),
        Err(e) => return Err(e.into()),
    };
    let mut report = Report::default();
    let totals = replay_journal(&table, &mut report)?;
    check_accounts(&table, &totals, &mut report)?;
    check_idempotency(&table, &mut report)?;
    check_names(&table, &mut report)?;
    check_tallies(&table, &mut report)?;
    check_refunds(&table, &mut report)?;
    check_reversals(&table, &mut report)?;
    check_open_movements(&table, &mut report)?;
    check_disputes(&table, &mut report)?;
    check_balance_changes(&table, &mut report)?;
    Ok(report)
}

/// An organization account's balance changes (`balance_changes`) against
/// the journal and the account: the changes are exactly the journal
/// entries that changed the account's balances, at their times; each
/// names the account's change before it and leaves that change's balances
/// plus what its journal entry did to the account; the account's head
/// names its newest change and their count, whose balances are the
/// account's; and exactly every `MARK_EVERY`-th change is marked. The
/// changes (stored in their journal entries since format 30, none apart)
/// hold no amounts of their own, so this is all that could drift.
fn check_balance_changes(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    use crate::balance_changes::{StoredChange, account_number, change_of};
    let accounts = organization_accounts_by_number(table, report)?;
    let mut expected = changes_in_journal(table, &accounts)?;
    let mut chains: BTreeMap<u64, Chain> = BTreeMap::new();
    let (start, end) = (keys::space(Space::Journal), prefix_end(&keys::space(Space::Journal)));
    for entry in table.range(start.as_slice()..end.as_slice())? {
        let (entry, changes) = JournalEntry::decode_with_changes(entry?.1.value())?;
        let (seq, at) = (entry.seq, changes.at(&entry.transfer));
        for (id, change) in changes.sides(&entry.transfer) {
            let Some(number) = account_number(id) else {
                report.problems.push(format!(
                    "journal entry {seq} stores a balance change of account {id}, which is not an organization's"
                ));
                continue;
            };
            let stored = StoredChange { at, previous: change.previous, after: change.after };
            if expected.remove(&(number, seq)) != Some(stored.at) {
                report.problems.push(format!(
                    "a balance change of account number {number} names journal entry {seq} at {}, which did not change it then",
                    stored.at
                ));
            }
            let chain = chains.entry(number).or_default();
            if stored.previous != chain.head.newest() {
                report.problems.push(format!(
                    "account number {number}'s balance change at journal entry {seq} names {:?} as the one before, not {:?}",
                    stored.previous,
                    chain.head.newest()
                ));
            }
            let (head, marked) = chain.head.then(seq)?;
            chain.head = head;
            if marked {
                chain.marks.insert((stored.at, seq));
            }
            let before = std::mem::replace(&mut chain.after, stored.after);
            let Some(account) = accounts.get(&number).map(|entry| &entry.account) else { continue };
            let chained =
                change_of(&entry.transfer, &account.id).and_then(|change| change.applied_to(before));
            if chained.as_ref() != Ok(&stored.after) {
                report.problems.push(format!(
                    "account {}'s balance change at journal entry {seq} leaves {:?}, but the one before plus its change gives {chained:?}",
                    account.id, stored.after
                ));
            }
        }
    }
    for ((number, seq), at) in expected {
        report.problems.push(format!(
            "journal entry {seq} at {at} changed account number {number}'s balances but is not among its balance changes"
        ));
    }
    no_head_apart(table, report)?;
    no_change_apart(table, report)?;
    marks_are_held(table, &mut chains, report)?;
    for (number, account) in &accounts {
        let chain = chains.remove(number).unwrap_or_default();
        chain_is_held(account, &chain, report);
    }
    for number in chains.keys() {
        report.problems.push(format!("balance changes name account number {number}, which does not exist"));
    }
    Ok(())
}

/// Since format 16 an account's head is in its record
/// (`AccountEntry::changes`): a head stored apart, as formats 10 to 15
/// stored them (`keys::balance_head`), is one the upgrade did not move.
fn no_head_apart(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    for (key, _) in scan(table, Space::BalanceHead)? {
        let number = keys::number_of(&key).map_or_else(|| "?".to_string(), |n| n.to_string());
        report.problems.push(format!(
            "a balance head for account number {number} is stored apart from its account, as formats 10 to 15 stored it"
        ));
    }
    Ok(())
}

/// Since format 30 a journal entry holds its balance changes
/// (`EntryChanges`): one stored apart, as formats 10 to 29 stored them
/// (`keys::balance_change`), is one the upgrade did not move.
fn no_change_apart(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    for (key, _) in scan(table, Space::BalanceChange)? {
        let (seq, number) = crate::balance_changes::parse_key(&key).unwrap_or_default();
        report.problems.push(format!(
            "a balance change of account number {number} at journal entry {seq} is stored apart from its entry, as formats 10 to 29 stored it"
        ));
    }
    Ok(())
}

/// Each stored mark is one of the changes `chains` expect marked, and is
/// taken out of them (what is left there is not marked).
fn marks_are_held(
    table: &Table,
    chains: &mut BTreeMap<u64, Chain>,
    report: &mut Report,
) -> Result<(), EngineError> {
    for (key, _) in scan(table, Space::BalanceMark)? {
        match crate::balance_changes::parse_mark(&key) {
            Some((number, at, seq)) => {
                if !chains.get_mut(&number).is_some_and(|chain| chain.marks.remove(&(at, seq))) {
                    report.problems.push(format!(
                        "account number {number} has a mark on journal entry {seq} at {at}, which is not one of its changes to mark"
                    ));
                }
            }
            None => report.problems.push("a balance change's mark is malformed".to_string()),
        }
    }
    Ok(())
}

/// An account's balance changes as `check_balance_changes` reads them,
/// oldest first.
#[derive(Default)]
struct Chain {
    /// The head the changes read so far make.
    head: crate::balance_changes::ChangeHead,
    /// The balances after the newest change read so far.
    after: crate::balance_changes::BalanceAfter,
    /// The changes to mark (time, journal number) not yet found marked.
    marks: BTreeSet<(TimestampMs, u64)>,
}

/// An account's whole chain of balance changes against its head
/// (`AccountEntry::changes`), its marks and its balances.
fn chain_is_held(entry: &AccountEntry, chain: &Chain, report: &mut Report) {
    use crate::balance_changes::BalanceAfter;
    let (account, stored) = (&entry.account, entry.changes);
    if stored != chain.head {
        report.problems.push(format!(
            "account {}'s balance head says {stored:?}, but its changes make {:?}",
            account.id, chain.head
        ));
    }
    for (at, seq) in &chain.marks {
        report.problems.push(format!(
            "account {}'s balance change at journal entry {seq} at {at} is not marked",
            account.id
        ));
    }
    let holds = account.balances().map(|b| BalanceAfter { available: b.available, total: b.total });
    if holds.as_ref() != Ok(&chain.after) {
        let what = if chain.head.count == 0 {
            "it has no balance change"
        } else {
            "its newest balance change leaves"
        };
        report.problems.push(format!("account {} holds {holds:?}, but {what} {:?}", account.id, chain.after));
    }
}

/// The organization accounts, by their number.
fn organization_accounts_by_number(
    table: &Table,
    report: &mut Report,
) -> Result<BTreeMap<u64, AccountEntry>, EngineError> {
    use crate::balance_changes::account_number;
    let mut accounts: BTreeMap<u64, AccountEntry> = BTreeMap::new();
    for (_, value) in scan(table, Space::Account)? {
        let entry: AccountEntry = decode(&value)?;
        let account = &entry.account;
        if !account.is_organization() {
            if entry.changes != crate::balance_changes::ChangeHead::default() {
                report.problems.push(format!(
                    "system account {} has balance changes {:?}, which only organization accounts have",
                    account.id, entry.changes
                ));
            }
            continue;
        }
        match account_number(&account.id) {
            Some(number) => {
                accounts.insert(number, entry);
            }
            None => report.problems.push(format!("organization account {} has no number", account.id)),
        }
    }
    Ok(accounts)
}

/// Which journal entries changed which account's balances, as (number,
/// journal number) and the time of the change, from the journal alone.
fn changes_in_journal(
    table: &Table,
    accounts: &BTreeMap<u64, AccountEntry>,
) -> Result<BTreeMap<(u64, u64), TimestampMs>, EngineError> {
    use crate::balance_changes::change_of;
    let ids: HashMap<&str, u64> = accounts.iter().map(|(n, e)| (e.account.id.as_str(), *n)).collect();
    // Entries written before the writer kept batch times from going back
    // were indexed at the latest time so far (`format::balances_index_their_changes`).
    let mut expected: BTreeMap<(u64, u64), TimestampMs> = BTreeMap::new();
    let mut floor: TimestampMs = 0;
    let (start, end) = (keys::space(Space::Journal), prefix_end(&keys::space(Space::Journal)));
    for entry in table.range(start.as_slice()..end.as_slice())? {
        let entry: JournalEntry = decode(entry?.1.value())?;
        let t = &entry.transfer;
        floor = floor.max(t.created_at);
        for side in [&t.debit_account, &t.credit_account] {
            if let Some(number) = ids.get(side.as_str())
                && !change_of(t, side)?.is_zero()
            {
                expected.insert((*number, entry.seq), floor);
            }
        }
    }
    Ok(expected)
}

/// The index of open movements against the payouts and collections
/// themselves: each pending one is in it under its rail, with its creation
/// time, and nothing else is.
fn check_open_movements(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let mut expected: BTreeMap<Vec<u8>, (String, TimestampMs)> = BTreeMap::new();
    for (key, value) in scan(table, Space::Payout)? {
        let payout = crate::stored_payout::decode(&key, &value)?;
        if payout.status == MovementStatus::Pending {
            let key = keys::open_movement(&payout.rail, MovementKind::Payout, &payout.id);
            expected.insert(key, (format!("payout {}", payout.id), payout.created_at));
        }
    }
    for (_, value) in scan(table, Space::Collection)? {
        let collection: CollectionRecord = decode(&value)?;
        if collection.status == MovementStatus::Pending {
            let key = keys::open_movement(&collection.rail, MovementKind::Collection, &collection.id);
            expected.insert(key, (format!("collection {}", collection.id), collection.created_at));
        }
    }
    for (_, value) in scan(table, Space::Refund)? {
        let refund: RefundRecord = decode(&value)?;
        if refund.status == MovementStatus::Pending {
            let key = keys::open_movement(&refund.rail, MovementKind::Refund, &refund.id);
            expected.insert(key, (format!("refund {}", refund.id), refund.created_at));
        }
    }
    for (key, value) in scan(table, Space::OpenMovement)? {
        match expected.remove(&key) {
            Some((what, created_at)) if decode::<TimestampMs>(&value)? != created_at => {
                report
                    .problems
                    .push(format!("{what} is in the index of open movements with another creation time"));
            }
            Some(_) => {}
            None => {
                let readable = String::from_utf8_lossy(&key[1..]).replace('\0', "/");
                report
                    .problems
                    .push(format!("the index of open movements names {readable}, which is not pending"));
            }
        }
    }
    for (what, _) in expected.into_values() {
        report.problems.push(format!("{what} is pending but not in the index of open movements"));
    }
    Ok(())
}

/// The memo of the transfer that gives a reversed payout's amount back
/// (`movements::reverse_payout` writes it).
fn reversed_payout(memo: &str) -> Option<&str> {
    memo.strip_prefix("payout ")?.strip_suffix(" reversed")
}

/// Each reversed payout's amount came back exactly once, in its amount and
/// currency, and no other payout's came back at all: recounted from the
/// transfers, whatever the payouts say.
fn check_reversals(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let mut given_back: HashMap<String, Vec<(i128, String)>> = HashMap::new();
    for (_, value) in scan(table, Space::Journal)? {
        let transfer = decode::<JournalEntry>(&value)?.transfer;
        if let Some(id) = reversed_payout(&transfer.memo) {
            given_back.entry(id.to_string()).or_default().push((transfer.amount, transfer.currency));
        }
    }
    for (key, value) in scan(table, Space::Payout)? {
        let payout = crate::stored_payout::decode(&key, &value)?;
        let found = given_back.remove(&payout.id).unwrap_or_default();
        let expected = match payout.status {
            MovementStatus::Reversed => vec![(payout.from_amount, payout.from_currency.clone())],
            MovementStatus::Pending | MovementStatus::Completed | MovementStatus::Failed => Vec::new(),
        };
        if found != expected {
            report.problems.push(format!(
                "payout {} is {} but {} transfer(s) gave its amount back ({found:?})",
                payout.id,
                payout.status.name(),
                found.len()
            ));
        }
    }
    for id in given_back.keys() {
        report
            .problems
            .push(format!("a transfer gives back the amount of payout {id}, which does not exist"));
    }
    Ok(())
}
/// Each dispute's money against the ledger: what it says it holds and
/// took is what its ledger entries (holds pending, holds posted, takings)
/// add up to, each debiting its organization's balance of its currency;
/// it never covers more than its amount, holds nothing once resolved and
/// keeps nothing once won; and the lists of disputes a balance still owes
/// name exactly the disputes short of their amount, once each.
fn check_disputes(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let mut short: BTreeSet<(String, String, String)> = BTreeSet::new();
    for (id, value) in scan_ids(table, Space::Dispute)? {
        let dispute: DisputeRecord = decode(&value)?;
        if dispute.id != id {
            report.problems.push(format!("dispute {id} is stored as dispute {}", dispute.id));
        }
        let account = read::<String>(table, &keys::org_account(&dispute.organization, &dispute.currency))?;
        let (mut held, mut taken) = (0i128, 0i128);
        for transfer_id in &dispute.transfer_ids {
            let Some(t) = stored_transfer(table, *transfer_id)? else {
                report.problems.push(format!("dispute {id} names a missing transfer {transfer_id}"));
                continue;
            };
            if account.as_deref() != Some(t.debit_account.as_str()) || t.currency != dispute.currency {
                report.problems.push(format!("dispute {id}'s transfer {transfer_id} is not on its balance"));
            }
            let sum = match (&t.kind, t.pending_state) {
                (TransferKind::Pending, Some(PendingState::Pending)) => &mut held,
                (TransferKind::Pending, Some(PendingState::Posted)) | (TransferKind::Posted, _) => &mut taken,
                (TransferKind::Pending, Some(PendingState::Voided)) => continue,
                _ => {
                    report
                        .problems
                        .push(format!("dispute {id} names transfer {transfer_id}, which is no hold"));
                    continue;
                }
            };
            if !change_total(sum, t.amount, Sign::Add) {
                report.problems.push(format!("dispute {id}'s transfers overflow"));
            }
        }
        if (held, taken) != (dispute.held, dispute.taken) {
            report.problems.push(format!(
                "dispute {id} says it holds {} and took {}, but its ledger entries hold {held} and took {taken}",
                dispute.held, dispute.taken
            ));
        }
        let covered = dispute.held.checked_add(dispute.taken);
        let broken = dispute.held < 0
            || dispute.taken < 0
            || covered.is_none_or(|c| c > dispute.amount)
            || (dispute.state != DisputeState::Open && dispute.held != 0)
            || (dispute.state != DisputeState::Lost && dispute.taken != 0);
        if broken {
            report.problems.push(format!("dispute {id} holds or took money its state does not allow"));
        }
        match dispute.shortfall() {
            Ok(0) => {}
            Ok(_) => {
                short.insert((dispute.organization.clone(), dispute.currency.clone(), id.clone()));
            }
            Err(_) => report.problems.push(format!("dispute {id}'s shortfall overflows")),
        }
    }
    check_shortfall_lists(table, short, report)
}

/// The lists of disputes each balance owes against `short`, the disputes
/// short of their amount (organization, currency, id).
fn check_shortfall_lists(
    table: &Table,
    mut short: BTreeSet<(String, String, String)>,
    report: &mut Report,
) -> Result<(), EngineError> {
    for (key, value) in scan(table, Space::DisputeShortfalls)? {
        let readable = String::from_utf8_lossy(&key[1..]).trim_end_matches('\0').replace('\0', " ");
        let waiting: Vec<String> = decode(&value)?;
        let mut parts = key[1..].split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into_owned());
        let (organization, currency) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let mut seen = BTreeSet::new();
        for id in waiting {
            if !seen.insert(id.clone()) {
                report.problems.push(format!("the disputes owed by {readable} name dispute {id} twice"));
            } else if !short.remove(&(organization.clone(), currency.clone(), id.clone())) {
                report.problems.push(format!(
                    "the disputes owed by {readable} name dispute {id}, which is owed nothing"
                ));
            }
        }
    }
    for (organization, currency, id) in short {
        report.problems.push(format!("dispute {id} is short but not owed by {organization} {currency}"));
    }
    Ok(())
}

/// Walks the chain and rebuilds every account's totals from the entries.
fn replay_journal(table: &Table, report: &mut Report) -> Result<HashMap<String, Totals>, EngineError> {
    let mut totals: HashMap<String, Totals> = HashMap::new();
    let mut holds: HashMap<TransferId, (String, String, i128, bool)> = HashMap::new();
    let mut prev_hash = [0u8; 32];
    let mut expected_seq = 1;
    let mut last_stores_hash = true;
    for (_, value) in scan(table, Space::Journal)? {
        let entry: JournalEntry = decode(&value)?;
        if entry.seq != expected_seq {
            report
                .problems
                .push(format!("journal entry {} found where {} was expected", entry.seq, expected_seq));
        }
        // The hash covers the entry before's hash and this transfer. Each
        // is recomputed here; an entry stores its own only at the marks
        // (`JournalEntry::stores_hash`) and as the last of a batch. A
        // changed transfer breaks the chain at the next stored hash or,
        // past the last, at the journal head; a stored hash rewritten to
        // match breaks the next.
        let hash = JournalEntry::chain_hash(&prev_hash, entry.seq, &entry.transfer);
        match entry.hash {
            Some(stored) => {
                if stored != hash {
                    report.problems.push(format!(
                        "journal entry {} has a hash that does not match its content and the entries before it",
                        entry.seq
                    ));
                }
                prev_hash = stored;
            }
            None => {
                if JournalEntry::stores_hash(entry.seq) {
                    report.problems.push(format!("journal entry {} does not store its hash", entry.seq));
                }
                prev_hash = hash;
            }
        }
        last_stores_hash = entry.hash.is_some();
        // An entry numbered u64::MAX is the last key the space can hold, so
        // nothing follows it to be expected: saturating cannot mislead.
        expected_seq = entry.seq.saturating_add(1);
        report.journal_entries = report.journal_entries.saturating_add(1);
        let t = &entry.transfer;
        // A hold, or a transfer numbered apart from its entry, has a
        // reference that names this entry (and only a hold has a state);
        // any other has none, its id being its entry's number.
        let stored = transfer_ref(table, t.id)?;
        let held = match stored {
            Some(found) => {
                TransferRef::is_stored_for(t)
                    && found.journal_seq == entry.seq
                    && found.pending_state.is_some() == (t.kind == TransferKind::Pending)
            }
            None => !TransferRef::is_stored_for(t),
        };
        if !held {
            report
                .problems
                .push(format!("transfer {} of journal entry {} is missing or differs", t.id, entry.seq));
        }
        apply_entry(t, &mut totals, &mut holds, report);
    }
    // The writer checks a batch's first entry against the last stored one's
    // hash (`Books::assert_follows_journal`).
    if !last_stores_hash {
        report.problems.push("the journal's last entry does not store its hash".to_string());
    }
    let head = read::<[u8; 32]>(table, &keys::meta("journal_head"))?.unwrap_or([0; 32]);
    if head != prev_hash {
        report.problems.push("the journal head hash does not match the last entry".to_string());
    }
    let length = read::<u64>(table, &keys::meta("journal_seq"))?.unwrap_or(0);
    if length != report.journal_entries {
        report.problems.push(format!(
            "the journal counter says {length} entries but {} were found",
            report.journal_entries
        ));
    }
    Ok(totals)
}

fn apply_entry(
    t: &TransferRecord,
    totals: &mut HashMap<String, Totals>,
    holds: &mut HashMap<TransferId, (String, String, i128, bool)>,
    report: &mut Report,
) {
    let mut change = |account: &str, field: Field, amount: i128, sign: Sign| {
        let total = field(totals.entry(account.to_string()).or_default());
        if !change_total(total, amount, sign) {
            report.problems.push(format!("transfer {} overflows the totals of account {account}", t.id));
        }
    };
    match &t.kind {
        TransferKind::Posted => {
            change(&t.debit_account, |x| &mut x.debits_posted, t.amount, Sign::Add);
            change(&t.credit_account, |x| &mut x.credits_posted, t.amount, Sign::Add);
        }
        TransferKind::Pending => {
            change(&t.debit_account, |x| &mut x.debits_pending, t.amount, Sign::Add);
            change(&t.credit_account, |x| &mut x.credits_pending, t.amount, Sign::Add);
            holds.insert(t.id, (t.debit_account.clone(), t.credit_account.clone(), t.amount, true));
        }
        TransferKind::PostPending(id) | TransferKind::VoidPending(id) => {
            let post = matches!(t.kind, TransferKind::PostPending(_));
            let Some(hold) = holds.get_mut(id).filter(|h| h.3) else {
                let problem = format!("transfer {} settles {id}, which is not an open hold", t.id);
                report.problems.push(problem);
                return;
            };
            hold.3 = false;
            let amount = hold.2;
            change(&hold.0, |x| &mut x.debits_pending, amount, Sign::Subtract);
            change(&hold.1, |x| &mut x.credits_pending, amount, Sign::Subtract);
            if post {
                change(&hold.0, |x| &mut x.debits_posted, amount, Sign::Add);
                change(&hold.1, |x| &mut x.credits_posted, amount, Sign::Add);
            }
        }
    }
}

/// Picks one of an account's four totals.
type Field = fn(&mut Totals) -> &mut i128;

#[derive(Clone, Copy)]
enum Sign {
    Add,
    Subtract,
}

/// Adds `amount` to `total` (or takes it away); false, leaving `total`
/// as it was, if the result would not fit an `i128`: the audit reports an
/// overflow rather than wrapping or panicking.
fn change_total(total: &mut i128, amount: i128, sign: Sign) -> bool {
    let result = match sign {
        Sign::Add => total.checked_add(amount),
        Sign::Subtract => total.checked_sub(amount),
    };
    result.map(|value| *total = value).is_some()
}

fn check_accounts(
    table: &Table,
    totals: &HashMap<String, Totals>,
    report: &mut Report,
) -> Result<(), EngineError> {
    let mut per_currency: BTreeMap<String, Totals> = BTreeMap::new();
    let mut seen = 0usize;
    for (_, value) in scan(table, Space::Account)? {
        let account = decode::<AccountEntry>(&value)?.account;
        report.accounts = report.accounts.saturating_add(1);
        let expected = totals.get(&account.id).copied().unwrap_or_default();
        if totals.contains_key(&account.id) {
            seen = seen.saturating_add(1);
        }
        let stored =
            (account.debits_posted, account.credits_posted, account.debits_pending, account.credits_pending);
        let replayed = (
            expected.debits_posted,
            expected.credits_posted,
            expected.debits_pending,
            expected.credits_pending,
        );
        if stored != replayed {
            report.problems.push(format!(
                "account {} stores totals {stored:?} but the journal gives {replayed:?} (debits posted, credits posted, debits pending, credits pending)",
                account.id
            ));
        }
        match account.balances() {
            Ok(balances) if account.is_organization() && balances.available < 0 => {
                report.problems.push(format!("organization account {} is negative", account.id));
            }
            Ok(_) => {}
            Err(e) => report.problems.push(format!("account {}: {e}", account.id)),
        }
        let sum = per_currency.entry(account.currency.clone()).or_default();
        let fits = change_total(&mut sum.debits_posted, expected.debits_posted, Sign::Add)
            & change_total(&mut sum.credits_posted, expected.credits_posted, Sign::Add)
            & change_total(&mut sum.debits_pending, expected.debits_pending, Sign::Add)
            & change_total(&mut sum.credits_pending, expected.credits_pending, Sign::Add);
        if !fits {
            report
                .problems
                .push(format!("{}: the sum of every account's totals overflows", account.currency));
        }
    }
    if seen != totals.len() {
        report
            .problems
            .push(format!("{} journal account(s) have no account record", totals.len().saturating_sub(seen)));
    }
    for (currency, sum) in per_currency {
        if sum.debits_posted != sum.credits_posted || sum.debits_pending != sum.credits_pending {
            report.problems.push(format!("{currency}: debits do not equal credits"));
        }
    }
    Ok(())
}

/// Each idempotency entry's resource exists and, when it has one, names
/// the entry by its `externalReference`: the entry is under the digest of
/// the resource's organization, operation and reference
/// (`keys::idempotency`), so a retry of the request finds it.
fn check_idempotency(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let names = names_by_number(table)?;
    let numbers: HashMap<&str, NameNumber> =
        names.iter().map(|(number, text)| (text.as_str(), *number)).collect();
    let positions = crate::idempotency::list_positions(table, &names)?;
    for (key, value) in scan(table, Space::IdempotencyDigest)? {
        let entry = IdempotencyRecord::decode(&value)?;
        report.idempotency_entries = report.idempotency_entries.saturating_add(1);
        let digest: String = key.get(1..).unwrap_or_default().iter().map(|b| format!("{b:02x}")).collect();
        // A listed resource is found in its organization's list.
        let (listed_in, resource) = match &entry.resource {
            ResourceRef::Listed(position) => match positions.get(position) {
                Some((organization, resource)) => (Some(*organization), resource),
                None => (None, &entry.resource),
            },
            named => (None, named),
        };
        let Some(origin) = crate::idempotency::origin_of(table, resource)? else {
            report.problems.push(format!("idempotency entry {digest} points at a missing {resource:?}"));
            continue;
        };
        let Some((organization, operation, reference)) = origin else { continue };
        let found = numbers.get(organization.as_str()).zip(numbers.get(operation)).is_some_and(|(o, p)| {
            keys::idempotency(*o, *p, &reference) == key && listed_in.is_none_or(|listed| listed == *o)
        });
        if !found {
            report.problems.push(format!(
                "idempotency entry {digest} of {:?} is not keyed by {organization}/{operation}/{reference}: a retry would not find it",
                entry.resource
            ));
        }
    }
    if !scan(table, Space::Idempotency)?.is_empty() {
        report
            .problems
            .push("idempotency entries are still keyed by their references (format 25's keys)".into());
    }
    Ok(())
}

/// The names list entries hold as numbers (since format 20): every number
/// a key holds is a name's, so each list is found by its organization and
/// kind. The counter is past every number given. (Idempotency keys held
/// them too until format 26 made them digests.)
fn check_names(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let names = names_by_number(table)?;
    let last: u64 = read(table, &keys::meta(crate::storage::Counter::NameNumber.name()))?.unwrap_or(0);
    if let Some((number, text)) = names.iter().find(|(number, _)| u64::from(number.0) > last) {
        report
            .problems
            .push(format!("name '{text}' has number {}, past the last number given ({last})", number.0));
    }
    let mut unnamed = BTreeSet::new();
    for (key, _) in scan(table, Space::ListIndex)? {
        match NameNumber::pair_in(&key) {
            Some((first, second, _)) => {
                unnamed.extend([first, second].into_iter().filter(|n| !names.contains_key(n)))
            }
            None => report.problems.push("a ListIndex key is too short to hold two names' numbers".into()),
        }
    }
    for number in unnamed {
        report.problems.push(format!("ListIndex keys hold number {}, which no name has", number.0));
    }
    Ok(())
}

/// What a group's completed collections give, recomputed from them.
#[derive(Default)]
struct Recount {
    /// (organization, currency, target) of each membership, all equal in a
    /// consistent ledger.
    shared: BTreeSet<(String, String, Option<i128>)>,
    received_minor: i128,
    completed: Vec<Arrival>,
}

/// Each group's tally against the group's completed collections: what
/// they received and how many, and that the covering and the latest
/// completion it names are among them. Problems name the group.
fn check_tallies(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let mut groups = recount_groups(table, report)?;
    for (key, value) in scan_ids(table, Space::CollectionTally)? {
        let tally: TallyRecord = decode(&value)?;
        report.collection_tallies = report.collection_tallies.saturating_add(1);
        if key != tally.group {
            report.problems.push(format!("collection tally {key} is stored as group {}'s", tally.group));
        }
        let recount = groups.remove(&tally.group).unwrap_or_default();
        compare_tally(&tally, &recount, report);
    }
    for (group, recount) in groups.into_iter().filter(|(_, r)| !r.completed.is_empty()) {
        report.problems.push(format!(
            "group {group} has {} completed collection(s) but no collection tally",
            recount.completed.len()
        ));
    }
    Ok(())
}

/// Every group with a collection, and what its completed collections give.
fn recount_groups(table: &Table, report: &mut Report) -> Result<BTreeMap<String, Recount>, EngineError> {
    let mut groups: BTreeMap<String, Recount> = BTreeMap::new();
    for (collection_id, value) in scan_ids(table, Space::CollectionGroup)? {
        let group: CollectionGroup = decode(&value)?;
        let Some(collection) = read::<CollectionRecord>(table, &keys::collection(&collection_id))? else {
            report.problems.push(format!("collection {collection_id} of group {} is missing", group.id));
            continue;
        };
        let recount = groups.entry(group.id.clone()).or_default();
        recount.shared.insert((
            collection.organization.clone(),
            collection.currency.clone(),
            group.target_minor,
        ));
        if collection.status != MovementStatus::Completed {
            continue;
        }
        let Some(sum) = recount.received_minor.checked_add(collection.amount) else {
            report.problems.push(format!("the completed collections of group {} overflow", group.id));
            continue;
        };
        recount.received_minor = sum;
        recount.completed.push(Arrival {
            collection_id,
            amount_minor: collection.amount,
            completed_at: collection.completed_at.unwrap_or(collection.updated_at),
        });
    }
    Ok(groups)
}

fn compare_tally(tally: &TallyRecord, recount: &Recount, report: &mut Report) {
    let group = &tally.group;
    let count = recount.completed.len() as u64;
    if (tally.received_minor, tally.completed_count) != (recount.received_minor, count) {
        report.problems.push(format!(
            "collection tally {group} counts {} received in {} completed collection(s), but its completed collections give {} in {count}",
            tally.received_minor, tally.completed_count, recount.received_minor
        ));
    }
    let shared = (tally.organization.clone(), tally.currency.clone(), tally.target_minor);
    if recount.shared.iter().any(|s| *s != shared) {
        report.problems.push(format!(
            "collection tally {group} is for {} {} with target {:?}, but its collections are not all",
            tally.organization, tally.currency, tally.target_minor
        ));
    }
    let covered = tally.target_minor.map_or(count > 0, |target| recount.received_minor >= target);
    check_arrival(group, "covering", tally.covering.as_ref(), covered, recount, report);
    check_arrival(group, "latest", tally.latest.as_ref(), count > 0, recount, report);
    let last_at = recount.completed.iter().map(|a| a.completed_at).max();
    if tally.latest.as_ref().map(|a| a.completed_at) != last_at {
        report.problems.push(format!("collection tally {group}'s latest completion is not its latest"));
    }
}

/// A completion a tally names: there exactly when `expected`, and one of
/// the group's completed collections as it is stored.
fn check_arrival(
    group: &str,
    name: &str,
    arrival: Option<&Arrival>,
    expected: bool,
    recount: &Recount,
    report: &mut Report,
) {
    match arrival {
        Some(arrival) if !recount.completed.contains(arrival) => report.problems.push(format!(
            "collection tally {group} names {} as its {name} completion, which is not one of its completed collections",
            arrival.collection_id
        )),
        Some(_) if !expected => {
            report.problems.push(format!("collection tally {group} has a {name} completion it has not reached"));
        }
        None if expected => {
            report.problems.push(format!("collection tally {group} names no {name} completion"));
        }
        _ => {}
    }
}

/// What one payment's refunds give, recounted from them.
#[derive(Default)]
struct RefundRecount {
    /// Pending or completed: what the tally must hold back.
    refunded_minor: i128,
    refunds: u64,
}

/// Each payment's refund tally against its refunds: the refunds not failed
/// add up to what it holds back, they are as many as it counts, they never
/// exceed the payment, and every refunded payment has a tally. Problems
/// name the payment.
fn check_refunds(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    let mut payments: BTreeMap<String, RefundRecount> = BTreeMap::new();
    for (_, value) in scan(table, Space::Refund)? {
        let refund: RefundRecord = decode(&value)?;
        let recount = payments.entry(refund.collection_id.clone()).or_default();
        recount.refunds = recount.refunds.saturating_add(1);
        if refund.status == MovementStatus::Failed {
            continue;
        }
        match recount.refunded_minor.checked_add(refund.amount) {
            Some(sum) => recount.refunded_minor = sum,
            None => report.problems.push(format!("the refunds of payment {} overflow", refund.collection_id)),
        }
    }
    for (key, value) in scan_ids(table, Space::RefundTally)? {
        let tally: RefundTally = decode(&value)?;
        report.refund_tallies = report.refund_tallies.saturating_add(1);
        let payment = &tally.collection_id;
        if key != *payment {
            report.problems.push(format!("refund tally {key} is stored as payment {payment}'s"));
        }
        let recount = payments.remove(payment).unwrap_or_default();
        if (tally.refunded_minor, tally.refund_count) != (recount.refunded_minor, recount.refunds) {
            report.problems.push(format!(
                "payment {payment}'s refund tally holds back {} in {} refund(s), but its refunds not failed come to {} in {} refund(s)",
                tally.refunded_minor, tally.refund_count, recount.refunded_minor, recount.refunds
            ));
        }
        match read::<CollectionRecord>(table, &keys::collection(payment))? {
            Some(c)
                if (c.amount, &c.organization, &c.currency)
                    == (tally.collected_minor, &tally.organization, &tally.currency) => {}
            _ => report.problems.push(format!("payment {payment}'s refund tally does not match the payment")),
        }
        if recount.refunded_minor > tally.collected_minor || recount.refunded_minor < 0 {
            report.problems.push(format!(
                "payment {payment} has {} refunded of {} collected",
                recount.refunded_minor, tally.collected_minor
            ));
        }
    }
    for (payment, recount) in payments {
        report
            .problems
            .push(format!("payment {payment} has {} refund(s) but no refund tally", recount.refunds));
    }
    Ok(())
}

/// (id, value) pairs of one space of records keyed by id, in id order.
fn scan_ids(table: &Table, space: Space) -> Result<Vec<(String, Vec<u8>)>, EngineError> {
    let start = keys::space(space);
    let end = prefix_end(&start);
    let mut out = Vec::new();
    for entry in table.range(start.as_slice()..end.as_slice())? {
        let (key, value) = entry?;
        let id = key.value().get(start.len()..).unwrap_or(&[]);
        let id = String::from_utf8_lossy(id.strip_suffix(&[0]).unwrap_or(id)).into_owned();
        out.push((id, value.value().to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use redb::Database;

    use super::*;

    fn posted(id: u64, amount: i128) -> TransferRecord {
        TransferRecord {
            id,
            kind: TransferKind::Posted,
            debit_account: "sys_world_USD".into(),
            credit_account: "USD1000000001".into(),
            currency: "USD".into(),
            amount,
            memo: String::new(),
            created_at: 0,
            pending_state: None,
            journal_seq: id,
        }
    }

    #[test]
    fn totals_beyond_an_i128_are_reported_not_wrapped() {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            let mut prev_hash = [0; 32];
            for seq in 1..=2 {
                let transfer = posted(seq, i128::MAX);
                let (hash, entry) = JournalEntry::chained(seq, &prev_hash, &transfer);
                table.insert(keys::journal(seq).as_slice(), entry.as_slice()).unwrap();
                prev_hash = hash;
            }
        }
        txn.commit().unwrap();
        let report = verify(&db).unwrap();
        for account in ["sys_world_USD", "USD1000000001"] {
            let problem = format!("transfer 2 overflows the totals of account {account}");
            assert!(report.problems.contains(&problem), "{problem} in {:?}", report.problems);
        }
    }
}
