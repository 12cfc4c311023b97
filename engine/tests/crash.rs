//! Crash safety: a child process (this test binary, running `crash_child`)
//! hammers a database file from 8 threads and prints `ACK <kind> <id>` for
//! every command the engine acknowledged; the parent kills it with SIGKILL
//! at a random moment, reopens the file, and checks that the ledger verifies
//! and that everything acknowledged is there. All cycles share one file.
//!
//! Besides transfers, deposits and quotes the workers make payouts (an
//! amount and a fee held, counted in a spend cap), collections and orders,
//! settle them directly or through their scheduled jobs, which a worker
//! runs as the node's scheduler does. After every restart each hold is
//! settled at most once and as its movement's status says, and the cap's
//! usage is the sum of its payouts. Payouts are reversed too (a rail's
//! `Step::Reverse`, sent directly or scheduled): a reversed payout's amount
//! came back exactly once, whatever the kills interrupted.
//!
//! `SIKA_CRASH_CYCLES` sets the number of cycles (default 50).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rand::Rng;
use sika_engine::movements::{CapCheck, MovementStatus, NewCollection, NewPayout, ScheduledStep};
use sika_engine::orders::{NewOrder, OrderFunds, OrderStatus};
use sika_engine::{
    AccountRef, Command, Destination, Engine, EngineConfig, Outcome, PendingState, QuoteAmount, QuoteStatus,
    Snapshot, Step, TransferKind, TransferSpec,
};

const CHILD_DB: &str = "SIKA_CRASH_CHILD_DB";
const ORGS: [&str; 3] = ["crash_a", "crash_b", "crash_c"];
const CURRENCIES: [&str; 2] = ["USD", "GHS"];
const WORKERS: usize = 8;
/// The child gives up on its own after this long, in case the parent is gone.
const CHILD_LIFETIME: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------
// The child.

/// Prints one acknowledgement line while holding stdout's lock, and flushes
/// it. If the parent is gone, there is no one to report to: exit.
fn ack(line: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ACK {line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(2);
    }
}

fn org(reference: &str) -> AccountRef {
    AccountRef::Organization(reference.to_string())
}

