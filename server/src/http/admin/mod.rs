//! The operator's admin API on its own listener: `/admin/v1`, every path
//! behind the operator token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::header;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use sika_api::accounts::Account;
use sika_api::admin::{
    self, AdminRefusals, Balances, NodeStatus, NodeStatusEnvelope, OrganizationEnvelope, OrganizationStatus,
    RequestLookup, Settlement, StackAccounts, StackPath, StackRefusals, StackStatus,
};
use sika_api::admin::{OrganizationPath, OrganizationRefusals, Owned, StackId};
use sika_api::collections::CollectionEnvelope;
use sika_api::payouts::PayoutEnvelope;
use sika_api::refunds::{Refund, RefundEnvelope};
use sika_api::{ErrorBody, ListPage};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Identity, Organization};
use crate::domain::ratelimit::FailureThrottle;
use crate::domain::render::timestamp;
use crate::domain::settlements;
use crate::domain::stack::{Stack, StackKind};
use crate::http::auth::caller_address;
use crate::http::envelope::{EnvelopeState, envelope};
use crate::http::found::found;
use crate::http::openapi::tagged;

mod activity;
pub(crate) mod audit;
mod backup;
mod emails;
mod keys;
mod ledger;
mod organizations;
mod rates;
mod reconciliation;
mod search;
mod webhooks;

pub(crate) struct AdminState {
    pub identity: Arc<Identity>,
    pub live: Arc<Stack>,
    pub sandbox: Arc<Stack>,
    pub started: Instant,
    /// Where the node's files are (for a backup).
    pub data_dir: std::path::PathBuf,
    /// Wrong operator tokens, per caller address.
    pub operator_tokens: FailureThrottle,
}

impl AdminState {
    pub(crate) fn stack(&self, name: &str) -> ApiResult<&Arc<Stack>> {
        match StackKind::parse(name) {
            Some(StackKind::Live) => Ok(&self.live),
            Some(StackKind::Sandbox) => Ok(&self.sandbox),
            None => Err(ApiError::not_found(format!("unknown stack '{name}'; use live or sandbox"))),
        }
    }
}

/// The admin API's routes, each documented by its handler and grouped under
/// its tag: the document at `/admin/v1/openapi.json` is generated from this
/// router.
pub(crate) fn documented() -> OpenApiRouter<Arc<AdminState>> {
    let node = OpenApiRouter::new().routes(routes!(status)).routes(routes!(backup::back_up));
    let organizations = OpenApiRouter::new()
        .routes(routes!(organizations, organizations::create))
        .routes(routes!(organization, organizations::rename))
        .routes(routes!(suspend))
        .routes(routes!(reinstate))
        .routes(routes!(organizations::list_members))
        .routes(routes!(organizations::reissue_invitation))
        .routes(routes!(keys::list))
        .routes(routes!(keys::revoke));
    let ledger = OpenApiRouter::new()
        .routes(routes!(accounts))
        .routes(routes!(ledger::verify))
        .routes(routes!(ledger::system_accounts))
        .routes(routes!(ledger::entries));
    let rates = OpenApiRouter::new().routes(routes!(rates::read, rates::replace));
    let activity = OpenApiRouter::new()
        .routes(routes!(activity::payouts))
        .routes(routes!(activity::payout))
        .routes(routes!(activity::collections))
        .routes(routes!(activity::collection))
        .routes(routes!(activity::refunds))
        .routes(routes!(activity::refund))
        .routes(routes!(activity::orders))
        .routes(routes!(activity::order))
        .routes(routes!(activity::order_funds))
        .routes(routes!(activity::disputes))
        .routes(routes!(activity::dispute))
        .routes(routes!(activity::resolve_dispute))
        .routes(routes!(activity::dispute_file))
        .routes(routes!(settle_payout))
        .routes(routes!(settle_collection))
        .routes(routes!(settle_refund))
        .routes(routes!(refunds_awaiting_operator));
    let webhooks = OpenApiRouter::new()
        .routes(routes!(webhooks::endpoints))
        .routes(routes!(webhooks::attempts))
        .routes(routes!(webhooks::enable))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::retry));
    OpenApiRouter::new()
        .merge(tagged("node", node))
        .merge(tagged("organizations", organizations))
        .merge(tagged("ledger", ledger))
        .merge(tagged("rates", rates))
        .merge(tagged("activity", activity))
        .merge(tagged("webhooks", webhooks))
        .merge(tagged(
            "requests",
            OpenApiRouter::new().routes(routes!(request)).routes(routes!(failed_requests)),
        ))
        .merge(tagged("audit", OpenApiRouter::new().routes(routes!(audit::list))))
        .merge(tagged("emails", OpenApiRouter::new().routes(routes!(emails::list))))
        .merge(tagged("search", OpenApiRouter::new().routes(routes!(search::search))))
        .merge(tagged("reconciliation", OpenApiRouter::new().routes(routes!(reconciliation::reconcile))))
}

