//! The operator's admin API over HTTP: authentication, every listing and
//! search, and every action.

use std::time::Duration;

use crate::support::{Api, Node, Options, deposit, eventually, mtn_payout};
use serde_json::json;

fn admin_paths(node: &Node) -> Vec<String> {
    [
        "/admin/v1/status",
        "/admin/v1/organizations",
        "/admin/v1/sandbox/accounts",
        "/admin/v1/live/payouts",
        "/admin/v1/sandbox/collections",
        "/admin/v1/sandbox/orders",
        "/admin/v1/sandbox/disputes",
        "/admin/v1/sandbox/webhooks/endpoints",
        "/admin/v1/sandbox/webhooks/deliveries",
        "/admin/v1/requests/req_x",
    ]
    .iter()
    .map(|p| node.admin_url(p))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_admin_path_needs_the_operator_token() {
    let node = Node::start(Options::unthrottled());
    // Wrong tokens are limited per address (20 in 15 minutes): each path
    // is asked from an address of its own.
    for (n, url) in (10..).zip(admin_paths(&node)) {
        let api = Api::from_address([127, 0, 0, n]);
        api.call("GET", &url, None, None).await.expect_error(401, "unauthorized");
        api.call("GET", &url, Some("adm_wrong"), None).await.expect_error(401, "unauthorized");
        // An API key is not an operator token.
        api.call("GET", &url, Some(&node.creds.sandbox_key), None).await.expect_error(401, "unauthorized");
    }
    let post = node.admin_url(&format!("/admin/v1/organizations/{}/suspend", node.creds.organization_id));
    Api::new().call("POST", &post, None, None).await.expect_error(401, "unauthorized");
}

/// Issue 29.4: wrong operator tokens were never throttled. Sixty sent at
/// once from one address are checked at most twenty times (the rest are
/// `429` with the spec's error body and `Retry-After`); one at a time
/// afterwards, exactly twenty are ever refused as wrong. From then on that
/// address waits even with the right token (else the answer would tell a
/// guess right), while another address and a request with no token are
/// unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_operator_tokens_are_throttled_per_address() {
    let node = Node::start(Options::unthrottled());
    let url = node.admin_url("/admin/v1/organizations");
    let guesser = Api::from_address([127, 0, 0, 40]);
    let guesses: Vec<_> = (0..60)
        .map(|i| {
            let (guesser, url) = (guesser.clone(), url.clone());
            tokio::spawn(async move { guesser.call("GET", &url, Some(&format!("adm_guess{i}")), None).await })
        })
        .collect();
    let mut wrong = 0;
    for guess in guesses {
        let r = guess.await.unwrap();
        if r.status == 401 {
            r.expect_error(401, "unauthorized");
            wrong += 1;
            continue;
        }
        r.expect_error(429, "rate_limited");
        let retry_after = r.body["details"]["retryAfter"].as_u64().unwrap();
        assert!((1..=900).contains(&retry_after), "{}", r.text);
        assert_eq!(r.header("retry-after"), Some(retry_after.to_string().as_str()));
        assert_eq!(r.body["requestId"], r.header("x-request-id").unwrap(), "{}", r.text);
        assert!(r.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", r.text);
    }
    assert!(wrong <= 20, "{wrong} wrong tokens were checked");
    for _ in 0..30 {
        let r = guesser.call("GET", &url, Some("adm_one_more_guess"), None).await;
        match r.status {
            401 => wrong += 1,
            _ => {
                r.expect_error(429, "rate_limited");
            }
        }
    }
    assert_eq!(wrong, 20, "wrong tokens checked from one address");
    let admin = node.creds.admin_token.as_str();
    guesser.get(&url, admin).await.expect_error(429, "rate_limited");
    guesser.call("GET", &url, None, None).await.expect_error(401, "unauthorized");
    Api::from_address([127, 0, 0, 41]).get(&url, admin).await.expect(200);
    Api::new().get(&url, admin).await.expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organizations_accounts_and_suspension() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    let org = node.creds.organization_id.clone();
    deposit(&api, &node, &node.creds.sandbox_key, "USD", "40.00").await;
    deposit(&api, &node, &node.creds.sandbox_key, "GHS", "12.50").await;

    let list = api.get(&node.admin_url("/admin/v1/organizations"), &admin).await;
    list.expect(200);
    assert_eq!(list.body["data"][0]["id"], org.as_str());
    assert_eq!(list.body["data"][0]["status"], "active");

    let one = api.get(&node.admin_url(&format!("/admin/v1/organizations/{org}")), &admin).await;
    one.expect(200);
    let sandbox_balances = one.body["organization"]["balances"]["sandbox"].as_array().unwrap().clone();
    assert_eq!(sandbox_balances.len(), 2, "{sandbox_balances:?}");
    assert_eq!(one.body["organization"]["balances"]["live"].as_array().unwrap().len(), 0);
    api.get(&node.admin_url("/admin/v1/organizations/org_missing"), &admin)
        .await
        .expect_error(404, "not_found");

    let accounts = api.get(&node.admin_url("/admin/v1/sandbox/accounts"), &admin).await;
    accounts.expect(200);
    let totals = accounts.body["totals"].as_array().unwrap();
    let usd = totals.iter().find(|t| t["currency"] == "USD").expect("USD total");
    assert_eq!(usd["availableBalance"], "40.00");
    assert_eq!(usd["accounts"], 1);
    assert_eq!(accounts.body["ledger"]["journalLength"], 2);
    assert!(accounts.body["ledger"]["lastVerify"].is_null());
    assert!(accounts.body["data"].as_array().unwrap().iter().all(|a| a["organizationId"] == org.as_str()));
    api.get(&node.admin_url("/admin/v1/moon/accounts"), &admin).await.expect_error(404, "not_found");

    let verify = api.post(&node.admin_url("/admin/v1/sandbox/verify"), &admin, json!({})).await;
    verify.expect(200);
    assert_eq!(verify.body["verify"]["consistent"], true, "{}", verify.text);
    let again = api.get(&node.admin_url("/admin/v1/sandbox/accounts"), &admin).await;
    assert_eq!(again.body["ledger"]["lastVerify"]["consistent"], true);

    // Suspension: the organization's keys get 403 organization_suspended until reinstated.
    let suspended =
        api.post(&node.admin_url(&format!("/admin/v1/organizations/{org}/suspend")), &admin, json!({})).await;
    suspended.expect(200);
    assert_eq!(suspended.body["organization"]["status"], "suspended");
    api.get(&node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key)
        .await
        .expect_error(403, "organization_suspended");
    api.get(&node.live_url("/v1/accounts"), &node.creds.live_key)
        .await
        .expect_error(403, "organization_suspended");
    let reinstated = api
        .post(&node.admin_url(&format!("/admin/v1/organizations/{org}/reinstate")), &admin, json!({}))
        .await;
    assert_eq!(reinstated.body["organization"]["status"], "active");
    api.get(&node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key).await.expect(200);

    let status = api.get(&node.admin_url("/admin/v1/status"), &admin).await;
    status.expect(200);
    assert!(status.body["status"]["version"].is_string());
    assert!(status.body["status"]["uptimeSeconds"].is_u64());
    assert_eq!(status.body["status"]["sandbox"]["journalLength"], 2);
    assert!(status.body["status"]["sandbox"]["commits"].as_u64().unwrap() >= 2);
    assert!(status.body["status"]["live"]["databaseBytes"].as_u64().unwrap() > 0);
    node.stop_and_verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn activity_search_detail_and_manual_settlement() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    let live = node.creds.live_key.clone();

    // Live money arrives through a collection the operator confirms.
    let collection = api
        .post(
            &node.live_url("/v1/collections"),
            &live,
            json!({ "amount": "500.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": "+233241234567", "externalReference": "col-live-1" }),
        )
        .await;
    let (_, collection_id) = collection.created("collection", "col_");
    let settle =
        |kind: &str, id: &str, action: &str| node.admin_url(&format!("/admin/v1/live/{kind}/{id}/{action}"));
    api.call("POST", &settle("collections", &collection_id, "complete"), None, None)
        .await
        .expect_error(401, "unauthorized");
    let done = api.post(&settle("collections", &collection_id, "complete"), &admin, json!({})).await;
    done.expect(200);
    assert_eq!(done.body["collection"]["status"], "completed");
    api.post(&settle("collections", &collection_id, "fail"), &admin, json!({}))
        .await
        .expect_error(409, "invalid_state");

    let first = api.post(&node.live_url("/v1/payouts"), &live, mtn_payout("100.00", "live-pay-1")).await;
    first.expect(201);
    let second = api.post(&node.live_url("/v1/payouts"), &live, mtn_payout("50.00", "live-pay-2")).await;
    second.expect(201);
    let first_id = first.body["payout"]["id"].as_str().unwrap().to_string();
    let second_id = second.body["payout"]["id"].as_str().unwrap().to_string();

    // Search by id, by externalReference, by status.
    let by_reference = api.get(&node.admin_url("/admin/v1/live/payouts?q=live-pay-2"), &admin).await;
    by_reference.expect(200);
    assert_eq!(by_reference.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(by_reference.body["data"][0]["id"], second_id.as_str());
    assert_eq!(by_reference.body["data"][0]["organizationId"], node.creds.organization_id.as_str());
    let by_id = api.get(&node.admin_url(&format!("/admin/v1/live/payouts?q={first_id}")), &admin).await;
    assert_eq!(by_id.body["data"][0]["id"], first_id.as_str());
    let pending = api.get(&node.admin_url("/admin/v1/live/payouts?status=pending"), &admin).await;
    assert_eq!(pending.body["data"].as_array().unwrap().len(), 2);
    let page = api.get(&node.admin_url("/admin/v1/live/payouts?limit=1"), &admin).await;
    assert_eq!(page.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["hasMore"], true);
    let cursor = page.body["nextCursor"].as_str().unwrap().to_string();
    let next =
        api.get(&node.admin_url(&format!("/admin/v1/live/payouts?limit=1&cursor={cursor}")), &admin).await;
    assert_eq!(next.body["data"].as_array().unwrap().len(), 1);
    assert_ne!(next.body["data"][0]["id"], page.body["data"][0]["id"]);
    assert_eq!(next.body["hasMore"], false);

    // The operator completes one and fails the other.
    let completed = api
        .post(&settle("payouts", &first_id, "complete"), &admin, json!({ "message": "Paid at the bank" }))
        .await;
    completed.expect(200);
    assert_eq!(completed.body["payout"]["status"], "completed");
    let failed = api.post(&settle("payouts", &second_id, "fail"), &admin, json!({})).await;
    assert_eq!(failed.body["payout"]["status"], "failed");
    api.post(&settle("payouts", &second_id, "complete"), &admin, json!({}))
        .await
        .expect_error(409, "invalid_state");
    api.post(&settle("payouts", &second_id, "explode"), &admin, json!({}))
        .await
        .expect_error(404, "not_found");
    api.post(&settle("payouts", "pay_ghs_missing", "complete"), &admin, json!({}))
        .await
        .expect_error(404, "not_found");

    let detail = api.get(&node.admin_url(&format!("/admin/v1/live/payouts/{first_id}")), &admin).await;
    detail.expect(200);
    let timeline = detail.body["payout"]["timeline"].as_array().unwrap();
    let ats: Vec<&str> = timeline.iter().map(|e| e["at"].as_str().unwrap()).collect();
    let mut sorted = ats.clone();
    sorted.sort();
    assert_eq!(ats, sorted, "the timeline is in time order");
    assert!(timeline.iter().any(|e| e["detail"] == "Paid at the bank"));
    let completed_list = api.get(&node.admin_url("/admin/v1/live/payouts?status=completed"), &admin).await;
    assert_eq!(completed_list.body["data"].as_array().unwrap().len(), 1);

    let collections = api.get(&node.admin_url("/admin/v1/live/collections?q=col-live-1"), &admin).await;
    assert_eq!(collections.body["data"][0]["id"], collection_id.as_str());
    api.get(&node.admin_url(&format!("/admin/v1/live/collections/{collection_id}")), &admin)
        .await
        .expect(200);
    let orders = api.get(&node.admin_url("/admin/v1/live/orders"), &admin).await;
    orders.expect(200);
    let disputes = api.get(&node.admin_url("/admin/v1/live/disputes"), &admin).await;
    disputes.expect(200);
    node.stop_and_verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn webhook_health_retry_enable_and_request_lookup() {
    // The node's own clock: its next scheduled attempt is 30 s away, so the
    // manual retry below never finds one in flight (it would then answer
    // with that attempt instead of making its own).
    let node = Node::start(Options { time_scale: Some(1.0), ..Options::unthrottled() });
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    let key = node.creds.sandbox_key.clone();
    // Nothing listens on port 9 of loopback: every attempt fails at once.
    let endpoint = api
        .post(
            &node.sandbox_url("/v1/webhooks/endpoints"),
            &key,
            json!({ "url": "http://127.0.0.1:9/hook", "events": ["*"] }),
        )
        .await;
    endpoint.expect(201);
    let endpoint_id = endpoint.body["webhookEndpoint"]["id"].as_str().unwrap().to_string();
    let deposit_resp = api
        .post(
            &node.sandbox_url("/v1/simulations/deposits"),
            &key,
            json!({ "currency": "USD", "amount": "5.00" }),
        )
        .await;
    deposit_resp.expect(201);
    let request_id = deposit_resp.request_id();

    let health = eventually("a failed attempt", Duration::from_secs(10), || async {
        let list = api.get(&node.admin_url("/admin/v1/sandbox/webhooks/endpoints"), &admin).await;
        let row = list.body["data"].as_array()?.iter().find(|e| e["id"] == endpoint_id.as_str())?.clone();
        (row["consecutiveFailures"].as_u64()? >= 1).then_some(row)
    })
    .await;
    assert_eq!(health["organizationId"], node.creds.organization_id.as_str());
    assert_eq!(health["successRate"], 0.0);
    assert!(health["averageLatencyMs"].is_number());
    assert_eq!(health["pendingDeliveries"], 1);
    assert!(health["lastAttemptAt"].is_string());

    let attempts = api
        .get(&node.admin_url(&format!("/admin/v1/sandbox/webhooks/endpoints/{endpoint_id}/attempts")), &admin)
        .await;
    attempts.expect(200);
    let first = &attempts.body["data"][0];
    assert_eq!(first["succeeded"], false);
    assert_eq!(first["event"], "account.credited");
    assert!(first["error"].as_str().unwrap().contains("connect"), "{first}");

    let pending =
        api.get(&node.admin_url("/admin/v1/sandbox/webhooks/deliveries?status=pending"), &admin).await;
    let delivery_id = pending.body["data"][0]["id"].as_str().unwrap().to_string();
    let none_failed =
        api.get(&node.admin_url("/admin/v1/sandbox/webhooks/deliveries?status=failed"), &admin).await;
    assert_eq!(none_failed.body["data"].as_array().unwrap().len(), 0);

    let retried = api
        .post(
            &node.admin_url(&format!("/admin/v1/sandbox/webhooks/deliveries/{delivery_id}/retry")),
            &admin,
            json!({}),
        )
        .await;
    retried.expect(200);
    let manual = retried.body["delivery"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["manual"] == true)
        .count();
    assert_eq!(manual, 1, "{}", retried.text);
    api.post(&node.admin_url("/admin/v1/sandbox/webhooks/deliveries/whd_missing/retry"), &admin, json!({}))
        .await
        .expect_error(404, "not_found");

    // Disable through the public API, re-enable as the operator.
    api.patch(
        &node.sandbox_url(&format!("/v1/webhooks/endpoints/{endpoint_id}")),
        &key,
        json!({ "status": "disabled" }),
    )
    .await
    .expect(200);
    let enabled = api
        .post(
            &node.admin_url(&format!("/admin/v1/sandbox/webhooks/endpoints/{endpoint_id}/enable")),
            &admin,
            json!({}),
        )
        .await;
    enabled.expect(200);
    assert_eq!(enabled.body["webhookEndpoint"]["status"], "active");
    assert_eq!(enabled.body["webhookEndpoint"]["consecutiveFailures"], 0);

    // The request log, across workspaces, by x-request-id.
    let found = eventually("the logged request", Duration::from_secs(5), || async {
        let r = api.get(&node.admin_url(&format!("/admin/v1/requests/{request_id}")), &admin).await;
        (r.status == 200).then_some(r.body)
    })
    .await;
    assert_eq!(found["stack"], "sandbox");
    assert_eq!(found["organizationId"], node.creds.organization_id.as_str());
    assert_eq!(found["request"]["path"], "/v1/simulations/deposits");
    assert_eq!(found["request"]["status"], 201);
    api.get(&node.admin_url("/admin/v1/requests/req_missing"), &admin).await.expect_error(404, "not_found");
    node.stop_and_verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_orders_are_funded_and_paid_out_by_the_operator() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    let order = api
        .post(
            &node.live_url("/v1/orders"),
            &node.creds.live_key,
            json!({
                "from": { "method": "mobile_money", "currency": "GHS", "amount": "200.00" },
                "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
                "externalReference": "live-order-1",
            }),
        )
        .await;
    let (_, id) = order.created("order", "ord_");
    assert_eq!(order.body["order"]["status"], "awaiting_funds");
    let funds_url = node.admin_url(&format!("/admin/v1/live/orders/{id}/funds"));
    api.post_anonymous(&funds_url, json!({ "amount": "200.00" })).await.expect_error(401, "unauthorized");
    api.post(&funds_url, &admin, json!({ "amount": "-1" })).await.expect_invalid("amount");
    let funded = api.post(&funds_url, &admin, json!({ "amount": "200.00" })).await;
    funded.expect(200);
    assert_eq!(funded.body["order"]["status"], "processing_payout", "{}", funded.text);
    let payout_id = funded.body["order"]["payoutId"].as_str().unwrap().to_string();
    // A second inflow is refused: the order is no longer waiting.
    api.post(&funds_url, &admin, json!({ "amount": "1.00" })).await.expect_error(409, "invalid_state");
    let paid = api
        .post(&node.admin_url(&format!("/admin/v1/live/payouts/{payout_id}/complete")), &admin, json!({}))
        .await;
    paid.expect(200);
    let done = api.get(&node.admin_url(&format!("/admin/v1/live/orders/{id}")), &admin).await;
    assert_eq!(done.body["order"]["status"], "completed", "{}", done.text);
    node.stop_and_verify();
}
