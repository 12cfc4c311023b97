//! Format versions: every database file and every log file records the
//! version of Sika's storage format that wrote it.
//!
//! Stored records are postcard, which is not self-describing: a binary that
//! decoded another version's records would read garbage rather than fail.
//! So a file says which format wrote it, a binary refuses a file written by
//! a newer format (naming both versions), and it upgrades an older file on
//! open, one step per version, before anything reads its records.
//!
//! Format 0 is what releases before versions wrote: redb files with no
//! stamp and log files with no header. Format 1 stamps them and changes no
//! record. Format 2 stores a job's kind instead of a whole command
//! (`jobs_hold_kinds`). Format 3 gives the node's team members a password
//! and its sessions an expiry; that step lives with those records, in the
//! server (`IDENTITY_STEPS` there), and is a stamp alone for the ledgers
//! and request logs. Format 4 gives collections a group and each group a
//! tally (`collections_join_groups`); which collection is in which group
//! only the node's checkout records say, so its ledger step is the
//! server's (`EngineConfig::ledger_steps`), and the engine's own is a stamp
//! alone. Format 5 gives a payout's and an order's destination a bank code
//! (`destinations_hold_bank_codes`). Format 6 moves the records only the
//! engine writes (payouts, collections, orders, groups, tallies, spend-cap
//! usage, event ids) out of the documents into spaces of their own, and
//! adds the index of movements open at a rail (`records_leave_documents`);
//! its timelines hold typed facts instead of English, the English stored
//! before kept as `Fact::Legacy` lines. Format 7 adds the index of each
//! organization account's balance changes (`balances_index_their_changes`),
//! built from the journal; no record changes shape. Format 8 is the
//! ledger's (a stamp alone here). Format 9 stores a payout's event as a
//! mark of the payout instead of a copy of it (`payout_events_hold_marks`).
//! Format 10 keys balance changes by journal number, so new ones are
//! appended, and chains each account's changes from a head back to its
//! first, with a mark every `MARK_EVERY` (`balance_changes_link_back`).
//! Format 11 stores a transfer once, in its journal entry: under its id
//! only the entry's number and a hold's state now (`TransferRef`,
//! `transfers_name_their_entries`). Format 12 keeps a request log's
//! entries in the order of their ids alone, dropping the table of their
//! order of writing; that step is the server's (`REQUEST_LOG_STEPS`
//! there), and a stamp alone for the ledgers and the identity database.
//! Format 13 stores a journal entry without the hash of the entry before
//! it, which is that entry's own (`journal_entries_leave_the_previous_hash`).
//! Format 14 stores a journal entry compactly: its transfer's accounts by
//! number or system kind rather than as their ids' text, and the entry's
//! number once (`journal_entries_name_accounts_by_number`); the hash still
//! covers the stored transfer. Format 15 stores a reference under a
//! transfer's id only for a hold, or a transfer numbered apart from its
//! entry; any other transfer `id` is journal entry `id`
//! (`transfers_are_found_by_their_numbers`). Format 16 keeps each
//! account's balance-change head in the account's stored entry
//! (`accounts_hold_their_balance_heads`). Format 17 stores a journal
//! entry's hash only every `HASH_EVERY` entries
//! (`journal_entries_hash_at_marks`). Format 18 stores a payout without
//! its id, its timeline lines that repeat the payout's own fields as their
//! kind alone, and times as milliseconds after the one before
//! (`payouts_store_their_own_lines`, `stored_payout`); and writes a
//! payout's event with its kind as a byte and the payout's times after
//! the event's (`events::encode_payout_event`; those formats 9 to 17
//! wrote still read, so the step leaves them). Format 19 stores a
//! transfer's memo in one of the engine's shapes (`payout pay_…`) as the
//! shape and the id's parts (`stored_memo`); a memo stored as text reads
//! the same, and the hash chain covers every memo as text, so the step
//! rewrites nothing (`stamp_only`): old entries stay as they were.
//! Format 20 numbers the names that list entries' and idempotency
//! entries' keys spelled in text (organizations, list kinds, operations:
//! `Space::Name`, `NameNumber`) and keys them by the numbers
//! (`keys_hold_name_numbers`). Format 21 stores the node's own phrases
//! (rails' names, the sandbox simulator's notes and messages) in a
//! payout's status message, rail and handover note and in a payout's
//! event as their numbers (`records::StoredText`); a text stored whole
//! reads the same, so the step rewrites nothing (`stamp_only`). Format
//! 22 stores ids of the node's shape as their parts in list entries and a
//! payout's event (`records::StoredId`), and keys an event's id by its
//! parts (`keys::event_id`); ids stored and keyed as text are read as
//! before, so the step is a stamp too. Format 23 keeps 16 bytes of a
//! request's 32-byte fingerprint in an idempotency entry
//! (`records::FINGERPRINT_KEPT`); nothing marks an entry's shape, so its
//! step rewrites every entry (`idempotency_entries_keep_half_their_fingerprints`).
//! Format 24 stores a hold's reference as its state alone, one byte, when
//! it names the entry numbered as the hold (`TransferRef::encode`); a
//! reference stored whole reads the same. A journal entry stores its
//! transfer's id as 0 when it is the entry's number (`StoredTransfer::compact`;
//! the books number transfers from 1). Both read as before, so the step is
//! a stamp. Format 25 stores an idempotency entry without the time it was
//! made, which nothing read (`IdempotencyRecord::decode` skips it in an
//! entry that has it), so its step is a stamp too. Format 26 keys an
//! idempotency entry by a 16-byte digest of its organization's and
//! operation's numbers and its reference (`keys::idempotency`, in
//! `Space::IdempotencyDigest`) instead of by the reference's text; the
//! step moves every entry, bytes unchanged
//! (`idempotency_entries_are_keyed_by_digests`). Format 27 stores an
//! events list entry as the event's number (`records::Listed`) instead of
//! its id; entries that store an id read as before, so the step is a
//! stamp. Format 28 stores an organization account in a journal entry as
//! its count past `records::ACCOUNT_NUMBERS_AFTER` (one byte for the first
//! 127 accounts) rather than its number (five); the hash still covers the
//! number, entries that store it read as before, and the step is a stamp.
//! Format 29 names an idempotency entry's resource by its position in the
//! list its create fills (`ResourceRef::Listed`) rather than by its id;
//! entries that name an id read as before, so the step is a stamp.
//! Format 30 stores a journal entry's balance changes after its transfer
//! (`balance_changes::EntryChanges`) instead of one record apart per side
//! (`keys::balance_change`); the step moves each into its entry.
//! Every later change to a stored record adds a version here, its step in
//! each `Steps` list that the change touches (a no-op for the others), and
//! a case to the fixture test (`tests/blackbox/format_upgrade.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::Deserialize;

use crate::commands::Command;
use crate::error::EngineError;
use crate::records::{
    Arrival, CollectionGroup, CollectionRecord, Job, JobKind, MovementStatus, TallyRecord, TimestampMs,
};
use crate::storage::{ENGINE_OWNED, MovementKind, RECORDS, Space, decode, encode, keys, prefix_end, read};

/// The format this binary writes.
pub const FORMAT_VERSION: u32 = 30;

/// The table every Sika redb file keeps its stamp in.
const FORMAT: TableDefinition<&str, u32> = TableDefinition::new("sika_format");
const STAMP_KEY: &str = "format_version";

/// One upgrade step, from version `i` to `i + 1` for the step at index `i`,
/// applied inside the write transaction that also moves the stamp.
pub type Step = fn(&redb::WriteTransaction) -> Result<(), EngineError>;

/// The upgrade path of one kind of database: exactly `FORMAT_VERSION`
/// steps, the first taking format 0 to 1.
pub type Steps = [Step; FORMAT_VERSION as usize];

/// Format 0 to 1: the stamp alone; no record changed.
pub fn stamp_only(_: &redb::WriteTransaction) -> Result<(), EngineError> {
    Ok(())
}

/// Format 1 to 2 of a ledger: each stored job held the whole `Command` it
/// would run, which tied the records to the commands and the commands back
/// to the records (an import cycle); now it holds a `JobKind`. Postcard
/// writes an enum as its variant's index and then its fields, so a job's
/// bytes differ only in that index (a command's 7, 9 or 12, a kind's 0, 1
/// or 2): each job is decoded as format 1 wrote it and written again.
pub fn jobs_hold_kinds(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    /// A job as format 1 stored it.
    #[derive(Deserialize)]
    struct CommandJob {
        id: String,
        due_at: TimestampMs,
        command: Command,
    }
    let mut table = txn.open_table(RECORDS)?;
    let start = keys::space(Space::Job);
    let end = prefix_end(&start);
    let mut rewritten = Vec::new();
    for entry in table.range(start.as_slice()..end.as_slice())? {
        let (key, value) = entry?;
        let CommandJob { id, due_at, command } = decode(value.value())?;
        let kind = match command {
            Command::AdvancePayout { payout_id, step } => JobKind::AdvancePayout { payout_id, step },
            Command::AdvanceCollection { collection_id, step } => {
                JobKind::AdvanceCollection { collection_id, step }
            }
            Command::ExpireOrder { order_id } => JobKind::ExpireOrder { order_id },
            // Only those three were ever scheduled.
            other => {
                return Err(EngineError::Corrupt(format!("job {id} holds a command no job runs: {other:?}")));
            }
        };
        rewritten.push((key.value().to_vec(), encode(&Job { id, due_at, kind })));
    }
    for (key, value) in rewritten {
        table.insert(key.as_slice(), value.as_slice())?;
    }
    Ok(())
}

/// Format 3 to 4 of a ledger, given each grouped collection's group (as
/// (collection id, group) pairs, which the caller reads from its own
/// records): stores each collection's group, and each group's tally of its
/// completed collections, counted in the order they completed, so an
/// upgraded ledger reads the same totals it derived before. No record
/// changes shape; a collection that is not stored is skipped (nothing
/// could have counted it). Collections are read in format 5's shape
/// (`v5`), which is format 3's.
pub fn collections_join_groups(
    txn: &redb::WriteTransaction,
    members: &[(String, CollectionGroup)],
) -> Result<(), EngineError> {
    let mut table = txn.open_table(RECORDS)?;
    let mut completed: BTreeMap<String, (TallyRecord, Vec<CollectionRecord>)> = BTreeMap::new();
    for (collection_id, group) in members {
        let stored = table.get(format5::document("collections", collection_id).as_slice())?;
        // Read as formats 3 to 5 stored it: its timeline English lines.
        let read =
            |bytes: &[u8]| decode::<CollectionRecord>(&v5::whole(v5::Record::Collection, bytes, v5::legacy)?);
        let Some(collection) = stored.map(|v| read(v.value())).transpose()? else {
            continue;
        };
        table.insert(
            format5::document("collection_groups", collection_id).as_slice(),
            encode(group).as_slice(),
        )?;
        if collection.status == MovementStatus::Completed {
            let empty =
                || (TallyRecord::empty(group, &collection.organization, &collection.currency), Vec::new());
            completed.entry(group.id.clone()).or_insert_with(empty).1.push(collection);
        }
    }
    for (group, (mut tally, mut collections)) in completed {
        collections.sort_by(|a, b| {
            (a.completed_at, a.created_at, &a.id).cmp(&(b.completed_at, b.created_at, &b.id))
        });
        for collection in collections {
            let completed_at = collection.completed_at.ok_or_else(|| {
                EngineError::Corrupt(format!(
                    "collection {} is completed with no completion time",
                    collection.id
                ))
            })?;
            let arrival =
                Arrival { collection_id: collection.id, amount_minor: collection.amount, completed_at };
            tally = tally.counted(arrival)?;
        }
        table
            .insert(format5::document("collection_tallies", &group).as_slice(), encode(&tally).as_slice())?;
    }
    Ok(())
}

/// Format 6 to 7 of a ledger: each organization account's balance
/// changes (`crate::balance_changes`) are indexed from the journal, in
/// journal order, with the balances after each, exactly as the books
/// indexed them in formats 7 to 9 (`format9`). Times are kept from going back (`Writer::time_floor_ms`
/// does the same for new entries), so each account's changes are in the
/// same order by time as by journal number. Holds one running balance per
/// account, and writes the index entries a pass of `REWRITE_BATCH_MAX`
/// journal entries at a time.
pub fn balances_index_their_changes(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use std::collections::HashMap;
    use std::ops::Bound;

    use crate::balance_changes::{BalanceAfter, account_number, change_of};
    // Accounts as formats 15 and earlier stored them, without their head.
    use crate::records::AccountRecord;
    // Entries as formats 12 and earlier stored them, with the previous hash.
    use format12::JournalEntry;
    let mut table = txn.open_table(RECORDS)?;
    let (start, end) = (keys::space(Space::Journal), prefix_end(&keys::space(Space::Journal)));
    let mut numbers: HashMap<String, Option<u64>> = HashMap::new();
    let mut balances: HashMap<u64, BalanceAfter> = HashMap::new();
    let mut floor: TimestampMs = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let from = after.as_deref().map_or(Bound::Included(start.as_slice()), Bound::Excluded);
        let mut batch = Vec::new();
        let mut last = None;
        for entry in table.range::<&[u8]>((from, Bound::Excluded(end.as_slice())))?.take(REWRITE_BATCH_MAX) {
            let (key, value) = entry?;
            last = Some(key.value().to_vec());
            let entry: JournalEntry = decode(value.value())?;
            let transfer = &entry.transfer;
            floor = floor.max(transfer.created_at);
            for side in [&transfer.debit_account, &transfer.credit_account] {
                let number = match numbers.get(side) {
                    Some(number) => *number,
                    None => {
                        let account = table.get(keys::account(side).as_slice())?;
                        let account: Option<AccountRecord> =
                            account.map(|a| decode(a.value())).transpose()?;
                        let number = account
                            .filter(AccountRecord::is_organization)
                            .and_then(|a| account_number(&a.id));
                        numbers.insert(side.clone(), number);
                        number
                    }
                };
                let Some(number) = number else { continue };
                let change = change_of(transfer, side)?;
                if change.is_zero() {
                    continue;
                }
                let balance = balances.entry(number).or_default();
                *balance = change.applied_to(*balance)?;
                batch.push((format9::balance_change(number, floor, entry.seq), encode(&*balance)));
            }
        }
        let Some(last) = last else { return Ok(()) };
        for (key, value) in batch {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        after = Some(last);
    }
}

/// How many records one pass of a rewriting step holds in memory before it
/// writes them back (all in the step's one transaction).
const REWRITE_BATCH_MAX: usize = 10_000;

/// The records table as a rewrite reads it.
type Records<'t> = redb::Table<'t, &'static [u8], &'static [u8]>;

/// Rewrites every record in `start..end` that `rewrite` changes (given the
/// table to read other records from, and the record's bytes), reading at
/// most `REWRITE_BATCH_MAX` records between writes.
fn rewrite_range(
    txn: &redb::WriteTransaction,
    start: &[u8],
    end: &[u8],
    rewrite: impl Fn(&Records<'_>, &[u8]) -> Result<Option<Vec<u8>>, EngineError>,
) -> Result<(), EngineError> {
    change_range(txn, start, end, |table, _, value| {
        Ok(rewrite(table, value)?.map_or(Change::Keep, Change::Put))
    })
}

/// What a step does with one record (`change_range`).
enum Change {
    Keep,
    Put(Vec<u8>),
    Remove,
    /// The same bytes under another key, which must sort outside the range
    /// being changed (so it is not read again) and be free.
    Move(Vec<u8>),
}

/// Changes every record in `start..end` as `change` says (given the table
/// to read other records from, the record's key and its bytes), reading at
/// most `REWRITE_BATCH_MAX` records between writes.
fn change_range(
    txn: &redb::WriteTransaction,
    start: &[u8],
    end: &[u8],
    mut change: impl FnMut(&Records<'_>, &[u8], &[u8]) -> Result<Change, EngineError>,
) -> Result<(), EngineError> {
    use std::ops::Bound;
    let mut table = txn.open_table(RECORDS)?;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let from = after.as_deref().map_or(Bound::Included(start), Bound::Excluded);
        let mut batch = Vec::new();
        let mut moved = Vec::new();
        let mut last = None;
        for entry in table.range::<&[u8]>((from, Bound::Excluded(end)))?.take(REWRITE_BATCH_MAX) {
            let (key, value) = entry?;
            let key = key.value().to_vec();
            match change(&table, &key, value.value())? {
                Change::Keep => {}
                Change::Put(new) => batch.push((key.clone(), Some(new))),
                Change::Remove => batch.push((key.clone(), None)),
                Change::Move(to) => {
                    assert!(
                        to.as_slice() < start || to.as_slice() >= end,
                        "a record moves to a key the step would read again"
                    );
                    moved.push((to, value.value().to_vec()));
                    batch.push((key.clone(), None));
                }
            }
            last = Some(key);
        }
        let Some(last) = last else { return Ok(()) };
        for (key, value) in batch {
            match value {
                Some(value) => table.insert(key.as_slice(), value.as_slice())?,
                None => table.remove(key.as_slice())?,
            };
        }
        for (key, value) in moved {
            if table.insert(key.as_slice(), value.as_slice())?.is_some() {
                return Err(EngineError::Corrupt("two records move to one key".into()));
            }
        }
        after = Some(last);
    }
}

/// Format 4 to 5 of a ledger: a payout's and an order's destination gained
/// a bank code (`Destination::bank_code`, its last field). Postcard writes a
/// struct as its fields one after another and `None` as the one byte 0, so
/// a format 4 record becomes a format 5 one by inserting that byte where its
/// destination ends, and nothing else changes. Each payout and order
/// document, and each event that carries them (a payout, an order, an order
/// with its payout), is read in the shape formats 3 and 4 wrote (`v3`, which only this step
/// uses) as far as it must be to find where its destinations end.
pub fn destinations_hold_bank_codes(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    for (collection, splice) in [("payouts", v3::payout as v3::Splice), ("orders", v3::order)] {
        let start = format5::documents_prefix(collection);
        rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| splice(bytes).map(Some))?;
    }
    let start = keys::space(Space::Event);
    rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| v3::event(bytes))
}

