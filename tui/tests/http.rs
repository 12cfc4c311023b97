//! `HttpClient` against a small HTTP server that answers like the admin API:
//! the paths and queries it calls, the bearer token it sends, and how it
//! reads answers and errors. The server answers with sika-api's types
//! serialized, as the real admin API does, and each test checks that the
//! console reads back exactly what was sent.

mod common;

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use common::{account, attempt, delivery, endpoint, owned, payout, timeline, total};
use serde::Serialize;
use serde_json::json;
use sika_api::admin::{
    LedgerFigures, NodeStatusEnvelope, OwnedCollectionEnvelope, OwnedDisputeEnvelope, OwnedRefundEnvelope,
    RequestLookup, StackAccounts, StackRatesEnvelope, VerifyEnvelope,
};
use sika_api::payouts::{PayoutEnvelope, PayoutStatus};
use sika_api::refunds::{RefundEnvelope, RefundStatus};
use sika_api::requests::LoggedRequest;
use sika_api::webhooks::{
    WebhookDeliveryEnvelope, WebhookDeliveryStatus, WebhookDisabledReason, WebhookEndpoint,
    WebhookEndpointEnvelope, WebhookEndpointStatus,
};
use sika_api::{ErrorBody, ErrorCode, ListPage};
use sika_tui::{
    Client, ClientError, EndpointHealth, HttpClient, Movement, MovementKind, MovementQuery, Settled,
    Settlement, SettlementRecord, StackName, StackRates,
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

/// An answer of the fake server: "METHOD /path?query", the status and the
/// body, serialized as the admin API does.
fn route(target: &str, status: u16, body: impl Serialize) -> (String, u16, String) {
    (target.to_string(), status, serde_json::to_string(&body).unwrap())
}

/// The error object the admin API answers with.
fn error(code: ErrorCode, message: &str, request_id: &str) -> ErrorBody {
    ErrorBody { error: code, message: message.into(), details: None, request_id: request_id.into() }
}

/// A list of one page, as the admin API's lists are.
fn page<T>(data: Vec<T>) -> ListPage<T> {
    ListPage { data, has_more: false, next_cursor: None }
}

/// Serves `routes` until the test process ends; anything else is a 404
/// error object. A wrong token is a 401 like the real admin API's.
fn serve(routes: Vec<(String, u16, String)>) -> FakeAdmin {
    let answers = routes.into_iter().map(|(route, status, body)| (route, (status, body))).collect();
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
        let (_, status, body) =
            route("", 401, error(ErrorCode::Unauthorized, "invalid operator token", "req_1"));
        (status, body)
    } else {
        routes.answers.get(&format!("{method} {target}")).cloned().unwrap_or_else(|| {
            let (_, status, body) = route("", 404, error(ErrorCode::NotFound, "no such route", "req_2"));
            (status, body)
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

#[test]
fn status_sends_the_bearer_token_and_reads_both_stacks() {
    let status = common::node_status(9, 7);
    let admin =
        serve(vec![route("GET /admin/v1/status", 200, NodeStatusEnvelope { status: status.clone() })]);
    assert_eq!(client(&admin).status().unwrap(), status);
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
    let admin = serve(vec![route("GET /admin/v1/status", 200, json!({ "status": "fine" }))]);
    assert!(matches!(client(&admin).status(), Err(ClientError::Decode(_))));
}

#[test]
fn a_field_the_node_leaves_out_is_a_decode_error_not_a_blank() {
    let mut body = serde_json::to_value(NodeStatusEnvelope { status: common::node_status(1, 2) }).unwrap();
    body["status"]["live"].as_object_mut().unwrap().remove("transfers");
    let admin = serve(vec![route("GET /admin/v1/status", 200, body)]);
    match client(&admin).status() {
        Err(ClientError::Decode(cause)) => assert!(cause.contains("transfers"), "{cause}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

/// A one-currency payout of 10.00 NGN to account `01` via `bank`.
fn payout_of(id: &str, status: PayoutStatus) -> sika_api::payouts::Payout {
    sika_api::payouts::Payout {
        external_reference: "inv-1".into(),
        created_at: "2025-01-01T00:00:00.000Z".into(),
        timeline: timeline(&[("2025-01-01T00:00:00.000Z", "state", "Payout created", "")]),
        ..payout(id, status, "NGN1", ["10.00", "0.10"], ["bank", "01"])
    }
}

#[test]
fn movements_pass_the_search_and_status_as_query_parameters() {
    let row = owned("org_1", payout_of("pay_1", PayoutStatus::Pending));
    let admin = serve(vec![route(
        "GET /admin/v1/live/payouts?limit=50&q=inv-1&status=pending",
        200,
        page(vec![row.clone()]),
    )]);
    let query = MovementQuery {
        kind: MovementKind::Payout,
        q: Some("inv-1".into()),
        status: Some("pending".into()),
        limit: 50,
    };
    let rows = client(&admin).movements(StackName::Live, &query).unwrap();
    assert_eq!(rows, vec![Movement::Payout(row)]);
    assert_eq!((rows[0].organization_id(), rows[0].status()), ("org_1", "pending".to_string()));
}

#[test]
fn a_reversed_payout_reads_reversed_and_awaits_no_settlement() {
    let row = owned("org_1", payout_of("pay_1", PayoutStatus::Reversed));
    let admin = serve(vec![route("GET /admin/v1/live/payouts?limit=50", 200, page(vec![row.clone()]))]);
    let query = MovementQuery { kind: MovementKind::Payout, q: None, status: None, limit: 50 };
    let rows = client(&admin).movements(StackName::Live, &query).unwrap();
    assert_eq!(rows, vec![Movement::Payout(row)]);
    assert_eq!(rows[0].status(), "reversed");
    assert!(!rows[0].awaits_settlement(), "the operator has nothing to settle on a reversed payout");
}

#[test]
fn collections_and_orders_decode_from_their_own_paths() {
    let collection = common::live_collections().remove(0);
    let order = common::live_orders().remove(0);
    let admin = serve(vec![
        route(
            &format!("GET /admin/v1/sandbox/collections/{}", collection.item.id),
            200,
            OwnedCollectionEnvelope { collection: collection.clone() },
        ),
        route("GET /admin/v1/sandbox/orders?limit=50", 200, page(vec![order.clone()])),
    ]);
    let client = client(&admin);
    let found = client.movement(StackName::Sandbox, MovementKind::Collection, &collection.item.id).unwrap();
    assert_eq!(found, Movement::Collection(collection));
    assert!(found.awaits_settlement());
    let query = MovementQuery { kind: MovementKind::Order, q: None, status: None, limit: 50 };
    let orders = client.movements(StackName::Sandbox, &query).unwrap();
    assert_eq!(orders, vec![Movement::Order(order)]);
    assert_eq!(orders[0].amount(), ("100.00", "USDT"));
}

#[test]
fn settle_posts_the_action_and_maps_409() {
    let completed = payout_of("pay_1", PayoutStatus::Completed);
    let admin = serve(vec![
        route(
            "POST /admin/v1/live/payouts/pay_1/complete",
            200,
            PayoutEnvelope { payout: completed.clone() },
        ),
        route(
            "POST /admin/v1/live/payouts/pay_2/fail",
            409,
            error(ErrorCode::InvalidState, "the payout is already completed", "req_3"),
        ),
    ]);
    let client = client(&admin);
    let record = SettlementRecord {
        provider_reference: Some("MP-99812".into()),
        note: Some("paid at the branch".into()),
    };
    let done =
        client.settle(StackName::Live, MovementKind::Payout, "pay_1", Settlement::Complete, &record).unwrap();
    assert_eq!(done, Settled::Payout(completed));
    assert_eq!(done.status(), "completed");
    let seen = last(&admin);
    assert_eq!(seen.method, "POST");
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(body["providerReference"], "MP-99812", "{body}");
    assert_eq!(body["note"], "paid at the branch", "{body}");
    let nothing = SettlementRecord::default();
    let refused = client.settle(StackName::Live, MovementKind::Payout, "pay_2", Settlement::Fail, &nothing);
    assert_eq!(
        refused.unwrap_err(),
        ClientError::Api {
            status: 409,
            code: "invalid_state".into(),
            message: "the payout is already completed".into()
        }
    );
    let seen = admin.seen.lock().unwrap().len();
    let order = client.settle(StackName::Live, MovementKind::Order, "ord_1", Settlement::Complete, &nothing);
    assert!(matches!(order, Err(ClientError::Api { status: 404, .. })), "{order:?}");
    assert_eq!(admin.seen.lock().unwrap().len(), seen, "orders have no settle operation to call");
}

/// Refunds list, read and settle at the admin API's refund paths, and a
/// settled refund answers with the public view.
#[test]
fn refunds_are_listed_read_and_settled_at_their_own_paths() {
    let refund = common::live_refunds().remove(0);
    let id = refund.item.id.clone();
    let mut failed = refund.item.clone();
    failed.status = RefundStatus::Failed;
    let admin = serve(vec![
        route("GET /admin/v1/live/refunds?limit=50&status=pending", 200, page(vec![refund.clone()])),
        route(
            &format!("GET /admin/v1/live/refunds/{id}"),
            200,
            OwnedRefundEnvelope { refund: refund.clone() },
        ),
        route(
            &format!("POST /admin/v1/live/refunds/{id}/fail"),
            200,
            RefundEnvelope { refund: failed.clone() },
        ),
    ]);
    let client = client(&admin);
    let query =
        MovementQuery { kind: MovementKind::Refund, q: None, status: Some("pending".into()), limit: 50 };
    let rows = client.movements(StackName::Live, &query).unwrap();
    assert_eq!(rows, vec![Movement::Refund(refund.clone())]);
    assert_eq!(rows[0].amount(), ("5000.00", "NGN"));
    let found = client.movement(StackName::Live, MovementKind::Refund, &id).unwrap();
    assert!(found.awaits_settlement(), "a pending refund awaits the operator");
    let record = SettlementRecord { provider_reference: Some("MTN-REV-7".into()), note: None };
    let done = client.settle(StackName::Live, MovementKind::Refund, &id, Settlement::Fail, &record).unwrap();
    assert_eq!(done, Settled::Refund(failed));
    assert_eq!(done.status(), "failed");
    let body: serde_json::Value = serde_json::from_str(&last(&admin).body).unwrap();
    assert_eq!(body["providerReference"], "MTN-REV-7", "{body}");
}

#[test]
fn ids_typed_by_the_operator_are_escaped_in_paths() {
    let admin = serve(vec![]);
    let _ = client(&admin).request("req_1/../../status?x");
    assert_eq!(last(&admin).target, "/admin/v1/requests/req_1%2F..%2F..%2Fstatus%3Fx");
}

#[test]
fn accounts_verify_and_the_ledger_figures() {
    let accounts = StackAccounts {
        data: vec![account("org_1", "NGN1", ["1.00", "0.00", "1.00", "0.00"])],
        has_more: false,
        next_cursor: None,
        totals: vec![total("NGN", ["1.00", "0.00", "1.00"], 1)],
        ledger: LedgerFigures { journal_length: 7, last_verify: None },
    };
    let verify = common::verify_result(false, "1 problem", &["balance of NGN1 differs"]);
    let admin = serve(vec![
        route("GET /admin/v1/live/accounts", 200, &accounts),
        route("POST /admin/v1/live/verify", 200, VerifyEnvelope { verify: verify.clone() }),
    ]);
    let client = client(&admin);
    assert_eq!(client.accounts(StackName::Live).unwrap(), accounts);
    assert_eq!(client.verify(StackName::Live).unwrap(), verify);
}

#[test]
fn rates_read_the_stack_path_and_keep_a_null_rate() {
    let rates = StackRates { stack: StackName::Sandbox, ..common::live_rates() };
    let admin =
        serve(vec![route("GET /admin/v1/sandbox/rates", 200, StackRatesEnvelope { rates: rates.clone() })]);
    let read = client(&admin).rates(StackName::Sandbox).unwrap();
    assert_eq!(read, rates);
    assert_eq!(last(&admin).target, "/admin/v1/sandbox/rates");
    assert_eq!(read.rates["XOF"].rate, None, "a stale currency stays null, not zero");
}

#[test]
fn webhook_health_attempts_and_actions() {
    let disabled = WebhookEndpoint {
        disabled_reason: Some(WebhookDisabledReason::ConsecutiveFailures),
        ..endpoint("we_1", "https://x.test/h", WebhookEndpointStatus::Disabled, 9)
    };
    let health = EndpointHealth {
        organization_id: "org_1".into(),
        endpoint: disabled,
        success_rate: None,
        average_latency_ms: Some(12.5),
        pending_deliveries: 0,
        failed_deliveries: 3,
        last_attempt_at: None,
        last_error: Some("timed out".into()),
        last_error_at: Some("2025-01-01T00:00:00.000Z".into()),
    };
    let timed_out =
        attempt(("whd_1", "payout.completed", "2025-01-01T00:00:00.000Z", None, 15000, Some("timed out")));
    let failed = delivery(
        "whd_1",
        "we_1",
        "payout.completed",
        (WebhookDeliveryStatus::Failed, 8),
        [None, Some("2025-01-01T00:00:00.000Z")],
    );
    let retried = sika_api::webhooks::WebhookDelivery {
        status: WebhookDeliveryStatus::Pending,
        attempt_count: 9,
        ..failed.clone()
    };
    let enabled = endpoint("we_1", "https://x.test/h", WebhookEndpointStatus::Active, 0);
    let admin = serve(vec![
        route("GET /admin/v1/live/webhooks/endpoints", 200, page(vec![health.clone()])),
        route("GET /admin/v1/live/webhooks/endpoints/we_1/attempts", 200, page(vec![timed_out.clone()])),
        route(
            "GET /admin/v1/live/webhooks/deliveries?status=failed",
            200,
            page(vec![owned("org_1", failed.clone())]),
        ),
        route(
            "POST /admin/v1/live/webhooks/deliveries/whd_1/retry",
            200,
            WebhookDeliveryEnvelope { delivery: retried.clone() },
        ),
        route(
            "POST /admin/v1/live/webhooks/endpoints/we_1/enable",
            200,
            WebhookEndpointEnvelope { webhook_endpoint: enabled.clone() },
        ),
    ]);
    let client = client(&admin);
    assert_eq!(client.webhook_endpoints(StackName::Live).unwrap(), vec![health]);
    assert_eq!(client.endpoint_attempts(StackName::Live, "we_1").unwrap(), vec![timed_out]);
    assert_eq!(client.deliveries(StackName::Live, "failed").unwrap(), vec![owned("org_1", failed)]);
    assert_eq!(client.retry_delivery(StackName::Live, "whd_1").unwrap(), retried);
    assert_eq!(last(&admin).body, "", "actions send no body");
    assert_eq!(client.enable_endpoint(StackName::Live, "we_1").unwrap(), enabled);
}

#[test]
fn disputes_and_request_lookup() {
    let lookup = RequestLookup {
        request: LoggedRequest {
            id: "req_9".into(),
            method: "GET".into(),
            path: "/v1/balances".into(),
            status: 200,
            duration_ms: 0.8,
            api_key_id: None,
            request_body: None,
            response_body: Some(json!({ "data": [] })),
            created_at: "2025-01-01T00:00:00.000Z".into(),
        },
        stack: StackName::Sandbox,
        organization_id: "org_1".into(),
    };
    let listed = common::dispute(false);
    let dispute = common::dispute(true);
    let admin = serve(vec![
        route("GET /admin/v1/live/disputes", 200, page(vec![listed.clone()])),
        route(
            &format!("GET /admin/v1/live/disputes/{}", dispute.item.id),
            200,
            OwnedDisputeEnvelope { dispute: dispute.clone() },
        ),
        route("GET /admin/v1/requests/req_9", 200, &lookup),
    ]);
    let client = client(&admin);
    assert_eq!(client.disputes(StackName::Live).unwrap(), vec![listed]);
    assert_eq!(client.dispute(StackName::Live, &dispute.item.id).unwrap(), dispute);
    assert_eq!(client.request("req_9").unwrap(), lookup);
    assert_eq!(client.request("req_missing").unwrap_err().to_string(), "404 not_found: no such route");
}

#[test]
fn keys_revocation_and_failed_requests_use_their_admin_paths() {
    let key = sika_api::keys::ApiKey {
        id: "key_1".into(),
        name: "ci".into(),
        hint: "sk_live_Ab".into(),
        scopes: vec!["*".into()],
        allowed_ips: Vec::new(),
        caps: Default::default(),
        expires_at: None,
        revoked_at: Some("2025-01-01T00:00:00.000Z".into()),
        created_at: "2024-12-01T00:00:00.000Z".into(),
    };
    let failed = sika_api::admin::FailedRequest {
        id: "req_1".into(),
        method: "GET".into(),
        route: "/v1/accounts".into(),
        status: 401,
        error: Some("unauthorized".into()),
        organization_id: None,
        client_address: Some("192.0.2.1".into()),
        created_at: "2025-01-01T00:00:00.000Z".into(),
    };
    let admin = serve(vec![
        route("GET /admin/v1/live/organizations/org_1/keys", 200, page(vec![key.clone()])),
        route(
            "DELETE /admin/v1/live/organizations/org_1/keys/key_1",
            200,
            sika_api::keys::ApiKeyEnvelope { api_key: key.clone() },
        ),
        route("GET /admin/v1/sandbox/failed-requests", 200, page(vec![failed.clone()])),
    ]);
    let client = client(&admin);
    assert_eq!(client.keys(StackName::Live, "org_1").unwrap(), vec![key.clone()]);
    assert_eq!(client.revoke_key(StackName::Live, "org_1", "key_1").unwrap(), key);
    assert_eq!(last(&admin).method, "DELETE");
    assert_eq!(client.failed_requests(StackName::Sandbox).unwrap(), vec![failed]);
}