#[expect(clippy::too_many_lines)]
fn worker(engine: Engine, worker: usize) {
    let mut rng = rand::rng();
    let mut holds: Vec<u64> = Vec::new();
    let mut movements = WorkerMovements::default();
    for n in 0u64.. {
        let from = rng.random_range(0..ORGS.len());
        let to = (from + rng.random_range(1..ORGS.len())) % ORGS.len();
        let (from, to) = (ORGS[from], ORGS[to]);
        let currency = CURRENCIES[rng.random_range(0..CURRENCIES.len())];
        let amount: i128 = rng.random_range(1..5_000);
        match rng.random_range(0..18) {
            12..=17 => movement(&engine, &mut rng, &mut movements, worker, n),
            0..=2 => {
                let reference =
                    rng.random_bool(0.5).then(|| format!("dep-{}-{worker}-{n}", std::process::id()));
                let command = Command::Deposit {
                    organization: from.into(),
                    currency: currency.into(),
                    amount: amount * 10,
                    external_reference: reference.clone(),
                };
                if let Ok(applied) = engine.execute_blocking(command)
                    && let Outcome::Deposit(d) = applied.outcome
                {
                    match reference {
                        Some(r) => {
                            ack(format_args!("deposit {} {from} {currency} {} {r}", d.id, amount * 10))
                        }
                        None => ack(format_args!("deposit {}", d.id)),
                    }
                }
            }
            3..=4 => {
                let spec = |amount| TransferSpec::Posted {
                    debit: org(from),
                    credit: org(to),
                    currency: currency.into(),
                    amount,
                    memo: "crash".into(),
                };
                // Sometimes a linked pair.
                let transfers = if rng.random_bool(0.3) {
                    vec![spec(amount), spec(amount / 2 + 1)]
                } else {
                    vec![spec(amount)]
                };
                let command = Command::Transfers { transfers, external_reference: None };
                if let Ok(applied) = engine.execute_blocking(command)
                    && let Outcome::Transfers(records) = applied.outcome
                {
                    for t in records {
                        ack(format_args!("transfer {}", t.id));
                    }
                }
            }
            5..=6 => {
                let command = Command::Transfers {
                    transfers: vec![TransferSpec::Pending {
                        debit: org(from),
                        credit: org(to),
                        currency: currency.into(),
                        amount,
                        memo: "crash hold".into(),
                    }],
                    external_reference: None,
                };
                if let Ok(applied) = engine.execute_blocking(command)
                    && let Outcome::Transfers(records) = applied.outcome
                {
                    holds.push(records[0].id);
                    ack(format_args!("hold {}", records[0].id));
                }
            }
            7..=8 => {
                let Some(hold) = holds.pop() else { continue };
                let post = rng.random_bool(0.5);
                let spec = if post {
                    TransferSpec::PostPending { pending_id: hold }
                } else {
                    TransferSpec::VoidPending { pending_id: hold }
                };
                let command = Command::Transfers { transfers: vec![spec], external_reference: None };
                if let Ok(applied) = engine.execute_blocking(command)
                    && let Outcome::Transfers(records) = applied.outcome
                {
                    ack(format_args!("{} {}", if post { "post" } else { "void" }, records[0].id));
                }
            }
            _ => {
                let other = CURRENCIES.iter().find(|c| **c != currency).expect("two currencies");
                let command = Command::CreateQuote {
                    organization: from.into(),
                    from_currency: currency.into(),
                    to_currency: (*other).into(),
                    amount: QuoteAmount::From(amount),
                };
                let Ok(Outcome::Quote(quote)) = engine.execute_blocking(command).map(|a| a.outcome) else {
                    continue;
                };
                ack(format_args!("quote {}", quote.id));
                let command = Command::ExecuteQuote {
                    organization: from.into(),
                    quote_id: quote.id,
                    external_reference: rng
                        .random_bool(0.5)
                        .then(|| format!("conv-{}-{worker}-{n}", std::process::id())),
                };
                if let Ok(Outcome::Conversion(c)) = engine.execute_blocking(command).map(|a| a.outcome) {
                    ack(format_args!("conversion {}", c.id));
                }
            }
        }
    }
}

/// The spend cap the workers' payouts count in, with one window each.
const CAP_KEY: &str = "key_crash";
const CAP_WINDOWS: [&str; 2] = ["crash-day", "crash-month"];
/// Movements read at a time when listing them all.
const LIST_CHUNK: usize = 1_000;

/// What one worker made and may act on again.
#[derive(Default)]
struct WorkerMovements {
    payouts: Vec<String>,
    collections: Vec<String>,
    orders: Vec<String>,
}

fn destination() -> Destination {
    Destination {
        code: "crash_rail".into(),
        account_number: Some("1".into()),
        address: None,
        tag: None,
        recipient_id: None,
        bank_code: None,
    }
}

/// Up to two rail reports, due within 300 ms: a crash often falls between
/// a movement and its jobs, which the next cycle's child then runs.
fn rail_steps(rng: &mut impl Rng) -> Vec<ScheduledStep> {
    (0..rng.random_range(0..3))
        .map(|_| ScheduledStep {
            after_ms: rng.random_range(0..300),
            step: Step::Settle { success: rng.random_bool(0.7), message: "rail".into() },
        })
        .collect()
}

/// A payout's rail reports, and sometimes a reversal after them.
fn payout_steps(rng: &mut impl Rng) -> Vec<ScheduledStep> {
    let mut steps = rail_steps(rng);
    if rng.random_bool(0.3) {
        let step = Step::Reverse { message: "rail reversal".into() };
        steps.push(ScheduledStep { after_ms: rng.random_range(300..600), step });
    }
    steps
}

