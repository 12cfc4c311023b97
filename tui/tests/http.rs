//! `HttpClient` against a small HTTP server that answers like the admin API:
//! the paths and queries it calls, the bearer token it sends, and how it
//! reads answers and errors.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use serde_json::{Value, json};
use sika_tui::{
    Client, ClientError, HttpClient, Movement, MovementKind, MovementQuery, Settlement, StackName,
};

const TOKEN: &str = "adm_test_token";

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    authorization: Option<String>,
    body: String,
}

struct FakeAdmin {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// What the server answers from and records into.
struct Routes {
    answers: HashMap<String, (u16, String)>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// Serves `routes` ("METHOD /path?query" → status and body) until the test
/// process ends; anything else is a 404 error object. A wrong token is a 401
/// like the real admin API's.
fn serve(routes: Vec<(&str, u16, Value)>) -> FakeAdmin {
    let answers = routes
        .into_iter()
        .map(|(route, status, body)| (route.to_string(), (status, body.to_string())))
        .collect();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app =
        axum::Router::new().fallback(answer).with_state(Arc::new(Routes { answers, seen: seen.clone() }));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // The client under test blocks, so the server runs on a runtime of its own thread.
    thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    FakeAdmin { url, seen }
}

async fn answer(
    State(routes): State<Arc<Routes>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    let target = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_string();
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string);
    routes.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        target: target.clone(),
        authorization: authorization.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let (status, body) = if authorization.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        (
            401,
            json!({ "error": "unauthorized", "message": "invalid operator token", "requestId": "req_1" })
                .to_string(),
        )
    } else {
        routes.answers.get(&format!("{method} {target}")).cloned().unwrap_or_else(|| {
            (
                404,
                json!({ "error": "not_found", "message": "no such route", "requestId": "req_2" }).to_string(),
            )
        })
    };
    (StatusCode::from_u16(status).unwrap(), [(header::CONTENT_TYPE, "application/json")], body)
}

fn client(admin: &FakeAdmin) -> HttpClient {
    HttpClient::new(&admin.url, TOKEN).unwrap()
}

fn last(admin: &FakeAdmin) -> Seen {
    admin.seen.lock().unwrap().last().cloned().expect("a request")
}

fn payout(id: &str, status: &str) -> Value {
    json!({
        "id": id, "organizationId": "org_1", "status": status,
        "from": { "amount": "10.00", "currency": "NGN", "accountNumber": "NGN1", "kyc": {} },
        "to": { "code": "bank", "amount": "10.00", "currency": "NGN", "accountNumber": "01", "address": null, "tag": null },
        "fee": { "amount": "0.10", "currency": "NGN" },
        "rate": "1", "externalReference": "inv-1", "statusMessage": null,
        "createdAt": "2025-01-01T00:00:00.000Z",
        "timeline": [{ "at": "2025-01-01T00:00:00.000Z", "kind": "state", "title": "Payout created", "detail": "" }]
    })
}

#[test]
fn status_sends_the_bearer_token_and_reads_both_stacks() {
    let admin = serve(vec![(
        "GET /admin/v1/status",
        200,
        json!({ "status": {
            "version": "0.1.0", "uptimeSeconds": 12,
            "live": { "journalLength": 3, "commits": 2, "commands": 4, "commandsFailed": 1, "transfers": 9, "writerQueueDepth": 0, "databaseBytes": 4096 },
            "sandbox": { "journalLength": 5, "commits": 1, "commands": 1, "commandsFailed": 0, "transfers": 7, "writerQueueDepth": 1, "databaseBytes": 8192 }
        }}),
    )]);
    let status = client(&admin).status().unwrap();
    assert_eq!(status.uptime_seconds, 12);
    assert_eq!(status.live.transfers, 9);
    assert_eq!(status.sandbox.database_bytes, 8192);
    assert_eq!(last(&admin).authorization.as_deref(), Some("Bearer adm_test_token"));
}

#[test]
fn a_wrong_token_is_unauthorized() {
    let admin = serve(vec![]);
    let wrong = HttpClient::new(&admin.url, "adm_wrong").unwrap();
    assert_eq!(wrong.status(), Err(ClientError::Unauthorized("invalid operator token".into())));
}

#[test]
fn nothing_listening_is_unreachable() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = HttpClient::new(&format!("http://127.0.0.1:{port}"), TOKEN).unwrap();
    match client.status() {
        Err(ClientError::Unreachable(cause)) => assert!(!cause.is_empty()),
        other => panic!("expected unreachable, got {other:?}"),
    }
}

