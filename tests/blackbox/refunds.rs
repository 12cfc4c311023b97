//! Refunds over HTTP against the real binary: full and partial refunds of
//! collections and checkout sessions, the hold at create, the sandbox
//! triggers, events, idempotency, scopes, lists, a real race for one
//! payment's money, and live refunds the operator completes or fails.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// A completed sandbox collection of `amount` GHS; returns its id.
async fn paid(api: &Api, node: &Node, amount: &str, reference: &str) -> String {
    let (_, settled) = collect_until(api, node, mtn_collection(amount, reference), "completed").await;
    settled["id"].as_str().unwrap().to_string()
}

async fn refund(api: &Api, node: &Node, body: Value) -> Resp {
    api.post(&node.sandbox_url("/v1/refunds"), &node.creds.sandbox_key, body).await
}

/// Waits until refund `id` is `status`; returns it.
async fn refund_until(api: &Api, node: &Node, id: &str, status: &str) -> Value {
    let url = node.sandbox_url(&format!("/v1/refunds/{id}"));
    poll_until(api, &url, &node.creds.sandbox_key, |b| b["refund"]["status"] == status).await["refund"]
        .clone()
}

async fn collection(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/collections/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["collection"].clone()
}

/// A `400 validation_error` naming `field` with `details.refundable`.
#[track_caller]
fn assert_refused(r: &Resp, field: &str, refundable: &str) {
    r.expect_invalid(field);
    assert_eq!(r.body["details"]["refundable"], refundable, "{}", r.text);
}

#[tokio::test]
async fn a_full_refund_by_default_completes_with_its_events_and_shows_on_the_collection() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let col = paid(&api, &node, "50.00", "full-pay").await;
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "0.00");

    let r = refund(&api, &node, json!({ "collectionId": col, "reason": "Returned", "externalReference": "rf-full", "metadata": { "ticket": "T-1" } })).await;
    let (created, id) = r.created("refund", "rf_");
    assert_eq!(created["amount"], "50.00", "the amount defaults to all that is refundable");
    assert_eq!(created["currency"], "GHS");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["collectionId"], col.as_str());
    assert_eq!(created["sessionId"], Value::Null, "not a checkout payment");
    assert_eq!(created["reason"], "Returned");
    assert_eq!(created["metadata"], json!({ "ticket": "T-1" }));
    assert_eq!(created["completedAt"], Value::Null);
    let titles: Vec<&str> =
        created["timeline"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"Refund created") && titles.contains(&"Funds held"), "{created}");
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "50.00", "a pending refund counts");

    let done = refund_until(&api, &node, &id, "completed").await;
    assert!(done["completedAt"].is_string());
    assert_eq!(done["statusMessage"], "Refunded to the payer");
    assert_eq!(balance(&api, &base, &key, "GHS").await, "0.00", "the whole payment went back");
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (0, 0));
    let names = wait_for_events(&api, &base, &key, &id, &["refund.pending", "refund.completed"]).await;
    assert_eq!(names, ["refund.pending", "refund.completed"]);
    let events = all_events(&api, &base, &key).await;
    let completed = events.iter().find(|e| e["event"] == "refund.completed").unwrap();
    let now = api.get(&node.sandbox_url(&format!("/v1/refunds/{id}")), &key).await;
    assert_eq!(completed["data"], now.body["refund"], "an event's data is the refund's GET");
    let pending = events.iter().find(|e| e["event"] == "refund.pending").unwrap();
    assert_eq!(pending["data"]["status"], "pending");
    assert_eq!(pending["data"]["id"], id.as_str());
    let listed = every_item(&api, &format!("{base}/v1/collections"), &key).await;
    assert_eq!(listed[0]["refundedAmount"], "50.00", "the list shows it too");

    // Nothing is left to refund: without an amount the payment is named,
    // with one the amount is.
    let r = refund(&api, &node, json!({ "collectionId": col, "externalReference": "rf-again" })).await;
    assert_refused(&r, "collectionId", "0.00");
    let r = refund(
        &api,
        &node,
        json!({ "collectionId": col, "amount": "1.00", "externalReference": "rf-again-1" }),
    )
    .await;
    assert_refused(&r, "amount", "0.00");
    node.stop_and_verify();
}

