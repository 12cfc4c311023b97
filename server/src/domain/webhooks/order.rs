//! Order of arrival: for each endpoint, a resource's deliveries are first
//! attempted in the order their events were committed, each waiting until
//! the previous one's first attempt has finished. Retries are not held:
//! they may interleave. Without this gate a lane sends up to 32 deliveries
//! at once, and `order.processing_payout` could reach a receiver before
//! `order.funds_received`.
//!
//! Pure bookkeeping, no I/O: the dispatcher asks it whether a delivery may
//! go and tells it when a first attempt finished.

use std::collections::{HashMap, VecDeque};

/// An endpoint and a resource.
type Key = (String, String);

/// Per endpoint and resource, the deliveries whose first attempt has not
/// finished, in commit order; the head is the only one that may be sent.
#[derive(Debug, Default)]
pub(super) struct FirstAttempts {
    queues: HashMap<Key, VecDeque<String>>,
    key_of: HashMap<String, Key>,
}

impl FirstAttempts {
    /// Records a delivery that has not been attempted, after every earlier
    /// one of its resource to its endpoint; `true` when it heads the queue
    /// and may go now.
    pub(super) fn admit(&mut self, endpoint: &str, resource: &str, delivery: &str) -> bool {
        let key = (endpoint.to_string(), resource.to_string());
        let queue = self.queues.entry(key.clone()).or_default();
        queue.push_back(delivery.to_string());
        self.key_of.insert(delivery.to_string(), key);
        queue.len() == 1
    }

    /// The delivery's first attempt finished (or it will never have one):
    /// it leaves its queue, and the delivery that now heads it, if this one
    /// headed it, is returned to be sent.
    pub(super) fn finished(&mut self, delivery: &str) -> Option<String> {
        let key = self.key_of.remove(delivery)?;
        let queue = self.queues.get_mut(&key)?;
        let was_head = queue.front().is_some_and(|head| head == delivery);
        queue.retain(|id| id != delivery);
        let next = if was_head { queue.front().cloned() } else { None };
        if queue.is_empty() {
            self.queues.remove(&key);
        }
        next
    }

    /// How many deliveries wait behind another's first attempt.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.queues.values().map(|q| q.len().saturating_sub(1)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_resource_goes_one_first_attempt_at_a_time() {
        let mut gate = FirstAttempts::default();
        assert!(gate.admit("we_1", "ord_1", "a"));
        assert!(!gate.admit("we_1", "ord_1", "b"));
        assert!(!gate.admit("we_1", "ord_1", "c"));
        // Another resource, or another endpoint, does not wait.
        assert!(gate.admit("we_1", "ord_2", "x"));
        assert!(gate.admit("we_2", "ord_1", "y"));
        assert_eq!(gate.waiting(), 2);
        assert_eq!(gate.finished("a").as_deref(), Some("b"));
        // A delivery sent by hand out of turn leaves without releasing anyone.
        assert_eq!(gate.finished("c"), None);
        assert_eq!(gate.finished("b"), None);
        assert_eq!(gate.finished("b"), None, "finishing twice is harmless");
        assert_eq!(gate.finished("untracked"), None);
        assert_eq!(gate.waiting(), 0);
    }
}
