//! Orders end to end over HTTP: collect on one rail, pay out on another,
//! with one merged timeline. Exact, over- and underpaid funds, crypto
//! confirmations, expiry, and a failed payout that leaves the funds on the
//! balance. Each test runs its own node and ends by stopping it and
//! verifying its books.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

fn ghs_order(amount: &str, reference: &str) -> Value {
    json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": amount },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
        "externalReference": reference,
        "metadata": { "cart": reference },
    })
}

/// The timeline's titles, after checking each entry's shape and the order.
#[track_caller]
fn titles(order: &Value) -> Vec<String> {
    timeline(order).into_iter().map(|(_, title, _)| title).collect()
}

#[track_caller]
fn has_titles(order: &Value, wanted: &[&str]) {
    let titles = titles(order);
    for w in wanted {
        assert!(titles.iter().any(|t| t == w), "the timeline has '{w}': {titles:?}");
    }
}

async fn create(api: &Api, node: &Node, body: Value) -> Value {
    let r = api.post(&node.sandbox_url("/v1/orders"), &node.creds.sandbox_key, body).await;
    r.expect(201);
    let order = r.body["order"].clone();
    assert!(order["id"].as_str().unwrap().starts_with("ord_"), "{order}");
    assert_eq!(order["status"], "awaiting_funds");
    assert!(order["payoutId"].is_null());
    assert!(order["depositInstructions"].is_object());
    has_titles(&order, &["Order created", "Deposit instructions issued"]);
    order
}

async fn fund(api: &Api, node: &Node, id: &str, body: Value) -> Resp {
    api.post(&node.sandbox_url(&format!("/v1/simulations/orders/{id}/funds")), &node.creds.sandbox_key, body)
        .await
}

async fn wait_order(api: &Api, node: &Node, id: &str, status: &str) -> Value {
    let url = node.sandbox_url(&format!("/v1/orders/{id}"));
    poll_until(api, &url, &node.creds.sandbox_key, |b| b["order"]["status"] == status).await["order"].clone()
}

async fn get_payout(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/payouts/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["payout"].clone()
}

async fn order_events(api: &Api, node: &Node, id: &str, last: &str) -> Vec<String> {
    wait_for_events(api, &node.sandbox, &node.creds.sandbox_key, id, &[last]).await
}

