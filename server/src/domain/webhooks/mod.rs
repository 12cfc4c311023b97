//! Signed webhooks: endpoints, deliveries and their attempts. The
//! dispatcher (`dispatcher.rs`) turns outbox events into deliveries and
//! sends them; this module holds the records and the management rules,
//! `endpoints.rs` the use cases that manage endpoints and deliveries, and
//! `events.rs` those that read events, rendered through `domain::views`.

pub(crate) mod address;
pub(crate) mod dispatcher;
pub(crate) mod endpoints;
pub(crate) mod events;
mod order;
pub mod signing;

use serde::{Deserialize, Serialize};
use sika_engine::{Command, EventKind, EventPayload, EventRecord, Snapshot};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::timestamp;
use crate::domain::timeline::Line;
pub(crate) use crate::store::documents::{decode, document, encode};

/// Which delivery entries a view shows: all of them, or those recorded
/// before a moment (milliseconds since the epoch).
#[derive(Debug, Clone, Copy)]
pub(crate) enum AsOf {
    Now,
    At(i64),
}

pub(crate) const ENDPOINTS: &str = "webhook_endpoints";
pub(crate) const HEALTH: &str = "webhook_health";
pub(crate) const DELIVERIES: &str = "webhook_deliveries";
/// Deliveries not yet succeeded or failed: what the dispatcher reloads on start.
pub(crate) const OPEN_DELIVERIES: &str = "webhook_open";
pub(crate) const STATE: &str = "webhook_state";
/// Deliveries listed per resource, for timelines.
pub(crate) const BY_RESOURCE: &str = "webhook_by_resource";
/// Endpoints the dispatcher disabled, written in the same commit as the
/// health that disabled them, until the email sender has queued the
/// owners' notice (`domain::emails::sender`).
pub(crate) const DISABLED_NOTICES: &str = "webhook_disabled_notices";

/// An endpoint the dispatcher disabled, for the owners' and admins' email.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DisabledNotice {
    pub organization: String,
    pub endpoint_id: String,
    pub url: String,
}

/// The list a resource's deliveries are indexed under.
pub(crate) fn resource_list(resource_id: &str) -> String {
    format!("deliveries:{resource_id}")
}

/// A resource's webhook deliveries as timeline entries, all of them or
/// those recorded before a moment.
pub(crate) fn timeline_entries(
    snapshot: &Snapshot,
    organization: &str,
    resource_id: &str,
    as_of: AsOf,
) -> ApiResult<Vec<Line>> {
    let mut entries = Vec::new();
    for (_, key) in snapshot.list(organization, &resource_list(resource_id), None, 100)? {
        // The index holds `{resource}/{delivery}`.
        let id = key.rsplit('/').next().unwrap_or_default();
        let Some(delivery) = load_delivery(snapshot, id)? else { continue };
        entries.push(Line::new(
            delivery.created_at,
            "webhook",
            format!("Webhook {} scheduled", delivery.event_kind),
            format!("Delivery {} to endpoint {}", delivery.id, delivery.endpoint_id),
        ));
        for attempt in &delivery.attempts {
            let outcome = match (attempt.succeeded, attempt.status_code) {
                (true, Some(code)) => format!("delivered (HTTP {code})"),
                (false, Some(code)) => format!("failed (HTTP {code})"),
                _ => format!("failed ({})", attempt.error.as_deref().unwrap_or("no answer")),
            };
            entries.push(Line::new(
                attempt.at,
                "webhook",
                format!(
                    "Webhook {} {}",
                    delivery.event_kind,
                    if attempt.succeeded { "delivered" } else { "attempt failed" }
                ),
                format!("Delivery {} {outcome} in {} ms", delivery.id, attempt.duration_ms),
            ));
        }
    }
    if let AsOf::At(moment) = as_of {
        entries.retain(|entry| entry.at < moment);
    }
    Ok(entries)
}

/// Every event name an endpoint can subscribe to: one per kind of event
/// the engine records, so a new kind is subscribable as soon as it exists.
pub(crate) fn event_kinds() -> impl Iterator<Item = &'static str> {
    EventKind::ALL.iter().map(|kind| kind.name())
}

