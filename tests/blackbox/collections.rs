//! Collections end to end over HTTP: every sandbox trigger with its events,
//! balances and timeline, and live collections the operator settles. Each
//! test runs its own node and ends by stopping it and verifying its books.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

fn collection_body(amount: &str, reference: &str) -> Value {
    let mut body = mtn_collection(amount, reference);
    body["metadata"] = json!({ "invoice": reference });
    body
}

/// Creates a sandbox collection, checks the answer, and waits for it to settle.
async fn collect(api: &Api, node: &Node, amount: &str, reference: &str, outcome: &str) -> Value {
    let (c, settled) = collect_until(api, node, collection_body(amount, reference), outcome).await;
    assert_eq!(c["status"], "pending");
    assert_eq!(c["amount"], amount);
    assert_eq!(c["currency"], "GHS");
    assert_eq!(c["code"], "mtn_gh");
    assert_eq!(c["accountNumber"], MTN_PHONE);
    assert_eq!(c["externalReference"], reference);
    assert_eq!(c["metadata"], json!({ "invoice": reference }));
    let kinds: Vec<String> = timeline(&c).into_iter().map(|(k, _, _)| k).collect();
    for kind in ["state", "ledger", "provider"] {
        assert!(kinds.iter().any(|k| k == kind), "a new collection's timeline has {kind}: {c}");
    }
    settled
}

async fn credited_count(api: &Api, node: &Node, currency: &str) -> usize {
    let credited = events_named(api, &node.sandbox, &node.creds.sandbox_key, "account.credited").await;
    credited.iter().filter(|e| e["data"]["currency"] == currency).count()
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn sandbox_collection_triggers() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;

    // Default: pending, then completed and credited.
    let done = collect(&api, &node, "25.00", "col-default", "completed").await;
    let id = done["id"].as_str().unwrap();
    assert!(done["completedAt"].is_string());
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (2_500, 0), "available after approval");
    let names = wait_for_events(&api, &base, &key, id, &["collection.completed"]).await;
    assert_eq!(names, vec!["collection.pending", "collection.completed"]);
    assert_eq!(sink.wait_for("collection.pending", id).await["data"]["status"], "pending");
    let completed = sink.wait_for("collection.completed", id).await;
    assert_eq!(completed["data"]["status"], "completed");
    let credited = eventually("account.credited webhook", Duration::from_secs(10), || async {
        sink.received()
            .into_iter()
            .find(|b| b["event"] == "account.credited" && b["data"]["currency"] == "GHS")
    })
    .await;
    assert_eq!(credited["data"]["availableBalance"], "25.00", "{credited}");
    assert_eq!(credited_count(&api, &node, "GHS").await, 1);
    let entries = timeline(&done);
    for title in [
        "Collection created",
        "Pending credit",
        "Prompt sent",
        "Payer approved",
        "Balance credited",
        "Collection completed",
    ] {
        assert!(entries.iter().any(|(_, t, _)| t == title), "timeline has {title}: {done}");
    }
    let url = node.sandbox_url(&format!("/v1/collections/{id}"));
    let full = poll_until(&api, &url, &key, |b| {
        b["collection"]["timeline"].as_array().unwrap().iter().any(|e| e["kind"] == "webhook")
    })
    .await;
    timeline(&full["collection"]);
    assert_data_as_of_event(&completed, &full["collection"]);

    // 51: declined; nothing credited and nothing left pending.
    let failed = collect(&api, &node, "30.51", "col-declined", "failed").await;
    let failed_id = failed["id"].as_str().unwrap();
    assert!(failed["completedAt"].is_null());
    assert!(failed["statusMessage"].as_str().unwrap().contains("declined"), "{failed}");
    assert_eq!(
        balances_minor(&api, &base, &key, "GHS", 2).await,
        (2_500, 0),
        "available unchanged, pending back to 0"
    );
    let names = wait_for_events(&api, &base, &key, failed_id, &["collection.failed"]).await;
    assert_eq!(names, vec!["collection.pending", "collection.failed"]);
    sink.wait_for("collection.failed", failed_id).await;
    assert_eq!(credited_count(&api, &node, "GHS").await, 1, "no account.credited for a failed collection");
    assert!(timeline(&failed).iter().any(|(k, t, _)| k == "ledger" && t == "Pending credit released"));

    // 50: completes, but only after 60 s × 0.001.
    let delayed = collect(&api, &node, "10.50", "col-delayed", "completed").await;
    let waited = millis(&delayed["completedAt"]) - millis(&delayed["createdAt"]);
    assert!(waited >= 60, "a delayed completion takes at least 60 ms here, took {waited}: {delayed}");
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (3_550, 0));
    wait_for_events(&api, &base, &key, delayed["id"].as_str().unwrap(), &["collection.completed"]).await;

    // 52: the payer never approves; fails after 60 s × 0.001.
    let timed_out = collect(&api, &node, "10.52", "col-timeout", "failed").await;
    let waited = millis(&timed_out["updatedAt"]) - millis(&timed_out["createdAt"]);
    assert!(waited >= 60, "the customer timeout takes at least 60 ms here, took {waited}");
    assert!(timed_out["statusMessage"].as_str().unwrap().contains("in time"), "{timed_out}");
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (3_550, 0));
    wait_for_events(&api, &base, &key, timed_out["id"].as_str().unwrap(), &["collection.failed"]).await;

    // 99: a transient provider error on the timeline, then reconciled.
    let reconciled = collect(&api, &node, "10.99", "col-transient", "completed").await;
    let entries = timeline(&reconciled);
    let created = millis(&reconciled["createdAt"]);
    let note = entries
        .iter()
        .find(|(k, t, _)| k == "provider" && t == "Transient provider error")
        .unwrap_or_else(|| panic!("a transient-error note: {reconciled}"));
    let approved = entries.iter().find(|(_, t, _)| t == "Payer approved").expect("approval entry");
    assert!(note.2 - created >= 2 && approved.2 >= note.2, "note then approval: {reconciled}");
    assert!(millis(&reconciled["completedAt"]) - created >= 10);
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (4_649, 0));
    assert_eq!(credited_count(&api, &node, "GHS").await, 3, "one account.credited per completed collection");

    // The list, newest first.
    let list = api.get(&node.sandbox_url("/v1/collections"), &key).await;
    list.expect(200);
    let statuses: Vec<&str> =
        list.body["data"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["completed", "failed", "completed", "failed", "completed"]);
    node.stop_and_verify();
}

