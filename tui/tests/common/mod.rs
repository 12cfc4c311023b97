//! A fake admin API with fixed data, and helpers to drive and draw an
//! [`App`] without a terminal or a network.

#![allow(dead_code)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use sika_tui::{
    AccountsPage, Action, App, Client, ClientError, Delivery, DeliveryAttempt, Dispute, Movement,
    MovementKind, MovementQuery, NodeStatus, RequestLookup, Settlement, StackName, VerifyResult,
    WebhookEndpoint, render,
};

pub const ADMIN_URL: &str = "http://127.0.0.1:8082";
pub const PENDING_PAYOUT: &str = "pay_ngn_4fQ9xK2mTz8LwP3bN7cR1dYe";
pub const COMPLETED_PAYOUT: &str = "pay_kes_8HwT2pLq6Vx0ZcN4bM9sR3aF";
pub const PENDING_COLLECTION: &str = "col_2KdP7sW9qXe4RtY1uI8oA5zL";
pub const ORDER: &str = "ord_6MnB3vC8xZ1aS4dF7gH0jK2L";
pub const DISPUTE: &str = "dsp_5TgY8uH1jN4mK7lP0oI3uY6T";
pub const FAILING_ENDPOINT: &str = "we_9QaZ2wS5xE8dC1rF4vT7gB0Y";
pub const FAILED_DELIVERY: &str = "whd_3EdC6rF9vT2gB5yH8nU1jM4K";
pub const REQUEST_ID: &str = "req_8sKd02LmQx7VbN3cT5wY1zHe";

/// Transfer counts the status answers with, one per call, so the
/// throughput sparkline has a fixed shape.
const TRANSFER_STEPS: [u64; 16] = [4, 7, 12, 9, 15, 22, 18, 11, 6, 14, 25, 31, 19, 8, 13, 17];

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Up,
    Down,
    WrongToken,
}

/// The fake node. Every action is logged in `calls`.
pub struct FakeClient {
    pub mode: Mutex<Mode>,
    pub calls: Mutex<Vec<String>>,
    status_calls: Mutex<usize>,
    settled: Mutex<Vec<(String, Settlement)>>,
}