/// Consecutive failed attempts after which an endpoint is disabled.
pub(crate) const CONSECUTIVE_FAILURES_MAX: u32 = 10;
/// Waits before each retry, unscaled: 30 s, 2 m, 8 m, 32 m, 2 h, 6 h, 6 h, 6 h.
/// Manual retries one delivery may have made in any second: each one is a
/// request to the merchant's endpoint made at the caller's command.
pub(crate) const RETRIES_PER_SECOND_MAX: u32 = 3;
/// Manual attempts a delivery keeps, newest last; older ones are dropped, so
/// its history stays bounded (the ladder's own attempts are at most
/// `RETRY_LADDER_MS.len() + 1`).
pub(crate) const MANUAL_ATTEMPTS_KEPT: usize = 20;

pub(crate) const RETRY_LADDER_MS: [i64; 8] =
    [30_000, 120_000, 480_000, 1_920_000, 7_200_000, 21_600_000, 21_600_000, 21_600_000];

/// What the merchant configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Endpoint {
    pub id: String,
    pub organization: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub secret: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Endpoint {
    pub(crate) fn subscribes_to(&self, kind: &str) -> bool {
        self.events.iter().any(|e| e == "*" || e == kind)
    }
}

/// What the dispatcher observed; written only by the dispatcher.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Health {
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub consecutive_failures: u32,
    pub attempts: u64,
    pub successes: u64,
    pub last_attempt_at: Option<i64>,
    pub last_success_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum DeliveryStatus {
    Pending,
    Succeeded,
    Failed,
}

