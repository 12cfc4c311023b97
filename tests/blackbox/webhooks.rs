//! Webhooks end to end: a real receiver on loopback (an axum server in the
//! test process) records every request's headers and raw body and answers
//! with a status the test controls. Signatures are checked with the
//! `standardwebhooks` crate, the reference implementation's Rust library.
//!
//! Most tests share one node; each keeps to its own endpoints and, where
//! other tests' events could interfere, to `webhook.test` events, which go
//! only to the endpoint they were sent for.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::*;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use base64_check::decoded_len;
use serde_json::{Value, json};
use standardwebhooks::Webhook;

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

// ---------------------------------------------------------------------------
// The receiver.

#[derive(Clone, Copy, Debug)]
enum Policy {
    /// 500 to the first `n` attempts of each delivery (by `webhook-id`), then 200.
    FailFirst(usize),
    /// This status to every request.
    Always(u16),
}

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Hit {
    at: Instant,
    path: String,
    headers: HeaderMap,
    body: Bytes,
    /// The status the receiver answered (or will answer, for a slow one).
    status: u16,
}

impl Hit {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    fn webhook_id(&self) -> &str {
        self.header("webhook-id")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("webhook body is not JSON ({e}): {:?}", self.body))
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("webhook body is UTF-8")
    }

    fn event(&self) -> String {
        self.json()["event"].as_str().unwrap_or_default().to_string()
    }

    /// Verifies the signature with the `standardwebhooks` crate.
    #[track_caller]
    fn verify(&self, secret: &str) {
        Webhook::new(secret).expect("the secret decodes").verify(&self.body, &self.headers).unwrap_or_else(
            |e| panic!("signature does not verify ({e:?}): {:?} {}", self.headers, self.text()),
        );
    }

    fn verifies_with(&self, secret: &str) -> bool {
        Webhook::new(secret).unwrap().verify(&self.body, &self.headers).is_ok()
    }
}

struct Inner {
    hits: Vec<Hit>,
    policy: Policy,
    attempts_by_id: HashMap<String, usize>,
    /// Answer the n-th attempt (0-based, per delivery) after a delay, once.
    slow_once: Option<(usize, Duration)>,
}

#[derive(Clone)]
struct Receiver {
    base: String,
    inner: Arc<Mutex<Inner>>,
}

