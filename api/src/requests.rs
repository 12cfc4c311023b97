//! The request log: each API request of an organization on one stack, with its bodies, for
//! debugging an integration. Secrets in the bodies are redacted.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// One logged request, as `GET /v1/requests/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoggedRequest {
    /// The request's id, as its `x-request-id` header and error bodies gave it.
    #[schema(example = "req_0VbowfAbCdEf", pattern = "^req_")]
    pub id: String,
    #[schema(example = "POST")]
    pub method: String,
    #[schema(example = "/v1/payouts")]
    pub path: String,
    /// The HTTP status it answered with.
    pub status: u16,
    /// How long the node took to answer, in milliseconds (fractional).
    pub duration_ms: f64,
    /// The key that made it; null for a team member's session.
    pub api_key_id: Option<String>,
    /// The JSON body as sent (text when it was not JSON), with secrets
    /// replaced by `[REDACTED]`; null when there was none.
    #[schema(value_type = Option<Value>)]
    pub request_body: Option<Value>,
    /// The answer's body, redacted the same way.
    #[schema(value_type = Option<Value>)]
    pub response_body: Option<Value>,
    pub created_at: String,
}

/// `{request}`: what reading a logged request answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LoggedRequestEnvelope {
    pub request: LoggedRequest,
}