impl DeliveryStatus {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attempt {
    pub at: i64,
    pub status_code: Option<u16>,
    pub duration_ms: u64,
    pub error: Option<String>,
    pub succeeded: bool,
    pub manual: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Delivery {
    pub id: String,
    pub organization: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub event_kind: String,
    /// The id of the resource the event is about, for its timeline.
    pub resource_id: Option<String>,
    /// The exact bytes every attempt sends.
    pub body: String,
    pub status: DeliveryStatus,
    pub attempts: Vec<Attempt>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Delivery {
    /// Attempts made by the ladder (manual retries do not count).
    pub(crate) fn scheduled_attempts(&self) -> usize {
        self.attempts.iter().filter(|a| !a.manual).count()
    }

    /// The delivery as every response shows it.
    pub(crate) fn render(&self) -> sika_api::webhooks::WebhookDelivery {
        use sika_api::webhooks::{WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryStatus};
        WebhookDelivery {
            id: self.id.clone(),
            endpoint_id: self.endpoint_id.clone(),
            event_id: self.event_id.clone(),
            event: self.event_kind.clone(),
            resource_id: self.resource_id.clone(),
            status: match self.status {
                DeliveryStatus::Pending => WebhookDeliveryStatus::Pending,
                DeliveryStatus::Succeeded => WebhookDeliveryStatus::Succeeded,
                DeliveryStatus::Failed => WebhookDeliveryStatus::Failed,
            },
            attempt_count: self.attempts.len(),
            attempts: self
                .attempts
                .iter()
                .map(|a| WebhookDeliveryAttempt {
                    at: timestamp(a.at),
                    status_code: a.status_code,
                    duration_ms: a.duration_ms,
                    error: a.error.clone(),
                    succeeded: a.succeeded,
                    manual: a.manual,
                })
                .collect(),
            next_attempt_at: self.next_attempt_at.map(timestamp),
            created_at: timestamp(self.created_at),
            updated_at: timestamp(self.updated_at),
        }
    }
}

/// An endpoint as every read shows it, without its secret.
pub(crate) fn render_endpoint(endpoint: &Endpoint, health: &Health) -> sika_api::webhooks::WebhookEndpoint {
    use sika_api::webhooks::{WebhookDisabledReason, WebhookEndpoint, WebhookEndpointStatus};
    WebhookEndpoint {
        id: endpoint.id.clone(),
        url: endpoint.url.clone(),
        events: endpoint.events.clone(),
        description: endpoint.description.clone(),
        status: if health.disabled { WebhookEndpointStatus::Disabled } else { WebhookEndpointStatus::Active },
        // The dispatcher records one reason only: too many failures in a row.
        disabled_reason: health.disabled_reason.as_ref().map(|_| WebhookDisabledReason::ConsecutiveFailures),
        consecutive_failures: health.consecutive_failures,
        created_at: timestamp(endpoint.created_at),
        updated_at: timestamp(endpoint.updated_at),
    }
}

pub(crate) fn event_resource_id(event: &EventRecord) -> Option<String> {
    match &event.payload {
        EventPayload::Conversion(c) => Some(c.id.clone()),
        EventPayload::AccountCredited { account, .. } => Some(account.id.clone()),
        EventPayload::WebhookTest { endpoint_id } => Some(endpoint_id.clone()),
        EventPayload::Payout(p) => Some(p.id.clone()),
        EventPayload::Collection(c) => Some(c.id.clone()),
        EventPayload::Order(o) | EventPayload::OrderWithPayout(o, _) => Some(o.id.clone()),
        EventPayload::Rendered { id, .. } => Some(id.clone()),
        EventPayload::Refund(r) => Some(r.id.clone()),
        EventPayload::Dispute(d) => Some(d.id.clone()),
    }
}

pub(crate) fn load_endpoint(snapshot: &Snapshot, id: &str) -> ApiResult<Option<(Endpoint, Health)>> {
    let Some(bytes) = snapshot.document(ENDPOINTS, id)? else { return Ok(None) };
    let endpoint: Endpoint = decode(&bytes)?;
    let health = match snapshot.document(HEALTH, id)? {
        Some(bytes) => decode(&bytes)?,
        None => Health::default(),
    };
    Ok(Some((endpoint, health)))
}

pub(crate) fn load_delivery(snapshot: &Snapshot, id: &str) -> ApiResult<Option<Delivery>> {
    Ok(snapshot.document(DELIVERIES, id)?.map(|b| decode(&b)).transpose()?)
}

/// Checks a URL: http(s), a host, and by `address::Guard` no loopback,
/// private or reserved address on the live stack unless the operator allows
/// it, and never one of the node's own listeners. Host names are checked
/// when each attempt connects.
pub(crate) fn check_url(url: &str, guard: &address::Guard) -> ApiResult<()> {
    let parsed = crate::domain::limits::web_url("url", url)?;
    guard.check_url(&parsed).map_err(|e| ApiError::validation("url", e.0))
}

pub(crate) fn check_events(events: &[String]) -> ApiResult<()> {
    if events.is_empty() {
        return Err(ApiError::validation("events", "subscribe to at least one event, or [\"*\"] for all"));
    }
    for (index, event) in events.iter().enumerate() {
        if event != "*" && !event_kinds().any(|kind| kind == event) {
            return Err(ApiError::validation(
                &format!("events[{index}]"),
                format!("unknown event '{event}'"),
            ));
        }
    }
    Ok(())
}

/// Stores an endpoint's configuration.
pub(crate) async fn save_endpoint(
    engine: &sika_engine::Engine,
    endpoint: &Endpoint,
    is_new: bool,
) -> ApiResult<()> {
    let list = is_new.then_some((endpoint.organization.as_str(), ENDPOINTS));
    engine
        .execute(Command::PutDocuments { documents: vec![document(ENDPOINTS, &endpoint.id, endpoint, list)] })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_hosts() {
        let live = address::Guard { allow_private: false, own: vec![] };
        let allowing = address::Guard { allow_private: true, own: vec![] };
        for url in [
            "http://localhost/",
            "http://localhost./",
            "http://127.0.0.1/",
            "http://10.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://100.64.0.1/",
            "http://198.18.0.1/",
            "http://224.0.0.1/",
            "http://[fec0::1]/",
        ] {
            assert!(check_url(url, &live).is_err(), "{url}");
        }
        for url in ["http://example.com/", "http://8.8.8.8/"] {
            assert!(check_url(url, &live).is_ok(), "{url}");
        }
        assert!(check_url("http://127.0.0.1:9/x", &allowing).is_ok());
        assert!(check_url("ftp://example.com", &allowing).is_err());
        assert!(check_url("not a url", &allowing).is_err());
    }

    #[test]
    fn event_names() {
        assert!(check_events(&["*".into()]).is_ok());
        assert!(check_events(&["conversion.completed".into()]).is_ok());
        assert!(check_events(&["conversion.done".into()]).is_err());
        assert!(check_events(&[]).is_err());
        let every: Vec<String> = event_kinds().map(String::from).collect();
        assert_eq!(every.len(), EventKind::ALL.len());
        assert!(every.contains(&"dispute.closed".to_string()));
        assert!(check_events(&every).is_ok());
    }
}