async fn receive(
    State(inner): State<Arc<Mutex<Inner>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let (status, delay) = {
        let mut inner = inner.lock().unwrap();
        let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let seen = inner.attempts_by_id.entry(id).or_default();
        let attempt = *seen;
        *seen += 1;
        let status = match inner.policy {
            Policy::FailFirst(n) if attempt < n => 500,
            Policy::FailFirst(_) => 200,
            Policy::Always(status) => status,
        };
        let delay = match inner.slow_once {
            Some((n, delay)) if n == attempt => {
                inner.slow_once = None;
                Some(delay)
            }
            _ => None,
        };
        inner.hits.push(Hit { at: Instant::now(), path: uri.path().to_string(), headers, body, status });
        (status, delay)
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    StatusCode::from_u16(status).unwrap()
}

impl Receiver {
    async fn start(policy: Policy) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Mutex::new(Inner {
            hits: Vec::new(),
            policy,
            attempts_by_id: HashMap::new(),
            slow_once: None,
        }));
        let app = axum::Router::new().fallback(receive).with_state(inner.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { base, inner }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn set_policy(&self, policy: Policy) {
        self.inner.lock().unwrap().policy = policy;
    }

    fn answer_slowly_once(&self, attempt: usize, delay: Duration) {
        self.inner.lock().unwrap().slow_once = Some((attempt, delay));
    }

    fn hits(&self) -> Vec<Hit> {
        self.inner.lock().unwrap().hits.clone()
    }

    fn hits_at(&self, path: &str) -> Vec<Hit> {
        self.hits().into_iter().filter(|h| h.path == path).collect()
    }

    fn hits_with_id(&self, webhook_id: &str) -> Vec<Hit> {
        self.hits().into_iter().filter(|h| h.webhook_id() == webhook_id).collect()
    }

    /// Waits (10 s at most) for a hit at `path` matching `matches`.
    async fn wait_for(&self, what: &str, path: &str, matches: impl Fn(&Value) -> bool) -> Hit {
        eventually(what, Duration::from_secs(10), || async {
            self.hits_at(path).into_iter().find(|h| matches(&h.json()))
        })
        .await
    }
}

// ---------------------------------------------------------------------------
// API helpers.

const TIMEOUT: Duration = Duration::from_secs(10);

async fn create_endpoint(api: &Api, base: &str, key: &str, url: &str, events: Value) -> Value {
    let r = api
        .post(&format!("{base}/v1/webhooks/endpoints"), key, json!({ "url": url, "events": events }))
        .await;
    r.expect(201);
    r.body["webhookEndpoint"].clone()
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

async fn delete_endpoint(api: &Api, base: &str, key: &str, id: &str) {
    api.call("DELETE", &format!("{base}/v1/webhooks/endpoints/{id}"), Some(key), None).await.expect(200);
}

async fn get_endpoint(api: &Api, base: &str, key: &str, id: &str) -> Value {
    let r = api.get(&format!("{base}/v1/webhooks/endpoints/{id}"), key).await;
    r.expect(200);
    r.body["webhookEndpoint"].clone()
}

/// The shared node, for the tests here that start from it with a client
/// and the sandbox's key and base URL.
struct OnSandbox {
    node: Arc<Node>,
}

impl OnSandbox {
    fn new() -> OnSandbox {
        OnSandbox { node: SHARED.get() }
    }

    /// The node, a new client, the sandbox key and the sandbox's base URL.
    fn parts(&self) -> (&Arc<Node>, Api, &str, &str) {
        (&self.node, Api::new(), &self.node.creds.sandbox_key, &self.node.sandbox)
    }
}

/// Every delivery matching the query (`endpointId=…&status=…`), newest first.
async fn deliveries(api: &Api, base: &str, key: &str, query: &str) -> Vec<Value> {
    every_item(api, &format!("{base}/v1/webhooks/deliveries?{query}"), key).await
}

async fn delivery(api: &Api, base: &str, key: &str, id: &str) -> Value {
    let r = api.get(&format!("{base}/v1/webhooks/deliveries/{id}"), key).await;
    r.expect(200);
    r.body["delivery"].clone()
}

async fn send_test(api: &Api, base: &str, key: &str, endpoint: &str) {
    let r = api.post(&format!("{base}/v1/webhooks/endpoints/{endpoint}/test"), key, json!({})).await;
    r.expect(202);
    assert_eq!(r.body["event"], "webhook.test", "{}", r.text);
}

/// Executes a fresh quote `from` → `to`; returns the conversion.
async fn convert(api: &Api, node: &Node, key: &str, from: &str, amount: &str, to: &str) -> Value {
    let q = quote(api, &node.sandbox, key, from, amount, to).await;
    let r = api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await;
    r.expect(201);
    r.body["conversion"].clone()
}

mod base64_check {
    /// The length of standard base64 `text` once decoded, if it is base64.
    pub fn decoded_len(text: &str) -> Option<usize> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let body = text.trim_end_matches('=');
        let padding = text.len() - body.len();
        if !text.len().is_multiple_of(4) || padding > 2 || !body.bytes().all(|b| ALPHABET.contains(&b)) {
            return None;
        }
        Some(text.len() / 4 * 3 - padding)
    }
}

/// A `webhook-timestamp` header is Unix seconds close to now.
#[track_caller]
fn assert_recent_timestamp(hit: &Hit) {
    let ts: i64 = hit.header("webhook-timestamp").parse().expect("webhook-timestamp is an integer");
    let now = chrono::Utc::now().timestamp();
    assert!((now - ts).abs() <= 30, "webhook-timestamp {ts} is not close to now ({now})");
}

// ---------------------------------------------------------------------------
// 1. Endpoint management.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn endpoints_are_created_read_updated_and_deleted() {
    let sandbox = OnSandbox::new();
    let (node, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(200)).await;
    let list_url = format!("{base}/v1/webhooks/endpoints");

    let r = api
        .post(&list_url, key, json!({ "url": receiver.url("/one"), "events": ["conversion.completed"] }))
        .await;
    r.expect(201);
    let created = r.body["webhookEndpoint"].clone();
    let id = id_of(&created);
    assert!(id.starts_with("we_"), "{id}");
    assert_eq!(created["url"], receiver.url("/one"));
    assert_eq!(created["events"], json!(["conversion.completed"]));
    assert_eq!(created["status"], "active");
    assert!(created["disabledReason"].is_null(), "{created}");
    let secret = created["secret"].as_str().expect("the creation answer carries the secret").to_string();
    let encoded = secret.strip_prefix("whsec_").unwrap_or_else(|| panic!("secret prefix: {secret}"));
    let bytes = decoded_len(encoded).unwrap_or_else(|| panic!("the secret is not base64: {secret}"));
    assert!((24..=64).contains(&bytes), "{bytes} random bytes in {secret}");
    assert!(Webhook::new(&secret).is_ok());

    // Validation names the field.
    for (body, field) in [
        (json!({ "url": receiver.url("/x"), "events": ["conversion.finished"] }), "events[0]"),
        (json!({ "url": receiver.url("/x"), "events": ["*", "nope"] }), "events[1]"),
        (json!({ "url": receiver.url("/x"), "events": [] }), "events"),
        (json!({ "url": receiver.url("/x") }), "events"),
        (json!({ "url": "ftp://example.com/hooks", "events": ["*"] }), "url"),
        (json!({ "url": "mailto:ops@example.com", "events": ["*"] }), "url"),
        (json!({ "url": "not a url", "events": ["*"] }), "url"),
        (json!({ "events": ["*"] }), "url"),
    ] {
        api.post(&list_url, key, body).await.expect_invalid(field);
    }

    // Read: one, the list, the secret.
    let got = get_endpoint(&api, base, key, &id).await;
    assert!(got.get("secret").is_none(), "GET shows no secret: {got}");
    assert_eq!(got["url"], created["url"]);
    assert_eq!(got["status"], "active");
    let r = api.get(&list_url, key).await;
    r.expect(200);
    let listed = r.body["data"].as_array().unwrap().iter().find(|e| e["id"] == id.as_str()).cloned();
    let listed = listed.unwrap_or_else(|| panic!("{id} is not listed: {}", r.text));
    assert!(listed.get("secret").is_none(), "the list shows no secret: {listed}");
    let r = api.get(&format!("{base}/v1/webhooks/signing-secret/{id}"), key).await;
    r.expect(200);
    assert_eq!(r.body["secret"], secret.as_str());

    // Update url and events; bad values are refused and change nothing.
    let url = format!("{base}/v1/webhooks/endpoints/{id}");
    let r = api
        .patch(
            &url,
            key,
            json!({ "url": receiver.url("/two"), "events": ["account.credited", "payout.failed"] }),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["webhookEndpoint"]["url"], receiver.url("/two"));
    assert_eq!(r.body["webhookEndpoint"]["events"], json!(["account.credited", "payout.failed"]));
    assert!(r.body["webhookEndpoint"].get("secret").is_none());
    for (body, field) in [
        (json!({ "events": ["payout.done"] }), "events[0]"),
        (json!({ "url": "gopher://example.com" }), "url"),
        (json!({ "status": "paused" }), "status"),
    ] {
        api.patch(&url, key, body).await.expect_invalid(field);
    }
    let got = get_endpoint(&api, base, key, &id).await;
    assert_eq!(got["url"], receiver.url("/two"));
    assert_eq!(got["events"], json!(["account.credited", "payout.failed"]));
    // The secret did not change.
    let r = api.get(&format!("{base}/v1/webhooks/signing-secret/{id}"), key).await;
    assert_eq!(r.body["secret"], secret.as_str());

    // Delete.
    let r = api.call("DELETE", &url, Some(key), None).await;
    r.expect(200);
    assert_eq!(r.body["webhookEndpoint"]["id"], id.as_str());
    assert_eq!(r.body["webhookEndpoint"]["deleted"], true);
    api.get(&url, key).await.expect_error(404, "not_found");
    api.get(&format!("{base}/v1/webhooks/signing-secret/{id}"), key).await.expect_error(404, "not_found");
    api.patch(&url, key, json!({ "status": "active" })).await.expect_error(404, "not_found");
    api.call("DELETE", &url, Some(key), None).await.expect_error(404, "not_found");
    let r = api.get(&list_url, key).await;
    assert!(!r.body["data"].as_array().unwrap().iter().any(|e| e["id"] == id.as_str()), "{}", r.text);

    // The list pages like every list: newest first, `limit`, opaque cursors,
    // deleted endpoints left out.
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(id_of(
            &create_endpoint(&api, base, key, &receiver.url(&format!("/p{i}")), json!(["*"])).await,
        ));
    }
    delete_endpoint(&api, base, key, &made[2]).await;
    let mut walked = Vec::new();
    walk_pages(&api, &list_url, key, 2, |r| {
        let page = r.body["data"].as_array().unwrap();
        assert!(page.len() <= 2, "limit=2: {}", r.text);
        assert_eq!(r.body["hasMore"].as_bool(), Some(r.body["nextCursor"].is_string()), "{}", r.text);
        walked.extend(page.iter().map(id_of));
    })
    .await;
    let ours: Vec<&String> = walked.iter().filter(|id| made.contains(id)).collect();
    let expected: Vec<&String> = made.iter().rev().filter(|id| **id != made[2]).collect();
    assert_eq!(ours, expected, "newest first, each once, the deleted one left out");
    let unique: HashSet<&String> = walked.iter().collect();
    assert_eq!(unique.len(), walked.len(), "no endpoint twice: {walked:?}");
    for bad in ["limit=0", "limit=101", "limit=x"] {
        api.get(&format!("{list_url}?{bad}"), key).await.expect_invalid("limit");
    }
    api.get(&format!("{list_url}?cursor=forged"), key).await.expect_invalid("cursor");
    for id in made.iter().filter(|id| **id != made[2]) {
        delete_endpoint(&api, base, key, id).await;
    }

    // Scopes: webhooks:read reads, webhooks:write writes, nothing else does either.
    let session = node.creds.owner_session.as_str();
    let (_, reader) =
        create_key(&api, base, session, json!({ "name": "hooks-reader", "scopes": ["webhooks:read"] })).await;
    let (_, other) =
        create_key(&api, base, session, json!({ "name": "accounts-only", "scopes": ["accounts:read"] }))
            .await;
    let body = json!({ "url": receiver.url("/scoped"), "events": ["*"] });
    api.post(&list_url, &reader, body.clone()).await.expect_error(403, "forbidden");
    api.get(&list_url, &reader).await.expect(200);
    api.get(&list_url, &other).await.expect_error(403, "forbidden");
    api.get(&format!("{base}/v1/webhooks/deliveries"), &other).await.expect_error(403, "forbidden");
    api.post(&list_url, &other, body).await.expect_error(403, "forbidden");

    // Endpoints are per stack: the live stack does not know a sandbox one.
    let other = create_endpoint(&api, base, key, &receiver.url("/three"), json!(["webhook.test"])).await;
    let other_id = id_of(&other);
    api.get(&node.live_url(&format!("/v1/webhooks/endpoints/{other_id}")), &node.creds.live_key)
        .await
        .expect_error(404, "not_found");
    delete_endpoint(&api, base, key, &other_id).await;
}