/// Format 5 to 6 of a ledger: the records only the engine writes were
/// documents (`Space::Document`, under the collection names
/// `ENGINE_OWNED` lists), where the server's document writes could reach
/// them; each moves, bytes unchanged, to its own space under the same id.
/// Then each payout's, collection's and order's timeline, and those of the
/// events that carry them, turns from the English format 5 stored into
/// `Fact::Legacy` lines holding that same text (`v5`, which only this step
/// uses, reads format 5's shapes): format 6 timelines store typed facts,
/// worded by the server. Last, the index of open movements is built from
/// the pending payouts and collections, as the commands that create and
/// settle them keep it.
pub fn records_leave_documents(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    move_engine_records(txn)?;
    for (space, record) in [
        (Space::Payout, v5::Record::Payout),
        (Space::Collection, v5::Record::Collection),
        (Space::Order, v5::Record::Order),
    ] {
        let start = keys::space(space);
        rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| {
            v5::whole(record, bytes, v5::legacy).map(Some)
        })?;
    }
    let start = keys::space(Space::Event);
    rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| {
        v5::event(bytes, &|record, bytes| v5::retime(record, bytes, v5::legacy))
    })?;
    index_open_movements(txn)
}

/// Format 6's first part: the engine's records leave the documents.
fn move_engine_records(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    let mut table = txn.open_table(RECORDS)?;
    for (collection, space) in ENGINE_OWNED {
        let start = format5::documents_prefix(collection);
        let end = prefix_end(&start);
        loop {
            let mut batch = Vec::new();
            for entry in table.range(start.as_slice()..end.as_slice())?.take(REWRITE_BATCH_MAX) {
                let (key, value) = entry?;
                batch.push((key.value().to_vec(), value.value().to_vec()));
            }
            if batch.is_empty() {
                break;
            }
            for (old, value) in batch {
                // The prefix byte, then the id and its terminator as they were.
                let new: Vec<u8> =
                    [space as u8].into_iter().chain(old[start.len()..].iter().copied()).collect();
                table.insert(new.as_slice(), value.as_slice())?;
                table.remove(old.as_slice())?;
            }
        }
    }
    Ok(())
}

/// Format 6's last part: the index of open movements.
fn index_open_movements(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    let mut table = txn.open_table(RECORDS)?;
    let mut open = Vec::new();
    for entry in table
        .range(keys::space(Space::Payout).as_slice()..prefix_end(&keys::space(Space::Payout)).as_slice())?
    {
        let payout: crate::records::PayoutRecord = decode(entry?.1.value())?;
        if payout.status == MovementStatus::Pending {
            open.push((
                keys::open_movement(&payout.rail, MovementKind::Payout, &payout.id),
                payout.created_at,
            ));
        }
    }
    let collections = keys::space(Space::Collection);
    for entry in table.range(collections.as_slice()..prefix_end(&collections).as_slice())? {
        let collection: CollectionRecord = decode(entry?.1.value())?;
        if collection.status == MovementStatus::Pending {
            open.push((
                keys::open_movement(&collection.rail, MovementKind::Collection, &collection.id),
                collection.created_at,
            ));
        }
    }
    for (key, created_at) in open {
        table.insert(key.as_slice(), encode(&created_at).as_slice())?;
    }
    Ok(())
}

/// Format 8 to 9 of a ledger: a payout's event stored a copy of the whole
/// payout as it stood; now it stores a mark of it (`events::PayoutMark`:
/// its id and the fields that change after it is created), and readers
/// get the stored payout back as it stood at the mark. Each payout event
/// whose payout is stored and reads back from its mark exactly as the
/// event holds it (and whose organization is the payout's) is rewritten
/// so; any other event stays as it is (it
/// reads as before: whole events are still read). Events are read in the
/// shape formats 6 to 8 wrote them (`EventRecord`, whose payouts have not
/// changed shape since format 6), `REWRITE_BATCH_MAX` at a time.
pub fn payout_events_hold_marks(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::events::{EventKind, PayoutMark, encode_payout_event};
    use crate::records::{EventPayload, EventRecord, PayoutRecord};
    /// An event's fields before its payload, and its payload's variant.
    type Head = (u64, String, String, String, u32);
    /// `EventPayload::Payout`'s index, as postcard writes the variant.
    const PAYOUT: u32 = 3;
    let start = keys::space(Space::Event);
    rewrite_range(txn, &start, &prefix_end(&start), |table, bytes| {
        let (head, _) = postcard::take_from_bytes::<Head>(bytes).map_err(|e| {
            EngineError::Corrupt(format!("an event does not decode as format 8 wrote it: {e}"))
        })?;
        if head.4 != PAYOUT {
            return Ok(None);
        }
        let event: EventRecord = decode(bytes)?;
        let EventPayload::Payout(payout) = &event.payload else { return Ok(None) };
        let Some(kind) = EventKind::from_name(&event.kind) else { return Ok(None) };
        let Some(stored) = read::<PayoutRecord>(table, &keys::payout(&payout.id))? else { return Ok(None) };
        let same = PayoutMark::of(payout).applied_to(stored).ok().as_ref() == Some(payout);
        if !same || event.organization != payout.organization {
            return Ok(None);
        }
        Ok(Some(encode_payout_event(event.seq, &event.id, kind, payout, event.created_at)))
    })
}

/// Format 9 to 10 of a ledger: balance changes, keyed by account first
/// (`format9`), are keyed by journal number first, each naming the
/// account's change before it, every `MARK_EVERY`-th marked, and each
/// account's head written, exactly as the books write them since. The old
/// index is read in its order (an account's changes oldest first, then the
/// next account's), `REWRITE_BATCH_MAX` entries at a time, and removed as
/// it is read.
pub fn balance_changes_link_back(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use std::ops::Bound;

    use crate::balance_changes::{BalanceAfter, ChangeHead, StoredChange};
    let mut table = txn.open_table(RECORDS)?;
    let start = vec![format9::BALANCE_CHANGE];
    let end = prefix_end(&start);
    let mut account: Option<(u64, ChangeHead)> = None;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let from = after.as_deref().map_or(Bound::Included(start.as_slice()), Bound::Excluded);
        let chunk: Vec<(Vec<u8>, Vec<u8>)> = table
            .range::<&[u8]>((from, Bound::Excluded(end.as_slice())))?
            .take(REWRITE_BATCH_MAX)
            .map(|entry| entry.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
            .collect::<Result<_, _>>()?;
        let Some((last, _)) = chunk.last() else { break };
        after = Some(last.clone());
        for (key, value) in chunk {
            let (number, at, seq) = format9::parse(&key)
                .ok_or_else(|| EngineError::Corrupt("a format 9 balance change's key is malformed".into()))?;
            let balances: BalanceAfter = decode(&value)?;
            let head = match account {
                Some((current, head)) if current == number => head,
                other => {
                    if let Some((done, head)) = other {
                        table.insert(keys::balance_head(done).as_slice(), encode(&head).as_slice())?;
                    }
                    ChangeHead::default()
                }
            };
            let (next, marked) = head.then(seq)?;
            let stored = StoredChange { at, previous: head.newest(), after: balances };
            table.insert(keys::balance_change(seq, number).as_slice(), encode(&stored).as_slice())?;
            if marked {
                table.insert(keys::balance_mark(number, at, seq).as_slice(), encode(&()).as_slice())?;
            }
            table.remove(key.as_slice())?;
            account = Some((number, next));
        }
    }
    if let Some((number, head)) = account {
        table.insert(keys::balance_head(number).as_slice(), encode(&head).as_slice())?;
    }
    Ok(())
}

/// Format 10 to 11 of a ledger: each transfer stored whole under its id
/// (as every format before stored it, beside the same transfer in its
/// journal entry) is replaced by a reference to that entry with the
/// hold's state now (`TransferRef`), `REWRITE_BATCH_MAX` at a time. A
/// stored transfer that is not the one its journal entry holds (but for a
/// hold's state) is corrupt, and the upgrade stops rather than lose it.
pub fn transfers_name_their_entries(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::records::{TransferRecord, TransferRef};
    // Entries as formats 12 and earlier stored them, with the previous hash.
    use format12::JournalEntry;
    let start = keys::space(Space::Transfer);
    rewrite_range(txn, &start, &prefix_end(&start), |table, bytes| {
        let transfer: TransferRecord = match decode(bytes) {
            Ok(transfer) => transfer,
            // Already a reference: a ledger laid out as an older format
            // but for its transfers (the tests of the older steps do).
            Err(_) if is_whole::<TransferRef>(bytes) => return Ok(None),
            Err(error) => return Err(error),
        };
        let found = TransferRef::of(&transfer);
        let entry = read::<JournalEntry>(table, &keys::journal(transfer.journal_seq))?;
        if entry.and_then(|entry| found.applied_to(entry.seq, entry.transfer)).as_ref() != Some(&transfer) {
            return Err(EngineError::Corrupt(format!(
                "transfer {} is not the one journal entry {} holds",
                transfer.id, transfer.journal_seq
            )));
        }
        Ok(Some(encode(&found)))
    })
}

/// Whether `bytes` are exactly one `T`, nothing left over.
fn is_whole<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> bool {
    postcard::take_from_bytes::<T>(bytes).is_ok_and(|(_, rest)| rest.is_empty())
}

/// Format 12 to 13 of a ledger: each journal entry held the hash of the
/// entry before it, which is that entry's own `hash`: 32 bytes stored
/// twice per transfer. Each entry is written again without it,
/// `REWRITE_BATCH_MAX` at a time. What `sika verify` proves is unchanged:
/// it walks the chain from the first entry, so a changed transfer or hash
/// still breaks its entry or the next, and the last is held to the head.
pub fn journal_entries_leave_the_previous_hash(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    let start = keys::space(Space::Journal);
    rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| {
        let entry: format12::JournalEntry = decode(bytes)?;
        Ok(Some(encode(&entry.current())))
    })
}

/// Format 13 to 14 of a ledger: each journal entry held its transfer as
/// `TransferRecord` encodes it, both accounts' ids as text (an
/// organization's is its currency and number, a system account's its kind
/// and currency) and the entry's number a second time, and its hash
/// covered that encoding. Each entry is written again as the books write
/// it now (`JournalEntry::chained`), `REWRITE_BATCH_MAX` at a time, its
/// hash over what it stores chained to the new hash before it, and the
/// journal head follows the last.
///
/// Rehashing must not launder a broken chain: an entry whose format 13
/// hash did not hold keeps that stored hash, which does not hold in the
/// new chain either, and a head that did not match the last entry is left
/// as it was. So `sika verify` reports after the upgrade exactly the
/// entries it reported before, and the node still opens.
pub fn journal_entries_name_accounts_by_number(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use std::cell::Cell;
    let start = keys::space(Space::Journal);
    // The previous entry's hash as stored in format 13, and in format 14.
    let (old_prev, new_prev) = (Cell::new([0u8; 32]), Cell::new([0u8; 32]));
    rewrite_range(txn, &start, &prefix_end(&start), |_, bytes| {
        let entry: format13::JournalEntry = decode(bytes)?;
        let held = entry.hash == format13::chain_hash(&old_prev.get(), &entry.transfer);
        old_prev.set(entry.hash);
        if held {
            let (hash, stored) = format16::chained(entry.seq, &new_prev.get(), &entry.transfer);
            new_prev.set(hash);
            Ok(Some(stored))
        } else {
            // Its stored hash, which did not hold and does not now.
            new_prev.set(entry.hash);
            Ok(Some(encode(&entry.current())))
        }
    })?;
    let mut table = txn.open_table(RECORDS)?;
    let head_key = keys::meta("journal_head");
    let head = read::<[u8; 32]>(&table, &head_key)?;
    if head.is_some_and(|head| head == old_prev.get()) {
        table.insert(head_key.as_slice(), encode(&new_prev.get()).as_slice())?;
    }
    Ok(())
}

/// Format 14 to 15 of a ledger: every transfer had a reference under its
/// id naming its journal entry (`TransferRef`), though the books number a
/// transfer and its entry together. Only a hold's, whose state changes,
/// and a transfer's numbered apart from its entry are kept; every other
/// reference (the entry it names is numbered as the transfer, holds it,
/// and it is not a hold) is removed, `REWRITE_BATCH_MAX` at a time. A
/// reference that names an entry not holding its transfer stays, for
/// `sika verify` to report.
pub fn transfers_are_found_by_their_numbers(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::records::TransferRef;
    // Entries as formats 14 to 16 stored them, with their hashes.
    use format16::JournalEntry;
    let start = keys::space(Space::Transfer);
    change_range(txn, &start, &prefix_end(&start), |table, key, bytes| {
        let found: TransferRef = decode(bytes)?;
        let implied = match keys::number_of(key) {
            Some(id) if found == (TransferRef { journal_seq: id, pending_state: None }) => {
                read::<JournalEntry>(table, &keys::journal(id))?.is_some_and(|entry| {
                    entry.seq == id && entry.transfer.id == id && !TransferRef::is_stored_for(&entry.transfer)
                })
            }
            _ => false,
        };
        Ok(if implied { Change::Remove } else { Change::Keep })
    })
}

/// Format 15 to 16 of a ledger: each organization account's balance-change
/// head (its newest change and how many it has had) was a record of its
/// own (`Space::BalanceHead`), written with every change beside the
/// account the same change wrote. It moves into the account's stored entry
/// (`AccountEntry::changes`), so a transfer writes each side once. Each
/// account is read strictly as format 15 stored it (an `AccountRecord`
/// alone): any other shape stops the upgrade. An account with no stored
/// head has had no change. A head whose account does not exist is left
/// where it was, for `sika verify` to report.
pub fn accounts_hold_their_balance_heads(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use std::collections::HashSet;

    use crate::balance_changes::{ChangeHead, account_number};
    use crate::records::{AccountEntry, AccountRecord};
    let mut moved: HashSet<u64> = HashSet::new();
    let start = keys::space(Space::Account);
    change_range(txn, &start, &prefix_end(&start), |table, _, bytes| {
        let account: AccountRecord = decode(bytes)?;
        if !is_whole::<AccountRecord>(bytes) {
            return Err(EngineError::Corrupt(format!(
                "account {} is not stored as format 15 stored accounts",
                account.id
            )));
        }
        let number = account_number(&account.id).filter(|_| account.is_organization());
        let changes = match number {
            Some(number) => {
                moved.insert(number);
                read::<ChangeHead>(table, &keys::balance_head(number))?.unwrap_or_default()
            }
            None => ChangeHead::default(),
        };
        Ok(Change::Put(encode(&AccountEntry { account, changes })))
    })?;
    let start = keys::space(Space::BalanceHead);
    change_range(txn, &start, &prefix_end(&start), |_, key, _| {
        Ok(match keys::number_of(key) {
            Some(number) if moved.contains(&number) => Change::Remove,
            _ => Change::Keep,
        })
    })
}

/// Format 16 to 17 of a ledger: every journal entry stored its own hash,
/// 32 bytes per transfer that `sika verify` recomputes anyway. Each entry
/// is written again with its hash only at every `HASH_EVERY`th entry
/// (`JournalEntry::stores_hash`), `REWRITE_BATCH_MAX` at a time; the
/// chain and the journal head are unchanged, since the hash covers the
/// stored transfer, whose bytes do not change. Each entry is read strictly
/// as format 16 stored it: any other shape stops the upgrade. (Postcard is
/// not self-describing: a format 17 entry that stores its hash can read as
/// a format 16 entry of another transfer id, whose hash then does not
/// hold and is kept, for `sika verify` to report.)
///
/// This must not launder a broken chain: an entry whose stored hash does
/// not hold (it is not the hash of the stored hash before it and its
/// transfer) keeps it wherever it is, so `sika verify` reports it still,
/// and the chain after it goes on from that hash as it did. The journal's
/// last entry keeps its hash too, as the last of a batch does.
pub fn journal_entries_hash_at_marks(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::records::JournalEntry;
    let start = keys::space(Space::Journal);
    let last = {
        let table = txn.open_table(RECORDS)?;
        let mut entries = table.range::<&[u8]>(start.as_slice()..prefix_end(&start).as_slice())?;
        entries.next_back().transpose()?.map(|(key, _)| key.value().to_vec())
    };
    let mut prev = [0u8; 32];
    change_range(txn, &start, &prefix_end(&start), |_, key, bytes| {
        // Read whole, numbered as its key, and written back the same.
        let entry = postcard::take_from_bytes::<format16::JournalEntry>(bytes)
            .ok()
            .filter(|(entry, rest)| rest.is_empty() && keys::number_of(key) == Some(entry.seq))
            .map(|(entry, _)| entry)
            .filter(|entry| encode(entry) == bytes);
        let Some(format16::JournalEntry { seq, hash, transfer }) = entry else {
            return Err(EngineError::Corrupt(
                "a journal entry is not stored as format 16 stored them".to_string(),
            ));
        };
        let held = hash == JournalEntry::chain_hash(&prev, seq, &transfer);
        prev = hash;
        let kept = JournalEntry::stores_hash(seq) || !held || last.as_deref() == Some(key);
        Ok(Change::Put(encode(&JournalEntry { seq, hash: kept.then_some(hash), transfer })))
    })
}

/// Format 17 to 18 of a ledger: a payout was stored as `PayoutRecord`
/// encodes it: its id, which its key holds, and its timeline repeating the
/// payout's amount, currency, destination, account and status message,
/// each line's time whole. Each payout is written again as the payout
/// space stores it since (`stored_payout`), `REWRITE_BATCH_MAX` at a time,
/// and reads back the same. Each is read strictly as format 17 stored it
/// (a `PayoutRecord` and nothing after it, under its own id's key): any
/// other shape stops the upgrade.
pub fn payouts_store_their_own_lines(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::records::PayoutRecord;
    let start = keys::space(Space::Payout);
    change_range(txn, &start, &prefix_end(&start), |_, key, bytes| {
        let payout: PayoutRecord = decode(bytes)?;
        if !is_whole::<PayoutRecord>(bytes) || keys::payout(&payout.id) != key {
            return Err(EngineError::Corrupt(format!(
                "payout {} is not stored as format 17 stored payouts",
                payout.id
            )));
        }
        Ok(Change::Put(crate::stored_payout::encode(&payout)))
    })
}

