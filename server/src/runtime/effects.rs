//! After-commit effects: one follower per stack of what its ledger commits
//! (`sika_engine::Engine::subscribe`). When a batch recorded events it
//! wakes the webhook dispatcher; when it created or advanced a movement
//! that is open on a provider's rail it makes the movement due at the
//! reconciler. So a movement made by a request, by a scheduled job (an
//! order's payout) or by the operator (a settlement) is followed up the
//! same way, and no caller has to remember to.
//!
//! The notices are hints: one the follower missed (it lagged) is caught by
//! the dispatcher's own poll of the outbox and the reconciler's scan of
//! open movements.

use std::sync::Arc;

use sika_engine::{Effects, Rail};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::domain::rails::{self, Kind};
use crate::domain::stack::Stack;

/// Notices folded into one round of wakes at most.
const NOTICES_PER_ROUND_MAX: usize = 256;

/// Follows `stack`'s commits until its engine stops. Call after the
/// stack's webhook dispatcher is started.
pub(crate) fn spawn(stack: Arc<Stack>) -> tokio::task::JoinHandle<()> {
    let notices = stack.engine.subscribe();
    tokio::spawn(run(stack, notices))
}

async fn run(stack: Arc<Stack>, mut notices: tokio::sync::broadcast::Receiver<Arc<sika_engine::Committed>>) {
    loop {
        let mut round = Round::default();
        match notices.recv().await {
            Ok(notice) => round.add(&notice.effects),
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "the after-commit follower fell behind; the pollers catch up");
                round.events = true;
            }
            Err(RecvError::Closed) => return,
        }
        // Whatever else is already told is handled with it: a burst of
        // commits wakes the dispatcher once.
        for _ in 1..NOTICES_PER_ROUND_MAX {
            match notices.try_recv() {
                Ok(notice) => round.add(&notice.effects),
                Err(TryRecvError::Lagged(_)) => round.events = true,
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        round.apply(&stack);
    }
}

/// What some notices ask for.
#[derive(Default)]
struct Round {
    /// Events were recorded: webhook deliveries may be owed.
    events: bool,
    /// Movements open on a provider's rail.
    open_at_provider: Vec<(Kind, String)>,
}

impl Round {
    fn add(&mut self, effects: &Effects) {
        self.events |= !effects.events.is_empty();
        for movement in &effects.movements {
            if movement.open && Rail::from_name(&movement.rail).is_some_and(Rail::is_provider) {
                self.open_at_provider.push((rails::kind_of(movement.kind), movement.id.clone()));
            }
        }
    }

    fn apply(self, stack: &Stack) {
        if self.events
            && let Ok(webhooks) = stack.webhooks()
        {
            webhooks.wake();
        }
        for (kind, id) in self.open_at_provider {
            stack.rails.committed_open(kind, &id);
        }
    }
}
