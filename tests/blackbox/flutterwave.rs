//! The Flutterwave connector, driven on the live stack against the strict
//! fake in `support::flutterwave`: collections as charges and payouts as
//! transfers under Sika's ids (to wallets, to Nigerian bank accounts with
//! their bank code, to M-Pesa with the sender), bank accounts looked up
//! before money moves and in destination validation, notifications that only
//! make Sika re-read the provider, refunds on failure, the breaker in
//! capabilities, and a SIGKILL between the provider's acceptance and Sika's
//! record of it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::flutterwave::{FakeFlutterwave, SENDER_NAME, WEBHOOK_HASH};
use crate::support::*;

const ROUTED: &[&str] = &["mtn_gh", "mpesa_ke", "bank_ng"];
/// Access Bank, and an account the fake knows there.
const ACCESS: &str = "044";
const ADA: &str = "0690000031";

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
        self.collection_on("mtn_gh", "GHS", "+233241234567", amount, reference).await
    }

    async fn collection_on(
        &self,
        code: &str,
        currency: &str,
        number: &str,
        amount: &str,
        reference: &str,
    ) -> String {
        let body = json!({ "amount": amount, "currency": currency, "code": code,
                           "accountNumber": number, "externalReference": reference });
        let r = self.api.post(&self.url("/v1/collections"), &self.key, body).await;
        r.expect(201);
        r.body["collection"]["id"].as_str().unwrap().to_string()
    }

    /// Funds live NGN through a bank collection the operator confirms (bank
    /// collections stay with the operator, even with bank_ng routed).
    async fn fund_ngn(&self, amount: &str) {
        let id =
            self.collection_on("bank_ng", "NGN", "0123456789", amount, &format!("fund-ngn-{amount}")).await;
        let url = self.node.admin_url(&format!("/admin/v1/live/collections/{id}/complete"));
        self.api.call("POST", &url, Some(&self.node.creds.admin_token), None).await.expect(200);
    }

    /// NGN (available, pending) in kobo.
    async fn ngn(&self) -> (i128, i128) {
        balances_minor(&self.api, &self.node.live, &self.key, "NGN", 2).await
    }

    async fn bank_payout(
        &self,
        amount: &str,
        number: &str,
        bank_code: Option<&str>,
        reference: &str,
    ) -> Resp {
        let mut to = json!({ "code": "bank_ng", "accountNumber": number });
        if let Some(code) = bank_code {
            to["bankCode"] = code.into();
        }
        let body = json!({ "from": { "currency": "NGN", "amount": amount }, "to": to,
                           "externalReference": reference, "metadata": { "beneficiaryName": "Ada Obi" } });
        self.api.post(&self.url("/v1/payouts"), &self.key, body).await
    }

    async fn validate(&self, items: Value) -> Vec<Value> {
        let r = self.api.post(&self.url("/v1/validate/bulk"), &self.key, json!({ "items": items })).await;
        r.expect(200);
        r.body["results"].as_array().unwrap().iter().map(|item| item["result"].clone()).collect()
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
    let (_, payout_id) = r.created("payout", "pay_");
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
    let (_, id) = r.created("payout", "pay_");
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
    let (_, id) = r.created("payout", "pay_");
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
    let (_, id) = r.created("payout", "pay_");
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
    let (_, id) = r.created("payout", "pay_");
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

#[tokio::test]
async fn a_bank_payout_goes_out_under_its_bank_code_and_completes_and_another_fails_with_a_refund() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    fake.open_account(ACCESS, ADA, "ADA OBI");
    fake.open_account("058", "0123456780", "KOLA ADE");
    live.fund_ngn("100000.00").await;
    let funded = live.ngn().await;
    assert_eq!(funded, (10_000_000, 0));

    // The account is looked up before money moves, and the payout shows
    // the bank it names.
    let r = live.bank_payout("5000.00", ADA, Some(ACCESS), "bp-ok").await;
    let (_, id) = r.created("payout", "pay_");
    let fee = minor(r.body["payout"]["fee"]["amount"].as_str().unwrap(), 2);
    assert_eq!(r.body["payout"]["to"]["bankCode"], ACCESS, "{}", r.body);
    assert!(detail_of(&r.body["payout"], "Sent to rail").contains("ADA OBI"), "{}", r.body);
    let transfer = wait_for_transfer(&fake, &id).await;
    assert_eq!(transfer["bank_code"], ACCESS, "account_bank is the payout's bank code");
    assert_eq!(transfer["account_number"], ADA);
    assert_eq!(transfer["reference"], id.as_str(), "Sika's id is the reference");
    assert_eq!(transfer["amount"], 5000);
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&id, None)).await, 200);
    let payout = live.status_of("payouts", &id, "completed").await;
    assert_eq!(payout["to"]["bankCode"], ACCESS);
    assert!(titles(&payout).contains(&"Flutterwave confirmed delivery".to_string()));
    wait_for_events(&live.api, &live.node.live, &live.key, &id, &["payout.completed"]).await;
    let paid = (funded.0 - 500_000 - fee, 0);
    assert_eq!(live.ngn().await, paid);

    // A transfer the bank refuses fails the payout and refunds amount and fee.
    let r = live.bank_payout("2000.00", "0123456780", Some("058"), "bp-fail").await;
    let (_, id) = r.created("payout", "pay_");
    wait_for_transfer(&fake, &id).await;
    assert!(live.ngn().await.0 < paid.0, "held while the bank decides");
    fake.settle_transfer(&id, "FAILED", "DISBURSE FAILED: Beneficiary account is dormant");
    assert_eq!(FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&id, None)).await, 200);
    let payout = live.status_of("payouts", &id, "failed").await;
    assert!(payout["statusMessage"].as_str().unwrap().contains("dormant"), "{payout}");
    assert!(titles(&payout).contains(&"Balance refunded".to_string()), "{payout}");
    wait_for_events(&live.api, &live.node.live, &live.key, &id, &["payout.failed"]).await;
    assert_eq!(live.ngn().await, paid, "amount and fee back on the balance");
    assert_eq!(fake.with(|s| s.resolve_posts), 2, "each bank payout was looked up once");
    assert!(fake.with(|s| s.refused.clone()).is_empty(), "the fake refused a request");
}

