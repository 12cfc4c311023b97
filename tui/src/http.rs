//! [`HttpClient`]: the [`Client`] over HTTP, with the operator token as a
//! bearer token on every call.

use crate::api::DisputeOutcome;
use crate::api::{Reconciliation, SearchResults};
use std::time::Duration;

use reqwest::blocking::{Client as Http, RequestBuilder};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sika_api::ListPage;
use sika_api::admin::{
    CreateOrganization, NewOwner, NodeStatusEnvelope, OrganizationEnvelope, OwnedCollectionEnvelope,
    OwnedDisputeEnvelope, OwnedOrderEnvelope, OwnedPayoutEnvelope, OwnedRefundEnvelope, StackRatesEnvelope,
    VerifyEnvelope,
};
use sika_api::collections::CollectionEnvelope;
use sika_api::payouts::PayoutEnvelope;
use sika_api::refunds::RefundEnvelope;
use sika_api::webhooks::{WebhookDeliveryEnvelope, WebhookEndpointEnvelope};

use sika_api::keys::ApiKeyEnvelope;

use crate::api::{
    ApiKey, AuditEntry, Client, ClientError, ClientResult, CreatedOrganization, Dispute, EmailItem,
    EndpointAttempt, EndpointHealth, FailedRequest, LedgerEntries, Member, Movement, MovementKind,
    MovementQuery, NewOrganization, NodeStatus, Organization, Owned, ReissuedInvitation, RequestLookup,
    Settled, Settlement, SettlementRecord, StackAccounts, StackName, StackRates, SystemAccount, VerifyResult,
    WebhookDelivery, WebhookEndpoint,
};

/// A dead node must not hold the fetch thread for long: the banner and the
/// retry depend on an answer, even a failed one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// `verify` reads the whole journal, so a call may take a while.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct HttpClient {
    http: Http,
    base_url: String,
    token: String,
}

impl HttpClient {
    /// `base_url` is the admin listener, e.g. `http://127.0.0.1:8082`.
    pub fn new(base_url: &str, token: &str) -> Result<HttpClient, crate::error::ConsoleError> {
        let http = Http::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("sika-tui/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(crate::error::ConsoleError::Client)?;
        Ok(HttpClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/admin/v1/{}", self.base_url, path)
    }

    fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> ClientResult<T> {
        self.send(self.http.get(self.url(path)).query(query))
    }

    fn post<T: DeserializeOwned>(&self, path: &str, body: Option<Value>) -> ClientResult<T> {
        let request = self.http.post(self.url(path));
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        self.send(request)
    }

    fn send<T: DeserializeOwned>(&self, request: RequestBuilder) -> ClientResult<T> {
        let response =
            request.bearer_auth(&self.token).send().map_err(|e| ClientError::Unreachable(describe(&e)))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().map_err(|e| ClientError::Unreachable(describe(&e)))?;
        if (200..300).contains(&status) {
            return serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()));
        }
        Err(error_from_body(status, &bytes))
    }
}

/// The innermost cause is the useful one ("Connection refused"), not
/// reqwest's "error sending request for url".
fn describe(error: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    if error.is_timeout() { format!("timed out ({source})") } else { source.to_string() }
}

/// Maps an error answer to its [`ClientError`], reading the API's error
/// object `{error, message, requestId}` when there is one.
pub fn error_from_body(status: u16, body: &[u8]) -> ClientError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| parsed.as_ref().and_then(|v| v[name].as_str()).map(str::to_string);
    let message =
        field("message").unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect());
    if status == 401 {
        return ClientError::Unauthorized(message);
    }
    let code = field("error").unwrap_or_else(|| "http_error".to_string());
    // A refusal names the field it is about; say which, beside the message.
    let named = parsed.as_ref().and_then(|v| v["details"]["field"].as_str());
    let message = match named {
        Some(name) if !message.contains(name) => format!("{name}: {message}"),
        _ => message,
    };
    ClientError::Api { status, code, message }
}

