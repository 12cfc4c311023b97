//! `/v1/virtual-accounts`, served through a utoipa-axum router
//! (`sika_api::virtual_accounts`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use sika_api::virtual_accounts::{CreateVirtualAccount, VirtualAccount, VirtualAccountEnvelope};
use sika_api::{ErrorBody, FieldRefusals, Id, ListPage, ListQuery, PageRefusals, ReadRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::domain::virtual_accounts;
use crate::domain::virtual_accounts::VirtualAccount as Account;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::found::Loaded;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read))
}

/// Open a virtual account
///
/// A GHS account is opened at the partner bank and needs the organization
/// representative: on the live stack set it first; the sandbox fills a
/// default from the owner's name. A GHS customer (`customerReference`) has
/// one account: asking again answers it (200), never a second one.
#[utoipa::path(post, path = "/v1/virtual-accounts", operation_id = "createVirtualAccount",
    request_body = CreateVirtualAccount, security(("bearer" = ["virtual-accounts:write"])),
    responses((status = 201, description = "The virtual account", body = VirtualAccountEnvelope),
        (status = 200, description = "The GHS account this customer already has", body = VirtualAccountEnvelope),
        (status = 422, description = "A live GHS account without the representative (`representative_required`)", body = ErrorBody),
        FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateVirtualAccount>,
) -> ApiResult<(StatusCode, Json<VirtualAccountEnvelope>)> {
    let (account, opened) =
        virtual_accounts::create(&stack.virtual_account_deps(), principal.organization(), body).await?;
    let status = if opened { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(VirtualAccountEnvelope { virtual_account: account.render() })))
}

/// One virtual account
#[utoipa::path(get, path = "/v1/virtual-accounts/{id}", operation_id = "getVirtualAccount",
    params(Id<VirtualAccountEnvelope>), security(("bearer" = ["virtual-accounts:read"])),
    responses((status = 200, description = "The virtual account", body = VirtualAccountEnvelope),
        ReadRefusals<VirtualAccountEnvelope>),
)]
async fn read(Loaded { record, .. }: Loaded<Account>) -> ApiResult<Json<VirtualAccountEnvelope>> {
    Ok(Json(VirtualAccountEnvelope { virtual_account: record.render() }))
}

/// Virtual accounts, newest first
#[utoipa::path(get, path = "/v1/virtual-accounts", operation_id = "listVirtualAccounts",
    params(ListQuery), security(("bearer" = ["virtual-accounts:read"])),
    responses((status = 200, description = "One page of virtual accounts", body = ListPage<VirtualAccount>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<VirtualAccount>>> {
    Ok(Json(virtual_accounts::list(&stack.lists(), principal.organization(), &query)?))
}
