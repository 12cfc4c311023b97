//! Hosted checkout over HTTP: payment pages and their child links, standalone
//! links, partial payments, overpayment, expiry, closing, the hosted HTML,
//! and the ledger behind it all. Payers use the same public calls the hosted
//! page's script makes (`/pay/{id}/sessions`).

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

fn page_body(currency: &str, amount: Option<&str>) -> Value {
    let mut body = json!({
        "currency": currency,
        "title": "Kente scarves",
        "description": "Hand woven in Bonwire",
        "allowedMethods": ["mobile_money"],
        "redirectUrl": "https://shop.example/thanks",
        "branding": { "businessName": "Ama's Shop", "accentColor": "#0a7d4f" },
        "metadata": { "campaign": "harmattan" },
    });
    if let Some(a) = amount {
        body["amount"] = json!(a);
    }
    body
}

async fn create(api: &Api, node: &Node, path: &str, body: Value) -> Value {
    let r = api.post(&node.sandbox_url(path), &node.creds.sandbox_key, body).await;
    r.expect(201);
    let key = if path.contains("pages") { "paymentPage" } else { "paymentLink" };
    r.body[key].clone()
}

/// A payer's attempt through the hosted page's call; returns the answer.
async fn pay(api: &Api, node: &Node, target: &str, amount: &str) -> Resp {
    let body = json!({ "amount": amount, "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    api.post_anonymous(&node.sandbox_url(&format!("/pay/{target}/sessions")), body).await
}

/// A payer's attempt that names no amount (it pays what remains, where the
/// target knows that); returns the answer.
async fn pay_no_amount(api: &Api, node: &Node, target: &str) -> Resp {
    let body = json!({ "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    api.post_anonymous(&node.sandbox_url(&format!("/pay/{target}/sessions")), body).await
}

/// Pays and waits until the session settles; returns (link id, session).
async fn pay_settled(api: &Api, node: &Node, target: &str, amount: &str) -> (String, Value) {
    let r = pay(api, node, target, amount).await;
    let (_, link) = r.created("paymentLink", "pl_");
    let session = r.body["session"]["id"].as_str().unwrap().to_string();
    let url = node.sandbox_url(&format!("/pay/{link}/sessions/{session}"));
    let settled = eventually("the session to settle", Duration::from_secs(10), || async {
        let r = api.call("GET", &url, None, None).await;
        r.expect(200);
        (r.body["session"]["status"] != "pending").then(|| r.body["session"].clone())
    })
    .await;
    (link, settled)
}

async fn link(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/payment-links/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["paymentLink"].clone()
}

async fn page(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["paymentPage"].clone()
}

async fn html(node: &Node, id: &str) -> (u16, String) {
    let r = reqwest::Client::new().get(node.sandbox_url(&format!("/pay/{id}"))).send().await.unwrap();
    let status = r.status().as_u16();
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    (status, r.text().await.unwrap())
}

#[tokio::test]
async fn page_creation_enforces_the_spec_constraints() {
    let node = &SHARED.get();
    let api = Api::new();
    let url = node.sandbox_url("/v1/payment-pages");
    let key = &node.creds.sandbox_key;
    let long = "x".repeat(256);
    let cases: Vec<(Value, &str)> = vec![
        (json!({ "title": "t", "allowedMethods": ["mobile_money"] }), "currency"),
        (json!({ "currency": "", "title": "t", "allowedMethods": ["mobile_money"] }), "currency"),
        (json!({ "currency": "GHSGHSGHSGH", "title": "t", "allowedMethods": ["mobile_money"] }), "currency"),
        (json!({ "currency": "ABC", "title": "t", "allowedMethods": ["mobile_money"] }), "currency"),
        (json!({ "currency": "GHS", "allowedMethods": ["mobile_money"] }), "title"),
        (json!({ "currency": "GHS", "title": "", "allowedMethods": ["mobile_money"] }), "title"),
        (json!({ "currency": "GHS", "title": long, "allowedMethods": ["mobile_money"] }), "title"),
        (json!({ "currency": "GHS", "title": "t" }), "allowedMethods"),
        (json!({ "currency": "GHS", "title": "t", "allowedMethods": [] }), "allowedMethods"),
        (json!({ "currency": "GHS", "title": "t", "allowedMethods": ["cash"] }), "allowedMethods[0]"),
        // A method the currency can never be collected by (issue 15.12).
        (json!({ "currency": "GHS", "title": "t", "allowedMethods": ["bank_transfer"] }), "allowedMethods"),
        (json!({ "currency": "USD", "title": "t", "allowedMethods": ["mobile_money"] }), "allowedMethods"),
        (json!({ "currency": "ZAR", "title": "t", "allowedMethods": ["mobile_money"] }), "allowedMethods"),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "amount": "1.001" }),
            "amount",
        ),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "amount": "-5" }),
            "amount",
        ),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "redirectUrl": "javascript:alert(1)" }),
            "redirectUrl",
        ),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "expiresAt": "2020-01-01T00:00:00Z" }),
            "expiresAt",
        ),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "branding": { "accentColor": "red; }" } }),
            "branding.accentColor",
        ),
        (
            json!({ "currency": "GHS", "title": "t", "allowedMethods": ["mobile_money"], "customFields": [{ "name": "a" }, { "name": "a" }] }),
            "customFields[1].name",
        ),
        (
            json!({ "currency": "NGN", "title": "t", "allowedMethods": ["crypto"], "allowedCryptoAssets": ["DOGE"] }),
            "allowedCryptoAssets[0]",
        ),
    ];
    for (body, field) in cases {
        api.post(&url, key, body.clone()).await.expect_invalid(field);
    }
    // The boundaries themselves are accepted.
    let edge = json!({ "currency": "GHS", "title": "x".repeat(255), "allowedMethods": ["mobile_money"] });
    let p = create(&api, node, "/v1/payment-pages", edge).await;
    assert_eq!(p["title"].as_str().unwrap().len(), 255);

    let p = create(&api, node, "/v1/payment-pages", page_body("GHS", Some("120.00"))).await;
    assert!(p["id"].as_str().unwrap().starts_with("pp_"));
    assert_eq!(p["status"], "active");
    assert_eq!(p["amount"], "120.00");
    assert_eq!(p["paymentCount"], 0);
    assert_eq!(p["totalCollected"], "0.00");
    assert_eq!(p["allowedCryptoAssets"], Value::Null);
    assert_eq!(p["branding"]["businessName"], "Ama's Shop");
    assert_eq!(p["metadata"], json!({ "campaign": "harmattan" }));
    let id = p["id"].as_str().unwrap();
    assert_eq!(p["url"], node.sandbox_url(&format!("/pay/{id}")));
    assert_eq!(page(&api, node, id).await["id"], id);
    // Without the scope: forbidden. Unknown: not found.
    api.get(&node.sandbox_url("/v1/payment-pages/pp_nope"), key).await.expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/payment-links/pl_nope"), key).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn an_open_amount_page_paid_by_three_payers_spawns_three_child_links() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let p = create(&api, &node, "/v1/payment-pages", page_body("GHS", None)).await;
    assert_eq!(p["amount"], Value::Null, "an open amount has no amount");
    let page_id = p["id"].as_str().unwrap().to_string();

    // An open amount needs the payer's amount.
    let r = pay_no_amount(&api, &node, &page_id).await;
    r.expect_invalid("amount");

    let mut links = Vec::new();
    for amount in ["10.00", "20.00", "35.50"] {
        let (link_id, session) = pay_settled(&api, &node, &page_id, amount).await;
        assert_eq!(session["status"], "complete", "{session}");
        links.push(link_id);
    }
    links.sort();
    links.dedup();
    assert_eq!(links.len(), 3, "each payer gets their own link");
    let r = api
        .get(
            &node.sandbox_url(&format!("/v1/payment-links?parentType=payment_page&parentId={page_id}")),
            &node.creds.sandbox_key,
        )
        .await;
    r.expect(200);
    let children = r.body["data"].as_array().unwrap();
    assert_eq!(children.len(), 3);
    for child in children {
        assert_eq!(child["parentType"], "payment_page");
        assert_eq!(child["parentId"], page_id.as_str());
        assert_eq!(child["status"], "paid");
        assert_eq!(child["remaining"], "0.00");
        assert_eq!(child["overpaymentAmount"], Value::Null);
        assert!(child.get("sessions").is_none(), "sessions only on the single read");
    }
    let p = page(&api, &node, &page_id).await;
    assert_eq!(p["paymentCount"], 3);
    assert_eq!(p["totalCollected"], "65.50");
    assert_eq!(balance(&api, &node.sandbox, &node.creds.sandbox_key, "GHS").await, "65.50");

    // The money came through the collection path, with its events.
    let one = link(&api, &node, &links[0]).await;
    let collection_id = one["sessions"][0]["collectionId"].as_str().unwrap().to_string();
    let r = api
        .get(&node.sandbox_url(&format!("/v1/collections/{collection_id}")), &node.creds.sandbox_key)
        .await;
    r.expect(200);
    assert_eq!(r.body["collection"]["status"], "completed");
    assert_eq!(r.body["collection"]["metadata"]["paymentLinkId"], links[0].as_str());
    assert_eq!(r.body["collection"]["metadata"]["paymentPageId"], page_id.as_str());
    wait_for_events(
        &api,
        &node.sandbox,
        &node.creds.sandbox_key,
        &collection_id,
        &["collection.pending", "collection.completed"],
    )
    .await;
    node.stop_and_verify();
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_link_paid_in_two_partial_payments() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("GHS", Some("100.00"));
    body["email"] = json!("kofi@example.com");
    body["customerReference"] = json!("inv-partial-1");
    let l = create(&api, node, "/v1/payment-links", body).await;
    let id = l["id"].as_str().unwrap().to_string();
    assert_eq!(l["parentType"], Value::Null);
    assert_eq!(l["status"], "active");
    assert_eq!(l["remaining"], "100.00");
    assert_eq!(l["totalReceived"], "0.00");
    assert_eq!(l["sessions"], json!([]));
    let (_, page_html) = html(node, &id).await;
    assert!(
        page_html.contains("type=\"email\" autocomplete=\"email\" value=\"kofi@example.com\""),
        "the link's email is filled in for the payer"
    );

    let (_, s1) = pay_settled(&api, node, &id, "40.00").await;
    assert_eq!(s1["status"], "partial", "money arrived but the link is not paid yet");
    let l = link(&api, node, &id).await;
    assert_eq!(l["status"], "active");
    assert_eq!(l["totalReceived"], "40.00");
    assert_eq!(l["remaining"], "60.00");
    let (_, page_html) = html(node, &id).await;
    assert!(page_html.contains("remaining 60.00 GHS"), "the hosted page shows what is left");

    // Without an amount the payer pays what remains.
    let r = pay_no_amount(&api, node, &id).await;
    r.expect(201);
    assert_eq!(r.body["session"]["destinationAmount"], "60.00");
    let l = poll_until(
        &api,
        &node.sandbox_url(&format!("/v1/payment-links/{id}")),
        &node.creds.sandbox_key,
        |b| b["paymentLink"]["status"] == "paid",
    )
    .await["paymentLink"]
        .clone();
    assert_eq!(l["totalReceived"], "100.00");
    assert_eq!(l["remaining"], "0.00");
    assert_eq!(l["overpaymentAmount"], Value::Null);
    let sessions = l["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["destinationAmount"], "60.00", "newest first");
    // Exactly one session completes a paid link; the earlier payment is partial.
    assert_eq!(sessions[0]["status"], "complete");
    assert_eq!(sessions[1]["status"], "partial");

    // A paid link takes no more money, and says so.
    pay(&api, node, &id, "1.00").await.expect_error(400, "bad_request");
    let (status, page_html) = html(node, &id).await;
    assert_eq!(status, 200);
    assert!(page_html.contains("has been paid"));
    assert!(!page_html.contains("id=\"pay\""), "no pay button on a paid link");
    // A receipt: what was paid, in how many payments, to whom, when, and the completing reference.
    assert!(page_html.contains("id=\"receipt\""), "{page_html}");
    assert!(page_html.contains("<dd id=\"receipt-amount\">GHS 100.00</dd>"), "{page_html}");
    assert!(page_html.contains("<dd id=\"receipt-payments\">2</dd>"), "{page_html}");
    assert!(page_html.contains("<dd id=\"receipt-merchant\">Ama&#39;s Shop</dd>"), "{page_html}");
    let reference = format!("<dd id=\"receipt-reference\">{}</dd>", sessions[0]["id"].as_str().unwrap());
    assert!(page_html.contains(&reference), "the completing session is the reference: {page_html}");
    assert!(page_html.contains("<dd id=\"receipt-date\">"), "{page_html}");

    // Filters: email, customerReference, status.
    let key = &node.creds.sandbox_key;
    for query in [
        "email=kofi@example.com",
        "customerReference=inv-partial-1",
        "customerReference=inv-partial-1&status=paid",
    ] {
        let r = api.get(&node.sandbox_url(&format!("/v1/payment-links?{query}")), key).await;
        r.expect(200);
        let ids: Vec<&str> =
            r.body["data"].as_array().unwrap().iter().map(|l| l["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec![id.as_str()], "{query}");
    }
    let r = api
        .get(&node.sandbox_url("/v1/payment-links?customerReference=inv-partial-1&status=active"), key)
        .await;
    assert_eq!(r.body["data"], json!([]));
    api.get(&node.sandbox_url("/v1/payment-links?status=done"), key).await.expect_invalid("status");
    api.get(&node.sandbox_url("/v1/payment-links?parentType=invoice"), key)
        .await
        .expect_invalid("parentType");
}

#[tokio::test]
async fn paying_more_than_remains_is_an_overpayment() {
    let node = &SHARED.get();
    let api = Api::new();
    let l = create(&api, node, "/v1/payment-links", page_body("GHS", Some("50.00"))).await;
    let id = l["id"].as_str().unwrap().to_string();
    let (_, s) = pay_settled(&api, node, &id, "60.00").await;
    assert_eq!(s["status"], "complete");
    let l = link(&api, node, &id).await;
    assert_eq!(l["status"], "paid");
    assert_eq!(l["amount"], "50.00");
    assert_eq!(l["totalReceived"], "60.00");
    assert_eq!(l["remaining"], "0.00");
    assert_eq!(l["overpaymentAmount"], "10.00");
}

/// Payers racing on one link: whatever interleaving happens, the link's
/// totals equal the money the ledger credited, and a paid link has exactly
/// one complete session.
#[tokio::test]
async fn racing_payments_keep_the_link_consistent_with_the_ledger() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let l = create(&api, &node, "/v1/payment-links", page_body("KES", Some("100.00"))).await;
    let id = l["id"].as_str().unwrap().to_string();
    let body = json!({ "amount": "30.00", "method": "mobile_money", "network": "mpesa_ke", "phone": "+254712345678" });
    let url = node.sandbox_url(&format!("/pay/{id}/sessions"));
    let mut attempts = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (api, url, body) = (api.clone(), url.clone(), body.clone());
        attempts.spawn(async move { api.post_anonymous(&url, body).await });
    }
    let answers: Vec<Resp> = attempts.join_all().await;
    let started = answers.iter().filter(|r| r.status == 201).count();
    assert!(answers.iter().all(|r| r.status == 201 || (r.status == 400 && r.error() == "bad_request")));
    assert!(started >= 4, "at least enough attempts to pay it start: {started}");
    let l = poll_until(&api, &node.sandbox_url(&format!("/v1/payment-links/{id}")), key, |b| {
        b["paymentLink"]["sessions"].as_array().unwrap().iter().all(|s| s["status"] != "pending")
    })
    .await["paymentLink"]
        .clone();
    let sessions = l["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), started);
    let received: i128 = sessions
        .iter()
        .filter(|s| s["status"] == "complete" || s["status"] == "partial")
        .map(|s| minor(s["destinationAmount"].as_str().unwrap(), 2))
        .sum();
    assert_eq!(minor(l["totalReceived"].as_str().unwrap(), 2), received);
    assert_eq!(balance(&api, &node.sandbox, key, "KES").await, l["totalReceived"].as_str().unwrap());
    assert_eq!(l["status"], "paid");
    assert_eq!(sessions.iter().filter(|s| s["status"] == "complete").count(), 1);
    let over = received - 10_000;
    assert_eq!(
        l["overpaymentAmount"],
        if over > 0 { json!(format!("{}.{:02}", over / 100, over % 100)) } else { Value::Null }
    );
    node.stop_and_verify();
}

/// On live the operator confirms payments; an attempt nobody confirms in
/// time expires, and the link still takes a new one.
#[tokio::test]
async fn an_abandoned_attempt_expires() {
    let node = &SHARED.get();
    let api = Api::new();
    let r = api
        .post(&node.live_url("/v1/payment-links"), &node.creds.live_key, page_body("GHS", Some("12.00")))
        .await;
    let (_, id) = r.created("paymentLink", "pl_");
    assert!(r.body["paymentLink"]["url"].as_str().unwrap().starts_with(&node.live));
    let body = json!({ "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    let r = api.post_anonymous(&node.live_url(&format!("/pay/{id}/sessions")), body).await;
    r.expect(201);
    assert_eq!(r.body["session"]["status"], "pending");
    let url = node.live_url(&format!("/v1/payment-links/{id}"));
    let l = eventually("the attempt to expire", Duration::from_secs(10), || async {
        let r = api.get(&url, &node.creds.live_key).await;
        (r.body["paymentLink"]["sessions"][0]["status"] == "expired").then(|| r.body["paymentLink"].clone())
    })
    .await;
    assert_eq!(l["status"], "active");
    assert_eq!(l["totalReceived"], "0.00");
}

#[tokio::test]
async fn a_failed_attempt_then_a_retry_leaves_one_complete_and_one_failed_session() {
    let node = &SHARED.get();
    let api = Api::new();
    let p = create(&api, node, "/v1/payment-pages", page_body("GHS", None)).await;
    let page_id = p["id"].as_str().unwrap();
    let (link_id, failed) = pay_settled(&api, node, page_id, "25.51").await;
    assert_eq!(failed["status"], "failed");
    assert!(!failed["statusMessage"].as_str().unwrap().is_empty());
    let (again, ok) = pay_settled(&api, node, &link_id, "25.00").await;
    assert_eq!(again, link_id, "the retry stays on the payer's link");
    assert_eq!(ok["status"], "complete");
    let l = link(&api, node, &link_id).await;
    assert_eq!(l["status"], "paid");
    assert_eq!(l["amount"], "25.00");
    let statuses: Vec<&str> =
        l["sessions"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["complete", "failed"]);
    let p = page(&api, node, page_id).await;
    assert_eq!(p["paymentCount"], 1);
    assert_eq!(p["totalCollected"], "25.00");
}

#[tokio::test]
async fn expired_and_closed_links_and_pages_take_no_payment() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let mut body = page_body("GHS", Some("15.00"));
    body["expiresAt"] = json!(in_seconds(1));
    let l = create(&api, node, "/v1/payment-links", body).await;
    let id = l["id"].as_str().unwrap().to_string();
    assert_eq!(l["status"], "active");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let l = link(&api, node, &id).await;
    assert_eq!(l["status"], "expired");
    pay(&api, node, &id, "15.00").await.expect_error(400, "bad_request");
    let (_, page_html) = html(node, &id).await;
    assert!(page_html.contains("has expired"));
    let r = api.get(&node.sandbox_url("/v1/payment-links?status=expired&limit=100"), key).await;
    assert!(r.body["data"].as_array().unwrap().iter().any(|l| l["id"] == id.as_str()));

    // Closing.
    let l = create(&api, node, "/v1/payment-links", page_body("GHS", Some("15.00"))).await;
    let link_id = l["id"].as_str().unwrap().to_string();
    let r = api.post(&node.sandbox_url(&format!("/v1/payment-links/{link_id}/close")), key, json!({})).await;
    r.expect(200);
    assert_eq!(r.body["paymentLink"]["status"], "closed");
    api.post(&node.sandbox_url(&format!("/v1/payment-links/{link_id}/close")), key, json!({}))
        .await
        .expect(200);
    pay(&api, node, &link_id, "15.00").await.expect_error(400, "bad_request");
    assert!(html(node, &link_id).await.1.contains("is closed"));

    let p = create(&api, node, "/v1/payment-pages", page_body("GHS", None)).await;
    let page_id = p["id"].as_str().unwrap().to_string();
    let r = api.post(&node.sandbox_url(&format!("/v1/payment-pages/{page_id}/close")), key, json!({})).await;
    r.expect(200);
    assert_eq!(r.body["paymentPage"]["status"], "closed");
    pay(&api, node, &page_id, "5.00").await.expect_error(400, "bad_request");
    assert!(html(node, &page_id).await.1.contains("is closed"));
    let r = api.get(&node.sandbox_url("/v1/payment-pages?status=closed&limit=100"), key).await;
    let listed = r.body["data"].as_array().unwrap();
    assert!(listed.iter().any(|p| p["id"] == page_id.as_str()));
    assert!(listed.iter().all(|p| p["status"] == "closed"));
    api.get(&node.sandbox_url("/v1/payment-pages?status=open"), key).await.expect_invalid("status");
    api.post(&node.sandbox_url("/v1/payment-pages/pp_nope/close"), key, json!({}))
        .await
        .expect_error(404, "not_found");
    let (status, text) = html(node, "pl_nope").await;
    assert_eq!(status, 404);
    assert!(text.contains("does not exist"));
}

/// Each close path closes only its own kind: a link's id on the pages path
/// (or a page's on the links path) is not found and closes nothing.
#[tokio::test]
async fn closing_through_the_other_kinds_path_closes_nothing() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let l = create(&api, node, "/v1/payment-links", page_body("GHS", Some("15.00"))).await;
    let link_id = l["id"].as_str().unwrap().to_string();
    api.post(&node.sandbox_url(&format!("/v1/payment-pages/{link_id}/close")), key, json!({}))
        .await
        .expect_error(404, "not_found");
    assert_eq!(link(&api, node, &link_id).await["status"], "active");

    let p = create(&api, node, "/v1/payment-pages", page_body("GHS", None)).await;
    let page_id = p["id"].as_str().unwrap().to_string();
    api.post(&node.sandbox_url(&format!("/v1/payment-links/{page_id}/close")), key, json!({}))
        .await
        .expect_error(404, "not_found");
    assert_eq!(page(&api, node, &page_id).await["status"], "active");
}

#[tokio::test]
async fn the_hosted_page_shows_branding_fields_and_the_methods_the_currency_allows() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("GHS", None);
    body["title"] = json!("Scarves <b>& more</b>");
    body["customFields"] =
        json!([{ "name": "size", "type": "text", "required": true, "label": "Scarf size" }]);
    let p = create(&api, node, "/v1/payment-pages", body).await;
    let id = p["id"].as_str().unwrap().to_string();
    let (status, page_html) = html(node, &id).await;
    assert_eq!(status, 200);
    assert!(page_html.contains("Scarves &#60;b&#62;&#38; more&#60;/b&#62;"), "text is escaped: {page_html}");
    assert!(!page_html.contains("<b>"), "{page_html}");
    assert!(page_html.contains("Ama&#39;s Shop"));
    assert!(page_html.contains("--accent:#0a7d4f"));
    assert!(page_html.contains("Scarf size"));
    assert!(page_html.contains("value=\"mobile_money\""));
    assert!(!page_html.contains("value=\"bank_transfer\""), "GHS stays on mobile money");
    assert!(page_html.contains("id=\"amount\""));
    assert!(page_html.contains("name=\"viewport\""));
    // The required custom field is enforced, and GHS refuses other methods.
    let url = node.sandbox_url(&format!("/pay/{id}/sessions"));
    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "5.00", "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE }),
        )
        .await;
    r.expect_invalid("customFields.size");
    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "5.00", "method": "bank_transfer", "customFields": { "size": "M" } }),
        )
        .await;
    r.expect_invalid("method");
    // A Kenyan number on a Ghanaian network is refused, naming Ghana's form.
    let r = api
        .post_anonymous(&url, json!({ "amount": "5.00", "method": "mobile_money", "network": "mtn_gh", "phone": "+254712345678", "customFields": { "size": "M" } }))
        .await;
    r.expect_invalid("phone");
    assert!(r.body["details"]["reason"].as_str().unwrap().contains("Ghana"), "{}", r.text);
    let r = api
        .post_anonymous(&url, json!({ "amount": "5.00", "method": "mobile_money", "network": "mpesa_ke", "phone": MTN_PHONE, "customFields": { "size": "M" } }))
        .await;
    r.expect_invalid("network");
    let r = api
        .post_anonymous(&url, json!({ "amount": "5.00", "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE, "customFields": { "size": "M" } }))
        .await;
    r.expect(201);
    let child = link(&api, node, r.body["paymentLink"]["id"].as_str().unwrap()).await;
    assert_eq!(child["customFieldValues"], json!({ "size": "M" }));
    assert!(r.body["paymentLink"].get("metadata").is_none(), "the payer does not see merchant metadata");
}

#[tokio::test]
async fn bank_transfer_and_stablecoin_sessions_give_instructions() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("NGN", Some("5000.00"));
    body["allowedMethods"] = json!(["bank_transfer", "crypto"]);
    body["allowedCryptoAssets"] = json!(["USDC"]);
    let l = create(&api, node, "/v1/payment-links", body).await;
    let id = l["id"].as_str().unwrap().to_string();
    let (status, page_html) = html(node, &id).await;
    assert_eq!(status, 200);
    assert!(page_html.contains("value=\"bank_transfer\"") && page_html.contains("value=\"crypto\""));
    assert!(!page_html.contains("USDT"), "only the allowed assets");

    let url = node.sandbox_url(&format!("/pay/{id}/sessions"));
    let r = api.post_anonymous(&url, json!({ "amount": "1000.00", "method": "bank_transfer" })).await;
    r.expect(201);
    let s = &r.body["session"];
    assert_eq!(s["method"], "bank_transfer");
    assert_eq!(s["code"], "bank_ng");
    assert_eq!(s["instructions"]["type"], "bank_transfer");
    assert_eq!(s["instructions"]["accountNumber"].as_str().unwrap().len(), 10);
    assert_eq!(s["instructions"]["reference"], s["id"]);

    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "1000.00", "method": "crypto", "asset": "USDT", "chain": "tron" }),
        )
        .await;
    r.expect_invalid("chain");
    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "1000.00", "method": "crypto", "asset": "USDC", "chain": "base" }),
        )
        .await;
    r.expect(201);
    let s = &r.body["session"];
    assert_eq!(s["chain"], "base");
    assert_eq!(s["originCurrency"], "USDC");
    assert_eq!(s["destinationCurrency"], "NGN");
    assert_eq!(s["destinationAmount"], "1000.00");
    // The payer's USDC is sold at the all-in rate (NGN per USDC, spread
    // off), and the USDC amount is rounded up: never in the payer's favour.
    let origin = minor(s["originAmount"].as_str().unwrap(), 6);
    assert_eq!(s["rate"], "1534.5", "1550 NGN per USD less 1 %: {s}");
    // origin µUSDC × 1534.5 NGN ≥ 1000 NGN, i.e. origin × 15345 ≥ 10^10.
    let covers = |micro_usdc: i128| micro_usdc * 15_345 >= 10_000_000_000;
    assert!(covers(origin) && !covers(origin - 1), "the smallest USDC amount that covers 1000 NGN: {s}");
    assert_eq!(s["originAmount"], "0.651679");
    assert!(s["instructions"]["address"].as_str().unwrap().starts_with("0x"));
    // Both land on the NGN balance once the sandbox settles them.
    let l = poll_until(
        &api,
        &node.sandbox_url(&format!("/v1/payment-links/{id}")),
        &node.creds.sandbox_key,
        |b| b["paymentLink"]["totalReceived"] == "2000.00",
    )
    .await;
    assert_eq!(l["paymentLink"]["remaining"], "3000.00");
}