// ---------------------------------------------------------------------------
// 2. Delivery: body, data, headers, signatures, once per subscription.

/// The raw JSON text of the object in `text` that carries `"id":"<id>"`
/// (flat objects only, such as a balance account).
fn raw_flat_object<'a>(text: &'a str, id: &str) -> &'a str {
    let at = text.find(&format!("\"id\":\"{id}\"")).unwrap_or_else(|| panic!("{id} not in {text}"));
    let start = text[..at].rfind('{').unwrap();
    let end = at + text[at..].find('}').unwrap() + 1;
    &text[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn events_are_delivered_signed_once_per_subscription() {
    let sandbox = OnSandbox::new();
    let (node, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(200)).await;
    let a = create_endpoint(&api, base, key, &receiver.url("/a"), json!(["*"])).await;
    let b = create_endpoint(&api, base, key, &receiver.url("/b"), json!(["*"])).await;
    let (a_id, b_id) = (id_of(&a), id_of(&b));
    let (a_secret, b_secret) =
        (a["secret"].as_str().unwrap().to_string(), b["secret"].as_str().unwrap().to_string());

    // account.credited: KES is this test's own currency on the shared node.
    deposit(&api, node, key, "KES", "12.34").await;
    let r = api.get(&node.sandbox_url("/v1/accounts"), key).await;
    r.expect(200);
    let account = r.body["data"].as_array().unwrap().iter().find(|x| x["currency"] == "KES").unwrap().clone();
    let account_raw = raw_flat_object(&r.text, account["id"].as_str().unwrap()).to_string();
    let is_ours = |v: &Value| v["event"] == "account.credited" && v["data"]["currency"] == "KES";
    let hit = receiver.wait_for("account.credited for KES at /a", "/a", is_ours).await;
    let body = hit.json();
    let keys: HashSet<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, HashSet::from(["id", "event", "data", "createdAt"]), "{body}");
    assert_eq!(body["data"], account, "data is the account as GET /v1/accounts shows it");
    assert!(
        hit.text().contains(&format!("\"data\":{account_raw}")),
        "data is byte for byte what GET /v1/accounts wrote:\n{}\n{account_raw}",
        hit.text()
    );
    let event_id = body["id"].as_str().unwrap().to_string();
    assert!(event_id.starts_with("evt_"), "{event_id}");
    assert!(chrono::DateTime::parse_from_rfc3339(body["createdAt"].as_str().unwrap()).is_ok(), "{body}");
    assert!(hit.webhook_id().starts_with("whd_"), "{:?}", hit.headers);
    assert_eq!(hit.header("content-type"), "application/json");
    assert!(hit.header("webhook-signature").starts_with("v1,"), "{:?}", hit.headers);
    assert_recent_timestamp(&hit);
    hit.verify(&a_secret);
    assert!(!hit.verifies_with(&b_secret), "a delivery to /a must not verify with /b's secret");

    // The event as the events API shows it is the same body.
    let r = api.get(&format!("{base}/v1/webhooks/events/{event_id}"), key).await;
    r.expect(200);
    assert_eq!(r.body["event"], body);

    // Exactly one delivery per subscribed endpoint, each sent once.
    for (endpoint, path, secret) in [(&a_id, "/a", &a_secret), (&b_id, "/b", &b_secret)] {
        let query = format!("eventId={event_id}&endpointId={endpoint}");
        let found = eventually("the delivery succeeded", TIMEOUT, || async {
            let found = deliveries(&api, base, key, &query).await;
            (found.len() == 1 && found[0]["status"] == "succeeded").then_some(found)
        })
        .await;
        let d = &found[0];
        assert_eq!(d["event"], "account.credited");
        assert_eq!(d["eventId"], event_id.as_str());
        assert_eq!(d["attemptCount"], 1, "{d}");
        let hits: Vec<Hit> =
            receiver.hits_at(path).into_iter().filter(|h| h.json()["id"] == event_id.as_str()).collect();
        assert_eq!(hits.len(), 1, "{path} got the event once");
        assert_eq!(hits[0].webhook_id(), d["id"].as_str().unwrap(), "webhook-id is the delivery id");
        hits[0].verify(secret);
    }
    let a_hit = receiver.hits_at("/a").into_iter().find(|h| h.json()["id"] == event_id.as_str()).unwrap();
    let b_hit = receiver.hits_at("/b").into_iter().find(|h| h.json()["id"] == event_id.as_str()).unwrap();
    assert_ne!(a_hit.webhook_id(), b_hit.webhook_id(), "one delivery per endpoint");
    assert_eq!(a_hit.body, b_hit.body, "both endpoints get the same body");

    // conversion.completed: data is GET /v1/conversions/{id}, byte for byte.
    deposit(&api, node, key, "USD", "30.00").await;
    let conversion = convert(&api, node, key, "USD", "10.00", "GHS").await;
    let conversion_id = id_of(&conversion);
    let r = api.get(&node.sandbox_url(&format!("/v1/conversions/{conversion_id}")), key).await;
    r.expect(200);
    let raw = r.text.strip_prefix("{\"conversion\":").and_then(|t| t.strip_suffix('}')).unwrap();
    let hit = receiver
        .wait_for("conversion.completed at /a", "/a", |v| {
            v["event"] == "conversion.completed" && v["data"]["id"] == conversion_id.as_str()
        })
        .await;
    assert_eq!(hit.json()["data"], r.body["conversion"]);
    assert!(hit.text().contains(&format!("\"data\":{raw}")), "{}\n{raw}", hit.text());
    hit.verify(&a_secret);
    assert_recent_timestamp(&hit);

    delete_endpoint(&api, base, key, &a_id).await;
    delete_endpoint(&api, base, key, &b_id).await;
}

