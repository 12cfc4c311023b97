//! Payouts end to end over HTTP: the sandbox triggers with their events,
//! balances and timelines; insufficient funds; spend caps and manual
//! settlement on live; idempotency of every money-moving endpoint. Each
//! test runs its own node and ends by stopping it and verifying its books.

use std::collections::{BTreeSet, HashSet};

use crate::support::*;
use serde_json::{Value, json};

fn payout_body(amount: &str, reference: &str) -> Value {
    json!({
        "from": { "currency": "GHS", "amount": amount },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE },
        "externalReference": reference,
        "narration": "flow test",
    })
}

fn kinds(resource: &Value) -> BTreeSet<String> {
    timeline(resource).into_iter().map(|(k, _, _)| k).collect()
}

async fn get_payout(api: &Api, base: &str, key: &str, id: &str) -> Value {
    let r = api.get(&format!("{base}/v1/payouts/{id}"), key).await;
    r.expect(200);
    r.body["payout"].clone()
}

async fn wait_status(api: &Api, base: &str, key: &str, id: &str, status: &str) -> Value {
    let url = format!("{base}/v1/payouts/{id}");
    poll_until(api, &url, key, |b| b["payout"]["status"] == status).await["payout"].clone()
}

/// Waits until the payout's timeline shows a delivered webhook.
async fn wait_webhook_on_timeline(api: &Api, base: &str, key: &str, id: &str) -> Value {
    let url = format!("{base}/v1/payouts/{id}");
    poll_until(api, &url, key, |b| {
        b["payout"]["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "webhook" && e["title"].as_str().unwrap_or("").ends_with("delivered"))
    })
    .await["payout"]
        .clone()
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn sandbox_payout_triggers_settle_with_events_balances_and_timelines() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let (start, pending) = balances_minor(&api, &base, &key, "GHS", 2).await;
    assert_eq!((start, pending), (100_000, 0));

    // Default cents: completed, balance down by amount + fee.
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("100.00", "po-default")).await;
    let (created, id) = r.created("payout", "pay_ghs_");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["from"]["amount"], "100.00");
    assert_eq!(created["from"]["currency"], "GHS");
    assert_eq!(created["to"]["amount"], "100.00");
    assert_eq!(created["to"]["code"], "mtn_gh");
    assert_eq!(created["to"]["accountNumber"], MTN_PHONE);
    assert_eq!(created["fee"], json!({ "amount": "2.00", "currency": "GHS" }));
    assert_eq!(created["externalReference"], "po-default");
    assert!(created["completedAt"].is_null());
    let at_creation = kinds(&created);
    for kind in ["state", "ledger", "fee", "provider"] {
        assert!(at_creation.contains(kind), "a new payout's timeline has a {kind} entry: {created}");
    }
    let done = wait_status(&api, &base, &key, &id, "completed").await;
    assert!(done["completedAt"].is_string());
    assert_eq!(
        balances_minor(&api, &base, &key, "GHS", 2).await,
        (start - 10_000 - mtn_fee(10_000), 0),
        "amount and fee debited, nothing left pending"
    );
    let delivered = sink.wait_for("payout.completed", &id).await;
    assert_eq!(delivered["data"]["status"], "completed");
    let names = wait_for_events(&api, &base, &key, &id, &["payout.completed"]).await;
    assert_eq!(names, vec!["payout.completed"], "exactly one event for the payout");
    let full = wait_webhook_on_timeline(&api, &base, &key, &id).await;
    let all_kinds = kinds(&full);
    for kind in ["state", "ledger", "fee", "provider", "webhook"] {
        assert!(all_kinds.contains(kind), "the timeline has a {kind} entry: {full}");
    }
    assert_data_as_of_event(&delivered, &full);
    let titles: Vec<String> = timeline(&full).into_iter().map(|(_, t, _)| t).collect();
    assert!(titles.iter().any(|t| t == "Payout completed"), "{titles:?}");

    // Cents 01: rejected, balance fully refunded.
    let before = balances_minor(&api, &base, &key, "GHS", 2).await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("50.01", "po-rejected")).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["fee"]["amount"], "1.50", "1.00 + 1 % of 50.01, rounded half up");
    let rejected_id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let failed = wait_status(&api, &base, &key, &rejected_id, "failed").await;
    assert!(failed["completedAt"].is_null());
    assert!(failed["statusMessage"].as_str().unwrap().contains("rejected"), "{failed}");
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, before, "amount and fee refunded");
    let delivered = sink.wait_for("payout.failed", &rejected_id).await;
    assert_eq!(delivered["data"]["status"], "failed");
    let names = wait_for_events(&api, &base, &key, &rejected_id, &["payout.failed"]).await;
    assert_eq!(names, vec!["payout.failed"]);
    let full = wait_webhook_on_timeline(&api, &base, &key, &rejected_id).await;
    let entries = timeline(&full);
    assert!(entries.iter().any(|(k, t, _)| k == "ledger" && t == "Balance refunded"), "{full}");
    assert!(entries.iter().any(|(k, t, _)| k == "state" && t == "Payout failed"), "{full}");

    // Cents 03: a timeout note on the timeline, then completed by reconciliation.
    let before = balances_minor(&api, &base, &key, "GHS", 2).await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("20.03", "po-timeout")).await;
    let (_, timeout_id) = r.created("payout", "pay_");
    let done = wait_status(&api, &base, &key, &timeout_id, "completed").await;
    let created_at = millis(&done["createdAt"]);
    let entries = timeline(&done);
    let note = entries
        .iter()
        .find(|(k, t, _)| k == "provider" && t == "Provider timed out")
        .unwrap_or_else(|| panic!("a timeout note on the timeline: {done}"));
    let completed = entries.iter().find(|(_, t, _)| t == "Payout completed").expect("completion entry");
    assert!(note.2 - created_at >= 30, "the timeout is noticed after 30 s × 0.001: {done}");
    assert!(completed.2 >= note.2, "the note comes before the completion");
    assert!(millis(&done["completedAt"]) - created_at >= 60, "settled after 60 s × 0.001: {done}");
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (before.0 - 2_003 - mtn_fee(2_003), 0));
    sink.wait_for("payout.completed", &timeout_id).await;

    // The list shows all three, newest first.
    let list = api.get(&node.sandbox_url("/v1/payouts"), &key).await;
    list.expect(200);
    let ids: Vec<&str> =
        list.body["data"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![timeout_id.as_str(), rejected_id.as_str(), id.as_str()]);
    node.stop_and_verify();
}

