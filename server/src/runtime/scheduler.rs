//! The node's scheduler: runs each stack's due jobs (rail outcomes the
//! simulator promised, deadlines). Jobs live in the ledger database, so a
//! restart resumes them; running one removes it in the same transaction.
//!
//! Each poll reads the due jobs and when the next one is due
//! (`Snapshot::jobs_due_by`); until then the scheduler sleeps, and learns of
//! jobs scheduled meanwhile from the ledger's notices (`Effects::jobs_due`),
//! so an idle node does not wake every few milliseconds to find nothing.

use std::sync::Arc;
use std::time::Duration;

use sika_engine::{Command, Committed, Engine, TimestampMs};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::time::Instant;

use crate::domain::stack::Stack;

/// The least time between two polls: under load, the jobs that fell due
/// meanwhile run together.
const POLL_INTERVAL: Duration = Duration::from_millis(2);
/// The longest the scheduler goes without reading the stored jobs, whatever
/// it was told: a job written while it was not told (by the node that held
/// the PostgreSQL writer's lease before this one) runs within this.
const RECHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Jobs started per poll: small enough that a burst of settlements does not
/// make one long writer batch that payouts created meanwhile wait behind.
const JOBS_PER_POLL_MAX: usize = 64;
/// How long the scheduler waits while the ledger cannot write (a full
/// disk): the storage watch logs that, once per interval.
const STORAGE_BACKOFF: Duration = Duration::from_secs(1);

pub(crate) fn spawn(stack: Arc<Stack>) -> tokio::task::JoinHandle<()> {
    let mut notices = stack.engine.subscribe();
    tokio::spawn(async move {
        // At start, and after a poll that found a full page of due jobs,
        // the next poll comes at once.
        let mut at_once = true;
        // When the first job the last poll left is due, as it read it.
        let mut next: Option<TimestampMs> = None;
        let mut last_poll = Instant::now();
        loop {
            if !at_once {
                until_a_job_is_due(&stack.engine, &mut notices, last_poll, next).await;
            }
            last_poll = Instant::now();
            // Notices are sent once their batch is readable, so what was
            // told so far is in the read below; what is told after it waits
            // in `notices` for the next `until_a_job_is_due`.
            while let Ok(_) | Err(TryRecvError::Lagged(_)) = notices.try_recv() {}
            // After an error, look again once the poll interval has passed.
            (at_once, next) = (false, Some(TimestampMs::MIN));
            let due = match stack.engine.read().and_then(|s| s.jobs_due_by(stack.now_ms(), JOBS_PER_POLL_MAX))
            {
                Ok(due) => due,
                Err(sika_engine::EngineError::Unavailable) => return,
                Err(sika_engine::EngineError::Storage(_)) => {
                    tokio::time::sleep(STORAGE_BACKOFF).await;
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read due jobs");
                    continue;
                }
            };
            (at_once, next) = (due.keys.len() == JOBS_PER_POLL_MAX, due.next_due);
            if due.keys.is_empty() {
                continue;
            }
            // In due order, as one stream: a rail's note due before its
            // outcome must be applied before it, even when both are due now.
            let runs = due.keys.into_iter().map(|key| Command::RunJob { key }).collect();
            let mut storage_failed = false;
            for result in stack.engine.execute_in_order(runs).await {
                match result {
                    Err(sika_engine::EngineError::Unavailable) => return,
                    Err(sika_engine::EngineError::Storage(_)) => storage_failed = true,
                    Err(e) => tracing::error!(error = %e, "a scheduled job failed"),
                    Ok(_) => {}
                }
            }
            if storage_failed {
                // The jobs stay due and run once the ledger writes again.
                tokio::time::sleep(STORAGE_BACKOFF).await;
                (at_once, next) = (false, Some(TimestampMs::MIN));
            }
        }
    })
}