/// A page of one kind of movement as Activity rows.
fn rows<T>(page: ListPage<Owned<T>>, row: fn(Owned<T>) -> Movement) -> Vec<Movement> {
    page.data.into_iter().map(row).collect()
}

impl Client for HttpClient {
    fn status(&self) -> ClientResult<NodeStatus> {
        Ok(self.get::<NodeStatusEnvelope>("status", &[])?.status)
    }

    fn accounts(&self, stack: StackName) -> ClientResult<StackAccounts> {
        self.get(&format!("{}/accounts", stack.as_str()), &[])
    }

    fn rates(&self, stack: StackName) -> ClientResult<StackRates> {
        Ok(self.get::<StackRatesEnvelope>(&format!("{}/rates", stack.as_str()), &[])?.rates)
    }

    fn verify(&self, stack: StackName) -> ClientResult<VerifyResult> {
        Ok(self.post::<VerifyEnvelope>(&format!("{}/verify", stack.as_str()), None)?.verify)
    }

    fn movements(&self, stack: StackName, query: &MovementQuery) -> ClientResult<Vec<Movement>> {
        let mut params = vec![("limit", query.limit.to_string())];
        params.extend(query.q.clone().map(|q| ("q", q)));
        params.extend(query.status.clone().map(|s| ("status", s)));
        let path = format!("{}/{}", stack.as_str(), query.kind.plural());
        Ok(match query.kind {
            MovementKind::Payout => rows(self.get(&path, &params)?, Movement::Payout),
            MovementKind::Collection => rows(self.get(&path, &params)?, Movement::Collection),
            MovementKind::Order => rows(self.get(&path, &params)?, Movement::Order),
            MovementKind::Refund => rows(self.get(&path, &params)?, Movement::Refund),
        })
    }

    fn movement(&self, stack: StackName, kind: MovementKind, id: &str) -> ClientResult<Movement> {
        let path = format!("{}/{}/{}", stack.as_str(), kind.plural(), encode(id));
        Ok(match kind {
            MovementKind::Payout => Movement::Payout(self.get::<OwnedPayoutEnvelope>(&path, &[])?.payout),
            MovementKind::Collection => {
                Movement::Collection(self.get::<OwnedCollectionEnvelope>(&path, &[])?.collection)
            }
            MovementKind::Order => Movement::Order(self.get::<OwnedOrderEnvelope>(&path, &[])?.order),
            MovementKind::Refund => Movement::Refund(self.get::<OwnedRefundEnvelope>(&path, &[])?.refund),
        })
    }

    fn settle(
        &self,
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
        record: &SettlementRecord,
    ) -> ClientResult<Settled> {
        let path = format!("{}/{}/{}/{}", stack.as_str(), kind.plural(), encode(id), settlement.as_str());
        let body = sika_api::admin::Settlement {
            message: None,
            provider_reference: record.provider_reference.clone(),
            note: record.note.clone(),
        };
        let body = Some(to_body(&body)?);
        Ok(match kind {
            MovementKind::Payout => Settled::Payout(self.post::<PayoutEnvelope>(&path, body)?.payout),
            MovementKind::Collection => {
                Settled::Collection(self.post::<CollectionEnvelope>(&path, body)?.collection)
            }
            MovementKind::Refund => Settled::Refund(self.post::<RefundEnvelope>(&path, body)?.refund),
            // The admin API has no such operation; this is its answer.
            MovementKind::Order => {
                return Err(ClientError::Api {
                    status: 404,
                    code: "not_found".into(),
                    message: format!("orders are not settled by hand; cannot {} {id}", settlement.as_str()),
                });
            }
        })
    }

    fn disputes(&self, stack: StackName) -> ClientResult<Vec<Owned<Dispute>>> {
        let page: ListPage<Owned<Dispute>> = self.get(&format!("{}/disputes", stack.as_str()), &[])?;
        Ok(page.data)
    }