#[tokio::test]
async fn insufficient_funds_is_refused_and_holds_nothing() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "10.00").await;
    // 10.00 plus a 1.10 fee is more than the 10.00 available.
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("10.00", "po-too-much")).await;
    r.expect_error(422, "insufficient_funds");
    assert_eq!(r.body["details"]["available"], "10.00", "{}", r.text);
    assert_eq!(r.body["details"]["required"], "11.10", "{}", r.text);
    assert_eq!(r.body["details"]["currency"], "GHS", "{}", r.text);
    // A currency never funded.
    let r = api
        .post(
            &node.sandbox_url("/v1/payouts"),
            &key,
            json!({
                "from": { "currency": "KES", "amount": "100.00" },
                "to": { "code": "mpesa_ke", "accountNumber": "+254712345678" },
                "externalReference": "po-kes",
            }),
        )
        .await;
    r.expect_error(422, "insufficient_funds");
    assert_eq!(r.body["details"]["available"], "0.00", "{}", r.text);
    assert_eq!(r.body["details"]["currency"], "KES", "{}", r.text);

    let account = account_of(&api, &base, &key, "GHS").await.unwrap();
    assert_eq!(account["availableBalance"], "10.00", "nothing held");
    assert_eq!(account["pendingBalance"], "0.00");
    assert_eq!(account["totalBalance"], "10.00");
    let list = api.get(&node.sandbox_url("/v1/payouts"), &key).await;
    list.expect(200);
    assert_eq!(list.body["data"], json!([]), "no payout was created");
    // The refused reference is free: it can be used once the money is there.
    deposit(&api, &node, &key, "GHS", "1.10").await;
    api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("10.00", "po-too-much")).await.expect(201);
    node.stop_and_verify();
}

/// Brings money onto the live balance: a live collection the operator settles.
async fn fund_live(
    api: &Api,
    node: &Node,
    currency: &str,
    code: &str,
    payer: &str,
    amount: &str,
    reference: &str,
) {
    let key = &node.creds.live_key;
    let r = api
        .post(
            &node.live_url("/v1/collections"),
            key,
            json!({
                "amount": amount, "currency": currency, "code": code,
                "accountNumber": payer, "externalReference": reference,
            }),
        )
        .await;
    r.expect(201);
    let id = r.body["collection"]["id"].as_str().unwrap();
    let admin = node.creds.admin_token.clone();
    let url = node.admin_url(&format!("/admin/v1/live/collections/{id}/complete"));
    let done = api.call("POST", &url, Some(&admin), None).await;
    done.expect(200);
    assert_eq!(done.body["collection"]["status"], "completed");
}