/// Returns once `next` (when the first job left by the last poll is due)
/// or a job told of since is due, or a notice was missed, or
/// `RECHECK_INTERVAL` passed; never sooner than `POLL_INTERVAL` after
/// `last_poll`.
async fn until_a_job_is_due(
    ledger: &Engine,
    notices: &mut broadcast::Receiver<Arc<Committed>>,
    last_poll: Instant,
    mut next: Option<TimestampMs>,
) {
    tokio::time::sleep_until(last_poll + POLL_INTERVAL).await;
    let recheck = last_poll + RECHECK_INTERVAL;
    loop {
        let now = ledger.now_ms();
        let until = match next {
            Some(due) if due <= now => return,
            Some(due) => (Instant::now() + Duration::from_millis(due.abs_diff(now))).min(recheck),
            None => recheck,
        };
        tokio::select! {
            () = tokio::time::sleep_until(until) => {
                if Instant::now() >= recheck {
                    return;
                }
            }
            notice = notices.recv() => match notice {
                Ok(notice) => {
                    if let Some(due) = notice.effects.jobs_due {
                        next = Some(next.map_or(due, |earliest| earliest.min(due)));
                    }
                }
                // A missed notice may have told of a job due now; a closed
                // ledger is found by the poll.
                Err(RecvError::Lagged(_) | RecvError::Closed) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use sika_engine::movements::{Destination, NewPayout, ScheduledStep};
    use sika_engine::{EngineConfig, Rail, Step};

    use super::*;

    async fn payout_settling_after(engine: &Engine, reference: &str, after_ms: i64) {
        let step = Step::Settle { success: true, message: String::new() };
        let payout = NewPayout {
            organization: "org_1".into(),
            from_currency: "USD".into(),
            from_amount: 100,
            to: Destination { code: "US_BANK".into(), ..Default::default() },
            to_currency: "USD".into(),
            to_amount: 100,
            fee_amount: 0,
            rate: "1".into(),
            narration: String::new(),
            metadata: "{}".into(),
            external_reference: reference.into(),
            api_key_id: None,
            cap: None,
            rail: Rail::SandboxSimulator.name().into(),
            rail_note: String::new(),
            schedule: vec![ScheduledStep { after_ms, step }],
            request_fingerprint: [reference.len() as u8; 32],
            order_id: None,
        };
        engine.execute(Command::CreatePayout(Box::new(payout))).await.unwrap();
    }

    /// An idle scheduler sleeps past its poll interval, is woken by a job
    /// scheduled meanwhile (long before its recheck), and sleeps until a
    /// stored job is due.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn it_sleeps_until_the_next_job_and_wakes_for_a_new_one() {
        let engine = Engine::open(EngineConfig::new(None)).unwrap();
        let deposit = Command::Deposit {
            organization: "org_1".into(),
            currency: "USD".into(),
            amount: 10_000,
            external_reference: None,
        };
        engine.execute(deposit).await.unwrap();
        let mut notices = engine.subscribe();

        // No job stored: nothing to wake for.
        let started = Instant::now();
        let polled = engine.read().unwrap().jobs_due_by(engine.now_ms(), JOBS_PER_POLL_MAX).unwrap();
        assert_eq!((polled.keys.len(), polled.next_due), (0, None));
        let waiting = tokio::spawn({
            let engine = engine.clone();
            async move { until_a_job_is_due(&engine, &mut notices, started, polled.next_due).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !waiting.is_finished(),
            "an idle scheduler is still asleep 100 times its poll interval later"
        );
        payout_settling_after(&engine, "p1", 0).await;
        let told = Instant::now();
        tokio::time::timeout(Duration::from_millis(600), waiting)
            .await
            .expect("a job due now wakes it well before its recheck")
            .unwrap();
        assert!(told.elapsed() < RECHECK_INTERVAL / 2);

        // A stored job due later: it sleeps until then.
        let due = engine.read().unwrap().due_jobs(i64::MAX, 10).unwrap();
        assert_eq!(due.len(), 1);
        engine.execute(Command::RunJob { key: due[0].clone() }).await.unwrap();
        payout_settling_after(&engine, "p2", 300).await;
        let mut notices = engine.subscribe();
        let started = Instant::now();
        let polled = engine.read().unwrap().jobs_due_by(engine.now_ms(), JOBS_PER_POLL_MAX).unwrap();
        assert!(polled.keys.is_empty() && polled.next_due.is_some(), "{polled:?}");
        until_a_job_is_due(&engine, &mut notices, started, polled.next_due).await;
        let slept = started.elapsed();
        assert!(slept >= Duration::from_millis(250), "woke after {slept:?}, before the job was due");
        assert!(slept < RECHECK_INTERVAL, "woke after {slept:?}");
        engine.shutdown();
    }
}