#[tokio::test]
async fn collection_requests_are_checked() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let url = node.sandbox_url("/v1/collections");
    let with = |field: &str, value: Value| {
        let mut body = collection_body("10.00", "col-check");
        body[field] = value;
        body
    };
    api.post(&url, &key, with("currency", json!("KES"))).await.expect_invalid("currency");
    api.post(&url, &key, with("code", json!("nope_gh"))).await.expect_invalid("code");
    api.post(&url, &key, with("amount", json!("0.50"))).await.expect_invalid("amount");
    api.post(&url, &key, with("amount", json!("10.001"))).await.expect_error(400, "validation_error");
    api.post(&url, &key, with("accountNumber", json!(" "))).await.expect_invalid("accountNumber");
    let crypto = json!({ "amount": "10.00", "currency": "USDC", "code": "usdc_base",
                         "accountNumber": "x", "externalReference": "col-crypto" });
    api.post(&url, &key, crypto).await.expect_invalid("code");
    // Nothing was created by the refused requests.
    let list = api.get(&url, &key).await;
    list.expect(200);
    assert_eq!(list.body["data"], json!([]));
    // A number is accepted as well as a string.
    let r = api.post(&url, &key, with("amount", json!(12.5))).await;
    r.expect(201);
    assert_eq!(r.body["collection"]["amount"], "12.50");
    api.get(&node.sandbox_url("/v1/collections/col_missing"), &key).await.expect_error(404, "not_found");
    node.stop_and_verify();
}

#[tokio::test]
async fn live_collections_wait_for_the_operator() {
    let Sandbox { node, api, .. } = Sandbox::start();
    let (key, live, admin) = (node.creds.live_key.clone(), node.live.clone(), node.creds.admin_token.clone());
    let create = |amount: &str, reference: &str| {
        let (api, url, key, body) =
            (api.clone(), node.live_url("/v1/collections"), key.clone(), collection_body(amount, reference));
        async move {
            let r = api.post(&url, &key, body).await;
            r.expect(201);
            r.body["collection"]["id"].as_str().unwrap().to_string()
        }
    };
    // Sandbox trigger cents mean nothing on live: both wait for the operator.
    let ok = create("40.00", "live-col-ok").await;
    let declined = create("15.51", "live-col-declined").await;
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (0, 5_551), "both pending");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (0, 5_551), "still pending");

    let settle =
        |id: &str, action: &str| node.admin_url(&format!("/admin/v1/live/collections/{id}/{action}"));
    api.call("POST", &settle(&ok, "complete"), None, None).await.expect_error(401, "unauthorized");
    let r = api.call("POST", &settle(&ok, "complete"), Some(&admin), None).await;
    r.expect(200);
    assert_eq!(r.body["collection"]["status"], "completed");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (4_000, 1_551));
    let r = api.call("POST", &settle(&declined, "fail"), Some(&admin), None).await;
    r.expect(200);
    assert_eq!(r.body["collection"]["status"], "failed");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (4_000, 0));
    api.call("POST", &settle(&ok, "fail"), Some(&admin), None).await.expect_error(409, "invalid_state");
    api.call("POST", &settle(&declined, "complete"), Some(&admin), None)
        .await
        .expect_error(409, "invalid_state");

    assert_eq!(
        wait_for_events(&api, &live, &key, &ok, &["collection.completed"]).await,
        vec!["collection.pending", "collection.completed"]
    );
    assert_eq!(
        wait_for_events(&api, &live, &key, &declined, &["collection.failed"]).await,
        vec!["collection.pending", "collection.failed"]
    );
    let credited = events_named(&api, &live, &key, "account.credited").await;
    assert_eq!(credited.len(), 1, "{credited:?}");
    assert_eq!(credited[0]["data"]["availableBalance"], "40.00");
    // The sandbox knows nothing of live collections.
    let r = api.get(&node.sandbox_url(&format!("/v1/collections/{ok}")), &node.creds.sandbox_key).await;
    r.expect_error(404, "not_found");
    node.stop_and_verify();
}