    fn dispute(&self, stack: StackName, id: &str) -> ClientResult<Owned<Dispute>> {
        let path = format!("{}/disputes/{}", stack.as_str(), encode(id));
        Ok(self.get::<OwnedDisputeEnvelope>(&path, &[])?.dispute)
    }

    fn webhook_endpoints(&self, stack: StackName) -> ClientResult<Vec<EndpointHealth>> {
        let page: ListPage<EndpointHealth> =
            self.get(&format!("{}/webhooks/endpoints", stack.as_str()), &[])?;
        Ok(page.data)
    }

    fn endpoint_attempts(&self, stack: StackName, endpoint_id: &str) -> ClientResult<Vec<EndpointAttempt>> {
        let path = format!("{}/webhooks/endpoints/{}/attempts", stack.as_str(), encode(endpoint_id));
        let page: ListPage<EndpointAttempt> = self.get(&path, &[])?;
        Ok(page.data)
    }

    fn deliveries(&self, stack: StackName, status: &str) -> ClientResult<Vec<Owned<WebhookDelivery>>> {
        let path = format!("{}/webhooks/deliveries", stack.as_str());
        let page: ListPage<Owned<WebhookDelivery>> = self.get(&path, &[("status", status.to_string())])?;
        Ok(page.data)
    }

    fn retry_delivery(&self, stack: StackName, delivery_id: &str) -> ClientResult<WebhookDelivery> {
        let path = format!("{}/webhooks/deliveries/{}/retry", stack.as_str(), encode(delivery_id));
        Ok(self.post::<WebhookDeliveryEnvelope>(&path, None)?.delivery)
    }

    fn enable_endpoint(&self, stack: StackName, endpoint_id: &str) -> ClientResult<WebhookEndpoint> {
        let path = format!("{}/webhooks/endpoints/{}/enable", stack.as_str(), encode(endpoint_id));
        Ok(self.post::<WebhookEndpointEnvelope>(&path, None)?.webhook_endpoint)
    }

    fn request(&self, request_id: &str) -> ClientResult<RequestLookup> {
        self.get(&format!("requests/{}", encode(request_id)), &[])
    }

    fn organizations(&self) -> ClientResult<Vec<Organization>> {
        Ok(self.get::<ListPage<Organization>>("organizations", &[])?.data)
    }

    fn create_organization(&self, new: &NewOrganization) -> ClientResult<CreatedOrganization> {
        let body = CreateOrganization {
            name: new.name.clone(),
            owner: NewOwner { email: new.owner_email.clone(), name: new.owner_name.clone() },
        };
        self.post("organizations", Some(to_body(&body)?))
    }

    fn rename_organization(&self, id: &str, name: &str) -> ClientResult<Organization> {
        let request = self
            .http
            .patch(self.url(&format!("organizations/{}", encode(id))))
            .json(&json!({ "name": name }));
        Ok(self.send::<OrganizationEnvelope>(request)?.organization)
    }

    fn set_suspended(&self, id: &str, suspended: bool) -> ClientResult<Organization> {
        let verb = if suspended { "suspend" } else { "reinstate" };
        let path = format!("organizations/{}/{verb}", encode(id));
        Ok(self.post::<OrganizationEnvelope>(&path, None)?.organization)
    }

    fn members(&self, organization_id: &str) -> ClientResult<Vec<Member>> {
        let path = format!("organizations/{}/members", encode(organization_id));
        Ok(self.get::<ListPage<Member>>(&path, &[])?.data)
    }

    fn reissue_invitation(&self, organization_id: &str, member_id: &str) -> ClientResult<ReissuedInvitation> {
        let path =
            format!("organizations/{}/members/{}/invitations", encode(organization_id), encode(member_id));
        self.post(&path, None)
    }

    fn audit(&self, cursor: Option<&str>, limit: usize) -> ClientResult<ListPage<AuditEntry>> {
        self.get("audit", &page_params(cursor, limit))
    }

