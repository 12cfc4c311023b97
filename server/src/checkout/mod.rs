//! Hosted checkout: payment pages, payment links and checkout sessions.

use sika_engine::Snapshot;
use sika_engine::movements::CollectionRecord;

use crate::error::ApiResult;

/// The completed collections paid through payment link `link_id` of
/// `organization`, oldest first; `None` when the organization has no such link.
pub fn link_payments(
    _snapshot: &Snapshot,
    _organization: &str,
    _link_id: &str,
) -> ApiResult<Option<Vec<CollectionRecord>>> {
    Ok(None)
}