// ---------------------------------------------------------------------------
// 3. Subscriptions filter.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_gets_only_the_events_it_subscribed_to() {
    let sandbox = OnSandbox::new();
    let (node, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(200)).await;
    let only =
        create_endpoint(&api, base, key, &receiver.url("/conv"), json!(["conversion.completed"])).await;
    let all = create_endpoint(&api, base, key, &receiver.url("/all"), json!(["*"])).await;
    let (only_id, all_id) = (id_of(&only), id_of(&all));

    deposit(&api, node, key, "USD", "20.00").await;
    let conversion = convert(&api, node, key, "USD", "5.00", "NGN").await;
    let conversion_id = id_of(&conversion);
    let is_conversion =
        |v: &Value| v["event"] == "conversion.completed" && v["data"]["id"] == conversion_id.as_str();

    // `*` gets both.
    receiver.wait_for("account.credited at /all", "/all", |v| v["event"] == "account.credited").await;
    receiver.wait_for("conversion.completed at /all", "/all", is_conversion).await;
    let hit = receiver.wait_for("conversion.completed at /conv", "/conv", is_conversion).await;
    hit.verify(only["secret"].as_str().unwrap());

    // The filtered endpoint: its conversion once, never an account.credited.
    let query = format!("endpointId={only_id}");
    let found = eventually("the /conv delivery succeeded", TIMEOUT, || async {
        let found = deliveries(&api, base, key, &query).await;
        found.iter().all(|d| d["status"] != "pending").then_some(found)
    })
    .await;
    assert!(found.iter().all(|d| d["event"] == "conversion.completed"), "{found:?}");
    let credited = deliveries(&api, base, key, &format!("endpointId={all_id}&event=account.credited")).await;
    assert!(!credited.is_empty());
    let only_events: HashSet<&str> = found.iter().map(|d| d["eventId"].as_str().unwrap()).collect();
    for d in &credited {
        assert!(!only_events.contains(d["eventId"].as_str().unwrap()), "{d} reached /conv");
    }
    let hits = receiver.hits_at("/conv");
    assert!(hits.iter().all(|h| h.event() == "conversion.completed"), "/conv got another event");
    assert_eq!(hits.iter().filter(|h| is_conversion(&h.json())).count(), 1, "once");

    delete_endpoint(&api, base, key, &only_id).await;
    delete_endpoint(&api, base, key, &all_id).await;
}

// ---------------------------------------------------------------------------
// 4. The retry ladder.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_are_retried_on_the_scaled_ladder() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::FailFirst(3)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/ladder"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);
    let secret = endpoint["secret"].as_str().unwrap();

    send_test(&api, base, key, &endpoint_id).await;
    let hits = eventually("4 attempts", TIMEOUT, || async {
        let hits = receiver.hits();
        (hits.len() >= 4).then_some(hits)
    })
    .await;
    let id = hits[0].webhook_id().to_string();
    assert!(id.starts_with("whd_"));
    for hit in &hits {
        assert_eq!(hit.webhook_id(), id, "every attempt carries the same webhook-id");
        assert_eq!(hit.body, hits[0].body, "every attempt sends the same body");
        hit.verify(secret);
    }
    assert_eq!(hits.iter().map(|h| h.status).collect::<Vec<_>>(), [500, 500, 500, 200]);
    // 30 s, 2 m, 8 m at time scale 0.001.
    for (i, rung) in [30u64, 120, 480].into_iter().enumerate() {
        let gap = hits[i + 1].at.duration_since(hits[i].at);
        let rung = Duration::from_millis(rung);
        assert!(gap >= rung.mul_f64(0.9), "attempt {} came {gap:?} after the previous, rung {rung:?}", i + 2);
        assert!(
            gap < rung + Duration::from_millis(400),
            "attempt {} came {gap:?} late, rung {rung:?}",
            i + 2
        );
    }

    let d = eventually("the delivery shows succeeded", TIMEOUT, || async {
        deliveries(&api, base, key, &format!("status=succeeded&endpointId={endpoint_id}"))
            .await
            .into_iter()
            .find(|d| d["id"] == id.as_str())
    })
    .await;
    assert_eq!(d["attemptCount"], 4, "{d}");
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 4);
    let codes: Vec<&Value> = attempts.iter().map(|a| &a["statusCode"]).collect();
    assert_eq!(codes, [&json!(500), &json!(500), &json!(500), &json!(200)], "{d}");
    assert_eq!(
        attempts.iter().map(|a| a["succeeded"] == true).collect::<Vec<_>>(),
        [false, false, false, true]
    );
    assert!(attempts.iter().all(|a| a["manual"] == false), "{d}");
    assert!(d["nextAttemptAt"].is_null(), "{d}");
    assert_eq!(d["event"], "webhook.test");
    assert_eq!(d["endpointId"], endpoint_id.as_str());
    // A success resets the failure count.
    assert_eq!(get_endpoint(&api, base, key, &endpoint_id).await["consecutiveFailures"], 0);
    assert_eq!(receiver.hits().len(), 4, "no attempt after the success");

    delete_endpoint(&api, base, key, &endpoint_id).await;
}

