//! What waits for the operator on a stack: live payouts and collections on
//! the manual-settlement rail still pending (nothing else will finish
//! them), open disputes, webhook endpoints whose deliveries fail, and the
//! requests the stack recently answered with an error.
//!
//! The pending movements are read from the ledger's index of open
//! movements; disputes and endpoints are not indexed by status, so they are
//! counted by reading the stack's records. A count is kept
//! for `COUNT_TTL`, so `/metrics` scrapes and the console's once-a-second
//! status together cost at most one scan per 10 seconds whatever polls
//! them. Failed requests are kept in memory, the newest
//! `FAILED_REQUESTS_KEPT`: the request log stores only authenticated
//! callers' requests, and the operator wants the refused ones too.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sika_api::admin::{Attention, FailedRequest};
use sika_engine::Engine;
use sika_engine::Rail;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::timestamp;
use crate::domain::stack_kind::StackKind;
use crate::store::documents::decode;

/// How long a count is served before the records are read again.
pub(crate) const COUNT_TTL: Duration = Duration::from_secs(10);
/// Failed requests remembered per stack.
pub(crate) const FAILED_REQUESTS_KEPT: usize = 200;

/// What one scan counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub awaiting_settlement: u64,
    /// When the oldest movement awaiting settlement was created (ms).
    pub oldest_awaiting_at: Option<i64>,
    pub open_disputes: u64,
    pub failing_endpoints: u64,
    /// When the scan read the records (ms, the node's clock).
    pub counted_at: i64,
}

/// A stack's cached count and its remembered failures.
#[derive(Default)]
pub(crate) struct Watch {
    counted: tokio::sync::Mutex<Option<(Instant, Counts)>>,
    failed: Mutex<VecDeque<FailedRequest>>,
}

impl Watch {
    /// Remembers a request answered with an error, dropping the oldest
    /// past `FAILED_REQUESTS_KEPT`.
    pub(crate) fn remember_failure(&self, request: FailedRequest) {
        let Ok(mut failed) = self.failed.lock() else { return };
        if failed.len() == FAILED_REQUESTS_KEPT {
            failed.pop_front();
        }
        failed.push_back(request);
    }

    /// The remembered failures, newest first.
    pub(crate) fn failures(&self) -> Vec<FailedRequest> {
        self.failed.lock().map(|f| f.iter().rev().cloned().collect()).unwrap_or_default()
    }

    /// Drops the cached count, so the next read counts again: after the
    /// operator settles a movement or resolves a dispute, the console and
    /// the metrics show it at once.
    pub(crate) async fn invalidate(&self) {
        *self.counted.lock().await = None;
    }

    fn failure_count(&self) -> u64 {
        self.failed.lock().map_or(0, |f| f.len() as u64)
    }
}

/// Counts what waits on the `kind` stack whose ledger is `engine` by
/// reading its records.
pub(crate) fn count(engine: &Engine, kind: StackKind) -> ApiResult<Counts> {
    let snapshot = engine.read()?;
    let mut counts = Counts { counted_at: engine.now_ms(), ..Counts::default() };
    let mut waiting = |created_at: i64| {
        counts.awaiting_settlement += 1;
        counts.oldest_awaiting_at = Some(counts.oldest_awaiting_at.map_or(created_at, |t| t.min(created_at)));
    };
    // Only live movements go to the operator (the sandbox's simulator
    // settles every one), so the sandbox's, however many, are not read.
    if kind == StackKind::Live {
        for movement in snapshot.open_movements(Rail::ManualSettlement.name())? {
            waiting(movement.created_at);
        }
    }
    for (_, bytes) in snapshot.documents(crate::domain::disputes::COLLECTION)? {
        let dispute: crate::domain::disputes::Dispute = decode(&bytes)?;
        counts.open_disputes += u64::from(dispute.status.is_open());
    }
    for (_, bytes) in snapshot.documents(crate::domain::webhooks::HEALTH)? {
        let health: crate::domain::webhooks::Health = decode(&bytes)?;
        counts.failing_endpoints += u64::from(health.disabled || health.consecutive_failures > 0);
    }
    Ok(counts)
}

/// The stack's counts (`watch` is its cache), read again when the cached
/// ones are older than `COUNT_TTL` (on a blocking thread: the scan reads
/// every movement).
pub(crate) async fn counts(engine: &Engine, kind: StackKind, watch: &Watch) -> ApiResult<Counts> {
    // One scan at a time: a caller that waited finds the fresh count.
    let mut counted = watch.counted.lock().await;
    if let Some((at, counts)) = *counted
        && at.elapsed() < COUNT_TTL
    {
        return Ok(counts);
    }
    let scanned = engine.clone();
    let counts = tokio::task::spawn_blocking(move || count(&scanned, kind)).await.map_err(|e| {
        tracing::error!(error = %e, "the attention count panicked");
        ApiError::internal_from(e)
    })??;
    *counted = Some((Instant::now(), counts));
    Ok(counts)
}

/// What waits on a stack, as the admin API shows it.
pub(crate) async fn attention(engine: &Engine, kind: StackKind, watch: &Watch) -> ApiResult<Attention> {
    let counts = counts(engine, kind, watch).await?;
    let now = engine.now_ms();
    Ok(Attention {
        awaiting_settlement: counts.awaiting_settlement,
        oldest_awaiting_since: counts.oldest_awaiting_at.map(timestamp),
        oldest_awaiting_age_seconds: counts.oldest_awaiting_at.map(|at| age_seconds(now, at)),
        open_disputes: counts.open_disputes,
        failing_endpoints: counts.failing_endpoints,
        recent_failed_requests: watch.failure_count(),
        counted_at: Some(timestamp(counts.counted_at)),
    })
}

/// Whole seconds from `then` to `now` (ms), never negative.
pub(crate) fn age_seconds(now: i64, then: i64) -> u64 {
    u64::try_from(now.saturating_sub(then) / 1000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(id: &str) -> FailedRequest {
        FailedRequest {
            id: id.into(),
            method: "GET".into(),
            route: "/v1/payouts/{id}".into(),
            status: 404,
            error: Some("not_found".into()),
            organization_id: None,
            client_address: None,
            created_at: String::new(),
        }
    }

    #[test]
    fn failures_are_bounded_and_newest_first() {
        let watch = Watch::default();
        for i in 0..(FAILED_REQUESTS_KEPT + 5) {
            watch.remember_failure(failure(&format!("req_{i}")));
        }
        let kept = watch.failures();
        assert_eq!(kept.len(), FAILED_REQUESTS_KEPT);
        assert_eq!(kept[0].id, format!("req_{}", FAILED_REQUESTS_KEPT + 4));
        assert_eq!(kept.last().map(|f| f.id.as_str()), Some("req_5"));
    }

    #[test]
    fn ages_never_go_negative() {
        assert_eq!(age_seconds(10_500, 1_000), 9);
        assert_eq!(age_seconds(1_000, 10_500), 0);
    }
}
