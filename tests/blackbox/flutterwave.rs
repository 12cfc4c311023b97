//! The Flutterwave connector, driven on the live stack against the strict
//! fake in `support::flutterwave`: collections as charges and payouts as
//! transfers under Sika's ids, notifications that only make Sika re-read the
//! provider, refunds on failure, the breaker in capabilities, and a SIGKILL
//! between the provider's acceptance and Sika's record of it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::flutterwave::{FakeFlutterwave, WEBHOOK_HASH};
use crate::support::*;

const ROUTED: &[&str] = &["mtn_gh", "mpesa_ke"];

fn options(fake: &FakeFlutterwave) -> Options {
    Options { config: Some(fake.config(ROUTED)), ..Options::unthrottled() }
}

struct Live {
    node: Node,
    api: Api,
    key: String,
}

impl Live {
    fn start(fake: &FakeFlutterwave) -> Live {
        let node = Node::start(options(fake));
        let key = node.creds.live_key.clone();
        Live { node, api: Api::new(), key }
    }

    fn url(&self, path: &str) -> String {
        self.node.live_url(path)
    }

    async fn collection(&self, amount: &str, reference: &str) -> String {
        let body = json!({ "amount": amount, "currency": "GHS", "code": "mtn_gh",
                           "accountNumber": "+233241234567", "externalReference": reference });
        let r = self.api.post(&self.url("/v1/collections"), &self.key, body).await;
        r.expect(201);
        r.body["collection"]["id"].as_str().unwrap().to_string()
    }

    async fn payout(&self, amount: &str, reference: &str) -> Resp {
        let body = json!({ "from": { "currency": "GHS", "amount": amount },
                           "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
                           "externalReference": reference,
                           "metadata": { "beneficiaryName": "Ama Mensah" } });
        self.api.post(&self.url("/v1/payouts"), &self.key, body).await
    }

    async fn status_of(&self, what: &str, id: &str, wanted: &str) -> Value {
        let url = self.url(&format!("/v1/{what}/{id}"));
        let key = what.trim_end_matches('s');
        eventually(&format!("{what}/{id} {wanted}"), Duration::from_secs(20), || async {
            let r = self.api.get(&url, &self.key).await;
            r.expect(200);
            (r.body[key]["status"] == wanted).then(|| r.body[key].clone())
        })
        .await
    }

    /// GHS (available, pending) in pesewas.
    async fn ghs(&self) -> (i128, i128) {
        balances_minor(&self.api, &self.node.live, &self.key, "GHS", 2).await
    }

    /// Funds the live GHS balance through a collection the fake confirms.
    async fn fund(&self, fake: &FakeFlutterwave, amount: &str) {
        let id = self.collection(amount, &format!("fund-{amount}")).await;
        wait_for_charge(fake, &id).await;
        fake.settle_charge(&id, "successful");
        self.status_of("collections", &id, "completed").await;
    }
}

async fn wait_for_charge(fake: &FakeFlutterwave, id: &str) -> Value {
    eventually(&format!("a charge for {id}"), Duration::from_secs(20), || async { fake.charge_for(id) }).await
}

async fn wait_for_transfer(fake: &FakeFlutterwave, id: &str) -> Value {
    eventually(&format!("a transfer for {id}"), Duration::from_secs(20), || async {
        fake.transfers_for(id).pop()
    })
    .await
}

fn titles(resource: &Value) -> Vec<String> {
    timeline(resource).into_iter().map(|(_, title, _)| title).collect()
}

