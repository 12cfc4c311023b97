//! `/v1/accounts`: the operation is generated from the handler and the wire
//! types (`sika_api::accounts`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sika_api::accounts::Account;
use sika_api::{ListPage, VersionRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::accounts;
use crate::domain::error::ApiResult;
use crate::domain::principal::Principal;
use crate::domain::stack::Stack;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(list))
}

/// Balance accounts, one per currency
///
/// An account opens the first time money in its currency touches the
/// organization. The list is not paginated: it holds every account, and
/// `hasMore` is always false.
#[utoipa::path(get, path = "/v1/accounts", operation_id = "listAccounts",
    security(("bearer" = ["accounts:read"])),
    responses(
        (status = 200, description = "Every balance account of the organization", body = ListPage<Account>),
        VersionRefusals),
)]
async fn list(State(stack): State<Arc<Stack>>, principal: Principal) -> ApiResult<Json<ListPage<Account>>> {
    Ok(Json(ListPage::whole(accounts::list(&stack.engine, principal.organization())?)))
}
