use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sika_engine::{Command, EventPayload};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PAGE_SIZE_MAX, PageQuery, Paging, list_body};
use crate::stack::Stack;
use crate::webhooks::{
    self, Endpoint, check_events, check_url, load_delivery, load_endpoint, render_endpoint,
};

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/webhooks/endpoints", post(create).get(list_endpoints))
        .route("/v1/webhooks/endpoints/{id}", get(get_endpoint).patch(update).delete(remove))
        .route("/v1/webhooks/endpoints/{id}/test", post(test))
        .route("/v1/webhooks/signing-secret/{id}", get(signing_secret))
        .route("/v1/webhooks/events", get(list_events))
        .route("/v1/webhooks/events/{id}", get(get_event))
        .route("/v1/webhooks/deliveries", get(list_deliveries))
        .route("/v1/webhooks/deliveries/{id}", get(get_delivery))
        .route("/v1/webhooks/deliveries/{id}/retry", post(retry))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    url: String,
    events: Vec<String>,
    #[serde(default)]
    description: String,
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<CreateRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("webhooks:write")?;
    check_url(&body.url, stack.kind, stack.config.allow_private_webhooks)?;
    check_events(&body.events)?;
    let now = stack.now_ms();
    let endpoint = Endpoint {
        id: sika_engine::ids::new_id("we"),
        organization: principal.organization().to_string(),
        url: body.url,
        events: body.events,
        description: body.description,
        secret: webhooks::signing::new_secret(),
        created_at: now,
        updated_at: now,
    };
    webhooks::save_endpoint(&stack, &endpoint, true).await?;
    let body = render_endpoint(&endpoint, &Default::default(), true);
    Ok((StatusCode::CREATED, Json(json!({ "webhookEndpoint": body }))))
}

fn own_endpoint(stack: &Stack, principal: &Principal, id: &str) -> ApiResult<(Endpoint, webhooks::Health)> {
    load_endpoint(&stack.engine.read()?, id)?
        .filter(|(e, _)| e.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("webhook endpoint '{id}' not found")))
}

async fn get_endpoint(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let (endpoint, health) = own_endpoint(&stack, &principal, &id)?;
    Ok(Json(json!({ "webhookEndpoint": render_endpoint(&endpoint, &health, false) })))
}

/// Paginated like every list (`limit`, `cursor`), newest first.
async fn list_endpoints(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let organization = principal.organization();
    let scope = format!("{}/{organization}/webhook_endpoints", stack.kind.name());
    let secret = stack.identity.secret();
    let page = query.page(&secret, &scope)?;
    let snapshot = stack.engine.read()?;
    let mut data = Vec::new();
    let mut before = page.before;
    let mut last = None;
    let mut has_more = false;
    // Deleted endpoints stay in the index: walk it until a page is full.
    'walk: loop {
        let chunk = snapshot.list(organization, "webhook_endpoints", before, PAGE_SIZE_MAX)?;
        if chunk.is_empty() {
            break;
        }
        for (position, id) in &chunk {
            before = Some(*position);
            let Some((endpoint, health)) = load_endpoint(&snapshot, id)? else { continue };
            if data.len() == page.limit {
                has_more = true;
                break 'walk;
            }
            data.push(render_endpoint(&endpoint, &health, false));
            last = Some(*position);
        }
    }
    Ok(Json(list_body(data, last, has_more, &secret, &scope)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateRequest {
    url: Option<String>,
    events: Option<Vec<String>>,
    description: Option<String>,
    status: Option<String>,
}

/// `status: active` re-enables a disabled endpoint and resets its failure count.
async fn update(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateRequest>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:write")?;
    let (mut endpoint, mut health) = own_endpoint(&stack, &principal, &id)?;
    let enable = match body.status.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("disabled") => Some(false),
        Some(_) => return Err(ApiError::validation("status", "must be 'active' or 'disabled'")),
    };
    if let Some(url) = body.url {
        check_url(&url, stack.kind, stack.config.allow_private_webhooks)?;
        endpoint.url = url;
    }
    if let Some(events) = body.events {
        check_events(&events)?;
        endpoint.events = events;
    }
    if let Some(description) = body.description {
        endpoint.description = description;
    }
    endpoint.updated_at = stack.now_ms();
    webhooks::save_endpoint(&stack, &endpoint, false).await?;
    if let Some(enabled) = enable {
        health = stack.webhooks()?.set_enabled(&endpoint.id, enabled).await?;
    }
    Ok(Json(json!({ "webhookEndpoint": render_endpoint(&endpoint, &health, false) })))
}

async fn remove(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:write")?;
    let (endpoint, _) = own_endpoint(&stack, &principal, &id)?;
    stack
        .engine
        .execute(Command::PutDocument {
            collection: webhooks::ENDPOINTS.into(),
            id: endpoint.id.clone(),
            body: Vec::new(),
            list: None,
        })
        .await?;
    Ok(Json(json!({ "webhookEndpoint": { "id": endpoint.id, "deleted": true } })))
}

async fn signing_secret(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let (endpoint, _) = own_endpoint(&stack, &principal, &id)?;
    Ok(Json(json!({ "secret": endpoint.secret })))
}

/// Sends a `webhook.test` event to this endpoint only.
async fn test(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("webhooks:write")?;
    let (endpoint, _) = own_endpoint(&stack, &principal, &id)?;
    stack
        .engine
        .execute(Command::RecordEvent {
            organization: endpoint.organization.clone(),
            kind: "webhook.test".into(),
            payload: EventPayload::WebhookTest { endpoint_id: endpoint.id.clone() },
        })
        .await?;
    stack.webhooks()?.wake();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "webhookEndpoint": { "id": endpoint.id }, "event": "webhook.test" })),
    ))
}