fn new_payout(
    rng: &mut impl Rng,
    organization: &str,
    currency: &str,
    amount: i128,
    capped: bool,
) -> NewPayout {
    NewPayout {
        organization: organization.into(),
        from_currency: currency.into(),
        from_amount: amount,
        to: destination(),
        to_currency: currency.into(),
        to_amount: amount,
        fee_amount: rng.random_range(0..20),
        rate: "1".into(),
        narration: String::new(),
        metadata: "{}".into(),
        external_reference: format!("pay-{}-{}", std::process::id(), rng.random::<u64>()),
        api_key_id: capped.then(|| CAP_KEY.to_string()),
        cap: capped.then(|| CapCheck {
            key_id: CAP_KEY.into(),
            amount_usd_cents: amount,
            per_transaction_usd_cents: Some(4_000),
            daily_usd_cents: None,
            monthly_usd_cents: None,
            day: CAP_WINDOWS[0].into(),
            month: CAP_WINDOWS[1].into(),
        }),
        rail: "crash".into(),
        rail_note: "sent".into(),
        schedule: payout_steps(rng),
        request_fingerprint: rng.random(),
        order_id: None,
    }
}

fn status_name(status: MovementStatus) -> &'static str {
    match status {
        MovementStatus::Pending => "pending",
        MovementStatus::Completed => "completed",
        MovementStatus::Failed => "failed",
        MovementStatus::Reversed => "reversed",
    }
}

fn new_collection(
    rng: &mut impl Rng,
    organization: &str,
    currency: &str,
    amount: i128,
    (worker, n): (usize, u64),
) -> NewCollection {
    NewCollection {
        organization: organization.into(),
        currency: currency.into(),
        amount,
        code: "crash_rail".into(),
        account_number: "1".into(),
        metadata: "{}".into(),
        external_reference: format!("col-{}-{worker}-{n}", std::process::id()),
        rail: "crash".into(),
        rail_note: "prompt".into(),
        payer: None,
        schedule: rail_steps(rng),
        request_fingerprint: rng.random(),
        id: None,
        attach: Vec::new(),
        group: None,
    }
}

fn new_order(
    engine: &Engine,
    rng: &mut impl Rng,
    organization: &str,
    currency: &str,
    amount: i128,
    (worker, n): (usize, u64),
) -> NewOrder {
    NewOrder {
        organization: organization.into(),
        from_method: "mobile_money".into(),
        from_currency: currency.into(),
        from_amount: amount,
        from_chain: None,
        to: destination(),
        to_currency: currency.into(),
        deposit_instructions: "send".into(),
        required_confirmations: 0,
        external_reference: format!("ord-{}-{worker}-{n}", std::process::id()),
        metadata: "{}".into(),
        expires_at: engine.now_ms() + rng.random_range(0..2_000),
        request_fingerprint: rng.random(),
    }
}

/// Acknowledges a movement's new state, and remembers what `mine` may act on.
fn ack_movement(outcome: &Outcome, mine: &mut WorkerMovements) {
    match outcome {
        Outcome::Payout(p) => {
            mine.payouts.push(p.id.clone());
            ack(format_args!("payout {} {}", p.id, status_name(p.status)));
        }
        Outcome::Collection(c) => {
            mine.collections.push(c.id.clone());
            ack(format_args!("collection {} {}", c.id, status_name(c.status)));
        }
        Outcome::Order(o) => {
            if o.status == OrderStatus::AwaitingFunds {
                mine.orders.push(o.id.clone());
            }
            ack(format_args!("order {} {:?}", o.id, o.status));
        }
        _ => {}
    }
}

fn settle(rng: &mut impl Rng) -> Step {
    Step::Settle { success: rng.random_bool(0.5), message: "reported".into() }
}