fn detail_of(resource: &Value, title: &str) -> String {
    resource["timeline"].as_array().unwrap().iter().find(|e| e["title"] == title).unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_collection_and_a_payout_complete_through_flutterwave() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);

    // A collection is a charge under the collection's id.
    let id = live.collection("500.00", "c1").await;
    let charge = wait_for_charge(&fake, &id).await;
    assert_eq!(charge["amount"], 500, "{charge}");
    assert_eq!(charge["currency"], "GHS");
    assert_eq!(charge["network"], "MTN");
    assert_eq!(charge["phone_number"], "233241234567");
    assert_eq!(charge["charge_type"], "mobile_money_ghana");
    fake.settle_charge(&id, "successful");
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&id, None)).await, 200);
    let collection = live.status_of("collections", &id, "completed").await;
    let shown = titles(&collection);
    assert!(shown.contains(&"Sent to Flutterwave".to_string()), "{shown:?}");
    assert!(shown.contains(&"Flutterwave confirmed the payment".to_string()), "{shown:?}");
    assert!(detail_of(&collection, "Flutterwave confirmed the payment").contains(&charge["id"].to_string()));
    assert_eq!(live.ghs().await, (50_000, 0));

    // A payout is a transfer under the payout's id; two 5xx answers on the
    // way are retried with the same reference.
    fake.with(|s| s.fail_next = 2);
    let r = live.payout("100.00", "p1").await;
    r.expect(201);
    let payout_id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let fee = minor(r.body["payout"]["fee"]["amount"].as_str().unwrap(), 2);
    let transfer = wait_for_transfer(&fake, &payout_id).await;
    assert_eq!(transfer["amount"], 100);
    assert_eq!(transfer["bank_code"], "MTN");
    assert_eq!(transfer["account_number"], "233241234567");
    assert_eq!(transfer["full_name"], "Ama Mensah");
    fake.settle_transfer(&payout_id, "SUCCESSFUL", "Transaction was successful");
    assert_eq!(
        FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&payout_id, None)).await,
        200
    );
    let payout = live.status_of("payouts", &payout_id, "completed").await;
    let shown = titles(&payout);
    assert!(shown.contains(&"Sent to Flutterwave".to_string()), "{shown:?}");
    assert!(shown.contains(&"Flutterwave confirmed delivery".to_string()), "{shown:?}");
    assert!(detail_of(&payout, "Flutterwave confirmed delivery").contains(&transfer["id"].to_string()));
    assert_eq!(live.ghs().await, (50_000 - 10_000 - fee, 0));
    wait_for_events(&live.api, &live.node.live, &live.key, &payout_id, &["payout.completed"]).await;

    // The same notification again moves nothing.
    let before = live.api.get(&live.url(&format!("/v1/payouts/{payout_id}")), &live.key).await.body;
    assert_eq!(
        FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&payout_id, None)).await,
        200
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = live.api.get(&live.url(&format!("/v1/payouts/{payout_id}")), &live.key).await.body;
    assert_eq!(before, after);
    assert_eq!(live.ghs().await, (50_000 - 10_000 - fee, 0));
    assert_eq!(fake.transfers_for(&payout_id).len(), 1, "one transfer, whatever the retries");
    assert!(fake.with(|s| s.refused.clone()).is_empty(), "the fake refused a request");

    // Nothing Sika logged carries the secret.
    assert!(!live.node.log().contains(crate::support::flutterwave::SECRET_KEY));
}

#[tokio::test]
async fn a_failed_transfer_refunds_and_forged_or_early_notifications_move_nothing() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    // Funded with no notification at all: the reconciler reads the charge.
    live.fund(&fake, "300.00").await;
    let funded = live.ghs().await;
    assert_eq!(funded, (30_000, 0));

    let r = live.payout("50.00", "p-fail").await;
    r.expect(201);
    let id = r.body["payout"]["id"].as_str().unwrap().to_string();
    wait_for_transfer(&fake, &id).await;
    let held = live.ghs().await;
    assert!(held.0 < funded.0, "the payout holds its amount and fee: {held:?}");

    // A forged success (wrong hash) is refused; a genuine notification that
    // claims more than the provider shows (early, out of order) is re-read
    // and moves nothing.
    let claim = fake.event(&id, Some("SUCCESSFUL"));
    assert_eq!(FakeFlutterwave::notify(&live.node.live, "not-the-hash", &claim).await, 401);
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &claim).await, 200);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let r = live.api.get(&live.url(&format!("/v1/payouts/{id}")), &live.key).await;
    assert_eq!(r.body["payout"]["status"], "pending", "{}", r.body);
    assert_eq!(live.ghs().await, held);

    fake.settle_transfer(&id, "FAILED", "Insufficient funds in customer wallet");
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&id, None)).await, 200);
    let payout = live.status_of("payouts", &id, "failed").await;
    assert!(payout["statusMessage"].as_str().unwrap_or("").contains("Insufficient funds"), "{payout}");
    let shown = titles(&payout);
    assert!(shown.contains(&"Balance refunded".to_string()), "{shown:?}");
    assert_eq!(live.ghs().await, funded, "amount and fee back on the balance");
    wait_for_events(&live.api, &live.node.live, &live.key, &id, &["payout.failed"]).await;

    // A late success after the failure moves nothing either.
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &claim).await, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(live.ghs().await, funded);
}

