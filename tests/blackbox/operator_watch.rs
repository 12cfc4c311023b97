//! What tells the operator that work waits, from the real binary: the
//! manual-settlement metrics and the status's attention figures, the warn
//! line of a failed webhook delivery, the client address and error code on
//! each request line, the recent failed requests, a dispute's evidence read
//! through the admin API, and the admin lists' substring search.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

/// The value of the metric line that starts with `series` (name and labels).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn metrics(api: &Api, node: &Node) -> String {
    let response = api.client.get(node.admin_url("/metrics")).send().await.expect("GET /metrics");
    assert_eq!(response.status().as_u16(), 200);
    response.text().await.unwrap()
}

async fn attention(api: &Api, node: &Node, stack: &str) -> Value {
    let status = api.get(&node.admin_url("/admin/v1/status"), &node.creds.admin_token).await;
    status.expect(200);
    status.body["status"][stack]["attention"].clone()
}

const PENDING_LIVE: &str = "sika_manual_settlement_pending{stack=\"live\"}";
const OLDEST_LIVE: &str = "sika_manual_settlement_oldest_age_seconds{stack=\"live\"}";

/// A live collection and then a live payout wait for the operator (no
/// provider connector): `/metrics` counts them with the oldest one's age,
/// the status's attention says the same for the console, and settling
/// them by hand takes them out at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn movements_awaiting_manual_settlement_are_a_metric_and_a_status_figure() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (admin, live) = (node.creds.admin_token.clone(), node.creds.live_key.clone());

    let text = metrics(&api, &node).await;
    assert!(text.contains("# TYPE sika_manual_settlement_pending gauge"), "{text}");
    assert!(text.contains("# TYPE sika_manual_settlement_oldest_age_seconds gauge"), "{text}");
    assert_eq!(metric(&text, PENDING_LIVE), Some(0.0), "{text}");
    assert_eq!(metric(&text, OLDEST_LIVE), Some(0.0), "{text}");
    assert_eq!(metric(&text, "sika_manual_settlement_pending{stack=\"sandbox\"}"), Some(0.0), "{text}");

    let collection = api
        .post(
            &node.live_url("/v1/collections"),
            &live,
            json!({ "amount": "500.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": MTN_PHONE, "externalReference": "watch-col-1" }),
        )
        .await;
    let (_, collection_id) = collection.created("collection", "col_");
    let settle =
        |kind: &str, id: &str, action: &str| node.admin_url(&format!("/admin/v1/live/{kind}/{id}/{action}"));
    api.post(&settle("collections", &collection_id, "complete"), &admin, json!({})).await.expect(200);
    let payout = api.post(&node.live_url("/v1/payouts"), &live, mtn_payout("100.00", "watch-pay-1")).await;
    let (_, payout_id) = payout.created("payout", "pay_");
    // The settlement above dropped the count; the payout is counted afresh.
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    let text = metrics(&api, &node).await;
    assert_eq!(metric(&text, PENDING_LIVE), Some(1.0), "the payout waits:\n{text}");
    let age = metric(&text, OLDEST_LIVE).expect("the oldest age");
    assert!((1.0..60.0).contains(&age), "the payout is about a second old: {age}\n{text}");
    let waiting = attention(&api, &node, "live").await;
    assert_eq!(waiting["awaitingSettlement"], 1, "{waiting}");
    assert!(waiting["oldestAwaitingAgeSeconds"].as_u64().unwrap() >= 1, "{waiting}");
    assert!(waiting["oldestAwaitingSince"].is_string(), "{waiting}");
    assert_eq!(attention(&api, &node, "sandbox").await["awaitingSettlement"], 0);

    api.post(&settle("payouts", &payout_id, "fail"), &admin, json!({ "note": "wallet closed" }))
        .await
        .expect(200);
    let text = metrics(&api, &node).await;
    assert_eq!(metric(&text, PENDING_LIVE), Some(0.0), "settled by hand, nothing waits:\n{text}");
    assert_eq!(metric(&text, OLDEST_LIVE), Some(0.0), "{text}");
    let waiting = attention(&api, &node, "live").await;
    assert_eq!(waiting["awaitingSettlement"], 0, "{waiting}");
    assert!(waiting["oldestAwaitingSince"].is_null(), "{waiting}");
    node.stop_and_verify();
}