#[tokio::test]
async fn partial_refunds_never_exceed_what_is_left() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let col = paid(&api, &node, "100.00", "partial-pay").await;
    let r = refund(&api, &node, json!({ "collectionId": col, "amount": "30.00", "externalReference": "p1" }))
        .await;
    let (first, first_id) = r.created("refund", "rf_");
    assert_eq!(first["amount"], "30.00");
    let r = refund(&api, &node, json!({ "collectionId": col, "amount": "80.00", "externalReference": "p2" }))
        .await;
    assert_refused(&r, "amount", "70.00");
    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "0", "externalReference": "p3" })).await;
    r.expect_invalid("amount");
    let r = refund(&api, &node, json!({ "collectionId": col, "externalReference": "p4" })).await;
    let (rest, rest_id) = r.created("refund", "rf_");
    assert_eq!(rest["amount"], "70.00", "the default is what is left");
    refund_until(&api, &node, &first_id, "completed").await;
    refund_until(&api, &node, &rest_id, "completed").await;
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "100.00");
    assert_eq!(balance(&api, &base, &key, "GHS").await, "0.00", "no fee is returned or kept");
    let listed = every_item(&api, &format!("{base}/v1/refunds?collectionId={col}"), &key).await;
    let ids: Vec<&str> = listed.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [rest_id.as_str(), first_id.as_str()], "newest first");
    node.stop_and_verify();
}

#[tokio::test]
async fn a_payment_not_completed_or_not_named_once_is_refused_and_nothing_is_held() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "500.00").await;
    let (_, failed) = collect_until(&api, &node, mtn_collection("20.51", "fails"), "failed").await;
    let failed = failed["id"].as_str().unwrap();
    let r = refund(&api, &node, json!({ "collectionId": failed, "externalReference": "nc-1" })).await;
    assert_refused(&r, "collectionId", "0.00");
    let r =
        refund(&api, &node, json!({ "collectionId": failed, "amount": "1.00", "externalReference": "nc-2" }))
            .await;
    assert_refused(&r, "collectionId", "0.00");
    let r = refund(&api, &node, json!({ "collectionId": "col_nope", "externalReference": "nc-3" })).await;
    r.expect_error(404, "not_found");
    let col = paid(&api, &node, "10.00", "named-twice").await;
    let r =
        refund(&api, &node, json!({ "collectionId": col, "sessionId": "cs_x", "externalReference": "nc-4" }))
            .await;
    r.expect_invalid("sessionId");
    refund(&api, &node, json!({ "externalReference": "nc-5" })).await.expect_invalid("collectionId");
    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "1.001", "externalReference": "nc-6" }))
            .await;
    r.expect_invalid("amount");
    refund(&api, &node, json!({ "collectionId": col })).await.expect_invalid("externalReference");
    assert_eq!(balance(&api, &base, &key, "GHS").await, "510.00", "no refused refund held anything");
    assert!(every_item(&api, &format!("{base}/v1/refunds"), &key).await.is_empty());
    node.stop_and_verify();
}

#[tokio::test]
async fn a_refund_the_balance_cannot_hold_is_insufficient_funds() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let col = paid(&api, &node, "20.00", "spent").await;
    let r = api.post(&format!("{base}/v1/payouts"), &key, mtn_payout("15.00", "spend-it")).await;
    r.expect(201);
    let left = balance(&api, &base, &key, "GHS").await;
    let r = refund(&api, &node, json!({ "collectionId": col, "externalReference": "poor" })).await;
    r.expect_error(422, "insufficient_funds");
    assert_eq!(r.body["details"]["required"], "20.00", "{}", r.text);
    assert_eq!(balance(&api, &base, &key, "GHS").await, left, "nothing held");
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "0.00", "nothing counted");
    // What the balance covers goes through.
    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "1.00", "externalReference": "small" }))
            .await;
    r.expect(201);
    node.stop_and_verify();
}