/// One payout, collection or order step, acknowledged as `<kind> <id> <status>`.
fn movement(engine: &Engine, rng: &mut impl Rng, mine: &mut WorkerMovements, worker: usize, n: u64) {
    let organization = ORGS[rng.random_range(0..ORGS.len())];
    let currency = CURRENCIES[rng.random_range(0..CURRENCIES.len())];
    let amount: i128 = rng.random_range(1..5_000);
    let command = match rng.random_range(0..8) {
        0..=1 => {
            let capped = rng.random_bool(0.7);
            Command::CreatePayout(Box::new(new_payout(rng, organization, currency, amount, capped)))
        }
        2 => match mine.payouts.get(rng.random_range(0..mine.payouts.len().max(1))) {
            Some(id) if rng.random_bool(0.3) => Command::AdvancePayout {
                payout_id: sika_engine::PayoutId::from(id.clone()),
                step: Step::Reverse { message: "reported reversal".into() },
            },
            Some(id) => Command::AdvancePayout {
                payout_id: sika_engine::PayoutId::from(id.clone()),
                step: settle(rng),
            },
            None => return,
        },
        3 => Command::CreateCollection(Box::new(new_collection(
            rng,
            organization,
            currency,
            amount,
            (worker, n),
        ))),
        4 => match mine.collections.get(rng.random_range(0..mine.collections.len().max(1))) {
            Some(id) => Command::AdvanceCollection {
                collection_id: sika_engine::CollectionId::from(id.clone()),
                step: settle(rng),
            },
            None => return,
        },
        5 => Command::CreateOrder(Box::new(new_order(
            engine,
            rng,
            organization,
            currency,
            amount,
            (worker, n),
        ))),
        6 => match mine.orders.pop() {
            Some(order_id) => {
                let order = engine.read().and_then(|s| s.order(&sika_engine::OrderId::named(&order_id)));
                let Ok(Some(order)) = order else { return };
                let payout = new_payout(rng, &order.organization, &order.from_currency, amount, false);
                Command::OrderFunds(Box::new(OrderFunds {
                    order_id,
                    amount: order.from_amount,
                    confirmations: 0,
                    payout: Some(payout),
                    payout_refusal: None,
                }))
            }
            None => return,
        },
        _ => return run_due_jobs(engine, mine),
    };
    if let Ok(applied) = engine.execute_blocking(command) {
        ack_movement(&applied.outcome, mine);
    }
}

/// What the node's scheduler does: runs the jobs due now, oldest first.
fn run_due_jobs(engine: &Engine, mine: &mut WorkerMovements) {
    let Ok(keys) = engine.read().and_then(|s| s.due_jobs(engine.now_ms(), 20)) else { return };
    for key in keys {
        match engine.execute_blocking(Command::RunJob { key }) {
            Ok(applied) if !applied.replayed => ack_movement(&applied.outcome, mine),
            _ => {}
        }
    }
}

/// Runs only as the child of `acknowledged_commands_survive_sigkill`.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_DB) else { return };
    thread::spawn(|| {
        thread::sleep(CHILD_LIFETIME);
        std::process::exit(3);
    });
    let engine =
        Engine::open(EngineConfig::new(Some(PathBuf::from(path)))).expect("the child opens the database");
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let engine = engine.clone();
            thread::spawn(move || worker(engine, w))
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
}

// ---------------------------------------------------------------------------
// The parent.

#[derive(Debug, Clone)]
struct Ack {
    kind: String,
    id: String,
    /// For deposits made with an externalReference: organization, currency,
    /// amount and reference, to submit again.
    rest: Vec<String>,
}

fn parse_ack(line: &str) -> Option<Ack> {
    // libtest may print "test crash_child ... " before the first line.
    let mut words = line[line.find("ACK ")?..].split_whitespace().skip(1);
    let kind = words.next()?.to_string();
    let id = words.next()?.to_string();
    Some(Ack { kind, id, rest: words.map(str::to_string).collect() })
}