async fn get_event(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let event = stack
        .engine
        .read()?
        .event(&id)?
        .filter(|e| e.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("event '{id}' not found")))?;
    Ok(Json(json!({ "event": webhooks::event_body(&stack, &event)? })))
}

async fn list_events(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let organization = principal.organization();
    let scope = format!("{}/{organization}/events", stack.kind.name());
    let secret = stack.identity.secret();
    let page = query.page(&secret, &scope)?;
    let snapshot = stack.engine.read()?;
    let mut entries = snapshot.list(organization, "events", page.before, page.limit + 1)?;
    let has_more = entries.len() > page.limit;
    entries.truncate(page.limit);
    let mut data = Vec::new();
    for (_, id) in &entries {
        if let Some(event) = snapshot.event(id)? {
            data.push(webhooks::event_body(&stack, &event)?);
        }
    }
    Ok(Json(list_body(data, entries.last().map(|e| e.0), has_more, &secret, &scope)))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DeliveryQuery {
    limit: Option<String>,
    cursor: Option<String>,
    status: Option<String>,
    endpoint_id: Option<String>,
    event_id: Option<String>,
    event: Option<String>,
    resource_id: Option<String>,
}

async fn list_deliveries(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<DeliveryQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    if let Some(status) = &query.status
        && !["pending", "succeeded", "failed"].contains(&status.as_str())
    {
        return Err(ApiError::validation("status", "must be pending, succeeded or failed"));
    }
    let organization = principal.organization();
    let scope = format!("{}/{organization}/webhook_deliveries", stack.kind.name());
    let secret = stack.identity.secret();
    let page =
        PageQuery { limit: query.limit.clone(), cursor: query.cursor.clone() }.page(&secret, &scope)?;
    let snapshot = stack.engine.read()?;
    let mut data = Vec::new();
    let mut before = page.before;
    let mut last = None;
    let mut has_more = false;
    // Filtered walk: read the list newest first in chunks until a page is full.
    'walk: loop {
        let chunk = snapshot.list(organization, "webhook_deliveries", before, PAGE_SIZE_MAX)?;
        if chunk.is_empty() {
            break;
        }
        for (position, id) in &chunk {
            before = Some(*position);
            let Some(delivery) = load_delivery(&snapshot, id)? else { continue };
            let keep = query.status.as_deref().is_none_or(|s| s == delivery.status.name())
                && query.endpoint_id.as_deref().is_none_or(|e| e == delivery.endpoint_id)
                && query.event_id.as_deref().is_none_or(|e| e == delivery.event_id)
                && query.event.as_deref().is_none_or(|e| e == delivery.event_kind)
                && query.resource_id.as_deref().is_none_or(|r| Some(r) == delivery.resource_id.as_deref());
            if !keep {
                continue;
            }
            if data.len() == page.limit {
                has_more = true;
                break 'walk;
            }
            data.push(delivery.render());
            last = Some(*position);
        }
    }
    Ok(Json(list_body(data, last, has_more, &secret, &scope)))
}

async fn get_delivery(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:read")?;
    let delivery = load_delivery(&stack.engine.read()?, &id)?
        .filter(|d| d.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("delivery '{id}' not found")))?;
    Ok(Json(json!({ "delivery": delivery.render() })))
}

/// Re-sends one delivery now and answers after the attempt.
async fn retry(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("webhooks:write")?;
    let delivery = stack.webhooks()?.retry_now(principal.organization(), &id).await?;
    Ok(Json(json!({ "delivery": delivery.render() })))
}