async fn ghs(api: &Api, node: &Node) -> (i128, i128) {
    balances_minor(api, &node.sandbox, &node.creds.sandbox_key, "GHS", 2).await
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn orders_paid_exactly_over_and_under_pay_out_on_actuals() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &node.sandbox, &key).await;

    // (order amount, funds, extra event)
    let cases = [
        ("100.00", "100.00", None),
        ("100.00", "120.00", Some("order.overpaid")),
        ("100.00", "80.00", Some("order.underpaid")),
    ];
    for (i, (amount, funds, extra)) in cases.into_iter().enumerate() {
        let before = ghs(&api, &node).await;
        let order = create(&api, &node, ghs_order(amount, &format!("ord-{i}"))).await;
        let id = order["id"].as_str().unwrap().to_string();
        assert_eq!(order["from"]["amount"], amount);
        assert_eq!(order["from"]["receivedAmount"], "0.00");
        assert_eq!(order["depositInstructions"]["type"], "mobile_money");
        assert_eq!(order["metadata"], json!({ "cart": format!("ord-{i}") }));
        // 30 min × 0.001, counted from when the request arrived (a moment before createdAt).
        let deadline = millis(&order["expiresAt"]) - millis(&order["createdAt"]);
        assert!((1_700..=1_800).contains(&deadline), "30 min × 0.001, was {deadline} ms: {order}");

        // The first event's delivery is on the timeline before funds arrive,
        // so every later event's data must show it.
        let url = node.sandbox_url(&format!("/v1/orders/{id}"));
        poll_until(&api, &url, &key, |b| {
            titles(&b["order"]).iter().any(|t| t == "Webhook order.awaiting_funds delivered")
        })
        .await;
        let r = fund(&api, &node, &id, json!({ "amount": funds })).await;
        r.expect(200);
        let status = r.body["order"]["status"].as_str().unwrap();
        assert!(["processing_payout", "completed"].contains(&status), "{}", r.text);
        assert_eq!(r.body["order"]["from"]["receivedAmount"], funds);
        let done = wait_order(&api, &node, &id, "completed").await;

        let mut expected = vec!["order.awaiting_funds", "order.funds_received"];
        expected.extend(extra);
        expected.extend(["order.processing_payout", "order.completed"]);
        assert_eq!(order_events(&api, &node, &id, "order.completed").await, expected, "{funds} for {amount}");

        // The payout is made on what actually arrived, its fee taken from it.
        let payout_id = done["payoutId"].as_str().expect("the order names its payout");
        let payout = get_payout(&api, &node, payout_id).await;
        assert_eq!(payout["status"], "completed");
        let received = minor(funds, 2);
        let paid = received - mtn_fee(received);
        assert_eq!(minor(payout["from"]["amount"].as_str().unwrap(), 2), paid, "{payout}");
        assert_eq!(payout["to"]["accountNumber"], MTN_PHONE);
        let fee = minor(payout["fee"]["amount"].as_str().unwrap(), 2);
        assert_eq!(fee, mtn_fee(paid));
        assert_eq!(done["payout"]["id"], payout_id);
        assert_eq!(done["payout"]["status"], "completed");
        assert_eq!(done["payout"]["feeCurrency"], "GHS");
        assert!(!titles(&done).iter().any(|t| t == "Funds converted"), "GHS to GHS converts nothing");
        assert_eq!(
            ghs(&api, &node).await,
            (before.0 + received - paid - fee, 0),
            "what is left of the inflow"
        );

        // One merged timeline across both legs.
        let mut wanted = vec![
            "Order created",
            "Funds received",
            "Payout started",
            "Payout: Payout created",
            "Payout: Funds held",
            "Payout: Provider confirmed delivery",
            "Payout: Payout completed",
            "Order completed",
        ];
        if extra == Some("order.overpaid") {
            wanted.push("Overpaid");
        }
        if extra == Some("order.underpaid") {
            wanted.push("Underpaid");
        }
        has_titles(&done, &wanted);
        // Once the webhooks of both legs are delivered they are on it too.
        // The event carries the order exactly as its GET shows it (both legs).
        let event = sink.wait_for("order.completed", &id).await;
        let now = wait_order(&api, &node, &id, "completed").await;
        assert_data_as_of_event(&event, &now);
        assert!(
            titles(&event["data"]).iter().any(|t| t == "Webhook order.awaiting_funds delivered"),
            "the earlier event's delivery is in the data: {event}"
        );
        sink.wait_for("payout.completed", payout_id).await;
        let full = poll_until(&api, &url, &key, |b| {
            let titles = titles(&b["order"]);
            titles.iter().any(|t| t == "Webhook order.completed delivered")
                && titles.iter().any(|t| t == "Webhook payout.completed delivered")
        })
        .await;
        titles(&full["order"]);
        // A replay of the create names the order as it is now, payout leg included.
        let replay =
            api.post(&node.sandbox_url("/v1/orders"), &key, ghs_order(amount, &format!("ord-{i}"))).await;
        replay.expect(200);
        assert_eq!(replay.body["order"]["id"], id.as_str());
        assert_eq!(replay.body["order"]["status"], "completed");
        assert_eq!(replay.body["order"]["payout"]["id"], payout_id, "{}", replay.text);
        // Funds for a finished order are refused.
        fund(&api, &node, &id, json!({ "amount": funds })).await.expect_error(409, "invalid_state");
    }
    let list = api.get(&node.sandbox_url("/v1/orders"), &key).await;
    list.expect(200);
    let data = list.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    assert!(data.iter().all(|o| o["status"] == "completed"));
    node.stop_and_verify();
}

