//! The contract's exactness, seen from outside: query parameters an
//! operation does not take, paging on every list, idempotency by meaning,
//! `updatedAt` on status changes, the simulations index, live validation
//! and the free-text limits.

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

fn link_body(email: &str) -> Value {
    json!({
        "currency": "GHS",
        "title": "Kente scarves",
        "amount": "50.00",
        "allowedMethods": ["mobile_money"],
        "email": email,
    })
}

/// Creates a sandbox payment link from `body`; returns it as created.
async fn create_link(api: &Api, node: &Node, body: Value) -> Value {
    let r = api.post(&node.sandbox_url("/v1/payment-links"), &node.creds.sandbox_key, body).await;
    r.expect(201);
    r.body["paymentLink"].clone()
}

/// A typo in a filter never silently lists everything: an unknown query
/// parameter is refused, naming it, on every operation that takes a query.
#[tokio::test]
async fn unknown_query_parameters_are_refused_by_name() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    for (path, parameter) in [
        ("/v1/payouts?staus=failed", "staus"),
        ("/v1/collections?limit=5&foo=1", "foo"),
        ("/v1/orders?status=completed&externalRef=x", "externalRef"),
        ("/v1/conversions?page=2", "page"),
        ("/v1/payment-pages?state=active", "state"),
        ("/v1/payment-links?mail=a@b.co", "mail"),
        ("/v1/disputes?status=open&sort=asc", "sort"),
        ("/v1/recipients?q=ama", "q"),
        ("/v1/virtual-accounts?currency=GHS", "currency"),
        ("/v1/files?kind=pdf", "kind"),
        ("/v1/webhooks/endpoints?status=active", "status"),
        ("/v1/webhooks/events?type=payout.completed", "type"),
        ("/v1/webhooks/deliveries?state=failed", "state"),
    ] {
        let r = api.get(&node.sandbox_url(path), key).await;
        r.expect_invalid(parameter);
        assert!(r.body["message"].as_str().unwrap().contains(parameter), "{path}: {}", r.body);
    }
    // The parameters an operation does take still work, together.
    api.get(&node.sandbox_url("/v1/payouts?limit=5&status=failed&externalReference=x"), key)
        .await
        .expect(200);
    let admin = &node.creds.admin_token;
    let r = api.get(&node.admin_url("/admin/v1/sandbox/payouts?limit=5&stauts=failed"), admin).await;
    r.expect_invalid("stauts");
}

/// The payment links' email filter matches an address whatever its case.
#[tokio::test]
async fn the_payment_link_email_filter_ignores_case() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let id = create_link(&api, node, link_body("Efua.Owusu@Example.com")).await["id"].clone();
    for email in ["efua.owusu@example.com", "EFUA.OWUSU@EXAMPLE.COM", "Efua.Owusu@Example.com"] {
        let url = node.sandbox_url(&format!("/v1/payment-links?email={}", email.replace('@', "%40")));
        let r = api.get(&url, key).await;
        r.expect(200);
        let ids: Vec<&Value> = r.body["data"].as_array().unwrap().iter().map(|l| &l["id"]).collect();
        assert_eq!(ids, vec![&id], "{email}");
    }
}

/// Walks a list with `limit=1`, following `nextCursor`; returns the ids (or
/// codes) in order.
async fn walk(api: &Api, url: &str, key: &str, id: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    walk_pages(api, url, key, 1, |r| {
        let data = r.body["data"].as_array().unwrap();
        assert!(data.len() <= 1, "limit=1 gave {}", r.body);
        seen.extend(data.iter().map(|item| item[id].clone()));
        assert_eq!(r.body["hasMore"].as_bool(), Some(r.body["nextCursor"].is_string()), "{}", r.body);
        assert!(seen.len() < 200, "the walk never ends");
    })
    .await;
    seen
}