/// Format 19 to 20 of a ledger: a list entry's key spelled its
/// organization and its list's kind in text (`org_…` and `payouts`, 29
/// and 8 bytes), and an idempotency entry's its organization and its
/// operation, in every key. Now each such name is numbered once (a
/// `Space::Name` record under its text, `NameNumber`, the last number in
/// `Counter::NameNumber`) and the keys hold the numbers, four bytes each.
/// Each key is read strictly as format 19 wrote it (two texts and a list
/// position of eight bytes; two texts and a reference; any other shape
/// stops the upgrade), the names are numbered in the order the keys
/// first hold them, and each entry moves to its new key with its value
/// unchanged. Every new key starts with a number below 2^24, a zero
/// byte, where a key of format 19 starts only if its organization is
/// empty (Sika never gave one): those are read before any key is written,
/// so no key written is read again.
pub fn keys_hold_name_numbers(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::storage::{Counter, NameNumber};
    {
        let table = txn.open_table(RECORDS)?;
        let names = keys::space(Space::Name);
        if table.range(names.as_slice()..prefix_end(&names).as_slice())?.next().is_some()
            || table.get(keys::meta(Counter::NameNumber.name()).as_slice())?.is_some()
        {
            return Err(EngineError::Corrupt("a format 19 ledger holds numbered names".into()));
        }
    }
    let mut numbers: BTreeMap<String, NameNumber> = BTreeMap::new();
    let mut number = |text: &[u8]| -> Result<NameNumber, EngineError> {
        let text = std::str::from_utf8(text)
            .map_err(|_| EngineError::Corrupt("a list or idempotency key's name is not text".into()))?;
        if let Some(number) = numbers.get(text) {
            return Ok(*number);
        }
        let next = u32::try_from(numbers.len().saturating_add(1))
            .ok()
            .filter(|n| *n < 1 << 24)
            .ok_or(EngineError::Overflow("name numbers"))?;
        numbers.insert(text.to_string(), NameNumber(next));
        Ok(NameNumber(next))
    };
    for space in [Space::ListIndex, Space::Idempotency] {
        let whole = keys::space(space);
        // New keys start with a zero byte after the space's (a number below
        // 2^24), before `start`. A format 19 key there has an empty
        // organization, which Sika never gave: those few are all read
        // before any new key is written; the rest, from `start` on, are
        // moved in batches and never read again.
        let start = [space as u8, 1];
        let empty_first: Vec<(Vec<u8>, Vec<u8>)> = {
            let table = txn.open_table(RECORDS)?;
            let range = table.range(whole.as_slice()..start.as_slice())?;
            range
                .map(|entry| entry.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
                .collect::<Result<_, _>>()?
        };
        let mut table = txn.open_table(RECORDS)?;
        let mut moved = Vec::with_capacity(empty_first.len());
        for (key, value) in empty_first {
            moved.push((numbered_key(space, &key, &mut number)?, value));
            table.remove(key.as_slice())?;
        }
        for (key, value) in moved {
            if table.insert(key.as_slice(), value.as_slice())?.is_some() {
                return Err(EngineError::Corrupt("two records move to one key".into()));
            }
        }
        drop(table);
        change_range(txn, &start, &prefix_end(&whole), |_, key, _| {
            Ok(Change::Move(numbered_key(space, key, &mut number)?))
        })?;
    }
    let mut table = txn.open_table(RECORDS)?;
    for (text, number) in &numbers {
        table.insert(keys::name(text).as_slice(), encode(number).as_slice())?;
    }
    if let Some(last) = numbers.values().max() {
        table.insert(
            keys::meta(Counter::NameNumber.name()).as_slice(),
            encode(&u64::from(last.0)).as_slice(),
        )?;
    }
    Ok(())
}

/// The key format 20 gives the list or idempotency entry (`space`) that
/// format 19 keyed `key`, each name's number from `number`.
fn numbered_key(
    space: Space,
    key: &[u8],
    mut number: impl FnMut(&[u8]) -> Result<crate::storage::NameNumber, EngineError>,
) -> Result<Vec<u8>, EngineError> {
    let shape = || EngineError::Corrupt(format!("a {space:?} key is not as format 19 wrote it"));
    let rest = key.get(1..).ok_or_else(shape)?;
    let mut parts = rest.splitn(3, |b| *b == 0);
    let (Some(first), Some(second), Some(tail)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(shape());
    };
    let (first, second) = (number(first)?, number(second)?);
    Ok(match space {
        Space::ListIndex => {
            let seq = <[u8; 8]>::try_from(tail).map_err(|_| shape())?;
            keys::list_entry(first, second, u64::from_be_bytes(seq))
        }
        _ => {
            let reference = tail.strip_suffix(&[0]).ok_or_else(shape)?;
            let reference = std::str::from_utf8(reference).map_err(|_| shape())?;
            keys::idempotency_by_reference(first, second, reference)
        }
    })
}

/// Format 22 to 23 of a ledger: an idempotency entry kept the request's
/// whole 32-byte fingerprint, a third of its bytes beside a payout's id.
/// Now it keeps the first 16 (`IdempotencyRecord::kept`), which is what a
/// request's fingerprint is compared with. No byte tells the two shapes
/// apart, so every entry is read strictly as formats 1 to 22 stored it
/// (`format22::IdempotencyRecord`, nothing after it; any other shape stops
/// the upgrade) and written again, `REWRITE_BATCH_MAX` at a time.
pub fn idempotency_entries_keep_half_their_fingerprints(
    txn: &redb::WriteTransaction,
) -> Result<(), EngineError> {
    use crate::records::IdempotencyRecord;
    let start = keys::space(Space::Idempotency);
    change_range(txn, &start, &prefix_end(&start), |_, key, bytes| {
        if !is_whole::<format22::IdempotencyRecord>(bytes) {
            return Err(EngineError::Corrupt(format!(
                "the idempotency entry {key:?} is not stored as format 22 stored them"
            )));
        }
        let old: format22::IdempotencyRecord = decode(bytes)?;
        let entry = format24::IdempotencyRecord {
            fingerprint: IdempotencyRecord::kept(&old.fingerprint),
            resource: old.resource,
            created_at: old.created_at,
        };
        Ok(Change::Put(encode(&entry)))
    })
}

/// Format 25 to 26 of a ledger: an idempotency entry was keyed by its
/// organization's and operation's numbers and its reference's text
/// (`keys::idempotency_by_reference`, `Space::Idempotency`); now by a
/// digest of the three (`keys::idempotency`, `Space::IdempotencyDigest`),
/// whatever the reference's length or the order references arrive in.
/// Every entry moves, its bytes unchanged; a key of another shape, or two
/// entries meeting under one digest, stops the upgrade.
pub fn idempotency_entries_are_keyed_by_digests(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    let start = keys::space(Space::Idempotency);
    change_range(txn, &start, &prefix_end(&start), |_, key, _| {
        let (organization, operation, reference) = format25::reference_in(key)?;
        Ok(Change::Move(keys::idempotency(organization, operation, reference)))
    })
}

/// Format 29 to 30 of a ledger: a journal entry stores its organization
/// accounts' balance changes after its transfer (`EntryChanges`), where
/// formats 10 to 29 stored each apart, keyed by the entry's and the
/// account's numbers (`keys::balance_change`): two records fewer per
/// transfer. Each change moves into its entry, with its time when it is
/// not the entry's; a change naming a missing entry, or an account that is
/// neither of its entry's sides, stops the upgrade.
pub fn balance_changes_move_into_their_entries(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    use crate::balance_changes::{EntryChange, EntryChanges, StoredChange, account_number, parse_key};
    use crate::records::JournalEntry;
    let mut table = txn.open_table(RECORDS)?;
    let apart = crate::storage::scan(&table, Space::BalanceChange)?;
    let mut by_entry: BTreeMap<u64, Vec<(u64, StoredChange)>> = BTreeMap::new();
    for (key, value) in &apart {
        let (seq, number) = parse_key(key)
            .ok_or_else(|| EngineError::Corrupt("a balance change's key is malformed".into()))?;
        by_entry.entry(seq).or_default().push((number, decode(value)?));
    }
    for (seq, sides) in by_entry {
        let key = keys::journal(seq);
        let missing =
            || EngineError::Corrupt(format!("a balance change names a missing journal entry {seq}"));
        let bytes = table.get(key.as_slice())?.ok_or_else(missing)?.value().to_vec();
        let transfer = JournalEntry::decode_with_changes(&bytes)?.0.transfer;
        let mut changes = EntryChanges::default();
        // Both sides' changes were indexed at one time, the entry's or not.
        let mut at = None;
        for (number, stored) in sides {
            let change = Some(EntryChange { previous: stored.previous, after: stored.after });
            let side = if account_number(&transfer.debit_account) == Some(number) && changes.debit.is_none() {
                &mut changes.debit
            } else if account_number(&transfer.credit_account) == Some(number) && changes.credit.is_none() {
                &mut changes.credit
            } else {
                return Err(EngineError::Corrupt(format!(
                    "a balance change of account number {number} names journal entry {seq}, which is not between its accounts"
                )));
            };
            *side = change;
            if *at.get_or_insert(stored.at) != stored.at {
                return Err(EngineError::Corrupt(format!(
                    "journal entry {seq}'s balance changes differ in time"
                )));
            }
        }
        changes.at = at.filter(|at| *at != transfer.created_at);
        table.insert(key.as_slice(), JournalEntry::with_changes(&bytes, &changes)?.as_slice())?;
    }
    for (key, _) in apart {
        table.remove(key.as_slice())?;
    }
    Ok(())
}

/// Balance changes as formats 10 to 29 stored them, apart from their
/// journal entries, for the layouts of older formats in tests.
pub mod format29 {
    use crate::balance_changes::{StoredChange, account_number};
    use crate::error::EngineError;
    use crate::records::JournalEntry;
    use crate::storage::{Space, encode, keys, scan};

    /// Stores every balance change of a current ledger apart from its
    /// journal entry; returns how many it moved.
    pub fn store_balance_changes_apart(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let mut moved = 0usize;
        for (key, value) in scan(&*table, Space::Journal)? {
            let (entry, changes) = JournalEntry::decode_with_changes(&value)?;
            if changes.is_empty() {
                continue;
            }
            let at = changes.at(&entry.transfer);
            for (id, change) in changes.sides(&entry.transfer) {
                let number = account_number(id)
                    .ok_or_else(|| EngineError::Corrupt(format!("{id} is not an organization's account")))?;
                let stored = StoredChange { at, previous: change.previous, after: change.after };
                table
                    .insert(keys::balance_change(entry.seq, number).as_slice(), encode(&stored).as_slice())?;
                moved = moved.saturating_add(1);
            }
            table.insert(key.as_slice(), JournalEntry::without_changes(&value)?)?;
        }
        Ok(moved)
    }
}

/// Idempotency entries as formats 1 to 28 stored them, naming their
/// resources by id, for the layouts of older formats in tests.
pub mod format28 {
    use crate::error::EngineError;
    use crate::records::{IdempotencyRecord, ResourceRef};
    use crate::storage::{Space, encode, names_in, scan};

    /// Stores every idempotency entry of a current ledger that names its
    /// resource by its list position with the resource's id; returns how
    /// many it rewrote.
    pub fn store_idempotency_resources_by_id(
        table: &mut redb::Table<&[u8], &[u8]>,
    ) -> Result<usize, EngineError> {
        let names = names_in(scan(&*table, Space::Name)?)?;
        let positions = crate::idempotency::list_positions(&*table, &names)?;
        let mut rewrote = 0usize;
        for (key, value) in scan(&*table, Space::IdempotencyDigest)? {
            let entry = IdempotencyRecord::decode(&value)?;
            let ResourceRef::Listed(position) = entry.resource else { continue };
            let (_, resource) = positions
                .get(&position)
                .cloned()
                .ok_or_else(|| EngineError::Corrupt(format!("no list entry at position {position}")))?;
            let entry = IdempotencyRecord { fingerprint: entry.fingerprint, resource };
            table.insert(key.as_slice(), encode(&entry).as_slice())?;
            rewrote = rewrote.saturating_add(1);
        }
        Ok(rewrote)
    }
}

/// Journal entries as formats 24 to 27 stored them, their organization
/// accounts by number, for the layouts of older formats in tests.
pub mod format27 {
    use crate::error::EngineError;
    use crate::records::JournalEntry;
    use crate::storage::{Space, decode};

    /// Stores every journal entry of a current ledger with its accounts
    /// numbered; returns how many it rewrote.
    pub fn store_journal_accounts_numbered(
        table: &mut redb::Table<&[u8], &[u8]>,
    ) -> Result<usize, EngineError> {
        super::respell_space(table, Space::Journal, |_, value| {
            Ok(decode::<JournalEntry>(value)?.encode_as_format_27())
        })
    }
}

/// Events list entries as formats 1 to 26 stored them, by the event's id,
/// for the layouts of older formats in tests.
pub mod format26 {
    use redb::ReadableTable;

    use crate::error::EngineError;
    use crate::records::{Listed, Spelling, StoredId};
    use crate::storage::{Space, encode, keys};

    /// Stores every events list entry of a current ledger as the event's
    /// id, as formats 1 to 26 did; returns how many changed.
    pub fn store_event_lists_as_ids(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let mut events = Vec::new();
        for (key, value) in crate::storage::scan(&*table, Space::ListIndex)? {
            if let Listed::Event(seq) = Listed::decode(&value)? {
                events.push((key, seq));
            }
        }
        for (key, seq) in &events {
            let event = table
                .get(keys::event(*seq).as_slice())?
                .ok_or_else(|| EngineError::Corrupt(format!("no event {seq}")))?
                .value()
                .to_vec();
            let id = crate::events::event_id(&event)?;
            table.insert(key.as_slice(), encode(&StoredId::of(&id, Spelling::Compact)).as_slice())?;
        }
        Ok(events.len())
    }
}

/// Idempotency entries as formats 20 to 25 keyed them, by their
/// reference's text, for the step of format 26 and the layouts of older
/// formats in tests.
pub mod format25 {
    use std::collections::BTreeMap;

    use crate::error::EngineError;
    use crate::records::{IdempotencyRecord, ResourceRef};
    use crate::storage::{NameNumber, Space, keys, names_in, scan};

    /// The organization's and operation's numbers and the reference an
    /// idempotency key of formats 20 to 25 holds.
    pub fn reference_in(key: &[u8]) -> Result<(NameNumber, NameNumber, &str), EngineError> {
        let shape =
            || EngineError::Corrupt(format!("the idempotency key {key:?} is not as format 25 wrote it"));
        let (organization, operation, rest) = NameNumber::pair_in(key).ok_or_else(shape)?;
        let reference = rest.strip_suffix(&[0]).ok_or_else(shape)?;
        let reference = std::str::from_utf8(reference).map_err(|_| shape())?;
        Ok((organization, operation, reference))
    }

    /// Stores every idempotency entry of a current ledger under the key
    /// formats 20 to 25 gave it; returns how many moved. A digest cannot
    /// be read back, so each entry's key is made again from the resource
    /// it names (its organization, operation and `externalReference`,
    /// `idempotency::origin_of`); an entry whose resource records none (a
    /// ledger transfer's) stops the layout.
    pub fn store_idempotency_by_reference(
        table: &mut redb::Table<&[u8], &[u8]>,
    ) -> Result<usize, EngineError> {
        let names = names_in(scan(&*table, Space::Name)?)?;
        let numbers: BTreeMap<&str, NameNumber> =
            names.iter().map(|(number, text)| (text.as_str(), *number)).collect();
        let positions = crate::idempotency::list_positions(&*table, &names)?;
        let mut moves = Vec::new();
        for (key, value) in scan(&*table, Space::IdempotencyDigest)? {
            let resource = match IdempotencyRecord::decode(&value)?.resource {
                ResourceRef::Listed(position) => {
                    positions.get(&position).map(|(_, resource)| resource.clone())
                }
                named => Some(named),
            };
            let origin = match &resource {
                Some(resource) => crate::idempotency::origin_of(&*table, resource)?.flatten(),
                None => None,
            };
            let old_key = origin.and_then(|(organization, operation, reference)| {
                let (organization, operation) =
                    (numbers.get(organization.as_str())?, numbers.get(operation)?);
                Some(keys::idempotency_by_reference(*organization, *operation, &reference))
            });
            let old_key = old_key.ok_or_else(|| {
                EngineError::Corrupt(format!("no resource names the idempotency entry {key:?}"))
            })?;
            moves.push((key, old_key, value));
        }
        for (key, old_key, value) in &moves {
            table.remove(key.as_slice())?;
            table.insert(old_key.as_slice(), value.as_slice())?;
        }
        Ok(moves.len())
    }
}

/// Rewrites every record of `space` in a current ledger as `old` spells
/// it, for the layouts of older formats in tests; returns how many changed.
fn respell_space(
    table: &mut redb::Table<&[u8], &[u8]>,
    space: Space,
    old: impl Fn(&[u8], &[u8]) -> Result<Vec<u8>, EngineError>,
) -> Result<usize, EngineError> {
    let mut changed = 0usize;
    for (key, value) in crate::storage::scan(&*table, space)? {
        let respelled = old(&key, &value)?;
        if respelled != value {
            table.insert(key.as_slice(), respelled.as_slice())?;
            changed = changed.saturating_add(1);
        }
    }
    Ok(changed)
}

/// Idempotency entries as formats 23 and 24 stored them, with the time
/// each was made, for the step of format 23 and the layouts of older
/// formats in tests.
pub mod format24 {
    use serde::{Deserialize, Serialize};

    use crate::error::EngineError;
    use crate::records::{FINGERPRINT_KEPT, ResourceRef, TimestampMs};
    use crate::storage::{Space, encode};

    /// An idempotency entry as formats 23 and 24 stored it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct IdempotencyRecord {
        pub fingerprint: [u8; FINGERPRINT_KEPT],
        pub resource: ResourceRef,
        pub created_at: TimestampMs,
    }

    /// The time a layout of an older format gives an entry: its resource's
    /// id's (the books make both at once), or 0 for transfers and an id of
    /// another shape.
    pub fn made_at(resource: &ResourceRef) -> TimestampMs {
        let id = match resource {
            ResourceRef::Conversion(id)
            | ResourceRef::Deposit(id)
            | ResourceRef::Payout(id)
            | ResourceRef::Collection(id)
            | ResourceRef::Order(id)
            | ResourceRef::Refund(id) => id,
            ResourceRef::Transfers(_) | ResourceRef::Listed(_) => return 0,
        };
        crate::id_parts::parts(id).and_then(|parts| TimestampMs::try_from(parts.time_ms).ok()).unwrap_or(0)
    }

    /// A current idempotency entry's bytes as formats 23 and 24 stored them.
    pub fn idempotency_as_format_24(value: &[u8]) -> Result<Vec<u8>, EngineError> {
        let entry = crate::records::IdempotencyRecord::decode(value)?;
        let created_at = made_at(&entry.resource);
        Ok(encode(&IdempotencyRecord {
            fingerprint: entry.fingerprint,
            resource: entry.resource,
            created_at,
        }))
    }

    /// Stores every idempotency entry of a current ledger as formats 23 and
    /// 24 did; returns how many it changed.
    pub fn store_idempotency_times(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::respell_space(table, Space::Idempotency, |_, value| idempotency_as_format_24(value))
    }

    #[cfg(test)]
    mod tests {
        use crate::records::{IdempotencyRecord, ResourceRef};
        use crate::storage::encode;

        /// An entry is its fingerprint and its resource, 6 bytes shorter
        /// than formats 23 and 24 stored it with the time; both read as the
        /// same entry, and bytes after the time are refused.
        #[test]
        fn an_idempotency_entry_leaves_its_time() {
            let resource = ResourceRef::Payout(crate::ids::new_id("pay_ghs"));
            let entry = IdempotencyRecord { fingerprint: [3; 16], resource: resource.clone() };
            let old = super::idempotency_as_format_24(&encode(&entry)).unwrap();
            assert_eq!(old.len() - encode(&entry).len(), 6);
            assert_eq!(IdempotencyRecord::decode(&old).unwrap(), entry);
            assert_eq!(IdempotencyRecord::decode(&encode(&entry)).unwrap(), entry);
            assert!(IdempotencyRecord::decode(&[old.as_slice(), &[0]].concat()).is_err());
            let transfers =
                IdempotencyRecord { fingerprint: [3; 16], resource: ResourceRef::Transfers(vec![7]) };
            let old = super::idempotency_as_format_24(&encode(&transfers)).unwrap();
            assert_eq!(IdempotencyRecord::decode(&old).unwrap(), transfers);
        }
    }
}