/// `61` fails and releases the hold; `63` holds the money for a minute of
/// the node's clock, visible in both balances, then completes.
#[tokio::test]
async fn sandbox_triggers_61_fails_and_63_waits_a_minute_holding_the_amount() {
    // A minute is 3 s here; other steps 100 ms.
    let node = Node::start(Options { time_scale: Some(0.05), ..Options::unthrottled() });
    let (api, key, base) = (Api::new(), node.creds.sandbox_key.clone(), node.sandbox.clone());
    let col = paid(&api, &node, "100.00", "trigger-pay").await;

    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "10.61", "externalReference": "t61" }))
            .await;
    let (_, failing) = r.created("refund", "rf_");
    let failed = refund_until(&api, &node, &failing, "failed").await;
    assert_eq!(failed["completedAt"], Value::Null);
    assert!(failed["statusMessage"].as_str().unwrap().contains("61"), "{failed}");
    assert_eq!(balance(&api, &base, &key, "GHS").await, "100.00", "the hold is released");
    assert_eq!(
        collection(&api, &node, &col).await["refundedAmount"],
        "0.00",
        "a failed refund counts nothing"
    );
    wait_for_events(&api, &base, &key, &failing, &["refund.failed"]).await;

    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "10.63", "externalReference": "t63" }))
            .await;
    let (_, slow) = r.created("refund", "rf_");
    let account = account_of(&api, &base, &key, "GHS").await.unwrap();
    assert_eq!(account["availableBalance"], "89.37", "held at once: {account}");
    assert_eq!(account["totalBalance"], "89.37", "a pending debit, as a payout's: {account}");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let r = api.get(&format!("{base}/v1/refunds/{slow}"), &key).await;
    assert_eq!(r.body["refund"]["status"], "pending", "still pending half way through its minute");
    let url = format!("{base}/v1/refunds/{slow}");
    let done = eventually("the 63 refund to complete", Duration::from_secs(10), || async {
        let r = api.get(&url, &key).await;
        (r.body["refund"]["status"] == "completed").then(|| r.body["refund"].clone())
    })
    .await;
    assert!(done["completedAt"].is_string());
    assert_eq!(balance(&api, &base, &key, "GHS").await, "89.37");
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "10.63");
    let names = wait_for_events(&api, &base, &key, &slow, &["refund.completed"]).await;
    assert_eq!(names, ["refund.pending", "refund.completed"]);

    let r = api.get(&format!("{base}/v1/refunds?status=failed"), &key).await;
    r.expect(200);
    let ids: Vec<&str> =
        r.body["data"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [failing.as_str()]);
    api.get(&format!("{base}/v1/refunds?status=done"), &key).await.expect_invalid("status");

    let r = api.get(&format!("{base}/v1/simulations"), &key).await;
    let entry = r.body["data"].as_array().unwrap().iter().find(|s| s["path"] == "/v1/refunds").cloned();
    let entry = entry.expect("refunds are in the simulations index");
    assert_eq!(entry["scenarios"]["61"], "failed");
    assert_eq!(entry["scenarios"]["63"], "delayed_completion");
    assert_eq!(entry["scenarios"]["default"], "completed");
    node.stop_and_verify();
}

#[tokio::test]
async fn the_same_reference_replays_and_another_body_is_a_duplicate() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let col = paid(&api, &node, "40.00", "idem-pay").await;
    let body = json!({ "collectionId": col, "amount": "5.00", "externalReference": "idem" });
    let (first, id) = refund(&api, &node, body.clone()).await.created("refund", "rf_");
    refund_until(&api, &node, &id, "completed").await;
    let again = refund(&api, &node, body).await;
    again.expect(200);
    assert_eq!(again.body["refund"]["id"], first["id"]);
    assert_eq!(again.body["refund"]["status"], "completed", "the replay shows the refund as it is now");
    let other = json!({ "collectionId": col, "amount": "6.00", "externalReference": "idem" });
    refund(&api, &node, other).await.expect_field(409, "duplicate", "externalReference");
    assert_eq!(every_item(&api, &format!("{base}/v1/refunds"), &key).await.len(), 1);
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "5.00", "refunded once");
    node.stop_and_verify();
}

