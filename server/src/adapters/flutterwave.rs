//! The Flutterwave connector (API v3), the adapter behind the domain's
//! `AsyncRail`: payouts as transfers (to mobile-money
//! wallets and Nigerian bank accounts), mobile-money collections as charges,
//! each carrying Sika's id as the provider's reference (`reference` for a
//! transfer, `tx_ref` for a charge), so a retry finds the first attempt
//! instead of paying twice; Flutterwave itself refuses a second transfer
//! with a reference it has seen.
//!
//! Endpoints (developer.flutterwave.com, v3):
//! - `POST /v3/transfers` (account_bank, account_number, amount, currency,
//!   narration, reference, beneficiary_name; `meta` with the sender for
//!   M-Pesa);
//! - `GET /v3/transfers?reference=` (the transfer a reference names);
//! - `POST /v3/charges?type=mobile_money_ghana|mobile_money_uganda|
//!   mobile_money_rwanda|mobile_money_franco|mpesa` (tx_ref, amount,
//!   currency, email, phone_number, network, country);
//! - `GET /v3/transactions/verify_by_reference?tx_ref=` (the charge);
//! - `POST /v3/accounts/resolve` (account_number, account_bank: a bank
//!   account's holder, for Nigerian banks);
//! - `POST /v3/transactions/{id}/refund` (the charge's numeric id; amount,
//!   comments): a refund of a charge it made. The endpoint takes no
//!   reference, so Sika's refund id rides in `comments`
//!   ("Sika refund rf_…"), and before refunding Sika lists the charge's
//!   refunds (`GET /v3/refunds?id=<charge id>`, which shows each one's
//!   `comment`) so a retry finds the first attempt instead of refunding
//!   twice; once the provider's refund id is recorded, `GET
//!   /v3/refunds/{id}` re-reads it. Refund statuses: `pending` (and the
//!   provider's other in-flight words), `completed` or `successful`,
//!   `failed`. References: developer.flutterwave.com/v3.0.0/reference/
//!   transaction-refund, /v3.0.0/reference/get-all-refunds,
//!   /docs/collecting-payments/refunds;
//! - `GET /v3/balances` (the health probe);
//! - for a reconciliation, every transfer and charge over a period, page
//!   after page (`page`, `meta.page_info.total_pages`): `GET /v3/transfers`
//!   ("Get all transfers" takes `page` and `status` and no dates, so every
//!   page is read and the caller keeps the period by `created_at`) and `GET
//!   /v3/transactions` ("Get multiple transactions": `from` and `to` as
//!   `YYYY-MM-DD`, `page`, and filters Sika does not use); each item's
//!   `reference` (transfers) or `tx_ref` (charges), `id`, `amount`,
//!   `currency`, `status` and `created_at`. References:
//!   developer.flutterwave.com/reference/endpoints/transfers,
//!   developer.flutterwave.com/reference/endpoints/transactions,
//!   flutterwaveinc.mintlify.app/api-reference/transactions/get-multiple-transactions
//!   (the list's `meta.page_info` `{total, current_page, total_pages}`);
//! - notifications carry the `verif-hash` header set in the dashboard;
//!   a transfer the provider takes back after it succeeded comes as a
//!   transfer notification (`transfer.completed`, or the newer API's
//!   `transfer.reversal`) whose transfer carries `reversal`
//!   (`initial_status` `SUCCESSFUL`, `reconciliation_status` `REVERSED`):
//!   like every notification it only makes the payout due, and the
//!   reconciler re-reads the transfer before reversing anything.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::file::Secret;
use crate::domain::rails::flutterwave::{Charge, Payee, Route, route};
use crate::domain::rails::{
    AsyncRail, Kind, Listed, Movement, RailError, RailFuture, RefundOrder, Seen, Status,
};
use crate::domain::settings::{FlutterwaveSender, FlutterwaveSettings};

/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest account holder's name Sika keeps from a lookup.
const ACCOUNT_NAME_CHARS_MAX: usize = 255;
/// The most pages one list of transfers or charges is read to: past it,
/// the list is refused rather than cut (at the reference's page of 10,
/// 100,000 transfers or charges).
const LIST_PAGES_MAX: u32 = 10_000;
/// The days a charge list's window reaches past the period on each side:
/// the reference's `from` and `to` are dates, and a day boundary in
/// another time zone must not drop a charge.
const LIST_MARGIN_DAYS: i64 = 1;

/// Why the connector cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ConnectorError {
    #[error("cannot build the Flutterwave client: {0}")]
    Client(#[source] reqwest::Error),
}