async fn live_key_with_caps(api: &Api, node: &Node, name: &str, caps: Value) -> String {
    let (_, secret) = create_key(
        api,
        &node.live,
        &node.creds.owner_session,
        json!({ "name": name, "scopes": ["*"], "caps": caps }),
    )
    .await;
    assert!(secret.starts_with("sk_live_"));
    secret
}

async fn payout_count(api: &Api, base: &str, key: &str) -> usize {
    let r = api.get(&format!("{base}/v1/payouts?limit=100"), key).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().len()
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn live_spend_caps_refuse_payouts_before_money_moves() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let live = node.live.clone();
    let owner_key = node.creds.live_key.clone();
    fund_live(&api, &node, "GHS", "mtn_gh", MTN_PHONE, "5000.00", "fund-ghs").await;
    fund_live(&api, &node, "KES", "mpesa_ke", "+254712345678", "10000.00", "fund-kes").await;
    // At the reference rates 155.00 GHS and 1295.00 KES are 10.00 USD, 170.50 GHS is 11.00 USD.
    let per_tx = live_key_with_caps(&api, &node, "per-tx", json!({ "perTransactionUsd": "10.00" })).await;
    let daily = live_key_with_caps(&api, &node, "daily", json!({ "dailyUsd": "20.00" })).await;
    let monthly =
        live_key_with_caps(&api, &node, "monthly", json!({ "dailyUsd": "1000.00", "monthlyUsd": "20.00" }))
            .await;
    let url = node.live_url("/v1/payouts");

    let refused = |r: &Resp, cap: &str, limit: &str, attempted: &str| {
        r.expect_error(422, "spend_cap_exceeded");
        assert_eq!(r.body["details"]["cap"], cap, "{}", r.text);
        assert_eq!(r.body["details"]["limitUsd"], limit, "{}", r.text);
        assert_eq!(r.body["details"]["attemptedUsd"], attempted, "{}", r.text);
    };
    let ghs_before = balances_minor(&api, &live, &owner_key, "GHS", 2).await;
    let count_before = payout_count(&api, &live, &owner_key).await;

    // Per transaction: above the cap is refused, the cap itself is allowed.
    let r = api.post(&url, &per_tx, payout_body("170.50", "cap-tx-1")).await;
    refused(&r, "perTransactionUsd", "10.00", "11.00");
    assert_eq!(balances_minor(&api, &live, &owner_key, "GHS", 2).await, ghs_before, "no money moved");
    assert_eq!(payout_count(&api, &live, &owner_key).await, count_before, "no payout created");
    api.post(&url, &per_tx, payout_body("155.00", "cap-tx-2")).await.expect(201);

    // Daily: 10 USD then 11 USD is 21 USD, above 20; a further 10 USD fits exactly.
    api.post(&url, &daily, payout_body("155.00", "cap-day-1")).await.expect(201);
    let before = balances_minor(&api, &live, &owner_key, "GHS", 2).await;
    let count = payout_count(&api, &live, &owner_key).await;
    let r = api.post(&url, &daily, payout_body("170.50", "cap-day-2")).await;
    refused(&r, "dailyUsd", "20.00", "11.00");
    assert_eq!(balances_minor(&api, &live, &owner_key, "GHS", 2).await, before, "no money moved");
    assert_eq!(payout_count(&api, &live, &owner_key).await, count);
    // Caps count across currencies: 10 USD more in KES reaches the cap exactly...
    let kes = json!({
        "from": { "currency": "KES", "amount": "1295.00" },
        "to": { "code": "mpesa_ke", "accountNumber": "+254712345678" },
        "externalReference": "cap-day-kes",
    });
    api.post(&url, &daily, kes).await.expect(201);
    // ...and one cent more does not fit.
    let r = api.post(&url, &daily, payout_body("1.00", "cap-day-3")).await;
    refused(&r, "dailyUsd", "20.00", "0.07");

    // Monthly, with a generous daily cap.
    api.post(&url, &monthly, payout_body("155.00", "cap-month-1")).await.expect(201);
    let before = balances_minor(&api, &live, &owner_key, "GHS", 2).await;
    let r = api.post(&url, &monthly, payout_body("170.50", "cap-month-2")).await;
    refused(&r, "monthlyUsd", "20.00", "11.00");
    assert_eq!(balances_minor(&api, &live, &owner_key, "GHS", 2).await, before, "no money moved");

    // A replay of an accepted payout is not a new spend, even at the cap.
    let replay = api.post(&url, &daily, payout_body("155.00", "cap-day-1")).await;
    replay.expect(200);

    // Concurrent payouts cannot overrun a cap together: 10 × 10 USD against 50 USD a day.
    let racing = live_key_with_caps(&api, &node, "racing", json!({ "dailyUsd": "50.00" })).await;
    let before = balances_minor(&api, &live, &owner_key, "GHS", 2).await;
    let mut tasks = Vec::new();
    for i in 0..10 {
        let (api, url, key) = (api.clone(), url.clone(), racing.clone());
        tasks.push(tokio::spawn(async move {
            let r = api.post(&url, &key, payout_body("155.00", &format!("cap-race-{i}"))).await;
            (r.status, r.body["details"]["cap"].as_str().unwrap_or_default().to_string())
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let accepted = outcomes.iter().filter(|(s, _)| *s == 201).count();
    let refused = outcomes.iter().filter(|(s, cap)| *s == 422 && cap == "dailyUsd").count();
    assert_eq!((accepted, refused), (5, 5), "{outcomes:?}");
    assert_eq!(
        balances_minor(&api, &live, &owner_key, "GHS", 2).await,
        (before.0 - 5 * (15_500 + mtn_fee(15_500)), 0),
        "five payouts held"
    );

    // The node's own key has no caps.
    api.post(&url, &owner_key, payout_body("1000.00", "cap-none")).await.expect(201);
    node.stop_and_verify();
}

#[tokio::test]
async fn live_payouts_wait_for_the_operator() {
    let Sandbox { node, api, .. } = Sandbox::start();
    let (key, live, admin) = (node.creds.live_key.clone(), node.live.clone(), node.creds.admin_token.clone());

    // A live collection is pending until the operator confirms it.
    let r = api
        .post(
            &node.live_url("/v1/collections"),
            &key,
            json!({ "amount": "500.00", "currency": "GHS", "code": "mtn_gh",
                    "accountNumber": MTN_PHONE, "externalReference": "live-col" }),
        )
        .await;
    let (_, collection_id) = r.created("collection", "col_");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (0, 50_000), "pending until settled");
    let url = node.admin_url(&format!("/admin/v1/live/collections/{collection_id}/complete"));
    api.call("POST", &url, Some(&admin), None).await.expect(200);
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, (50_000, 0));
    let names = wait_for_events(&api, &live, &key, &collection_id, &["collection.completed"]).await;
    assert_eq!(names, vec!["collection.pending", "collection.completed"]);

    // A live payout holds amount + fee and stays pending.
    let r = api.post(&node.live_url("/v1/payouts"), &key, payout_body("100.00", "live-po-1")).await;
    let (_, id) = r.created("payout", "pay_");
    let held = (50_000 - 10_000 - mtn_fee(10_000), 0);
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, held, "the hold shows on available");
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let still = get_payout(&api, &live, &key, &id).await;
    assert_eq!(still["status"], "pending", "no rail settles a live payout by itself");
    let waiting =
        still["timeline"].as_array().unwrap().iter().find(|e| e["title"] == "Waiting for the operator");
    assert_eq!(waiting.map(|e| &e["kind"]), Some(&json!("operator")), "no rail was sent it: {still}");

    // Without (or with a wrong) operator token the admin API refuses.
    let complete = node.admin_url(&format!("/admin/v1/live/payouts/{id}/complete"));
    api.call("POST", &complete, None, None).await.expect_error(401, "unauthorized");
    api.call("POST", &complete, Some("adm_wrong"), None).await.expect_error(401, "unauthorized");
    api.call("POST", &complete, Some(&key), None).await.expect_error(401, "unauthorized");
    assert_eq!(get_payout(&api, &live, &key, &id).await["status"], "pending");

    let r = api.call("POST", &complete, Some(&admin), None).await;
    r.expect(200);
    assert_eq!(r.body["payout"]["status"], "completed");
    assert_eq!(get_payout(&api, &live, &key, &id).await["status"], "completed");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, held, "the hold became the debit");
    assert_eq!(
        wait_for_events(&api, &live, &key, &id, &["payout.completed"]).await,
        vec!["payout.completed"]
    );
    // A second settlement, either way, is refused.
    api.call("POST", &complete, Some(&admin), None).await.expect_error(409, "invalid_state");
    let fail = node.admin_url(&format!("/admin/v1/live/payouts/{id}/fail"));
    api.call("POST", &fail, Some(&admin), None).await.expect_error(409, "invalid_state");

    // Failing a payout refunds it, with the operator's message.
    let r = api.post(&node.live_url("/v1/payouts"), &key, payout_body("40.00", "live-po-2")).await;
    let (_, failed_id) = r.created("payout", "pay_");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await.0, held.0 - 4_000 - mtn_fee(4_000));
    let fail = node.admin_url(&format!("/admin/v1/live/payouts/{failed_id}/fail"));
    let r = api
        .send("POST", &fail, |rb| rb.bearer_auth(&admin).json(&json!({ "message": "Wallet is frozen" })))
        .await;
    r.expect(200);
    assert_eq!(r.body["payout"]["status"], "failed");
    let failed = get_payout(&api, &live, &key, &failed_id).await;
    assert_eq!(failed["statusMessage"], "Wallet is frozen");
    assert_eq!(balances_minor(&api, &live, &key, "GHS", 2).await, held, "refunded in full");
    assert_eq!(
        wait_for_events(&api, &live, &key, &failed_id, &["payout.failed"]).await,
        vec!["payout.failed"]
    );
    let complete = node.admin_url(&format!("/admin/v1/live/payouts/{failed_id}/complete"));
    api.call("POST", &complete, Some(&admin), None).await.expect_error(409, "invalid_state");

    // Unknown ids and actions.
    let unknown = node.admin_url("/admin/v1/live/payouts/pay_ghs_nope/complete");
    api.call("POST", &unknown, Some(&admin), None).await.expect_error(404, "not_found");
    let odd = node.admin_url(&format!("/admin/v1/live/payouts/{id}/approve"));
    api.call("POST", &odd, Some(&admin), None).await.expect_error(404, "not_found");
    node.stop_and_verify();
}

