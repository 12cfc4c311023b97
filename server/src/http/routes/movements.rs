//! What the handlers of the money resources share: the capabilities their
//! use cases take, filled from the stack, and the status a create answers.

use axum::http::StatusCode;

use crate::domain::instructions::Deps;
use crate::domain::movements::Created;
use crate::domain::stack::Stack;

/// What the money movements' use cases (`domain::payouts`, `collections`,
/// `orders`, `simulations`) take from `stack`.
pub(crate) fn deps(stack: &Stack) -> Deps<'_> {
    Deps {
        stack: stack.kind,
        ledger: &stack.engine,
        catalog: &stack.catalog,
        rails: &stack.rails,
        receiving: &stack.receiving,
        time_scale: stack.config.time_scale,
    }
}

/// A create's status: 201 for what it made, 200 for an earlier create it
/// replayed.
pub(crate) fn status<V>(created: &Created<V>) -> StatusCode {
    if created.replayed { StatusCode::OK } else { StatusCode::CREATED }
}