#[tokio::test]
async fn a_failed_payout_fails_the_order_and_leaves_the_funds() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let before = ghs(&api, &node).await;
    // 102.03 less its 2.02 fee pays out 100.01: the sandbox rejects cents 01.
    let order = create(&api, &node, ghs_order("102.03", "ord-fail")).await;
    let id = order["id"].as_str().unwrap();
    fund(&api, &node, id, json!({ "amount": "102.03" })).await.expect(200);
    let failed = wait_order(&api, &node, id, "failed").await;
    let payout_id = failed["payoutId"].as_str().unwrap();
    let payout = get_payout(&api, &node, payout_id).await;
    assert_eq!(payout["from"]["amount"], "100.01");
    assert_eq!(payout["status"], "failed");
    assert_eq!(failed["payout"]["status"], "failed");
    assert_eq!(ghs(&api, &node).await, (before.0 + 10_203, 0), "the whole inflow stays on the balance");
    assert_eq!(
        order_events(&api, &node, id, "order.failed").await,
        vec!["order.awaiting_funds", "order.funds_received", "order.processing_payout", "order.failed"]
    );
    let events = all_events(&api, &node.sandbox, &node.creds.sandbox_key).await;
    let event = events.iter().find(|e| e["event"] == "order.failed" && e["data"]["id"] == id).unwrap();
    assert_data_as_of_event(event, &failed);
    let names =
        wait_for_events(&api, &node.sandbox, &node.creds.sandbox_key, payout_id, &["payout.failed"]).await;
    assert_eq!(names, vec!["payout.failed"]);
    has_titles(
        &failed,
        &[
            "Funds received",
            "Payout started",
            "Payout: Provider reported a failure",
            "Payout: Balance refunded",
            "Order failed",
        ],
    );
    // The money can still be paid out by hand.
    let r = api
        .post(
            &node.sandbox_url("/v1/payouts"),
            &node.creds.sandbox_key,
            json!({ "from": { "currency": "GHS", "amount": "100.00" },
                    "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE }, "externalReference": "after-fail" }),
        )
        .await;
    r.expect(201);

    // An inflow too small to cover the method's minimum fails the order at once.
    let order = create(&api, &node, ghs_order("10.00", "ord-tiny")).await;
    let id = order["id"].as_str().unwrap();
    let before = ghs(&api, &node).await;
    let r = fund(&api, &node, id, json!({ "amount": "1.50" })).await;
    r.expect(200);
    assert_eq!(r.body["order"]["status"], "failed", "{}", r.text);
    assert!(r.body["order"]["payoutId"].is_null());
    has_titles(&r.body["order"], &["Underpaid", "Payout not possible", "Order failed"]);
    assert_eq!(ghs(&api, &node).await.0, before.0 + 150, "the funds remain");
    assert_eq!(
        order_events(&api, &node, id, "order.failed").await,
        vec!["order.awaiting_funds", "order.funds_received", "order.underpaid", "order.failed"]
    );
    node.stop_and_verify();
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_crypto_order_waits_for_confirmations() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let body = json!({
        "from": { "method": "crypto", "currency": "USDC", "amount": "20.00", "chain": "base" },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
        "externalReference": "ord-crypto",
    });
    let order = create(&api, &node, body).await;
    let id = order["id"].as_str().unwrap();
    let instructions = &order["depositInstructions"];
    assert_eq!(instructions["type"], "crypto");
    assert_eq!(instructions["asset"], "USDC");
    assert_eq!(instructions["network"], "testnet");
    assert_eq!(instructions["confirmationsRequired"], 3);
    assert!(instructions["address"].as_str().unwrap().starts_with("0x"));
    assert_eq!(order["requiredConfirmations"], 3);

    let r = fund(&api, &node, id, json!({ "amount": "20.00", "confirmations": 1 })).await;
    r.expect(200);
    assert_eq!(r.body["order"]["status"], "awaiting_confirmations");
    assert_eq!(balances_minor(&api, &node.sandbox, &key, "USDC", 6).await, (0, 0), "nothing credited yet");
    let r = fund(&api, &node, id, json!({ "amount": "20.00", "confirmations": 2 })).await;
    r.expect(200);
    assert_eq!(r.body["order"]["status"], "awaiting_confirmations");
    assert_eq!(r.body["order"]["statusMessage"], "2 of 3 confirmations");
    let r = fund(&api, &node, id, json!({ "amount": "20.00", "confirmations": 3 })).await;
    r.expect(200);
    let done = wait_order(&api, &node, id, "completed").await;
    assert_eq!(
        order_events(&api, &node, id, "order.completed").await,
        vec![
            "order.awaiting_funds",
            "order.awaiting_confirmations",
            "order.funds_received",
            "order.processing_payout",
            "order.completed"
        ],
        "order.awaiting_confirmations fires once"
    );
    has_titles(
        &done,
        &[
            "Funds seen on-chain",
            "Funds received",
            "Funds converted",
            "Payout: Payout completed",
            "Order completed",
        ],
    );
    let converted =
        done["timeline"].as_array().unwrap().iter().find(|e| e["title"] == "Funds converted").unwrap();
    assert_eq!(converted["kind"], "conversion");
    assert!(converted["detail"].as_str().unwrap().contains("USDC to "), "{converted}");
    assert_eq!(done["payout"]["feeCurrency"], "USDC", "the payout summary names the fee's currency");
    let payout = get_payout(&api, &node, done["payoutId"].as_str().unwrap()).await;
    assert_eq!(payout["from"]["currency"], "USDC");
    assert_eq!(payout["to"]["currency"], "GHS");
    let spent = minor(payout["from"]["amount"].as_str().unwrap(), 6)
        + minor(payout["fee"]["amount"].as_str().unwrap(), 6);
    assert!(spent <= 20_000_000, "the payout and its fee fit in what arrived: {payout}");
    assert_eq!(balances_minor(&api, &node.sandbox, &key, "USDC", 6).await, (20_000_000 - spent, 0));

    // Order requests are checked.
    let url = node.sandbox_url("/v1/orders");
    let mut no_chain = json!({
        "from": { "method": "crypto", "currency": "USDC", "amount": "20.00" },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
        "externalReference": "ord-bad",
    });
    api.post(&url, &key, no_chain.clone()).await.expect_invalid("from.chain");
    no_chain["from"]["chain"] = json!("dogechain");
    api.post(&url, &key, no_chain.clone()).await.expect_invalid("from.chain");
    no_chain["from"] = json!({ "method": "cheque", "currency": "GHS", "amount": "20.00" });
    api.post(&url, &key, no_chain.clone()).await.expect_invalid("from.method");
    no_chain["from"] = json!({ "method": "mobile_money", "currency": "GHS", "amount": "20.00" });
    no_chain["to"]["currency"] = json!("KES");
    api.post(&url, &key, no_chain).await.expect_invalid("to.currency");
    api.get(&node.sandbox_url("/v1/orders/ord_missing"), &key).await.expect_error(404, "not_found");
    fund(&api, &node, "ord_missing", json!({ "amount": "1.00" })).await.expect_error(404, "not_found");
    // Orders exist on live too, but funds can only be simulated on the sandbox.
    let live =
        api.post(&node.live_url("/v1/orders"), &node.creds.live_key, ghs_order("10.00", "ord-live")).await;
    live.expect(201);
    let live_id = live.body["order"]["id"].as_str().unwrap();
    let r = api
        .post(
            &node.live_url(&format!("/v1/simulations/orders/{live_id}/funds")),
            &node.creds.live_key,
            json!({ "amount": "10.00" }),
        )
        .await;
    r.expect_error(404, "not_found");
    node.stop_and_verify();
}

#[tokio::test]
async fn an_order_without_funds_expires() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &node.sandbox, &key).await;
    let order = create(&api, &node, ghs_order("50.00", "ord-expire")).await;
    let id = order["id"].as_str().unwrap();
    let deadline = millis(&order["expiresAt"]);
    let url = node.sandbox_url(&format!("/v1/orders/{id}"));
    let expired = eventually("the order to expire", Duration::from_secs(15), || async {
        let r = api.get(&url, &key).await;
        r.expect(200);
        (r.body["order"]["status"] == "expired").then(|| r.body["order"].clone())
    })
    .await;
    assert!(millis(&expired["updatedAt"]) >= deadline, "not before the deadline: {expired}");
    has_titles(&expired, &["Order created", "Order expired"]);
    assert_eq!(
        order_events(&api, &node, id, "order.expired").await,
        vec!["order.awaiting_funds", "order.expired"]
    );
    assert_eq!(sink.wait_for("order.expired", id).await["data"]["status"], "expired");
    // Late funds are refused and nothing is credited.
    fund(&api, &node, id, json!({ "amount": "50.00" })).await.expect_error(409, "invalid_state");
    assert_eq!(ghs(&api, &node).await, (0, 0));
    node.stop_and_verify();
}

