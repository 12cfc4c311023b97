//! Payouts, collections, orders and disputes across organizations, searchable by id,
//! externalReference and status.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};
use sika_engine::Snapshot;

use super::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination::{PageQuery, Paging, list_body};
use crate::render;
use crate::stack::Stack;
use crate::webhooks::timeline_entries;

/// Items scanned per organization when searching.
const SCAN_PER_ORGANIZATION_MAX: usize = 5_000;

#[derive(Deserialize, Default)]
pub struct ActivityQuery {
    limit: Option<String>,
    cursor: Option<String>,
    /// An id or an externalReference.
    q: Option<String>,
    status: Option<String>,
}

/// (organization, rendered item, createdAt, externalReference, status)
type Row = (String, Value);

fn search(
    state: &AdminState,
    stack: &Stack,
    kind: &str,
    query: &ActivityQuery,
    render: impl Fn(&Snapshot, &str) -> ApiResult<Option<Value>>,
) -> ApiResult<Value> {
    let scope = format!("admin/{}/{kind}", stack.kind.name());
    let secret = state.identity.secret();
    let page =
        PageQuery { limit: query.limit.clone(), cursor: query.cursor.clone() }.page(&secret, &scope)?;
    let snapshot = stack.engine.read()?;
    let mut rows: Vec<Row> = Vec::new();
    for org in state.identity.organizations() {
        for (_, id) in snapshot.list(&org.id, kind, None, SCAN_PER_ORGANIZATION_MAX)? {
            let Some(mut item) = render(&snapshot, &id)? else { continue };
            let matches_q = query.q.as_deref().is_none_or(|q| {
                item["id"].as_str() == Some(q) || item["externalReference"].as_str() == Some(q)
            });
            let matches_status = query.status.as_deref().is_none_or(|s| item["status"].as_str() == Some(s));
            if matches_q && matches_status {
                item["organizationId"] = Value::String(org.id.clone());
                rows.push((item["createdAt"].as_str().unwrap_or_default().to_string(), item));
            }
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0));
    // The cursor is the offset into this newest-first result.
    let start = page.before.unwrap_or(0) as usize;
    let end = (start + page.limit).min(rows.len());
    let has_more = end < rows.len();
    let data: Vec<Value> = rows.into_iter().skip(start).take(page.limit).map(|(_, v)| v).collect();
    Ok(list_body(data, Some(end as u64), has_more, &secret, &scope))
}

pub async fn payouts(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    Ok(Json(search(&state, stack, "payouts", &query, |s, id| {
        Ok(s.payout(id)?.map(|p| render::to_json(&render::payout(&p, &[]))))
    })?))
}

pub async fn payout(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let payout =
        snapshot.payout(&id)?.ok_or_else(|| ApiError::not_found(format!("payout '{id}' not found")))?;
    let deliveries = timeline_entries(&snapshot, &payout.organization, &id)?;
    let mut body = render::to_json(&render::payout(&payout, &deliveries));
    body["organizationId"] = Value::String(payout.organization.clone());
    Ok(Json(json!({ "payout": body })))
}

pub async fn collections(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    Ok(Json(search(&state, stack, "collections", &query, |s, id| {
        Ok(s.collection(id)?.map(|c| render::to_json(&render::collection(&c, &[]))))
    })?))
}

pub async fn collection(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let collection = snapshot
        .collection(&id)?
        .ok_or_else(|| ApiError::not_found(format!("collection '{id}' not found")))?;
    let deliveries = timeline_entries(&snapshot, &collection.organization, &id)?;
    let mut body = render::to_json(&render::collection(&collection, &deliveries));
    body["organizationId"] = Value::String(collection.organization.clone());
    Ok(Json(json!({ "collection": body })))
}

pub async fn orders(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    Ok(Json(search(&state, stack, "orders", &query, |s, id| {
        let Some(order) = s.order(id)? else { return Ok(None) };
        Ok(crate::routes::orders::render_full(s, &order.organization, id)?.map(|o| render::to_json(&o)))
    })?))
}

pub async fn order(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let order = snapshot.order(&id)?.ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    let view = crate::routes::orders::render_full(&snapshot, &order.organization, &id)?
        .ok_or_else(ApiError::internal)?;
    let mut body = render::to_json(&view);
    body["organizationId"] = Value::String(order.organization.clone());
    Ok(Json(json!({ "order": body })))
}

/// Every organization's disputes on one stack, each with its thread (the
/// console shows them without another request); `status` filters like the
/// public list (`resolved` matches accepted and declined).
pub async fn disputes(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    crate::disputes::check_status_filter(query.status.as_deref())?;
    // The status filter is applied here (it knows `resolved`), not by `search`.
    let status = query.status.clone();
    let query = ActivityQuery { status: None, ..query };
    Ok(Json(search(&state, stack, crate::disputes::COLLECTION, &query, |s, id| {
        let Some((dispute, _)) = crate::disputes::load(s, id)? else { return Ok(None) };
        if !crate::disputes::status_matches(&dispute, status.as_deref()) {
            return Ok(None);
        }
        crate::disputes::render(s, &dispute).map(|view| Some(render::to_json(&view)))
    })?))
}

fn admin_dispute(organization: &str, mut body: Value) -> Json<Value> {
    body["organizationId"] = Value::String(organization.to_string());
    Json(json!({ "dispute": body }))
}

pub async fn dispute(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = crate::disputes::load_for(&snapshot, None, &id)?;
    Ok(admin_dispute(&dispute.organization, render::to_json(&crate::disputes::render(&snapshot, &dispute)?)))
}

/// The operator resolves a dispute (on either stack): body `{outcome}`.
pub async fn resolve_dispute(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let request: sika_api::disputes::ResolveDispute = crate::extract::parse_json(&body)?;
    let stack = state.stack(&stack)?;
    let resolved = crate::disputes::resolve(stack, None, &id, &request.outcome).await?;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = crate::disputes::load_for(&snapshot, None, &id)?;
    Ok(admin_dispute(&dispute.organization, render::to_json(&resolved)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FundsRequest {
    amount: crate::render::AmountInput,
    confirmations: Option<u32>,
}

/// The manual rail for orders: the operator records the funds that arrived
/// (on live there is no simulator), and the order proceeds on actuals.
pub async fn order_funds(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let request: FundsRequest = crate::extract::parse_json(&body)?;
    let stack = state.stack(&stack)?;
    let order = stack
        .engine
        .read()?
        .order(&id)?
        .ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    let owner = state
        .identity
        .organization(&order.organization)
        .and_then(|o| state.identity.member(&o.owner_member_id))
        .ok_or_else(ApiError::internal)?;
    let currency = sika_engine::Currency::find(&order.from_currency).map_err(|_| ApiError::internal())?;
    let amount =
        currency.parse(request.amount.as_str(), false).map_err(|e| crate::error::money_error("amount", e))?;
    let confirmations = request.confirmations.unwrap_or(order.required_confirmations);
    let principal = crate::auth::Principal::Session(owner);
    let funds = crate::movements::order_funds(stack, &principal, &order, amount, confirmations)?;
    stack.engine.execute(sika_engine::Command::OrderFunds(funds)).await?;
    if let Ok(webhooks) = stack.webhooks() {
        webhooks.wake();
    }
    let snapshot = stack.engine.read()?;
    let view = crate::routes::orders::render_full(&snapshot, &order.organization, &id)?
        .ok_or_else(ApiError::internal)?;
    let mut body = render::to_json(&view);
    body["organizationId"] = Value::String(order.organization.clone());
    Ok(Json(json!({ "order": body })))
}