/// The admin API's OpenAPI document.
pub(crate) fn document() -> Value {
    crate::http::openapi::finish(
        documented().into_openapi(),
        "Sika admin API",
        env!("CARGO_PKG_VERSION"),
        "operator",
    )
}

pub(crate) fn app(state: Arc<AdminState>, health: Arc<crate::http::health::Health>) -> Router {
    let (documented, _) = documented().split_for_parts();
    let document = document();
    Router::new()
        .merge(documented)
        .route_layer(from_fn_with_state(state.clone(), audit::record))
        .route_layer(from_fn_with_state(state.clone(), require_operator))
        .route("/admin/v1/openapi.json", get(move || async move { Json(document) }))
        .route("/metrics", get(crate::http::metrics::scrape))
        .route_layer(axum::middleware::from_fn(crate::http::access_log::remember_route))
        .with_state(state)
        // Liveness and readiness: no operator token.
        .merge(crate::http::health::router(health))
        .layer(CatchPanicLayer::new())
        .layer(from_fn_with_state(EnvelopeState::None, envelope))
}

/// Admits a request with the operator token. A request that presents a
/// token is counted against its address before the token is compared, and
/// given back when the token is right, so no address has more than its
/// limit of wrong tokens checked in a window, however many it sends at
/// once; past it, `429` until the window ends.
async fn require_operator(State(state): State<Arc<AdminState>>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::http::auth::bearer_token);
    let Some(token) = token else {
        return ApiError::unauthorized("missing operator token; send Authorization: Bearer adm_…")
            .into_response();
    };
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let ip = caller_address(&state.live.config.trusted_proxies, peer, request.headers());
    let attempt = match state.operator_tokens.begin(FailureThrottle::address_key(ip), Instant::now()) {
        Ok(attempt) => attempt,
        Err(wait) => {
            return ApiError::new(
                sika_api::ErrorCode::RateLimited,
                "too many wrong operator tokens from this address; wait before trying again",
            )
            .with_detail("retryAfter", wait)
            .into_response();
        }
    };
    if token.starts_with("adm_") && state.identity.is_admin_token(token) {
        state.operator_tokens.forgive(attempt);
        return next.run(request).await;
    }
    ApiError::unauthorized("invalid operator token").into_response()
}

pub(super) fn render_organization(org: &Organization) -> admin::Organization {
    admin::Organization {
        id: org.id.clone(),
        name: org.name.clone(),
        status: if org.suspended { OrganizationStatus::Suspended } else { OrganizationStatus::Active },
        created_at: timestamp(org.created_at),
        balances: None,
    }
}

/// Every organization on the node
#[utoipa::path(get, path = "/admin/v1/organizations", operation_id = "listOrganizations",
    security(("operator" = [])),
    responses(
        (status = 200, description = "Every organization, in one page", body = ListPage<admin::Organization>),
        AdminRefusals),
)]
async fn organizations(State(state): State<Arc<AdminState>>) -> Json<ListPage<admin::Organization>> {
    let data = state.identity.organizations().iter().map(render_organization).collect();
    Json(ListPage::whole(data))
}

fn balances(stack: &Stack, organization: &str) -> ApiResult<Vec<Account>> {
    crate::domain::accounts::list(&stack.engine, organization)
}