    fn emails(&self, limit: usize) -> ClientResult<ListPage<EmailItem>> {
        self.get("emails", &page_params(None, limit))
    }

    fn resolve_dispute(
        &self,
        stack: StackName,
        id: &str,
        outcome: DisputeOutcome,
    ) -> ClientResult<Owned<Dispute>> {
        let path = format!("{}/disputes/{}/resolve", stack.as_str(), encode(id));
        let body = json!({ "outcome": crate::api::wire_name(&outcome) });
        Ok(self.post::<OwnedDisputeEnvelope>(&path, Some(body))?.dispute)
    }

    fn search(&self, query: &str) -> ClientResult<SearchResults> {
        self.get("search", &[("q", query.to_string())])
    }

    fn reconciliation(&self, from: &str, to: &str) -> ClientResult<Reconciliation> {
        self.get("live/reconciliation", &[("from", from.to_string()), ("to", to.to_string())])
    }

    fn system_accounts(&self, stack: StackName) -> ClientResult<Vec<SystemAccount>> {
        let path = format!("{}/ledger/system-accounts", stack.as_str());
        Ok(self.get::<ListPage<SystemAccount>>(&path, &[])?.data)
    }

    fn failed_requests(&self, stack: StackName) -> ClientResult<Vec<FailedRequest>> {
        let path = format!("{}/failed-requests", stack.as_str());
        Ok(self.get::<ListPage<FailedRequest>>(&path, &[])?.data)
    }

    fn keys(&self, stack: StackName, organization_id: &str) -> ClientResult<Vec<ApiKey>> {
        let path = format!("{}/organizations/{}/keys", stack.as_str(), encode(organization_id));
        Ok(self.get::<ListPage<ApiKey>>(&path, &[])?.data)
    }

    fn revoke_key(&self, stack: StackName, organization_id: &str, key_id: &str) -> ClientResult<ApiKey> {
        let path =
            format!("{}/organizations/{}/keys/{}", stack.as_str(), encode(organization_id), encode(key_id));
        Ok(self.send::<ApiKeyEnvelope>(self.http.delete(self.url(&path)))?.api_key)
    }

    fn ledger_entries(
        &self,
        stack: StackName,
        id: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> ClientResult<LedgerEntries> {
        let path = format!("{}/ledger/accounts/{}/entries", stack.as_str(), encode(id));
        self.get(&path, &page_params(cursor, limit))
    }
}

fn page_params(cursor: Option<&str>, limit: usize) -> Vec<(&'static str, String)> {
    let mut params = vec![("limit", limit.to_string())];
    params.extend(cursor.map(|c| ("cursor", c.to_string())));
    params
}

fn to_body<T: serde::Serialize>(body: &T) -> ClientResult<Value> {
    serde_json::to_value(body).map_err(|e| ClientError::Decode(e.to_string()))
}

/// Percent-encodes a path segment typed by the operator, so `/` or `?` in
/// a search cannot change which endpoint is called.
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_keeps_ids_and_escapes_separators() {
        assert_eq!(encode("po_4fQ9-x.y~z"), "po_4fQ9-x.y~z");
        assert_eq!(encode("a/b?c d"), "a%2Fb%3Fc%20d");
    }

    #[test]
    fn error_objects_map_to_client_errors() {
        let body =
            br#"{"error":"invalid_state","message":"the payout is already completed","requestId":"req_1"}"#;
        assert_eq!(
            error_from_body(409, body),
            ClientError::Api {
                status: 409,
                code: "invalid_state".into(),
                message: "the payout is already completed".into()
            }
        );
        let body = br#"{"error":"unauthorized","message":"invalid operator token","requestId":"req_2"}"#;
        assert_eq!(error_from_body(401, body), ClientError::Unauthorized("invalid operator token".into()));
        assert_eq!(
            error_from_body(502, b"bad gateway"),
            ClientError::Api { status: 502, code: "http_error".into(), message: "bad gateway".into() }
        );
    }
}
