//! Payout reversals over HTTP: a completed payout the rail later takes back
//! ends `reversed`, its amount back on the balance and its fee kept, with
//! `payout.reversed` and a timeline that says why. On the sandbox a payout
//! whose amount ends in `05` completes, then is reversed; on live the
//! Flutterwave notification only makes Sika re-read the transfer, and the
//! payout is reversed once, however many notifications arrive at once.
//! Each test ends by stopping its node and verifying its books.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::flutterwave::{FakeFlutterwave, WEBHOOK_HASH};
use crate::support::*;

fn payout_body(amount: &str, reference: &str) -> Value {
    json!({
        "from": { "currency": "GHS", "amount": amount },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE },
        "externalReference": reference,
        "metadata": { "beneficiaryName": "Ama Mensah" },
    })
}

async fn wait_status(api: &Api, base: &str, key: &str, id: &str, status: &str) -> Value {
    let url = format!("{base}/v1/payouts/{id}");
    poll_until(api, &url, key, |b| b["payout"]["status"] == status).await["payout"].clone()
}

/// (available, total) of GHS in pesewas, as `GET /v1/accounts` shows them
/// (zeros before money touched GHS).
async fn ghs(api: &Api, base: &str, key: &str) -> (i128, i128) {
    let Some(account) = account_of(api, base, key, "GHS").await else { return (0, 0) };
    (
        minor(account["availableBalance"].as_str().unwrap(), 2),
        minor(account["totalBalance"].as_str().unwrap(), 2),
    )
}

fn titles(resource: &Value) -> Vec<String> {
    timeline(resource).into_iter().map(|(_, title, _)| title).collect()
}

fn detail_of(resource: &Value, title: &str) -> String {
    let entries = resource["timeline"].as_array().unwrap();
    let entry = entries.iter().find(|e| e["title"] == title).unwrap_or_else(|| panic!("{title}: {resource}"));
    entry["detail"].as_str().unwrap().to_string()
}