/// Payers have no key, so attempts are limited per caller address.
#[tokio::test]
async fn payment_attempts_are_rate_limited_per_address() {
    let node = Node::start(Options { rate_limit: Some(5), ..Options::default() });
    let api = Api::new();
    let l = create(&api, &node, "/v1/payment-links", page_body("GHS", Some("500.00"))).await;
    let id = l["id"].as_str().unwrap().to_string();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let r = pay(&api, &node, &id, "1.00").await;
        if r.status == 429 {
            assert_eq!(r.error(), "rate_limited");
            assert!(r.body["details"]["retryAfter"].as_u64().is_some(), "{}", r.text);
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 5, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 3, "{statuses:?}");
}

/// A link takes a bounded number of attempts (`checkout_attempts_per_link`);
/// the next is refused saying so, and the link still reads.
#[tokio::test]
async fn a_link_takes_a_bounded_number_of_attempts() {
    let config =
        EXAMPLE_CONFIG.replace("# checkout_attempts_per_link = 1000", "checkout_attempts_per_link = 3");
    assert_ne!(config, EXAMPLE_CONFIG, "the example configuration names the setting");
    let node = Node::start(Options { config: Some(config), ..Options::unthrottled() });
    let api = Api::new();
    let l = create(&api, &node, "/v1/payment-links", page_body("GHS", Some("500.00"))).await;
    let id = l["id"].as_str().unwrap().to_string();
    for _ in 0..3 {
        pay(&api, &node, &id, "1.00").await.expect(201);
    }
    let r = pay(&api, &node, &id, "1.00").await;
    r.expect(400);
    assert_eq!(r.error(), "bad_request");
    assert!(r.body["message"].as_str().unwrap().contains("3 payment attempts"), "{}", r.text);
    assert_eq!(r.body["details"]["limit"], 3, "{}", r.text);
    assert_eq!(link(&api, &node, &id).await["sessions"].as_array().unwrap().len(), 3);
}

