//! Says when a stack's ledger cannot write (a full disk, most often) and
//! when it writes again: one log line per interval with how many commands
//! were refused meanwhile, instead of one per refused request. Readiness
//! (`http::health`) turns 503 for the same reason, and the engine's healer
//! reopens the ledger by itself once the disk takes writes.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::stack::Stack;

/// How often the watch looks, and so at most how often it logs.
const INTERVAL: Duration = Duration::from_secs(10);

pub(crate) fn spawn(stacks: Vec<Arc<Stack>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen: Vec<(u64, bool)> =
            stacks.iter().map(|s| (s.engine.stats().storage_refused, false)).collect();
        loop {
            tokio::time::sleep(INTERVAL).await;
            for (stack, (refused_before, failing)) in stacks.iter().zip(seen.iter_mut()) {
                let refused = stack.engine.stats().storage_refused;
                let newly = refused.saturating_sub(*refused_before);
                *refused_before = refused;
                match stack.engine.unavailable_reason() {
                    Some(reason) => {
                        *failing = true;
                        tracing::error!(
                            stack = stack.kind.name(),
                            refused = newly,
                            reason = %reason,
                            "the ledger cannot write; refused commands answer 503 storage_unavailable"
                        );
                    }
                    None if *failing => {
                        *failing = false;
                        tracing::warn!(stack = stack.kind.name(), refused = newly, "the ledger writes again");
                    }
                    None if newly > 0 => {
                        tracing::error!(
                            stack = stack.kind.name(),
                            refused = newly,
                            "commands were refused for a storage error since the last report"
                        );
                    }
                    None => {}
                }
            }
        }
    })
}