/// The ids `GET /v1/payouts?status=…` lists.
async fn listed(api: &Api, base: &str, key: &str, status: &str) -> Vec<String> {
    let items = every_item(api, &format!("{base}/v1/payouts?status={status}"), key).await;
    items.iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_sandbox_05_payout_completes_then_is_reversed_with_its_amount_back_and_its_fee_kept() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let start = ghs(&api, &base, &key).await;
    assert_eq!(start, (100_000, 100_000));

    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("100.05", "rev-05")).await;
    let (created, id) = r.created("payout", "pay_ghs_");
    assert_eq!(created["status"], "pending");
    let fee = minor(created["fee"]["amount"].as_str().unwrap(), 2);
    assert_eq!(fee, mtn_fee(10_005));
    let other = api.post(&node.sandbox_url("/v1/payouts"), &key, payout_body("40.00", "rev-other")).await;
    let (_, other_id) = other.created("payout", "pay_ghs_");

    // Completed first (payout.completed fires), then reversed a minute later
    // on the node's clock (60 ms at the suite's time scale).
    let completed = sink.wait_for("payout.completed", &id).await;
    assert_eq!(completed["data"]["status"], "completed");
    let reversed = wait_status(&api, &base, &key, &id, "reversed").await;
    assert!(reversed["completedAt"].is_string(), "the payout did complete: {reversed}");
    assert_eq!(reversed["completedAt"], completed["data"]["completedAt"], "completedAt is kept");
    // Both steps are due from the creation: completion at 2 s, the reversal
    // a minute after that (scaled by the suite's 0.001).
    assert!(millis(&reversed["updatedAt"]) - millis(&reversed["createdAt"]) >= 62, "{reversed}");
    let message = reversed["statusMessage"].as_str().unwrap();
    assert!(message.contains("sandbox trigger 05"), "the status message says why: {message}");
    assert_eq!(reversed["fee"]["amount"], created["fee"]["amount"]);

    // The amount is back on the balance; the fee is kept. The other payout
    // is untouched.
    wait_status(&api, &base, &key, &other_id, "completed").await;
    let other_paid = 4_000 + mtn_fee(4_000);
    assert_eq!(ghs(&api, &base, &key).await, (start.0 - fee - other_paid, start.1 - fee - other_paid));

    // The timeline says why, after the completion.
    let shown = titles(&reversed);
    let at =
        |title: &str| shown.iter().position(|t| t == title).unwrap_or_else(|| panic!("{title}: {shown:?}"));
    assert!(at("Payout completed") < at("Provider reversed the payout"), "{shown:?}");
    assert!(at("Provider reversed the payout") < at("Amount returned"), "{shown:?}");
    assert!(at("Amount returned") < at("Payout reversed"), "{shown:?}");
    assert!(detail_of(&reversed, "Provider reversed the payout").contains("sandbox trigger 05"));
    let returned = detail_of(&reversed, "Amount returned");
    assert!(returned.starts_with("100.05 GHS back on "), "{returned}");
    assert!(returned.ends_with(&format!("the {}.{:02} GHS fee is kept", fee / 100, fee % 100)), "{returned}");

    // payout.reversed carries the payout as its GET shows it, once.
    let delivered = sink.wait_for("payout.reversed", &id).await;
    assert_eq!(delivered["data"]["status"], "reversed");
    let names = wait_for_events(&api, &base, &key, &id, &["payout.reversed"]).await;
    assert_eq!(names, vec!["payout.completed", "payout.reversed"]);
    let later = api.get(&node.sandbox_url(&format!("/v1/payouts/{id}")), &key).await;
    assert_data_as_of_event(&delivered, &later.body["payout"]);
    let other_names = wait_for_events(&api, &base, &key, &other_id, &["payout.completed"]).await;
    assert_eq!(other_names, vec!["payout.completed"], "the other payout is not reversed");

    // The list filters by the new status; the simulations index names 05.
    assert_eq!(listed(&api, &base, &key, "reversed").await, vec![id.clone()]);
    assert_eq!(listed(&api, &base, &key, "completed").await, vec![other_id.clone()]);
    let simulations = every_item(&api, &format!("{base}/v1/simulations"), &key).await;
    let payouts = simulations.iter().find(|s| s["operation"] == "create_payout").expect("payouts");
    assert_eq!(payouts["scenarios"]["05"], "completed_then_reversed", "{payouts}");
    assert!(payouts["outcomes"].as_array().unwrap().contains(&json!("completed_then_reversed")));
    // The OpenAPI document enumerates the status, and the node serves it.
    let statuses = &document()["components"]["schemas"]["PayoutStatus"]["enum"];
    assert_eq!(statuses, &json!(["pending", "completed", "failed", "reversed"]), "{statuses}");
    let served = api.get(&node.sandbox_url("/v1/openapi.json"), &key).await;
    assert_eq!(served.body["components"]["schemas"]["PayoutStatus"]["enum"], *statuses);
    node.stop_and_verify();
}