/// Keys, a country's methods and the simulations index page like every
/// other list: `limit` and `cursor`, with the same 400s for bad values.
#[tokio::test]
async fn every_list_honours_limit_and_cursor() {
    let node = &SHARED.get();
    let api = Api::new();
    let session = &node.creds.owner_session;
    for name in ["one", "two"] {
        create_key(&api, &node.sandbox, session, json!({ "name": name, "scopes": ["rates:read"] })).await;
        let email = format!("pager-{name}-{}@example.com", sika_suffix());
        let member = json!({ "email": email, "name": name, "role": "viewer" });
        api.post(&node.sandbox_url("/v1/members"), session, member).await.expect(201);
    }
    let lists = [
        (node.sandbox_url("/v1/keys"), session, "id"),
        (node.sandbox_url("/v1/members"), session, "id"),
        (node.sandbox_url("/v1/capabilities/GH"), &node.creds.sandbox_key, "code"),
        (node.sandbox_url("/v1/simulations"), &node.creds.sandbox_key, "path"),
    ];
    for (url, key, id) in &lists {
        let whole = api.get(&format!("{url}?limit=100"), key).await;
        whole.expect(200);
        let all: Vec<Value> = whole.body["data"].as_array().unwrap().iter().map(|i| i[*id].clone()).collect();
        assert!(all.len() >= 3, "{url}: {}", whole.body);
        assert_eq!(
            walk(&api, url, key, id).await,
            all,
            "{url}: a walk by cursor sees each item once, in order"
        );
        for bad in ["limit=0", "limit=101", "limit=x"] {
            api.get(&format!("{url}?{bad}"), key).await.expect_invalid("limit");
        }
        api.get(&format!("{url}?cursor=forged"), key).await.expect_invalid("cursor");
    }
    // A cursor belongs to its list.
    let keys = api.get(&format!("{}?limit=1", lists[0].0), session).await;
    let cursor = keys.body["nextCursor"].as_str().unwrap().to_string();
    api.get(&format!("{}?cursor={cursor}", lists[3].0), &node.creds.sandbox_key)
        .await
        .expect_invalid("cursor");
}

/// A suffix no earlier run used, for emails on a shared node.
fn sika_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// A retry that writes an amount differently (`"10"`, `10.0`, `"10.00"`) is
/// the same request: 200 with the original resource. Another amount under
/// the same reference is `409 duplicate`.
#[tokio::test]
async fn idempotency_compares_amounts_by_value() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    deposit(&api, node, key, "GHS", "500.00").await;
    let url = node.sandbox_url("/v1/payouts");
    let body = |amount: Value| {
        json!({
            "from": { "currency": "GHS", "amount": amount },
            "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
            "externalReference": "contract-idem-1",
        })
    };
    let first = api.post(&url, key, body(json!("10"))).await;
    first.expect(201);
    let id = first.body["payout"]["id"].clone();
    for same in [json!(10.0), json!("10.00"), json!(10), json!("10.0")] {
        let mut retry = body(same.clone());
        retry["from"]["currency"] = json!("ghs");
        let r = api.post(&url, key, retry).await;
        r.expect(200);
        assert_eq!(r.body["payout"]["id"], id, "{same}");
    }
    api.post(&url, key, body(json!("10.01"))).await.expect_error(409, "duplicate");

    let collection = |amount: Value| {
        json!({ "amount": amount, "currency": "GHS", "code": "mtn_gh",
                "accountNumber": "+233241234567", "externalReference": "contract-idem-2" })
    };
    let url = node.sandbox_url("/v1/collections");
    let first = api.post(&url, key, collection(json!("20.00"))).await;
    first.expect(201);
    let r = api.post(&url, key, collection(json!(20))).await;
    r.expect(200);
    assert_eq!(r.body["collection"]["id"], first.body["collection"]["id"]);
    api.post(&url, key, collection(json!("20.10"))).await.expect_error(409, "duplicate");
}

