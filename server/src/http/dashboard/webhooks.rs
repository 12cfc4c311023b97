//! Developers, one webhook endpoint: its details, its signing secret shown
//! on demand (a form, so that no link or prefetch reveals it) to the roles
//! `GET /v1/webhooks/signing-secret/{id}` admits, its deliveries paged like
//! `GET /v1/webhooks/deliveries?endpointId=…` with a retry button each;
//! and a request of the API's log looked up by its id, as
//! `GET /v1/requests/{id}` answers it. Each asks the API's requirements
//! first and runs the API's use case.

use super::views::name;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use sika_api::ListQuery;
use sika_api::webhooks::DeliveryFilter;

use super::session::{Posted, Signed};
use super::views::{Frame, Notice, frame, refusal_page, send, shell, when};
use crate::domain::error::ApiResult;
use crate::domain::webhooks::{Endpoint, Health, endpoints, render_endpoint};
use crate::http::pages::shell::Shell;
use crate::store::request_log::RequestLogEntry;

/// Rows per page, as the API's default.
const PAGE_ROWS: u32 = 20;

#[derive(Template)]
#[template(path = "dashboard/webhook.html")]
struct EndpointView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    id: String,
    facts: Vec<(&'static str, String)>,
    secret: Option<String>,
    can_see_secret: bool,
    can_retry: bool,
    deliveries: Vec<DeliveryRow>,
    next: Option<String>,
}

struct DeliveryRow {
    id: String,
    event: String,
    status: String,
    attempts: String,
    last: String,
}

#[derive(Deserialize, Default)]
pub(super) struct Asked {
    cursor: Option<String>,
}

fn endpoint_page(
    signed: &Signed,
    id: &str,
    cursor: Option<String>,
    notice: Option<Notice>,
    secret: Option<String>,
) -> ApiResult<EndpointView> {
    signed.admit(&Method::GET, "/v1/webhooks/endpoints/{id}")?;
    let (endpoint, health): (Endpoint, Health) = {
        let snapshot = signed.stack.engine.read()?;
        crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, id)?
    };
    let shown = render_endpoint(&endpoint, &health);
    let facts = vec![
        ("URL", shown.url.clone()),
        ("Status", name(&shown.status)),
        ("Events", shown.events.join(", ")),
        ("Failures in a row", shown.consecutive_failures.to_string()),
    ];
    let (deliveries, next) = if signed.can(&Method::GET, "/v1/webhooks/deliveries") {
        let query = ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor };
        let filter = DeliveryFilter { endpoint_id: Some(endpoint.id.clone()), ..Default::default() };
        let organization = &signed.member().organization;
        let page = endpoints::list_deliveries(&signed.stack.lists(), organization, &query, &filter)?;
        let next = page.next_cursor.filter(|_| page.has_more).map(|c| {
            let query: String =
                form_urlencoded::Serializer::new(String::new()).append_pair("cursor", &c).finish();
            format!("/dashboard/developers/webhooks/{}?{query}", endpoint.id)
        });
        let rows = page
            .data
            .into_iter()
            .map(|d| DeliveryRow {
                last: d.attempts.last().map(|a| when(&a.at)).unwrap_or_default(),
                attempts: d.attempt_count.to_string(),
                status: name(&d.status),
                event: d.event,
                id: d.id,
            })
            .collect();
        (rows, next)
    } else {
        (Vec::new(), None)
    };
    Ok(EndpointView {
        shell: shell(&signed.stack, "Webhook endpoint"),
        frame: frame(signed, "developers", notice),
        csrf: signed.csrf(),
        id: endpoint.id,
        facts,
        secret,
        can_see_secret: signed.can(&Method::GET, "/v1/webhooks/signing-secret/{id}"),
        can_retry: signed.can(&Method::POST, "/v1/webhooks/deliveries/{id}/retry"),
        deliveries,
        next,
    })
}

fn render(signed: &Signed, id: &str, cursor: Option<String>, notice: Option<Notice>) -> Response {
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    match endpoint_page(signed, id, cursor, notice, None) {
        Ok(page) => send(status, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

/// `GET /dashboard/developers/webhooks/{id}?cursor=…`.
pub(super) async fn endpoint(signed: Signed, Path(id): Path<String>, Query(asked): Query<Asked>) -> Response {
    render(&signed, &id, asked.cursor, None)
}

/// `GET /v1/webhooks/signing-secret/{id}`, from the "Show" form.
pub(super) async fn secret(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let shown = signed.admit(&Method::GET, "/v1/webhooks/signing-secret/{id}").and_then(|()| {
        let snapshot = signed.stack.engine.read()?;
        let (endpoint, _): (Endpoint, Health) =
            crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, &id)?;
        endpoint_page(&signed, &id, None, None, Some(endpoint.secret))
    });
    match shown {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

/// `POST /v1/webhooks/deliveries/{id}/retry`, from a delivery's button on
/// its endpoint's page (the form names the endpoint).
pub(super) async fn retry(Path(id): Path<String>, Posted { signed, fields }: Posted) -> Response {
    let retried = match signed.admit(&Method::POST, "/v1/webhooks/deliveries/{id}/retry") {
        Ok(()) => {
            let organization = &signed.member().organization;
            endpoints::retry(&signed.stack.webhook_deps(), organization, &id).await
        }
        Err(e) => Err(e),
    };
    let notice = Notice::of(&retried, |d| format!("Delivery {} was sent again: {}", d.id, name(&d.status)));
    let endpoint = retried.as_ref().map_or_else(|_| fields.text("endpoint"), |d| d.endpoint_id.clone());
    render(&signed, &endpoint, None, Some(notice))
}

#[derive(Template)]
#[template(path = "dashboard/request.html")]
struct RequestView {
    shell: Shell,
    frame: Frame,
    asked: String,
    found: Option<Found>,
}

struct Found {
    facts: Vec<(&'static str, String)>,
    request_body: String,
    response_body: String,
}

#[derive(Deserialize, Default)]
pub(super) struct RequestAsked {
    id: Option<String>,
}

fn pretty(body: Option<&serde_json::Value>) -> String {
    body.map(|b| serde_json::to_string_pretty(b).unwrap_or_default()).unwrap_or_default()
}

fn request_page(signed: &Signed, asked: &RequestAsked) -> ApiResult<RequestView> {
    signed.admit(&Method::GET, "/v1/requests/{id}")?;
    let id = asked.id.as_deref().map(str::trim).unwrap_or_default();
    let found = if id.is_empty() {
        None
    } else {
        let snapshot = signed.stack.engine.read()?;
        let entry: RequestLogEntry =
            crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, id)?;
        let logged = crate::domain::render::logged_request(&entry);
        Some(Found {
            facts: vec![
                ("Request", logged.id.clone()),
                ("Call", format!("{} {}", logged.method, logged.path)),
                ("Answer", logged.status.to_string()),
                ("Took", format!("{} ms", logged.duration_ms)),
                ("Key", logged.api_key_id.clone().unwrap_or_else(|| "a session".into())),
                ("When", when(&logged.created_at)),
            ],
            request_body: pretty(logged.request_body.as_ref()),
            response_body: pretty(logged.response_body.as_ref()),
        })
    };
    Ok(RequestView {
        shell: shell(&signed.stack, "A request"),
        frame: frame(signed, "developers", None),
        asked: id.to_string(),
        found,
    })
}

/// `GET /dashboard/developers/requests?id=…`: the API's request log.
pub(super) async fn request(signed: Signed, Query(asked): Query<RequestAsked>) -> Response {
    match request_page(&signed, &asked) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}