#[tokio::test]
async fn a_bank_payout_without_its_bank_code_or_to_an_unknown_account_is_refused_before_money_moves() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    fake.open_account(ACCESS, ADA, "ADA OBI");
    live.fund_ngn("10000.00").await;
    let funded = live.ngn().await;

    live.bank_payout("500.00", ADA, None, "no-bank").await.expect_invalid("to.bankCode");
    let r = live.bank_payout("500.00", ADA, Some("999"), "bad-bank").await;
    r.expect_invalid("to.bankCode");
    assert!(r.text.contains("044"), "the message lists the options: {}", r.text);
    let r = live.bank_payout("500.00", "0690000099", Some(ACCESS), "unknown-account").await;
    r.expect_invalid("to.accountNumber");
    let wallet = json!({ "from": { "currency": "GHS", "amount": "5.00" },
                         "to": { "code": "mtn_gh", "accountNumber": "+233241234567", "bankCode": ACCESS },
                         "externalReference": "wallet-with-bank" });
    let r = live.api.post(&live.url("/v1/payouts"), &live.key, wallet).await;
    r.expect_invalid("to.bankCode");

    assert_eq!(live.ngn().await, funded, "nothing was held");
    assert_eq!(fake.with(|s| s.transfer_posts), 0, "nothing reached Flutterwave's transfers");
    let r = live.api.get(&live.url("/v1/payouts"), &live.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 0, "no payout was stored: {}", r.text);
}