/// A payment link's `updatedAt` moves when its status does, even when
/// nobody edited it: when it is paid, and when its window ends.
#[tokio::test]
async fn a_payment_links_updated_at_follows_its_status() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let created = create_link(&api, node, link_body("kofi@example.com")).await;
    let id = created["id"].as_str().unwrap().to_string();
    let body =
        json!({ "amount": "50.00", "method": "mobile_money", "network": "mtn_gh", "phone": "+233241234567" });
    api.post_anonymous(&node.sandbox_url(&format!("/pay/{id}/sessions")), body).await.expect(201);
    let url = node.sandbox_url(&format!("/v1/payment-links/{id}"));
    let paid = poll_until(&api, &url, key, |b| b["paymentLink"]["status"] == "paid").await;
    let paid = &paid["paymentLink"];
    assert!(millis(&paid["updatedAt"]) > millis(&created["updatedAt"]), "paid: {created} then {paid}");

    let mut body = link_body("kofi@example.com");
    body["expiresAt"] = json!(in_seconds(1));
    let created = create_link(&api, node, body).await;
    let url = node.sandbox_url(&format!("/v1/payment-links/{}", created["id"].as_str().unwrap()));
    let expired = poll_until(&api, &url, key, |b| b["paymentLink"]["status"] == "expired").await;
    let expired = &expired["paymentLink"];
    assert_eq!(millis(&expired["updatedAt"]), millis(&created["expiresAt"]), "expired: {expired}");
}

/// `GET /v1/simulations` lists every simulation call, the order funds one
/// included, each in the spec's shape: a `trigger` object and scenarios
/// keyed by two digits or `default`.
#[tokio::test]
async fn the_simulations_index_is_complete_and_in_the_specs_shape() {
    let node = &SHARED.get();
    let api = Api::new();
    let r = api.get(&node.sandbox_url("/v1/simulations?limit=100"), &node.creds.sandbox_key).await;
    r.expect(200);
    let entries = r.body["data"].as_array().unwrap();
    let paths: Vec<&str> = entries.iter().map(|e| e["path"].as_str().unwrap()).collect();
    for path in [
        "/v1/collections",
        "/v1/payouts",
        "/v1/validate/bulk",
        "/v1/simulations/deposits",
        "/v1/simulations/virtual-accounts/{id}/deposits",
        "/v1/simulations/orders/{id}/funds",
        "/v1/simulations/disputes",
        "/v1/simulations/disputes/{id}/resolve",
    ] {
        assert!(paths.contains(&path), "{path} is not listed: {paths:?}");
    }
    for e in entries {
        assert!(e["trigger"]["field"].is_string() && e["trigger"]["rule"].is_string(), "{e}");
        for key in e["scenarios"].as_object().unwrap().keys() {
            let two_digits = key.len() == 2 && key.bytes().all(|b| b.is_ascii_digit());
            assert!(two_digits || key == "default", "scenario key {key}: {e}");
        }
    }
    let funds = entries.iter().find(|e| e["path"] == "/v1/simulations/orders/{id}/funds").unwrap();
    assert_eq!(funds["method"], "POST");
    for outcome in ["funds_received", "overpaid", "underpaid"] {
        assert!(funds["outcomes"].as_array().unwrap().contains(&json!(outcome)), "{funds}");
    }
    let collections = entries.iter().find(|e| e["path"] == "/v1/collections").unwrap();
    assert_eq!(collections["trigger"], json!({ "field": "amount", "rule": "last_two_decimal_digits" }));
    assert_eq!(collections["scenarios"]["51"], "failed");
}

