//! The use cases that manage webhook endpoints and deliveries: a member's
//! or key's (`/v1/webhooks/…`) and the operator's (`/admin/v1/{stack}/webhooks/…`).

use std::collections::HashMap;

use sika_api::admin::{EndpointAttempt, EndpointHealth, Owned};
use sika_api::webhooks::{
    CreateWebhookEndpoint, CreatedWebhookEndpoint, DeletedWebhookEndpoint, DeliveryFilter,
    UpdateWebhookEndpoint, WebhookDelivery, WebhookEndpoint, WebhookEndpointRef, WebhookTestSent,
};
use sika_api::{ListPage, ListQuery};
use sika_engine::{Command, Engine, EventKind, EventPayload, Snapshot};

use super::address::Guard;
use super::dispatcher::DispatcherHandle;
use super::{
    DELIVERIES, Delivery, DeliveryStatus, ENDPOINTS, Endpoint, Health, check_events, check_url,
    load_delivery, load_endpoint, render_endpoint, save_endpoint, signing,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::pagination::Lists;
use crate::domain::ratelimit::RateLimiter;
use crate::domain::render::timestamp;

/// What managing one stack's endpoints and deliveries needs.
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    /// Where this stack's endpoints may point.
    pub guard: Guard,
    /// The running dispatcher; `None` before it starts.
    pub dispatcher: Option<&'a DispatcherHandle>,
    /// Manual retries per delivery (`RETRIES_PER_SECOND_MAX`).
    pub retries: &'a RateLimiter,
}

impl Deps<'_> {
    fn dispatcher(&self) -> ApiResult<&DispatcherHandle> {
        self.dispatcher.ok_or_else(ApiError::unavailable)
    }
}

/// `POST /v1/webhooks/endpoints`: the endpoint with its signing secret,
/// shown this once.
pub(crate) async fn create(
    deps: &Deps<'_>,
    organization: &str,
    request: CreateWebhookEndpoint,
) -> ApiResult<CreatedWebhookEndpoint> {
    check_url(&request.url, &deps.guard)?;
    check_events(&request.events)?;
    let now = deps.engine.now_ms();
    let endpoint = Endpoint {
        id: sika_engine::ids::new_id("we"),
        organization: organization.to_string(),
        url: request.url,
        events: request.events,
        description: request.description,
        secret: signing::new_secret(),
        created_at: now,
        updated_at: now,
    };
    save_endpoint(deps.engine, &endpoint, true).await?;
    Ok(CreatedWebhookEndpoint {
        endpoint: render_endpoint(&endpoint, &Health::default()),
        secret: endpoint.secret,
    })
}

/// `GET /v1/webhooks/endpoints`: one page of the organization's endpoints,
/// newest first. Deleted endpoints stay in the index; loading one finds
/// nothing.
pub(crate) fn list(
    lists: &Lists,
    organization: &str,
    query: &ListQuery,
) -> ApiResult<ListPage<WebhookEndpoint>> {
    lists.page(organization, ENDPOINTS, query, |snapshot, id| {
        Ok(load_endpoint(snapshot, id)?.map(|(endpoint, health)| render_endpoint(&endpoint, &health)))
    })
}

/// `PATCH /v1/webhooks/endpoints/{id}`: only the fields sent change;
/// `status` re-enables (resetting the failure count) or disables it.
pub(crate) async fn update(
    deps: &Deps<'_>,
    (mut endpoint, mut health): (Endpoint, Health),
    request: UpdateWebhookEndpoint,
) -> ApiResult<WebhookEndpoint> {
    let enable = match request.status.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("disabled") => Some(false),
        Some(_) => return Err(ApiError::validation("status", "must be 'active' or 'disabled'")),
    };
    if let Some(url) = request.url {
        check_url(&url, &deps.guard)?;
        endpoint.url = url;
    }
    if let Some(events) = request.events {
        check_events(&events)?;
        endpoint.events = events;
    }
    if let Some(description) = request.description {
        endpoint.description = description;
    }
    endpoint.updated_at = deps.engine.now_ms();
    save_endpoint(deps.engine, &endpoint, false).await?;
    if let Some(enabled) = enable {
        health = deps.dispatcher()?.set_enabled(&endpoint.id, enabled).await?;
    }
    Ok(render_endpoint(&endpoint, &health))
}

/// `DELETE /v1/webhooks/endpoints/{id}`: nothing more is sent to it; its
/// pending deliveries fail.
pub(crate) async fn delete(engine: &Engine, endpoint: Endpoint) -> ApiResult<DeletedWebhookEndpoint> {
    let emptied = Command::PutDocument {
        collection: ENDPOINTS.into(),
        id: endpoint.id.clone(),
        body: Vec::new(),
        list: None,
    };
    engine.execute(emptied).await?;
    Ok(DeletedWebhookEndpoint { id: endpoint.id, deleted: true })
}