/// One payer address makes a bounded number of attempts on one link
/// (`checkout_attempts_per_address` an hour): the next gets `429
/// rate_limited` with the limit and when to come back, while another
/// address still pays, and other links are not affected.
#[tokio::test]
async fn a_payer_address_makes_a_bounded_number_of_attempts_on_a_link() {
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_CHECKOUT_ATTEMPTS_PER_ADDRESS", "3")]);
    let api = Api::new();
    let id = |l: Value| l["id"].as_str().unwrap().to_string();
    let first = id(create(&api, &node, "/v1/payment-links", page_body("GHS", Some("500.00"))).await);
    let second = id(create(&api, &node, "/v1/payment-links", page_body("GHS", Some("500.00"))).await);
    for _ in 0..3 {
        pay(&api, &node, &first, "1.00").await.expect(201);
    }
    let r = pay(&api, &node, &first, "1.00").await;
    r.expect_error(429, "rate_limited");
    assert_eq!(r.body["details"]["limit"], 3, "{}", r.text);
    let retry_after = r.body["details"]["retryAfter"].as_u64().unwrap();
    assert!((3_500..=3_600).contains(&retry_after), "{}", r.text);
    pay(&api, &node, &second, "1.00").await.expect(201);
    let elsewhere = Api {
        client: reqwest::Client::builder()
            .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
            .no_proxy()
            .build()
            .unwrap(),
    };
    pay(&elsewhere, &node, &first, "1.00").await.expect(201);
    assert_eq!(link(&api, &node, &first).await["sessions"].as_array().unwrap().len(), 4);
}