/// Kills the child if the parent panics before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One cycle: start the child, let it work, kill it; returns what it acknowledged.
fn run_child(path: &Path) -> Vec<Ack> {
    let exe = std::env::current_exe().expect("current_exe");
    let child = std::process::Command::new(exe)
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the child");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().expect("piped stdout");
    let (sender, receiver) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match stdout.read_line(&mut line) {
                // A line cut short by the kill was never a complete acknowledgement.
                Ok(0) | Err(_) => break,
                Ok(_) if !line.ends_with('\n') => break,
                Ok(_) => {
                    if let Some(ack) = parse_ack(&line) {
                        let _ = sender.send(ack);
                    }
                }
            }
        }
    });
    let first = receiver.recv_timeout(Duration::from_secs(60)).expect("the child acknowledges a command");
    thread::sleep(Duration::from_millis(rand::rng().random_range(20..=150)));
    child.0.kill().expect("SIGKILL the child");
    let status = child.0.wait().expect("wait for the child");
    assert!(!status.success(), "the child was killed, not finished: {status:?}");
    reader.join().expect("reader");
    std::iter::once(first).chain(receiver.try_iter()).collect()
}

fn check_acks(engine: &Engine, acks: &[Ack]) {
    let snapshot = engine.read().expect("snapshot");
    let transfer = |id: &str| {
        let id: u64 = id.parse().expect("a transfer id");
        snapshot
            .transfer(id)
            .expect("read")
            .unwrap_or_else(|| panic!("acknowledged transfer {id} is missing"))
    };
    for ack in acks {
        match ack.kind.as_str() {
            "deposit" => {
                let d = snapshot.deposit(&ack.id).expect("read");
                let d = d.unwrap_or_else(|| panic!("acknowledged deposit {} is missing", ack.id));
                assert!(snapshot.transfer(d.transfer_id).expect("read").is_some(), "{d:?}");
            }
            "transfer" => assert_eq!(transfer(&ack.id).kind, TransferKind::Posted),
            "hold" => assert_eq!(transfer(&ack.id).kind, TransferKind::Pending),
            "post" | "void" => {
                let settlement = transfer(&ack.id);
                let (hold, state) = match settlement.kind {
                    TransferKind::PostPending(hold) if ack.kind == "post" => (hold, PendingState::Posted),
                    TransferKind::VoidPending(hold) if ack.kind == "void" => (hold, PendingState::Voided),
                    other => panic!("{} {} is a {other:?}", ack.kind, ack.id),
                };
                assert_eq!(transfer(&hold.to_string()).pending_state, Some(state), "hold {hold}");
            }
            "quote" => {
                assert!(
                    snapshot.quote(&ack.id).expect("read").is_some(),
                    "acknowledged quote {} is missing",
                    ack.id
                );
            }
            "conversion" => {
                let c = snapshot.conversion(&ack.id).expect("read");
                let c = c.unwrap_or_else(|| panic!("acknowledged conversion {} is missing", ack.id));
                let quote = snapshot.quote(&c.quote_id).expect("read").expect("the conversion's quote");
                assert_eq!(quote.status, QuoteStatus::Executed);
                assert_eq!(quote.conversion_id.as_deref(), Some(ack.id.as_str()));
                for id in &c.transfer_ids {
                    assert!(snapshot.transfer(*id).expect("read").is_some(), "transfer {id} of {}", c.id);
                }
            }
            "payout" | "collection" | "order" => check_movement_ack(&snapshot, ack),
            other => panic!("unknown acknowledgement {other}"),
        }
    }
}

/// Deposits made with an externalReference, sent again after the crash, are
/// replays of the acknowledged deposit.
fn resubmit_deposits(engine: &Engine, acks: &[Ack]) {
    let with_reference = acks.iter().filter(|a| a.kind == "deposit" && a.rest.len() == 4);
    for ack in with_reference.rev().take(5) {
        let command = Command::Deposit {
            organization: ack.rest[0].clone(),
            currency: ack.rest[1].clone(),
            amount: ack.rest[2].parse().expect("amount"),
            external_reference: Some(ack.rest[3].clone()),
        };
        let applied = engine.execute_blocking(command).expect("a retried deposit");
        assert!(applied.replayed, "a retry after the crash is a replay: {applied:?}");
        match applied.outcome {
            Outcome::Deposit(d) => assert_eq!(d.id, ack.id),
            other => panic!("{other:?}"),
        }
    }
}