/// One organization with its balances on both stacks
#[utoipa::path(get, path = "/admin/v1/organizations/{id}", operation_id = "getOrganization",
    security(("operator" = [])), params(OrganizationPath),
    responses((status = 200, description = "The organization and its balances", body = OrganizationEnvelope),
        OrganizationRefusals),
)]
async fn organization(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<OrganizationEnvelope>> {
    let org = found(state.identity.organization(&id), "organization", &id)?;
    let mut organization = render_organization(&org);
    organization.balances =
        Some(Balances { live: balances(&state.live, &id)?, sandbox: balances(&state.sandbox, &id)? });
    Ok(Json(OrganizationEnvelope { organization }))
}

async fn set_suspended(
    state: &AdminState,
    id: &str,
    suspended: bool,
) -> ApiResult<Json<OrganizationEnvelope>> {
    let org = state.identity.set_suspended(id, suspended).map_err(|e| {
        tracing::error!(error = %e, "cannot update organization");
        ApiError::internal_from(e)
    })?;
    let org = found(org, "organization", id)?;
    Ok(Json(OrganizationEnvelope { organization: render_organization(&org) }))
}

/// Suspend an organization: its API keys are refused until it is reinstated
#[utoipa::path(post, path = "/admin/v1/organizations/{id}/suspend", operation_id = "suspendOrganization",
    security(("operator" = [])), params(OrganizationPath),
    responses((status = 200, description = "The organization, suspended", body = OrganizationEnvelope),
        OrganizationRefusals),
)]
async fn suspend(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<OrganizationEnvelope>> {
    set_suspended(&state, &id, true).await
}

/// Reinstate a suspended organization
#[utoipa::path(post, path = "/admin/v1/organizations/{id}/reinstate", operation_id = "reinstateOrganization",
    security(("operator" = [])), params(OrganizationPath),
    responses((status = 200, description = "The organization, active", body = OrganizationEnvelope),
        OrganizationRefusals),
)]
async fn reinstate(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<OrganizationEnvelope>> {
    set_suspended(&state, &id, false).await
}

/// Every organization's balance accounts on one stack, with totals
///
/// Also the totals per currency and the ledger's own figures. Not paginated.
#[utoipa::path(get, path = "/admin/v1/{stack}/accounts", operation_id = "listStackAccounts",
    security(("operator" = [])), params(StackPath),
    responses((status = 200, description = "The accounts, totals and ledger figures", body = StackAccounts),
        StackRefusals),
)]
async fn accounts(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<StackAccounts>> {
    let stack = state.stack(&stack)?;
    let accounts =
        crate::domain::system_ledger::accounts(&stack.engine, &state.identity, stack.last_verify())?;
    Ok(Json(accounts))
}

/// A logged request, whichever stack served it
#[utoipa::path(get, path = "/admin/v1/requests/{id}", operation_id = "getLoggedRequest",
    security(("operator" = [])),
    params(("id" = String, Path, description = "The request's id (`requestId` of its answer)")),
    responses((status = 200, description = "The request, its stack and organization", body = RequestLookup),
        (status = 404, description = "No such request in either stack's log", body = ErrorBody),
        AdminRefusals),
)]
async fn request(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<RequestLookup>> {
    for stack in [&state.live, &state.sandbox] {
        if let Some(entry) = stack.request_log.find(&id) {
            return Ok(Json(RequestLookup {
                request: crate::domain::render::logged_request(&entry),
                stack: stack.kind.wire_name(),
                organization_id: entry.organization.clone(),
            }));
        }
    }
    Err(ApiError::not_found(format!("request '{id}' not found")))
}

/// Requests a stack recently answered with an error, newest first
///
/// Kept in memory since the node started, the newest 200 per stack (a
/// `429` is counted by the metrics instead): each with its route
/// template, status, error code, organization and the caller's address.
#[utoipa::path(get, path = "/admin/v1/{stack}/failed-requests", operation_id = "listFailedRequests",
    security(("operator" = [])), params(StackPath),
    responses(
        (status = 200, description = "The failed requests, in one page", body = ListPage<admin::FailedRequest>),
        StackRefusals),
)]
async fn failed_requests(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<ListPage<admin::FailedRequest>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(ListPage::whole(stack.attention.failures())))
}

/// The node's version, uptime and each stack's writer figures
#[utoipa::path(get, path = "/admin/v1/status", operation_id = "getStatus",
    security(("operator" = [])),
    responses((status = 200, description = "The node's status", body = NodeStatusEnvelope), AdminRefusals),
)]
async fn status(State(state): State<Arc<AdminState>>) -> ApiResult<Json<NodeStatusEnvelope>> {
    let live_attention =
        crate::domain::attention::attention(&state.live.engine, state.live.kind, &state.live.attention)
            .await?;
    let sandbox_attention = crate::domain::attention::attention(
        &state.sandbox.engine,
        state.sandbox.kind,
        &state.sandbox.attention,
    )
    .await?;
    let stack_status = |stack: &Stack, attention| -> ApiResult<StackStatus> {
        let stats = stack.engine.stats();
        Ok(StackStatus {
            journal_length: stack.engine.read()?.journal_length()?,
            commits: stats.commits,
            commands: stats.commands,
            commands_failed: stats.commands_failed,
            transfers: stats.transfers,
            writer_queue_depth: stats.queue_depth as u64,
            database_bytes: state_file_size(stack),
            attention,
        })
    };
    Ok(Json(NodeStatusEnvelope {
        status: NodeStatus {
            version: env!("CARGO_PKG_VERSION").to_string(),
            uptime_seconds: state.started.elapsed().as_secs(),
            live: stack_status(&state.live, live_attention)?,
            sandbox: stack_status(&state.sandbox, sandbox_attention)?,
        },
    }))
}

fn state_file_size(stack: &Stack) -> u64 {
    std::fs::metadata(stack.config.data_dir.join(stack.kind.database_file())).map(|m| m.len()).unwrap_or(0)
}

/// The operator's settlement in `body`; an empty body is the default one.
fn settle_body(body: &[u8]) -> ApiResult<Settlement> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Settlement::default());
    }
    crate::http::extract::parse_json(body)
}