/// Behind a proxy or a domain, the operator names the address payers use.
#[tokio::test]
async fn hosted_urls_use_the_public_address_when_set() {
    let node = Node::start_with_env(
        Options::unthrottled(),
        &[("SIKA_SANDBOX_PUBLIC_URL", "https://pay.example.test/")],
    );
    let api = Api::new();
    let p = create(&api, &node, "/v1/payment-pages", page_body("GHS", None)).await;
    let id = p["id"].as_str().unwrap();
    assert_eq!(p["url"], format!("https://pay.example.test/pay/{id}"));
    // The live stack keeps its listener's address.
    let r = api
        .post(&node.live_url("/v1/payment-links"), &node.creds.live_key, page_body("GHS", Some("5.00")))
        .await;
    r.expect(201);
    assert!(r.body["paymentLink"]["url"].as_str().unwrap().starts_with(&format!("{}/pay/pl_", node.live)));
}

/// The data the page's script reads (`#checkout-data`).
fn checkout_data(page_html: &str) -> Value {
    let start =
        page_html.find("id=\"checkout-data\">").expect("checkout data") + "id=\"checkout-data\">".len();
    let end = start + page_html[start..].find("</script>").expect("its end");
    serde_json::from_str(&page_html[start..end]).expect("JSON")
}