// ---------------------------------------------------------------------------
// 5. Auto-disable after 10 consecutive failures, and re-enabling.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn ten_consecutive_failures_disable_an_endpoint_until_it_is_reenabled() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(500)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/down"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);

    // Retries of the first events fail too (30 ms apart), so on a slow
    // machine the endpoint can be disabled before the tenth test: it then
    // refuses more, saying so (as checked below).
    for _ in 0..10 {
        let r = api.post(&format!("{base}/v1/webhooks/endpoints/{endpoint_id}/test"), key, json!({})).await;
        if r.status == 400 && r.body["details"]["status"] == "disabled" {
            break;
        }
        r.expect(202);
    }
    let disabled = eventually("the endpoint is disabled", TIMEOUT, || async {
        let e = get_endpoint(&api, base, key, &endpoint_id).await;
        (e["status"] == "disabled").then_some(e)
    })
    .await;
    assert_eq!(disabled["disabledReason"], "consecutive_failures", "{disabled}");
    assert!(disabled["consecutiveFailures"].as_u64().unwrap() >= 10, "{disabled}");
    assert!(
        millis(&disabled["updatedAt"]) > millis(&endpoint["updatedAt"]),
        "the status change moved updatedAt: {endpoint} then {disabled}"
    );
    // `lastAttemptFailed=true` lists what needs attention: every delivery
    // whose latest attempt failed, those still retrying (their own status
    // `pending`) included. The ten failures may include retries (30 ms
    // apart here) that came before the last events' first attempts; an
    // event never attempted is not listed.
    let query = format!("lastAttemptFailed=true&endpointId={endpoint_id}");
    let failing = deliveries(&api, base, key, &query).await;
    let all = deliveries(&api, base, key, &format!("endpointId={endpoint_id}")).await;
    let attempted: HashSet<String> =
        all.iter().filter(|d| !d["attempts"].as_array().unwrap().is_empty()).map(id_of).collect();
    assert_eq!(failing.iter().map(id_of).collect::<HashSet<_>>(), attempted, "{failing:?}");
    let attempts: usize = failing.iter().map(|d| d["attempts"].as_array().unwrap().len()).sum();
    assert!(attempts >= 10 && failing.len() <= 10, "10 failed attempts before disabling: {failing:?}");
    assert!(failing.iter().any(|d| d["status"] == "pending"), "retrying ones need attention: {failing:?}");
    assert!(failing.iter().all(|d| d["attempts"].as_array().unwrap().last().unwrap()["succeeded"] == false));
    // Issue 29.5: `status=failed` matches the delivery's own `status`, so
    // none of those still retrying is listed (CONTRACT.md, a filter
    // matches the field it names).
    let failed = deliveries(&api, base, key, &format!("status=failed&endpointId={endpoint_id}")).await;
    assert!(failed.iter().all(|d| d["status"] == "failed"), "?status=failed lists a pending one: {failed:?}");
    let pending = deliveries(&api, base, key, &format!("status=pending&endpointId={endpoint_id}")).await;
    let retrying: HashSet<String> = failing.iter().filter(|d| d["status"] == "pending").map(id_of).collect();
    assert!(
        retrying.iter().all(|id| pending.iter().any(|d| id_of(d) == *id)),
        "?status=pending lists those retrying: {pending:?}"
    );
    let hits_at_disable = receiver.hits().len();
    assert!(hits_at_disable >= 10, "10 failed attempts before disabling, saw {hits_at_disable}");
    assert!(receiver.hits().iter().all(|h| h.status == 500));
    let listed = api.get(&format!("{base}/v1/webhooks/endpoints"), key).await;
    let row =
        listed.body["data"].as_array().unwrap().iter().find(|e| e["id"] == endpoint_id.as_str()).cloned();
    assert_eq!(row.unwrap()["status"], "disabled");

    // While disabled nothing is sent, and testing it is refused, saying why.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let sent = receiver.hits().len();
    let before: HashSet<String> =
        deliveries(&api, base, key, &format!("endpointId={endpoint_id}")).await.iter().map(id_of).collect();
    let r = api.post(&format!("{base}/v1/webhooks/endpoints/{endpoint_id}/test"), key, json!({})).await;
    r.expect_refusal(400, "bad_request", "disabled");
    assert_eq!(r.body["details"]["status"], "disabled");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.hits().len(), sent, "a disabled endpoint gets nothing");
    let during: HashSet<String> =
        deliveries(&api, base, key, &format!("endpointId={endpoint_id}")).await.iter().map(id_of).collect();
    assert_eq!(during, before, "no delivery is made for a disabled endpoint");
    assert_eq!(get_endpoint(&api, base, key, &endpoint_id).await["status"], "disabled");

    // Re-enable: the count resets, parked deliveries resume, new events arrive.
    receiver.set_policy(Policy::Always(200));
    let r = api
        .patch(&format!("{base}/v1/webhooks/endpoints/{endpoint_id}"), key, json!({ "status": "active" }))
        .await;
    r.expect(200);
    let enabled = &r.body["webhookEndpoint"];
    assert_eq!(enabled["status"], "active", "{enabled}");
    assert!(enabled["disabledReason"].is_null(), "{enabled}");
    assert_eq!(enabled["consecutiveFailures"], 0, "{enabled}");
    assert!(millis(&enabled["updatedAt"]) > millis(&disabled["updatedAt"]), "{enabled}");
    send_test(&api, base, key, &endpoint_id).await;
    let all = eventually("every delivery succeeded", TIMEOUT, || async {
        let all = deliveries(&api, base, key, &format!("endpointId={endpoint_id}")).await;
        (all.len() == before.len() + 1 && all.iter().all(|d| d["status"] == "succeeded")).then_some(all)
    })
    .await;
    let new = all.iter().find(|d| !before.contains(&id_of(d))).unwrap();
    let hits = receiver.hits_with_id(new["id"].as_str().unwrap());
    assert_eq!(hits.len(), 1, "the new event arrived once");
    assert_eq!(hits[0].status, 200);
    hits[0].verify(endpoint["secret"].as_str().unwrap());
    assert_eq!(get_endpoint(&api, base, key, &endpoint_id).await["status"], "active");

    // Disabling by hand works too, and says so.
    let r = api
        .patch(&format!("{base}/v1/webhooks/endpoints/{endpoint_id}"), key, json!({ "status": "disabled" }))
        .await;
    r.expect(200);
    assert_eq!(r.body["webhookEndpoint"]["status"], "disabled");

    delete_endpoint(&api, base, key, &endpoint_id).await;
}

// ---------------------------------------------------------------------------
// 6. Manual retry and the status filter.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_can_be_retried_by_hand() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(500)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/manual"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);
    let secret = endpoint["secret"].as_str().unwrap();

    // Four failed attempts: the next rung is 32 m (1.92 s scaled), room to act.
    send_test(&api, base, key, &endpoint_id).await;
    let pending = eventually("4 failed attempts", TIMEOUT, || async {
        deliveries(&api, base, key, &format!("endpointId={endpoint_id}"))
            .await
            .into_iter()
            .find(|d| d["attemptCount"] == 4)
    })
    .await;
    let id = id_of(&pending);
    assert_eq!(pending["status"], "pending", "{pending}");
    assert!(pending["nextAttemptAt"].is_string(), "{pending}");
    let listed = deliveries(&api, base, key, "status=pending").await;
    assert!(listed.iter().any(|d| d["id"] == id.as_str()), "?status=pending lists it");

    receiver.set_policy(Policy::Always(200));
    let retry_url = format!("{base}/v1/webhooks/deliveries/{id}/retry");
    let r = api.post(&retry_url, key, json!({})).await;
    r.expect(200);
    let d = &r.body["delivery"];
    assert_eq!(d["id"], id.as_str());
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(d["attemptCount"], 5, "{d}");
    let last = &d["attempts"][4];
    assert_eq!((last["manual"].as_bool(), last["succeeded"].as_bool()), (Some(true), Some(true)), "{d}");
    assert_eq!(last["statusCode"], 200);
    assert!(d["nextAttemptAt"].is_null(), "{d}");
    let hits = receiver.hits_with_id(&id);
    assert_eq!(hits.len(), 5, "four ladder attempts and the manual one");
    assert_eq!(receiver.hits().len(), 5);
    for hit in &hits {
        assert_eq!(hit.body, hits[0].body);
        hit.verify(secret);
    }
    assert_eq!(delivery(&api, base, key, &id).await["status"], "succeeded");

    // A succeeded delivery can be re-sent too; it stays succeeded.
    let r = api.post(&retry_url, key, json!({})).await;
    r.expect(200);
    assert_eq!(r.body["delivery"]["attemptCount"], 6);
    assert_eq!(r.body["delivery"]["status"], "succeeded");
    assert_eq!(r.body["delivery"]["attempts"][5]["manual"], true);
    assert_eq!(receiver.hits_with_id(&id).len(), 6, "the same webhook-id again");

    api.post(&format!("{base}/v1/webhooks/deliveries/whd_nope/retry"), key, json!({}))
        .await
        .expect_error(404, "not_found");
    api.get(&format!("{base}/v1/webhooks/deliveries/whd_nope"), key).await.expect_error(404, "not_found");

    // The status filter returns only entries of that status.
    for status in ["pending", "succeeded", "failed"] {
        let listed = deliveries(&api, base, key, &format!("status={status}")).await;
        assert!(listed.iter().all(|d| d["status"] == status), "?status={status}: {listed:?}");
        if status == "succeeded" {
            assert!(listed.iter().any(|d| d["id"] == id.as_str()));
        }
    }
    api.get(&format!("{base}/v1/webhooks/deliveries?status=done"), key).await.expect_invalid("status");

    delete_endpoint(&api, base, key, &endpoint_id).await;
}