#[test]
fn a_body_that_is_not_the_expected_json_is_a_decode_error() {
    let admin = serve(vec![("GET /admin/v1/status", 200, json!({ "status": "fine" }))]);
    assert!(matches!(client(&admin).status(), Err(ClientError::Decode(_))));
}

#[test]
fn movements_pass_the_search_and_status_as_query_parameters() {
    let admin = serve(vec![(
        "GET /admin/v1/live/payouts?limit=50&q=inv-1&status=pending",
        200,
        json!({ "data": [payout("pay_1", "pending")], "hasMore": false, "nextCursor": null }),
    )]);
    let query = MovementQuery {
        kind: MovementKind::Payout,
        q: Some("inv-1".into()),
        status: Some("pending".into()),
        limit: 50,
    };
    let rows = client(&admin).movements(StackName::Live, &query).unwrap();
    assert_eq!(rows.len(), 1);
    let Movement::Payout(p) = &rows[0] else { panic!("a payout") };
    assert_eq!((p.id.as_str(), p.organization_id.as_str(), p.to.address.as_str()), ("pay_1", "org_1", ""));
}

#[test]
fn collections_and_orders_decode_from_their_own_paths() {
    let admin = serve(vec![
        (
            "GET /admin/v1/sandbox/collections/col_1",
            200,
            json!({ "collection": { "id": "col_1", "status": "pending", "amount": "5.00", "currency": "GHS", "code": "momo", "accountNumber": "233", "timeline": [] } }),
        ),
        (
            "GET /admin/v1/sandbox/orders?limit=50",
            200,
            json!({ "data": [{ "id": "ord_1", "status": "completed", "from": { "method": "crypto", "currency": "USDT", "amount": "1.00", "chain": "tron" }, "to": { "code": "bank", "currency": "NGN" }, "timeline": [] }], "hasMore": false, "nextCursor": null }),
        ),
    ]);
    let client = client(&admin);
    let collection = client.movement(StackName::Sandbox, MovementKind::Collection, "col_1").unwrap();
    assert!(collection.awaits_settlement());
    let query = MovementQuery { kind: MovementKind::Order, q: None, status: None, limit: 50 };
    let orders = client.movements(StackName::Sandbox, &query).unwrap();
    assert_eq!(orders[0].amount(), ("1.00", "USDT"));
}

#[test]
fn settle_posts_the_action_and_maps_409() {
    let admin = serve(vec![
        (
            "POST /admin/v1/live/payouts/pay_1/complete",
            200,
            json!({ "payout": payout("pay_1", "completed") }),
        ),
        (
            "POST /admin/v1/live/payouts/pay_2/fail",
            409,
            json!({ "error": "invalid_state", "message": "the payout is already completed", "requestId": "req_3" }),
        ),
    ]);
    let client = client(&admin);
    let done = client.settle(StackName::Live, MovementKind::Payout, "pay_1", Settlement::Complete).unwrap();
    assert_eq!(done.status(), "completed");
    assert_eq!(last(&admin).method, "POST");
    let refused = client.settle(StackName::Live, MovementKind::Payout, "pay_2", Settlement::Fail);
    assert_eq!(
        refused.unwrap_err(),
        ClientError::Api {
            status: 409,
            code: "invalid_state".into(),
            message: "the payout is already completed".into()
        }
    );
}

#[test]
fn ids_typed_by_the_operator_are_escaped_in_paths() {
    let admin = serve(vec![]);
    let _ = client(&admin).request("req_1/../../status?x");
    assert_eq!(last(&admin).target, "/admin/v1/requests/req_1%2F..%2F..%2Fstatus%3Fx");
}

#[test]
fn accounts_verify_and_the_ledger_figures() {
    let admin = serve(vec![
        (
            "GET /admin/v1/live/accounts",
            200,
            json!({
                "data": [{ "id": "NGN1", "organizationId": "org_1", "currency": "NGN", "availableBalance": "1.00", "pendingBalance": "0.00", "totalBalance": "1.00", "estimatedUsd": "0.00", "createdAt": "2025-01-01T00:00:00.000Z" }],
                "hasMore": false, "nextCursor": null,
                "totals": [{ "currency": "NGN", "availableBalance": "1.00", "pendingBalance": "0.00", "totalBalance": "1.00", "accounts": 1 }],
                "ledger": { "journalLength": 7, "lastVerify": null }
            }),
        ),
        (
            "POST /admin/v1/live/verify",
            200,
            json!({ "verify": { "at": "2025-01-01T00:00:00.000Z", "consistent": false, "summary": "1 problem", "problems": ["balance of NGN1 differs"] } }),
        ),
    ]);
    let client = client(&admin);
    let page = client.accounts(StackName::Live).unwrap();
    assert_eq!((page.data.len(), page.totals.len(), page.ledger.journal_length), (1, 1, 7));
    assert!(page.ledger.last_verify.is_none());
    let verify = client.verify(StackName::Live).unwrap();
    assert!(!verify.consistent);
    assert_eq!(verify.problems[0].as_str(), "balance of NGN1 differs");
}

