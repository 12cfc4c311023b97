//! Live refunds through the Flutterwave connector, against the strict fake
//! in `support::flutterwave`: a refund of a charge the connector made goes
//! to the provider's refund endpoint for that charge, once, carrying Sika's
//! refund id; it stays pending until the provider says otherwise (its
//! notification, re-read, or the reconciler's own re-read); a notification
//! the provider contradicts moves nothing; a refusal fails the refund and
//! releases its hold; neither a lost answer nor a SIGKILL refunds twice.
//! A payment the operator settled still waits for the operator.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::flutterwave::{FakeFlutterwave, WEBHOOK_HASH};
use crate::support::*;

fn options(fake: &FakeFlutterwave) -> Options {
    Options { config: Some(fake.config(&["mtn_gh", "bank_ng"])), ..Options::unthrottled() }
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

    /// A GHS collection Flutterwave charged and confirmed; returns its id.
    async fn paid(&self, fake: &FakeFlutterwave, amount: &str, reference: &str) -> String {
        let body = json!({ "amount": amount, "currency": "GHS", "code": "mtn_gh",
                           "accountNumber": "+233241234567", "externalReference": reference });
        let r = self.api.post(&self.url("/v1/collections"), &self.key, body).await;
        let (_, id) = r.created("collection", "col_");
        eventually(&format!("a charge for {id}"), Duration::from_secs(20), || async { fake.charge_for(&id) })
            .await;
        fake.settle_charge(&id, "successful");
        self.status_of(&id, "collections", "collection", "completed").await;
        id
    }

    async fn refund(&self, collection: &str, amount: &str, reference: &str) -> (Value, String) {
        let body = json!({ "collectionId": collection, "amount": amount, "externalReference": reference });
        let r = self.api.post(&self.url("/v1/refunds"), &self.key, body).await;
        r.created("refund", "rf_")
    }

    async fn get_refund(&self, id: &str) -> Value {
        let r = self.api.get(&self.url(&format!("/v1/refunds/{id}")), &self.key).await;
        r.expect(200);
        r.body["refund"].clone()
    }

    async fn status_of(&self, id: &str, plural: &str, key: &str, wanted: &str) -> Value {
        let url = self.url(&format!("/v1/{plural}/{id}"));
        eventually(&format!("{plural}/{id} {wanted}"), Duration::from_secs(30), || async {
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
}

/// The refunds the fake holds for Sika's collection, once there are `n`.
async fn provider_refunds(fake: &FakeFlutterwave, collection: &str, n: usize) -> Vec<Value> {
    eventually(&format!("{n} refund(s) of {collection} at Flutterwave"), Duration::from_secs(30), || async {
        let refunds = fake.refunds_for(collection);
        (refunds.len() >= n).then_some(refunds)
    })
    .await
}

fn titles(resource: &Value) -> Vec<String> {
    timeline(resource).into_iter().map(|(_, title, _)| title).collect()
}

#[tokio::test]
async fn a_live_refund_goes_to_flutterwave_once_and_completes_only_when_the_provider_says_so() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let col = live.paid(&fake, "300.00", "lr-pay").await;
    let funded = live.ghs().await;

    let (refund, id) = live.refund(&col, "40.00", "lr-1").await;
    assert_eq!(refund["status"], "pending");
    let at_provider = provider_refunds(&fake, &col, 1).await;
    let charge = fake.charge_for(&col).unwrap();
    assert_eq!(at_provider[0]["transaction_id"], charge["id"], "the refund names the charge it returns");
    assert_eq!(at_provider[0]["amount_refunded"], json!(40.0));
    let comment = at_provider[0]["comment"].as_str().unwrap().to_string();
    assert!(comment.split_whitespace().any(|w| w == id), "Sika's refund id rides in comments: {comment}");
    let provider_id = at_provider[0]["id"].clone();
    let held = live.ghs().await;
    assert_eq!(held.0, funded.0 - 4_000, "the refund holds its amount: {held:?} from {funded:?}");

    // The provider shows it pending: Sika records the hand-over and waits,
    // whatever it re-reads meanwhile.
    let sent = eventually("the hand-over on the timeline", Duration::from_secs(20), || async {
        let refund = live.get_refund(&id).await;
        titles(&refund).contains(&"Sent to Flutterwave".to_string()).then_some(refund)
    })
    .await;
    assert_eq!(sent["status"], "pending");
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    // A notification that claims it completed while the provider says it
    // is pending is re-read and moves nothing; a forged one is refused.
    let claim = fake.refund_event(&provider_id, Some("completed"));
    assert_eq!(FakeFlutterwave::notify(&live.node.live, "not-the-hash", &claim).await, 401);
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &claim).await, 200);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        live.get_refund(&id).await["status"],
        "pending",
        "the provider's word, not the notification's"
    );
    assert_eq!(live.ghs().await, held);

    // The provider completes it and says so: Sika re-reads and completes.
    fake.settle_refund(&provider_id, "completed");
    assert_eq!(
        FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.refund_event(&provider_id, None)).await,
        200
    );
    let completed = live.status_of(&id, "refunds", "refund", "completed").await;
    assert!(completed["completedAt"].is_string(), "{completed}");
    let shown = titles(&completed);
    assert!(shown.contains(&"Flutterwave confirmed the refund".to_string()), "{shown:?}");
    assert_eq!(shown.iter().filter(|t| *t == "Sent to Flutterwave").count(), 1, "{shown:?}");
    assert_eq!(live.ghs().await, held, "the hold is taken: the amount stays gone");
    wait_for_events(&live.api, &live.node.live, &live.key, &id, &["refund.pending", "refund.completed"])
        .await;
    assert_eq!(fake.with(|s| s.refund_posts), 1, "one request to the refund endpoint");
    assert_eq!(fake.refunds_for(&col).len(), 1);

    // A second, partial refund of what is left completes by the reconciler's
    // own re-read, with no notification at all.
    let (_, second) = live.refund(&col, "10.00", "lr-2").await;
    let at_provider = provider_refunds(&fake, &col, 2).await;
    let second_at_provider = at_provider.iter().find(|r| r["amount_refunded"] == json!(10.0)).unwrap();
    fake.settle_refund(&second_at_provider["id"], "completed");
    live.status_of(&second, "refunds", "refund", "completed").await;
    assert_eq!(fake.with(|s| s.refund_posts), 2);
    let r = live.api.get(&live.url(&format!("/v1/collections/{col}")), &live.key).await;
    assert_eq!(r.body["collection"]["refundedAmount"], "50.00", "{}", r.text);
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_refund_flutterwave_refuses_or_fails_releases_its_hold() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let col = live.paid(&fake, "200.00", "lr-refuse-pay").await;
    let funded = live.ghs().await;

    // Refused at once (the merchant's Flutterwave balance cannot pay it).
    fake.with(|s| s.refuse_refunds = Some("Insufficient balance to process this refund".into()));
    let (_, refused) = live.refund(&col, "30.00", "lr-refused").await;
    let failed = live.status_of(&refused, "refunds", "refund", "failed").await;
    let message = failed["statusMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("Flutterwave refused it") && message.contains("Insufficient balance"),
        "{failed}"
    );
    assert!(fake.refunds_for(&col).is_empty(), "nothing was refunded at the provider");
    assert_eq!(live.ghs().await, funded, "the hold is released");
    wait_for_events(&live.api, &live.node.live, &live.key, &refused, &["refund.failed"]).await;

    // Taken, then failed at the provider: failed in Sika too, released.
    fake.with(|s| s.refuse_refunds = None);
    let (_, later) = live.refund(&col, "30.00", "lr-later").await;
    let at_provider = provider_refunds(&fake, &col, 1).await;
    live.status_of(&later, "refunds", "refund", "pending").await;
    fake.settle_refund(&at_provider[0]["id"], "failed");
    let failed = live.status_of(&later, "refunds", "refund", "failed").await;
    assert!(titles(&failed).contains(&"Sent to Flutterwave".to_string()), "{failed}");
    assert_eq!(live.ghs().await, funded, "the hold is released");
    let r = live.api.get(&live.url(&format!("/v1/collections/{col}")), &live.key).await;
    assert_eq!(r.body["collection"]["refundedAmount"], "0.00", "{}", r.text);
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_refund_whose_answer_never_came_is_read_back_not_refunded_again() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let col = live.paid(&fake, "100.00", "lr-timeout-pay").await;

    // Flutterwave takes the refund but its answer comes after Sika stopped
    // waiting (10 s): the next look finds the refund among the charge's.
    fake.with(|s| s.hold_refunds = true);
    let (_, id) = live.refund(&col, "25.00", "lr-timeout").await;
    provider_refunds(&fake, &col, 1).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    fake.with(|s| s.hold_refunds = false);
    let refund = eventually("the hand-over after the timeout", Duration::from_secs(30), || async {
        let refund = live.get_refund(&id).await;
        titles(&refund).contains(&"Sent to Flutterwave".to_string()).then_some(refund)
    })
    .await;
    assert_eq!(refund["status"], "pending");
    assert_eq!(fake.with(|s| s.refund_posts), 1, "read back, never sent again");
    fake.settle_refund(&fake.refunds_for(&col)[0]["id"], "completed");
    live.status_of(&id, "refunds", "refund", "completed").await;
    assert_eq!(fake.refunds_for(&col).len(), 1, "one refund at the provider");
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_sigkill_after_flutterwave_took_a_refund_refunds_once_after_restart() {
    let fake = FakeFlutterwave::start();
    let mut live = Live::start(&fake);
    let col = live.paid(&fake, "100.00", "lr-crash-pay").await;
    let funded = live.ghs().await;

    fake.with(|s| s.hold_refunds = true);
    let (_, id) = live.refund(&col, "60.00", "lr-crash").await;
    // Flutterwave has the refund; Sika has not heard so when it dies.
    let at_provider = provider_refunds(&fake, &col, 1).await;
    live.node.kill9();
    fake.with(|s| s.hold_refunds = false);
    fake.settle_refund(&at_provider[0]["id"], "completed");

    live.node.restart(&options(&fake), &[]);
    live.api = Api::new();
    let refund = live.status_of(&id, "refunds", "refund", "completed").await;
    assert_eq!(fake.with(|s| s.refund_posts), 1, "the restarted node read it back, it did not refund again");
    assert_eq!(fake.refunds_for(&col).len(), 1);
    let shown = titles(&refund);
    assert_eq!(shown.iter().filter(|t| *t == "Sent to Flutterwave").count(), 1, "{shown:?}");
    assert_eq!(live.ghs().await.0, funded.0 - 6_000, "the amount left the balance once");
    live.node.stop_and_verify();
}