async fn mtn_status(live: &Live) -> String {
    let r = live.api.get(&live.url("/v1/capabilities/GH/mtn_gh"), &live.key).await;
    r.expect(200);
    r.body["method"]["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_breaker_marks_routed_methods_degraded_then_down_and_back() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    live.fund(&fake, "300.00").await;
    assert_eq!(mtn_status(&live).await, "operational");

    fake.with(|s| s.down = true);
    let r = live.payout("20.00", "p-outage").await;
    r.expect(201);
    let id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let mut seen: Vec<String> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while seen.last().map(String::as_str) != Some("down") {
        assert!(std::time::Instant::now() < deadline, "mtn_gh never went down: {seen:?}");
        let status = mtn_status(&live).await;
        if seen.last() != Some(&status) {
            seen.push(status);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen.contains(&"degraded".to_string()), "degraded before down: {seen:?}");
    live.payout("20.00", "p-refused").await.expect_error(503, "method_unavailable");
    let r = live.api.get(&live.url("/v1/capabilities/GH/bank_gh"), &live.key).await;
    assert_eq!(r.body["method"]["status"], "operational", "a method not routed is untouched");

    fake.with(|s| s.down = false);
    eventually("mtn_gh back", Duration::from_secs(20), || async {
        (mtn_status(&live).await == "operational").then_some(())
    })
    .await;
    let transfer = wait_for_transfer(&fake, &id).await;
    assert_eq!(transfer["amount"], 20);
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    live.status_of("payouts", &id, "completed").await;
    assert_eq!(fake.transfers_for(&id).len(), 1);
    live.payout("20.00", "p-after").await.expect(201);
}

#[tokio::test]
async fn a_sigkill_after_flutterwave_accepted_a_transfer_settles_it_once_after_restart() {
    let fake = FakeFlutterwave::start();
    let mut live = Live::start(&fake);
    live.fund(&fake, "300.00").await;

    fake.with(|s| s.hold = true);
    let r = live.payout("40.00", "p-crash").await;
    r.expect(201);
    let id = r.body["payout"]["id"].as_str().unwrap().to_string();
    // Flutterwave has the transfer; Sika has not heard so when it dies.
    wait_for_transfer(&fake, &id).await;
    live.node.kill9();
    fake.with(|s| s.hold = false);
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");

    live.node.restart(&options(&fake), &[]);
    // A fresh client: the old one's pooled connections died with the node.
    live.api = Api::new();
    let payout = live.status_of("payouts", &id, "completed").await;
    assert_eq!(fake.transfers_for(&id).len(), 1, "exactly one transfer at the provider");
    assert_eq!(fake.with(|s| s.transfer_posts), 1, "the restarted node read it back, it did not send again");
    let shown = titles(&payout);
    assert_eq!(shown.iter().filter(|t| *t == "Sent to Flutterwave").count(), 1, "{shown:?}");
    assert!(shown.contains(&"Flutterwave confirmed delivery".to_string()), "{shown:?}");
    let (available, pending) = live.ghs().await;
    assert_eq!(pending, 0);
    assert!(available < 30_000 - 4_000, "the payout and its fee left the balance once: {available}");
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_request_that_times_out_is_retried_under_the_same_reference() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    live.fund(&fake, "300.00").await;

    // The next exchange (the payout's first look-up) never answers in time.
    fake.with(|s| s.stall_next = 1);
    let r = live.payout("30.00", "p-timeout").await;
    r.expect(201);
    let id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let transfer = eventually("a transfer after the timeout", Duration::from_secs(30), || async {
        fake.transfers_for(&id).pop()
    })
    .await;
    assert_eq!(transfer["amount"], 30);
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    live.status_of("payouts", &id, "completed").await;
    assert_eq!(fake.transfers_for(&id).len(), 1);
    assert_eq!(fake.with(|s| s.transfer_posts), 1);
}