#[test]
fn webhook_health_attempts_and_actions() {
    let admin = serve(vec![
        (
            "GET /admin/v1/live/webhooks/endpoints",
            200,
            json!({ "data": [{ "id": "we_1", "organizationId": "org_1", "url": "https://x.test/h", "status": "disabled", "disabledReason": "failing", "consecutiveFailures": 9, "successRate": null, "averageLatencyMs": 12.5, "pendingDeliveries": 0, "failedDeliveries": 3, "lastAttemptAt": null }], "hasMore": false, "nextCursor": null }),
        ),
        (
            "GET /admin/v1/live/webhooks/endpoints/we_1/attempts",
            200,
            json!({ "data": [{ "deliveryId": "whd_1", "event": "payout.completed", "at": "2025-01-01T00:00:00.000Z", "statusCode": null, "durationMs": 15000, "error": "timed out", "succeeded": false }], "hasMore": false, "nextCursor": null }),
        ),
        (
            "GET /admin/v1/live/webhooks/deliveries?status=failed",
            200,
            json!({ "data": [{ "id": "whd_1", "endpointId": "we_1", "eventId": "evt_1", "event": "payout.completed", "status": "failed", "attemptCount": 8, "attempts": [], "nextAttemptAt": null, "createdAt": "2025-01-01T00:00:00.000Z" }], "hasMore": false, "nextCursor": null }),
        ),
        (
            "POST /admin/v1/live/webhooks/deliveries/whd_1/retry",
            200,
            json!({ "delivery": { "id": "whd_1", "endpointId": "we_1", "event": "payout.completed", "status": "pending", "attemptCount": 9 } }),
        ),
        (
            "POST /admin/v1/live/webhooks/endpoints/we_1/enable",
            200,
            json!({ "webhookEndpoint": { "id": "we_1", "url": "https://x.test/h", "status": "active" } }),
        ),
    ]);
    let client = client(&admin);
    let endpoints = client.webhook_endpoints(StackName::Live).unwrap();
    assert_eq!((endpoints[0].success_rate, endpoints[0].average_latency_ms), (None, Some(12.5)));
    let attempts = client.endpoint_attempts(StackName::Live, "we_1").unwrap();
    assert_eq!((attempts[0].status_code, attempts[0].duration_ms), (None, Some(15000.0)));
    assert_eq!(client.deliveries(StackName::Live, "failed").unwrap()[0].attempt_count, 8);
    assert_eq!(client.retry_delivery(StackName::Live, "whd_1").unwrap().status.as_str(), "pending");
    assert_eq!(last(&admin).body, "", "actions send no body");
    assert_eq!(client.enable_endpoint(StackName::Live, "we_1").unwrap().status.as_str(), "active");
}

#[test]
fn disputes_and_request_lookup() {
    let admin = serve(vec![
        ("GET /admin/v1/live/disputes", 200, json!({ "data": [], "hasMore": false, "nextCursor": null })),
        (
            "GET /admin/v1/live/disputes/dsp_1",
            200,
            json!({ "dispute": { "id": "dsp_1", "status": "open", "amount": "1.00", "currency": "USD", "reason": "fraud", "messages": [{ "id": "m1", "authorType": "customer", "body": "not me", "createdAt": "2025-01-01T00:00:00.000Z" }] } }),
        ),
        (
            "GET /admin/v1/requests/req_9",
            200,
            json!({ "request": { "id": "req_9", "method": "GET", "path": "/v1/balances", "status": 200, "durationMs": 0.8, "apiKeyId": null, "requestBody": null, "responseBody": { "data": [] }, "createdAt": "2025-01-01T00:00:00.000Z" }, "stack": "sandbox", "organizationId": "org_1" }),
        ),
    ]);
    let client = client(&admin);
    assert!(client.disputes(StackName::Live).unwrap().is_empty());
    assert_eq!(client.dispute(StackName::Live, "dsp_1").unwrap().messages[0].body.as_str(), "not me");
    let lookup = client.request("req_9").unwrap();
    assert_eq!((lookup.stack.as_str(), lookup.request.status), ("sandbox", 200));
    assert_eq!(client.request("req_missing").unwrap_err().to_string(), "404 not_found: no such route");
}
