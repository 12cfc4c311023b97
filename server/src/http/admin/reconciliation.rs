//! `GET /admin/v1/live/reconciliation`: the live stack's movements on the
//! provider's rail against what the provider reports for a period
//! (`domain::reconciliation`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sika_api::admin::AdminRefusals;
use sika_api::reconciliation::{Reconciliation, ReconciliationQuery, ReconciliationRefusals};

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::reconciliation::{self, Deps};
use crate::http::extract::ApiQuery;

/// Reconcile the live stack with the provider
///
/// Every live payout and collection on the provider connector's rail that
/// Sika created in the period, against every transfer and charge the
/// provider lists for it, paired by reference (Sika's id). Both lists are
/// read in full, page after page, or nothing is answered.
#[utoipa::path(get, path = "/admin/v1/live/reconciliation", operation_id = "reconcile",
    security(("operator" = [])), params(ReconciliationQuery),
    responses(
        (status = 200, description = "Matched pairs, movements missing on either side, and mismatched fields", body = Reconciliation),
        ReconciliationRefusals, AdminRefusals),
)]
pub(super) async fn reconcile(
    State(state): State<Arc<AdminState>>,
    ApiQuery(query): ApiQuery<ReconciliationQuery>,
) -> ApiResult<Json<Reconciliation>> {
    let organizations = state.identity.organizations().into_iter().map(|o| o.id).collect();
    let live = &state.live;
    let deps = Deps { engine: &live.engine, rail: live.rails.flutterwave.as_deref(), organizations };
    Ok(Json(reconciliation::reconcile(deps, &query).await?))
}