/// Amounts with thousands separators and the currency's decimals, on the
/// Pay button too; a test-mode banner on sandbox pages only.
#[tokio::test]
async fn the_hosted_page_shows_grouped_amounts_and_the_test_mode_banner() {
    let node = &SHARED.get();
    let api = Api::new();
    let l = create(&api, node, "/v1/payment-links", page_body("GHS", Some("1250.00"))).await;
    let (_, page_html) = html(node, l["id"].as_str().unwrap()).await;
    assert!(page_html.contains("<span class=\"currency\">GHS</span> 1,250.00</p>"), "{page_html}");
    assert!(
        page_html.contains("<button id=\"pay\" type=\"submit\">Pay GHS 1,250.00</button>"),
        "{page_html}"
    );
    assert!(page_html.contains("value=\"1250.00\""), "the field keeps the digits the API takes");
    assert!(page_html.contains("Test mode \u{2014} no real money moves"), "a sandbox page says so");

    let mut body = page_body("XOF", Some("2500"));
    body["branding"]["businessName"] = json!("Boutique Dakar");
    let l = create(&api, node, "/v1/payment-links", body).await;
    let (_, page_html) = html(node, l["id"].as_str().unwrap()).await;
    assert!(page_html.contains(">Pay XOF 2,500</button>"), "XOF has no decimals: {page_html}");
    assert_eq!(checkout_data(&page_html)["scale"], 0);

    // Live pages take real money: no banner.
    let r = api
        .post(&node.live_url("/v1/payment-links"), &node.creds.live_key, page_body("GHS", Some("1250.00")))
        .await;
    r.expect(201);
    let url = r.body["paymentLink"]["url"].as_str().unwrap().to_string();
    let live = reqwest::Client::new().get(&url).send().await.unwrap().text().await.unwrap();
    assert!(live.contains(">Pay GHS 1,250.00</button>"), "a live GHS link renders its form: {live}");
    assert!(!live.contains("id=\"test-mode\"") && !live.contains("Test mode"), "{live}");
}

/// The API's errors name fields for developers; the page has a sentence
/// for each, and the reasons the script recognises are the API's own.
#[tokio::test]
async fn the_hosted_page_words_errors_for_the_payer() {
    let node = &SHARED.get();
    let api = Api::new();
    let p = create(&api, node, "/v1/payment-pages", page_body("GHS", None)).await;
    let id = p["id"].as_str().unwrap();
    let (_, page_html) = html(node, id).await;
    let messages = checkout_data(&page_html)["messages"].clone();
    assert_eq!(messages["amountDecimals"], "Enter an amount with at most 2 decimals.");
    assert_eq!(messages["phone"], "Enter your {country} wallet number, like {example}.");
    for sentence in messages.as_object().unwrap().values() {
        let sentence = sentence.as_str().unwrap();
        assert!(sentence.ends_with('.') && !sentence.contains(':'), "a payer's sentence: {sentence:?}");
    }
    // What the script keys on: `details.reason` of the API's answers.
    let r = pay(&api, node, id, "12.345").await;
    r.expect_invalid("amount");
    assert!(r.body["details"]["reason"].as_str().unwrap().contains("fraction digits"), "{}", r.text);
    let r = pay(&api, node, id, "20000.00").await;
    r.expect_invalid("amount");
    let reason = r.body["details"]["reason"].as_str().unwrap();
    let (method, range) = reason.split_once(" accepts ").unwrap_or_else(|| panic!("{reason}"));
    assert!(
        !method.is_empty() && range.split(' ').count() == 4,
        "'<method> accepts <min> to <max> <currency>': {reason}"
    );
    let (_, xof) = html(
        node,
        create(&api, node, "/v1/payment-pages", page_body("XOF", None)).await["id"].as_str().unwrap(),
    )
    .await;
    assert_eq!(checkout_data(&xof)["messages"]["amountDecimals"], "Enter a whole amount, with no decimals.");
}

/// A page whose currency no offered method can take says so, and offers no Pay button.
#[tokio::test]
async fn a_page_with_no_method_for_its_currency_refuses_to_take_payment() {
    let node = &SHARED.get();
    let api = Api::new();
    // Live XOF by bank transfer: the catalog has the rail, the operator
    // configured no account to receive it, so nothing can be offered.
    let mut body = page_body("XOF", Some("20000"));
    body["allowedMethods"] = json!(["bank_transfer"]);
    let r = api.post(&node.live_url("/v1/payment-pages"), &node.creds.live_key, body).await;
    let (_, id) = r.created("paymentPage", "pp_");
    let page_html = reqwest::get(node.live_url(&format!("/pay/{id}"))).await.unwrap().text().await.unwrap();
    assert!(page_html.contains("id=\"no-methods\""), "{page_html}");
    assert!(page_html.contains("Ama&#39;s Shop cannot take payments in XOF right now"), "{page_html}");
    assert!(!page_html.contains("id=\"pay\"") && !page_html.contains("id=\"checkout\""), "{page_html}");
}

/// A suspended merchant's pages and links stop taking payments (issue
/// 15.21): the payer sees why, with no form, and an attempt is refused;
/// reinstated, they take payments again.
#[tokio::test]
async fn a_suspended_merchant_takes_no_payments() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let link = create(&api, &node, "/v1/payment-links", page_body("GHS", Some("25.00"))).await;
    let id = link["id"].as_str().unwrap().to_string();
    let org = node.creds.organization_id.clone();
    let admin = node.creds.admin_token.clone();
    let action = |what: &str| node.admin_url(&format!("/admin/v1/organizations/{org}/{what}"));
    api.post(&action("suspend"), &admin, json!({})).await.expect(200);
    let (status, page_html) = html(&node, &id).await;
    assert_eq!(status, 200);
    assert!(page_html.contains("This merchant is not taking payments right now"), "{page_html}");
    assert!(!page_html.contains("id=\"pay\""), "no Pay button: {page_html}");
    pay(&api, &node, &id, "25.00").await.expect_error(403, "organization_suspended");
    api.post(&action("reinstate"), &admin, json!({})).await.expect(200);
    assert!(html(&node, &id).await.1.contains("id=\"pay\""));
    pay(&api, &node, &id, "25.00").await.expect(201);
}

/// Issue 16.5: an attempt is a collection and obeys the method's limits as
/// `POST /v1/collections` does, whoever starts it: 9,999,999,999,999,999.99
/// NGN on a 5,000 NGN link was accepted as a pending collection.
#[tokio::test]
async fn attempts_obey_the_methods_limits() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("NGN", Some("5000.00"));
    body["allowedMethods"] = json!(["bank_transfer", "crypto"]);
    let l = create(&api, node, "/v1/payment-links", body).await;
    let url = node.sandbox_url(&format!("/pay/{}/sessions", l["id"].as_str().unwrap()));
    for amount in ["9999999999999999.99", "10000000.01", "99.99"] {
        let r = api.post_anonymous(&url, json!({ "amount": amount, "method": "bank_transfer" })).await;
        r.expect_invalid("amount");
        assert!(r.text.contains("accepts"), "{}", r.text);
    }
    let r = api
        .post_anonymous(&url, json!({ "amount": "9999999999999.99", "method": "crypto", "asset": "USDC" }))
        .await;
    r.expect_invalid("amount");
    api.post_anonymous(&url, json!({ "amount": "5000.00", "method": "bank_transfer" })).await.expect(201);
}

/// Issue 16.6: hosted pages run only their own script and style (named by
/// hash in the Content-Security-Policy, no `unsafe-inline`), are never
/// sniffed as another type, and send no referrer.
#[tokio::test]
async fn hosted_pages_send_a_strict_content_security_policy() {
    let node = &SHARED.get();
    let api = Api::new();
    let l = create(&api, node, "/v1/payment-links", page_body("GHS", Some("10.00"))).await;
    for id in [l["id"].as_str().unwrap(), "pl_missing"] {
        let r = reqwest::Client::new().get(node.sandbox_url(&format!("/pay/{id}"))).send().await.unwrap();
        let header = |name: &str| r.headers().get(name).map(|v| v.to_str().unwrap().to_string());
        let policy = header("content-security-policy").expect("a Content-Security-Policy");
        assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "{policy}");
        for directive in
            ["default-src 'none'", "script-src 'sha256-", "style-src 'sha256-", "frame-ancestors 'none'"]
        {
            assert!(policy.contains(directive), "{directive} missing from {policy}");
        }
        assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
        assert_eq!(header("referrer-policy").as_deref(), Some("no-referrer"));
    }
}