/// A receiver that answers 500: each failed attempt is a warn line naming
/// the endpoint, the status, the attempt and the delivery; the endpoint's
/// health carries the last error, and the status counts it as failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_webhook_delivery_is_a_warn_line_and_the_endpoints_last_error() {
    let node = Node::start_with_env(Options::unthrottled(), &[("RUST_LOG", "info")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let admin = node.creds.admin_token.clone();
    let (receiver, _stop) = serve_in_background(
        axum::Router::new().fallback(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        "a failing receiver",
    );
    let url = format!("{receiver}/hooks");
    let endpoint = api
        .post(&node.sandbox_url("/v1/webhooks/endpoints"), &key, json!({ "url": url, "events": ["*"] }))
        .await;
    let (_, endpoint_id) = endpoint.created("webhookEndpoint", "we_");
    deposit(&api, &node, &key, "GHS", "25.00").await;

    let log = eventually("a webhook failure line", Duration::from_secs(10), || async {
        let log = node.log();
        log.contains("webhook delivery failed").then_some(log)
    })
    .await;
    let lines: Vec<Value> = log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let failure = lines
        .iter()
        .find(|l| l["message"] == "webhook delivery failed")
        .unwrap_or_else(|| panic!("no failure line in:\n{log}"));
    assert_eq!(failure["level"], "WARN", "{failure}");
    assert_eq!(failure["endpointId"], endpoint_id.as_str(), "{failure}");
    assert_eq!(failure["status"], 500, "{failure}");
    assert_eq!(failure["attempt"], 1, "{failure}");
    assert!(failure["deliveryId"].as_str().unwrap().starts_with("whd_"), "{failure}");

    let health = eventually("the endpoint's last error", Duration::from_secs(10), || async {
        let page = api.get(&node.admin_url("/admin/v1/sandbox/webhooks/endpoints"), &admin).await;
        let health = page.body["data"].as_array()?.iter().find(|e| e["id"] == endpoint_id.as_str())?.clone();
        health["lastError"].is_string().then_some(health)
    })
    .await;
    assert_eq!(health["url"], url.as_str(), "{health}");
    assert_eq!(health["lastError"], "the receiver answered 500", "{health}");
    assert!(health["lastErrorAt"].is_string(), "{health}");
    assert_eq!(attention(&api, &node, "sandbox").await["failingEndpoints"], 1);
}

/// Each request line carries the client address, and an error's line its
/// code; the stack remembers its failed requests for the operator, newest
/// first, and counts them in its attention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_lines_carry_the_client_and_error_and_failures_are_listed() {
    let node = Node::start_with_env(Options::unthrottled(), &[("RUST_LOG", "info")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let admin = node.creds.admin_token.clone();
    // A 404 with a key, and a 401 with a key that is not one.
    let missing = api.get(&node.sandbox_url("/v1/payouts/pay_ghs_missing"), &key).await;
    missing.expect_error(404, "not_found");
    let refused =
        api.get(&node.sandbox_url("/v1/accounts"), "sk_test_not_a_real_key_00000000000000000").await;
    refused.expect(401);
    let ok = api.get(&node.sandbox_url("/v1/accounts"), &key).await;
    ok.expect(200);
    let log = eventually("the request lines", Duration::from_secs(5), || async {
        let log = node.log();
        log.contains(&ok.request_id()).then_some(log)
    })
    .await;
    let lines: Vec<Value> = log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let of =
        |id: &str| lines.iter().find(|l| l["requestId"] == id).cloned().unwrap_or_else(|| panic!("{id}"));
    let line = of(&missing.request_id());
    assert_eq!(line["clientAddress"], "127.0.0.1", "{line}");
    assert_eq!(line["error"], "not_found", "{line}");
    assert_eq!(of(&refused.request_id())["error"], "unauthorized");
    let line = of(&ok.request_id());
    assert_eq!(line["clientAddress"], "127.0.0.1", "{line}");
    assert!(line.get("error").is_none(), "a success has no error code: {line}");

    let failed = api.get(&node.admin_url("/admin/v1/sandbox/failed-requests"), &admin).await;
    failed.expect(200);
    let rows = failed.body["data"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let (refused_id, missing_id) = (refused.request_id(), missing.request_id());
    assert_eq!(&ids[..2], &[refused_id.as_str(), missing_id.as_str()], "newest first: {rows:?}");
    assert!(!ids.contains(&ok.request_id().as_str()), "only failures");
    assert_eq!(
        rows[1],
        json!({
            "id": missing_id, "method": "GET", "route": "/v1/payouts/{id}", "status": 404,
            "error": "not_found", "organizationId": node.creds.organization_id, "clientAddress": "127.0.0.1",
            "createdAt": rows[1]["createdAt"],
        })
    );
    assert!(rows[0]["organizationId"].is_null(), "an unknown key has no organization: {}", rows[0]);
    let waiting = attention(&api, &node, "sandbox").await;
    assert_eq!(waiting["recentFailedRequests"], rows.len(), "{waiting}");
    let live_failures = api.get(&node.admin_url("/admin/v1/live/failed-requests"), &admin).await;
    assert_eq!(live_failures.body["data"], json!([]), "each stack its own");
    api.call("GET", &node.admin_url("/admin/v1/sandbox/failed-requests"), None, None)
        .await
        .expect_error(401, "unauthorized");
}

/// The operator downloads the file a dispute's message attaches, byte for
/// byte with its content type; a file no message of that dispute attaches
/// is a 404, and the route is in the admin OpenAPI document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_reads_a_disputes_evidence() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let admin = node.creds.admin_token.clone();
    let (_, paid) = collect_until(&api, &node, mtn_collection("120.00", "evidence-1"), "completed").await;
    let paid = paid["id"].as_str().unwrap().to_string();
    let opened =
        api.post(&node.sandbox_url("/v1/simulations/disputes"), &key, json!({ "collectionId": paid })).await;
    let (_, dispute_id) = opened.created("dispute", "dsp_");
    let files_url = node.sandbox_url("/v1/files");
    let upload = |name: &str, data: &str| {
        let body = json!({ "name": name, "contentType": "application/pdf", "data": data });
        api.post(&files_url, &key, body)
    };
    // "%PDF-1.4 receipt\n\0\xff" and an unrelated file.
    let receipt = upload("receipt.pdf", "JVBERi0xLjQgcmVjZWlwdAoA/w==").await;
    let (_, file_id) = receipt.created("file", "file_");
    let other = upload("other.pdf", "b3RoZXI=").await;
    let (_, other_id) = other.created("file", "file_");
    api.post(
        &node.sandbox_url(&format!("/v1/disputes/{dispute_id}/messages")),
        &key,
        json!({ "body": "Delivered; receipt attached.", "attachments": [{ "fileId": file_id }] }),
    )
    .await
    .expect(201);

    let url = |file: &str| node.admin_url(&format!("/admin/v1/sandbox/disputes/{dispute_id}/files/{file}"));
    let response = api.client.get(url(&file_id)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/pdf");
    assert!(response.headers()["content-disposition"].to_str().unwrap().contains("receipt.pdf"));
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"%PDF-1.4 receipt\n\x00\xff");

    api.get(&url(&other_id), &admin).await.expect_error(404, "not_found");
    api.get(&url("file_missing"), &admin).await.expect_error(404, "not_found");
    let elsewhere = node.admin_url(&format!("/admin/v1/live/disputes/{dispute_id}/files/{file_id}"));
    api.get(&elsewhere, &admin).await.expect_error(404, "not_found");
    api.call("GET", &url(&file_id), None, None).await.expect_error(401, "unauthorized");
    let document = api.get(&node.admin_url("/admin/v1/openapi.json"), &admin).await;
    let operation = &document.body["paths"]["/admin/v1/{stack}/disputes/{id}/files/{fileId}"]["get"];
    assert_eq!(operation["operationId"], "getStackDisputeFile", "{operation}");
    node.stop_and_verify();
}

/// The admin lists match any part of any field in any case, as the
/// node-wide search does: part of a reference, of an id, of a phone number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_lists_match_any_part_in_any_case() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (admin, live) = (node.creds.admin_token.clone(), node.creds.live_key.clone());
    let mut ids = Vec::new();
    for (reference, phone) in [("Shop-ORDER-1001", "+233241110001"), ("shop-order-1002", "+233241110002")] {
        let r = api
            .post(
                &node.live_url("/v1/collections"),
                &live,
                json!({ "amount": "50.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": phone, "externalReference": reference }),
            )
            .await;
        ids.push(r.created("collection", "col_").1);
    }
    let found = |q: &str| {
        let url = node.admin_url(&format!("/admin/v1/live/collections?q={q}"));
        let api = &api;
        let admin = &admin;
        async move {
            let r = api.get(&url, admin).await;
            r.expect(200);
            let mut ids: Vec<String> = r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect();
            ids.sort();
            ids
        }
    };
    let mut both = ids.clone();
    both.sort();
    assert_eq!(found("order-100").await, both, "part of both references, in either case");
    assert_eq!(found("DER-1002").await, vec![ids[1].clone()]);
    assert_eq!(found("241110001").await, vec![ids[0].clone()], "part of the payer's phone");
    assert_eq!(found(&ids[0][4..16]).await, vec![ids[0].clone()], "part of the id");
    assert_eq!(found("nothing-like-it").await, Vec::<String>::new());
    node.stop_and_verify();
}