#[tokio::test]
async fn validate_bulk_on_live_looks_bank_accounts_up_at_flutterwave() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    fake.open_account(ACCESS, ADA, "ADA OBI");
    let bank = |number: &str, routing: Option<&str>| {
        let mut item = json!({ "code": "bank_ng", "accountNumber": number });
        if let Some(r) = routing {
            item["routingNumber"] = r.into();
        }
        item
    };
    let results = live
        .validate(json!([
            bank(ADA, Some(ACCESS)),
            bank("0690000099", Some(ACCESS)),
            bank(ADA, None),
            bank(ADA, Some("999")),
            { "code": "mtn_gh", "accountNumber": "+233241234567" },
            { "code": "bank_gh", "accountNumber": "1234567890", "routingNumber": "040100" },
            bank(ADA, Some(ACCESS)),
        ]))
        .await;
    let found = json!({ "valid": true, "accountName": "ADA OBI", "reason": null, "checked": "rail" });
    assert_eq!(results[0], found);
    assert_eq!(results[6], found, "the same account, answered alike");
    assert_eq!(
        results[1],
        json!({ "valid": false, "accountName": null, "reason": "account_not_found", "checked": "rail" })
    );
    assert_eq!(
        (&results[2]["reason"], &results[2]["checked"]),
        (&json!("missing_bank_code"), &json!("format"))
    );
    assert_eq!(results[3]["reason"], "invalid_bank_code");
    for (n, result) in results.iter().enumerate().skip(4).take(2) {
        assert_eq!((&result["valid"], &result["checked"]), (&json!(true), &json!("format")), "item {n}");
    }
    assert_eq!(fake.with(|s| s.resolve_posts), 2, "two distinct accounts, two lookups");

    // The provider failing is an answer, not an error.
    fake.with(|s| s.down = true);
    let results = live.validate(json!([bank(ADA, Some(ACCESS))])).await;
    assert_eq!(
        results[0],
        json!({ "valid": false, "accountName": null, "reason": "provider_unavailable", "checked": "format" })
    );
    assert!(fake.with(|s| s.refused.clone()).is_empty(), "the fake refused a request");
}

#[tokio::test]
async fn an_m_pesa_payout_carries_the_sender_flutterwave_needs() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let wallet = "+254712345678";
    let id = live.collection_on("mpesa_ke", "KES", wallet, "1000.00", "fund-kes").await;
    let charge = wait_for_charge(&fake, &id).await;
    assert_eq!(charge["charge_type"], "mpesa");
    fake.settle_charge(&id, "successful");
    live.status_of("collections", &id, "completed").await;
    wait_for_events(&live.api, &live.node.live, &live.key, &id, &["collection.completed"]).await;

    let body = json!({ "from": { "currency": "KES", "amount": "100.00" },
                       "to": { "code": "mpesa_ke", "accountNumber": wallet },
                       "externalReference": "kes-1", "metadata": { "beneficiaryName": "Akinyi Kimwei" } });
    let r = live.api.post(&live.url("/v1/payouts"), &live.key, body).await;
    r.expect(201);
    assert!(r.body["payout"]["to"].get("bankCode").is_none(), "no bank code, no field: {}", r.body);
    let id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let transfer = wait_for_transfer(&fake, &id).await;
    assert_eq!(transfer["bank_code"], "MPS");
    assert_eq!(transfer["account_number"], "254712345678");
    assert_eq!(
        transfer["meta"],
        json!({ "sender": SENDER_NAME, "sender_country": "KE", "mobile_number": "254700000001" })
    );
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    live.status_of("payouts", &id, "completed").await;
    assert!(fake.with(|s| s.refused.clone()).is_empty(), "the fake refused a request");
}