/// What every read of a link shows of its money: the merchant's single
/// read and list item (`totalReceived`, `remaining`, `status`), and the
/// payer's page.
struct Reads {
    single: Value,
    listed: Value,
    page: String,
}

async fn reads(api: &Api, node: &Node, id: &str, reference: &str) -> Reads {
    let single = link(api, node, id).await;
    let r = api
        .get(
            &node.sandbox_url(&format!("/v1/payment-links?customerReference={reference}")),
            &node.creds.sandbox_key,
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "{}", r.text);
    let listed = r.body["data"][0].clone();
    let (status, page) = html(node, id).await;
    assert_eq!(status, 200);
    Reads { single, listed, page }
}

/// Issue 16.4: a link's totals are kept as its attempts settle (the
/// ledger's tally of the link), and each read shows them after every
/// payment: the payer's page, the merchant's list and the single read. A
/// failed attempt counts nothing.
#[tokio::test]
async fn a_links_totals_follow_each_partial_payment_on_every_read() {
    let node = &SHARED.get();
    let api = Api::new();
    let reference = "inv-every-read";
    let mut body = page_body("GHS", Some("100.00"));
    body["customerReference"] = json!(reference);
    let id = create(&api, node, "/v1/payment-links", body).await["id"].as_str().unwrap().to_string();
    let steps = [
        ("30.00", "partial", "30.00", "70.00", "active"),
        ("25.51", "failed", "30.00", "70.00", "active"),
        ("70.00", "complete", "100.00", "0.00", "paid"),
    ];
    for (n, (amount, session_status, received, remaining, status)) in steps.into_iter().enumerate() {
        let (_, session) = pay_settled(&api, node, &id, amount).await;
        assert_eq!(session["status"], session_status, "{session}");
        let Reads { single, listed, page } = reads(&api, node, &id, reference).await;
        for (read, shown) in [("single", &single), ("list", &listed)] {
            let totals = (&shown["totalReceived"], &shown["remaining"], &shown["status"]);
            assert_eq!(
                totals,
                (&json!(received), &json!(remaining), &json!(status)),
                "{read} after {amount}"
            );
        }
        assert_eq!(single["sessions"].as_array().unwrap().len(), n + 1);
        assert!(listed.get("sessions").is_none(), "sessions only on the single read");
        if status == "paid" {
            assert!(page.contains("<dd id=\"receipt-amount\">GHS 100.00</dd>"), "{page}");
            assert!(page.contains("<dd id=\"receipt-payments\">2</dd>"), "{page}");
            let reference = format!("<dd id=\"receipt-reference\">{}</dd>", session["id"].as_str().unwrap());
            assert!(page.contains(&reference), "the completing payment is the reference: {page}");
        } else {
            let shown = format!("Already paid {received} GHS; remaining {remaining} GHS");
            assert!(page.contains(&shown), "the page after {amount}: {page}");
        }
    }
    let single = link(&api, node, &id).await;
    let statuses: Vec<&str> =
        single["sessions"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["complete", "failed", "partial"]);
}

/// Issue 16.4: the payer's page and the merchant's list read a link's
/// tally, not its attempts, so many failed attempts change nothing they
/// show; the single read still lists every attempt. How long each read
/// takes is the probe's to report (`benches/probes/link_reads.py`), not a
/// test's to assert.
#[tokio::test]
async fn a_link_after_many_failed_attempts_still_reads_its_totals() {
    const FAILED: usize = 120;
    let node =
        Node::start_with_env(Options::unthrottled(), &[("SIKA_CHECKOUT_ATTEMPTS_PER_ADDRESS", "1000")]);
    let api = Api::new();
    let reference = "inv-many-attempts";
    let mut body = page_body("GHS", Some("100.00"));
    body["customerReference"] = json!(reference);
    let id = create(&api, &node, "/v1/payment-links", body).await["id"].as_str().unwrap().to_string();
    for _ in 0..FAILED {
        pay(&api, &node, &id, "2.51").await.expect(201);
    }
    let (_, paid) = pay_settled(&api, &node, &id, "40.00").await;
    assert_eq!(paid["status"], "partial");
    let url = node.sandbox_url(&format!("/v1/payment-links/{id}"));
    let single = poll_until(&api, &url, &node.creds.sandbox_key, |b| {
        b["paymentLink"]["sessions"].as_array().unwrap().iter().all(|s| s["status"] != "pending")
    })
    .await["paymentLink"]
        .clone();
    let sessions = single["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), FAILED + 1, "the single read lists every attempt");
    assert_eq!(sessions.iter().filter(|s| s["status"] == "failed").count(), FAILED);
    let Reads { single, listed, page } = reads(&api, &node, &id, reference).await;
    for shown in [&single, &listed] {
        assert_eq!((&shown["totalReceived"], &shown["remaining"]), (&json!("40.00"), &json!("60.00")));
        assert_eq!(shown["status"], "active");
    }
    assert!(page.contains("Already paid 40.00 GHS; remaining 60.00 GHS"), "{page}");
    // The payer's own view of the attempt reads it alone.
    let follow = api
        .call(
            "GET",
            &node.sandbox_url(&format!("/pay/{id}/sessions/{}", paid["id"].as_str().unwrap())),
            None,
            None,
        )
        .await;
    follow.expect(200);
    assert_eq!(follow.body["paymentLink"]["totalReceived"], "40.00");
    assert_eq!(follow.body["session"]["status"], "partial");
    node.stop_and_verify();
}

/// `sika verify` recomputes each link's tally from its attempts'
/// collections and names a link whose stored tally no longer agrees.
#[tokio::test]
async fn sika_verify_names_a_link_whose_totals_disagree_with_its_payments() {
    use redb::ReadableTable;
    use sika_engine::storage::{RECORDS, decode, encode, keys};

    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let id = create(&api, &node, "/v1/payment-links", page_body("GHS", Some("50.00"))).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    pay_settled(&api, &node, &id, "20.00").await;
    node.stop();
    let path = node.data_dir().join("sandbox.redb");
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            let key = keys::collection_tally(&id);
            let mut tally: sika_engine::TallyRecord =
                decode(table.get(key.as_slice()).unwrap().expect("the link's tally").value()).unwrap();
            assert_eq!((tally.received_minor, tally.completed_count), (2_000, 1));
            tally.received_minor = 5_000;
            table.insert(key.as_slice(), encode(&tally).as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["verify", "--data-dir"])
        .arg(node.data_dir())
        .env_remove("SIKA_DATA_DIR")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&format!("collection tally {id} counts 5000 received in 1")), "{said}");
}

/// A live page's HTML and a payer's attempt on it (`/pay/{id}/sessions`).
async fn live_page(api: &Api, node: &Node, path: &str, body: Value) -> (String, String) {
    let kind = if path.contains("pages") { "paymentPage" } else { "paymentLink" };
    let prefix = if path.contains("pages") { "pp_" } else { "pl_" };
    let r = api.post(&node.live_url(path), &node.creds.live_key, body).await;
    let (_, id) = r.created(kind, prefix);
    let html = reqwest::get(node.live_url(&format!("/pay/{id}"))).await.unwrap().text().await.unwrap();
    (id, html)
}