/// What a settlement of the stack `stack` changes.
fn settlement_deps(stack: &Stack) -> settlements::Deps<'_> {
    settlements::Deps { ledger: &stack.engine, attention: &stack.attention }
}

/// Complete or fail a pending payout (the manual-settlement rail)
#[utoipa::path(post, path = "/admin/v1/{stack}/payouts/{id}/{action}", operation_id = "settlePayout",
    security(("operator" = [])),
    params(StackId<PayoutEnvelope>, ("action" = String, Path, description = "`complete` or `fail`")),
    request_body(content = Option<Settlement>, description = "Optional; an empty body takes the default message. A provider reference and note go on the timeline and into the audit log"),
    responses((status = 200, description = "The payout, settled", body = PayoutEnvelope),
        (status = 400, description = "The body is not a settlement, or a field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        (status = 404, description = "Unknown stack, payout or action", body = ErrorBody),
        (status = 409, description = "The payout is already final (`invalid_state`)", body = ErrorBody),
        AdminRefusals),
)]
async fn settle_payout(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, action)): Path<(String, sika_engine::PayoutId, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let settlement = settle_body(&body)?;
    let stack = state.stack(&stack)?;
    let settled = settlements::settle_payout(&settlement_deps(stack), &id, &action, settlement).await?;
    Ok(with_detail(Json(PayoutEnvelope { payout: settled.view }), settled.audit))
}

/// Complete or fail a pending collection (the manual-settlement rail)
#[utoipa::path(post, path = "/admin/v1/{stack}/collections/{id}/{action}", operation_id = "settleCollection",
    security(("operator" = [])),
    params(StackId<CollectionEnvelope>, ("action" = String, Path, description = "`complete` or `fail`")),
    request_body(content = Option<Settlement>, description = "Optional; an empty body takes the default message. A provider reference and note go on the timeline and into the audit log"),
    responses((status = 200, description = "The collection, settled", body = CollectionEnvelope),
        (status = 400, description = "The body is not a settlement, or a field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        (status = 404, description = "Unknown stack, collection or action", body = ErrorBody),
        (status = 409, description = "The collection is already final (`invalid_state`)", body = ErrorBody),
        AdminRefusals),
)]
async fn settle_collection(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, action)): Path<(String, sika_engine::CollectionId, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let settlement = settle_body(&body)?;
    let stack = state.stack(&stack)?;
    let settled = settlements::settle_collection(&settlement_deps(stack), &id, &action, settlement).await?;
    Ok(with_detail(Json(CollectionEnvelope { collection: settled.view }), settled.audit))
}

/// Complete or fail a pending refund (the operator returns the money by hand)
///
/// For a live refund whose payment's rail has no connector that refunds:
/// `complete` once the money went back to the payer (the hold is taken),
/// `fail` when it could not (the hold is released).
#[utoipa::path(post, path = "/admin/v1/{stack}/refunds/{id}/{action}", operation_id = "settleRefund",
    security(("operator" = [])),
    params(StackId<RefundEnvelope>, ("action" = String, Path, description = "`complete` or `fail`")),
    request_body(content = Option<Settlement>, description = "Optional; an empty body takes the default message. A provider reference and note go on the timeline and into the audit log"),
    responses((status = 200, description = "The refund, settled", body = RefundEnvelope),
        (status = 400, description = "The body is not a settlement, or a field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        (status = 404, description = "Unknown stack, refund or action", body = ErrorBody),
        (status = 409, description = "The refund is already final (`invalid_state`)", body = ErrorBody),
        AdminRefusals),
)]
async fn settle_refund(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, action)): Path<(String, sika_engine::RefundId, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let settlement = settle_body(&body)?;
    let stack = state.stack(&stack)?;
    let settled = settlements::settle_refund(&settlement_deps(stack), &id, &action, settlement).await?;
    Ok(with_detail(Json(RefundEnvelope { refund: settled.view }), settled.audit))
}

/// Refunds waiting for the operator, oldest first
///
/// Pending refunds whose payment's rail has no connector that refunds:
/// the operator returns the money and completes (or fails) each. At most
/// 1,000, `hasMore` when there are more.
#[utoipa::path(get, path = "/admin/v1/{stack}/refunds/awaiting-operator", operation_id = "listRefundsAwaitingOperator",
    security(("operator" = [])), params(StackPath),
    responses(
        (status = 200, description = "The refunds, each with its organization", body = ListPage<Owned<Refund>>),
        StackRefusals),
)]
async fn refunds_awaiting_operator(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<ListPage<Owned<Refund>>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(crate::domain::refunds::awaiting_operator(&stack.engine)?))
}

/// A response carrying what the audit log adds to the action.
fn with_detail(body: impl IntoResponse, detail: Option<String>) -> Response {
    let mut response = body.into_response();
    if let Some(detail) = detail {
        response.extensions_mut().insert(audit::AuditDetail(detail));
    }
    response
}
