use std::sync::Arc;

use axum::Router;

use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
}