/// `POST /v1/webhooks/endpoints/{id}/test`: records a `webhook.test` event
/// for this endpoint only. A disabled endpoint is refused: a test that
/// could never be delivered would only look like a failure.
pub(crate) async fn send_test(
    deps: &Deps<'_>,
    (endpoint, health): (Endpoint, Health),
) -> ApiResult<WebhookTestSent> {
    if health.disabled {
        let id = &endpoint.id;
        return Err(ApiError::bad_request(format!(
            "webhook endpoint '{id}' is disabled; re-enable it with PATCH /v1/webhooks/endpoints/{id} \
             {{\"status\": \"active\"}} before testing it"
        ))
        .with_detail("status", "disabled"));
    }
    deps.engine
        .execute(Command::RecordEvent {
            organization: endpoint.organization.clone(),
            kind: EventKind::WebhookTest,
            payload: Box::new(EventPayload::WebhookTest { endpoint_id: endpoint.id.clone() }),
        })
        .await?;
    Ok(WebhookTestSent {
        webhook_endpoint: WebhookEndpointRef { id: endpoint.id },
        event: EventKind::WebhookTest.name().into(),
    })
}

/// `GET /v1/webhooks/deliveries`: one page of the organization's
/// deliveries, newest first, those passing every filter given.
pub(crate) fn list_deliveries(
    lists: &Lists,
    organization: &str,
    query: &ListQuery,
    filter: &DeliveryFilter,
) -> ApiResult<ListPage<WebhookDelivery>> {
    if let Some(status) = &filter.status
        && !["pending", "succeeded", "failed"].contains(&status.as_str())
    {
        return Err(ApiError::validation("status", "must be pending, succeeded or failed"));
    }
    lists.page(organization, DELIVERIES, query, |snapshot, id| {
        Ok(load_delivery(snapshot, id)?.filter(|d| matches(filter, d)).map(|d| d.render()))
    })
}

/// Whether `delivery` passes every filter given. `status` is the
/// delivery's own (CONTRACT.md: a filter matches the field it names);
/// what needs attention, a latest attempt that failed while retries
/// remain too, is `lastAttemptFailed`.
fn matches(filter: &DeliveryFilter, delivery: &Delivery) -> bool {
    let last_failed = delivery.attempts.last().is_some_and(|a| !a.succeeded);
    filter.status.as_deref().is_none_or(|s| s == delivery.status.name())
        && filter.last_attempt_failed.is_none_or(|wanted| wanted == last_failed)
        && filter.endpoint_id.as_deref().is_none_or(|e| e == delivery.endpoint_id)
        && filter.event_id.as_deref().is_none_or(|e| e == delivery.event_id)
        && filter.event.as_deref().is_none_or(|e| e == delivery.event_kind)
        && filter.resource_id.as_deref().is_none_or(|r| Some(r) == delivery.resource_id.as_deref())
}

/// `POST /v1/webhooks/deliveries/{id}/retry`: one attempt now, answered
/// after it; at most `RETRIES_PER_SECOND_MAX` a second per delivery.
pub(crate) async fn retry(deps: &Deps<'_>, organization: &str, id: &str) -> ApiResult<WebhookDelivery> {
    if let Err(retry_after) = deps.retries.check(id, std::time::Instant::now()) {
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            "this delivery was retried three times in the last second; wait a moment",
        )
        .with_detail("retryAfter", retry_after));
    }
    Ok(deps.dispatcher()?.retry_now(organization, id).await?.render())
}

/// Deliveries the operator's views look at per organization, newest first.
const RECENT_DELIVERIES_MAX: usize = 1_000;
/// Endpoints the operator's health view lists per organization.
const ENDPOINTS_LISTED_MAX: usize = 1_000;
/// Rows the operator's attempt and delivery lists show.
const ROWS_SHOWN_MAX: usize = 100;

fn recent_deliveries(snapshot: &Snapshot, identity: &Identity) -> ApiResult<Vec<Delivery>> {
    let mut out = Vec::new();
    for org in identity.organizations() {
        for (_, id) in snapshot.list(&org.id, DELIVERIES, None, RECENT_DELIVERIES_MAX)? {
            if let Some(d) = load_delivery(snapshot, &id)? {
                out.push(d);
            }
        }
    }
    Ok(out)
}