/// Holds' references as formats 11 to 23 stored them, whole (the entry's
/// number and the state), and journal entries as formats 19 to 23 stored
/// them, each transfer's id whole, for the layouts of older formats in
/// tests.
pub mod format23 {
    use crate::error::EngineError;
    use crate::records::{JournalEntry, TransferRef};
    use crate::storage::{Space, decode, encode, keys};

    /// Stores every journal entry of a current ledger with its transfer's
    /// id whole; returns how many it rewrote.
    pub fn store_journal_ids_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::respell_space(table, Space::Journal, |_, value| {
            Ok(decode::<JournalEntry>(value)?.encode_as_format_23())
        })
    }

    /// Stores every reference of a current ledger whole; returns how many
    /// it rewrote.
    pub fn store_transfer_refs_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::respell_space(table, Space::Transfer, |key, value| {
            let id = keys::number_of(key)
                .ok_or_else(|| EngineError::Corrupt(format!("a transfer's key is malformed: {key:?}")))?;
            Ok(encode(&TransferRef::decode(id, value)?))
        })
    }

    #[cfg(test)]
    mod tests {
        use crate::records::{PendingState, TransferRef};
        use crate::storage::{decode, encode};

        /// A hold's reference to its own entry is one byte where formats 11
        /// to 23 stored two or more, and both read as the same reference;
        /// any other reference is stored whole.
        #[test]
        fn a_holds_reference_is_its_state_alone() {
            for state in [PendingState::Pending, PendingState::Posted, PendingState::Voided] {
                for id in [1, 300, 70_000, u64::MAX] {
                    let found = TransferRef { journal_seq: id, pending_state: Some(state) };
                    let bytes = found.encode(id);
                    assert_eq!(bytes.len(), 1);
                    assert!(encode(&found).len() >= 2);
                    assert_eq!(TransferRef::decode(id, &bytes).unwrap(), found);
                    assert_eq!(TransferRef::decode(id, &encode(&found)).unwrap(), found);
                }
            }
            let elsewhere = TransferRef { journal_seq: 7, pending_state: Some(PendingState::Posted) };
            assert_eq!(elsewhere.encode(8), encode(&elsewhere));
            assert_eq!(TransferRef::decode(8, &elsewhere.encode(8)).unwrap(), elsewhere);
            let posted = TransferRef { journal_seq: 9, pending_state: None };
            assert_eq!(decode::<TransferRef>(&posted.encode(9)).unwrap(), posted);
            assert!(TransferRef::decode(1, &[9]).is_err(), "no fourth state");
        }
    }
}

/// Idempotency entries as formats 1 to 22 stored them, with the request's
/// whole fingerprint: for `idempotency_entries_keep_half_their_fingerprints`
/// and the layouts of older formats in tests.
pub mod format22 {
    use serde::{Deserialize, Serialize};

    use crate::error::EngineError;
    use crate::records::{ResourceRef, TimestampMs};
    use crate::storage::{Space, encode};

    /// An idempotency entry as formats 1 to 22 stored it (its resource's id
    /// as format 22 spells it; the layout of format 21 spells it again).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct IdempotencyRecord {
        pub fingerprint: [u8; 32],
        pub resource: ResourceRef,
        pub created_at: TimestampMs,
    }

    /// A current idempotency entry's bytes as format 22 stored them: the
    /// 16 bytes of the fingerprint it keeps, then 16 zero bytes for the
    /// ones it does not (the upgrade keeps the first 16 again).
    pub fn idempotency_as_format_22(value: &[u8]) -> Result<Vec<u8>, EngineError> {
        let entry = crate::records::IdempotencyRecord::decode(value)?;
        let created_at = super::format24::made_at(&entry.resource);
        let mut fingerprint = [0u8; 32];
        fingerprint[..entry.fingerprint.len()].copy_from_slice(&entry.fingerprint);
        Ok(encode(&IdempotencyRecord { fingerprint, resource: entry.resource, created_at }))
    }

    /// Stores every idempotency entry of a current ledger as format 22 did;
    /// returns how many it changed.
    pub fn store_fingerprints_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::respell_space(table, Space::Idempotency, |_, value| idempotency_as_format_22(value))
    }

    #[cfg(test)]
    mod tests {
        use crate::records::{IdempotencyRecord, ResourceRef};
        use crate::storage::{decode, encode};

        /// An entry keeps 16 bytes of the fingerprint where formats up to
        /// 22 kept 32, and the layout of format 22 reads back through the
        /// step's reading as the same entry.
        #[test]
        fn an_idempotency_entry_keeps_half_the_fingerprint() {
            let fingerprint = crate::digest::sha256(&[b"a request"]);
            let resource = ResourceRef::Payout(crate::ids::new_id("pay_ghs"));
            let entry = IdempotencyRecord {
                fingerprint: IdempotencyRecord::kept(&fingerprint),
                resource: resource.clone(),
            };
            let old = super::IdempotencyRecord {
                fingerprint,
                resource: resource.clone(),
                created_at: 1_764_331_440_962,
            };
            let format_24 = crate::format::format24::IdempotencyRecord {
                fingerprint: entry.fingerprint,
                resource,
                created_at: old.created_at,
            };
            assert_eq!(encode(&old).len() - encode(&format_24).len(), 16);
            let laid_out: super::IdempotencyRecord =
                decode(&super::idempotency_as_format_22(&encode(&entry)).unwrap()).unwrap();
            assert_eq!(IdempotencyRecord::kept(&laid_out.fingerprint), entry.fingerprint);
            assert_eq!(
                IdempotencyRecord::kept(&old.fingerprint),
                IdempotencyRecord::kept(&laid_out.fingerprint)
            );
        }
    }
}

/// List entries, event ids and payouts' events as formats 6 to 21 stored
/// them, every id as text, for the layouts of older formats in tests.
pub mod format21 {
    use super::format12::Record;
    use crate::error::EngineError;
    use crate::id_parts::{self, Parts};
    use crate::records::{ResourceRef, StoredId};
    use crate::storage::{Space, decode, encode, keys, scan};

    /// The id an event's key of format 22 holds as its parts (`0xFF`, 6
    /// bytes of time, 12 of the random part); `None` for a key that spells
    /// its id.
    fn event_id_of(key: &[u8]) -> Option<String> {
        let (&0xFF, rest) = key.get(1..)?.split_first()? else {
            return None;
        };
        let (time, random) = rest.split_first_chunk::<6>()?;
        let random = <[u8; 12]>::try_from(random).ok()?;
        let mut wide = [0u8; 8];
        wide[2..].copy_from_slice(time);
        let mut whole = [0u8; 16];
        whole[4..].copy_from_slice(&random);
        let parts =
            Parts { prefix: "evt", time_ms: u64::from_be_bytes(wide), random: u128::from_be_bytes(whole) };
        id_parts::spell_parts(parts)
    }

    /// An idempotency entry's bytes with its resource's id as text, as
    /// formats before 22 stored it.
    fn idempotency_as_text(value: &[u8]) -> Result<Vec<u8>, EngineError> {
        let record: super::format22::IdempotencyRecord = decode(value)?;
        // The variant's place in `ResourceRef`, as postcard writes it.
        let (variant, id) = match &record.resource {
            ResourceRef::Conversion(id) => (0u32, id),
            ResourceRef::Deposit(id) => (1, id),
            ResourceRef::Transfers(_) => return Ok(value.to_vec()),
            ResourceRef::Payout(id) => (3, id),
            ResourceRef::Collection(id) => (4, id),
            ResourceRef::Order(id) => (5, id),
            ResourceRef::Refund(id) => (6, id),
            ResourceRef::Listed(_) => {
                return Err(EngineError::Corrupt("format 21 named no resource by its position".into()));
            }
        };
        Ok(encode(&(record.fingerprint, variant, id, record.created_at)))
    }

    /// A record of a format 22 ledger as format 21 stored it, its ids as
    /// text and an event's id keyed by its text: its key and value then,
    /// when either differs from format 22's. Only idempotency entries differ
    /// between format 22 and now (`format22::store_fingerprints_whole`
    /// comes first).
    pub fn record_as_format_21(key: &[u8], value: &[u8]) -> Result<Option<Record>, EngineError> {
        let (old_key, old_value) = match Space::of_key(key) {
            Some(Space::ListIndex) => (key.to_vec(), encode(&StoredId::read(value)?)),
            Some(Space::Idempotency) => (key.to_vec(), idempotency_as_text(value)?),
            Some(Space::Payout) => {
                let payout = crate::stored_payout::decode(key, value)?;
                (key.to_vec(), crate::stored_payout::encode_as_format_21(&payout))
            }
            Some(Space::EventId) => match event_id_of(key) {
                Some(id) => (keys::event_id_as_text(&id), value.to_vec()),
                None => return Ok(None),
            },
            Some(Space::Event) => match crate::events::payout_event_as_format_21(value)? {
                Some(old) => (key.to_vec(), old),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok((old_key != key || old_value != value).then_some((old_key, old_value)))
    }

    /// Stores every record of a format 22 ledger as format 21 did
    /// (`record_as_format_21`); returns how many records it changed.
    pub fn store_ids_as_text(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let mut changed = 0usize;
        for space in [Space::Idempotency, Space::Payout, Space::ListIndex, Space::EventId, Space::Event] {
            for (key, value) in scan(&*table, space)? {
                if let Some((old_key, old_value)) = record_as_format_21(&key, &value)? {
                    if old_key != key {
                        table.remove(key.as_slice())?;
                    }
                    table.insert(old_key.as_slice(), old_value.as_slice())?;
                    changed = changed.saturating_add(1);
                }
            }
        }
        Ok(changed)
    }

    #[cfg(test)]
    mod tests {
        /// An event's id keyed by its parts is 20 bytes where its text took
        /// 30, and the layout of format 21 spells it back.
        #[test]
        fn an_event_ids_key_holds_its_parts() {
            let id = crate::ids::new_id("evt");
            let key = crate::storage::keys::event_id(&id);
            assert_eq!(key.len(), 20);
            assert_eq!(crate::storage::keys::event_id_as_text(&id).len(), 30);
            assert_eq!(super::event_id_of(&key), Some(id.clone()));
            assert_eq!(super::event_id_of(&crate::storage::keys::event_id_as_text(&id)), None);
            // Another shape of id is keyed by its text.
            assert_eq!(
                crate::storage::keys::event_id("evt_1"),
                crate::storage::keys::event_id_as_text("evt_1")
            );
            let other = crate::ids::new_id("pay");
            assert_eq!(
                crate::storage::keys::event_id(&other),
                crate::storage::keys::event_id_as_text(&other)
            );
        }

        /// An idempotency entry's resource is stored as its parts, 6 bytes
        /// shorter than formats before 22 stored it, and reads the same
        /// from both.
        #[test]
        fn an_idempotency_entrys_resource_is_stored_as_its_parts() {
            use crate::format::format22::{IdempotencyRecord, idempotency_as_format_22};
            use crate::records::ResourceRef;
            let payout = crate::ids::new_id("pay_ghs");
            for (resource, saved) in [
                (ResourceRef::Payout(payout), 6),
                (ResourceRef::Refund("rf_1".into()), 0),
                (ResourceRef::Transfers(vec![1, 2]), 0),
            ] {
                let current =
                    crate::records::IdempotencyRecord { fingerprint: [7; 16], resource: resource.clone() };
                let bytes = idempotency_as_format_22(&crate::storage::encode(&current)).unwrap();
                let mut fingerprint = [0; 32];
                fingerprint[..16].fill(7);
                let created_at = crate::format::format24::made_at(&resource);
                let record = IdempotencyRecord { fingerprint, resource, created_at };
                let text = super::idempotency_as_text(&bytes).unwrap();
                assert_eq!(text.len(), bytes.len() + saved, "{:?}", record.resource);
                assert_eq!(crate::storage::decode::<IdempotencyRecord>(&text).unwrap(), record);
                assert_eq!(crate::storage::decode::<IdempotencyRecord>(&bytes).unwrap(), record);
            }
        }
    }
}

/// Payouts and their events as formats 18 to 20 stored them, every text
/// whole, for the layouts of older formats in tests.
pub mod format20 {
    use super::format12::Record;
    use crate::error::EngineError;
    use crate::storage::{Space, scan};

    /// The stored payouts of a current ledger (keys and values) with every
    /// text whole, as formats 18 to 20 stored them.
    pub fn payouts_with_whole_texts(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        current
            .into_iter()
            .map(|(key, bytes)| {
                let payout = crate::stored_payout::decode(&key, &bytes)?;
                Ok((key, crate::stored_payout::encode_as_format_20(&payout)))
            })
            .collect()
    }

    /// Stores each payout of a current ledger and each payout's event with
    /// every text whole, as formats 18 to 20 did; returns how many records
    /// it changed.
    pub fn store_texts_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let mut changed = 0usize;
        let payouts = scan(&*table, Space::Payout)?;
        for ((key, value), (_, was)) in payouts_with_whole_texts(payouts.clone())?.iter().zip(&payouts) {
            if value != was {
                table.insert(key.as_slice(), value.as_slice())?;
                changed = changed.saturating_add(1);
            }
        }
        for (key, was) in scan(&*table, Space::Event)? {
            if let Some(value) = crate::events::payout_event_as_format_20(&was)?
                && value != was
            {
                table.insert(key.as_slice(), value.as_slice())?;
                changed = changed.saturating_add(1);
            }
        }
        Ok(changed)
    }
}

/// List entries and idempotency entries as formats 6 to 19 keyed them,
/// with their names in text, for the layouts of older formats in tests.
pub mod format19 {
    use super::format12::Record;
    use crate::error::EngineError;
    use crate::storage::{Counter, Key, NameNumber, Space, keys, names_in, scan};

    /// The list and idempotency entries of a current ledger (`entries`)
    /// under the keys formats 6 to 19 gave them, which spelled the names
    /// that `names` (the ledger's `Space::Name` records) number.
    pub fn names_as_text(entries: Vec<Record>, names: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        let names = names_in(names)?;
        let text = |number: NameNumber| {
            names.get(&number).ok_or_else(|| EngineError::Corrupt(format!("no name has number {}", number.0)))
        };
        entries
            .into_iter()
            .map(|(key, value)| {
                let space =
                    Space::of_key(&key).filter(|s| matches!(s, Space::ListIndex | Space::Idempotency));
                let space =
                    space.ok_or_else(|| EngineError::Corrupt("not a list or idempotency entry".into()))?;
                let (first, second, rest) = NameNumber::pair_in(&key).ok_or_else(|| {
                    EngineError::Corrupt(format!("a {space:?} key too short for two numbers"))
                })?;
                let spelled = Key::new(space).str(text(first)?).str(text(second)?).bytes();
                Ok(([spelled.as_slice(), rest].concat(), value))
            })
            .collect()
    }

    /// Stores a current ledger's list and idempotency entries under keys
    /// that spell their names, and drops the names' records and their
    /// counter, as formats 6 to 19 did (`names_as_text`); returns how many
    /// entries moved.
    pub fn store_names_as_text(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let mut entries = scan(&*table, Space::ListIndex)?;
        entries.extend(scan(&*table, Space::Idempotency)?);
        let names = scan(&*table, Space::Name)?;
        let spelled = names_as_text(entries.clone(), names.clone())?;
        for (key, _) in entries.iter().chain(&names) {
            table.remove(key.as_slice())?;
        }
        table.remove(keys::meta(Counter::NameNumber.name()).as_slice())?;
        for (key, value) in &spelled {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        Ok(spelled.len())
    }
}

/// Journal entries as formats 14 to 18 stored their memos, as text, for
/// the layouts of older formats in tests. The hash chain covers every memo
/// as text, so no hash changes.
pub mod format18 {
    use super::format12::Record;
    use crate::error::EngineError;
    use crate::records::{JournalEntry, StoredEntry, StoredTransfer};
    use crate::storage::{Space, decode, scan};

    /// The journal of a current ledger (keys and values, in journal order)
    /// with every memo stored as text, as formats 14 to 18 stored it.
    pub fn memos_as_text(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        current
            .into_iter()
            .map(|(key, value)| {
                let entry: JournalEntry = decode(&value)?;
                let transfer = StoredTransfer::hashed(entry.seq, &entry.transfer);
                let stored = StoredEntry { seq: entry.seq, hash: entry.hash, transfer };
                Ok((key, postcard::to_allocvec(&stored).expect("postcard encodes a journal entry")))
            })
            .collect()
    }

    /// Stores the journal of a current ledger as formats 17 and 18 did
    /// (`memos_as_text`); returns how many entries it changed.
    pub fn store_memos_as_text(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let current = scan(&*table, Space::Journal)?;
        let old = memos_as_text(current.clone())?;
        let mut changed = 0usize;
        for ((key, value), (_, was)) in old.iter().zip(&current) {
            if value != was {
                table.insert(key.as_slice(), value.as_slice())?;
                changed = changed.saturating_add(1);
            }
        }
        Ok(changed)
    }
}

/// Payouts as formats 6 to 17 stored them (`PayoutRecord`'s own
/// encoding), for the layouts of older formats in tests.
pub mod format17 {
    use super::format12::Record;
    use crate::error::EngineError;
    use crate::storage::{Space, encode, scan};

