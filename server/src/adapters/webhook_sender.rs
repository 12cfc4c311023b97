//! The webhook dispatcher's HTTP client: posts one signed attempt to a
//! receiver. It resolves host names through the stack's address rules
//! (`domain::webhooks::address::Guard`), so a name that resolves to a
//! refused address is caught at connect time, and never follows redirects.

use std::sync::Arc;

use crate::domain::webhooks::address::{self, Guard};
use crate::domain::webhooks::dispatcher::{
    ATTEMPT_TIMEOUT, IN_FLIGHT_PER_ENDPOINT_MAX, Outgoing, SendError, Sending, Transport,
};

/// Why the client cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BuildError {
    #[error("cannot build the webhook client: {0}")]
    Client(#[source] reqwest::Error),
}

pub(crate) struct WebhookSender {
    client: reqwest::Client,
    /// Where attempts may connect; also the client's resolver.
    guard: Arc<Guard>,
}

impl WebhookSender {
    pub(crate) fn new(guard: Guard) -> Result<WebhookSender, BuildError> {
        let guard = Arc::new(guard);
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .no_proxy()
            .dns_resolver(guard.clone())
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(IN_FLIGHT_PER_ENDPOINT_MAX)
            .build()
            .map_err(BuildError::Client)?;
        Ok(WebhookSender { client, guard })
    }

    /// The address checks, then the POST. A URL that does not parse is
    /// posted as given, and fails as the client reports it.
    async fn send(&self, outgoing: Outgoing) -> Result<u16, SendError> {
        let request = match reqwest::Url::parse(&outgoing.url) {
            Ok(url) => {
                self.guard.check_attempt(&url).await.map_err(|e| SendError::Refused(e.0))?;
                self.client.post(url)
            }
            Err(_) => self.client.post(&outgoing.url),
        };
        request
            .header("content-type", "application/json")
            .header("user-agent", "Sika-Webhooks/1")
            .header("webhook-id", outgoing.delivery_id)
            .header("webhook-timestamp", outgoing.timestamp.to_string())
            .header("webhook-signature", outgoing.signature)
            .body(outgoing.body)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(describe_send_error)
    }
}

impl Transport for WebhookSender {
    fn post(&self, outgoing: Outgoing) -> Sending<'_> {
        Box::pin(self.send(outgoing))
    }
}

fn describe_send_error(error: reqwest::Error) -> SendError {
    if let Some(reason) = address::refusal(&error) {
        SendError::Refused(reason)
    } else if error.is_timeout() {
        SendError::Timeout
    } else if error.is_connect() {
        SendError::Connect
    } else {
        SendError::Failed(error.to_string())
    }
}
