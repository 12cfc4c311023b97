//! Webhook health for the operator: per endpoint success rate, latency,
//! consecutive failures, pending and failed deliveries; retry and re-enable.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{
    DeliveryStatusQuery, EndpointAttempt, EndpointHealth, Owned, StackPath, StackRefusals,
};
use sika_api::admin::{StackId, StackItemRefusals};
use sika_api::webhooks::{WebhookDelivery, WebhookDeliveryEnvelope, WebhookEndpointEnvelope};
use sika_api::{ErrorBody, ListPage};

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::render::timestamp;
use crate::domain::webhooks::{Delivery, DeliveryStatus, load_delivery, load_endpoint, render_endpoint};
use crate::http::extract::ApiQuery;
use crate::http::found::found;

/// Recent deliveries looked at per organization.
const RECENT_DELIVERIES_MAX: usize = 1_000;

fn recent_deliveries(state: &AdminState, stack: &crate::domain::stack::Stack) -> ApiResult<Vec<Delivery>> {
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

/// Every webhook endpoint on a stack, with its recent delivery health
#[utoipa::path(get, path = "/admin/v1/{stack}/webhooks/endpoints", operation_id = "listEndpointHealth",
    security(("operator" = [])), params(StackPath),
    responses((status = 200, description = "Every endpoint, in one page", body = ListPage<EndpointHealth>),
        StackRefusals),
)]
pub(super) async fn endpoints(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<ListPage<EndpointHealth>>> {
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
            let count = |status| mine.iter().filter(|d| d.status == status).count() as u64;
            let last_failure = attempts.iter().filter(|a| !a.succeeded).max_by_key(|a| a.at);
            data.push(EndpointHealth {
                organization_id: org.id.clone(),
                endpoint: render_endpoint(&endpoint, &health),
                success_rate,
                average_latency_ms: latency,
                pending_deliveries: count(DeliveryStatus::Pending),
                failed_deliveries: count(DeliveryStatus::Failed),
                last_attempt_at: health.last_attempt_at.map(timestamp),
                last_error: last_failure.map(|a| a.error.clone().unwrap_or_else(|| "failed".into())),
                last_error_at: last_failure.map(|a| timestamp(a.at)),
            });
        }
    }
    Ok(Json(ListPage::whole(data)))
}

/// The last 100 delivery attempts to one endpoint, newest first
#[utoipa::path(
    get, path = "/admin/v1/{stack}/webhooks/endpoints/{id}/attempts", operation_id = "listEndpointAttempts",
    security(("operator" = [])), params(StackId<WebhookEndpointEnvelope>),
    responses((status = 200, description = "The attempts, in one page", body = ListPage<EndpointAttempt>),
        StackRefusals),
)]
pub(super) async fn attempts(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<ListPage<EndpointAttempt>>> {
    let stack = state.stack(&stack)?;
    let mut rows = Vec::new();
    for d in recent_deliveries(&state, stack)?.iter().filter(|d| d.endpoint_id == id) {
        for a in &d.attempts {
            rows.push((
                a.at,
                EndpointAttempt {
                    delivery_id: d.id.clone(),
                    event: d.event_kind.clone(),
                    at: timestamp(a.at),
                    status_code: a.status_code,
                    duration_ms: a.duration_ms,
                    error: a.error.clone(),
                    succeeded: a.succeeded,
                },
            ));
        }
    }
    rows.sort_by_key(|row| std::cmp::Reverse(row.0));
    let data = rows.into_iter().take(100).map(|(_, v)| v).collect();
    Ok(Json(ListPage::whole(data)))
}

/// The last 100 deliveries on a stack, newest first
#[utoipa::path(get, path = "/admin/v1/{stack}/webhooks/deliveries", operation_id = "listStackDeliveries",
    security(("operator" = [])), params(StackPath, DeliveryStatusQuery),
    responses(
        (status = 200, description = "The deliveries, in one page", body = ListPage<Owned<WebhookDelivery>>),
        (status = 400, description = "An unknown query parameter (`validation_error`)", body = ErrorBody),
        StackRefusals),
)]
pub(super) async fn deliveries(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<DeliveryStatusQuery>,
) -> ApiResult<Json<ListPage<Owned<WebhookDelivery>>>> {
    let stack = state.stack(&stack)?;
    let mut all = recent_deliveries(&state, stack)?;
    all.retain(|d| query.status.as_deref().is_none_or(|s| s == d.status.name()));
    all.sort_by_key(|d| std::cmp::Reverse(d.created_at));
    let data = all
        .iter()
        .take(100)
        .map(|d| Owned { organization_id: d.organization.clone(), item: d.render() })
        .collect();
    Ok(Json(ListPage::whole(data)))
}

/// Retry a delivery now, outside its schedule
#[utoipa::path(
    post, path = "/admin/v1/{stack}/webhooks/deliveries/{id}/retry", operation_id = "retryStackDelivery",
    security(("operator" = [])), params(StackId<WebhookDeliveryEnvelope>),
    responses(
        (status = 200, description = "The delivery with the new attempt", body = WebhookDeliveryEnvelope),
        StackItemRefusals<WebhookDeliveryEnvelope>),
)]
pub(super) async fn retry(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<WebhookDeliveryEnvelope>> {
    let stack = state.stack(&stack)?;
    let delivery = found(load_delivery(&stack.engine.read()?, &id)?, "delivery", &id)?;
    let delivery = stack.webhooks()?.retry_now(&delivery.organization, &id).await?;
    Ok(Json(WebhookDeliveryEnvelope { delivery: delivery.render() }))
}

/// Enable an endpoint that failures disabled
#[utoipa::path(
    post, path = "/admin/v1/{stack}/webhooks/endpoints/{id}/enable", operation_id = "enableStackEndpoint",
    security(("operator" = [])), params(StackId<WebhookEndpointEnvelope>),
    responses((status = 200, description = "The endpoint, enabled", body = WebhookEndpointEnvelope),
        StackItemRefusals<WebhookEndpointEnvelope>),
)]
pub(super) async fn enable(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<WebhookEndpointEnvelope>> {
    let stack = state.stack(&stack)?;
    let (endpoint, _) = found(load_endpoint(&stack.engine.read()?, &id)?, "webhook endpoint", &id)?;
    let health = stack.webhooks()?.set_enabled(&id, true).await?;
    Ok(Json(WebhookEndpointEnvelope { webhook_endpoint: render_endpoint(&endpoint, &health) }))
}
