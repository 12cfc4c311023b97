//! A stack's counters for `/metrics`: plain numbers the HTTP layer, the
//! webhook dispatcher and the rate book feed; `http::metrics` renders
//! them in Prometheus's text format with the engine's own figures.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of the request-duration histogram, in seconds.
pub(crate) const BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// One route's request durations.
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram {
    /// Requests at or under each bound of `BUCKETS` (not cumulative).
    pub buckets: [u64; BUCKETS.len()],
    pub count: u64,
    pub sum_seconds: f64,
}

/// One route's requests: counts by status and their durations.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteStats {
    pub statuses: BTreeMap<u16, u64>,
    pub durations: Histogram,
}

#[derive(Default)]
pub(crate) struct Metrics {
    /// Route template -> its requests; one lock per request, and the
    /// template is copied only the first time it is seen.
    routes: Mutex<BTreeMap<String, RouteStats>>,
    webhook_succeeded: AtomicU64,
    webhook_failed: AtomicU64,
    webhook_backlog: AtomicU64,
}

impl Metrics {
    /// One answered request on `route` (the matched template).
    pub(crate) fn record_request(&self, route: &str, status: u16, seconds: f64) {
        let Ok(mut routes) = self.routes.lock() else { return };
        if !routes.contains_key(route) {
            routes.insert(route.to_string(), RouteStats::default());
        }
        let Some(stats) = routes.get_mut(route) else { return };
        *stats.statuses.entry(status).or_default() += 1;
        let histogram = &mut stats.durations;
        if let Some(slot) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            histogram.buckets[slot] += 1;
        }
        histogram.count += 1;
        histogram.sum_seconds += seconds;
    }

    pub(crate) fn record_webhook_attempt(&self, succeeded: bool) {
        let counter = if succeeded { &self.webhook_succeeded } else { &self.webhook_failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Deliveries waiting for a (first or next) attempt.
    pub(crate) fn set_webhook_backlog(&self, open: usize) {
        self.webhook_backlog.store(open as u64, Ordering::Relaxed);
    }

    pub(crate) fn routes(&self) -> BTreeMap<String, RouteStats> {
        self.routes.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// (succeeded, failed) attempts so far.
    pub(crate) fn webhook_attempts(&self) -> (u64, u64) {
        (self.webhook_succeeded.load(Ordering::Relaxed), self.webhook_failed.load(Ordering::Relaxed))
    }

    pub(crate) fn webhook_backlog(&self) -> u64 {
        self.webhook_backlog.load(Ordering::Relaxed)
    }
}