#[tokio::test]
async fn an_orders_reversed_payout_leg_shows_reversed_and_the_order_stays_completed() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let before = ghs(&api, &base, &key).await;
    // 102.07 pays out 100.05 (and its fee; what is left stays on the
    // balance): the sandbox reverses cents 05.
    let body = json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": "102.07" },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
        "externalReference": "ord-rev",
    });
    let r = api.post(&node.sandbox_url("/v1/orders"), &key, body).await;
    let (_, order_id) = r.created("order", "ord_");
    let url = node.sandbox_url(&format!("/v1/simulations/orders/{order_id}/funds"));
    api.post(&url, &key, json!({ "amount": "102.07" })).await.expect(200);
    let order_url = node.sandbox_url(&format!("/v1/orders/{order_id}"));
    let order = poll_until(&api, &order_url, &key, |b| b["order"]["payout"]["status"] == "reversed").await;
    let order = &order["order"];
    assert_eq!(order["status"], "completed", "the order's states say nothing of a later reversal");
    assert!(order["statusMessage"].as_str().unwrap().contains("reversed"), "{order}");
    let shown = titles(order);
    for title in ["Order completed", "Payout: Provider reversed the payout", "Payout: Payout reversed"] {
        assert!(shown.iter().any(|t| t == title), "{title}: {shown:?}");
    }
    let payout_id = order["payoutId"].as_str().unwrap();
    let payout = wait_status(&api, &base, &key, payout_id, "reversed").await;
    assert_eq!(payout["from"]["amount"], "100.05");
    let kept = 10_207 - mtn_fee(10_005);
    assert_eq!(ghs(&api, &base, &key).await, (before.0 + kept, before.1 + kept), "only the fee left");
    let names = wait_for_events(&api, &base, &key, &order_id, &["order.completed"]).await;
    assert_eq!(
        names,
        vec!["order.awaiting_funds", "order.funds_received", "order.processing_payout", "order.completed"],
        "no order event for the reversal"
    );
    assert_eq!(
        wait_for_events(&api, &base, &key, payout_id, &["payout.reversed"]).await,
        vec!["payout.completed", "payout.reversed"]
    );
    node.stop_and_verify();
}

/// A live node whose `mtn_gh` goes through the fake Flutterwave.
struct Live {
    node: Node,
    api: Api,
    key: String,
}

impl Live {
    fn start(fake: &FakeFlutterwave) -> Live {
        let node = Node::start(Options { config: Some(fake.config(&["mtn_gh"])), ..Options::unthrottled() });
        let key = node.creds.live_key.clone();
        Live { node, api: Api::new(), key }
    }

    fn url(&self, path: &str) -> String {
        self.node.live_url(path)
    }

    async fn payout(&self, amount: &str, reference: &str) -> String {
        let r = self.api.post(&self.url("/v1/payouts"), &self.key, payout_body(amount, reference)).await;
        r.created("payout", "pay_").1
    }

    async fn get(&self, id: &str) -> Value {
        let r = self.api.get(&self.url(&format!("/v1/payouts/{id}")), &self.key).await;
        r.expect(200);
        r.body["payout"].clone()
    }

    async fn status_of(&self, id: &str, wanted: &str) -> Value {
        eventually(&format!("payout {id} {wanted}"), Duration::from_secs(20), || async {
            let payout = self.get(id).await;
            (payout["status"] == wanted).then_some(payout)
        })
        .await
    }

    async fn ghs(&self) -> (i128, i128) {
        ghs(&self.api, &self.node.live, &self.key).await
    }

    async fn notify(&self, body: &Value) {
        assert_eq!(FakeFlutterwave::notify(&self.node.live, WEBHOOK_HASH, body).await, 200);
    }

    async fn events_of(&self, id: &str) -> Vec<String> {
        event_names_for(&self.api, &self.node.live, &self.key, id).await
    }

    /// Funds the live GHS balance through a charge the fake confirms.
    async fn fund(&self, fake: &FakeFlutterwave, amount: &str) {
        let body = json!({ "amount": amount, "currency": "GHS", "code": "mtn_gh",
                           "accountNumber": MTN_PHONE, "externalReference": "fund" });
        let r = self.api.post(&self.url("/v1/collections"), &self.key, body).await;
        let (_, id) = r.created("collection", "col_");
        eventually("the charge", Duration::from_secs(20), || async { fake.charge_for(&id) }).await;
        fake.settle_charge(&id, "successful");
        self.notify(&fake.event(&id, None)).await;
        let url = self.url(&format!("/v1/collections/{id}"));
        poll_until(&self.api, &url, &self.key, |b| b["collection"]["status"] == "completed").await;
    }

    /// A payout Flutterwave delivered and Sika recorded completed.
    async fn delivered(&self, fake: &FakeFlutterwave, amount: &str, reference: &str) -> String {
        let id = self.payout(amount, reference).await;
        eventually("the transfer", Duration::from_secs(20), || async { fake.transfers_for(&id).pop() }).await;
        fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
        self.notify(&fake.event(&id, None)).await;
        self.status_of(&id, "completed").await;
        id
    }
}