/// On live, bulk validation never applies the sandbox's suffix rules, and
/// each result says how far the check went: `format` on live (no rail was
/// asked), `rail` on the sandbox.
#[tokio::test]
async fn live_validation_applies_no_sandbox_rules_and_says_what_it_checked() {
    let node = &SHARED.get();
    let api = Api::new();
    let numbers = ["+233241000000", "+233241000001", "+233241000002", "+233241234567", "hello"];
    let items: Vec<Value> = numbers.iter().map(|n| json!({ "code": "mtn_gh", "accountNumber": n })).collect();
    let r =
        api.post(&node.live_url("/v1/validate/bulk"), &node.creds.live_key, json!({ "items": items })).await;
    r.expect(200);
    let results: Vec<&Value> = r.body["results"].as_array().unwrap().iter().map(|r| &r["result"]).collect();
    for result in &results[..4] {
        assert_eq!(result["valid"], true, "no sandbox suffix on live: {}", r.body);
        assert_eq!(result["checked"], "format", "{}", r.body);
        assert!(result["accountName"].is_null(), "no rail named the holder: {}", r.body);
    }
    assert_eq!(results[4]["valid"], false);
    assert_eq!(results[4]["reason"], "invalid_account_number");

    let r = api
        .post(&node.sandbox_url("/v1/validate/bulk"), &node.creds.sandbox_key, json!({ "items": items }))
        .await;
    r.expect(200);
    let results: Vec<&Value> = r.body["results"].as_array().unwrap().iter().map(|r| &r["result"]).collect();
    assert_eq!(results[0]["reason"], "account_not_found");
    assert!(results.iter().all(|result| result["checked"] == "rail"), "{}", r.body);
}

/// A USDC or USDT virtual account is a crypto deposit address on a chain,
/// not a bank account: generated on the sandbox, from the operator's
/// configured route (here an xpub) on live.
#[tokio::test]
async fn a_stablecoin_virtual_account_is_a_deposit_address() {
    let node = &SHARED.get();
    let api = Api::new();
    let is_evm =
        |a: &str| a.len() == 42 && a.starts_with("0x") && a[2..].chars().all(|c| c.is_ascii_hexdigit());
    let url = node.sandbox_url("/v1/virtual-accounts");
    let key = &node.creds.sandbox_key;
    let r = api.post(&url, key, json!({ "currency": "USDC", "chain": "base" })).await;
    r.expect(201);
    let va = &r.body["virtualAccount"];
    assert_eq!(va["type"], "crypto_address", "{va}");
    assert_eq!(va["chain"], "base");
    assert!(is_evm(va["address"].as_str().unwrap()), "{va}");
    for bank_field in ["accountNumber", "bankName", "accountName"] {
        assert!(va[bank_field].is_null(), "{bank_field}: {va}");
    }
    let r = api.post(&url, key, json!({ "currency": "USDT", "chain": "tron" })).await;
    r.expect(201);
    let tron = r.body["virtualAccount"]["address"].as_str().unwrap().to_string();
    assert!(tron.starts_with('T') && tron.len() == 34, "{tron}");
    api.post(&url, key, json!({ "currency": "USDC" })).await.expect_invalid("chain");
    api.post(&url, key, json!({ "currency": "USDC", "chain": "bitcoin" })).await.expect_invalid("chain");
    api.post(&url, key, json!({ "currency": "NGN", "chain": "base" })).await.expect_invalid("chain");
    let r = api.post(&url, key, json!({ "currency": "NGN" })).await;
    r.expect(201);
    assert_eq!(r.body["virtualAccount"]["type"], "bank_account");
    assert!(r.body["virtualAccount"]["address"].is_null());

    // Live: each account gets its own address from the configured xpub.
    let url = node.live_url("/v1/virtual-accounts");
    let key = &node.creds.live_key;
    let mut addresses = Vec::new();
    for _ in 0..2 {
        let r = api.post(&url, key, json!({ "currency": "USDC", "chain": "base" })).await;
        r.expect(201);
        let va = &r.body["virtualAccount"];
        assert_eq!(va["type"], "crypto_address", "{va}");
        addresses.push(va["address"].as_str().unwrap().to_string());
    }
    assert!(addresses.iter().all(|a| is_evm(a)), "{addresses:?}");
    assert_ne!(addresses[0], addresses[1], "one address per account");
    // A chain the operator configured no route for is not offered.
    api.post(&url, key, json!({ "currency": "USDC", "chain": "polygon" })).await.expect_invalid("chain");
}