// ---------------------------------------------------------------------------
// 6b. The whole ladder, at a faster clock: failed after 9 attempts; the 10th
// consecutive failure (a manual one) disables the endpoint.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_fails_after_the_whole_ladder_and_can_still_be_resent() {
    // Time scale 0.00001: the ladder (about a day) runs in under a second.
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "0.00001")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.as_str();
    let base = node.sandbox.as_str();
    let receiver = Receiver::start(Policy::Always(503)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/gone"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);
    let secret = endpoint["secret"].as_str().unwrap();

    send_test(&api, base, key, &endpoint_id).await;
    // `lastAttemptFailed=true` lists it from its first failed attempt,
    // while `status=failed` lists it only once its own status turns
    // `failed`, when the ladder runs out.
    let failing = eventually("the first attempt failed", TIMEOUT, || async {
        deliveries(&api, base, key, "lastAttemptFailed=true").await.into_iter().next()
    })
    .await;
    let id = id_of(&failing);
    let failed = eventually("the delivery failed", TIMEOUT, || async {
        let listed = deliveries(&api, base, key, "status=failed").await;
        assert!(listed.iter().all(|d| d["status"] == "failed"), "?status=failed lists {listed:?}");
        listed.into_iter().find(|d| d["id"] == id.as_str())
    })
    .await;
    assert_eq!(failed["attemptCount"], 9, "the first attempt and the 8 rungs of the ladder: {failed}");
    let attempts = failed["attempts"].as_array().unwrap();
    assert!(
        attempts.iter().all(|a| a["statusCode"] == 503 && a["succeeded"] == false && a["manual"] == false),
        "{failed}"
    );
    assert!(failed["nextAttemptAt"].is_null(), "{failed}");
    let hits = receiver.hits_with_id(&id);
    assert_eq!(hits.len(), 9);
    for hit in &hits {
        hit.verify(secret);
    }
    for status in ["pending", "succeeded"] {
        let listed = deliveries(&api, base, key, &format!("status={status}")).await;
        assert!(!listed.iter().any(|d| d["id"] == id.as_str()), "?status={status} lists a failed delivery");
    }
    // Nine consecutive failures: still active.
    let e = get_endpoint(&api, base, key, &endpoint_id).await;
    assert_eq!((e["status"].as_str(), e["consecutiveFailures"].as_u64()), (Some("active"), Some(9)), "{e}");

    // A manual retry that fails is the tenth: the endpoint is disabled.
    let retry_url = format!("{base}/v1/webhooks/deliveries/{id}/retry");
    let r = api.post(&retry_url, key, json!({})).await;
    r.expect(200);
    let d = &r.body["delivery"];
    assert_eq!(d["attemptCount"], 10, "{d}");
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(d["attempts"][9]["manual"], true);
    assert_eq!(d["attempts"][9]["statusCode"], 503);
    let e = get_endpoint(&api, base, key, &endpoint_id).await;
    assert_eq!(e["status"], "disabled", "{e}");
    assert_eq!(e["disabledReason"], "consecutive_failures", "{e}");

    // Re-enabled, with a healthy receiver, a manual retry succeeds.
    receiver.set_policy(Policy::Always(200));
    api.patch(&format!("{base}/v1/webhooks/endpoints/{endpoint_id}"), key, json!({ "status": "active" }))
        .await
        .expect(200);
    let r = api.post(&retry_url, key, json!({})).await;
    r.expect(200);
    assert_eq!(r.body["delivery"]["status"], "succeeded", "{}", r.text);
    assert_eq!(r.body["delivery"]["attemptCount"], 11);
    let hits = receiver.hits_with_id(&id);
    assert_eq!(hits.len(), 11);
    assert!(hits.iter().all(|h| h.body == hits[0].body));
    hits[10].verify(secret);
    for query in ["status=failed", "lastAttemptFailed=true"] {
        let listed = deliveries(&api, base, key, query).await;
        assert!(!listed.iter().any(|d| d["id"] == id.as_str()), "?{query} lists a delivery now succeeded");
    }
    assert!(
        deliveries(&api, base, key, "lastAttemptFailed=false").await.iter().any(|d| d["id"] == id.as_str())
    );
    assert_eq!(get_endpoint(&api, base, key, &endpoint_id).await["consecutiveFailures"], 0);
}

// ---------------------------------------------------------------------------
// 6c. Deleting an endpoint ends its pending deliveries.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_endpoint_ends_its_pending_deliveries() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(500)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/deleted"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);
    send_test(&api, base, key, &endpoint_id).await;
    let pending = eventually("a failed attempt", TIMEOUT, || async {
        deliveries(&api, base, key, &format!("endpointId={endpoint_id}"))
            .await
            .into_iter()
            .find(|d| d["attemptCount"].as_u64() >= Some(1))
    })
    .await;
    let id = id_of(&pending);
    delete_endpoint(&api, base, key, &endpoint_id).await;
    let ended = eventually("the delivery failed", TIMEOUT, || async {
        let d = delivery(&api, base, key, &id).await;
        (d["status"] == "failed").then_some(d)
    })
    .await;
    assert!(ended["nextAttemptAt"].is_null(), "{ended}");
    let made = ended["attemptCount"].as_u64().unwrap() as usize;
    assert!(made < 9, "{ended}");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(receiver.hits_with_id(&id).len(), made, "nothing is sent to a deleted endpoint");
    api.post(&format!("{base}/v1/webhooks/deliveries/{id}/retry"), key, json!({}))
        .await
        .expect_error(400, "bad_request");
    assert_eq!(receiver.hits_with_id(&id).len(), made);
}

// ---------------------------------------------------------------------------
// 7. The test operation.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_operation_reaches_that_endpoint_only() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(200)).await;
    let a = create_endpoint(&api, base, key, &receiver.url("/a"), json!(["conversion.completed"])).await;
    let b = create_endpoint(&api, base, key, &receiver.url("/b"), json!(["*"])).await;
    let c = create_endpoint(&api, base, key, &receiver.url("/c"), json!(["webhook.test"])).await;
    let a_id = id_of(&a);

    let r = api.post(&format!("{base}/v1/webhooks/endpoints/{a_id}/test"), key, json!({})).await;
    r.expect(202);
    assert_eq!(r.body["event"], "webhook.test");
    let hit = receiver
        .wait_for("webhook.test at /a", "/a", |v| {
            v["event"] == "webhook.test" && v["data"]["endpointId"] == a_id.as_str()
        })
        .await;
    hit.verify(a["secret"].as_str().unwrap());
    assert_recent_timestamp(&hit);
    let event_id = hit.json()["id"].as_str().unwrap().to_string();
    let found = eventually("the test delivery succeeded", TIMEOUT, || async {
        let found = deliveries(&api, base, key, &format!("eventId={event_id}")).await;
        found.iter().all(|d| d["status"] == "succeeded").then_some(found)
    })
    .await;
    assert_eq!(found.len(), 1, "one delivery for the whole organization: {found:?}");
    assert_eq!(found[0]["endpointId"], a_id.as_str());
    for path in ["/b", "/c"] {
        assert!(
            !receiver.hits_at(path).iter().any(|h| h.json()["id"] == event_id.as_str()),
            "{path} got another endpoint's test event"
        );
    }

    api.post(&format!("{base}/v1/webhooks/endpoints/we_nope/test"), key, json!({}))
        .await
        .expect_error(404, "not_found");
    for e in [&a, &b, &c] {
        delete_endpoint(&api, base, key, &id_of(e)).await;
    }
}

