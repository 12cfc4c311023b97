//! What a committed batch changed, told to whoever follows the ledger.
//!
//! The writer's logger sends one [`Committed`] per batch once the batch is
//! durable and published (readers see it), so a subscriber that reacts by
//! reading the ledger finds what it was told about. The server's after-
//! commit effects (waking the webhook dispatcher, the reconciler) follow
//! these notices rather than each caller remembering to: a movement made
//! by a job or an operator is told about like one made by a request.
//!
//! The notices are a hint, not a log: a subscriber that falls behind is told
//! how many it missed (`broadcast::error::RecvError::Lagged`) and catches up
//! by reading the ledger.

use crate::events::EventKind;

/// Notices a slow subscriber may fall behind by before it is told it lagged.
pub const NOTICES_BUFFERED: usize = 1024;

pub use crate::storage::MovementKind;

/// A payout or collection a batch created or advanced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovementTouched {
    pub kind: MovementKind,
    pub id: String,
    /// Its rail, as stored (see [`crate::rail::Rail::from_name`]).
    pub rail: String,
    /// Whether it is still open (pending) after the batch.
    pub open: bool,
}

/// What the commands of one batch that succeeded did, for after-commit
/// effects. Commands that failed left nothing here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// The kinds of the events recorded, in order (one per event).
    pub events: Vec<EventKind>,
    /// The movements created or advanced, in order.
    pub movements: Vec<MovementTouched>,
    /// When the earliest job the batch scheduled is due, if it scheduled
    /// one: the node's scheduler sleeps until its next job is due and
    /// learns of new ones here rather than by polling.
    pub jobs_due: Option<crate::records::TimestampMs>,
}

impl Effects {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.movements.is_empty() && self.jobs_due.is_none()
    }

    pub(crate) fn extend(&mut self, other: Effects) {
        self.events.extend(other.events);
        self.movements.extend(other.movements);
        if let Some(due) = other.jobs_due {
            self.job_scheduled(due);
        }
    }

    /// Notes a job scheduled for `due_at`.
    pub(crate) fn job_scheduled(&mut self, due_at: crate::records::TimestampMs) {
        self.jobs_due = Some(self.jobs_due.map_or(due_at, |earliest| earliest.min(due_at)));
    }
}

/// One durable batch's effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The batch's commit epoch (`Engine::commit_epoch` once it is told).
    pub epoch: u64,
    pub effects: Effects,
}