#[tokio::test]
async fn a_live_payment_the_operator_settled_is_refunded_by_the_operator_not_the_connector() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    // Bank collections stay with the operator, even with a connector.
    let body = json!({ "amount": "8000.00", "currency": "NGN", "code": "bank_ng",
                       "accountNumber": "0123456789", "externalReference": "lr-bank" });
    let r = live.api.post(&live.url("/v1/collections"), &live.key, body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let (_, col) = r.created("collection", "col_");
    let admin = live.node.creds.admin_token.clone();
    let url = live.node.admin_url(&format!("/admin/v1/live/collections/{col}/complete"));
    live.api.call("POST", &url, Some(&admin), None).await.expect(200);

    let (refund, id) = live.refund(&col, "2000.00", "lr-by-hand").await;
    assert!(titles(&refund).contains(&"Waiting for the operator".to_string()), "{refund}");
    let r = live.api.get(&live.node.admin_url("/admin/v1/live/refunds/awaiting-operator"), &admin).await;
    r.expect(200);
    assert!(r.body["data"].as_array().unwrap().iter().any(|r| r["id"] == id.as_str()), "{}", r.text);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(fake.with(|s| s.refund_posts), 0, "nothing goes to Flutterwave");
    assert_eq!(live.get_refund(&id).await["status"], "pending");
}
