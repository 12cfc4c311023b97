//! The reconciler: one task on the live stack while a provider is
//! configured. It runs `domain::rails::reconcile` for every movement the
//! provider has not settled: those the ledger committed open on its rail
//! (told by `runtime::effects`) or a notification made due, and those in
//! the ledger's index of open movements at start (a crash between storing
//! a payout and hearing the provider's answer leaves one) and every reading
//! of it after. A movement the provider has not finished is looked at again
//! after a backoff that doubles up to a ceiling; while the breaker is open
//! the provider is probed so routed methods come back when it recovers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sika_api::capabilities::MethodStatus;

use crate::domain::rails::{self, AsyncRail, Next};
use crate::domain::stack::Stack;

/// How often the reconciler wakes with nothing due (unscaled).
const POLL: Duration = Duration::from_secs(5);
/// The first backoff and its ceiling (unscaled).
const BACKOFF_FIRST: Duration = Duration::from_secs(2);
const BACKOFF_MAX: Duration = Duration::from_secs(600);
/// How often the ledger's index of open movements is read (unscaled).
const SCAN_EVERY: Duration = Duration::from_secs(60);
/// How often an open breaker probes the provider (unscaled).
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// `d` on the node's clock (`--time-scale`), never below `floor`.
fn scaled(d: Duration, scale: f64, floor: Duration) -> Duration {
    let scaled = d.as_secs_f64() * scale;
    if scaled.is_finite() && scaled > floor.as_secs_f64() { Duration::from_secs_f64(scaled) } else { floor }
}

fn backoff(attempts: u32, scale: f64) -> Duration {
    let first = scaled(BACKOFF_FIRST, scale, Duration::from_millis(100));
    let max = scaled(BACKOFF_MAX, scale, Duration::from_secs(1));
    first.checked_mul(1u32 << attempts.min(16)).map_or(max, |d| d.min(max))
}

pub(crate) fn spawn(stack: Arc<Stack>) {
    if stack.rails.flutterwave.is_some() {
        tokio::spawn(run(stack));
    }
}

async fn run(stack: Arc<Stack>) {
    let Some(rail) = stack.rails.flutterwave.as_ref() else { return };
    let scale = stack.config.time_scale;
    let poll = scaled(POLL, scale, Duration::from_millis(20));
    let scan_every = scaled(SCAN_EVERY, scale, Duration::from_secs(1));
    let probe_every = scaled(PROBE_EVERY, scale, Duration::from_millis(250));
    let mut scanned: Option<Instant> = None;
    let mut probed = Instant::now();
    loop {
        if scanned.is_none_or(|at| at.elapsed() >= scan_every) {
            match rails::open_movements(&stack.engine) {
                Ok(open) => open.into_iter().for_each(|(kind, id)| stack.rails.track(kind, id)),
                Err(e) => {
                    tracing::error!(error = %e.message, "cannot list the movements open at the provider")
                }
            }
            scanned = Some(Instant::now());
        }
        if stack.rails.health.status() != MethodStatus::Operational && probed.elapsed() >= probe_every {
            probed = Instant::now();
            match rail.probe().await {
                Ok(()) => stack.rails.health.answered(),
                Err(_) => stack.rails.health.failed(),
            }
        }
        let reconciling = rails::Deps { engine: &stack.engine, rails: &stack.rails };
        for (kind, id, attempts) in stack.rails.take_due(Instant::now()) {
            match rails::reconcile(reconciling, rail, kind, &id).await {
                Ok(Next::Done) => stack.rails.done(kind, &id),
                Ok(Next::Later) => {
                    stack.rails.later(kind, &id, attempts.saturating_add(1), backoff(attempts, scale));
                }
                Err(e) => {
                    tracing::error!(movement = %id, error = %e.message, "cannot apply the provider's answer");
                    stack.rails.later(kind, &id, attempts.saturating_add(1), backoff(attempts, scale));
                }
            }
        }
        // A writer that refuses commands (a full disk) fails each step,
        // which is retried with backoff; the task ends with the process.
        tokio::select! {
            () = stack.rails.wake.notified() => {}
            () = tokio::time::sleep(poll) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_ceiling() {
        assert_eq!(backoff(0, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(1, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(20, 1.0), Duration::from_secs(600));
        assert_eq!(backoff(0, 0.001), Duration::from_millis(100));
    }
}
