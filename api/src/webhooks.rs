//! Webhooks: the endpoints events are sent to, the events themselves and
//! each delivery of an event to an endpoint, with its attempts.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Whether an endpoint receives events. The node disables one after ten
/// consecutive failed attempts; the merchant can disable or re-enable it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookEndpointStatus {
    Active,
    Disabled,
}

/// Why the node disabled an endpoint. An endpoint the merchant disabled has
/// no reason (`null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookDisabledReason {
    ConsecutiveFailures,
}

/// `POST /v1/webhooks/endpoints`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"url": "https://example.com/hooks/sika", "events": ["payout.completed", "payout.failed"], "description": "Order fulfilment"})))]
pub struct CreateWebhookEndpoint {
    /// Where events are POSTed: http or https, at most 2048 characters; on
    /// the live stack not a loopback or private address.
    #[schema(example = "https://example.com/hooks/sika", max_length = 2048)]
    pub url: String,
    /// Event names to receive, or `["*"]` for all of them.
    #[schema(example = json!(["payout.completed", "payout.failed"]))]
    pub events: Vec<String>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub description: String,
}

/// `PATCH /v1/webhooks/endpoints/{id}`: only the fields sent change.
/// `status: active` re-enables a disabled endpoint and resets its failure
/// count.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"events": ["*"], "status": "active"})))]
pub struct UpdateWebhookEndpoint {
    #[schema(max_length = 2048)]
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// `active` re-enables the endpoint; `disabled` stops deliveries to it.
    // Text, so that a bad value gets the node's own message naming the field.
    #[schema(value_type = Option<WebhookEndpointStatus>)]
    pub status: Option<String>,
}

/// A webhook endpoint as every read shows it. Its signing secret is shown
/// only when it is created (`CreatedWebhookEndpoint`) and by
/// `GET /v1/webhooks/signing-secret/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpoint {
    #[schema(example = "we_0VbowfAbCdEf", pattern = "^we_")]
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub status: WebhookEndpointStatus,
    pub disabled_reason: Option<WebhookDisabledReason>,
    /// Failed attempts since the last success.
    pub consecutive_failures: u32,
    pub created_at: String,
    pub updated_at: String,
}

/// A new endpoint with its signing secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhookEndpoint {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// The key deliveries are signed with (`whsec_` and base64).
    #[schema(pattern = "^whsec_")]
    pub secret: String,
}

/// `{webhookEndpoint}`: what reading, listing one and changing an endpoint
/// answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpointEnvelope {
    pub webhook_endpoint: WebhookEndpoint,
}

/// `{webhookEndpoint}`: what creating an endpoint answers (201).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhookEndpointEnvelope {
    pub webhook_endpoint: CreatedWebhookEndpoint,
}

/// An endpoint that was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeletedWebhookEndpoint {
    pub id: String,
    /// Always `true`.
    pub deleted: bool,
}

/// `{webhookEndpoint}`: what deleting an endpoint answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedWebhookEndpointEnvelope {
    pub webhook_endpoint: DeletedWebhookEndpoint,
}

/// The endpoint a test event was sent to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookEndpointRef {
    pub id: String,
}

/// What `POST /v1/webhooks/endpoints/{id}/test` answers (202): a
/// `webhook.test` event is on its way to that endpoint only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookTestSent {
    pub webhook_endpoint: WebhookEndpointRef,
    #[schema(example = "webhook.test")]
    pub event: String,
}

/// `GET /v1/webhooks/signing-secret/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SigningSecret {
    #[schema(pattern = "^whsec_")]
    pub secret: String,
}

/// An event: what a webhook delivery POSTs, and what the events API shows.
/// `data` is the resource exactly as its GET shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEvent {
    #[schema(example = "evt_0VbowfAbCdEf")]
    pub id: String,
    /// The event's name, such as `payout.completed`.
    #[schema(example = "payout.completed")]
    pub event: String,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: String,
}

/// `{event}`: what reading one event answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookEventEnvelope {
    pub event: WebhookEvent,
}

/// Where a delivery stands: `pending` while attempts remain, `succeeded`
/// once an endpoint answered 2xx, `failed` when the retries ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookDeliveryStatus {
    Pending,
    Succeeded,
    Failed,
}

/// One POST of a delivery to its endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDeliveryAttempt {
    pub at: String,
    /// The endpoint's HTTP status, or null when it did not answer.
    pub status_code: Option<u16>,
    pub duration_ms: u64,
    /// Why the attempt failed without an answer (timeout, refused, …).
    pub error: Option<String>,
    pub succeeded: bool,
    /// Whether a retry through the API made it, rather than the schedule.
    pub manual: bool,
}

/// One event sent to one endpoint, with every attempt so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    #[schema(example = "whd_0VbowfAbCdEf", pattern = "^whd_")]
    pub id: String,
    pub endpoint_id: String,
    pub event_id: String,
    /// The event's name.
    pub event: String,
    /// The resource the event is about.
    pub resource_id: Option<String>,
    pub status: WebhookDeliveryStatus,
    pub attempt_count: usize,
    pub attempts: Vec<WebhookDeliveryAttempt>,
    /// When the schedule tries again; null once the delivery is final.
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `{delivery}`: what reading and retrying a delivery answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookDeliveryEnvelope {
    pub delivery: WebhookDelivery,
}

/// The filters `GET /v1/webhooks/deliveries` takes besides paging; each
/// one given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DeliveryFilter {
    /// The delivery's own `status`: `pending` (attempts remain, none made
    /// yet or retrying), `succeeded` (an attempt got a 2xx) or `failed`
    /// (every attempt of the ladder failed). A delivery still retrying is
    /// `pending`, whatever its latest attempt did; `lastAttemptFailed`
    /// finds those.
    // Text, so that a bad value gets the node's own message naming the field.
    #[param(value_type = Option<WebhookDeliveryStatus>)]
    pub status: Option<String>,
    /// `true`: the deliveries that need attention, those whose latest
    /// attempt failed, still retrying (`pending`) or given up (`failed`);
    /// `false`: those not attempted yet or whose latest attempt succeeded.
    pub last_attempt_failed: Option<bool>,
    pub endpoint_id: Option<String>,
    pub event_id: Option<String>,
    /// An event name, such as `payout.completed`.
    pub event: Option<String>,
    /// The resource the event is about.
    pub resource_id: Option<String>,
}