#[tokio::test]
async fn a_live_reversal_is_re_read_from_flutterwave_and_takes_the_amount_back_once() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    live.fund(&fake, "500.00").await;
    let id = live.delivered(&fake, "100.00", "live-rev").await;
    let paid = live.ghs().await;
    assert_eq!(paid, (50_000 - 10_000 - mtn_fee(10_000), 50_000 - 10_000 - mtn_fee(10_000)));

    // A notification claiming a reversal the provider does not show moves
    // nothing: Sika re-reads the transfer, which still reads SUCCESSFUL.
    live.notify(&fake.event(&id, Some("REVERSED"))).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(live.get(&id).await["status"], "completed");
    assert_eq!(live.ghs().await, paid);

    // The provider reverses it. A completed payout is not polled, so
    // nothing moves until the provider says so.
    fake.reverse_transfer(&id, "Beneficiary wallet could not receive the funds");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(live.get(&id).await["status"], "completed", "a completed payout is not re-polled");

    // Two notifications of the reversal at once (the transfer update and
    // the reversal event): the payout is reversed once.
    let (update, reversal) = (fake.event(&id, None), fake.reversal_event(&id));
    tokio::join!(live.notify(&update), live.notify(&reversal), live.notify(&update));
    let reversed = live.status_of(&id, "reversed").await;
    assert!(reversed["completedAt"].is_string(), "{reversed}");
    assert!(reversed["statusMessage"].as_str().unwrap().contains("Beneficiary wallet could not receive"));
    let transfer_id = fake.transfers_for(&id).pop().unwrap()["id"].to_string();
    assert!(detail_of(&reversed, "Provider reversed the payout").contains(&transfer_id), "{reversed}");
    let shown = titles(&reversed);
    assert_eq!(shown.iter().filter(|t| *t == "Payout reversed").count(), 1, "{shown:?}");
    assert_eq!(shown.iter().filter(|t| *t == "Amount returned").count(), 1, "{shown:?}");
    let back = (paid.0 + 10_000, paid.1 + 10_000);
    assert_eq!(live.ghs().await, back, "the amount came back once, the fee kept");
    let names = wait_for_events(&live.api, &live.node.live, &live.key, &id, &["payout.reversed"]).await;
    assert_eq!(names, vec!["payout.completed", "payout.reversed"]);

    // Later notifications change nothing, and the reversed payout is not
    // looked at again.
    live.notify(&reversal).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(live.ghs().await, back);
    assert_eq!(live.events_of(&id).await, vec!["payout.completed", "payout.reversed"]);
    assert_eq!(fake.transfers_for(&id).len(), 1);
    assert!(fake.with(|s| s.refused.clone()).is_empty(), "the fake refused a request");
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_transfer_reversed_before_sika_heard_it_succeed_completes_then_reverses() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    live.fund(&fake, "500.00").await;
    let funded = live.ghs().await;
    let id = live.payout("60.00", "live-rev-early").await;
    eventually("the transfer", Duration::from_secs(20), || async { fake.transfers_for(&id).pop() }).await;
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    fake.reverse_transfer(&id, "Returned by the recipient's bank");
    live.notify(&fake.reversal_event(&id)).await;
    let reversed = live.status_of(&id, "reversed").await;
    let shown = titles(&reversed);
    let at =
        |title: &str| shown.iter().position(|t| t == title).unwrap_or_else(|| panic!("{title}: {shown:?}"));
    assert!(at("Payout completed") < at("Payout reversed"), "{shown:?}");
    assert_eq!(live.ghs().await, (funded.0 - mtn_fee(6_000), funded.1 - mtn_fee(6_000)), "only the fee left");
    let names = wait_for_events(&live.api, &live.node.live, &live.key, &id, &["payout.reversed"]).await;
    assert_eq!(names, vec!["payout.completed", "payout.reversed"]);
    live.node.stop_and_verify();
}