/// Sends `count` identical requests at once; returns (status, id) of each.
async fn storm(
    api: &Api,
    url: &str,
    key: &str,
    body: &Value,
    wrapper: &str,
    count: usize,
) -> Vec<(u16, String)> {
    let mut tasks = Vec::new();
    for _ in 0..count {
        let (api, url, key, body, wrapper) =
            (api.clone(), url.to_string(), key.to_string(), body.clone(), wrapper.to_string());
        tasks.push(tokio::spawn(async move {
            let r = api.post(&url, &key, body).await;
            (r.status, r.body[wrapper.as_str()]["id"].as_str().unwrap_or_default().to_string())
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[track_caller]
fn exactly_one_created(results: &[(u16, String)], what: &str) -> String {
    let created = results.iter().filter(|(s, _)| *s == 201).count();
    let replayed = results.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!((created, replayed), (1, results.len() - 1), "{what}: one 201, the rest 200: {results:?}");
    let ids: HashSet<&String> = results.iter().map(|(_, id)| id).collect();
    assert_eq!(ids.len(), 1, "{what}: every answer names the same resource: {results:?}");
    results[0].1.clone()
}

/// Posts `body` twice: the first creates a `wrapper` (201), the second
/// answers 200 with the same one. Returns both answers and the id.
async fn create_twice(api: &Api, url: &str, key: &str, body: &Value, wrapper: &str) -> (Resp, Resp, String) {
    let first = api.post(url, key, body.clone()).await;
    first.expect(201);
    let id = first.body[wrapper]["id"].as_str().unwrap().to_string();
    let again = api.post(url, key, body.clone()).await;
    again.expect(200);
    assert_eq!(again.body[wrapper]["id"], id.as_str(), "the original {wrapper}");
    (first, again, id)
}

/// 32 identical requests of `body`, a reference nothing used before,
/// create exactly one `wrapper`, which the list at `url` then holds once
/// beside the one created before it. Returns its id.
async fn storm_creates_one(
    api: &Api,
    url: &str,
    key: &str,
    body: &Value,
    wrapper: &str,
    plural: &str,
) -> String {
    let results = storm(api, url, key, body, wrapper, 32).await;
    let storm_id = exactly_one_created(&results, plural);
    let ids = list_ids(api, url, key).await;
    assert_eq!(ids.iter().filter(|i| **i == storm_id).count(), 1, "{ids:?}");
    assert_eq!(ids.len(), 2, "two {plural} in all: {ids:?}");
    storm_id
}

async fn list_ids(api: &Api, url: &str, key: &str) -> Vec<String> {
    let r = api.get(&format!("{url}?limit=100"), key).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[expect(clippy::too_many_lines)]
async fn idempotency_on_every_money_moving_endpoint() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    deposit(&api, &node, &key, "USD", "100.00").await;

    // Payouts.
    let url = node.sandbox_url("/v1/payouts");
    let body = payout_body("25.00", "idem-po");
    let (_, _, id) = create_twice(&api, &url, &key, &body, "payout").await;
    // The same body with its keys in another order and other spacing is the same request.
    let raw = format!(
        r#"{{ "narration": "flow test", "externalReference": "idem-po",
             "to": {{ "accountNumber": "{MTN_PHONE}", "code": "mtn_gh" }},
             "from": {{ "amount": "25.00", "currency": "GHS" }} }}"#
    );
    let reordered = api
        .send("POST", &url, |rb| rb.bearer_auth(&key).header("content-type", "application/json").body(raw))
        .await;
    reordered.expect(200);
    assert_eq!(reordered.body["payout"]["id"], id.as_str());
    let changed = api.post(&url, &key, payout_body("26.00", "idem-po")).await;
    changed.expect_error(409, "duplicate");
    assert_eq!(changed.field(), Some("externalReference"));
    let done = wait_status(&api, &base, &key, &id, "completed").await;
    let after_one = 100_000 - 2_500 - mtn_fee(2_500);
    assert_eq!(balances_minor(&api, &base, &key, "GHS", 2).await, (after_one, 0));
    let replay = api.post(&url, &key, body).await;
    replay.expect(200);
    assert_eq!(replay.body["payout"]["id"], done["id"], "a replay after settlement still names it");

    let storm_body = payout_body("30.00", "idem-po-storm");
    let storm_id = storm_creates_one(&api, &url, &key, &storm_body, "payout", "payouts").await;
    wait_status(&api, &base, &key, &storm_id, "completed").await;
    assert_eq!(
        balances_minor(&api, &base, &key, "GHS", 2).await,
        (after_one - 3_000 - mtn_fee(3_000), 0),
        "the balance moved once"
    );

    // Collections (NGN: its own balance).
    let url = node.sandbox_url("/v1/collections");
    let collection = |amount: &str, reference: &str| {
        json!({ "amount": amount, "currency": "NGN", "code": "opay_ng",
                "accountNumber": "+2348012345678", "externalReference": reference })
    };
    let (_, _, id) = create_twice(&api, &url, &key, &collection("1000.00", "idem-col"), "collection").await;
    api.post(&url, &key, collection("1001.00", "idem-col")).await.expect_error(409, "duplicate");
    let storm_body = collection("2000.00", "idem-col-storm");
    let storm_id = storm_creates_one(&api, &url, &key, &storm_body, "collection", "collections").await;
    for c in [&id, &storm_id] {
        poll_until(&api, &format!("{url}/{c}"), &key, |b| b["collection"]["status"] == "completed").await;
    }
    assert_eq!(balances_minor(&api, &base, &key, "NGN", 2).await, (300_000, 0), "credited once each");

    // Orders.
    let url = node.sandbox_url("/v1/orders");
    let order = |amount: &str, reference: &str| {
        json!({ "from": { "method": "mobile_money", "currency": "GHS", "amount": amount },
                "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
                "externalReference": reference })
    };
    let (first, again, id) = create_twice(&api, &url, &key, &order("50.00", "idem-ord"), "order").await;
    assert!(id.starts_with("ord_"));
    assert_eq!(again.body["order"]["depositInstructions"], first.body["order"]["depositInstructions"]);
    api.post(&url, &key, order("51.00", "idem-ord")).await.expect_error(409, "duplicate");
    storm_creates_one(&api, &url, &key, &order("60.00", "idem-ord-storm"), "order", "orders").await;

    // Conversions (USD → KES).
    let url = node.sandbox_url("/v1/conversions");
    let q1 = quote(&api, &base, &key, "USD", "10.00", "KES").await;
    let q2 = quote(&api, &base, &key, "USD", "10.00", "KES").await;
    let body = json!({ "quoteId": q1["id"], "externalReference": "idem-conv" });
    create_twice(&api, &url, &key, &body, "conversion").await;
    api.post(&url, &key, json!({ "quoteId": q2["id"], "externalReference": "idem-conv" }))
        .await
        .expect_error(409, "duplicate");
    let q3 = quote(&api, &base, &key, "USD", "20.00", "KES").await;
    let storm_body = json!({ "quoteId": q3["id"], "externalReference": "idem-conv-storm" });
    storm_creates_one(&api, &url, &key, &storm_body, "conversion", "conversions").await;
    assert_eq!(
        balances_minor(&api, &base, &key, "USD", 2).await,
        (7_000, 0),
        "USD debited once per conversion"
    );
    let kes = minor(q1["to"]["amount"].as_str().unwrap(), 2) + minor(q3["to"]["amount"].as_str().unwrap(), 2);
    assert_eq!(
        balances_minor(&api, &base, &key, "KES", 2).await,
        (kes, 0),
        "KES credited once per conversion"
    );
    node.stop_and_verify();
}

/// Destinations are checked as the method needs before any money moves
/// (issue 15.8): a mobile number of the method's country in E.164, a bank
/// account number by the country's rule, a wallet address by its chain.
#[tokio::test]
async fn payout_destinations_are_validated_by_method() {
    let (node, api, key) = unthrottled_node();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    deposit(&api, &node, &key, "NGN", "10000.00").await;
    deposit(&api, &node, &key, "USDC", "1000.00").await;
    let url = node.sandbox_url("/v1/payouts");
    let payout = |currency: &str, to: Value, reference: &str| {
        let from = json!({ "currency": currency, "amount": "150.00" });
        json!({ "from": from, "to": to, "externalReference": reference })
    };
    let refused = [
        ("GHS", json!({ "code": "mtn_gh", "accountNumber": "hello" }), "to.accountNumber"),
        ("GHS", json!({ "code": "mtn_gh", "accountNumber": "0241234567" }), "to.accountNumber"),
        ("GHS", json!({ "code": "mtn_gh", "accountNumber": "+254712345678" }), "to.accountNumber"),
        ("NGN", json!({ "code": "bank_ng", "accountNumber": "012345678" }), "to.accountNumber"),
        ("USDC", json!({ "code": "usdc_base", "address": "not-an-address" }), "to.address"),
        (
            "USDC",
            json!({ "code": "usdc_base", "address": "0x9858efFD232B4033E47d90003D41EC34EcaEda94" }),
            "to.address",
        ),
        (
            "USDC",
            json!({ "code": "usdc_solana", "address": "0x9858EfFD232B4033E47d90003D41EC34EcaEda94" }),
            "to.address",
        ),
    ];
    for (i, (currency, to, field)) in refused.into_iter().enumerate() {
        let r = api.post(&url, &key, payout(currency, to.clone(), &format!("bad-{i}"))).await;
        r.expect_invalid(field);
        assert!(!r.body["details"]["reason"].as_str().unwrap_or_default().is_empty(), "{to}: {}", r.text);
    }
    // A recipient meets the same rules.
    let recipient = json!({ "name": "Ama", "code": "mtn_gh", "accountNumber": "hello" });
    api.post(&node.sandbox_url("/v1/recipients"), &key, recipient).await.expect_invalid("accountNumber");
    let accepted = [
        ("GHS", json!({ "code": "mtn_gh", "accountNumber": "+233241234567" })),
        ("NGN", json!({ "code": "bank_ng", "accountNumber": "0123456789" })),
        ("USDC", json!({ "code": "usdc_base", "address": "0x9858EfFD232B4033E47d90003D41EC34EcaEda94" })),
        ("USDC", json!({ "code": "usdc_base", "address": "0x9858effd232b4033e47d90003d41ec34ecaeda94" })),
        ("USDC", json!({ "code": "usdc_solana", "address": "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV" })),
    ];
    for (i, (currency, to)) in accepted.into_iter().enumerate() {
        api.post(&url, &key, payout(currency, to, &format!("good-{i}"))).await.expect(201);
    }
    assert_eq!(
        balances_minor(&api, &node.sandbox, &key, "GHS", 2).await.0,
        100_000 - 15_000 - mtn_fee(15_000),
        "only the valid payout moved money"
    );
}

/// Sandbox keys with spend caps enforce them as live keys do, so a merchant
/// can test caps before going live (issue 15.16).
#[tokio::test]
async fn sandbox_spend_caps_are_enforced_too() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    deposit(&api, &node, &node.creds.sandbox_key, "GHS", "1000.00").await;
    let (_, capped) = create_key(
        &api,
        &node.sandbox,
        &node.creds.owner_session,
        json!({ "name": "capped", "scopes": ["*"], "caps": { "perTransactionUsd": "10.00" } }),
    )
    .await;
    assert!(capped.starts_with("sk_test_"));
    let url = node.sandbox_url("/v1/payouts");
    // At the reference rate 170.50 GHS is 11.00 USD; 155.00 GHS is 10.00 USD.
    let r = api.post(&url, &capped, payout_body("170.50", "sb-cap-1")).await;
    r.expect_error(422, "spend_cap_exceeded");
    assert_eq!(r.body["details"]["cap"], "perTransactionUsd");
    assert_eq!(balance(&api, &node.sandbox, &capped, "GHS").await, "1000.00", "no money moved");
    api.post(&url, &capped, payout_body("155.00", "sb-cap-2")).await.expect(201);
}

/// Free text has stated limits (issue 15.9): a narration of at most 500
/// characters, metadata of at most 50 keys of 40 characters with values of
/// 500, and a webhook URL of at most 2048 characters.
#[tokio::test]
async fn free_text_and_metadata_have_limits() {
    let (node, api, key) = unthrottled_node();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let url = node.sandbox_url("/v1/payouts");
    let mut body = payout_body("10.00", "lim-1");
    body["narration"] = json!("n".repeat(501));
    api.post(&url, &key, body).await.expect_invalid("narration");
    let mut body = payout_body("10.00", "lim-2");
    body["metadata"] = json!({ "note": "v".repeat(501) });
    api.post(&url, &key, body).await.expect_invalid("metadata.note");
    let mut body = payout_body("10.00", "lim-3");
    body["metadata"] = Value::Object((0..51).map(|i| (format!("k{i}"), json!(i))).collect());
    api.post(&url, &key, body).await.expect_invalid("metadata");
    let mut body = payout_body("10.00", "lim-4");
    body["metadata"] = json!({ "k".repeat(41): "v" });
    api.post(&url, &key, body).await.expect_invalid("metadata");
    let mut body = payout_body("10.00", "lim-5");
    body["narration"] = json!("n".repeat(500));
    body["metadata"] = json!({ "k".repeat(40): "v".repeat(500), "n": 1, "b": true, "z": null });
    api.post(&url, &key, body).await.expect(201);
    let hook = json!({ "url": format!("https://example.com/{}", "a".repeat(2048)), "events": ["*"] });
    let r = api.post(&node.sandbox_url("/v1/webhooks/endpoints"), &key, hook).await;
    r.expect_invalid("url");
}

/// An amount string in exponent notation is refused; a JSON number written
/// with an exponent means what it says (issue 15.10).
#[tokio::test]
async fn exponent_notation_in_amount_strings_is_refused() {
    let (node, api, key) = unthrottled_node();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let url = node.sandbox_url("/v1/payouts");
    let mut body = payout_body("10.00", "exp-1");
    body["from"]["amount"] = json!("1e3");
    let r = api.post(&url, &key, body).await;
    r.expect_invalid("from.amount");
    assert!(r.text.contains("exponent"), "{}", r.text);
    let mut body = payout_body("10.00", "exp-2");
    body["from"]["amount"] = serde_json::from_str("1.5e1").unwrap();
    let r = api.post(&url, &key, body).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["from"]["amount"], "15.00");
}

/// The payouts list honours `status` and `externalReference` (issue 15.13),
/// and refuses a status payouts never have.
#[tokio::test]
async fn the_payouts_list_filters_by_status_and_reference() {
    let (node, api, key) = unthrottled_node();
    let base = node.sandbox.clone();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let url = node.sandbox_url("/v1/payouts");
    // Cents 01: rejected by the sandbox rail; default cents complete.
    let ok = api.post(&url, &key, payout_body("20.00", "f-ok")).await.body["payout"]["id"].clone();
    let bad = api.post(&url, &key, payout_body("20.01", "f-bad")).await.body["payout"]["id"].clone();
    wait_status(&api, &base, &key, ok.as_str().unwrap(), "completed").await;
    wait_status(&api, &base, &key, bad.as_str().unwrap(), "failed").await;
    let ids = |r: &Resp| -> Vec<Value> {
        r.body["data"].as_array().unwrap().iter().map(|p| p["id"].clone()).collect()
    };
    let r = api.get(&format!("{url}?status=failed"), &key).await;
    r.expect(200);
    assert_eq!(ids(&r), vec![bad.clone()], "only the failed one: {}", r.text);
    let r = api.get(&format!("{url}?status=completed&limit=1"), &key).await;
    assert_eq!(ids(&r), vec![ok.clone()]);
    let r = api.get(&format!("{url}?externalReference=f-ok"), &key).await;
    assert_eq!(ids(&r), vec![ok]);
    let r = api.get(&format!("{url}?externalReference=nope"), &key).await;
    assert!(ids(&r).is_empty());
    api.get(&format!("{url}?status=done"), &key).await.expect_invalid("status");
}