/// Issue 29.6: a crypto order whose funds were seen on-chain before its
/// deadline does not expire while they confirm (the spec's `order.expired`
/// is "no inflow before the deadline"): it completes when the
/// confirmations arrive, after the deadline, and the coins reach the
/// balance. At a time scale of 0.0001 the 30-minute deadline is 180 ms.
#[tokio::test]
async fn a_crypto_order_seen_on_chain_before_its_deadline_completes_after_it() {
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "0.0001")]);
    let (api, key) = (Api::new(), node.creds.sandbox_key.clone());
    let sink = WebhookSink::registered(&api, &node.sandbox, &key).await;
    let crypto = |reference: &str| {
        json!({
            "from": { "method": "crypto", "currency": "USDT", "amount": "20.00", "chain": "tron" },
            "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
            "externalReference": reference,
        })
    };
    let seen = create(&api, &node, crypto("ord-seen")).await;
    let seen_id = seen["id"].as_str().unwrap();
    let unseen = create(&api, &node, crypto("ord-unseen")).await;
    let unseen_id = unseen["id"].as_str().unwrap();
    let r = fund(&api, &node, seen_id, json!({ "amount": "20.00", "confirmations": 0 })).await;
    r.expect(200);
    assert_eq!(r.body["order"]["status"], "awaiting_confirmations", "{}", r.text);

    // The order with no inflow expires at its deadline; by then the
    // deadline of the one seen on-chain (created first) has passed too.
    let expired = wait_order(&api, &node, unseen_id, "expired").await;
    assert!(millis(&expired["updatedAt"]) >= millis(&seen["expiresAt"]), "{expired}");
    // The scheduler has had every chance to expire the seen order.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = node.sandbox_url(&format!("/v1/orders/{seen_id}"));
    let waiting = api.get(&url, &key).await;
    waiting.expect(200);
    assert_eq!(waiting.body["order"]["status"], "awaiting_confirmations", "{}", waiting.text);
    assert!(!titles(&waiting.body["order"]).iter().any(|t| t == "Order expired"), "{}", waiting.text);

    let r = fund(&api, &node, seen_id, json!({ "amount": "20.00", "confirmations": 1 })).await;
    r.expect(200);
    assert_eq!(r.body["order"]["status"], "awaiting_confirmations", "still one confirmation short");
    let required = seen["requiredConfirmations"].clone();
    let r = fund(&api, &node, seen_id, json!({ "amount": "20.00", "confirmations": required })).await;
    r.expect(200);
    let done = wait_order(&api, &node, seen_id, "completed").await;
    has_titles(&done, &["Funds seen on-chain", "Funds received", "Order completed"]);
    assert!(!titles(&done).iter().any(|t| t == "Order expired"), "{done}");
    let events = order_events(&api, &node, seen_id, "order.completed").await;
    assert!(!events.iter().any(|e| e == "order.expired"), "{events:?}");
    assert_eq!(sink.wait_for("order.completed", seen_id).await["data"]["status"], "completed");
    // The coins reached the balance: what the payout and its fee left.
    let payout = get_payout(&api, &node, done["payoutId"].as_str().unwrap()).await;
    let spent = minor(payout["from"]["amount"].as_str().unwrap(), 6)
        + minor(payout["fee"]["amount"].as_str().unwrap(), 6);
    assert_eq!(balances_minor(&api, &node.sandbox, &key, "USDT", 6).await, (20_000_000 - spent, 0));
    node.stop_and_verify();
}
