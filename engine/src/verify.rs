//! `sika verify`: an offline audit of a ledger database. It trusts nothing
//! stored as a total: it replays the journal, walks the hash chain, and
//! compares what it finds with the accounts, transfers and idempotency index.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use redb::ReadableDatabase;

use crate::error::EngineError;
use crate::ledger::chain_hash;
use crate::records::*;
use crate::storage::{RECORDS, Space, decode, keys, prefix_end, read};

/// What an audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub journal_entries: u64,
    pub accounts: u64,
    pub idempotency_entries: u64,
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
                "consistent: {} journal entries, {} accounts, {} idempotency entries; debits equal credits in every currency",
                self.journal_entries, self.accounts, self.idempotency_entries
            )
        } else {
            format!("INCONSISTENT: {} problem(s) found", self.problems.len())
        }
    }
}

/// Audits the database file at `path`, opened read-only, after replaying
/// its write-ahead log into it (what the node does when it opens).
pub fn verify_path(path: &Path) -> Result<Report, EngineError> {
    crate::wal::replay_file(path)?;
    let db = redb::Database::builder().open_read_only(path)?;
    verify(&db)
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
    Ok(report)
}

/// (key, value) pairs of one space, in key order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn scan(table: &Table, space: Space) -> Result<Entries, EngineError> {
    let start = keys::space(space);
    let end = prefix_end(&start);
    let mut out = Vec::new();
    for entry in table.range(start.as_slice()..end.as_slice())? {
        let (key, value) = entry?;
        out.push((key.value().to_vec(), value.value().to_vec()));
    }
    Ok(out)
}

/// Walks the chain and rebuilds every account's totals from the entries.
fn replay_journal(table: &Table, report: &mut Report) -> Result<HashMap<String, Totals>, EngineError> {
    let mut totals: HashMap<String, Totals> = HashMap::new();
    let mut holds: HashMap<TransferId, (String, String, i128, bool)> = HashMap::new();
    let mut prev_hash = [0u8; 32];
    let mut expected_seq = 1;
    for (_, value) in scan(table, Space::Journal)? {
        let entry: JournalEntry = decode(&value)?;
        if entry.seq != expected_seq {
            report
                .problems
                .push(format!("journal entry {} found where {} was expected", entry.seq, expected_seq));
        }
        if entry.prev_hash != prev_hash {
            report
                .problems
                .push(format!("journal entry {} does not chain to the entry before it", entry.seq));
        }
        if entry.hash != chain_hash(&entry.prev_hash, &entry.transfer) {
            report
                .problems
                .push(format!("journal entry {} has a hash that does not match its content", entry.seq));
        }
        prev_hash = entry.hash;
        expected_seq = entry.seq + 1;
        report.journal_entries += 1;
        let t = &entry.transfer;
        match read::<TransferRecord>(table, &keys::transfer(t.id))? {
            Some(stored) if stored.journal_seq == entry.seq && stored.amount == t.amount => {}
            _ => report
                .problems
                .push(format!("transfer {} of journal entry {} is missing or differs", t.id, entry.seq)),
        }
        apply_entry(t, &mut totals, &mut holds, report);
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
    let mut add = |account: &str, f: &dyn Fn(&mut Totals)| f(totals.entry(account.to_string()).or_default());
    match &t.kind {
        TransferKind::Posted => {
            add(&t.debit_account, &|x| x.debits_posted += t.amount);
            add(&t.credit_account, &|x| x.credits_posted += t.amount);
        }
        TransferKind::Pending => {
            add(&t.debit_account, &|x| x.debits_pending += t.amount);
            add(&t.credit_account, &|x| x.credits_pending += t.amount);
            holds.insert(t.id, (t.debit_account.clone(), t.credit_account.clone(), t.amount, true));
        }
        TransferKind::PostPending(id) | TransferKind::VoidPending(id) => {
            let post = matches!(t.kind, TransferKind::PostPending(_));
            let Some(hold) = holds.get_mut(id).filter(|h| h.3) else {
                report.problems.push(format!("transfer {} settles {id}, which is not an open hold", t.id));
                return;
            };
            hold.3 = false;
            let amount = hold.2;
            add(&hold.0, &|x| x.debits_pending -= amount);
            add(&hold.1, &|x| x.credits_pending -= amount);
            if post {
                add(&hold.0, &|x| x.debits_posted += amount);
                add(&hold.1, &|x| x.credits_posted += amount);
            }
        }
    }
}

fn check_accounts(
    table: &Table,
    totals: &HashMap<String, Totals>,
    report: &mut Report,
) -> Result<(), EngineError> {
    let mut per_currency: BTreeMap<String, Totals> = BTreeMap::new();
    let mut seen = 0usize;
    for (_, value) in scan(table, Space::Account)? {
        let account: AccountRecord = decode(&value)?;
        report.accounts += 1;
        let expected = totals.get(&account.id).copied().unwrap_or_default();
        if totals.contains_key(&account.id) {
            seen += 1;
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
        if account.is_organization() && account.balances().available < 0 {
            report.problems.push(format!("organization account {} is negative", account.id));
        }
        let sum = per_currency.entry(account.currency.clone()).or_default();
        sum.debits_posted += expected.debits_posted;
        sum.credits_posted += expected.credits_posted;
        sum.debits_pending += expected.debits_pending;
        sum.credits_pending += expected.credits_pending;
    }
    if seen != totals.len() {
        report.problems.push(format!("{} journal account(s) have no account record", totals.len() - seen));
    }
    for (currency, sum) in per_currency {
        if sum.debits_posted != sum.credits_posted || sum.debits_pending != sum.credits_pending {
            report.problems.push(format!("{currency}: debits do not equal credits"));
        }
    }
    Ok(())
}

fn check_idempotency(table: &Table, report: &mut Report) -> Result<(), EngineError> {
    for (key, value) in scan(table, Space::Idempotency)? {
        let entry: IdempotencyRecord = decode(&value)?;
        report.idempotency_entries += 1;
        let exists = match &entry.resource {
            ResourceRef::Conversion(id) => table.get(keys::conversion(id).as_slice())?.is_some(),
            ResourceRef::Deposit(id) => table.get(keys::deposit(id).as_slice())?.is_some(),
            ResourceRef::Payout(id) => table.get(keys::document("payouts", id).as_slice())?.is_some(),
            ResourceRef::Collection(id) => table.get(keys::document("collections", id).as_slice())?.is_some(),
            ResourceRef::Order(id) => table.get(keys::document("orders", id).as_slice())?.is_some(),
            ResourceRef::Transfers(ids) => {
                let mut all = true;
                for id in ids {
                    all &= table.get(keys::transfer(*id).as_slice())?.is_some();
                }
                all
            }
        };
        if !exists {
            let readable = String::from_utf8_lossy(&key[1..]).replace('\0', "/");
            report
                .problems
                .push(format!("idempotency entry {readable} points at a missing {:?}", entry.resource));
        }
    }
    Ok(())
}