/// Issue 30.1: a live node with no provider connector has nothing that
/// prompts a payer's phone. Its mobile-money checkout offers only the
/// networks the operator gave a merchant number
/// (`[[live.receiving.mobile_money]]`; the example configuration has one,
/// for MTN Ghana), names that number, its holder and the reference, and
/// never says "approve the prompt"; the sandbox, which simulates the
/// prompt, still does.
#[tokio::test]
async fn a_live_mobile_money_payer_is_given_the_merchant_number_not_a_prompt() {
    let node = &SHARED.get();
    let api = Api::new();
    let (id, page_html) = live_page(&api, node, "/v1/payment-links", page_body("GHS", Some("25.00"))).await;
    assert!(page_html.contains("<option value=\"mtn_gh\""), "{page_html}");
    for unrouted in ["telecel_gh", "airteltigo_gh"] {
        assert!(!page_html.contains(unrouted), "{unrouted} has no merchant number on live: {page_html}");
    }
    assert!(!page_html.to_lowercase().contains("prompt"), "no prompt is promised on live: {page_html}");
    assert!(page_html.contains("You will get the merchant's number to pay to, with a reference."));

    let url = node.live_url(&format!("/pay/{id}/sessions"));
    let attempt = |network: &str| json!({ "amount": "25.00", "method": "mobile_money", "network": network, "phone": "024 123 4567" });
    api.post_anonymous(&url, attempt("telecel_gh")).await.expect_invalid("network");
    let r = api.post_anonymous(&url, attempt("mtn_gh")).await;
    r.expect(201);
    let session = &r.body["session"];
    let instructions = &session["instructions"];
    assert_eq!(instructions["type"], "mobile_money", "{session}");
    assert_eq!(instructions["merchantNumber"], "024000111", "the configured number: {session}");
    assert_eq!(instructions["merchantName"], "Example Merchant");
    assert_eq!(instructions["network"], "MTN Mobile Money");
    assert_eq!(instructions["reference"], session["id"]);
    assert_eq!((&instructions["amount"], &instructions["currency"]), (&json!("25.00"), &json!("GHS")));
    let waiting = r.body["payerMessage"].as_str().unwrap();
    assert_eq!(waiting, "Waiting for your mobile money payment to arrive\u{2026}");
    // The merchant sees the same instructions, and the payer's number in full.
    let r = api.get(&node.live_url(&format!("/v1/payment-links/{id}")), &node.creds.live_key).await;
    r.expect(200);
    assert_eq!(r.body["paymentLink"]["sessions"][0]["instructions"], *instructions);
    let collection = session["collectionId"].as_str().unwrap();
    let r = api.get(&node.live_url(&format!("/v1/collections/{collection}")), &node.creds.live_key).await;
    r.expect(200);
    assert_eq!(
        r.body["collection"]["accountNumber"], MTN_PHONE,
        "024 123 4567 in Ghana's international form"
    );

    // NGN: OPay and PalmPay have no merchant number, so only the bank is offered.
    let mut body = page_body("NGN", Some("5000.00"));
    body["allowedMethods"] = json!(["mobile_money", "bank_transfer"]);
    let (_, page_html) = live_page(&api, node, "/v1/payment-pages", body).await;
    assert!(page_html.contains("value=\"bank_transfer\""), "{page_html}");
    for unrouted in ["value=\"mobile_money\"", "opay_ng", "palmpay_ng"] {
        assert!(!page_html.contains(unrouted), "{unrouted} is not offered on live: {page_html}");
    }

    // The sandbox simulates the prompt, and says so.
    let sandbox = create(&api, node, "/v1/payment-links", page_body("GHS", Some("25.00"))).await;
    let (_, sandbox_html) = html(node, sandbox["id"].as_str().unwrap()).await;
    assert!(sandbox_html.contains("You will get a prompt on your phone to approve."), "{sandbox_html}");
    let r = pay(&api, node, sandbox["id"].as_str().unwrap(), "25.00").await;
    r.expect(201);
    assert_eq!(r.body["session"]["instructions"], Value::Null);
    assert!(r.body["payerMessage"].as_str().unwrap().starts_with("Approve the prompt on your phone"));
}

/// `sika config check` reads `[[live.receiving.mobile_money]]` as a
/// receiving route and names each bad key.
#[test]
fn sika_config_check_names_a_bad_merchant_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sika.toml");
    let check = |config: &str| {
        std::fs::write(&path, config).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
            .args(["config", "check", "--config"])
            .arg(&path)
            .env_remove("SIKA_CONFIG")
            .output()
            .unwrap()
    };
    let good = "[[live.receiving.mobile_money]]\nmethod = \"mpesa_ke\"\nmerchant_number = \"174379\"\nmerchant_name = \"Acme KE\"\n";
    let out = check(good);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = "[[live.receiving.mobile_money]]\nmethod = \"bank_ng\"\nmerchant_number = \"1\"\nmerchant_name = \"A\"\n\
               [[live.receiving.mobile_money]]\nmethod = \"mpesa_ke\"\nmerchant_number = \" \"\nmerchant_name = \"A\"\n";
    let out = check(bad);
    let problems = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{problems}");
    assert!(
        problems.contains("live.receiving.mobile_money[0].method: not a mobile-money method code"),
        "{problems}"
    );
    assert!(problems.contains("live.receiving.mobile_money[1]: merchant_number"), "{problems}");
}

/// Issue 30.2: the sandbox gave `0x…` for USDT on Tron. Each chain's
/// address is of its own form: base58check `T…` on Tron, base58 on Solana,
/// EIP-55 on EVM chains, in checkout sessions and in orders alike.
#[tokio::test]
async fn sandbox_deposit_addresses_take_each_chains_own_form() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("NGN", Some("5000.00"));
    body["allowedMethods"] = json!(["crypto"]);
    let l = create(&api, node, "/v1/payment-links", body).await;
    let url = node.sandbox_url(&format!("/pay/{}/sessions", l["id"].as_str().unwrap()));
    let address = |asset: &str, chain: &str| {
        let body = json!({ "amount": "1000.00", "method": "crypto", "asset": asset, "chain": chain });
        let (api, url) = (&api, &url);
        async move {
            let r = api.post_anonymous(url, body).await;
            r.expect(201);
            r.body["session"]["instructions"]["address"].as_str().unwrap().to_string()
        }
    };
    assert_tron(&address("USDT", "tron").await);
    assert_solana(&address("USDC", "solana").await);
    assert_eip55(&address("USDC", "base").await);
    assert_eip55(&address("USDT", "ethereum").await);

    // Orders name the chain by its testnet on the sandbox: same forms.
    for (asset, chain, check) in [
        ("USDT", "nile", assert_tron as fn(&str)),
        ("USDT", "tron", assert_tron),
        ("USDC", "solana-devnet", assert_solana),
        ("USDC", "base", assert_eip55),
    ] {
        let order = json!({
            "from": { "method": "crypto", "currency": asset, "amount": "20.00", "chain": chain },
            "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
            "externalReference": format!("chain-form-{asset}-{chain}"),
        });
        let r = api.post(&node.sandbox_url("/v1/orders"), &node.creds.sandbox_key, order).await;
        r.expect(201);
        check(r.body["order"]["depositInstructions"]["address"].as_str().unwrap());
    }
}

fn assert_tron(address: &str) {
    let payload = bs58::decode(address).with_check(None).into_vec();
    let payload = payload.unwrap_or_else(|e| panic!("{address} is not base58check: {e}"));
    assert!(address.starts_with('T') && address.len() == 34, "{address}");
    assert_eq!((payload.len(), payload[0]), (21, 0x41), "Tron's mainnet prefix: {address}");
}

fn assert_solana(address: &str) {
    let key = bs58::decode(address).into_vec().unwrap_or_else(|e| panic!("{address} is not base58: {e}"));
    assert_eq!(key.len(), 32, "an ed25519 public key: {address}");
}

/// EIP-55: each hex letter is upper case where the Keccak-256 of the
/// lower-case address has a nibble of 8 or more.
fn assert_eip55(address: &str) {
    use sha3::Digest as _;
    let hex = address.strip_prefix("0x").unwrap_or_else(|| panic!("{address} starts with 0x"));
    assert_eq!(hex.len(), 40, "{address}");
    let lower = hex.to_ascii_lowercase();
    let hash = sha3::Keccak256::digest(lower.as_bytes());
    let expected: String = lower
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let nibble = (hash[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0xf;
            if nibble >= 8 { c.to_ascii_uppercase() } else { c }
        })
        .collect();
    assert_eq!(hex, expected, "EIP-55 checksum of {address}");
}