/// What a slow receiver saw, in arrival order: (event, resource id).
type Arrivals = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// Records each delivery as it arrives, then takes 0 to 40 ms to answer
/// (chosen by its id), so deliveries sent at once would overtake each other.
async fn slow_receiver(
    axum::extract::State(arrivals): axum::extract::State<Arrivals>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::http::StatusCode {
    let value: Value = serde_json::from_slice(&body).unwrap_or_default();
    let event = value["event"].as_str().unwrap_or_default().to_string();
    let id = value["data"]["id"].as_str().unwrap_or_default().to_string();
    arrivals.lock().unwrap().push((event, id));
    let webhook_id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let delay = webhook_id.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))) % 41;
    tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    axum::http::StatusCode::OK
}

/// Where an event stands in its resource's life; arrivals must never go back.
fn rank(event: &str) -> u8 {
    match event {
        "order.awaiting_funds" | "dispute.created" => 0,
        "order.awaiting_confirmations" | "dispute.updated" => 1,
        "order.funds_received" | "order.underpaid" | "order.overpaid" | "dispute.closed" => 2,
        "order.processing_payout" => 3,
        _ => 4,
    }
}

/// For each endpoint, a resource's deliveries arrive in the order their
/// events were committed, even at a receiver whose answers take a varying
/// time: each waits until the previous one's first attempt finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_resources_webhooks_arrive_in_commit_order() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let arrivals = Arrivals::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(slow_receiver).with_state(arrivals.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let body = json!({ "url": url, "events": ["*"] });
    api.post(&node.sandbox_url("/v1/webhooks/endpoints"), &key, body).await.expect(201);

    let mut resources = Vec::new();
    for (n, amount) in ["40.00", "40.00", "40.00", "30.00", "50.00", "40.00"].into_iter().enumerate() {
        let order = json!({
            "from": { "method": "mobile_money", "currency": "GHS", "amount": "40.00" },
            "to": { "code": "mtn_gh", "accountNumber": "+233241234567", "currency": "GHS" },
            "externalReference": format!("arrival-order-{n}"),
        });
        let r = api.post(&node.sandbox_url("/v1/orders"), &key, order).await;
        let (_, id) = r.created("order", "ord_");
        let funds = node.sandbox_url(&format!("/v1/simulations/orders/{id}/funds"));
        api.post(&funds, &key, json!({ "amount": amount })).await.expect(200);
        resources.push((id, 4));
    }
    for n in 0..3 {
        let collection = json!({ "amount": "25.00", "currency": "GHS", "code": "mtn_gh",
            "accountNumber": "+233241234567", "externalReference": format!("arrival-dispute-{n}") });
        let r = api.post(&node.sandbox_url("/v1/collections"), &key, collection).await;
        let (_, id) = r.created("collection", "col_");
        let url = node.sandbox_url(&format!("/v1/collections/{id}"));
        poll_until(&api, &url, &key, |b| b["collection"]["status"] == "completed").await;
        let r = api
            .post(&node.sandbox_url("/v1/simulations/disputes"), &key, json!({ "collectionId": id }))
            .await;
        let (_, dispute) = r.created("dispute", "dsp_");
        let resolve = node.sandbox_url(&format!("/v1/simulations/disputes/{dispute}/resolve"));
        api.post(&resolve, &key, json!({ "outcome": "declined" })).await.expect(200);
        resources.push((dispute, 2));
    }

    let seen = eventually("every resource's last event", std::time::Duration::from_secs(30), || async {
        let seen = arrivals.lock().unwrap().clone();
        let ended = |id: &String, last: u8| seen.iter().any(|(e, i)| i == id && rank(e) == last);
        resources.iter().all(|(id, last)| ended(id, *last)).then_some(seen)
    })
    .await;
    for (id, _) in &resources {
        let mine: Vec<&str> = seen.iter().filter(|(_, i)| i == id).map(|(e, _)| e.as_str()).collect();
        assert!(mine.len() >= 3, "{id}: {mine:?}");
        assert!(mine.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{id} arrived out of order: {mine:?}");
    }
}

