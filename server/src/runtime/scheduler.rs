//! The node's scheduler: runs each stack's due jobs (rail outcomes the
//! simulator promised, deadlines). Jobs live in the ledger database, so a
//! restart resumes them; running one removes it in the same transaction.

use std::sync::Arc;
use std::time::Duration;

use sika_engine::Command;

use crate::domain::stack::Stack;

/// How often due jobs are looked for.
const POLL_INTERVAL: Duration = Duration::from_millis(2);
/// Jobs started per poll: small enough that a burst of settlements does not
/// make one long writer batch that payouts created meanwhile wait behind.
const JOBS_PER_POLL_MAX: usize = 64;
/// How long the scheduler waits while the ledger cannot write (a full
/// disk): the storage watch logs that, once per interval.
const STORAGE_BACKOFF: Duration = Duration::from_secs(1);

pub(crate) fn spawn(stack: Arc<Stack>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // A poll that found a full page of due jobs polls again at once.
        let mut behind = false;
        loop {
            if !behind {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            let due = match stack.engine.read().and_then(|s| s.due_jobs(stack.now_ms(), JOBS_PER_POLL_MAX)) {
                Ok(due) => due,
                Err(sika_engine::EngineError::Unavailable) => return,
                Err(sika_engine::EngineError::Storage(_)) => {
                    tokio::time::sleep(STORAGE_BACKOFF).await;
                    behind = false;
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read due jobs");
                    behind = false;
                    continue;
                }
            };
            behind = due.len() == JOBS_PER_POLL_MAX;
            if due.is_empty() {
                continue;
            }
            // In due order, as one stream: a rail's note due before its
            // outcome must be applied before it, even when both are due now.
            let runs = due.into_iter().map(|key| Command::RunJob { key }).collect();
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
                behind = false;
                continue;
            }
        }
    })
}
