//! The operator's admin API on its own listener: `/admin/v1`, every path
//! behind the operator token.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use tower_http::catch_panic::CatchPanicLayer;

use crate::envelope::{EnvelopeState, envelope};
use crate::error::{ApiError, ApiResult};
use crate::identity::{Identity, Organization};
use crate::render::{self, timestamp};
use crate::stack::{Stack, StackKind};
use sika_engine::movements::Step;
use sika_engine::{Command, Outcome};

mod activity;
mod ledger;
mod webhooks;

pub struct AdminState {
    pub identity: Arc<Identity>,
    pub live: Arc<Stack>,
    pub sandbox: Arc<Stack>,
    pub started: Instant,
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

pub fn app(state: Arc<AdminState>, health: Arc<crate::health::Health>) -> Router {
    Router::new()
        .route("/admin/v1/status", get(status))
        .route("/admin/v1/organizations", get(organizations))
        .route("/admin/v1/organizations/{id}", get(organization))
        .route("/admin/v1/organizations/{id}/suspend", post(suspend))
        .route("/admin/v1/organizations/{id}/reinstate", post(reinstate))
        .route("/admin/v1/{stack}/accounts", get(accounts))
        .route("/admin/v1/{stack}/verify", post(ledger::verify))
        .route("/admin/v1/{stack}/payouts", get(activity::payouts))
        .route("/admin/v1/{stack}/payouts/{id}", get(activity::payout))
        .route("/admin/v1/{stack}/collections", get(activity::collections))
        .route("/admin/v1/{stack}/collections/{id}", get(activity::collection))
        .route("/admin/v1/{stack}/orders", get(activity::orders))
        .route("/admin/v1/{stack}/orders/{id}", get(activity::order))
        .route("/admin/v1/{stack}/orders/{id}/funds", post(activity::order_funds))
        .route("/admin/v1/{stack}/disputes", get(activity::disputes))
        .route("/admin/v1/{stack}/disputes/{id}", get(activity::dispute))
        .route("/admin/v1/{stack}/disputes/{id}/resolve", post(activity::resolve_dispute))
        .route("/admin/v1/{stack}/webhooks/endpoints", get(webhooks::endpoints))
        .route("/admin/v1/{stack}/webhooks/endpoints/{id}/attempts", get(webhooks::attempts))
        .route("/admin/v1/{stack}/webhooks/endpoints/{id}/enable", post(webhooks::enable))
        .route("/admin/v1/{stack}/webhooks/deliveries", get(webhooks::deliveries))
        .route("/admin/v1/{stack}/webhooks/deliveries/{id}/retry", post(webhooks::retry))
        .route("/admin/v1/requests/{id}", get(request))
        .route("/admin/v1/{stack}/payouts/{id}/{action}", post(settle_payout))
        .route("/admin/v1/{stack}/collections/{id}/{action}", post(settle_collection))
        .route_layer(from_fn_with_state(state.clone(), require_operator))
        .with_state(state)
        // Liveness and readiness: no operator token.
        .merge(crate::health::router(health))
        .layer(CatchPanicLayer::new())
        .layer(from_fn_with_state(EnvelopeState::None, envelope))
}

async fn require_operator(State(state): State<Arc<AdminState>>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::auth::bearer_token);
    match token {
        Some(token) if token.starts_with("adm_") && state.identity.is_admin_token(token) => {
            next.run(request).await
        }
        Some(_) => ApiError::unauthorized("invalid operator token").into_response(),
        None => {
            ApiError::unauthorized("missing operator token; send Authorization: Bearer adm_…").into_response()
        }
    }
}

fn render_organization(org: &Organization) -> Value {
    json!({
        "id": org.id,
        "name": org.name,
        "status": if org.suspended { "suspended" } else { "active" },
        "createdAt": timestamp(org.created_at),
    })
}

async fn organizations(State(state): State<Arc<AdminState>>) -> Json<Value> {
    let data: Vec<Value> = state.identity.organizations().iter().map(render_organization).collect();
    Json(json!({ "data": data, "hasMore": false, "nextCursor": null }))
}

fn balances(stack: &Stack, organization: &str) -> ApiResult<Vec<Value>> {
    let accounts = stack.engine.read()?.organization_accounts(organization)?;
    let usd_per_unit = |currency: &str| stack.engine.mid_rate(currency, "USD");
    accounts.iter().map(|a| Ok(render::to_json(&render::account(a, usd_per_unit(&a.currency))?))).collect()
}

async fn organization(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let org = state
        .identity
        .organization(&id)
        .ok_or_else(|| ApiError::not_found(format!("organization '{id}' not found")))?;
    let mut body = render_organization(&org);
    body["balances"] =
        json!({ "live": balances(&state.live, &id)?, "sandbox": balances(&state.sandbox, &id)? });
    Ok(Json(json!({ "organization": body })))
}