/// The operator's view of every endpoint on a stack: success rate,
/// latency, pending and failed deliveries over the recent deliveries.
/// One snapshot gives the deliveries and the endpoints' health: an attempt
/// commits both at once, so the view never shows a failure counted on an
/// endpoint without its attempt among the deliveries.
pub(crate) fn health_of_all(engine: &Engine, identity: &Identity) -> ApiResult<Vec<EndpointHealth>> {
    let snapshot = engine.read()?;
    let deliveries = recent_deliveries(&snapshot, identity)?;
    let mut by_endpoint: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &deliveries {
        by_endpoint.entry(&d.endpoint_id).or_default().push(d);
    }
    let mut data = Vec::new();
    for org in identity.organizations() {
        for (_, id) in snapshot.list(&org.id, ENDPOINTS, None, ENDPOINTS_LISTED_MAX)? {
            let Some((endpoint, health)) = load_endpoint(&snapshot, &id)? else { continue };
            let mine = by_endpoint.get(endpoint.id.as_str()).cloned().unwrap_or_default();
            data.push(endpoint_health(&org.id, &endpoint, &health, &mine));
        }
    }
    Ok(data)
}

fn endpoint_health(
    organization: &str,
    endpoint: &Endpoint,
    health: &Health,
    mine: &[&Delivery],
) -> EndpointHealth {
    let attempts: Vec<_> = mine.iter().flat_map(|d| d.attempts.iter()).collect();
    let succeeded = attempts.iter().filter(|a| a.succeeded).count();
    let success_rate = (!attempts.is_empty()).then(|| succeeded as f64 / attempts.len() as f64);
    let latency = (!attempts.is_empty())
        .then(|| attempts.iter().map(|a| a.duration_ms).sum::<u64>() as f64 / attempts.len() as f64);
    let count = |status| mine.iter().filter(|d| d.status == status).count() as u64;
    let last_failure = attempts.iter().filter(|a| !a.succeeded).max_by_key(|a| a.at);
    EndpointHealth {
        organization_id: organization.to_string(),
        endpoint: render_endpoint(endpoint, health),
        success_rate,
        average_latency_ms: latency,
        pending_deliveries: count(DeliveryStatus::Pending),
        failed_deliveries: count(DeliveryStatus::Failed),
        last_attempt_at: health.last_attempt_at.map(timestamp),
        last_error: last_failure.map(|a| a.error.clone().unwrap_or_else(|| "failed".into())),
        last_error_at: last_failure.map(|a| timestamp(a.at)),
    }
}

/// The operator's list of an endpoint's latest attempts, newest first.
pub(crate) fn attempts_of(
    engine: &Engine,
    identity: &Identity,
    endpoint_id: &str,
) -> ApiResult<Vec<EndpointAttempt>> {
    let mut rows = Vec::new();
    for d in recent_deliveries(&engine.read()?, identity)?.iter().filter(|d| d.endpoint_id == endpoint_id) {
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
    Ok(rows.into_iter().take(ROWS_SHOWN_MAX).map(|(_, v)| v).collect())
}

/// The operator's list of the latest deliveries on a stack, of one status
/// if given, each with its organization.
pub(crate) fn recent_of_all(
    engine: &Engine,
    identity: &Identity,
    status: Option<&str>,
) -> ApiResult<Vec<Owned<WebhookDelivery>>> {
    let mut all = recent_deliveries(&engine.read()?, identity)?;
    all.retain(|d| status.is_none_or(|s| s == d.status.name()));
    all.sort_by_key(|d| std::cmp::Reverse(d.created_at));
    Ok(all
        .iter()
        .take(ROWS_SHOWN_MAX)
        .map(|d| Owned { organization_id: d.organization.clone(), item: d.render() })
        .collect())
}

/// The operator re-sends any organization's delivery now.
pub(crate) async fn retry_any(deps: &Deps<'_>, id: &str) -> ApiResult<WebhookDelivery> {
    let delivery = load_delivery(&deps.engine.read()?, id)?
        .ok_or_else(|| ApiError::not_found(format!("delivery '{id}' not found")))?;
    Ok(deps.dispatcher()?.retry_now(&delivery.organization, id).await?.render())
}

/// The operator re-enables any organization's endpoint.
pub(crate) async fn enable_any(deps: &Deps<'_>, id: &str) -> ApiResult<WebhookEndpoint> {
    let (endpoint, _) = load_endpoint(&deps.engine.read()?, id)?
        .ok_or_else(|| ApiError::not_found(format!("webhook endpoint '{id}' not found")))?;
    let health = deps.dispatcher()?.set_enabled(id, true).await?;
    Ok(render_endpoint(&endpoint, &health))
}