    /// The stored payouts of a current ledger (keys and values) as formats
    /// 6 to 17 stored them.
    pub fn payouts_whole(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        current
            .into_iter()
            .map(|(key, bytes)| {
                let payout = crate::stored_payout::decode(&key, &bytes)?;
                Ok((key, encode(&payout)))
            })
            .collect()
    }

    /// Stores each payout of a current ledger as formats 6 to 17 did
    /// (`payouts_whole`), and each payout's event as formats 9 to 17 did
    /// (`events::payout_event_as_format_17`); returns how many payouts it
    /// rewrote.
    pub fn store_payouts_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let old = payouts_whole(scan(&*table, Space::Payout)?)?;
        for (key, value) in &old {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        for (key, value) in scan(&*table, Space::Event)? {
            if let Some(event) = crate::events::payout_event_as_format_17(&value)? {
                table.insert(key.as_slice(), event.as_slice())?;
            }
        }
        Ok(old.len())
    }
}

/// Journal entries as formats 14 to 16 stored them, each with its hash,
/// for the steps that read or write them (formats 14, 15 and 17) and the
/// layouts of older formats in tests.
pub mod format16 {
    use serde::{Deserialize, Serialize};

    use super::format12::Record;
    use crate::error::EngineError;
    use crate::records::{HashField, StoredEntry, StoredTransfer, TransferRecord, encode_chained};
    use crate::storage::{Space, decode, encode, scan};

    /// A journal entry with its hash, whatever its number.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct JournalEntry {
        pub seq: u64,
        pub hash: [u8; 32],
        pub transfer: TransferRecord,
    }

    impl Serialize for JournalEntry {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let transfer = StoredTransfer::hashed(self.seq, &self.transfer);
            StoredEntry { seq: self.seq, hash: self.hash, transfer }.serialize(serializer)
        }
    }

    impl<'de> Deserialize<'de> for JournalEntry {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let StoredEntry::<[u8; 32]> { seq, hash, transfer } = StoredEntry::deserialize(deserializer)?;
            let transfer = transfer.into_transfer(seq).map_err(serde::de::Error::custom)?;
            Ok(JournalEntry { seq, hash, transfer })
        }
    }

    /// Entry `seq` holding `transfer`, chained to `prev_hash`, as formats
    /// 14 to 16 stored it: its hash and its bytes.
    pub fn chained(seq: u64, prev_hash: &[u8; 32], transfer: &TransferRecord) -> ([u8; 32], Vec<u8>) {
        encode_chained(seq, prev_hash, transfer, HashField::Bare)
    }

    /// The journal of a current ledger (keys and values, in journal
    /// order) as format 16 stored it: every entry with its hash.
    pub fn hashes_in_every_entry(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        let mut prev_hash = [0; 32];
        current
            .into_iter()
            .map(|(key, value)| {
                let entry: crate::records::JournalEntry = decode(&value)?;
                // A stored hash stays, as the chain goes on from it.
                let (hash, old) = match entry.hash {
                    Some(hash) => {
                        (hash, encode(&JournalEntry { seq: entry.seq, hash, transfer: entry.transfer }))
                    }
                    None => chained(entry.seq, &prev_hash, &entry.transfer),
                };
                prev_hash = hash;
                Ok((key, old))
            })
            .collect()
    }

    /// Stores the journal of a current ledger as format 16 did
    /// (`hashes_in_every_entry`); returns how many entries it rewrote.
    pub fn store_hashes_in_every_entry(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let old = hashes_in_every_entry(scan(&*table, Space::Journal)?)?;
        for (key, value) in &old {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        Ok(old.len())
    }
}

/// Accounts as formats 6 to 15 stored them, their balance-change heads
/// apart (formats 10 to 15), for the layouts of older formats in tests.
pub mod format15 {
    use super::format12::Record;
    use crate::balance_changes::{ChangeHead, account_number};
    use crate::error::EngineError;
    use crate::records::AccountEntry;
    use crate::storage::{Space, decode, encode, keys, scan};

    /// The stored accounts of a current ledger (keys and values) as format
    /// 15 stored them: each account alone, and the head of each
    /// organization account that has had a change as a record of its own.
    pub fn heads_apart(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        let mut old = Vec::with_capacity(current.len());
        for (key, value) in current {
            let AccountEntry { account, changes } = decode(&value)?;
            if let Some(number) = account_number(&account.id).filter(|_| account.is_organization())
                && changes != ChangeHead::default()
            {
                old.push((keys::balance_head(number), encode(&changes)));
            }
            old.push((key, encode(&account)));
        }
        Ok(old)
    }

    /// Stores the accounts of a current ledger as format 15 did
    /// (`heads_apart`); returns how many heads it stored apart.
    pub fn store_heads_apart(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let old = heads_apart(scan(&*table, Space::Account)?)?;
        let mut heads = 0usize;
        for (key, value) in &old {
            if key.first() == Some(&(Space::BalanceHead as u8)) {
                heads = heads.saturating_add(1);
            }
            table.insert(key.as_slice(), value.as_slice())?;
        }
        Ok(heads)
    }
}

/// References as format 14 and earlier stored them, one under every
/// transfer's id, for the tests of format 15's step and the layouts of
/// older formats.
pub mod format14 {
    use redb::ReadableTable;

    use crate::error::EngineError;
    use crate::records::{JournalEntry, TransferRef};
    use crate::storage::{Space, decode, encode, keys, scan};

    /// Stores a reference under the id of each transfer of a current
    /// ledger that has none (a hold's is already stored); returns how many
    /// it added.
    pub fn store_every_transfer_ref(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::format23::store_transfer_refs_whole(table)?;
        let mut added = 0usize;
        for (_, value) in scan(&*table, Space::Journal)? {
            let entry: JournalEntry = decode(&value)?;
            let key = keys::transfer(entry.transfer.id);
            if table.get(key.as_slice())?.is_none() {
                table.insert(key.as_slice(), encode(&TransferRef::of(&entry.transfer)).as_slice())?;
                added = added.saturating_add(1);
            }
        }
        Ok(added)
    }
}

/// Journal entries as format 13 stored them, for its step's output, format
/// 14's step and its tests.
pub mod format13 {
    use serde::{Deserialize, Serialize};

    use super::format12::Record;
    use crate::error::EngineError;
    use crate::records::TransferRecord;
    use crate::storage::{Space, decode, encode, keys, scan};

    /// A journal entry with its transfer as `TransferRecord` encodes it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct JournalEntry {
        pub seq: u64,
        pub hash: [u8; 32],
        pub transfer: TransferRecord,
    }

    impl JournalEntry {
        /// The entry as formats 14 to 16 store it (the hash is still
        /// format 13's).
        pub fn current(self) -> super::format16::JournalEntry {
            super::format16::JournalEntry { seq: self.seq, hash: self.hash, transfer: self.transfer }
        }
    }

    /// `sha256(prev_hash || postcard(transfer))`: the link from one
    /// journal entry to the next up to format 13.
    pub fn chain_hash(prev_hash: &[u8; 32], transfer: &TransferRecord) -> [u8; 32] {
        crate::digest::sha256(&[prev_hash, &encode(transfer)])
    }

    /// The journal of a current ledger as format 13 stored it: its entries
    /// (keys and values, in journal order), each hashed as format 13 did
    /// (`chain_hash`), and last the journal head record as it then stood.
    pub fn journal_as_format_13(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        let mut prev_hash = [0; 32];
        let mut old = current
            .into_iter()
            .map(|(key, value)| {
                let entry: crate::records::JournalEntry = decode(&value)?;
                let hash = chain_hash(&prev_hash, &entry.transfer);
                prev_hash = hash;
                Ok((key, encode(&JournalEntry { seq: entry.seq, hash, transfer: entry.transfer })))
            })
            .collect::<Result<Vec<Record>, EngineError>>()?;
        old.push((keys::meta("journal_head"), encode(&prev_hash)));
        Ok(old)
    }

    /// Stores the journal of a current ledger as format 13 did
    /// (`journal_as_format_13`); returns how many entries it rewrote.
    pub fn store_journal_as_format_13(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let old = journal_as_format_13(scan(&*table, Space::Journal)?)?;
        for (key, value) in &old {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        Ok(old.len().saturating_sub(1))
    }
}

/// Journal entries as formats 12 and earlier stored them, for the steps
/// that read them (formats 7 and 11) and for the tests of format 13's.
pub mod format12 {
    use serde::{Deserialize, Serialize};

    use crate::error::EngineError;
    use crate::records::TransferRecord;
    use crate::storage::{Space, decode, encode, scan};

    /// A stored record: its key and its value.
    pub type Record = (Vec<u8>, Vec<u8>);

    /// A journal entry with the hash of the entry before it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct JournalEntry {
        pub seq: u64,
        pub prev_hash: [u8; 32],
        pub hash: [u8; 32],
        pub transfer: TransferRecord,
    }

    impl JournalEntry {
        /// The entry as format 13 stores it.
        pub fn current(self) -> super::format13::JournalEntry {
            super::format13::JournalEntry { seq: self.seq, hash: self.hash, transfer: self.transfer }
        }
    }

    /// The stored journal entries of a current ledger (keys and values, in
    /// journal order) as format 12 and earlier stored them, each hashed as
    /// they did and with the hash of the one before, and last the journal
    /// head record as it then stood (`format13::journal_as_format_13`).
    pub fn with_previous_hashes(current: Vec<Record>) -> Result<Vec<Record>, EngineError> {
        let mut prev_hash = [0; 32];
        super::format13::journal_as_format_13(current)?
            .into_iter()
            .map(|(key, value)| {
                if key.first() != Some(&(Space::Journal as u8)) {
                    return Ok((key, value));
                }
                let entry: super::format13::JournalEntry = decode(&value)?;
                let hash = entry.hash;
                let old = JournalEntry { seq: entry.seq, prev_hash, hash, transfer: entry.transfer };
                prev_hash = hash;
                Ok((key, encode(&old)))
            })
            .collect()
    }

    /// Stores the journal of a current ledger as format 12 and earlier did
    /// (`with_previous_hashes`); returns how many entries it rewrote.
    pub fn store_journal_with_previous_hashes(
        table: &mut redb::Table<&[u8], &[u8]>,
    ) -> Result<usize, EngineError> {
        let old = with_previous_hashes(scan(&*table, Space::Journal)?)?;
        for (key, value) in &old {
            table.insert(key.as_slice(), value.as_slice())?;
        }
        Ok(old.len().saturating_sub(1))
    }
}

/// Transfers as formats 10 and earlier stored them, for the tests of
/// format 11's step.
pub mod format10 {
    use crate::error::EngineError;
    use crate::records::{JournalEntry, TransferRef};
    use crate::storage::{Space, decode, encode, keys, read, scan};

    /// Stores each transfer of a current ledger whole under its id, as
    /// format 10 and earlier did; returns how many it rewrote.
    pub fn store_transfers_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        super::format14::store_every_transfer_ref(table)?;
        let stored = scan(&*table, Space::Transfer)?;
        for (key, value) in &stored {
            let found: TransferRef = decode(value)?;
            let entry = read::<JournalEntry>(&*table, &keys::journal(found.journal_seq))?;
            let transfer =
                entry.and_then(|entry| found.applied_to(entry.seq, entry.transfer)).ok_or_else(|| {
                    EngineError::Corrupt(format!("journal entry {} is missing", found.journal_seq))
                })?;
            table.insert(key.as_slice(), encode(&transfer).as_slice())?;
        }
        Ok(stored.len())
    }
}

/// Balance changes as formats 7 to 9 stored them: in space 50, keyed by
/// the account's number, the time and the journal number, valued with the
/// balances after (`BalanceAfter`). For the step that built them (format
/// 7), the step that re-keys them (format 10) and its tests.
pub mod format9 {
    use crate::balance_changes::{BalanceAfter, StoredChange, parse_key};
    use crate::error::EngineError;
    use crate::records::TimestampMs;
    use crate::storage::{Space, decode, encode, keys, prefix_end, scan};

    /// The space byte they were stored under.
    pub const BALANCE_CHANGE: u8 = 50;

    /// A change's key: fixed-size, in account, time, then journal order.
    pub fn balance_change(number: u64, at: TimestampMs, journal_seq: u64) -> Vec<u8> {
        let mut key = Vec::with_capacity(25);
        key.push(BALANCE_CHANGE);
        key.extend_from_slice(&number.to_be_bytes());
        key.extend_from_slice(&(at.max(0) as u64).to_be_bytes());
        key.extend_from_slice(&journal_seq.to_be_bytes());
        key
    }

    /// A change's key split into its account number, time and journal number.
    pub fn parse(key: &[u8]) -> Option<(u64, TimestampMs, u64)> {
        crate::balance_changes::parse_mark(key).filter(|_| key.first() == Some(&BALANCE_CHANGE))
    }

    /// Stores the balance changes of a current ledger as format 9 did
    /// (no heads, no marks); returns how many it rewrote.
    pub fn store_balance_changes_as_format_9(
        table: &mut redb::Table<&[u8], &[u8]>,
    ) -> Result<usize, EngineError> {
        let current = scan(&*table, Space::BalanceChange)?;
        for (key, value) in &current {
            let (seq, number) = parse_key(key)
                .ok_or_else(|| EngineError::Corrupt("a balance change's key is malformed".into()))?;
            let stored: StoredChange = decode(value)?;
            let after: BalanceAfter = stored.after;
            table.insert(balance_change(number, stored.at, seq).as_slice(), encode(&after).as_slice())?;
        }
        for space in [Space::BalanceChange, Space::BalanceMark, Space::BalanceHead] {
            let start = keys::space(space);
            table.retain_in(start.as_slice()..prefix_end(&start).as_slice(), |_, _| false)?;
        }
        Ok(current.len())
    }
}

/// Events as format 8 and earlier stored them, for tests of the steps
/// before format 9 and of format 9's own.
pub mod format8 {
    use crate::error::EngineError;
    use crate::storage::{Space, encode, keys, read, scan};

    /// Stores each payout event of a current ledger whole (a copy of the
    /// payout as it stood), as format 8 and earlier did; returns how many
    /// it rewrote.
    pub fn store_payout_events_whole(table: &mut redb::Table<&[u8], &[u8]>) -> Result<usize, EngineError> {
        let stored = scan(&*table, Space::Event)?;
        let mut rewritten: usize = 0;
        for (key, bytes) in stored {
            let event = crate::events::decode_event(&bytes, |id| read(&*table, &keys::payout(id)))?;
            let whole = encode(&event);
            if whole != bytes {
                table.insert(key.as_slice(), whole.as_slice())?;
                rewritten = rewritten.saturating_add(1);
            }
        }
        Ok(rewritten)
    }
}

/// Keys as format 5 and earlier built them, for the steps before format 6
/// (which moved the engine's records out of the documents).
pub mod format5 {
    use redb::ReadableTable;

    use crate::error::EngineError;
    use crate::storage::{ENGINE_OWNED, Key, Space, keys, prefix_end};
    use crate::timeline::{Fact, TimelineEntry};

    /// A document's key, whatever its collection.
    pub fn document(collection: &str, id: &str) -> Vec<u8> {
        Key::new(Space::Document).str(collection).str(id).bytes()
    }
    pub fn documents_prefix(collection: &str) -> Vec<u8> {
        Key::new(Space::Document).str(collection).bytes()
    }

    /// How a test words a timeline's fact as format 5 stored it: kind,
    /// title, detail (the server's wording, `sika_server::timeline_words`).
    pub type Words<'a> = &'a dyn Fn(&Fact) -> [String; 3];