#[tokio::test]
async fn refunds_need_their_scopes() {
    let Sandbox { node, api, .. } = Sandbox::start();
    let col = paid(&api, &node, "10.00", "scoped-pay").await;
    let reader = scoped_key(&api, &node, "reader", &["refunds:read"]).await;
    let writer = scoped_key(&api, &node, "writer", &["refunds:write"]).await;
    let other = scoped_key(&api, &node, "other", &["collections:read", "payouts:write"]).await;
    let url = node.sandbox_url("/v1/refunds");
    let body = json!({ "collectionId": col, "amount": "1.00", "externalReference": "scoped" });
    api.post(&url, &reader, body.clone()).await.expect_error(403, "forbidden");
    api.post(&url, &other, body.clone()).await.expect_error(403, "forbidden");
    let (_, id) = api.post(&url, &writer, body).await.created("refund", "rf_");
    api.get(&url, &writer).await.expect_error(403, "forbidden");
    api.get(&url, &other).await.expect_error(403, "forbidden");
    api.get(&url, &reader).await.expect(200);
    api.get(&node.sandbox_url(&format!("/v1/refunds/{id}")), &reader).await.expect(200);
    // Another organization's refund is not found.
    let (_, b_key) = organization_b(&api, &node).await;
    api.get(&node.sandbox_url(&format!("/v1/refunds/{id}")), &b_key).await.expect_error(404, "not_found");
    let body = json!({ "collectionId": col, "externalReference": "b-steals" });
    api.post(&url, &b_key, body).await.expect_error(404, "not_found");
}

/// A checkout payment is one refundable amount whether it is named by its
/// session or its collection, and a refund by collection carries the session.
#[tokio::test]
async fn a_checkout_payment_shares_one_refundable_amount_between_its_session_and_collection() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let link = json!({ "currency": "GHS", "amount": "100.00", "title": "Scarf", "allowedMethods": ["mobile_money"] });
    let r = api.post(&format!("{base}/v1/payment-links"), &key, link).await;
    let (_, link_id) = r.created("paymentLink", "pl_");
    let pay_url = node.sandbox_url(&format!("/pay/{link_id}/sessions"));
    let pay = |amount: &str| {
        let body =
            json!({ "amount": amount, "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
        api.post_anonymous(&pay_url, body)
    };
    let partial = pay("40.00").await;
    partial.expect(201);
    let partial_session = partial.body["session"]["id"].as_str().unwrap().to_string();
    let link_url = format!("{base}/v1/payment-links/{link_id}");
    poll_until(&api, &link_url, &key, |b| b["paymentLink"]["totalReceived"] == "40.00").await;
    let rest = pay("60.00").await;
    rest.expect(201);
    let session = rest.body["session"]["id"].as_str().unwrap().to_string();
    let paid = poll_until(&api, &link_url, &key, |b| b["paymentLink"]["status"] == "paid").await;
    let sessions = paid["paymentLink"]["sessions"].as_array().unwrap().clone();
    let complete = sessions.iter().find(|s| s["id"] == session.as_str()).unwrap();
    assert_eq!(complete["status"], "complete");
    assert_eq!(complete["refundedAmount"], "0.00");
    let col = complete["collectionId"].as_str().unwrap().to_string();

    // A session that is not `complete` (this one is partial) refunds nothing.
    let r =
        refund(&api, &node, json!({ "sessionId": partial_session, "externalReference": "cs-partial" })).await;
    assert_refused(&r, "sessionId", "0.00");
    refund(&api, &node, json!({ "sessionId": "cs_unknown", "externalReference": "cs-none" }))
        .await
        .expect_error(404, "not_found");

    let r =
        refund(&api, &node, json!({ "sessionId": session, "amount": "25.00", "externalReference": "cs-1" }))
            .await;
    let (by_session, _) = r.created("refund", "rf_");
    assert_eq!((&by_session["sessionId"], &by_session["collectionId"]), (&json!(session), &json!(col)));
    let r =
        refund(&api, &node, json!({ "collectionId": col, "amount": "40.00", "externalReference": "cs-2" }))
            .await;
    assert_refused(&r, "amount", "35.00");
    let r = refund(&api, &node, json!({ "collectionId": col, "externalReference": "cs-3" })).await;
    let (by_collection, by_collection_id) = r.created("refund", "rf_");
    assert_eq!(by_collection["amount"], "35.00", "what the session's refund left");
    assert_eq!(by_collection["sessionId"], session.as_str(), "a refund by collection carries its session");
    let r =
        refund(&api, &node, json!({ "sessionId": session, "amount": "0.01", "externalReference": "cs-4" }))
            .await;
    assert_refused(&r, "amount", "0.00");
    refund_until(&api, &node, &by_collection_id, "completed").await;

    let now = api.get(&link_url, &key).await;
    let sessions = now.body["paymentLink"]["sessions"].as_array().unwrap().clone();
    let complete = sessions.iter().find(|s| s["id"] == session.as_str()).unwrap();
    assert_eq!(complete["refundedAmount"], "60.00", "the session shows its payment's refunds");
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "60.00");
    let partial_view = sessions.iter().find(|s| s["id"] == partial_session.as_str()).unwrap();
    assert_eq!(partial_view["refundedAmount"], "0.00");
    node.stop_and_verify();
}