/// An acknowledged payout, collection or order is there, in the state it
/// was acknowledged in or one it may have moved on to since.
fn check_movement_ack(snapshot: &Snapshot, ack: &Ack) {
    match ack.kind.as_str() {
        "payout" => {
            let payout = snapshot.payout(&sika_engine::PayoutId::named(&ack.id)).expect("read");
            let payout = payout.unwrap_or_else(|| panic!("acknowledged payout {} is missing", ack.id));
            check_movement_status(&ack.rest[0], status_name(payout.status), &ack.id);
        }
        "collection" => {
            let collection = snapshot.collection(&sika_engine::CollectionId::named(&ack.id)).expect("read");
            let collection =
                collection.unwrap_or_else(|| panic!("acknowledged collection {} is missing", ack.id));
            check_movement_status(&ack.rest[0], status_name(collection.status), &ack.id);
        }
        "order" => {
            let order = snapshot.order(&sika_engine::OrderId::named(&ack.id)).expect("read");
            let order = order.unwrap_or_else(|| panic!("acknowledged order {} is missing", ack.id));
            let acknowledged = ack.rest[0].as_str();
            let now = format!("{:?}", order.status);
            let moved_on = match acknowledged {
                "AwaitingFunds" => true,
                "ProcessingPayout" => matches!(now.as_str(), "Completed" | "Failed"),
                _ => false,
            };
            assert!(
                now == acknowledged || moved_on,
                "order {} was acknowledged {acknowledged}, is {now}",
                ack.id
            );
        }
        _ => unreachable!("a movement"),
    }
}

/// A movement acknowledged pending may have settled since, and one
/// acknowledged completed may have been reversed since; a failed or
/// reversed one stays as it was acknowledged.
fn check_movement_status(acknowledged: &str, now: &str, id: &str) {
    assert!(
        acknowledged == now || acknowledged == "pending" || (acknowledged, now) == ("completed", "reversed"),
        "{id} was acknowledged {acknowledged}, is {now}"
    );
}

/// Every id in an organization's list of `kind`, newest first.
fn listed(snapshot: &Snapshot, organization: &str, kind: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut before = None;
    loop {
        let page = snapshot.list(organization, kind, before, LIST_CHUNK).expect("list");
        before = page.last().map(|(position, _)| *position);
        let done = page.len() < LIST_CHUNK;
        ids.extend(page.into_iter().map(|(_, id)| id));
        if done {
            return ids;
        }
    }
}

