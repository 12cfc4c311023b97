//! Webhook health for the operator: per endpoint success rate, latency,
//! consecutive failures, pending and failed deliveries; retry and re-enable.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::render::{timestamp, to_json};
use crate::webhooks::{Delivery, DeliveryStatus, load_delivery, load_endpoint, render_endpoint};

/// Recent deliveries looked at per organization.
const RECENT_DELIVERIES_MAX: usize = 1_000;

fn recent_deliveries(state: &AdminState, stack: &crate::stack::Stack) -> ApiResult<Vec<Delivery>> {
    let snapshot = stack.engine.read()?;
    let mut out = Vec::new();
    for org in state.identity.organizations() {
        for (_, id) in snapshot.list(&org.id, "webhook_deliveries", None, RECENT_DELIVERIES_MAX)? {
            if let Some(d) = load_delivery(&snapshot, &id)? {
                out.push(d);
            }
        }
    }
    Ok(out)
}

pub async fn endpoints(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let deliveries = recent_deliveries(&state, stack)?;
    let mut by_endpoint: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &deliveries {
        by_endpoint.entry(&d.endpoint_id).or_default().push(d);
    }
    let snapshot = stack.engine.read()?;
    let mut data = Vec::new();
    for org in state.identity.organizations() {
        for (_, id) in snapshot.list(&org.id, "webhook_endpoints", None, 1_000)? {
            let Some((endpoint, health)) = load_endpoint(&snapshot, &id)? else { continue };
            let mine = by_endpoint.get(endpoint.id.as_str()).cloned().unwrap_or_default();
            let attempts: Vec<_> = mine.iter().flat_map(|d| d.attempts.iter()).collect();
            let succeeded = attempts.iter().filter(|a| a.succeeded).count();
            let success_rate = (!attempts.is_empty()).then(|| succeeded as f64 / attempts.len() as f64);
            let latency = (!attempts.is_empty())
                .then(|| attempts.iter().map(|a| a.duration_ms).sum::<u64>() as f64 / attempts.len() as f64);
            let mut body = to_json(&render_endpoint(&endpoint, &health));
            body["organizationId"] = Value::String(org.id.clone());
            body["successRate"] = json!(success_rate);
            body["averageLatencyMs"] = json!(latency);
            body["pendingDeliveries"] =
                json!(mine.iter().filter(|d| d.status == DeliveryStatus::Pending).count());
            body["failedDeliveries"] =
                json!(mine.iter().filter(|d| d.status == DeliveryStatus::Failed).count());
            body["lastAttemptAt"] = json!(health.last_attempt_at.map(timestamp));
            data.push(body);
        }
    }
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}

pub async fn attempts(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let mut rows = Vec::new();
    for d in recent_deliveries(&state, stack)?.iter().filter(|d| d.endpoint_id == id) {
        for a in &d.attempts {
            rows.push((
                a.at,
                json!({
                    "deliveryId": d.id,
                    "event": d.event_kind,
                    "at": timestamp(a.at),
                    "statusCode": a.status_code,
                    "durationMs": a.duration_ms,
                    "error": a.error,
                    "succeeded": a.succeeded,
                }),
            ));
        }
    }
    rows.sort_by_key(|row| std::cmp::Reverse(row.0));
    let data: Vec<Value> = rows.into_iter().take(100).map(|(_, v)| v).collect();
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}

#[derive(Deserialize, Default)]
pub struct DeliveryQuery {
    status: Option<String>,
}

pub async fn deliveries(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<DeliveryQuery>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let mut all = recent_deliveries(&state, stack)?;
    all.retain(|d| query.status.as_deref().is_none_or(|s| s == d.status.name()));
    all.sort_by_key(|d| std::cmp::Reverse(d.created_at));
    let data: Vec<Value> = all
        .iter()
        .take(100)
        .map(|d| {
            let mut v = to_json(&d.render());
            v["organizationId"] = Value::String(d.organization.clone());
            v
        })
        .collect();
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}

pub async fn retry(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let delivery = load_delivery(&stack.engine.read()?, &id)?
        .ok_or_else(|| ApiError::not_found(format!("delivery '{id}' not found")))?;
    let delivery = stack.webhooks()?.retry_now(&delivery.organization, &id).await?;
    Ok(Json(json!({ "delivery": delivery.render() })))
}

pub async fn enable(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?;
    let (endpoint, _) = load_endpoint(&stack.engine.read()?, &id)?
        .ok_or_else(|| ApiError::not_found(format!("webhook endpoint '{id}' not found")))?;
    let health = stack.webhooks()?.set_enabled(&id, true).await?;
    Ok(Json(json!({ "webhookEndpoint": render_endpoint(&endpoint, &health) })))
}