// ---------------------------------------------------------------------------
// 8. Durability across SIGKILL.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_survive_a_kill_and_complete_after_restart() {
    let mut node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let base = node.sandbox.clone();
    let receiver = Receiver::start(Policy::FailFirst(2)).await;
    // The second attempt hangs, so the node dies with it in flight.
    receiver.answer_slowly_once(1, Duration::from_secs(2));
    let endpoint =
        create_endpoint(&api, &base, &key, &receiver.url("/durable"), json!(["account.credited"])).await;
    let endpoint_id = id_of(&endpoint);
    let secret = endpoint["secret"].as_str().unwrap().to_string();

    deposit(&api, &node, &key, "USD", "10.00").await;
    let first = eventually("one recorded attempt and a second in flight", TIMEOUT, || async {
        let found = deliveries(&api, &base, &key, &format!("endpointId={endpoint_id}")).await;
        (found.len() == 1 && found[0]["attemptCount"] == 1 && receiver.hits().len() == 2)
            .then(|| found[0].clone())
    })
    .await;
    let id = id_of(&first);
    assert_eq!(first["status"], "pending");
    // An event committed just before the kill, perhaps not yet turned into a delivery.
    deposit(&api, &node, &key, "GHS", "5.00").await;
    node.kill9();

    node.restart(&Options::unthrottled(), &[]);
    let done = eventually("the delivery succeeded after the restart", TIMEOUT, || async {
        let d = delivery(&api, &base, &key, &id).await;
        (d["status"] == "succeeded").then_some(d)
    })
    .await;
    assert_eq!(done["attempts"][0], first["attempts"][0], "the attempt recorded before the kill is kept");
    let attempts = done["attempts"].as_array().unwrap();
    assert!(attempts.len() >= 2, "{done}");
    assert_eq!(attempts.last().unwrap()["succeeded"], true);
    assert!(attempts[..attempts.len() - 1].iter().all(|a| a["succeeded"] == false), "{done}");
    let hits = receiver.hits_with_id(&id);
    assert!(hits.len() >= 3, "two failures then a success: {} hits", hits.len());
    assert_eq!(hits.last().unwrap().status, 200);
    for hit in &hits {
        assert_eq!(hit.body, hits[0].body, "the same body after the restart");
        hit.verify(&secret);
    }
    assert_eq!(hits[0].json()["data"]["currency"], "USD");

    // The event committed just before the kill is delivered too.
    let ghs = receiver
        .wait_for("account.credited for GHS after the restart", "/durable", |v| {
            v["event"] == "account.credited" && v["data"]["currency"] == "GHS"
        })
        .await;
    ghs.verify(&secret);
    eventually("every delivery succeeded", TIMEOUT, || async {
        let all = deliveries(&api, &base, &key, &format!("endpointId={endpoint_id}")).await;
        (all.len() == 2 && all.iter().all(|d| d["status"] == "succeeded")).then_some(())
    })
    .await;

    node.stop_and_verify();
}

// ---------------------------------------------------------------------------
// 9. Private addresses on the live stack.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_stack_refuses_private_urls_unless_allowed() {
    let node = &SHARED.get();
    let api = Api::new();
    let live_key = node.creds.live_key.as_str();
    let live_list = node.live_url("/v1/webhooks/endpoints");
    let receiver = Receiver::start(Policy::Always(200)).await;
    for url in [
        receiver.url("/live"),
        "http://localhost:9/hooks".to_string(),
        "http://10.1.2.3/hooks".to_string(),
        "http://192.168.0.10/hooks".to_string(),
        "http://[::1]:9/hooks".to_string(),
    ] {
        api.post(&live_list, live_key, json!({ "url": url, "events": ["*"] })).await.expect_invalid("url");
    }
    // A public address is fine, and a PATCH to a private one is refused.
    let public =
        create_endpoint(&api, &node.live, live_key, "https://example.com/hooks", json!(["webhook.test"]))
            .await;
    let public_id = id_of(&public);
    api.patch(
        &node.live_url(&format!("/v1/webhooks/endpoints/{public_id}")),
        live_key,
        json!({ "url": receiver.url("/live") }),
    )
    .await
    .expect_invalid("url");
    delete_endpoint(&api, &node.live, live_key, &public_id).await;
    // The sandbox accepts loopback.
    let sandbox = create_endpoint(
        &api,
        &node.sandbox,
        &node.creds.sandbox_key,
        &receiver.url("/sandbox"),
        json!(["webhook.test"]),
    )
    .await;
    delete_endpoint(&api, &node.sandbox, &node.creds.sandbox_key, &id_of(&sandbox)).await;

    // With SIKA_ALLOW_PRIVATE_WEBHOOKS=true the live stack accepts it and delivers.
    let allowing = Node::start_with_env(Options::unthrottled(), &[("SIKA_ALLOW_PRIVATE_WEBHOOKS", "true")]);
    let key = allowing.creds.live_key.as_str();
    let endpoint = create_endpoint(&api, &allowing.live, key, &receiver.url("/live"), json!(["*"])).await;
    let endpoint_id = id_of(&endpoint);
    send_test(&api, &allowing.live, key, &endpoint_id).await;
    let hit = receiver
        .wait_for("webhook.test on live", "/live", |v| v["data"]["endpointId"] == endpoint_id.as_str())
        .await;
    hit.verify(endpoint["secret"].as_str().unwrap());
}

/// The machine's host name, when it resolves here to loopback only (as a
/// name in `/etc/hosts` usually does).
fn loopback_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let own = (rc == 0)
        .then(|| std::ffi::CStr::from_bytes_until_nul(&buf).ok()?.to_str().ok().map(str::to_string))
        .flatten();
    // The machine's own name, else the names Debian's and Docker's
    // /etc/hosts give loopback (none of them is refused by its spelling).
    let candidates =
        own.into_iter().chain(["ip6-localhost", "ip6-loopback", "localhost.localdomain"].map(String::from));
    candidates.into_iter().find(|name| {
        let addrs: Vec<_> = std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), 80))
            .map(Iterator::collect)
            .unwrap_or_default();
        !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
    })
}