/// Every hold is settled at most once, and each movement's holds are in
/// the state its status says: pending, all posted, or all voided.
fn check_holds(snapshot: &Snapshot) {
    let journal = snapshot.journal_length().expect("journal");
    let mut settlements: std::collections::HashMap<u64, Vec<PendingState>> = std::collections::HashMap::new();
    // Payout id -> how many transfers gave its amount back.
    let mut reversals: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for id in 1..=journal {
        let transfer =
            snapshot.transfer(id).expect("read").unwrap_or_else(|| panic!("transfer {id} is missing"));
        if let Some(payout) = transfer.memo.strip_prefix("payout ").and_then(|m| m.strip_suffix(" reversed"))
        {
            *reversals.entry(payout.to_string()).or_default() += 1;
        }
        match transfer.kind {
            TransferKind::PostPending(hold) => {
                settlements.entry(hold).or_default().push(PendingState::Posted)
            }
            TransferKind::VoidPending(hold) => {
                settlements.entry(hold).or_default().push(PendingState::Voided)
            }
            _ => {}
        }
    }
    for (hold, settled) in &settlements {
        assert_eq!(settled.len(), 1, "hold {hold} settled {settled:?}");
        let state = snapshot.transfer(*hold).expect("read").and_then(|t| t.pending_state);
        assert_eq!(state, Some(settled[0]), "hold {hold}");
    }
    let expected = |status: MovementStatus| match status {
        MovementStatus::Pending => PendingState::Pending,
        MovementStatus::Failed => PendingState::Voided,
        // A reversal leaves the payout's holds posted: it credits the
        // amount back with a transfer of its own.
        MovementStatus::Completed | MovementStatus::Reversed => PendingState::Posted,
    };
    let mut cap_sum = 0;
    for organization in ORGS {
        for id in listed(snapshot, organization, "payouts") {
            let payout =
                snapshot.payout(&sika_engine::PayoutId::named(&id)).expect("read").expect("a listed payout");
            for hold in &payout.hold_ids {
                let state = snapshot.transfer(*hold).expect("read").and_then(|t| t.pending_state);
                assert_eq!(state, Some(expected(payout.status)), "hold {hold} of {id}, {:?}", payout.status);
            }
            if payout.api_key_id.as_deref() == Some(CAP_KEY) {
                cap_sum += payout.from_amount;
            }
            let given_back = reversals.remove(&id).unwrap_or(0);
            let expected_back = u32::from(payout.status == MovementStatus::Reversed);
            assert_eq!(
                given_back, expected_back,
                "payout {id} is {:?}: its amount came back {given_back} times",
                payout.status
            );
        }
        for id in listed(snapshot, organization, "collections") {
            let collection = snapshot
                .collection(&sika_engine::CollectionId::named(&id))
                .expect("read")
                .expect("a listed collection");
            let state = snapshot.transfer(collection.hold_id).expect("read").and_then(|t| t.pending_state);
            assert_eq!(state, Some(expected(collection.status)), "the hold of {id}");
        }
    }
    assert!(reversals.is_empty(), "reversals of no listed payout: {reversals:?}");
    for window in CAP_WINDOWS {
        let usage = snapshot.cap_usage(&format!("{CAP_KEY}/{window}")).expect("read").unwrap_or(0);
        assert_eq!(usage, cap_sum, "cap usage in {window} is the sum of the capped payouts");
    }
}

fn reopen_and_check(path: &Path, acks: &[Ack], cycle: usize) -> Engine {
    let engine = Engine::open(EngineConfig::new(Some(path.to_path_buf())))
        .unwrap_or_else(|e| panic!("cycle {cycle}: reopening after SIGKILL failed: {e}"));
    let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "cycle {cycle}: {:?}", report.problems);
    check_acks(&engine, acks);
    check_holds(&engine.read().expect("snapshot"));
    engine
}

#[test]
fn acknowledged_commands_survive_sigkill() {
    let cycles: usize = std::env::var("SIKA_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.redb");
    let started = Instant::now();
    let mut all: Vec<Ack> = Vec::new();
    for cycle in 0..cycles {
        let acks = run_child(&path);
        let reopened = Instant::now();
        let engine = reopen_and_check(&path, &acks, cycle);
        resubmit_deposits(&engine, &acks);
        engine.shutdown();
        drop(engine);
        all.extend(acks);
        if (cycle + 1) % 50 == 0 {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            eprintln!(
                "crash: cycle {} of {cycles}, {} acknowledged, {:.1} MiB, reopen and verify {:.1?}, {:.1?} in all",
                cycle + 1,
                all.len(),
                size as f64 / (1024.0 * 1024.0),
                reopened.elapsed(),
                started.elapsed()
            );
        }
    }
    // Later crashes must not have lost anything acknowledged earlier.
    let engine = reopen_and_check(&path, &all, cycles);
    let journal = engine.read().expect("snapshot").journal_length().expect("journal");
    engine.shutdown();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut kinds: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for ack in &all {
        *kinds.entry(ack.kind.as_str()).or_default() += 1;
    }
    println!(
        "crash: {cycles} cycles, {} acknowledged commands {kinds:?}, {journal} journal entries, {:.1} MiB, {:.1?}",
        all.len(),
        size as f64 / (1024.0 * 1024.0),
        started.elapsed()
    );
}