async fn set_suspended(state: &AdminState, id: &str, suspended: bool) -> ApiResult<Json<Value>> {
    let org = state
        .identity
        .set_suspended(id, suspended)
        .map_err(|e| {
            tracing::error!(error = %e, "cannot update organization");
            ApiError::internal()
        })?
        .ok_or_else(|| ApiError::not_found(format!("organization '{id}' not found")))?;
    Ok(Json(json!({ "organization": render_organization(&org) })))
}

async fn suspend(State(state): State<Arc<AdminState>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    set_suspended(&state, &id, true).await
}

async fn reinstate(State(state): State<Arc<AdminState>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    set_suspended(&state, &id, false).await
}

/// Every organization's balance accounts on one stack, totals per
/// currency, and the ledger's own figures.
async fn accounts(State(state): State<Arc<AdminState>>, Path(stack): Path<String>) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let mut data = Vec::new();
    for org in state.identity.organizations() {
        for mut account in balances(stack, &org.id)? {
            account["organizationId"] = Value::String(org.id.clone());
            data.push(account);
        }
    }
    let totals = ledger::totals(stack, &state.identity)?;
    let journal_length = stack.engine.read()?.journal_length()?;
    Ok(Json(json!({
        "data": data,
        "hasMore": false,
        "nextCursor": null,
        "totals": totals,
        "ledger": { "journalLength": journal_length, "lastVerify": stack.last_verify() },
    })))
}

/// A logged request, whichever workspace made it.
async fn request(State(state): State<Arc<AdminState>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    for stack in [&state.live, &state.sandbox] {
        if let Some(entry) = stack.request_log.find(&id) {
            return Ok(Json(json!({
                "request": entry.render(),
                "stack": stack.kind.name(),
                "organizationId": entry.organization,
            })));
        }
    }
    Err(ApiError::not_found(format!("request '{id}' not found")))
}

async fn status(State(state): State<Arc<AdminState>>) -> ApiResult<Json<Value>> {
    let stack_status = |stack: &Stack| -> ApiResult<Value> {
        let stats = stack.engine.stats();
        let file = state_file_size(stack);
        Ok(json!({
            "journalLength": stack.engine.read()?.journal_length()?,
            "commits": stats.commits,
            "commands": stats.commands,
            "commandsFailed": stats.commands_failed,
            "transfers": stats.transfers,
            "writerQueueDepth": stats.queue_depth,
            "databaseBytes": file,
        }))
    };
    Ok(Json(json!({
        "status": {
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeSeconds": state.started.elapsed().as_secs(),
            "live": stack_status(&state.live)?,
            "sandbox": stack_status(&state.sandbox)?,
        }
    })))
}

fn state_file_size(stack: &Stack) -> u64 {
    std::fs::metadata(stack.config.data_dir.join(stack.kind.database_file())).map(|m| m.len()).unwrap_or(0)
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SettleRequest {
    message: Option<String>,
}

fn settle_step(action: &str, message: Option<String>) -> ApiResult<Step> {
    let success = match action {
        "complete" => true,
        "fail" => false,
        other => return Err(ApiError::not_found(format!("unknown action '{other}'; use complete or fail"))),
    };
    let message = message.unwrap_or_else(|| {
        if success { "Confirmed by the operator".to_string() } else { "Failed by the operator".to_string() }
    });
    Ok(Step::Settle { success, message })
}

fn already_final(what: &str, status: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::CONFLICT,
        "invalid_state",
        format!("the {what} is already {status}"),
    )
}

fn settle_body(body: axum::body::Bytes) -> ApiResult<SettleRequest> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(SettleRequest::default());
    }
    crate::extract::parse_json(&body)
}

/// The manual-settlement rail: the operator confirms or fails a payout.
async fn settle_payout(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, action)): Path<(String, String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let step = settle_step(&action, settle_body(body)?.message)?;
    settle(state.stack(&stack)?, Command::AdvancePayout { payout_id: id, step }).await
}

async fn settle_collection(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, action)): Path<(String, String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let step = settle_step(&action, settle_body(body)?.message)?;
    settle(state.stack(&stack)?, Command::AdvanceCollection { collection_id: id, step }).await
}

/// Applies a settlement; a movement that was already final is `409 invalid_state`.
async fn settle(stack: &Stack, command: Command) -> ApiResult<Json<Value>> {
    let applied = stack.engine.execute(command).await?;
    let (key, status, body) = match &applied.outcome {
        Outcome::Payout(p) => ("payout", p.status, render::to_json(&render::payout(p, &[]))),
        Outcome::Collection(c) => ("collection", c.status, render::to_json(&render::collection(c, &[]))),
        _ => return Err(ApiError::internal()),
    };
    if applied.replayed {
        return Err(already_final(key, status.name()));
    }
    if let Ok(webhooks) = stack.webhooks() {
        webhooks.wake();
    }
    Ok(Json(json!({ key: body })))
}