#[tokio::test]
async fn a_transfer_flutterwave_holds_but_does_not_list_yet_is_read_back_not_sent_again() {
    let fake = FakeFlutterwave::start();
    let mut live = Live::start(&fake);
    live.fund(&fake, "300.00").await;

    // Accepted at the provider, unheard by Sika, and then missing from the
    // provider's list for a while after the restart.
    fake.with(|s| s.hold = true);
    let r = live.payout("25.00", "p-lag").await;
    let (_, id) = r.created("payout", "pay_");
    wait_for_transfer(&fake, &id).await;
    live.node.kill9();
    fake.with(|s| {
        s.hold = false;
        s.list_lags = true;
    });
    live.node.restart(&options(&fake), &[]);
    live.api = Api::new();
    eventually("a second attempt refused as a duplicate", Duration::from_secs(20), || async {
        (fake.with(|s| s.transfer_posts) >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let posts = fake.with(|s| s.transfer_posts);
    assert!(posts <= 8, "a refused duplicate is read back after a backoff, not resent at once: {posts}");

    fake.with(|s| s.list_lags = false);
    fake.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    live.status_of("payouts", &id, "completed").await;
    assert_eq!(fake.transfers_for(&id).len(), 1, "exactly one transfer at the provider");
    live.node.stop_and_verify();
}

/// Issue 31.2: an order's payout is made inside the ledger, by the command
/// that records the order's funds (here the operator's), where no handler
/// makes it due at the reconciler. The commit does (the after-commit
/// follower), so the transfer reaches Flutterwave at once instead of at the
/// reconciler's next scan of open movements a minute later; the order then
/// completes with its webhook events like any other.
#[tokio::test]
async fn an_orders_payout_made_by_the_ledger_reaches_flutterwave_at_once() {
    let fake = FakeFlutterwave::start();
    // With the example's receiving details, so live orders take mobile money;
    // on a clock where the reconciler scans for open movements every 6 s
    // (a minute, scaled), so a transfer within 2 s is not the scan's doing.
    let config = format!("{EXAMPLE_CONFIG}{}", fake.config(ROUTED));
    let options = Options { config: Some(config), time_scale: Some(0.1), ..Options::unthrottled() };
    let node = Node::start(options);
    let live = Live { key: node.creds.live_key.clone(), node, api: Api::new() };
    let admin = live.node.creds.admin_token.clone();
    let order = live
        .api
        .post(
            &live.url("/v1/orders"),
            &live.key,
            json!({
                "from": { "method": "mobile_money", "currency": "GHS", "amount": "200.00" },
                "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
                "externalReference": "order-at-flutterwave",
                "metadata": { "beneficiaryName": "Ama Mensah" },
            }),
        )
        .await;
    let (_, id) = order.created("order", "ord_");
    // Past the reconciler's first scan, which would otherwise find it.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let funds_url = live.node.admin_url(&format!("/admin/v1/live/orders/{id}/funds"));
    let funded = live.api.post(&funds_url, &admin, json!({ "amount": "200.00" })).await;
    funded.expect(200);
    let started = std::time::Instant::now();
    assert_eq!(funded.body["order"]["status"], "processing_payout", "{}", funded.text);
    let payout_id = funded.body["order"]["payoutId"].as_str().unwrap().to_string();
    let transfer = eventually(&format!("a transfer for {payout_id}"), Duration::from_secs(2), || async {
        fake.transfers_for(&payout_id).pop()
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(2), "the transfer took {:?}", started.elapsed());
    assert_eq!(transfer["account_number"], "233241234567", "{transfer}");

    fake.settle_transfer(&payout_id, "SUCCESSFUL", "Transaction was successful");
    assert_eq!(
        FakeFlutterwave::notify(&live.node.live, WEBHOOK_HASH, &fake.event(&payout_id, None)).await,
        200
    );
    live.status_of("orders", &id, "completed").await;
    wait_for_events(
        &live.api,
        &live.node.live,
        &live.key,
        &id,
        &["order.processing_payout", "order.completed"],
    )
    .await;
    assert_eq!(fake.transfers_for(&payout_id).len(), 1, "one transfer");
}
