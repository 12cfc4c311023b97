//! Issue 31.2: the engine tells its followers what each durable batch did
//! (`Engine::subscribe`), so after-commit effects follow commits rather
//! than each caller.

use std::sync::Arc;

use sika_engine::clock::ManualClock;
use sika_engine::movements::{Destination, NewPayout, ScheduledStep};
use sika_engine::records::Step;
use sika_engine::{
    Command, Committed, Engine, EngineConfig, EngineError, EventKind, MovementKind, MovementTouched, Rail,
};
use tokio::sync::broadcast::error::TryRecvError;

fn engine() -> Engine {
    let mut config = EngineConfig::new(None);
    config.clock = Arc::new(ManualClock::new(1_700_000_000_000));
    Engine::open(config).unwrap()
}

fn payout(reference: &str, amount: i128, rail: Rail) -> Command {
    Command::CreatePayout(Box::new(NewPayout {
        organization: "org_1".into(),
        from_currency: "USD".into(),
        from_amount: amount,
        to: Destination { code: "US_BANK".into(), ..Default::default() },
        to_currency: "USD".into(),
        to_amount: amount,
        fee_amount: 0,
        rate: "1".into(),
        narration: String::new(),
        metadata: "{}".into(),
        external_reference: reference.into(),
        api_key_id: None,
        cap: None,
        rail: rail.name().into(),
        rail_note: String::new(),
        schedule: Vec::new(),
        request_fingerprint: [reference.len() as u8; 32],
        order_id: None,
    }))
}

fn deposit(amount: i128) -> Command {
    Command::Deposit {
        organization: "org_1".into(),
        currency: "USD".into(),
        amount,
        external_reference: None,
    }
}

#[test]
fn each_durable_batch_tells_its_events_and_movements_and_a_refused_command_tells_nothing() {
    let engine = engine();
    let mut notices = engine.subscribe();
    engine.execute_blocking(deposit(10_000)).unwrap();
    let notice = next(&mut notices).expect("the deposit's batch is told");
    assert_eq!(notice.effects.events, vec![EventKind::AccountCredited]);
    assert!(notice.effects.movements.is_empty());
    // Told once readable: the epoch it names is published.
    assert!(engine.commit_epoch() >= notice.epoch);

    let applied = engine.execute_blocking(payout("p1", 2_500, Rail::Flutterwave)).unwrap();
    let sika_engine::Outcome::Payout(created) = applied.outcome else { panic!("a payout") };
    let notice = next(&mut notices).expect("the payout's batch is told");
    assert_eq!(
        notice.effects.movements,
        vec![MovementTouched {
            kind: MovementKind::Payout,
            id: created.id.clone(),
            rail: "flutterwave".into(),
            open: true
        }]
    );
    assert!(
        engine.read().unwrap().payout(&sika_engine::PayoutId::named(&created.id)).unwrap().is_some(),
        "readable when told"
    );

    // A replay changes nothing and a refusal commits nothing: neither is told.
    engine.execute_blocking(payout("p1", 2_500, Rail::Flutterwave)).unwrap();
    let refused = engine.execute_blocking(payout("p2", 1_000_000, Rail::Flutterwave));
    assert!(matches!(refused, Err(EngineError::InsufficientFunds { .. })), "{refused:?}");
    // The next notice is a later deposit's: nothing was told in between.
    engine.execute_blocking(deposit(1)).unwrap();
    let notice = next(&mut notices).expect("the second deposit's batch is told");
    assert_eq!(notice.effects.events, vec![EventKind::AccountCredited]);
    assert!(notice.effects.movements.is_empty());
    assert_eq!(notices.try_recv().unwrap_err(), TryRecvError::Empty);
    engine.shutdown();
}

#[test]
fn a_batch_that_schedules_jobs_tells_when_the_earliest_is_due() {
    let engine = engine();
    let mut notices = engine.subscribe();
    engine.execute_blocking(deposit(10_000)).unwrap();
    assert_eq!(
        next(&mut notices).expect("the deposit is told").effects.jobs_due,
        None,
        "a deposit schedules no job"
    );
    let Command::CreatePayout(mut new) = payout("p1", 2_500, Rail::SandboxSimulator) else { unreachable!() };
    let settle =
        |after_ms| ScheduledStep { after_ms, step: Step::Settle { success: true, message: String::new() } };
    let note = Step::Note { kind: "provider".into(), title: "sent".into(), detail: String::new() };
    new.schedule = vec![ScheduledStep { after_ms: 700, step: note }, settle(2_000)];
    engine.execute_blocking(Command::CreatePayout(new)).unwrap();
    let now = engine.now_ms();
    let notice = next(&mut notices).expect("the payout's batch is told");
    assert_eq!(notice.effects.jobs_due, Some(now + 700), "the earlier of its two steps");
    let stored = engine.read().unwrap().jobs_due_by(now, 10).unwrap();
    assert_eq!(stored.next_due, Some(now + 700), "and it is the stored one");
    engine.shutdown();
}

/// The next notice, waiting for it a while: the writer tells subscribers
/// after it acknowledges, so a caller can be answered first.
fn next(notices: &mut tokio::sync::broadcast::Receiver<Arc<Committed>>) -> Option<Arc<Committed>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match notices.try_recv() {
            Ok(notice) => return Some(notice),
            Err(TryRecvError::Empty) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
}