pub(crate) struct Flutterwave {
    client: reqwest::Client,
    base_url: String,
    secret_key: Secret,
    /// SHA-256 of the webhook hash, compared in constant time.
    hash_digest: [u8; 32],
    methods: Vec<String>,
    /// Who the M-Pesa transfers come from (`[rails.flutterwave.sender]`).
    sender: Option<FlutterwaveSender>,
}

impl Flutterwave {
    pub(crate) fn new(settings: &FlutterwaveSettings) -> Result<Flutterwave, ConnectorError> {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ConnectorError::Client)?;
        Ok(Flutterwave {
            client,
            base_url: settings.base_url.clone(),
            secret_key: settings.secret_key.clone(),
            hash_digest: Sha256::digest(settings.webhook_hash.expose().as_bytes()).into(),
            methods: settings.methods.clone(),
            sender: settings.sender.clone(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends a request and reads its JSON answer. A timeout, a refused
    /// connection, a 429 or a 5xx is transient; another 4xx is the
    /// provider's refusal with its message. No error names the secret.
    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, RailError> {
        let response = request
            .bearer_auth(self.secret_key.expose())
            .send()
            .await
            .map_err(|e| RailError::Transient(transport(&e)))?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let message = body["message"].as_str().unwrap_or("").chars().take(300).collect::<String>();
        if status.is_success() {
            return Ok(body);
        }
        if status.is_server_error() || status.as_u16() == 429 || status.as_u16() == 408 {
            return Err(RailError::Transient(format!("Flutterwave answered {status}: {message}")));
        }
        let lower = message.to_ascii_lowercase();
        if lower.contains("duplicate") || lower.contains("already exist") {
            return Err(RailError::Duplicate);
        }
        if status.as_u16() == 401 || status.as_u16() == 403 {
            // The key is wrong or lacks a permission: nothing Sika sends will
            // pass until the operator fixes it, so it counts as an outage.
            return Err(RailError::Transient(format!("Flutterwave refused the credentials ({status})")));
        }
        Err(RailError::Refused(if message.is_empty() {
            format!("Flutterwave answered {status}")
        } else {
            message
        }))
    }
}

/// A transport error's kind, without its URL.
fn transport(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "Flutterwave did not answer in time".to_string()
    } else if error.is_connect() {
        "cannot connect to Flutterwave".to_string()
    } else {
        "the exchange with Flutterwave broke off".to_string()
    }
}

/// A transfer or charge as the provider shows it.
fn seen(data: &Value, kind: Kind) -> Option<Seen> {
    let provider_id = match &data["id"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return None,
    };
    let status = match data["status"].as_str().unwrap_or("").to_ascii_uppercase().as_str() {
        _ if kind == Kind::Payout && reversed(data) => Status::Reversed,
        "SUCCESSFUL" | "SUCCESS" | "SUCCEEDED" => Status::Succeeded,
        "FAILED" | "CANCELLED" | "ERROR" => Status::Failed,
        _ => Status::Pending,
    };
    let message = match kind {
        Kind::Payout => data["complete_message"].as_str(),
        Kind::Collection => data["processor_response"].as_str(),
        Kind::Refund => data["flw_ref"].as_str(),
    }
    .unwrap_or("")
    .chars()
    .filter(|c| !c.is_control())
    .take(300)
    .collect();
    Some(Seen { provider_id, status, message })
}

/// Whether a transfer that succeeded came back: the reference's transfer
/// reversal carries `reversal.reconciliation_status` `REVERSED` (with
/// `initial_status` `SUCCESSFUL`) while its `status` reads `FAILED`; a
/// `status` of `REVERSED` says the same.
fn reversed(data: &Value) -> bool {
    let is_reversed = |value: &Value| value.as_str().is_some_and(|s| s.eq_ignore_ascii_case("REVERSED"));
    is_reversed(&data["status"]) || is_reversed(&data["reversal"]["reconciliation_status"])
}

/// The UTC date `days` away from the instant `ms`, as the reference's
/// `from` and `to` take it (`YYYY-MM-DD`).
fn day(ms: i64, days: i64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    (at + chrono::Duration::days(days)).format("%Y-%m-%d").to_string()
}

/// A transfer or a charge as a list shows it: its reference (`reference`
/// or `tx_ref`), id, amount, currency, status (mapped as [`seen`] maps it)
/// and creation time.
fn listed_item(item: &Value, kind: Kind) -> Listed {
    let text = |value: &Value| match value {
        Value::String(s) => s.chars().filter(|c| !c.is_control()).take(200).collect(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let reference = match kind {
        Kind::Collection => text(&item["tx_ref"]),
        _ => text(&item["reference"]),
    };
    let amount = match &item["amount"] {
        Value::Number(n) => n.to_string().parse::<rust_decimal::Decimal>().ok(),
        Value::String(s) => s.trim().parse::<rust_decimal::Decimal>().ok(),
        _ => None,
    };
    let created_at = item["created_at"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis());
    Listed {
        kind,
        reference,
        provider_id: text(&item["id"]),
        currency: text(&item["currency"]).to_ascii_uppercase(),
        amount,
        status: seen(item, kind).map_or(Status::Pending, |s| s.status),
        created_at,
    }
}

/// An amount as a JSON number, as the reference writes it.
fn amount_number(movement: &Movement) -> Value {
    decimal_number(movement.amount)
}

fn decimal_number(amount: rust_decimal::Decimal) -> Value {
    let amount = amount.normalize().to_string();
    serde_json::from_str(&amount).unwrap_or(Value::String(amount))
}

/// What a refund's `comments` say, carrying Sika's id (the refund endpoint
/// takes no reference).
fn refund_comment(order: &RefundOrder) -> String {
    format!("Sika refund {} of collection {}", order.id, order.collection_id)
}

/// Whether a refund's note names Sika's refund `id` (a word of it).
fn names_refund(comment: &Value, id: &str) -> bool {
    comment.as_str().is_some_and(|c| c.split_whitespace().any(|word| word == id))
}

/// The body of `POST /v3/transactions/{id}/refund`.
fn refund_request(order: &RefundOrder) -> Value {
    json!({ "amount": decimal_number(order.amount), "comments": refund_comment(order) })
}

/// A refund as the provider shows it (the initiate answer, a list item or
/// `GET /v3/refunds/{id}`).
fn seen_refund(data: &Value) -> Option<Seen> {
    let provider_id = match &data["id"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return None,
    };
    let status = data["status"].as_str().unwrap_or("").to_ascii_lowercase();
    let status = if status == "failed" || status.starts_with("failed-") {
        Status::Failed
    } else if matches!(status.as_str(), "completed" | "successful" | "succeeded")
        || status.starts_with("completed-")
    {
        Status::Succeeded
    } else {
        Status::Pending
    };
    let message = data["flw_ref"]
        .as_str()
        .map(|r| {
            format!(
                "refund reference {}",
                r.chars().filter(|c| !c.is_control()).take(100).collect::<String>()
            )
        })
        .unwrap_or_default();
    Some(Seen { provider_id, status, message })
}

/// The body of `POST /v3/transfers` for a payout.
fn transfer_request(
    route: &Route,
    movement: &Movement,
    sender: Option<&FlutterwaveSender>,
) -> Result<Value, RailError> {
    let account_bank = match route.payee {
        Payee::Wallet(network) => network.to_string(),
        Payee::Bank => movement
            .bank_code
            .clone()
            .ok_or_else(|| RailError::Refused("the payout names no bank code (to.bankCode)".into()))?,
    };
    let mut request = json!({
        "account_bank": account_bank,
        "account_number": movement.account_number,
        "amount": amount_number(movement),
        "currency": movement.currency,
        "narration": movement.narration,
        "reference": movement.id,
        "beneficiary_name": movement.name,
    });
    if route.needs_sender {
        let sender = sender.ok_or_else(|| {
            RailError::Refused(
                "Flutterwave needs the sender on this transfer: set [rails.flutterwave.sender]".into(),
            )
        })?;
        request["meta"] = json!({
            "sender": sender.name,
            "sender_country": sender.country,
            "mobile_number": sender.mobile_number,
        });
    }
    Ok(request)
}

/// The body of `POST /v3/charges?type=` for a mobile-money collection.
fn charge_request(charge: &Charge, movement: &Movement) -> Value {
    let mut request = json!({
        "tx_ref": movement.id,
        "amount": amount_number(movement),
        "currency": movement.currency,
        "email": movement.email,
        "phone_number": movement.account_number,
        "fullname": movement.name,
    });
    if let Some(network) = charge.network {
        request["network"] = network.into();
    }
    if let Some(country) = charge.country {
        request["country"] = country.into();
    }
    request
}

/// The exchanges, each an `AsyncRail` operation.
impl Flutterwave {
    async fn start_movement(&self, movement: &Movement) -> Result<Seen, RailError> {
        let route = route(&movement.code)
            .ok_or_else(|| RailError::Refused(format!("{} is not routable", movement.code)))?;
        let body = match (movement.kind, route.charge) {
            (Kind::Payout, _) => {
                let request = transfer_request(&route, movement, self.sender.as_ref())?;
                self.call(self.client.post(self.url("/v3/transfers")).json(&request)).await?
            }
            (Kind::Collection, Some(charge)) => {
                let request = charge_request(&charge, movement);
                let url = self.url("/v3/charges");
                self.call(self.client.post(url).query(&[("type", charge.charge_type)]).json(&request)).await?
            }
            (Kind::Collection, None) => {
                return Err(RailError::Refused(format!("{} takes no collections here", movement.code)));
            }
            // A refund names the charge it returns: `AsyncRail::refund`.
            (Kind::Refund, _) => return Err(RailError::Refused("a refund is not a new movement".into())),
        };
        let data = &body["data"];
        // A charge's answer may not show the transaction yet (it waits for
        // the payer); the reconciler reads it by reference.
        Ok(seen(data, movement.kind).unwrap_or(Seen {
            provider_id: String::new(),
            status: Status::Pending,
            message: String::new(),
        }))
    }

    async fn resolve_account(
        &self,
        bank_code: &str,
        account_number: &str,
    ) -> Result<Option<String>, RailError> {
        let request = json!({ "account_number": account_number, "account_bank": bank_code });
        match self.call(self.client.post(self.url("/v3/accounts/resolve")).json(&request)).await {
            Ok(body) => Ok(Some(
                body["data"]["account_name"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(ACCOUNT_NAME_CHARS_MAX)
                    .collect::<String>()
                    .trim()
                    .to_string(),
            )),
            // "Sorry, that account number is invalid, please check and try
            // again": the bank code is one Sika checked, so the account is
            // what Flutterwave does not know.
            Err(RailError::Refused(_) | RailError::Duplicate) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn find_movement(&self, kind: Kind, reference: &str) -> Result<Option<Seen>, RailError> {
        match kind {
            Kind::Payout => {
                let request = self.client.get(self.url("/v3/transfers")).query(&[("reference", reference)]);
                let body = self.call(request).await?;
                let found = match &body["data"] {
                    Value::Array(items) => items.iter().find(|t| t["reference"] == reference).cloned(),
                    data @ Value::Object(_) if data["reference"] == reference => Some(data.clone()),
                    _ => None,
                };
                Ok(found.as_ref().and_then(|t| seen(t, kind)))
            }
            Kind::Collection => {
                let request = self
                    .client
                    .get(self.url("/v3/transactions/verify_by_reference"))
                    .query(&[("tx_ref", reference)]);
                match self.call(request).await {
                    Ok(body) if body["data"]["tx_ref"] == reference => Ok(seen(&body["data"], kind)),
                    Ok(_) => Ok(None),
                    // "No transaction was found for this id".
                    Err(RailError::Refused(_)) => Ok(None),
                    Err(e) => Err(e),
                }
            }
            // A refund is read with its charge: `AsyncRail::find_refund`.
            Kind::Refund => Err(RailError::Refused("a refund is read with its charge".into())),
        }
    }

    /// The provider's numeric id of the charge made for Sika's collection,
    /// from `verify_by_reference`; a charge it does not hold, or one not
    /// `successful`, cannot be refunded.
    async fn refundable_charge(&self, collection_id: &str) -> Result<String, RailError> {
        match self.find_movement(Kind::Collection, collection_id).await? {
            Some(charge) if charge.status == Status::Succeeded => Ok(charge.provider_id),
            Some(_) => Err(RailError::Refused(format!(
                "Flutterwave does not show the charge for {collection_id} as successful"
            ))),
            None => Err(RailError::Refused(format!("Flutterwave holds no charge for {collection_id}"))),
        }
    }

    async fn start_refund(&self, order: &RefundOrder) -> Result<Seen, RailError> {
        let charge = self.refundable_charge(&order.collection_id).await?;
        let url = self.url(&format!("/v3/transactions/{charge}/refund"));
        let body = self.call(self.client.post(url).json(&refund_request(order))).await?;
        seen_refund(&body["data"])
            .ok_or_else(|| RailError::Transient("Flutterwave's refund answer names no refund".into()))
    }

    async fn read_refund(&self, order: &RefundOrder) -> Result<Option<Seen>, RailError> {
        if let Some(provider_id) = order.provider_id.as_deref().filter(|id| !id.is_empty()) {
            let url = self.url(&format!("/v3/refunds/{provider_id}"));
            return match self.call(self.client.get(url)).await {
                Ok(body) => Ok(seen_refund(&body["data"])),
                Err(RailError::Refused(_)) => Ok(None),
                Err(e) => Err(e),
            };
        }
        let charge = match self.find_movement(Kind::Collection, &order.collection_id).await? {
            Some(charge) => charge.provider_id,
            None => return Ok(None),
        };
        let request = self.client.get(self.url("/v3/refunds")).query(&[("id", charge.as_str())]);
        let body = self.call(request).await?;
        let found = body["data"]
            .as_array()
            .and_then(|items| items.iter().find(|r| names_refund(&r["comment"], &order.id)));
        Ok(found.and_then(seen_refund))
    }

    /// Every transfer or charge over a window covering the period: all the
    /// pages of `GET /v3/transfers` (it takes no dates), or of `GET
    /// /v3/transactions` from the day before `from_ms` to the day after
    /// `to_ms`.
    async fn list_movements(&self, kind: Kind, from_ms: i64, to_ms: i64) -> Result<Vec<Listed>, RailError> {
        let (path, dates) = match kind {
            Kind::Payout => ("/v3/transfers", None),
            Kind::Collection => {
                ("/v3/transactions", Some((day(from_ms, -LIST_MARGIN_DAYS), day(to_ms, LIST_MARGIN_DAYS))))
            }
            Kind::Refund => return Err(RailError::Refused("refunds are not listed".into())),
        };
        let mut listed = Vec::new();
        for page in 1..=LIST_PAGES_MAX {
            let mut query = vec![("page", page.to_string())];
            if let Some((from, to)) = &dates {
                query.push(("from", from.clone()));
                query.push(("to", to.clone()));
            }
            let body = self.call(self.client.get(self.url(path)).query(&query)).await?;
            let Some(items) = body["data"].as_array() else {
                return Err(RailError::Transient(format!("Flutterwave's {path} page {page} holds no list")));
            };
            listed.extend(items.iter().map(|item| listed_item(item, kind)));
            let pages = body["meta"]["page_info"]["total_pages"].as_u64().unwrap_or(0);
            if items.is_empty() || u64::from(page) >= pages {
                return Ok(listed);
            }
        }
        Err(RailError::Refused(format!("Flutterwave lists more than {LIST_PAGES_MAX} pages at {path}")))
    }

    async fn probe_balances(&self) -> Result<(), RailError> {
        self.call(self.client.get(self.url("/v3/balances"))).await.map(|_| ())
    }
}

impl AsyncRail for Flutterwave {
    fn name(&self) -> &'static str {
        "Flutterwave"
    }
    fn carries(&self, code: &str) -> bool {
        self.methods.iter().any(|m| m == code)
    }

    fn start<'a>(&'a self, movement: &'a Movement) -> RailFuture<'a, Seen> {
        Box::pin(self.start_movement(movement))
    }

    fn find<'a>(&'a self, kind: Kind, reference: &'a str) -> RailFuture<'a, Option<Seen>> {
        Box::pin(self.find_movement(kind, reference))
    }

    fn refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Seen> {
        Box::pin(self.start_refund(order))
    }

    fn find_refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Option<Seen>> {
        Box::pin(self.read_refund(order))
    }

    fn notification(&self, hash: Option<&str>, body: &[u8]) -> Option<(Kind, String)> {
        let given: [u8; 32] = Sha256::digest(hash?.as_bytes()).into();
        if !bool::from(given.ct_eq(&self.hash_digest)) {
            return None;
        }
        let body: Value = serde_json::from_slice(body).ok()?;
        let event = body["event"].as_str().or_else(|| body["event.type"].as_str()).unwrap_or("");
        let event = event.to_ascii_lowercase();
        let data = if body["data"].is_object() { &body["data"] } else { &body["transfer"] };
        if event.starts_with("transfer") {
            Some((Kind::Payout, data["reference"].as_str()?.to_string()))
        } else if event.starts_with("charge") {
            Some((Kind::Collection, data["tx_ref"].as_str()?.to_string()))
        } else if event.starts_with("refund") {
            // Sika's id, when the refund's note names one of its refunds.
            let id = data["comment"]
                .as_str()
                .and_then(|c| c.split_whitespace().find(|w| w.starts_with("rf_")))
                .unwrap_or("");
            Some((Kind::Refund, id.to_string()))
        } else {
            None
        }
    }

    fn probe(&self) -> RailFuture<'_, ()> {
        Box::pin(self.probe_balances())
    }

    fn resolves(&self, code: &str) -> bool {
        self.carries(code) && route(code).is_some_and(|r| r.resolves)
    }

    fn resolve<'a>(&'a self, bank_code: &'a str, account_number: &'a str) -> RailFuture<'a, Option<String>> {
        Box::pin(self.resolve_account(bank_code, account_number))
    }

    fn list(&self, kind: Kind, from_ms: i64, to_ms: i64) -> RailFuture<'_, Vec<Listed>> {
        Box::pin(self.list_movements(kind, from_ms, to_ms))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use axum::Json;
    use axum::http::StatusCode;

    use super::*;

    fn connector() -> Flutterwave {
        Flutterwave::new(&FlutterwaveSettings {
            secret_key: Secret::new("FLWSECK_TEST-x".into()),
            webhook_hash: Secret::new("the-hash".into()),
            base_url: "http://127.0.0.1:9".into(),
            methods: vec!["mtn_gh".into(), "bank_ng".into()],
            sender: None,
        })
        .unwrap()
    }

    #[test]
    fn a_notification_needs_the_hash_and_names_sika_s_id() {
        let fw = connector();
        let transfer =
            br#"{"event":"transfer.completed","data":{"id":7,"reference":"pay_1","status":"SUCCESSFUL"}}"#;
        assert_eq!(fw.notification(Some("the-hash"), transfer), Some((Kind::Payout, "pay_1".into())));
        assert_eq!(fw.notification(Some("the-hasH"), transfer), None);
        assert_eq!(fw.notification(None, transfer), None);
        let charge =
            br#"{"event":"charge.completed","data":{"id":9,"tx_ref":"col_1","status":"successful"}}"#;
        assert_eq!(fw.notification(Some("the-hash"), charge), Some((Kind::Collection, "col_1".into())));
        assert_eq!(fw.notification(Some("the-hash"), b"{\"event\":\"other\"}"), None);
    }

    fn order(provider_id: Option<&str>) -> RefundOrder {
        RefundOrder {
            id: "rf_7".into(),
            collection_id: "col_3".into(),
            currency: "GHS".into(),
            amount: "25.50".parse().unwrap(),
            provider_id: provider_id.map(str::to_string),
        }
    }

    #[test]
    fn a_refund_asks_for_its_amount_and_carries_sika_s_id_in_its_comments() {
        let request = refund_request(&order(None));
        assert_eq!(request["amount"], json!(25.5));
        assert_eq!(request["comments"], "Sika refund rf_7 of collection col_3");
        assert_eq!(request.as_object().unwrap().len(), 2, "only the reference's fields: {request}");
        assert!(names_refund(&request["comments"], "rf_7"));
        assert!(!names_refund(&request["comments"], "rf_"), "a whole word, not a prefix");
        assert!(!names_refund(&json!(null), "rf_7"));
    }

    #[test]
    fn refund_answers_read_as_the_reference_shows_them() {
        // The initiate answer (the reference's example, as the fake sends it).
        let initiated = json!({"id": 75923, "account_id": 73362, "tx_id": 908790,
            "flw_ref": "URF_1577867664541_3572735", "wallet_id": 74639, "amount_refunded": 6900,
            "status": "completed", "destination": "payment_source",
            "meta": {"source": "availablebalance"}, "created_at": "2021-01-24T09:18:37.366Z"});
        let seen = seen_refund(&initiated).unwrap();
        assert_eq!((seen.provider_id.as_str(), seen.status), ("75923", Status::Succeeded));
        assert_eq!(seen.message, "refund reference URF_1577867664541_3572735");
        // A list item / `GET /v3/refunds/{id}`.
        let s = |status: &str| seen_refund(&json!({"id": 8612, "status": status})).unwrap().status;
        assert_eq!(s("pending"), Status::Pending);
        assert_eq!(s("processing"), Status::Pending);
        assert_eq!(s("completed"), Status::Succeeded);
        assert_eq!(s("completed-mpgs"), Status::Succeeded);
        assert_eq!(s("successful"), Status::Succeeded);
        assert_eq!(s("failed"), Status::Failed);
        assert!(seen_refund(&json!({"status": "completed"})).is_none(), "no id, nothing seen");
    }

    #[test]
    fn a_refund_notification_names_sika_s_refund_when_its_note_does() {
        let fw = connector();
        let named = br#"{"event":"refund.completed","data":{"id":900001,"status":"completed",
            "comment":"Sika refund rf_7 of collection col_3","transaction_id":700001}}"#;
        assert_eq!(fw.notification(Some("the-hash"), named), Some((Kind::Refund, "rf_7".into())));
        let unnamed = br#"{"event":"refund.completed","data":{"id":900001,"status":"completed"}}"#;
        assert_eq!(fw.notification(Some("the-hash"), unnamed), Some((Kind::Refund, String::new())));
        assert_eq!(fw.notification(Some("wrong"), named), None);
    }

    #[tokio::test]
    async fn a_provider_that_does_not_answer_a_refund_is_transient() {
        // Nothing listens on port 9: the charge cannot be read, which is
        // transient (never a refusal that would fail the refund).
        let fw = connector();
        assert!(matches!(fw.refund(&order(None)).await, Err(RailError::Transient(_))));
        assert!(matches!(fw.find_refund(&order(Some("900001"))).await, Err(RailError::Transient(_))));
    }

    /// A provider on loopback answering refunds in the shapes of the
    /// reference (as `tests/blackbox/support/flutterwave.rs` does), which
    /// records what it was asked.
    async fn provider(charge_status: &'static str, refuse: bool) -> (Flutterwave, Arc<Mutex<Vec<String>>>) {
        use axum::extract::{Path, Query, State};
        use axum::routing::{get, post};
        type Seen = Arc<Mutex<Vec<String>>>;
        let asked: Seen = Arc::default();
        let refund = json!({"id": 900001, "amount_refunded": 25.5, "status": "pending", "flw_ref": "URF_1",
            "comment": "Sika refund rf_7 of collection col_3", "settlement_id": "NEW",
            "meta": {"source": "availablebalance"}, "created_at": "2026-11-27T09:00:00.000Z",
            "account_id": 73362, "transaction_id": 700001});
        let verify = move |State(asked): State<Seen>, Query(q): Query<HashMap<String, String>>| async move {
            asked.lock().unwrap().push(format!("verify {}", q["tx_ref"]));
            Json(
                json!({"status": "success", "data": {"id": 700001, "tx_ref": q["tx_ref"], "status": charge_status}}),
            )
        };
        let initiate = move |State(asked): State<Seen>, Path(id): Path<String>, Json(body): Json<Value>| async move {
            asked.lock().unwrap().push(format!("refund {id} {body}"));
            if refuse {
                let answer = json!({"status": "error", "message": "Refund amount cannot be greater than the transaction amount left", "data": null});
                return (StatusCode::BAD_REQUEST, Json(answer));
            }
            let data = json!({"id": 900001, "account_id": 73362, "tx_id": 700001, "flw_ref": "URF_1",
                "wallet_id": 74639, "amount_refunded": 25.5, "status": "pending",
                "destination": "payment_source", "meta": {"source": "availablebalance"},
                "created_at": "2026-11-27T09:00:00.000Z"});
            (
                StatusCode::OK,
                Json(json!({"status": "success", "message": "Transaction refund initiated", "data": data})),
            )
        };
        let listed = refund.clone();
        let list = move |State(asked): State<Seen>, Query(q): Query<HashMap<String, String>>| async move {
            asked.lock().unwrap().push(format!("list id={}", q.get("id").cloned().unwrap_or_default()));
            Json(json!({"status": "success", "meta": {"page_info": {"total": 1}}, "data": [listed]}))
        };
        let one = move |State(asked): State<Seen>, Path(id): Path<String>| async move {
            asked.lock().unwrap().push(format!("get {id}"));
            Json(json!({"status": "success", "data": refund}))
        };
        let app = axum::Router::new()
            .route("/v3/transactions/verify_by_reference", get(verify))
            .route("/v3/transactions/{id}/refund", post(initiate))
            .route("/v3/refunds", get(list))
            .route("/v3/refunds/{id}", get(one))
            .with_state(asked.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let fw = Flutterwave::new(&FlutterwaveSettings {
            secret_key: Secret::new("FLWSECK_TEST-x".into()),
            webhook_hash: Secret::new("the-hash".into()),
            base_url,
            methods: vec!["mtn_gh".into()],
            sender: None,
        })
        .unwrap();
        (fw, asked)
    }

    #[tokio::test]
    async fn a_refund_goes_to_the_charge_s_numeric_id_and_is_found_again_by_sika_s_id() {
        let (fw, asked) = provider("successful", false).await;
        let seen = fw.refund(&order(None)).await.unwrap();
        assert_eq!((seen.provider_id.as_str(), seen.status), ("900001", Status::Pending));
        // Found among the charge's refunds by the note, then by its own id.
        let found = fw.find_refund(&order(None)).await.unwrap().unwrap();
        assert_eq!(found.provider_id, "900001");
        let again = fw.find_refund(&order(Some("900001"))).await.unwrap().unwrap();
        assert_eq!(again.status, Status::Pending);
        let other = RefundOrder { id: "rf_8".into(), ..order(None) };
        assert_eq!(fw.find_refund(&other).await.unwrap(), None, "a refund the note does not name");
        let asked = asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            [
                "verify col_3",
                r#"refund 700001 {"amount":25.5,"comments":"Sika refund rf_7 of collection col_3"}"#,
                "verify col_3",
                "list id=700001",
                "get 900001",
                "verify col_3",
                "list id=700001",
            ]
        );
    }

    #[tokio::test]
    async fn the_provider_s_refusal_and_a_charge_not_successful_are_refusals() {
        let (fw, _) = provider("successful", true).await;
        let refused = fw.refund(&order(None)).await.unwrap_err();
        assert!(matches!(&refused, RailError::Refused(m) if m.contains("cannot be greater")), "{refused:?}");
        let (fw, asked) = provider("pending", false).await;
        assert!(
            matches!(fw.refund(&order(None)).await, Err(RailError::Refused(m)) if m.contains("successful"))
        );
        assert_eq!(asked.lock().unwrap().len(), 1, "nothing is refunded of a charge not successful");
    }

    #[test]
    fn list_items_read_as_the_reference_shows_them() {
        let at = |text: &str| chrono::DateTime::parse_from_rfc3339(text).unwrap().timestamp_millis();
        let transfer = json!({"id": 400001, "reference": "pay_1", "amount": 1500.5, "currency": "ngn",
            "status": "SUCCESSFUL", "created_at": "2026-11-27T09:00:00.000Z", "fee": 26.88});
        let listed = listed_item(&transfer, Kind::Payout);
        assert_eq!((listed.reference.as_str(), listed.provider_id.as_str()), ("pay_1", "400001"));
        assert_eq!((listed.currency.as_str(), listed.status), ("NGN", Status::Succeeded));
        assert_eq!(listed.amount, Some("1500.5".parse().unwrap()));
        assert_eq!(listed.created_at, Some(at("2026-11-27T09:00:00Z")));
        let charge = json!({"id": 700001, "tx_ref": "col_1", "reference": "not-this", "amount": "12.00",
            "currency": "GHS", "status": "pending", "created_at": "yesterday"});
        let listed = listed_item(&charge, Kind::Collection);
        assert_eq!((listed.reference.as_str(), listed.status), ("col_1", Status::Pending));
        assert_eq!((listed.amount, listed.created_at), (Some("12".parse().unwrap()), None));
        let unreadable = listed_item(&json!({"id": 1, "amount": "ten"}), Kind::Payout);
        assert_eq!((unreadable.amount, unreadable.reference.as_str()), (None, ""));
        // The reference's `from` and `to` are days: the window reaches one
        // past the period on each side.
        assert_eq!(day(at("2026-11-27T23:30:00Z"), 1), "2026-11-28");
        assert_eq!(day(at("2026-11-27T00:10:00Z"), -1), "2026-11-26");
    }

    #[test]
    fn provider_statuses_map_to_three_states() {
        let s = |status: &str| seen(&json!({"id": 1, "status": status}), Kind::Payout).unwrap().status;
        assert_eq!(s("SUCCESSFUL"), Status::Succeeded);
        assert_eq!(s("successful"), Status::Succeeded);
        assert_eq!(s("FAILED"), Status::Failed);
        assert_eq!(s("NEW"), Status::Pending);
        assert_eq!(s("PENDING"), Status::Pending);
        assert!(seen(&json!({"status": "NEW"}), Kind::Payout).is_none(), "no id, nothing seen");
        let reversal = json!({
            "id": 1,
            "status": "FAILED",
            "reversal": {"initial_status": "SUCCESSFUL", "reconciliation_status": "REVERSED"},
        });
        assert_eq!(seen(&reversal, Kind::Payout).unwrap().status, Status::Reversed);
        assert_eq!(s("REVERSED"), Status::Reversed);
        let charge = seen(&json!({"id": 1, "status": "REVERSED"}), Kind::Collection).unwrap();
        assert_eq!(charge.status, Status::Pending, "only a transfer is reversed");
    }

    #[test]
    fn only_nigerian_banks_are_looked_up() {
        let fw = connector();
        assert!(fw.resolves("bank_ng") && !fw.resolves("mtn_gh"));
    }

    fn movement(code: &str, bank_code: Option<&str>) -> Movement {
        Movement {
            kind: Kind::Payout,
            id: "pay_ngn_1".into(),
            code: code.into(),
            currency: "NGN".into(),
            amount: "1500.50".parse().unwrap(),
            account_number: "0123456789".into(),
            bank_code: bank_code.map(str::to_string),
            name: "Ada Obi".into(),
            narration: "rent".into(),
            email: String::new(),
        }
    }

    #[test]
    fn a_bank_transfer_names_the_bank_and_an_m_pesa_one_the_sender() {
        let bank = route("bank_ng").unwrap();
        let request = transfer_request(&bank, &movement("bank_ng", Some("044")), None).unwrap();
        assert_eq!(request["account_bank"], "044");
        assert_eq!(request["reference"], "pay_ngn_1");
        assert_eq!(request["amount"], json!(1500.5));
        assert!(request.get("meta").is_none());
        let missing = transfer_request(&bank, &movement("bank_ng", None), None).unwrap_err();
        assert!(matches!(missing, RailError::Refused(m) if m.contains("to.bankCode")));

        let mpesa = route("mpesa_ke").unwrap();
        assert!(transfer_request(&mpesa, &movement("mpesa_ke", None), None).is_err(), "no sender");
        let sender = FlutterwaveSender {
            name: "Sika Ltd".into(),
            country: "KE".into(),
            mobile_number: "254700000001".into(),
        };
        let request = transfer_request(&mpesa, &movement("mpesa_ke", None), Some(&sender)).unwrap();
        assert_eq!(request["account_bank"], "MPS");
        assert_eq!(
            request["meta"],
            json!({"sender": "Sika Ltd", "sender_country": "KE", "mobile_number": "254700000001"})
        );
    }
}