/// Refunds of one payment sent at once never give back more than it
/// brought: each is checked and held in the writer's one command.
#[tokio::test]
async fn concurrent_refunds_of_one_payment_never_exceed_what_was_collected() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "5000.00").await;
    let col = paid(&api, &node, "100.00", "raced-pay").await;
    let attempts = (0..24).map(|n| {
        let body =
            json!({ "collectionId": col, "amount": "10.00", "externalReference": format!("race-{n}") });
        let (api, url, key) = (api.clone(), node.sandbox_url("/v1/refunds"), key.clone());
        tokio::spawn(async move { api.post(&url, &key, body).await })
    });
    let mut created = 0;
    let mut refused = 0;
    for attempt in attempts.collect::<Vec<_>>() {
        let r = attempt.await.unwrap();
        match r.status {
            201 => created += 1,
            400 => {
                assert_refused(&r, "amount", "0.00");
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    assert_eq!((created, refused), (10, 14), "exactly the payment's amount is refunded");
    // Refunds of "what is left", raced, give it back once.
    let second = paid(&api, &node, "30.00", "raced-rest").await;
    let attempts = (0..8).map(|n| {
        let body = json!({ "collectionId": second, "externalReference": format!("rest-{n}") });
        let (api, url, key) = (api.clone(), node.sandbox_url("/v1/refunds"), key.clone());
        tokio::spawn(async move { api.post(&url, &key, body).await })
    });
    let mut statuses = Vec::new();
    for attempt in attempts.collect::<Vec<_>>() {
        statuses.push(attempt.await.unwrap().status);
    }
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 400).count(), 7, "{statuses:?}");
    let refunds = every_item(&api, &format!("{base}/v1/refunds?collectionId={col}"), &key).await;
    let total: i128 = refunds.iter().map(|r| minor(r["amount"].as_str().unwrap(), 2)).sum();
    assert_eq!(total, 10_000);
    assert_eq!(collection(&api, &node, &col).await["refundedAmount"], "100.00");
    assert_eq!(collection(&api, &node, &second).await["refundedAmount"], "30.00");
    node.stop_and_verify();
}

