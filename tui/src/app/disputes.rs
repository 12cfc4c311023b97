//! Resolving a dispute from its detail: `a` accepts it (the payer gets the
//! money back), `d` declines it (the merchant keeps it), each after a y/n.

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, Confirm, Detail, Flash, Remote};
use crate::api::{DisputeOutcome, DisputeStatus, Owned, wire_name};
use crate::fetch::{Payload, Request};

impl App {
    /// Keys of an open dispute; `None` leaves the key to the common handling.
    pub(super) fn handle_dispute_key(&mut self, key: KeyEvent) -> Option<Action> {
        let outcome = match key.code {
            KeyCode::Char('a') => DisputeOutcome::Accepted,
            KeyCode::Char('d') => DisputeOutcome::Declined,
            _ => return None,
        };
        let Some(Detail::Dispute { stack, id, data, .. }) = &self.detail else { return None };
        let Some(Owned { item: dispute, .. }) = &data.data else { return Some(Action::None) };
        if dispute.status != DisputeStatus::Open {
            self.flash = Some(Flash {
                text: format!(
                    "only an open dispute can be resolved; this one is {}",
                    wire_name(&dispute.status)
                ),
                error: true,
            });
            return Some(Action::None);
        }
        let consequence = match outcome {
            DisputeOutcome::Accepted => "The payer's claim stands: the amount is returned to the payer",
            DisputeOutcome::Declined => "The merchant keeps the payment",
        };
        self.confirm = Some(Confirm {
            prompt: format!(
                "{} dispute {id} ({} {}) on {}? {consequence}.",
                if outcome == DisputeOutcome::Accepted { "Accept" } else { "Decline" },
                dispute.amount,
                dispute.currency,
                stack.as_str(),
            ),
            request: Request::ResolveDispute { stack: *stack, id: id.clone(), outcome },
        });
        Some(Action::None)
    }

    /// Takes a resolution's answer out of `payload`, leaving any other.
    pub(super) fn apply_resolution(
        &mut self,
        request: &Request,
        payload: &mut Option<Payload>,
    ) -> Option<Vec<Request>> {
        let Request::ResolveDispute { id, .. } = request else { return None };
        if !matches!(payload, Some(Payload::Resolved(_))) {
            return None;
        }
        let Some(Payload::Resolved(resolved)) = payload.take() else { return None };
        self.flash = Some(Flash {
            text: format!("dispute {id} is now {}", wire_name(&resolved.item.status)),
            error: false,
        });
        if let Some(Detail::Dispute { id: open, data, .. }) = &mut self.detail
            && *open == resolved.item.id
        {
            // The answer holds the thread too.
            *data = Remote { data: Some(resolved), error: None, loading: false };
        }
        Some(self.tab_requests())
    }
}