    /// Lays a format 6 ledger's records out as format 5 did (the engine's
    /// records back among the documents, each timeline as the English
    /// `words` gives it, no index of open movements), for tests of the
    /// upgrade path, which make an older ledger out of a current one.
    /// Returns how many records it moved.
    pub fn store_as_format_5(
        table: &mut redb::Table<&[u8], &[u8]>,
        words: Words<'_>,
    ) -> Result<usize, EngineError> {
        super::format8::store_payout_events_whole(table)?;
        let mut moved: usize = 0;
        for (collection, space) in ENGINE_OWNED {
            let start = keys::space(space);
            let records: Vec<(Vec<u8>, Vec<u8>)> = table
                .range(start.as_slice()..prefix_end(&start).as_slice())?
                .map(|entry| entry.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
                .collect::<Result<_, _>>()?;
            for (key, value) in records {
                let old = [documents_prefix(collection).as_slice(), &key[1..]].concat();
                let value = timeline_as_format_5(&old, &value, words)?.unwrap_or(value);
                table.insert(old.as_slice(), value.as_slice())?;
                table.remove(key.as_slice())?;
                moved = moved.saturating_add(1);
            }
        }
        let events = keys::space(Space::Event);
        let stored: Vec<(Vec<u8>, Vec<u8>)> = table
            .range(events.as_slice()..prefix_end(&events).as_slice())?
            .map(|entry| entry.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
            .collect::<Result<_, _>>()?;
        for (key, value) in stored {
            if let Some(old) = timeline_as_format_5(&key, &value, words)? {
                table.insert(key.as_slice(), old.as_slice())?;
            }
        }
        let start = keys::space(Space::OpenMovement);
        table.retain_in(start.as_slice()..prefix_end(&start).as_slice(), |_, _| false)?;
        Ok(moved)
    }

    /// The record stored under `key` (a key as format 5 built it) with its
    /// timelines, or those of the records it carries (an event), as format
    /// 5 stored them: English lines, as `words` gives them. `None` for a
    /// record with no timeline.
    pub fn timeline_as_format_5(
        key: &[u8],
        value: &[u8],
        words: Words<'_>,
    ) -> Result<Option<Vec<u8>>, EngineError> {
        use super::v5::{Line, Record, event, retime, whole};
        let english = |entry: TimelineEntry| -> Line {
            let [kind, title, detail] = words(&entry.fact);
            (entry.at, kind, title, detail)
        };
        if key.starts_with(&keys::space(Space::Event)) {
            return event(value, &|record, bytes| retime(record, bytes, english));
        }
        let records =
            [("payouts", Record::Payout), ("collections", Record::Collection), ("orders", Record::Order)];
        match records.into_iter().find(|(collection, _)| key.starts_with(&documents_prefix(collection))) {
            Some((_, record)) => whole(record, value, english).map(Some),
            None => Ok(None),
        }
    }
}

/// Payouts, collections, orders and the events that carry them as format 5
/// wrote them, as tuples (see `v3`), as far as format 6 changed them: their
/// timelines, which were English lines.
mod v5 {
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use crate::error::EngineError;
    use crate::storage::encode;
    use crate::timeline::{Fact, TimelineEntry};

    /// code, account number, address, tag, recipient id, bank code.
    type Destination =
        (String, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);
    /// A payout up to its timeline: id, organization, status, source
    /// account, currency and amount, destination, its currency and amount,
    /// fee, rate, narration, external reference, metadata, status message,
    /// holds.
    type PayoutHead = (
        String,
        String,
        u32,
        String,
        String,
        i128,
        Destination,
        String,
        i128,
        i128,
        String,
        String,
        String,
        String,
        String,
        Vec<u64>,
    );
    /// rail, API key, order, creation, update, completion.
    type PayoutTail = (String, Option<String>, Option<String>, i64, i64, Option<i64>);
    /// id, organization, status, account, currency, amount, code, account
    /// number, external reference, metadata, status message, hold.
    type CollectionHead =
        (String, String, u32, String, String, i128, String, String, String, String, String, u64);
    /// rail, creation, update, completion.
    type CollectionTail = (String, i64, i64, Option<i64>);
    /// id, organization, status, method, currency, amount, chain,
    /// destination, its currency, deposit instructions, required
    /// confirmations, received amount, payout, external reference,
    /// metadata, status message.
    type OrderHead = (
        String,
        String,
        u32,
        String,
        String,
        i128,
        Option<String>,
        Destination,
        String,
        String,
        u32,
        i128,
        Option<String>,
        String,
        String,
        String,
    );
    /// expiry, creation, update.
    type OrderTail = (i64, i64, i64);
    /// A timeline line: at, kind, title, detail.
    pub(super) type Line = (i64, String, String, String);
    /// An event up to its payload's variant: sequence, id, organization, kind.
    type EventHead = (u64, String, String, String, u32);

    /// Rewrites the record of a kind at the start of some bytes: the new
    /// record and how many bytes the old one took (`retime`).
    pub(super) type Each<'a> = &'a dyn Fn(Record, &[u8]) -> Result<(Vec<u8>, usize), EngineError>;

    #[derive(Debug, Clone, Copy)]
    pub(super) enum Record {
        Payout,
        Collection,
        Order,
    }

    /// How many bytes at the start of `bytes` a `T` takes.
    fn length<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<usize, EngineError> {
        let (_, rest) = postcard::take_from_bytes::<T>(bytes)
            .map_err(|e| EngineError::Corrupt(format!("{what} does not decode as format 5 wrote it: {e}")))?;
        Ok(bytes.len().saturating_sub(rest.len()))
    }

    /// A format 5 line as format 6 keeps it: the same words, as a legacy fact.
    pub(super) fn legacy((at, kind, title, detail): Line) -> TimelineEntry {
        TimelineEntry::new(at, Fact::Legacy { kind, title, detail })
    }

    /// The record at the start of `bytes` with each timeline line `convert`ed
    /// (from a `F` to a `T`), and how many bytes the record took.
    pub(super) fn retime<F: DeserializeOwned, T: Serialize>(
        record: Record,
        bytes: &[u8],
        convert: impl Fn(F) -> T,
    ) -> Result<(Vec<u8>, usize), EngineError> {
        let head = match record {
            Record::Payout => length::<PayoutHead>(bytes, "a payout")?,
            Record::Collection => length::<CollectionHead>(bytes, "a collection")?,
            Record::Order => length::<OrderHead>(bytes, "an order")?,
        };
        let (timeline, rest) = postcard::take_from_bytes::<Vec<F>>(&bytes[head..])
            .map_err(|e| EngineError::Corrupt(format!("a {record:?}'s timeline does not decode: {e}")))?;
        let tail = match record {
            Record::Payout => length::<PayoutTail>(rest, "a payout")?,
            Record::Collection => length::<CollectionTail>(rest, "a collection")?,
            Record::Order => length::<OrderTail>(rest, "an order")?,
        };
        let timeline: Vec<T> = timeline.into_iter().map(convert).collect();
        let used = bytes.len().saturating_sub(rest.len()).saturating_add(tail);
        Ok(([&bytes[..head], encode(&timeline).as_slice(), &rest[..tail]].concat(), used))
    }

    /// `retime` of a record that is the whole of `bytes`.
    pub(super) fn whole<F: DeserializeOwned, T: Serialize>(
        record: Record,
        bytes: &[u8],
        convert: impl Fn(F) -> T,
    ) -> Result<Vec<u8>, EngineError> {
        let (new, used) = retime(record, bytes, convert)?;
        if used != bytes.len() {
            return Err(EngineError::Corrupt(format!(
                "a {record:?} has {} bytes past its end",
                bytes.len().saturating_sub(used)
            )));
        }
        Ok(new)
    }

    /// The event with each record it carries rewritten by `each`, or `None`
    /// when it carries no payout, collection or order.
    pub(super) fn event(bytes: &[u8], each: Each<'_>) -> Result<Option<Vec<u8>>, EngineError> {
        let head = length::<EventHead>(bytes, "an event")?;
        let (_, _, _, _, variant) = postcard::from_bytes::<EventHead>(&bytes[..head])
            .map_err(|e| EngineError::Corrupt(format!("an event does not decode: {e}")))?;
        let records: &[Record] = match variant {
            3 => &[Record::Payout],
            4 => &[Record::Collection],
            5 => &[Record::Order],
            6 => &[Record::Order, Record::Payout],
            _ => return Ok(None),
        };
        let mut out = bytes[..head].to_vec();
        let mut at = head;
        for record in records {
            let (new, used) = each(*record, &bytes[at..])?;
            out.extend_from_slice(&new);
            at = at.saturating_add(used);
        }
        out.extend_from_slice(&bytes[at..]);
        Ok(Some(out))
    }
}

/// Records as formats 3 and 4 wrote them, as tuples: postcard encodes a struct and
/// a tuple of the same fields alike, and a unit enum as its index (a u32).
mod v3 {
    use serde::de::DeserializeOwned;

    use crate::error::EngineError;

    pub(super) type Splice = fn(&[u8]) -> Result<Vec<u8>, EngineError>;

    /// code, account number, address, tag, recipient id.
    type Destination = (String, Option<String>, Option<String>, Option<String>, Option<String>);
    /// A payout up to its destination: id, organization, status, source
    /// account, source currency and amount, destination.
    type PayoutHead = (String, String, u32, String, String, i128, Destination);
    /// An order up to its destination: id, organization, status, method,
    /// currency, amount, chain, destination.
    type OrderHead = (String, String, u32, String, String, i128, Option<String>, Destination);
    /// at, kind, title, detail.
    type TimelineEntry = (i64, String, String, String);
    /// The rest of an order: destination currency, deposit instructions,
    /// required confirmations, received amount, payout id, external
    /// reference, metadata, status message, timeline, expiry, creation,
    /// update.
    type OrderTail = (
        String,
        String,
        u32,
        i128,
        Option<String>,
        String,
        String,
        String,
        Vec<TimelineEntry>,
        i64,
        i64,
        i64,
    );
    /// An event up to its payload's variant: sequence, id, organization, kind.
    type EventHead = (u64, String, String, String, u32);
    const EVENT_PAYOUT: u32 = 3;
    const EVENT_ORDER: u32 = 5;
    const EVENT_ORDER_WITH_PAYOUT: u32 = 6;

    /// How many bytes at the start of `bytes` a `T` takes.
    fn length<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<usize, EngineError> {
        let (_, rest) = postcard::take_from_bytes::<T>(bytes)
            .map_err(|e| EngineError::Corrupt(format!("{what} does not decode as format 3 wrote it: {e}")))?;
        Ok(bytes.len().saturating_sub(rest.len()))
    }

    /// `bytes` with a 0 (a `None`) inserted at each of the ascending `offsets`.
    fn insert_none(bytes: &[u8], offsets: &[usize]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len().saturating_add(offsets.len()));
        let mut from = 0;
        for &at in offsets {
            out.extend_from_slice(&bytes[from..at]);
            out.push(0);
            from = at;
        }
        out.extend_from_slice(&bytes[from..]);
        out
    }

    pub(super) fn payout(bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
        Ok(insert_none(bytes, &[length::<PayoutHead>(bytes, "a payout")?]))
    }

    pub(super) fn order(bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
        Ok(insert_none(bytes, &[length::<OrderHead>(bytes, "an order")?]))
    }

    /// The event rewritten, or `None` when it carries no destination.
    pub(super) fn event(bytes: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        let payload = length::<EventHead>(bytes, "an event")?;
        let (_, _, _, _, variant) = postcard::from_bytes::<EventHead>(&bytes[..payload])
            .map_err(|e| EngineError::Corrupt(format!("an event does not decode: {e}")))?;
        let rest = &bytes[payload..];
        let offsets = match variant {
            EVENT_PAYOUT => vec![payload.saturating_add(length::<PayoutHead>(rest, "an event's payout")?)],
            EVENT_ORDER => vec![payload.saturating_add(length::<OrderHead>(rest, "an event's order")?)],
            EVENT_ORDER_WITH_PAYOUT => {
                let order = length::<(OrderHead, OrderTail)>(rest, "an event's order")?;
                let payout = length::<PayoutHead>(&rest[order..], "an event's payout")?;
                let head = length::<OrderHead>(rest, "an event's order")?;
                vec![payload.saturating_add(head), payload.saturating_add(order).saturating_add(payout)]
            }
            _ => return Ok(None),
        };
        Ok(Some(insert_none(bytes, &offsets)))
    }
}

/// The upgrade path of a ledger database (`live.redb`, `sandbox.redb`)
/// whose collections have no groups (a ledger outside a node).
pub const LEDGER_STEPS: Steps = [
    stamp_only,
    jobs_hold_kinds,
    stamp_only,
    stamp_only,
    destinations_hold_bank_codes,
    records_leave_documents,
    balances_index_their_changes,
    stamp_only,
    payout_events_hold_marks,
    balance_changes_link_back,
    transfers_name_their_entries,
    stamp_only,
    journal_entries_leave_the_previous_hash,
    journal_entries_name_accounts_by_number,
    transfers_are_found_by_their_numbers,
    accounts_hold_their_balance_heads,
    journal_entries_hash_at_marks,
    payouts_store_their_own_lines,
    stamp_only,
    keys_hold_name_numbers,
    stamp_only,
    stamp_only,
    idempotency_entries_keep_half_their_fingerprints,
    stamp_only,
    stamp_only,
    idempotency_entries_are_keyed_by_digests,
    stamp_only,
    stamp_only,
    stamp_only,
    balance_changes_move_into_their_entries,
];

/// What a file's stamp says before any upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A new file, with nothing in it yet.
    New,
    /// A file written by this format version.
    Version(u32),
}

/// The message for a file written by a newer format than this binary's.
pub fn newer_message(path: &Path, stored: u32) -> String {
    format!(
        "{} was written by Sika storage format version {stored}, but this binary reads format versions up to {FORMAT_VERSION}: run a Sika release at least as new as the one that wrote it",
        path.display()
    )
}

