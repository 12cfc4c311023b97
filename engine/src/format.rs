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
//! alone. Every later change to a stored record adds a version here, its
//! step in each `Steps` list that the change touches (a no-op for the
//! others), and a case to the fixture test (`tests/blackbox/format_upgrade.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::Deserialize;

use crate::commands::Command;
use crate::error::EngineError;
use crate::records::{
    Arrival, CollectionGroup, CollectionRecord, Job, JobKind, MovementStatus, TallyRecord, TimestampMs,
};
use crate::storage::{RECORDS, Space, decode, encode, keys, prefix_end};

/// The format this binary writes.
pub const FORMAT_VERSION: u32 = 4;

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
/// could have counted it).
pub fn collections_join_groups(
    txn: &redb::WriteTransaction,
    members: &[(String, CollectionGroup)],
) -> Result<(), EngineError> {
    let mut table = txn.open_table(RECORDS)?;
    let mut completed: BTreeMap<String, (TallyRecord, Vec<CollectionRecord>)> = BTreeMap::new();
    for (collection_id, group) in members {
        let stored = table.get(keys::document("collections", collection_id).as_slice())?;
        let Some(collection) = stored.map(|v| decode::<CollectionRecord>(v.value())).transpose()? else {
            continue;
        };
        table.insert(keys::collection_group(collection_id).as_slice(), encode(group).as_slice())?;
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
        table.insert(keys::collection_tally(&group).as_slice(), encode(&tally).as_slice())?;
    }
    Ok(())
}

/// The upgrade path of a ledger database (`live.redb`, `sandbox.redb`)
/// whose collections have no groups (a ledger outside a node).
pub const LEDGER_STEPS: Steps = [stamp_only, jobs_hold_kinds, stamp_only, stamp_only];
/// The upgrade path of a request log (`<stack>-requests.redb`).
pub const REQUEST_LOG_STEPS: Steps = [stamp_only, stamp_only, stamp_only, stamp_only];

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
        [Command::CreatePayout(payout), Command::CreateCollection(collection), Command::CreateOrder(order)]
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
        }
        txn.open_table(FORMAT).unwrap().insert(STAMP_KEY, 1).unwrap();
        txn.commit().unwrap();
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
        assert_eq!(snapshot.payout(&ids[0]).unwrap().unwrap().status, MovementStatus::Completed);
        assert_eq!(snapshot.collection(&ids[1]).unwrap().unwrap().status, MovementStatus::Completed);
        assert_eq!(snapshot.order(&ids[2]).unwrap().unwrap().status, OrderStatus::Expired);
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
                engine.execute_blocking(Command::CreateCollection(new)).unwrap().outcome
            else {
                panic!("a collection");
            };
            members.push((c.id, group.clone()));
            for key in engine.read().unwrap().due_jobs(i64::MAX, 10).unwrap() {
                engine.execute_blocking(Command::RunJob { key }).unwrap();
            }
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
        }
        collections_join_groups(&txn, &members).unwrap();
        txn.commit().unwrap();
        drop(db);
        let engine = Engine::open(EngineConfig::new(Some(path))).unwrap();
        assert_eq!(live(&engine), counted);
        let snapshot = engine.read().unwrap();
        assert_eq!(snapshot.collection_group(&members[1].0).unwrap().as_ref(), Some(&fixed));
        drop(snapshot);
        engine.shutdown();
    }
}
