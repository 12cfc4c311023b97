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
//! - `GET /v3/balances` (the health probe);
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
use crate::domain::rails::{AsyncRail, Kind, Movement, RailError, RailFuture, Seen, Status};
use crate::domain::settings::{FlutterwaveSender, FlutterwaveSettings};

/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest account holder's name Sika keeps from a lookup.
const ACCOUNT_NAME_CHARS_MAX: usize = 255;

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

/// An amount as a JSON number, as the reference writes it.
fn amount_number(movement: &Movement) -> Value {
    let amount = movement.amount.normalize().to_string();
    serde_json::from_str(&amount).unwrap_or(Value::String(amount))
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
        }
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
}

#[cfg(test)]
mod tests {
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