/// Reads the stamp of an open redb file and refuses a newer format. A file
/// with no stamp is new if it has no table at all, and format 0 otherwise.
pub fn check(db: &impl ReadableDatabase, path: &Path) -> Result<Found, EngineError> {
    let txn = db.begin_read()?;
    let stamped = match txn.open_table(FORMAT) {
        Ok(table) => table.get(STAMP_KEY)?.map(|v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let found = match stamped {
        Some(version) => Found::Version(version),
        None if txn.list_tables()?.next().is_none() => Found::New,
        None => Found::Version(0),
    };
    if let Found::Version(stored) = found
        && stored > FORMAT_VERSION
    {
        return Err(EngineError::Storage(newer_message(path, stored)));
    }
    Ok(found)
}

/// Brings an open redb file to `FORMAT_VERSION`, given what `check` found
/// when it was opened (before the caller created its tables or replayed its
/// log): stamps a new file, or runs the steps from its version on, each in
/// its own synced commit with the stamp it reaches, so a crash part-way
/// resumes from the last step done.
pub fn upgrade(db: &redb::Database, path: &Path, found: Found, steps: &Steps) -> Result<(), EngineError> {
    let from = match found {
        Found::New => return write_stamp(db, FORMAT_VERSION, stamp_only),
        Found::Version(version) => version,
    };
    assert!(from <= FORMAT_VERSION, "check refuses a newer format");
    for version in from..FORMAT_VERSION {
        let step = steps[version as usize];
        // Below FORMAT_VERSION, so the next version fits.
        let next = version.saturating_add(1);
        write_stamp(db, next, step).map_err(|e| {
            EngineError::Storage(format!(
                "cannot upgrade {} from format version {version} to {next}: {e}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// `check` then `upgrade`, for a file whose tables the caller creates only
/// after this.
pub fn open(db: &redb::Database, path: &Path, steps: &Steps) -> Result<Found, EngineError> {
    let found = check(db, path)?;
    upgrade(db, path, found, steps)?;
    Ok(found)
}

fn write_stamp(db: &redb::Database, version: u32, step: Step) -> Result<(), EngineError> {
    let txn = db.begin_write()?;
    step(&txn)?;
    {
        let mut table = txn.open_table(FORMAT)?;
        let previous = table.get(STAMP_KEY)?.map(|v| v.value());
        assert!(previous.is_none_or(|p| p < version), "a format stamp only increases");
        table.insert(STAMP_KEY, version)?;
    }
    txn.commit()?;
    Ok(())
}

/// Writes `version` as a file's stamp whatever it held, as a future release
/// would.
#[cfg(test)]
fn force_stamp(db: &redb::Database, version: u32) -> Result<(), EngineError> {
    let txn = db.begin_write()?;
    txn.open_table(FORMAT)?.insert(STAMP_KEY, version)?;
    txn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> redb::Database {
        redb::Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap()
    }

    const DATA: TableDefinition<&str, u32> = TableDefinition::new("data");

    /// How these tests word a fact when they lay a ledger out as format 5
    /// (the server's wording is `sika_server::timeline_words`): a line
    /// format 5 stored keeps its words, any other names its fact.
    fn test_words(fact: &crate::timeline::Fact) -> [String; 3] {
        match fact {
            crate::timeline::Fact::Legacy { kind, title, detail } => {
                [kind.clone(), title.clone(), detail.clone()]
            }
            other => ["test".into(), format!("{other:?}"), "worded by the test".into()],
        }
    }

    /// A timeline as format 6 keeps it after the upgrade: each line in the
    /// words format 5 stored (`test_words`).
    fn worded(timeline: &mut [crate::records::TimelineEntry]) {
        for entry in timeline {
            let [kind, title, detail] = test_words(&entry.fact);
            entry.fact = crate::timeline::Fact::Legacy { kind, title, detail };
        }
    }

    /// `worded` for the timelines an event carries.
    fn worded_event(event: &mut crate::records::EventRecord) {
        use crate::records::EventPayload;
        match &mut event.payload {
            EventPayload::Payout(p) => worded(&mut p.timeline),
            EventPayload::Collection(c) => worded(&mut c.timeline),
            EventPayload::Order(o) => worded(&mut o.timeline),
            EventPayload::OrderWithPayout(o, p) => {
                worded(&mut o.timeline);
                worded(&mut p.timeline);
            }
            _ => {}
        }
    }

    #[test]
    fn a_new_file_is_stamped_with_this_version() {
        let db = memory();
        assert_eq!(open(&db, Path::new("x"), &LEDGER_STEPS).unwrap(), Found::New);
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(FORMAT_VERSION));
    }

    #[test]
    fn a_file_with_tables_and_no_stamp_is_format_0_and_is_upgraded_step_by_step() {
        let db = memory();
        let txn = db.begin_write().unwrap();
        txn.open_table(DATA).unwrap().insert("a", 1).unwrap();
        txn.commit().unwrap();
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(0));
        fn mark(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
            txn.open_table(DATA)?.insert("upgraded", 1)?;
            Ok(())
        }
        let steps: Steps = [mark; FORMAT_VERSION as usize];
        assert_eq!(open(&db, Path::new("x"), &steps).unwrap(), Found::Version(0));
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(FORMAT_VERSION));
        let txn = db.begin_read().unwrap();
        assert!(txn.open_table(DATA).unwrap().get("upgraded").unwrap().is_some());
        // A second open runs no step again.
        drop(txn);
        fn refuse(_: &redb::WriteTransaction) -> Result<(), EngineError> {
            Err(EngineError::Storage("ran twice".into()))
        }
        open(&db, Path::new("x"), &[refuse; FORMAT_VERSION as usize]).unwrap();
    }

    #[test]
    fn a_newer_format_is_refused_naming_both_versions() {
        let db = memory();
        force_stamp(&db, FORMAT_VERSION + 7).unwrap();
        let error = open(&db, Path::new("/data/live.redb"), &LEDGER_STEPS).unwrap_err().to_string();
        assert!(error.contains("/data/live.redb"), "{error}");
        assert!(error.contains(&format!("version {}", FORMAT_VERSION + 7)), "{error}");
        assert!(error.contains(&format!("up to {FORMAT_VERSION}")), "{error}");
    }

    /// A job as format 1 wrote it: the whole command.
    #[derive(serde::Serialize)]
    struct CommandJob {
        id: String,
        due_at: TimestampMs,
        command: Command,
    }

    fn format_1(job: &Job) -> Vec<u8> {
        encode(&CommandJob {
            id: job.id.clone(),
            due_at: job.due_at,
            command: Command::from(job.kind.clone()),
        })
    }

    fn settle() -> crate::records::Step {
        crate::records::Step::Settle { success: true, message: "delivered".into() }
    }

    #[test]
    fn format_2_rewrites_each_job_with_its_kind_and_nothing_else() {
        let jobs = [
            JobKind::AdvancePayout { payout_id: "pay_1".into(), step: settle() },
            JobKind::AdvanceCollection { collection_id: "col_1".into(), step: settle() },
            JobKind::ExpireOrder { order_id: "ord_1".into() },
        ]
        .map(|kind| Job { id: "job_1".into(), due_at: 1_700_000_000_000, kind });
        let db = memory();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            for (n, job) in jobs.iter().enumerate() {
                table
                    .insert(keys::job(job.due_at, &n.to_string()).as_slice(), format_1(job).as_slice())
                    .unwrap();
            }
            table.insert(keys::meta("other").as_slice(), [1u8].as_slice()).unwrap();
        }
        jobs_hold_kinds(&txn).unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        for (n, job) in jobs.iter().enumerate() {
            let (old, new) = (format_1(job), encode(job));
            assert!(decode::<Job>(&old).is_err(), "format 2 cannot read a format 1 job");
            let stored = table.get(keys::job(job.due_at, &n.to_string()).as_slice()).unwrap().unwrap();
            assert_eq!(stored.value(), new.as_slice());
            // Only the variant index (one byte each way) differs.
            let differ = old.iter().zip(&new).filter(|(a, b)| a != b).count();
            assert_eq!((old.len(), differ), (new.len(), 1), "{old:?} {new:?}");
        }
        assert_eq!(table.get(keys::meta("other").as_slice()).unwrap().unwrap().value(), [1u8].as_slice());
    }

    #[test]
    fn format_1_jobs_are_the_bytes_format_1_wrote() {
        // Written out, so a change to `Command`'s layout (which this step
        // decodes with, and idempotency fingerprints hash) fails here.
        let job = Job {
            id: "job_1".into(),
            due_at: 1_700_000_000_000,
            kind: JobKind::ExpireOrder { order_id: "ord_1".into() },
        };
        let format_1 = [
            5, b'j', b'o', b'b', b'_', b'1', 128, 160, 171, 254, 249, 98, 12, 5, b'o', b'r', b'd', b'_', b'1',
        ];
        assert_eq!(self::format_1(&job), format_1);
        assert_eq!(encode(&job)[12], 2, "format 2 writes the kind's index instead");
    }

    #[test]
    fn a_stored_job_no_release_could_have_written_stops_the_upgrade() {
        let db = memory();
        let txn = db.begin_write().unwrap();
        let job = CommandJob { id: "job_x".into(), due_at: 5, command: Command::RunJob { key: Vec::new() } };
        txn.open_table(RECORDS)
            .unwrap()
            .insert(keys::job(5, "x").as_slice(), encode(&job).as_slice())
            .unwrap();
        let error = jobs_hold_kinds(&txn).unwrap_err().to_string();
        assert!(error.contains("job job_x holds a command no job runs"), "{error}");
    }

    /// A payout, a collection and an order of org_1, each of which
    /// schedules a job (the rail's outcome, the order's deadline).
    fn commands_that_schedule_jobs() -> [Command; 3] {
        use crate::movements::{NewCollection, NewPayout, ScheduledStep};
        use crate::orders::NewOrder;
        let schedule = vec![ScheduledStep { after_ms: 1, step: settle() }];
        let payout = NewPayout {
            organization: "org_1".into(),
            from_currency: "USD".into(),
            from_amount: 1_000,
            to: Default::default(),
            to_currency: "USD".into(),
            to_amount: 1_000,
            fee_amount: 10,
            rate: "1".into(),
            narration: String::new(),
            metadata: "{}".into(),
            external_reference: "p1".into(),
            api_key_id: None,
            cap: None,
            rail: "test".into(),
            rail_note: String::new(),
            schedule: schedule.clone(),
            request_fingerprint: [1; 32],
            order_id: None,
        };
        let collection = NewCollection {
            organization: "org_1".into(),
            currency: "USD".into(),
            amount: 500,
            code: "test".into(),
            account_number: "1".into(),
            metadata: "{}".into(),
            external_reference: "c1".into(),
            rail: "test".into(),
            rail_note: String::new(),
            payer: None,
            schedule,
            request_fingerprint: [2; 32],
            id: None,
            attach: Vec::new(),
            group: None,
        };
        let order = NewOrder {
            organization: "org_1".into(),
            from_method: "test".into(),
            from_currency: "USD".into(),
            from_amount: 100,
            from_chain: None,
            to: Default::default(),
            to_currency: "USD".into(),
            deposit_instructions: "{}".into(),
            required_confirmations: 0,
            external_reference: "o1".into(),
            metadata: "{}".into(),
            expires_at: 1,
            request_fingerprint: [3; 32],
        };
        [
            Command::CreatePayout(Box::new(payout)),
            Command::CreateCollection(Box::new(collection)),
            Command::CreateOrder(Box::new(order)),
        ]
    }

    /// Writes every job of a closed ledger file as format 1 did, and stamps
    /// the file format 1.
    fn store_jobs_as_format_1(path: &Path) {
        let db = redb::Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            let start = keys::space(Space::Job);
            let jobs: Vec<(Vec<u8>, Job)> = table
                .range(start.as_slice()..prefix_end(&start).as_slice())
                .unwrap()
                .map(|entry| entry.unwrap())
                .map(|(key, value)| (key.value().to_vec(), decode(value.value()).unwrap()))
                .collect();
            assert_eq!(jobs.len(), 3);
            for (key, job) in jobs {
                table.insert(key.as_slice(), format_1(&job).as_slice()).unwrap();
            }
            format28::store_idempotency_resources_by_id(&mut table).unwrap();
            format26::store_event_lists_as_ids(&mut table).unwrap();
            format25::store_idempotency_by_reference(&mut table).unwrap();
            format15::store_heads_apart(&mut table).unwrap();
            format17::store_payouts_whole(&mut table).unwrap();
            format22::store_fingerprints_whole(&mut table).unwrap();
            format23::store_transfer_refs_whole(&mut table).unwrap();
            format19::store_names_as_text(&mut table).unwrap();
            assert!(
                format5::store_as_format_5(&mut table, &test_words).unwrap() >= 3,
                "a payout, a collection and an order"
            );
            assert!(bank_codes::store_as_format_3(&mut table) >= 3, "a payout, an order and their events");
            assert!(format12::store_journal_with_previous_hashes(&mut table).unwrap() >= 1);
        }
        txn.open_table(FORMAT).unwrap().insert(STAMP_KEY, 1).unwrap();
        txn.commit().unwrap();
    }

    mod bank_codes {
        use super::super::*;
        use crate::records::{
            Destination, EventPayload, EventRecord, MovementStatus, OrderRecord, OrderStatus, PayoutRecord,
            TimelineEntry,
        };
        use crate::timeline::Fact;

        fn timeline() -> Vec<TimelineEntry> {
            let entry = |title: &str| {
                let fact = Fact::Legacy {
                    kind: "state".into(),
                    title: title.into(),
                    detail: format!("{title}, in detail"),
                };
                TimelineEntry::new(1_700_000_000_000, fact)
            };
            vec![entry("Created"), entry("Funds held")]
        }

        fn destination() -> Destination {
            Destination {
                code: "bank_ng".into(),
                account_number: Some("0123456789".into()),
                address: None,
                tag: Some("memo".into()),
                recipient_id: Some("rcp_1".into()),
                bank_code: None,
            }
        }

        fn payout(id: &str) -> PayoutRecord {
            PayoutRecord {
                id: id.into(),
                organization: "org_1".into(),
                status: MovementStatus::Failed,
                from_account: "NGN0001".into(),
                from_currency: "NGN".into(),
                from_amount: -1_234_567_890_123,
                to: destination(),
                to_currency: "NGN".into(),
                to_amount: 1_000,
                fee_amount: 25,
                rate: "1".into(),
                narration: "rent".into(),
                external_reference: "p1".into(),
                metadata: "{}".into(),
                status_message: "refused".into(),
                hold_ids: vec![7, 8],
                timeline: timeline(),
                rail: "flutterwave".into(),
                api_key_id: Some("key_1".into()),
                order_id: None,
                created_at: 1,
                updated_at: 2,
                completed_at: Some(3),
            }
        }

        fn order() -> OrderRecord {
            OrderRecord {
                id: "ord_1".into(),
                organization: "org_1".into(),
                status: OrderStatus::ProcessingPayout,
                from_method: "crypto".into(),
                from_currency: "USDC".into(),
                from_amount: 20_000_000,
                from_chain: Some("base".into()),
                to: destination(),
                to_currency: "NGN".into(),
                deposit_instructions: "{}".into(),
                required_confirmations: 3,
                received_amount: 20_000_000,
                payout_id: Some("pay_ngn_1".into()),
                external_reference: "o1".into(),
                metadata: "{}".into(),
                status_message: "paying out".into(),
                timeline: timeline(),
                expires_at: 9,
                created_at: 1,
                updated_at: 2,
            }
        }

        /// A timeline as format 3 wrote it: English lines.
        fn old_timeline(timeline: &[TimelineEntry]) -> Vec<(i64, &str, &str, &str)> {
            fn line(e: &TimelineEntry) -> (i64, &str, &str, &str) {
                match &e.fact {
                    Fact::Legacy { kind, title, detail } => {
                        (e.at, kind.as_str(), title.as_str(), detail.as_str())
                    }
                    other => panic!("format 3 stored words, not {other:?}"),
                }
            }
            timeline.iter().map(line).collect()
        }

        /// A record as format 5 left it, as format 6 reads it.
        fn as_format_6(record: super::super::v5::Record, bytes: &[u8]) -> Vec<u8> {
            super::super::v5::whole(record, bytes, super::super::v5::legacy).unwrap()
        }

        /// A destination as format 3 wrote it: five fields, no bank code.
        fn old_destination(d: &Destination) -> Vec<u8> {
            encode(&(&d.code, &d.account_number, &d.address, &d.tag, &d.recipient_id))
        }

        /// A payout as format 3 wrote it, written out field by field
        /// (independently of the step's own shapes).
        fn format_3_payout(p: &PayoutRecord) -> Vec<u8> {
            let head = (&p.id, &p.organization, p.status, &p.from_account, &p.from_currency, p.from_amount);
            let tail = (
                (&p.to_currency, p.to_amount, p.fee_amount, &p.rate, &p.narration, &p.external_reference),
                (
                    &p.metadata,
                    &p.status_message,
                    &p.hold_ids,
                    old_timeline(&p.timeline),
                    &p.rail,
                    &p.api_key_id,
                ),
                (&p.order_id, p.created_at, p.updated_at, p.completed_at),
            );
            [encode(&head), old_destination(&p.to), encode(&tail)].concat()
        }

        fn format_3_order(o: &OrderRecord) -> Vec<u8> {
            let head = (
                &o.id,
                &o.organization,
                o.status,
                &o.from_method,
                &o.from_currency,
                o.from_amount,
                &o.from_chain,
            );
            let tail = (
                (&o.to_currency, &o.deposit_instructions, o.required_confirmations, o.received_amount),
                (
                    &o.payout_id,
                    &o.external_reference,
                    &o.metadata,
                    &o.status_message,
                    old_timeline(&o.timeline),
                ),
                (o.expires_at, o.created_at, o.updated_at),
            );
            [encode(&head), old_destination(&o.to), encode(&tail)].concat()
        }

        fn event(seq: u64, payload: EventPayload) -> EventRecord {
            EventRecord {
                seq,
                id: format!("evt_{seq}"),
                organization: "org_1".into(),
                kind: "payout.failed".into(),
                payload,
                created_at: 1_700_000_000_123,
            }
        }

        /// An event as format 3 wrote it, its payload's variant given.
        fn format_3_event(e: &EventRecord, variant: u32, payload: &[Vec<u8>]) -> Vec<u8> {
            let head = encode(&(e.seq, &e.id, &e.organization, &e.kind, variant));
            [vec![head], payload.to_vec(), vec![encode(&e.created_at)]].concat().concat()
        }

        #[test]
        fn each_record_gains_exactly_a_none_where_its_destination_ends() {
            let (p, o) = (payout("pay_ngn_1"), order());
            assert!(decode::<PayoutRecord>(&format_3_payout(&p)).is_err(), "format 4 cannot read format 3");
            use super::super::v5::Record;
            let payout5 = v3::payout(&format_3_payout(&p)).unwrap();
            assert_eq!(as_format_6(Record::Payout, &payout5), encode(&p));
            assert_eq!(as_format_6(Record::Order, &v3::order(&format_3_order(&o)).unwrap()), encode(&o));

            let cases = [
                (event(1, EventPayload::Payout(p.clone())), 3, vec![format_3_payout(&p)]),
                (event(2, EventPayload::Order(o.clone())), 5, vec![format_3_order(&o)]),
                (
                    event(3, EventPayload::OrderWithPayout(o.clone(), p.clone())),
                    6,
                    vec![format_3_order(&o), format_3_payout(&p)],
                ),
            ];
            for (record, variant, payload) in cases {
                let old = format_3_event(&record, variant, &payload);
                let format_5 = v3::event(&old).unwrap().unwrap();
                let each =
                    |record, bytes: &[u8]| super::super::v5::retime(record, bytes, super::super::v5::legacy);
                assert_eq!(
                    super::super::v5::event(&format_5, &each).unwrap(),
                    Some(encode(&record)),
                    "{record:?}"
                );
            }
            let test = event(4, EventPayload::WebhookTest { endpoint_id: "we_1".into() });
            assert_eq!(v3::event(&encode(&test)).unwrap(), None, "an event with no destination is left");
            let error = v3::payout(&[1, 2, 3]).unwrap_err().to_string();
            assert!(error.contains("does not decode as format 3 wrote it"), "{error}");
        }

        /// code, account number, address, tag, recipient id, bank code.
        type Destination5 =
            (String, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);

        /// The format 5 record at the start of `bytes` (and what follows it)
        /// as format 3 wrote it: its destination, which ends where a `T`
        /// does, without its bank code (a `None`, the one byte 0).
        fn without_bank_code<T: serde::de::DeserializeOwned>(
            bytes: &[u8],
            bank_code: fn(&T) -> bool,
        ) -> Vec<u8> {
            let (head, rest) = postcard::take_from_bytes::<T>(bytes).unwrap();
            assert!(!bank_code(&head), "format 3 had no bank code to keep");
            let end = bytes.len() - rest.len();
            assert_eq!(bytes[end - 1], 0);
            [&bytes[..end - 1], &bytes[end..]].concat()
        }

        fn payout_bytes_as_format_3(bytes: &[u8]) -> Vec<u8> {
            type Head = (String, String, u32, String, String, i128, Destination5);
            without_bank_code::<Head>(bytes, |head| head.6.5.is_some())
        }

        fn order_bytes_as_format_3(bytes: &[u8]) -> Vec<u8> {
            type Head = (String, String, u32, String, String, i128, Option<String>, Destination5);
            without_bank_code::<Head>(bytes, |head| head.7.5.is_some())
        }

        /// A format 5 event as format 3 wrote it, if it carries a payout or
        /// an order (its payload's variants 3, 5 and 6).
        fn event_bytes_as_format_3(bytes: &[u8]) -> Option<Vec<u8>> {
            let (head, rest) =
                postcard::take_from_bytes::<(u64, String, String, String, u32)>(bytes).unwrap();
            let payload = &bytes[bytes.len() - rest.len()..];
            let old = match head.4 {
                3 => payout_bytes_as_format_3(payload),
                5 => order_bytes_as_format_3(payload),
                6 => {
                    let same = |line: super::super::v5::Line| line;
                    let (_, order) =
                        super::super::v5::retime(super::super::v5::Record::Order, payload, same).unwrap();
                    [order_bytes_as_format_3(&payload[..order]), payout_bytes_as_format_3(&payload[order..])]
                        .concat()
                }
                _ => return None,
            };
            Some([&bytes[..bytes.len() - rest.len()], old.as_slice()].concat())
        }

        /// Writes every payout, order and event in `table` as format 3 did;
        /// returns how many records it rewrote.
        pub(in super::super) fn store_as_format_3(table: &mut redb::Table<&[u8], &[u8]>) -> usize {
            let mut rewritten = Vec::new();
            for space in [
                format5::documents_prefix("payouts"),
                format5::documents_prefix("orders"),
                keys::space(Space::Event),
            ] {
                for entry in table.range(space.as_slice()..prefix_end(&space).as_slice()).unwrap() {
                    let (key, value) = entry.unwrap();
                    let key = key.value().to_vec();
                    let old = if key.starts_with(&format5::documents_prefix("payouts")) {
                        Some(payout_bytes_as_format_3(value.value()))
                    } else if key.starts_with(&format5::documents_prefix("orders")) {
                        Some(order_bytes_as_format_3(value.value()))
                    } else {
                        event_bytes_as_format_3(value.value())
                    };
                    rewritten.extend(old.map(|old| (key, old)));
                }
            }
            for (key, value) in &rewritten {
                table.insert(key.as_slice(), value.as_slice()).unwrap();
            }
            rewritten.len()
        }

        #[test]
        fn the_step_rewrites_every_payout_order_and_event_and_nothing_else() {
            let db = redb::Database::builder()
                .create_with_backend(redb::backends::InMemoryBackend::new())
                .unwrap();
            // More payouts than one batch holds, so the step walks on.
            let count = REWRITE_BATCH_MAX + 7;
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(RECORDS).unwrap();
                for n in 0..count {
                    let p = payout(&format!("pay_ngn_{n:06}"));
                    table
                        .insert(
                            format5::document("payouts", &p.id).as_slice(),
                            format_3_payout(&p).as_slice(),
                        )
                        .unwrap();
                }
                table
                    .insert(
                        format5::document("orders", "ord_1").as_slice(),
                        format_3_order(&order()).as_slice(),
                    )
                    .unwrap();
                let e = event(1, EventPayload::OrderWithPayout(order(), payout("pay_ngn_1")));
                let old =
                    format_3_event(&e, 6, &[format_3_order(&order()), format_3_payout(&payout("pay_ngn_1"))]);
                table.insert(keys::event(1).as_slice(), old.as_slice()).unwrap();
                table
                    .insert(format5::document("recipients", "rcp_1").as_slice(), [9u8, 9].as_slice())
                    .unwrap();
            }
            destinations_hold_bank_codes(&txn).unwrap();
            let table = txn.open_table(RECORDS).unwrap();
            for n in 0..count {
                let id = format!("pay_ngn_{n:06}");
                let stored = table.get(format5::document("payouts", &id).as_slice()).unwrap().unwrap();
                let stored = as_format_6(super::super::v5::Record::Payout, stored.value());
                assert_eq!(decode::<PayoutRecord>(&stored).unwrap(), payout(&id));
            }
            let stored = table.get(format5::document("orders", "ord_1").as_slice()).unwrap().unwrap();
            let stored = as_format_6(super::super::v5::Record::Order, stored.value());
            assert_eq!(decode::<OrderRecord>(&stored).unwrap(), order());
            let stored = table.get(keys::event(1).as_slice()).unwrap().unwrap();
            let each =
                |record, bytes: &[u8]| super::super::v5::retime(record, bytes, super::super::v5::legacy);
            let stored = super::super::v5::event(stored.value(), &each).unwrap().unwrap();
            let read: EventRecord = decode(&stored).unwrap();
            assert_eq!(read.payload, EventPayload::OrderWithPayout(order(), payout("pay_ngn_1")));
            let other = table.get(format5::document("recipients", "rcp_1").as_slice()).unwrap().unwrap();
            assert_eq!(other.value(), [9u8, 9].as_slice(), "another collection is untouched");
        }
    }

    /// A ledger file written by format 1 with a payout, a collection and an
    /// order waiting on their jobs opens upgraded, and the jobs run.
    #[test]
    fn a_format_1_ledgers_jobs_run_after_the_upgrade() {
        use crate::{Engine, EngineConfig, MovementStatus, OrderStatus, Outcome};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sandbox.redb");
        let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
        let deposit = Command::Deposit {
            organization: "org_1".into(),
            currency: "USD".into(),
            amount: 10_000,
            external_reference: None,
        };
        engine.execute_blocking(deposit).unwrap();
        let ids: Vec<String> = commands_that_schedule_jobs()
            .into_iter()
            .map(|command| match engine.execute_blocking(command).unwrap().outcome {
                Outcome::Payout(p) => p.id,
                Outcome::Collection(c) => c.id,
                Outcome::Order(o) => o.id,
                other => panic!("{other:?}"),
            })
            .collect();
        engine.shutdown();
        drop(engine);
        store_jobs_as_format_1(&path);

        let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
        let due = engine.read().unwrap().due_jobs(i64::MAX, 10).unwrap();
        assert_eq!(due.len(), 3);
        for key in due {
            engine.execute_blocking(Command::RunJob { key }).unwrap();
        }
        let snapshot = engine.read().unwrap();
        assert_eq!(
            snapshot.payout(&crate::resource_id::PayoutId::named(&ids[0])).unwrap().unwrap().status,
            MovementStatus::Completed
        );
        assert_eq!(
            snapshot.collection(&crate::resource_id::CollectionId::named(&ids[1])).unwrap().unwrap().status,
            MovementStatus::Completed
        );
        assert_eq!(
            snapshot.order(&crate::resource_id::OrderId::named(&ids[2])).unwrap().unwrap().status,
            OrderStatus::Expired
        );
        assert!(snapshot.due_jobs(i64::MAX, 10).unwrap().is_empty(), "each job ran once");
        drop(snapshot);
        engine.shutdown();
        drop(engine);
        let db = redb::Database::open(&path).unwrap();
        assert_eq!(check(&db, &path).unwrap(), Found::Version(FORMAT_VERSION));
    }

    /// Format 4 counts the groups a format 3 ledger's collections were in
    /// exactly as the live path would have: a ledger whose collections
    /// settled with their groups, stripped of the groups and tallies format
    /// 3 did not have, is given back the same tallies.
    #[test]
    #[expect(clippy::too_many_lines)]
    fn format_4_tallies_the_completed_collections_of_each_group_as_they_completed() {
        use crate::movements::{NewCollection, ScheduledStep};
        use crate::{Engine, EngineConfig, Outcome};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sandbox.redb");
        let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
        let fixed = CollectionGroup { id: "pl_fixed".into(), target_minor: Some(1_000) };
        let open = CollectionGroup { id: "pl_open".into(), target_minor: None };
        let plan = [
            (&fixed, 600, true),
            (&fixed, 300, false),
            (&fixed, 500, true),
            (&fixed, 200, true),
            (&open, 700, true),
        ];
        let mut members = Vec::new();
        for (n, (group, amount, success)) in plan.into_iter().enumerate() {
            let new = NewCollection {
                organization: "org_1".into(),
                currency: "GHS".into(),
                amount,
                code: "test".into(),
                account_number: "1".into(),
                metadata: "{}".into(),
                external_reference: format!("c{n}"),
                rail: "test".into(),
                rail_note: String::new(),
                payer: None,
                schedule: vec![ScheduledStep {
                    after_ms: 0,
                    step: crate::records::Step::Settle { success, message: String::new() },
                }],
                request_fingerprint: [u8::try_from(n).unwrap(); 32],
                id: None,
                attach: Vec::new(),
                group: Some(group.clone()),
            };
            let Outcome::Collection(c) =
                engine.execute_blocking(Command::CreateCollection(Box::new(new))).unwrap().outcome
            else {
                panic!("a collection");
            };
            members.push((c.id, group.clone()));
            for key in engine.read().unwrap().due_jobs(i64::MAX, 10).unwrap() {
                engine.execute_blocking(Command::RunJob { key }).unwrap();
            }
            // Completions in one millisecond have no order an upgrade could
            // recover (ids are not ordered within a millisecond): keep them
            // apart, as payments by separate payers are.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let live = |engine: &Engine| {
            let snapshot = engine.read().unwrap();
            [snapshot.collection_tally("pl_fixed").unwrap(), snapshot.collection_tally("pl_open").unwrap()]
        };
        let counted = live(&engine);
        let fixed_tally = counted[0].clone().expect("counted");
        assert_eq!((fixed_tally.received_minor, fixed_tally.completed_count), (1_300, 3));
        assert_eq!(
            fixed_tally.covering.map(|a| a.amount_minor),
            Some(500),
            "the second payment covered 1,000"
        );
        engine.shutdown();
        drop(engine);

        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            for (collection, group) in &members {
                table.remove(keys::collection_group(collection).as_slice()).unwrap();
                table.remove(keys::collection_tally(&group.id).as_slice()).unwrap();
            }
            format5::store_as_format_5(&mut table, &test_words).unwrap();
        }
        collections_join_groups(&txn, &members).unwrap();
        records_leave_documents(&txn).unwrap();
        txn.commit().unwrap();
        drop(db);
        let engine = Engine::open(EngineConfig::new(Some(path))).unwrap();
        assert_eq!(live(&engine), counted);
        let snapshot = engine.read().unwrap();
        assert_eq!(snapshot.collection_group(&members[1].0).unwrap().as_ref(), Some(&fixed));
        drop(snapshot);
        engine.shutdown();
    }

    /// Format 6 moves the engine's records out of the documents and builds
    /// the index of open movements: a ledger laid out as format 5 (a
    /// settled payout, a pending collection, an order, spend-cap usage,
    /// events, a document of the API layer's) opens with each record read
    /// as before, the API layer's document untouched, only the pending
    /// collection in the index, and the books verifying.
    #[test]
    #[expect(clippy::too_many_lines)]
    fn format_6_moves_the_engines_records_and_indexes_the_open_movements() {
        use crate::movements::CapCheck;
        use crate::{Engine, EngineConfig, Outcome, Step};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sandbox.redb");
        let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
        let deposit = Command::Deposit {
            organization: "org_1".into(),
            currency: "USD".into(),
            amount: 10_000,
            external_reference: None,
        };
        engine.execute_blocking(deposit).unwrap();
        let mut commands = commands_that_schedule_jobs();
        if let Command::CreatePayout(new) = &mut commands[0] {
            new.cap = Some(CapCheck {
                key_id: "key_1".into(),
                amount_usd_cents: 1_000,
                per_transaction_usd_cents: None,
                daily_usd_cents: Some(5_000),
                monthly_usd_cents: None,
                day: "2026-11-27".into(),
                month: "2026-11".into(),
            });
        }
        let ids: Vec<String> = commands
            .into_iter()
            .map(|command| match engine.execute_blocking(command).unwrap().outcome {
                Outcome::Payout(p) => p.id,
                Outcome::Collection(c) => c.id,
                Outcome::Order(o) => o.id,
                other => panic!("{other:?}"),
            })
            .collect();
        let settle = Step::Settle { success: true, message: "delivered".into() };
        engine
            .execute_blocking(Command::AdvancePayout {
                payout_id: crate::resource_id::PayoutId::from(ids[0].clone()),
                step: settle,
            })
            .unwrap();
        let document = Command::PutDocument {
            collection: "recipients".into(),
            id: "rcp_1".into(),
            body: vec![1, 2, 3],
            list: None,
        };
        engine.execute_blocking(document).unwrap();
        let read = |engine: &Engine| {
            let snapshot = engine.read().unwrap();
            let events = snapshot.events_after(0, 100).unwrap();
            let by_id: Vec<_> = events.iter().map(|e| snapshot.event(&e.id).unwrap()).collect();
            (
                (
                    snapshot.payout(&crate::resource_id::PayoutId::named(&ids[0])).unwrap(),
                    snapshot.collection(&crate::resource_id::CollectionId::named(&ids[1])).unwrap(),
                    snapshot.order(&crate::resource_id::OrderId::named(&ids[2])).unwrap(),
                ),
                (
                    snapshot.cap_usage("key_1/2026-11-27").unwrap(),
                    snapshot.document("recipients", "rcp_1").unwrap(),
                ),
                (events, by_id, snapshot.open_movements("test").unwrap()),
            )
        };
        let before = read(&engine);
        assert!(before.0.0.is_some() && before.0.1.is_some() && before.0.2.is_some());
        assert_eq!(before.1.0, Some(1_000));
        assert!(before.2.0.len() >= 3, "events: {:?}", before.2.0);
        let open: Vec<_> = before.2.2.iter().map(|o| (o.kind, o.id.clone())).collect();
        assert_eq!(
            open,
            vec![(MovementKind::Collection, ids[1].clone())],
            "only the collection is still pending"
        );
        engine.shutdown();
        drop(engine);

        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            format28::store_idempotency_resources_by_id(&mut table).unwrap();
            format26::store_event_lists_as_ids(&mut table).unwrap();
            format25::store_idempotency_by_reference(&mut table).unwrap();
            format15::store_heads_apart(&mut table).unwrap();
            format17::store_payouts_whole(&mut table).unwrap();
            format22::store_fingerprints_whole(&mut table).unwrap();
            format23::store_transfer_refs_whole(&mut table).unwrap();
            format19::store_names_as_text(&mut table).unwrap();
            assert!(
                format5::store_as_format_5(&mut table, &test_words).unwrap() >= 3 + 1 + 3,
                "records, usage, event ids"
            );
            let stored = table.get(format5::document("payouts", &ids[0]).as_slice()).unwrap().is_some();
            assert!(stored, "format 5 kept payouts among the documents");
            assert!(format12::store_journal_with_previous_hashes(&mut table).unwrap() >= 1);
        }
        txn.open_table(FORMAT).unwrap().insert(STAMP_KEY, 5).unwrap();
        txn.commit().unwrap();
        drop(db);

        let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
        let mut expected = before.clone();
        let typed = |timeline: &[crate::records::TimelineEntry]| {
            timeline.iter().all(|e| !matches!(e.fact, crate::timeline::Fact::Legacy { .. }))
        };
        let ((payout, collection, order), _, (events, by_id, _)) = &mut expected;
        assert!(typed(&payout.as_ref().unwrap().timeline), "format 6 writes typed facts");
        for timeline in [
            &mut payout.as_mut().unwrap().timeline,
            &mut collection.as_mut().unwrap().timeline,
            &mut order.as_mut().unwrap().timeline,
        ] {
            worded(timeline);
        }
        events.iter_mut().chain(by_id.iter_mut().flatten()).for_each(worded_event);
        let after = read(&engine);
        assert_eq!(
            after.0.0.as_ref().unwrap().timeline,
            expected.0.0.as_ref().unwrap().timeline,
            "a payout's format 5 lines are kept as legacy facts, word for word"
        );
        assert_eq!(
            after, expected,
            "every record reads as before the upgrade, its timeline as format 5 worded it"
        );
        engine.shutdown();
        drop(engine);
        let db = redb::Database::open(&path).unwrap();
        assert_eq!(check(&db, &path).unwrap(), Found::Version(FORMAT_VERSION));
        {
            let txn = db.begin_read().unwrap();
            let table = txn.open_table(RECORDS).unwrap();
            let documents = keys::space(Space::Document);
            for entry in table.range(documents.as_slice()..prefix_end(&documents).as_slice()).unwrap() {
                let key = entry.unwrap().0.value().to_vec();
                let collection = key[1..].split(|b| *b == 0).next().unwrap();
                assert!(
                    !crate::storage::is_engine_owned(std::str::from_utf8(collection).unwrap()),
                    "{} is left among the documents",
                    String::from_utf8_lossy(&key)
                );
            }
        }
        let report = crate::verify::verify(&db).unwrap();
        assert!(report.is_consistent(), "{:?}", report.problems);
    }

    /// Format 18's step writes each format 17 payout in the payout space's
    /// encoding, reading back the same; a payout stored under another id's
    /// key, or with bytes after it, stops the upgrade.
    #[test]
    fn format_18_stores_payouts_without_their_ids_and_their_own_lines_as_marks() {
        let payout = |id: &str| {
            let mut payout = crate::stored_payout::sandbox_payout();
            payout.id = id.into();
            payout
        };
        let upgrade = |key: Vec<u8>, value: Vec<u8>| {
            let db = memory();
            let txn = db.begin_write().unwrap();
            txn.open_table(RECORDS).unwrap().insert(key.as_slice(), value.as_slice()).unwrap();
            let done = payouts_store_their_own_lines(&txn);
            let stored = read_raw(&txn, &key);
            done.map(|()| stored)
        };
        let (first, second) = (payout("pay_ghs_1"), payout("pay_ghs_2"));
        let stored = upgrade(keys::payout(&first.id), encode(&first)).unwrap();
        assert_eq!(stored, crate::stored_payout::encode(&first));
        assert_eq!(crate::stored_payout::decode(&keys::payout(&first.id), &stored).unwrap(), first);
        assert!(stored.len() < encode(&first).len() - first.id.len());

        let misplaced = upgrade(keys::payout(&second.id), encode(&first));
        assert!(matches!(misplaced, Err(EngineError::Corrupt(_))), "{misplaced:?}");
        let longer = upgrade(keys::payout(&first.id), [encode(&first), vec![0]].concat());
        assert!(matches!(longer, Err(EngineError::Corrupt(_))), "{longer:?}");
    }

    /// Format 19's list and idempotency keys in `space`, spelling two names.
    fn spelled(space: Space, first: &str, second: &str) -> crate::storage::Key {
        crate::storage::Key::new(space).str(first).str(second)
    }

    fn laid_out(records: &[(Vec<u8>, Vec<u8>)]) -> redb::Database {
        let db = memory();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            for (key, value) in records {
                table.insert(key.as_slice(), value.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
        db
    }

    fn upgraded_to_20(db: &redb::Database) -> Result<(), EngineError> {
        let txn = db.begin_write().unwrap();
        keys_hold_name_numbers(&txn)?;
        txn.commit().unwrap();
        Ok(())
    }

    #[test]
    fn format_20_keys_lists_and_references_by_their_names_numbers() {
        use crate::storage::{Counter, NameNumber, names_by_number, scan};
        let format_19: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (spelled(Space::ListIndex, "org_a", "payouts").u64(7).bytes(), encode(&"pay_1")),
            (spelled(Space::ListIndex, "org_b", "events").u64(8).bytes(), encode(&"evt_2")),
            (spelled(Space::ListIndex, "org_a", "events").u64(256).bytes(), encode(&"evt_1")),
            // A reference may hold a zero byte; the key ends with one.
            (spelled(Space::Idempotency, "org_a", "payout").str("ref\0x").bytes(), vec![1, 2, 3]),
            (spelled(Space::Idempotency, "_ledger", "transfers").str("t-1").bytes(), vec![4]),
            // An empty name, which Sika never gave, sorts where new keys go.
            (spelled(Space::ListIndex, "", "payouts").u64(9).bytes(), encode(&"pay_0")),
        ];
        let db = laid_out(&format_19);
        upgraded_to_20(&db).unwrap();
        let txn = db.begin_write().unwrap();
        let mut table = txn.open_table(RECORDS).unwrap();
        // Numbered in key order: lists first, then references.
        let expected = ["", "payouts", "org_a", "events", "org_b", "_ledger", "transfers", "payout"];
        let names: Vec<(u32, String)> =
            names_by_number(&table).unwrap().into_iter().map(|(n, text)| (n.0, text)).collect();
        assert_eq!(names, (1..).zip(expected.map(String::from)).collect::<Vec<_>>());
        let counter: u64 = read(&table, &keys::meta(Counter::NameNumber.name())).unwrap().unwrap();
        assert_eq!(counter, 8);
        let n = NameNumber;
        let numbered = [
            (keys::list_entry(n(3), n(2), 7), encode(&"pay_1")),
            (keys::list_entry(n(5), n(4), 8), encode(&"evt_2")),
            (keys::list_entry(n(3), n(4), 256), encode(&"evt_1")),
            (keys::idempotency_by_reference(n(3), n(8), "ref\0x"), vec![1, 2, 3]),
            (keys::idempotency_by_reference(n(6), n(7), "t-1"), vec![4]),
            (keys::list_entry(n(1), n(2), 9), encode(&"pay_0")),
        ];
        let mut stored = scan(&table, Space::ListIndex).unwrap();
        stored.extend(scan(&table, Space::Idempotency).unwrap());
        let mut expected = numbered.to_vec();
        expected.sort();
        stored.sort();
        assert_eq!(stored, expected, "each value under its numbered key, and nothing else");
        assert!(numbered.iter().all(|(key, _)| key.len() <= 17), "{numbered:?}");

        // The layout of older formats gives format 19's records back.
        assert_eq!(format19::store_names_as_text(&mut table).unwrap(), 6);
        let mut back: Vec<_> = table
            .iter()
            .unwrap()
            .map(|e| e.unwrap())
            .map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
            .collect();
        back.sort();
        let mut was = format_19.clone();
        was.sort();
        assert_eq!(back, was);
    }

    #[test]
    fn format_20_refuses_a_key_format_19_did_not_write() {
        use crate::storage::{Key, NameNumber};
        let refused = |records: Vec<(Vec<u8>, Vec<u8>)>| {
            let result = upgraded_to_20(&laid_out(&records));
            assert!(matches!(result, Err(EngineError::Corrupt(_))), "{records:?}: {result:?}");
        };
        refused(vec![(spelled(Space::ListIndex, "org_a", "payouts").bytes(), vec![0])]);
        refused(vec![(spelled(Space::ListIndex, "org_a", "payouts").u64(1).str("x").bytes(), vec![0])]);
        refused(vec![(Key::new(Space::ListIndex).str("org_a").bytes(), vec![0])]);
        refused(vec![(spelled(Space::Idempotency, "org_a", "payout").bytes(), vec![0])]);
        refused(vec![(
            [&spelled(Space::Idempotency, "org_a", "payout").bytes()[..], b"ref"].concat(),
            vec![0],
        )]);
        let named = (keys::name("org_a"), encode(&NameNumber(1)));
        refused(vec![(spelled(Space::Idempotency, "org_a", "payout").str("r").bytes(), vec![0]), named]);
        let not_text =
            [&[Space::ListIndex as u8, b'o', 0xFF, 0][..], b"payouts\0", &1u64.to_be_bytes()].concat();
        refused(vec![(not_text, vec![0])]);
    }

    fn read_raw(txn: &redb::WriteTransaction, key: &[u8]) -> Vec<u8> {
        txn.open_table(RECORDS).unwrap().get(key).unwrap().unwrap().value().to_vec()
    }
}