/// Issue 30.4: the payer types their number as their country writes it,
/// and an amount as the page writes amounts. The page's help follows the
/// network's country (Kenya's, not always Ghana's), a local `0712345678`
/// becomes `+254712345678`, a number of another country is refused naming
/// the expected form, and `1,500` pays 1500.
#[tokio::test]
async fn the_payers_number_and_amount_are_read_as_they_type_them() {
    let node = &SHARED.get();
    let api = Api::new();
    let l = create(&api, node, "/v1/payment-pages", page_body("KES", None)).await;
    let id = l["id"].as_str().unwrap();
    let (_, page_html) = html(node, id).await;
    assert!(
        page_html.contains("data-local=\"0712345678\" data-international=\"+254712345678\""),
        "{page_html}"
    );
    assert!(page_html.contains("placeholder=\"0712345678\""), "{page_html}");
    assert!(page_html.contains("<span id=\"phone-country\">Kenya</span>"), "{page_html}");
    assert!(!page_html.contains("+233"), "no Ghanaian example on a Kenyan page: {page_html}");

    let url = node.sandbox_url(&format!("/pay/{id}/sessions"));
    let attempt = |amount: &str, phone: &str| json!({ "amount": amount, "method": "mobile_money", "network": "mpesa_ke", "phone": phone });
    let r = api.post_anonymous(&url, attempt("1,500", "0712 345 678")).await;
    r.expect(201);
    assert_eq!(r.body["session"]["destinationAmount"], "1500.00", "{}", r.text);
    let collection = r.body["session"]["collectionId"].as_str().unwrap();
    let r =
        api.get(&node.sandbox_url(&format!("/v1/collections/{collection}")), &node.creds.sandbox_key).await;
    r.expect(200);
    assert_eq!(r.body["collection"]["accountNumber"], "+254712345678");
    assert_eq!(r.body["collection"]["amount"], "1500.00");
    let r = api.post_anonymous(&url, attempt("1,500.50", "+254712345678")).await;
    r.expect(201);
    assert_eq!(r.body["session"]["destinationAmount"], "1500.50");

    let r = api.post_anonymous(&url, attempt("25.00", MTN_PHONE)).await;
    r.expect_invalid("phone");
    assert_eq!(
        r.body["details"]["reason"], "enter a Kenya wallet number, like 0712345678 or +254712345678",
        "{}",
        r.text
    );
    for malformed in ["071234567", "07123456789", "0712-abc-678"] {
        api.post_anonymous(&url, attempt("25.00", malformed)).await.expect_invalid("phone");
    }
    for amount in ["1,50", "15,00", "1.500,00"] {
        api.post_anonymous(&url, attempt(amount, "0712345678")).await.expect_invalid("amount");
    }

    // XOF is paid in two countries: each network names its own, with its example.
    let xof = create(&api, node, "/v1/payment-pages", page_body("XOF", None)).await;
    let (_, xof_html) = html(node, xof["id"].as_str().unwrap()).await;
    assert!(xof_html.contains(">Orange Money (Senegal)</option>"), "{xof_html}");
    assert!(xof_html.contains("data-country=\"Senegal\" data-local=\"771234567\""), "{xof_html}");
    assert!(
        xof_html.contains("data-local=\"0701234567\" data-international=\"+2250701234567\""),
        "{xof_html}"
    );
}

/// Issue 30.5 and 30.7 over HTTP: with no business name the payer is told
/// the organization's name; a merchant's `#ffff00` gets dark text on its
/// Pay button; required custom fields say so to the browser and to
/// assistive technology; the email field promises no receipt (no email is
/// configured on this node); and a failure is told to the payer as theirs.
#[tokio::test]
async fn the_page_names_the_payee_and_speaks_to_the_payer() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let r = api.get(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token).await;
    r.expect(200);
    let organization = r.body["data"][0]["name"].as_str().unwrap().to_string();
    assert!(!organization.is_empty(), "{}", r.text);

    let mut body = page_body("GHS", Some("25.51"));
    body["branding"] = json!({ "accentColor": "#ffff00" });
    body["customFields"] = json!([
        { "name": "order", "type": "text", "required": true, "label": "Order number" },
        { "name": "note", "type": "text", "required": false, "label": "Note" },
    ]);
    let l = create(&api, &node, "/v1/payment-links", body).await;
    let id = l["id"].as_str().unwrap();
    let (_, page_html) = html(&node, id).await;
    let shown = format!("<p class=\"business\" id=\"payee\">{}</p>", organization.replace('\'', "&#39;"));
    assert!(page_html.contains(&shown), "the organization is the payee: {page_html}");
    assert!(page_html.contains("--accent:#ffff00;--on-accent:#1a1f36"), "dark text on yellow: {page_html}");
    assert!(
        page_html.contains("name=\"custom:order\" type=\"text\" required aria-required=\"true\">"),
        "{page_html}"
    );
    assert!(page_html.contains("name=\"custom:note\" type=\"text\">"), "{page_html}");
    assert!(page_html.contains("<label for=\"email\">Email (optional)</label>"), "{page_html}");
    assert!(!page_html.contains("for your receipt"), "no email receipt is promised: {page_html}");

    // x.51 is declined in the sandbox: the merchant reads "The payer
    // declined the charge"; the payer reads it about themselves.
    let body = json!({ "method": "mobile_money", "network": "mtn_gh", "phone": "0241234567",
                       "customFields": { "order": "A-17" } });
    let r = api.post_anonymous(&node.sandbox_url(&format!("/pay/{id}/sessions")), body).await;
    r.expect(201);
    let session = r.body["session"]["id"].as_str().unwrap().to_string();
    let url = node.sandbox_url(&format!("/pay/{id}/sessions/{session}"));
    let failed = eventually("the attempt to fail", Duration::from_secs(10), || async {
        let r = api.call("GET", &url, None, None).await;
        (r.body["session"]["status"] == "failed").then_some(r.body)
    })
    .await;
    assert_eq!(failed["session"]["statusMessage"], "The payer declined the charge", "the merchant's words");
    assert_eq!(failed["payerMessage"], "You declined the charge on your phone.", "the payer's words");

    // A paid link's receipt names the organization too.
    let mut body = page_body("GHS", Some("10.00"));
    body["branding"] = json!({});
    let l = create(&api, &node, "/v1/payment-links", body).await;
    let paid = l["id"].as_str().unwrap();
    pay_settled(&api, &node, paid, "10.00").await;
    let (_, receipt) = html(&node, paid).await;
    let merchant = format!("<dd id=\"receipt-merchant\">{}</dd>", organization.replace('\'', "&#39;"));
    assert!(receipt.contains(&merchant), "{receipt}");
}

/// Issue 30.6 over HTTP: a crypto session's QR code is an SVG image from
/// the page's own origin (which the page's policy lets it load), for that
/// session only.
#[tokio::test]
async fn a_crypto_session_has_a_qr_code_of_its_address() {
    let node = &SHARED.get();
    let api = Api::new();
    let mut body = page_body("NGN", Some("5000.00"));
    body["allowedMethods"] = json!(["crypto", "bank_transfer"]);
    let l = create(&api, node, "/v1/payment-links", body).await;
    let id = l["id"].as_str().unwrap();
    let url = node.sandbox_url(&format!("/pay/{id}/sessions"));
    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "1000.00", "method": "crypto", "asset": "USDT", "chain": "tron" }),
        )
        .await;
    r.expect(201);
    let session = r.body["session"]["id"].as_str().unwrap();
    let qr = reqwest::get(node.sandbox_url(&format!("/pay/{id}/sessions/{session}/qr.svg"))).await.unwrap();
    assert_eq!(qr.status(), 200);
    assert_eq!(qr.headers()["content-type"], "image/svg+xml");
    assert_eq!(qr.headers()["content-security-policy"], "default-src 'none'");
    let svg = qr.text().await.unwrap();
    assert!(svg.contains("<svg") && svg.contains("<path"), "{svg}");
    let policy = reqwest::get(node.sandbox_url(&format!("/pay/{id}"))).await.unwrap();
    let policy = policy.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("img-src 'self'"), "{policy}");
    // A bank transfer has no address, and another link's session is not this one's.
    let r = api.post_anonymous(&url, json!({ "amount": "1000.00", "method": "bank_transfer" })).await;
    r.expect(201);
    let bank = r.body["session"]["id"].as_str().unwrap();
    for path in
        [format!("/pay/{id}/sessions/{bank}/qr.svg"), format!("/pay/pl_other/sessions/{session}/qr.svg")]
    {
        let r = reqwest::get(node.sandbox_url(&path)).await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
}