impl Default for FakeClient {
    fn default() -> Self {
        FakeClient {
            mode: Mutex::new(Mode::Up),
            calls: Mutex::new(Vec::new()),
            status_calls: Mutex::new(0),
            settled: Mutex::new(Vec::new()),
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture matches the wire shape")
}

impl FakeClient {
    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn check(&self) -> Result<(), ClientError> {
        match *self.mode.lock().unwrap() {
            Mode::Up => Ok(()),
            Mode::Down => Err(ClientError::Unreachable("Connection refused (os error 111)".into())),
            Mode::WrongToken => Err(ClientError::Unauthorized("invalid operator token".into())),
        }
    }

    fn log(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn all_movements(&self, stack: StackName, kind: MovementKind) -> Vec<Movement> {
        let settled = self.settled.lock().unwrap().clone();
        let apply = |mut value: Value| {
            let id = value["id"].as_str().unwrap_or_default().to_string();
            if let Some((_, s)) = settled.iter().find(|(settled_id, _)| *settled_id == id) {
                value["status"] = json!(if *s == Settlement::Complete { "completed" } else { "failed" });
            }
            value
        };
        let values = match (stack, kind) {
            (StackName::Live, MovementKind::Payout) => live_payouts(),
            (StackName::Live, MovementKind::Collection) => live_collections(),
            (StackName::Live, MovementKind::Order) => live_orders(),
            (StackName::Sandbox, MovementKind::Payout) => sandbox_payouts(),
            (StackName::Sandbox, _) => Vec::new(),
        };
        values
            .into_iter()
            .map(apply)
            .map(|v| match kind {
                MovementKind::Payout => Movement::Payout(decode(v)),
                MovementKind::Collection => Movement::Collection(decode(v)),
                MovementKind::Order => Movement::Order(decode(v)),
            })
            .collect()
    }
}

impl Client for FakeClient {
    fn status(&self) -> Result<NodeStatus, ClientError> {
        self.check()?;
        let mut calls = self.status_calls.lock().unwrap();
        let step = *calls;
        *calls += 1;
        let live: u64 = 2_000 + TRANSFER_STEPS.iter().cycle().take(step).sum::<u64>();
        let sandbox: u64 = 50_000 + 40 * step as u64;
        Ok(decode(json!({
            "version": "0.1.0",
            "uptimeSeconds": 3_723,
            "live": {
                "journalLength": 1_234, "commits": 456, "commands": 789, "commandsFailed": 3,
                "transfers": live, "writerQueueDepth": 0, "databaseBytes": 5_242_880
            },
            "sandbox": {
                "journalLength": 98_765, "commits": 12_001, "commands": 40_321, "commandsFailed": 0,
                "transfers": sandbox, "writerQueueDepth": 2, "databaseBytes": 73_400_320u64
            }
        })))
    }

    fn accounts(&self, stack: StackName) -> Result<AccountsPage, ClientError> {
        self.check()?;
        Ok(decode(match stack {
            StackName::Live => live_accounts(),
            StackName::Sandbox => sandbox_accounts(),
        }))
    }

    fn verify(&self, stack: StackName) -> Result<VerifyResult, ClientError> {
        self.check()?;
        self.log(format!("verify {}", stack.as_str()));
        Ok(decode(json!({
            "at": "2025-03-14T10:20:30.000Z",
            "consistent": true,
            "summary": "1234 journal entries; debits equal credits; hash chain intact",
            "problems": []
        })))
    }

    fn movements(&self, stack: StackName, query: &MovementQuery) -> Result<Vec<Movement>, ClientError> {
        self.check()?;
        let rows = self.all_movements(stack, query.kind);
        Ok(rows
            .into_iter()
            .filter(|m| query.q.as_deref().is_none_or(|q| m.id() == q || m.external_reference() == q))
            .filter(|m| query.status.as_deref().is_none_or(|s| m.status() == s))
            .take(query.limit)
            .collect())
    }

    fn movement(&self, stack: StackName, kind: MovementKind, id: &str) -> Result<Movement, ClientError> {
        self.check()?;
        let found = self.all_movements(stack, kind).into_iter().find(|m| m.id() == id);
        let mut movement = found.ok_or_else(|| not_found(kind.singular(), id))?;
        // The full answer carries the webhook deliveries on the timeline.
        if let Movement::Payout(p) = &mut movement {
            p.timeline.push(decode(json!({
                "at": "2025-03-14T09:15:03.120Z", "kind": "webhook",
                "title": "Webhook payout.pending delivered",
                "detail": "200 from https://shop.example.com/hooks/sika in 84 ms"
            })));
        }
        Ok(movement)
    }

    fn settle(
        &self,
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
    ) -> Result<Movement, ClientError> {
        self.check()?;
        self.log(format!("{} {} {} {id}", settlement.as_str(), stack.as_str(), kind.singular()));
        let movement = self.movement(stack, kind, id)?;
        if movement.status() != "pending" {
            return Err(ClientError::Api {
                status: 409,
                code: "invalid_state".into(),
                message: format!("the {} is already {}", kind.singular(), movement.status()),
            });
        }
        self.settled.lock().unwrap().push((id.to_string(), settlement));
        self.movement(stack, kind, id)
    }

    fn disputes(&self, stack: StackName) -> Result<Vec<Dispute>, ClientError> {
        self.check()?;
        Ok(match stack {
            StackName::Live => vec![decode(dispute(false))],
            StackName::Sandbox => Vec::new(),
        })
    }

    fn dispute(&self, stack: StackName, id: &str) -> Result<Dispute, ClientError> {
        self.check()?;
        match stack {
            StackName::Live if id == DISPUTE => Ok(decode(dispute(true))),
            _ => Err(not_found("dispute", id)),
        }
    }

    fn webhook_endpoints(&self, stack: StackName) -> Result<Vec<WebhookEndpoint>, ClientError> {
        self.check()?;
        Ok(match stack {
            StackName::Live => decode(endpoints()),
            StackName::Sandbox => Vec::new(),
        })
    }

    fn endpoint_attempts(
        &self,
        _stack: StackName,
        endpoint_id: &str,
    ) -> Result<Vec<DeliveryAttempt>, ClientError> {
        self.check()?;
        if endpoint_id != FAILING_ENDPOINT {
            return Ok(Vec::new());
        }
        Ok(decode(attempts()))
    }

    fn deliveries(&self, stack: StackName, status: &str) -> Result<Vec<Delivery>, ClientError> {
        self.check()?;
        if stack == StackName::Sandbox {
            return Ok(Vec::new());
        }
        let all: Vec<Delivery> = decode(deliveries());
        Ok(all.into_iter().filter(|d| d.status.as_str() == status).collect())
    }

    fn retry_delivery(&self, stack: StackName, delivery_id: &str) -> Result<Delivery, ClientError> {
        self.check()?;
        self.log(format!("retry {} {delivery_id}", stack.as_str()));
        let all: Vec<Delivery> = decode(deliveries());
        let mut delivery = all
            .into_iter()
            .find(|d| d.id.as_str() == delivery_id)
            .ok_or_else(|| not_found("delivery", delivery_id))?;
        delivery.status = "pending".into();
        Ok(delivery)
    }

    fn enable_endpoint(&self, stack: StackName, endpoint_id: &str) -> Result<WebhookEndpoint, ClientError> {
        self.check()?;
        self.log(format!("enable {} {endpoint_id}", stack.as_str()));
        let all: Vec<WebhookEndpoint> = decode(endpoints());
        let mut endpoint = all
            .into_iter()
            .find(|e| e.id.as_str() == endpoint_id)
            .ok_or_else(|| not_found("webhook endpoint", endpoint_id))?;
        endpoint.status = "active".into();
        Ok(endpoint)
    }

    fn request(&self, request_id: &str) -> Result<RequestLookup, ClientError> {
        self.check()?;
        if request_id != REQUEST_ID {
            return Err(not_found("request", request_id));
        }
        Ok(decode(request_lookup()))
    }
}

fn not_found(what: &str, id: &str) -> ClientError {
    ClientError::Api { status: 404, code: "not_found".into(), message: format!("{what} '{id}' not found") }
}

fn live_accounts() -> Value {
    json!({
        "data": [
            account("NGN4820193375", "org_3xV8bN1mQ7wE4rT6yU9iO2pA", "NGN", "1250000.00", "150750.00", "1400750.00", "912.35"),
            account("USD1002003004", "org_3xV8bN1mQ7wE4rT6yU9iO2pA", "USD", "4200.50", "0.00", "4200.50", "4200.50"),
            account("KES7730021190", "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "KES", "98000.00", "2000.00", "100000.00", "773.99"),
            account("NGN1190028833", "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "NGN", "300000.00", "0.00", "300000.00", "195.40"),
        ],
        "hasMore": false,
        "nextCursor": null,
        "totals": [
            { "currency": "KES", "availableBalance": "98000.00", "pendingBalance": "2000.00", "totalBalance": "100000.00", "accounts": 1 },
            { "currency": "NGN", "availableBalance": "1550000.00", "pendingBalance": "150750.00", "totalBalance": "1700750.00", "accounts": 2 },
            { "currency": "USD", "availableBalance": "4200.50", "pendingBalance": "0.00", "totalBalance": "4200.50", "accounts": 1 },
        ],
        "ledger": {
            "journalLength": 1234,
            "lastVerify": {
                "at": "2025-03-14T08:00:00.000Z",
                "consistent": true,
                "summary": "1234 journal entries; debits equal credits; hash chain intact",
                "problems": []
            }
        }
    })
}

/// No `totals` and no `ledger`, as an older node answers: the console sums
/// the accounts itself.
fn sandbox_accounts() -> Value {
    json!({
        "data": [
            account("GHS5500110022", "org_3xV8bN1mQ7wE4rT6yU9iO2pA", "GHS", "10.50", "0.25", "10.75", "0.69"),
            account("GHS5500110023", "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "GHS", "2.00", "0.00", "2.00", "0.12"),
        ],
        "hasMore": false,
        "nextCursor": null
    })
}

fn account(
    id: &str,
    org: &str,
    currency: &str,
    available: &str,
    pending: &str,
    total: &str,
    usd: &str,
) -> Value {
    json!({
        "id": id, "organizationId": org, "currency": currency,
        "availableBalance": available, "pendingBalance": pending, "totalBalance": total,
        "estimatedUsd": usd, "createdAt": "2025-01-05T12:00:00.000Z"
    })
}

fn timeline(entries: &[(&str, &str, &str, &str)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|(at, kind, title, detail)| json!({ "at": at, "kind": kind, "title": title, "detail": detail }))
            .collect(),
    )
}

fn live_payouts() -> Vec<Value> {
    vec![
        json!({
            "id": PENDING_PAYOUT, "organizationId": "org_3xV8bN1mQ7wE4rT6yU9iO2pA", "status": "pending",
            "from": { "amount": "150000.00", "currency": "NGN", "accountNumber": "NGN4820193375" },
            "to": { "code": "bank_ng_gtb", "amount": "150000.00", "currency": "NGN", "accountNumber": "0123456789", "address": null },
            "fee": { "amount": "750.00", "currency": "NGN" },
            "externalReference": "inv-2041",
            "statusMessage": "Waiting for the operator to confirm settlement",
            "createdAt": "2025-03-14T09:15:02.000Z",
            // Out of order on purpose: the detail sorts by time.
            "timeline": timeline(&[
                ("2025-03-14T09:15:02.500Z", "provider", "Sent to rail", "manual settlement: waiting for the operator"),
                ("2025-03-14T09:15:02.000Z", "state", "Payout created", "150000.00 NGN to bank_ng_gtb 0123456789"),
                ("2025-03-14T09:15:02.010Z", "fee", "Fee held", "750.00 NGN fee"),
            ]),
        }),
        json!({
            "id": COMPLETED_PAYOUT, "organizationId": "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "status": "completed",
            "from": { "amount": "5000.00", "currency": "KES", "accountNumber": "KES7730021190" },
            "to": { "code": "mpesa_ke", "amount": "5000.00", "currency": "KES", "accountNumber": "254700000001" },
            "fee": { "amount": "25.00", "currency": "KES" },
            "externalReference": null,
            "statusMessage": "Confirmed by the operator",
            "createdAt": "2025-03-13T17:42:10.000Z",
            "timeline": timeline(&[
                ("2025-03-13T17:42:10.000Z", "state", "Payout created", "5000.00 KES to mpesa_ke 254700000001"),
                ("2025-03-13T17:50:00.000Z", "provider", "Provider confirmed delivery", "Confirmed by the operator"),
                ("2025-03-13T17:50:00.000Z", "state", "Payout completed", "Status completed"),
            ]),
        }),
    ]
}

fn live_collections() -> Vec<Value> {
    vec![json!({
        "id": PENDING_COLLECTION, "organizationId": "org_3xV8bN1mQ7wE4rT6yU9iO2pA", "status": "pending",
        "amount": "20000.00", "currency": "NGN", "code": "ussd_ng", "accountNumber": "08031234567",
        "externalReference": "cart-77", "statusMessage": "Prompt sent to the payer",
        "createdAt": "2025-03-14T08:30:00.000Z",
        "timeline": timeline(&[
            ("2025-03-14T08:30:00.000Z", "state", "Collection created", "20000.00 NGN from ussd_ng 08031234567"),
            ("2025-03-14T08:30:00.200Z", "provider", "Prompt sent", "manual settlement: waiting for the operator"),
        ]),
    })]
}

fn live_orders() -> Vec<Value> {
    vec![json!({
        "id": ORDER, "organizationId": "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "status": "completed",
        "from": { "method": "crypto", "currency": "USDT", "amount": "100.00" },
        "to": { "code": "bank_ng_gtb", "currency": "NGN", "accountNumber": "0987654321" },
        "externalReference": "order-9", "statusMessage": "Paid out",
        "createdAt": "2025-03-12T11:00:00.000Z",
        "timeline": timeline(&[
            ("2025-03-12T11:00:00.000Z", "state", "Order created", "100.00 USDT by crypto"),
            ("2025-03-12T11:05:00.000Z", "provider", "Deposit confirmed", "3 confirmations"),
            ("2025-03-12T11:05:01.000Z", "provider", "Payout: Sent to rail", "bank_ng_gtb 0987654321"),
            ("2025-03-12T11:06:00.000Z", "state", "Payout: Payout completed", "Status completed"),
            ("2025-03-12T11:06:00.500Z", "webhook", "Webhook order.completed delivered", "200 in 91 ms"),
        ]),
    })]
}

fn sandbox_payouts() -> Vec<Value> {
    vec![json!({
        "id": "pay_ghs_1AbC2dEf3GhI4jKl5MnO6pQr", "organizationId": "org_3xV8bN1mQ7wE4rT6yU9iO2pA",
        "status": "failed",
        "from": { "amount": "1.00", "currency": "GHS", "accountNumber": "GHS5500110022" },
        "to": { "code": "momo_gh", "amount": "1.00", "currency": "GHS", "accountNumber": "233200000000" },
        "fee": { "amount": "0.01", "currency": "GHS" },
        "externalReference": "test-fail", "statusMessage": "Simulated failure",
        "createdAt": "2025-03-14T07:00:00.000Z",
        "timeline": timeline(&[("2025-03-14T07:00:00.000Z", "state", "Payout failed", "Simulated failure")]),
    })]
}

fn dispute(with_messages: bool) -> Value {
    let messages = if with_messages {
        json!([
            { "id": "dmsg_1", "authorType": "customer", "body": "I was charged twice for order 9.\nPlease refund one of them.", "createdAt": "2025-03-13T10:00:00.000Z" },
            { "id": "dmsg_2", "authorType": "merchant", "body": "We see one charge only; attaching the receipt.", "createdAt": "2025-03-13T15:30:00.000Z" },
            { "id": "dmsg_3", "authorType": "operator", "body": "Reviewing both statements.", "createdAt": "2025-03-14T09:00:00.000Z" },
        ])
    } else {
        json!([])
    };
    json!({
        "id": DISPUTE, "organizationId": "org_5zX1cV4bN7mQ0wE3rT6yU9iO", "status": "under_review",
        "amount": "100.00", "currency": "USDT", "reason": "duplicate_charge",
        "createdAt": "2025-03-13T10:00:00.000Z", "messages": messages
    })
}

fn endpoints() -> Value {
    json!([
        {
            "id": "we_1AsD4fG7hJ0kL3zX6cV9bN2m", "organizationId": "org_3xV8bN1mQ7wE4rT6yU9iO2pA",
            "url": "https://shop.example.com/hooks/sika", "status": "active", "disabledReason": null,
            "consecutiveFailures": 0, "successRate": 0.987, "averageLatencyMs": 142.3,
            "pendingDeliveries": 1, "failedDeliveries": 0, "lastAttemptAt": "2025-03-14T09:15:03.120Z"
        },
        {
            "id": FAILING_ENDPOINT, "organizationId": "org_5zX1cV4bN7mQ0wE3rT6yU9iO",
            "url": "https://api.merchant.test/webhooks", "status": "disabled",
            "disabledReason": "failing for more than 5 days",
            "consecutiveFailures": 37, "successRate": 0.0, "averageLatencyMs": null,
            "pendingDeliveries": 0, "failedDeliveries": 2, "lastAttemptAt": "2025-03-13T22:00:00.000Z"
        }
    ])
}

fn attempts() -> Value {
    json!([
        { "deliveryId": FAILED_DELIVERY, "event": "payout.completed", "at": "2025-03-13T22:00:00.000Z", "statusCode": 500, "durationMs": 231, "error": "HTTP 500", "succeeded": false },
        { "deliveryId": FAILED_DELIVERY, "event": "payout.completed", "at": "2025-03-13T14:00:00.000Z", "statusCode": null, "durationMs": 15000, "error": "timed out after 15 s", "succeeded": false },
        { "deliveryId": "whd_7YhN0uJ3mK6lP9oI2uY5tR8E", "event": "order.completed", "at": "2025-03-08T09:00:00.000Z", "statusCode": 200, "durationMs": 88, "error": null, "succeeded": true },
    ])
}

fn deliveries() -> Value {
    json!([
        { "id": FAILED_DELIVERY, "endpointId": FAILING_ENDPOINT, "event": "payout.completed", "status": "failed", "attemptCount": 8, "nextAttemptAt": null, "createdAt": "2025-03-09T22:00:00.000Z" },
        { "id": "whd_0PlM9oK8iJ7uH6yG5tF4rD3e", "endpointId": FAILING_ENDPOINT, "event": "order.completed", "status": "failed", "attemptCount": 8, "nextAttemptAt": null, "createdAt": "2025-03-09T20:00:00.000Z" },
        { "id": "whd_4RfV7tG0yH3nJ6mK9lP2oI5u", "endpointId": "we_1AsD4fG7hJ0kL3zX6cV9bN2m", "event": "payout.pending", "status": "pending", "attemptCount": 2, "nextAttemptAt": "2025-03-14T09:20:00.000Z", "createdAt": "2025-03-14T09:15:02.000Z" },
        { "id": "whd_8IkU7yT6rE5wQ4aS3dF2gH1j", "endpointId": "we_1AsD4fG7hJ0kL3zX6cV9bN2m", "event": "collection.pending", "status": "pending", "attemptCount": 0, "nextAttemptAt": "2025-03-14T09:16:00.000Z", "createdAt": "2025-03-14T09:16:00.000Z" },
    ])
}

fn request_lookup() -> Value {
    json!({
        "request": {
            "id": REQUEST_ID, "method": "POST", "path": "/v1/payouts", "status": 201, "durationMs": 12.4,
            "apiKeyId": "key_2WsX5eDc8RfV1tGb4YhN7uJm",
            "requestBody": { "amount": "150000.00", "currency": "NGN", "externalReference": "inv-2041" },
            "responseBody": { "payout": { "id": PENDING_PAYOUT, "status": "pending" } },
            "createdAt": "2025-03-14T09:15:02.000Z"
        },
        "stack": "live",
        "organizationId": "org_3xV8bN1mQ7wE4rT6yU9iO2pA"
    })
}

// ----- driving the app -----

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn char_key(c: char) -> KeyEvent {
    let modifiers = if c.is_ascii_uppercase() { KeyModifiers::SHIFT } else { KeyModifiers::NONE };
    KeyEvent::new(KeyCode::Char(c), modifiers)
}

/// A console and a fake node, with a clock the test moves.
pub struct Harness {
    pub app: App,
    pub client: FakeClient,
    pub now: Instant,
}

impl Harness {
    /// Connected, with the Overview loaded and a throughput history.
    pub fn new() -> Harness {
        let mut harness =
            Harness { app: App::new(ADMIN_URL), client: FakeClient::default(), now: Instant::now() };
        for _ in 0..TRANSFER_STEPS.len() {
            harness.advance(Duration::from_secs(1));
        }
        harness
    }

    /// Moves the clock and runs whatever is due.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        let requests = self.app.tick(self.now);
        self.app.fetch_now(&self.client, requests, self.now);
    }

    /// Presses a key and runs what it fetches.
    pub fn press(&mut self, key: KeyEvent) -> Action {
        let action = self.app.handle_key(key);
        if let Action::Fetch(requests) = &action {
            self.app.fetch_now(&self.client, requests.clone(), self.now);
        }
        action
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(char_key(c));
        }
    }

    pub fn screen(&self, width: u16, height: u16) -> String {
        screen(&self.app, width, height)
    }
}

/// The text of one frame, trailing spaces trimmed.
pub fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|frame| render(app, frame)).expect("draw");
    let buffer = terminal.backend().buffer();
    let mut lines = Vec::with_capacity(usize::from(height));
    for y in 0..height {
        let line: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
        lines.push(line.trim_end().to_string());
    }
    lines.join("\n")
}