/// Sends a test event to a new endpoint at `url` and returns its first
/// attempt's error, which must be set.
async fn first_attempt_error(api: &Api, base: &str, key: &str, url: &str) -> String {
    let endpoint = create_endpoint(api, base, key, url, json!(["webhook.test"])).await;
    let id = id_of(&endpoint);
    send_test(api, base, key, &id).await;
    let attempted = eventually(&format!("an attempt to {url}"), Duration::from_secs(10), || async {
        let found = deliveries(api, base, key, &format!("endpointId={id}")).await;
        found.into_iter().find(|d| d["attempts"].as_array().is_some_and(|a| !a.is_empty()))
    })
    .await;
    delete_endpoint(api, base, key, &id).await;
    let attempt = &attempted["attempts"][0];
    assert_eq!(attempt["succeeded"], false, "{attempted}");
    attempt["error"].as_str().unwrap_or_else(|| panic!("no error: {attempted}")).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_deliveries_check_the_address_they_connect_to() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = node.creds.live_key.as_str();
    let live_list = node.live_url("/v1/webhooks/endpoints");
    // Non-public ranges the literal check used to let through.
    for url in [
        "http://[::ffff:169.254.169.254]/latest/meta-data",
        "http://[::ffff:a9fe:a9fe]/",
        "http://100.64.0.1/hooks",
        "http://198.18.0.1/hooks",
        "http://224.0.0.1/hooks",
        "http://240.0.0.1/hooks",
        "http://[fec0::1]/hooks",
        "http://[ff02::1]/hooks",
        "http://localhost./hooks",
        "http://0.0.0.0:9/hooks",
    ] {
        api.post(&live_list, key, json!({ "url": url, "events": ["*"] })).await.expect_invalid("url");
    }
    // A name is resolved when the attempt connects: the machine's own host
    // name reaches loopback, so the attempt is refused and says why.
    let Some(host) = loopback_hostname() else {
        return cannot_run(
            "live_deliveries_check_the_address_they_connect_to",
            "no name here resolves to loopback only (the host name, ip6-localhost, localhost.localdomain), so the connect-time check cannot be exercised",
        );
    };
    let receiver = Receiver::start(Policy::Always(200)).await;
    let url = receiver.url("/own-host").replace("127.0.0.1", &host);
    let error = first_attempt_error(&api, &node.live, key, &url).await;
    assert!(error.contains("non-public"), "{error}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(receiver.hits_at("/own-host").is_empty(), "the receiver was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_stack_delivers_to_the_nodes_own_listeners() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = node.creds.sandbox_key.as_str();
    let list = node.sandbox_url("/v1/webhooks/endpoints");
    for url in
        [node.sandbox_url("/v1/payouts"), node.live_url("/v1/payouts"), node.admin_url("/admin/v1/status")]
    {
        let r = api.post(&list, key, json!({ "url": url, "events": ["*"] })).await;
        r.expect_invalid("url");
        assert!(r.text.contains("own listeners"), "{}", r.text);
    }
    // By name, the check happens as the attempt connects.
    let Some(host) = loopback_hostname() else { return };
    let url = node.sandbox_url("/v1/payouts").replace("127.0.0.1", &host);
    let error = first_attempt_error(&api, &node.sandbox, key, &url).await;
    assert!(error.contains("own listeners"), "{error}");
}

// ---------------------------------------------------------------------------
// 9c. Many endpoints.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_behind_a_thousand_deleted_ones_still_gets_its_events() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (base, key) = (node.sandbox.as_str(), node.creds.sandbox_key.as_str());
    let receiver = Receiver::start(Policy::Always(200)).await;
    let old = create_endpoint(&api, base, key, &receiver.url("/old"), json!(["*"])).await;
    let old_id = id_of(&old);
    let churn = Receiver::start(Policy::Always(200)).await;
    for i in 0..1000 {
        let url = churn.url(&format!("/churn/{i}"));
        let id = id_of(&create_endpoint(&api, base, key, &url, json!(["webhook.test"])).await);
        delete_endpoint(&api, base, key, &id).await;
    }
    // One more endpoint, active, after the deleted ones.
    create_endpoint(&api, base, key, &receiver.url("/new"), json!(["*"])).await;
    send_test(&api, base, key, &old_id).await;
    receiver
        .wait_for("webhook.test to the oldest endpoint", "/old", |v| {
            v["data"]["endpointId"] == old_id.as_str()
        })
        .await;
    // A real event reaches both subscribed endpoints.
    deposit(&api, &node, key, "USD", "30.00").await;
    let conversion = convert(&api, &node, key, "USD", "10.00", "NGN").await;
    let conversion_id = id_of(&conversion);
    for path in ["/old", "/new"] {
        receiver.wait_for("the conversion event", path, |v| v["data"]["id"] == conversion_id.as_str()).await;
    }
}

// ---------------------------------------------------------------------------
// 10. Signatures against the Standard Webhooks reference.

#[test]
fn signatures_match_the_standard_webhooks_reference() {
    use sika_server::signing;

    let signature = signing::sign(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1_614_265_330,
        br#"{"test": 2432232314}"#,
    )
    .unwrap();
    assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");

    // A fresh secret: the reference library verifies Sika's signature.
    for _ in 0..8 {
        let secret = signing::new_secret();
        let encoded = secret.strip_prefix("whsec_").expect("whsec_ prefix");
        assert!(decoded_len(encoded).is_some_and(|n| (24..=64).contains(&n)), "{secret}");
        let body = format!(r#"{{"id":"evt_{}","event":"webhook.test","data":{{}}}}"#, rand::random::<u64>());
        let timestamp = chrono::Utc::now().timestamp();
        let signature = signing::sign(&secret, "whd_test", timestamp, body.as_bytes()).unwrap();
        let reference = Webhook::new(&secret).unwrap();
        assert_eq!(reference.sign("whd_test", timestamp, body.as_bytes()).unwrap(), signature);
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", "whd_test".parse().unwrap());
        headers.insert("webhook-timestamp", timestamp.to_string().parse().unwrap());
        headers.insert("webhook-signature", signature.parse().unwrap());
        reference.verify(body.as_bytes(), &headers).expect("the reference library verifies Sika's signature");
        // A changed body does not verify.
        assert!(reference.verify(format!("{body} ").as_bytes(), &headers).is_err());
    }
}

/// Issue 16.9: each manual retry is a request to the merchant's endpoint at
/// the caller's command, so one delivery takes at most three a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_retries_are_limited_per_delivery() {
    let sandbox = OnSandbox::new();
    let (_, api, key, base) = sandbox.parts();
    let receiver = Receiver::start(Policy::Always(200)).await;
    let endpoint = create_endpoint(&api, base, key, &receiver.url("/limited"), json!(["webhook.test"])).await;
    let endpoint_id = id_of(&endpoint);
    send_test(&api, base, key, &endpoint_id).await;
    let delivered = eventually("the delivery", TIMEOUT, || async {
        deliveries(&api, base, key, &format!("endpointId={endpoint_id}")).await.into_iter().next()
    })
    .await;
    let url = format!("{base}/v1/webhooks/deliveries/{}/retry", id_of(&delivered));
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = api.post(&url, key, json!({})).await;
        if r.status == 429 {
            r.expect_error(429, "rate_limited");
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 3, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 2, "{statuses:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    api.post(&url, key, json!({})).await.expect(200);
}
