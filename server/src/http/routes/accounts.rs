//! `/v1/accounts`: the operation is generated from the handler and the wire
//! types (`sika_api::accounts`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sika_api::accounts::Account;
use sika_api::statements::AccountsQuery;
use sika_api::{BadField, ListPage, Refusals, With};

use crate::http::extract::ApiQuery;
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
/// `hasMore` is always false. With `asOf`, the balances are those the
/// account held at that instant (its last balance change at or before it),
/// and an account opened later is left out.
#[utoipa::path(get, path = "/v1/accounts", operation_id = "listAccounts",
    params(AccountsQuery), security(("bearer" = ["accounts:read"])),
    responses(
        (status = 200, description = "Every balance account of the organization", body = ListPage<Account>),
        With<BadField, Refusals>),
)]
async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<AccountsQuery>,
) -> ApiResult<Json<ListPage<Account>>> {
    let accounts = accounts::read(&stack.engine, principal.organization(), query.as_of.as_deref())?;
    Ok(Json(ListPage::whole(accounts)))
}