/// On live, a refund of a payment whose rail has no connector waits for
/// the operator, who completes or fails it as a payout.
#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_live_refund_waits_for_the_operator_who_completes_or_fails_it() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (key, admin) = (node.creds.live_key.clone(), node.creds.admin_token.clone());
    let body = json!({ "amount": "300.00", "currency": "GHS", "code": "mtn_gh",
                       "accountNumber": MTN_PHONE, "externalReference": "live-pay" });
    let r = api.post(&node.live_url("/v1/collections"), &key, body).await;
    let (_, col) = r.created("collection", "col_");
    let url = node.admin_url(&format!("/admin/v1/live/collections/{col}/complete"));
    api.call("POST", &url, Some(&admin), None).await.expect(200);

    let refunds_url = node.live_url("/v1/refunds");
    let r = api
        .post(
            &refunds_url,
            &key,
            json!({ "collectionId": col, "amount": "100.00", "externalReference": "l1" }),
        )
        .await;
    let (first, first_id) = r.created("refund", "rf_");
    assert_eq!(first["status"], "pending");
    let titles: Vec<&str> =
        first["timeline"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"Waiting for the operator"), "{first}");
    // Oldest first is by creation time in milliseconds: made in the same
    // millisecond, two refunds are equally old.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let r = api
        .post(
            &refunds_url,
            &key,
            json!({ "collectionId": col, "amount": "50.00", "externalReference": "l2" }),
        )
        .await;
    let (_, second_id) = r.created("refund", "rf_");
    assert_eq!(balance(&api, &node.live, &key, "GHS").await, "150.00", "both held");

    let awaiting = node.admin_url("/admin/v1/live/refunds/awaiting-operator");
    let r = api.get(&awaiting, &admin).await;
    r.expect(200);
    let ids: Vec<&str> =
        r.body["data"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [first_id.as_str(), second_id.as_str()], "oldest first");
    assert_eq!(r.body["data"][0]["organizationId"], node.creds.organization_id.as_str());
    let status = api.get(&node.admin_url("/admin/v1/status"), &admin).await;
    assert!(
        status.body["status"]["live"]["attention"]["awaitingSettlement"].as_u64().unwrap() >= 2,
        "{}",
        status.text
    );

    let settle = |id: &str, action: &str| node.admin_url(&format!("/admin/v1/live/refunds/{id}/{action}"));
    let body = json!({ "providerReference": "MOMO-REV-1", "note": "reversed on the MTN portal" });
    let r = api.call("POST", &settle(&first_id, "complete"), Some(&admin), Some(body)).await;
    r.expect(200);
    assert_eq!(r.body["refund"]["status"], "completed");
    let titles: Vec<String> = r.body["refund"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap().to_string())
        .collect();
    assert!(titles.iter().any(|t| t == "Refunded by the operator"), "{titles:?}");
    let r = api.call("POST", &settle(&second_id, "fail"), Some(&admin), None).await;
    r.expect(200);
    assert_eq!(r.body["refund"]["status"], "failed");
    api.call("POST", &settle(&second_id, "complete"), Some(&admin), None)
        .await
        .expect_error(409, "invalid_state");
    api.call("POST", &settle(&first_id, "undo"), Some(&admin), None).await.expect_error(404, "not_found");
    assert_eq!(balance(&api, &node.live, &key, "GHS").await, "200.00", "one taken, one released");
    let r = api.get(&node.live_url(&format!("/v1/collections/{col}")), &key).await;
    assert_eq!(r.body["collection"]["refundedAmount"], "100.00");
    let r = api.get(&awaiting, &admin).await;
    assert_eq!(r.body["data"], json!([]), "nothing waits any more");
    let r = api.get(&node.admin_url("/admin/v1/live/refunds?status=failed"), &admin).await;
    r.expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "{}", r.text);
    assert_eq!(r.body["data"][0]["id"], second_id.as_str());
    let r = api.get(&node.admin_url(&format!("/admin/v1/live/refunds/{first_id}")), &admin).await;
    r.expect(200);
    assert_eq!(r.body["refund"]["status"], "completed");
    assert_eq!(r.body["refund"]["organizationId"], node.creds.organization_id.as_str());
    let names = wait_for_events(&api, &node.live, &key, &first_id, &["refund.completed"]).await;
    assert_eq!(names, ["refund.pending", "refund.completed"]);
    wait_for_events(&api, &node.live, &key, &second_id, &["refund.failed"]).await;
    node.stop_and_verify();
}