/// Funds that arrive and start the payout in one step never show the
/// order at `funds_received`, so `order.funds_received` carries the state
/// the order really held: the one `order.processing_payout` carries.
#[tokio::test]
async fn order_funds_received_carries_a_state_the_order_held() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let sink = WebhookSink::registered(&api, &node.sandbox, key).await;
    let order = json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": "40.00" },
        "to": { "code": "mtn_gh", "accountNumber": "+233241234567", "currency": "GHS" },
        "externalReference": "held-state-1",
    });
    let r = api.post(&node.sandbox_url("/v1/orders"), key, order).await;
    let (_, id) = r.created("order", "ord_");
    let funds = node.sandbox_url(&format!("/v1/simulations/orders/{id}/funds"));
    let r = api.post(&funds, key, json!({ "amount": "40.00" })).await;
    r.expect(200);
    let received = sink.wait_for("order.funds_received", &id).await;
    let processing = sink.wait_for("order.processing_payout", &id).await;
    assert_ne!(received["data"]["status"], "funds_received", "no GET ever showed it: {received}");
    // The order's own state is one; the lines of earlier webhooks' attempts
    // are records of later commits, in a body rendered after them.
    let state = |event: &Value| {
        let mut data = event["data"].clone();
        if let Some(lines) = data["timeline"].as_array_mut() {
            lines.retain(|line| {
                line["kind"] != "webhook" || line["title"].as_str().is_some_and(|t| t.ends_with(" scheduled"))
            });
        }
        data
    };
    assert_eq!(state(&received), state(&processing), "one commit, one state");
    assert_eq!(received["data"]["payout"]["id"], r.body["order"]["payout"]["id"]);
}

/// Every free-text field has a stated maximum, in the document and
/// enforced: one character more is `400 validation_error` naming the field.
#[tokio::test]
async fn free_text_fields_have_stated_and_enforced_maxima() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let long = |n: usize| "a".repeat(n);
    let schemas = &document()["components"]["schemas"];
    for (schema, field, max) in [
        ("CreatePayout", "externalReference", 255),
        ("CreateCollection", "externalReference", 255),
        ("CreateRecipient", "name", 255),
        ("CreateApiKey", "name", 255),
        ("CreateWebhookEndpoint", "description", 2000),
        ("CustomFieldInput", "label", 255),
        ("CheckoutRequest", "customerReference", 255),
        ("DisputeAttachmentInput", "name", 255),
    ] {
        assert_eq!(schemas[schema]["properties"][field]["maxLength"], max, "{schema}.{field}");
    }
    deposit(&api, node, key, "GHS", "100.00").await;
    let payout = |reference: String| {
        json!({ "from": { "currency": "GHS", "amount": "1.00" },
                "to": { "code": "mtn_gh", "accountNumber": "+233241234567" }, "externalReference": reference })
    };
    let url = node.sandbox_url("/v1/payouts");
    api.post(&url, key, payout(long(256))).await.expect_invalid("externalReference");
    api.post(&url, key, payout(long(255))).await.expect(201);
    let recipient = json!({ "name": long(256), "code": "mtn_gh", "accountNumber": "+233241234567" });
    api.post(&node.sandbox_url("/v1/recipients"), key, recipient).await.expect_invalid("name");
    let endpoint = json!({ "url": "https://example.com/hooks", "events": ["*"], "description": long(2001) });
    api.post(&node.sandbox_url("/v1/webhooks/endpoints"), key, endpoint).await.expect_invalid("description");
    let session = &node.creds.owner_session;
    api.post(&node.sandbox_url("/v1/keys"), session, json!({ "name": long(256), "scopes": ["*"] }))
        .await
        .expect_invalid("name");
    let mut link = link_body("kofi@example.com");
    link["customFields"] = json!([{ "name": "size", "type": "text", "label": long(256) }]);
    api.post(&node.sandbox_url("/v1/payment-links"), key, link).await.expect_invalid("customFields[0].label");
}
