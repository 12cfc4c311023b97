//! SIGKILL through the HTTP API: the real node is killed while payouts,
//! deposits, conversions, refunds and disputes (opened with their holds,
//! accepted or declined) pour in, restarted, and every operation it
//! acknowledged must be there exactly once, with `sika verify` (which
//! recounts every dispute's holds from the ledger) passing straight after
//! each kill. Some payouts are the sandbox's `05`, which the rail reverses
//! after completing: each ends reversed, its amount given back once (one
//! `payout.reversed`, one reversal on its timeline), whether the kill fell
//! before its reversal job ran or after. `SIKA_HTTP_CRASH_CYCLES` sets how
//! many kills (default 3; more locally).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// The payouts and conversions the node acknowledged before a kill.
#[derive(Default)]
pub(crate) struct Acknowledged {
    /// (externalReference, id, body) of each payout answered 201.
    pub(crate) payouts: Mutex<Vec<(String, String, Value)>>,
    /// (externalReference, id) of each conversion answered 201.
    conversions: Mutex<Vec<(String, String)>>,
    /// (externalReference, id, body) of each refund answered 201.
    refunds: Mutex<Vec<(String, String, Value)>>,
    /// (externalReference, id) of each `05` payout answered 201: the
    /// sandbox reverses each after it completes.
    reversible: Mutex<Vec<(String, String)>>,
    /// (id, status) of each dispute as its last acknowledged change left it.
    disputes: Mutex<Vec<(String, String)>>,
}

/// Refunds of 0.50 GHS, round the `payments` (completed collections), until
/// the node stops answering.
async fn refund(
    api: Api,
    url: String,
    key: String,
    payments: Vec<String>,
    prefix: String,
    acked: Arc<Acknowledged>,
) {
    for n in 0.. {
        let reference = format!("{prefix}-{n}");
        let payment = &payments[n % payments.len()];
        let body = json!({ "collectionId": payment, "amount": "0.50", "externalReference": reference });
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 201 {
            return;
        }
        let Ok(v) = r.json::<Value>().await else { return };
        let id = v["refund"]["id"].as_str().unwrap().to_string();
        acked.refunds.lock().unwrap().push((reference, id, body));
    }
}

/// Every acknowledged refund is listed once, a retry returns it, and each
/// payment's `refundedAmount` is the sum of its refunds listed (none failed
/// at 0.50), never more than it brought.
async fn check_refunds_exactly_once(
    api: &Api,
    node: &Node,
    key: &str,
    acked: &Acknowledged,
    payments: &[String],
) {
    let listed = every_item(api, &node.sandbox_url("/v1/refunds"), key).await;
    let mut by_reference = std::collections::HashMap::new();
    let mut per_payment: std::collections::HashMap<String, i128> = std::collections::HashMap::new();
    for refund in &listed {
        let reference = refund["externalReference"].as_str().unwrap().to_string();
        let id = refund["id"].as_str().unwrap().to_string();
        assert!(by_reference.insert(reference.clone(), id).is_none(), "refund {reference} is listed twice");
        *per_payment.entry(refund["collectionId"].as_str().unwrap().to_string()).or_default() +=
            minor(refund["amount"].as_str().unwrap(), 2);
    }
    let refunds = acked.refunds.lock().unwrap().clone();
    for (reference, id, _) in &refunds {
        assert_eq!(
            by_reference.get(reference),
            Some(id),
            "acknowledged refund {reference} ({id}) is not listed"
        );
    }
    for (reference, id, body) in refunds.iter().rev().take(5) {
        let again = api.post(&node.sandbox_url("/v1/refunds"), key, body.clone()).await;
        again.expect(200);
        assert_eq!(again.body["refund"]["id"], id.as_str(), "a retry of {reference} after the crash");
    }
    for payment in payments {
        let r = api.get(&node.sandbox_url(&format!("/v1/collections/{payment}")), key).await;
        let refunded = minor(r.body["collection"]["refundedAmount"].as_str().unwrap(), 2);
        assert_eq!(refunded, per_payment.get(payment).copied().unwrap_or(0), "payment {payment}'s refunds");
        assert!(refunded <= minor(r.body["collection"]["amount"].as_str().unwrap(), 2));
    }
}

fn cycles() -> usize {
    std::env::var("SIKA_HTTP_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
}

/// A payout of 1 GHS: the crash cycles make thousands of them.
pub(crate) fn payout_body(reference: &str) -> Value {
    mtn_payout("1.00", reference)
}

pub(crate) async fn pay_out(api: Api, url: String, key: String, prefix: String, acked: Arc<Acknowledged>) {
    for n in 0.. {
        let reference = format!("{prefix}-{n}");
        let body = payout_body(&reference);
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 201 {
            return;
        }
        let Ok(v) = r.json::<Value>().await else { return };
        let id = v["payout"]["id"].as_str().unwrap().to_string();
        acked.payouts.lock().unwrap().push((reference, id, body));
    }
}

/// Payouts of 1.05 GHS, which the sandbox completes and then reverses.
async fn pay_out_reversible(api: Api, url: String, key: String, prefix: String, acked: Arc<Acknowledged>) {
    for n in 0.. {
        let reference = format!("{prefix}-{n}");
        let body = mtn_payout("1.05", &reference);
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 201 {
            return;
        }
        let Ok(v) = r.json::<Value>().await else { return };
        let id = v["payout"]["id"].as_str().unwrap().to_string();
        acked.reversible.lock().unwrap().push((reference, id));
    }
}

/// Every acknowledged `05` payout ends reversed, exactly once: listed once,
/// one `payout.reversed`, one reversal on its timeline.
async fn check_reversed_once(api: &Api, node: &Node, key: &str, acked: &Acknowledged) {
    let reversible = acked.reversible.lock().unwrap().clone();
    let events = eventually("every 05 payout reversed", Duration::from_secs(30), || async {
        let events = all_events(api, &node.sandbox, key).await;
        let reversed =
            |id: &str| events.iter().any(|e| e["event"] == "payout.reversed" && e["data"]["id"] == id);
        reversible.iter().all(|(_, id)| reversed(id)).then_some(events)
    })
    .await;
    for (reference, id) in &reversible {
        let count = events
            .iter()
            .filter(|e| e["event"] == "payout.reversed" && e["data"]["id"] == id.as_str())
            .count();
        assert_eq!(count, 1, "{reference} ({id}) was reversed {count} times");
    }
    // The newest ones, those a kill most likely interrupted, in full.
    for (reference, id) in reversible.iter().rev().take(20) {
        let r = api.get(&node.sandbox_url(&format!("/v1/payouts/{id}")), key).await;
        r.expect(200);
        assert_eq!(r.body["payout"]["status"], "reversed", "{reference}: {}", r.body);
        let titles = timeline(&r.body["payout"]);
        let returned = titles.iter().filter(|(_, title, _)| title == "Amount returned").count();
        assert_eq!(returned, 1, "{reference} ({id}): its amount came back {returned} times");
    }
    let listed: Vec<String> = every_item(api, &node.sandbox_url("/v1/payouts?status=reversed"), key)
        .await
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    for (reference, id) in &reversible {
        assert_eq!(listed.iter().filter(|l| *l == id).count(), 1, "{reference} ({id}) listed reversed once");
    }
}

async fn convert(api: Api, base: String, key: String, prefix: String, acked: Arc<Acknowledged>) {
    for n in 0.. {
        let body = json!({ "from": { "currency": "USD", "amount": "1.00" }, "to": { "currency": "GHS" } });
        let url = format!("{base}/v1/conversions/quotes");
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        let Ok(quote) = r.json::<Value>().await else { return };
        let reference = format!("{prefix}-{n}");
        let body = json!({ "quoteId": quote["quote"]["id"], "externalReference": reference });
        let url = format!("{base}/v1/conversions");
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 201 {
            return;
        }
        let Ok(v) = r.json::<Value>().await else { return };
        acked
            .conversions
            .lock()
            .unwrap()
            .push((reference, v["conversion"]["id"].as_str().unwrap().to_string()));
    }
}

/// Opens disputes on completed 2.00 GHS collections and resolves each,
/// accepted and declined in turn, recording every acknowledged change.
async fn dispute(api: Api, base: String, key: String, prefix: String, acked: Arc<Acknowledged>) {
    for n in 0.. {
        let body = mtn_collection("2.00", &format!("{prefix}-{n}"));
        let Ok(r) =
            api.client.post(format!("{base}/v1/collections")).bearer_auth(&key).json(&body).send().await
        else {
            return;
        };
        let Ok(v) = r.json::<Value>().await else { return };
        let Some(collection) = v["collection"]["id"].as_str().map(str::to_string) else { return };
        loop {
            let url = format!("{base}/v1/collections/{collection}");
            let Ok(r) = api.client.get(&url).bearer_auth(&key).send().await else { return };
            let Ok(v) = r.json::<Value>().await else { return };
            match v["collection"]["status"].as_str() {
                Some("completed") => break,
                Some("pending") => tokio::time::sleep(Duration::from_millis(5)).await,
                _ => return,
            }
        }
        let url = format!("{base}/v1/simulations/disputes");
        let body = json!({ "collectionId": collection });
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 201 {
            return;
        }
        let Ok(v) = r.json::<Value>().await else { return };
        let id = v["dispute"]["id"].as_str().unwrap().to_string();
        assert_eq!(v["dispute"]["heldAmount"], "2.00", "the balance holds it all: {v}");
        acked.disputes.lock().unwrap().push((id.clone(), "open".into()));
        let outcome = if n % 2 == 0 { "accepted" } else { "declined" };
        let url = format!("{base}/v1/simulations/disputes/{id}/resolve");
        let body = json!({ "outcome": outcome });
        let Ok(r) = api.client.post(&url).bearer_auth(&key).json(&body).send().await else { return };
        if r.status() != 200 {
            return;
        }
        let mut disputes = acked.disputes.lock().unwrap();
        disputes.last_mut().expect("the dispute just opened").1 = outcome.to_string();
    }
}

/// Every acknowledged dispute is there once, at least as far as its last
/// acknowledged change took it, with the money that state means: held
/// while open, taken once accepted, released once declined.
async fn check_disputes(api: &Api, node: &Node, key: &str, acked: &Acknowledged) {
    let listed = every_item(api, &node.sandbox_url("/v1/disputes"), key).await;
    let ids: std::collections::HashSet<&str> = listed.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), listed.len(), "a dispute is listed twice");
    for (id, status) in acked.disputes.lock().unwrap().iter() {
        let d = listed.iter().find(|d| d["id"] == id.as_str());
        let d = d.unwrap_or_else(|| panic!("acknowledged dispute {id} is not listed"));
        if status != "open" {
            assert_eq!(d["status"], status.as_str(), "dispute {id}'s acknowledged resolution: {d}");
        }
        let expected = match d["status"].as_str().unwrap() {
            "open" => ("2.00", Value::Null),
            "accepted" => ("2.00", json!("lost")),
            _ => ("0.00", json!("won")),
        };
        assert_eq!((d["heldAmount"].as_str().unwrap(), &d["outcome"]), (expected.0, &expected.1), "{d}");
    }
}

/// Every acknowledged payout and conversion is there exactly once (the
/// lists hold each acknowledged id once, and no reference twice), and a
/// retry of the last payouts before the kill returns them (200, same id)
/// and creates nothing.
pub(crate) async fn check_exactly_once(api: &Api, node: &Node, key: &str, acked: &Acknowledged) {
    let listed = every_item(api, &node.sandbox_url("/v1/payouts"), key).await;
    let mut by_reference = std::collections::HashMap::new();
    for payout in &listed {
        let reference = payout["externalReference"].as_str().unwrap().to_string();
        let id = payout["id"].as_str().unwrap().to_string();
        assert!(by_reference.insert(reference.clone(), id).is_none(), "{reference} is listed twice");
    }
    let payouts = acked.payouts.lock().unwrap().clone();
    for (reference, id, _) in &payouts {
        assert_eq!(
            by_reference.get(reference),
            Some(id),
            "acknowledged payout {reference} ({id}) is not listed"
        );
    }
    for (reference, id, body) in payouts.iter().rev().take(10) {
        let again = api.post(&node.sandbox_url("/v1/payouts"), key, body.clone()).await;
        again.expect(200);
        assert_eq!(again.body["payout"]["id"], id.as_str(), "a retry of {reference} after the crash");
    }
    let listed = every_item(api, &node.sandbox_url("/v1/conversions"), key).await;
    let ids: std::collections::HashSet<&str> = listed.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), listed.len(), "a conversion is listed twice");
    for (reference, id) in acked.conversions.lock().unwrap().iter() {
        assert!(ids.contains(id.as_str()), "acknowledged conversion {reference} ({id}) is not listed");
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one workload of every kind per cycle, each started and checked in turn"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_operation_survives_sigkill_exactly_once() {
    let mut node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "1000000.00").await;
    deposit(&api, &node, &key, "USD", "1000000.00").await;
    let mut payments = Vec::new();
    for n in 0..3 {
        let body = mtn_collection("1000.00", &format!("crash-paid-{n}"));
        let (_, paid) = collect_until(&api, &node, body, "completed").await;
        payments.push(paid["id"].as_str().unwrap().to_string());
    }
    let acked = Arc::new(Acknowledged::default());
    let mut deposits = 0;
    for cycle in 0..cycles() {
        let mut workers = Vec::new();
        for worker in 0..3 {
            let (url, prefix) = (node.sandbox_url("/v1/payouts"), format!("crash-po-{cycle}-{worker}"));
            workers.push(tokio::spawn(pay_out(api.clone(), url, key.clone(), prefix, acked.clone())));
        }
        let (url, prefix) = (node.sandbox_url("/v1/payouts"), format!("crash-rv-{cycle}"));
        workers.push(tokio::spawn(pay_out_reversible(api.clone(), url, key.clone(), prefix, acked.clone())));
        let prefix = format!("crash-cv-{cycle}");
        workers.push(tokio::spawn(convert(
            api.clone(),
            node.sandbox.clone(),
            key.clone(),
            prefix,
            acked.clone(),
        )));
        workers.push(tokio::spawn(refund(
            api.clone(),
            node.sandbox_url("/v1/refunds"),
            key.clone(),
            payments.clone(),
            format!("crash-rf-{cycle}"),
            acked.clone(),
        )));
        let prefix = format!("crash-dsp-{cycle}");
        workers.push(tokio::spawn(dispute(
            api.clone(),
            node.sandbox.clone(),
            key.clone(),
            prefix,
            acked.clone(),
        )));
        let depositors = Depositors::start(&api, &node, &key);
        // Kill at a different instant each cycle.
        tokio::time::sleep(Duration::from_millis(250 + 97 * (cycle as u64 % 5))).await;
        node.kill9();
        for worker in workers {
            worker.await.unwrap();
        }
        deposits += depositors.stop().await.0;
        let report = verify_dir(&node.data_dir());
        assert!(report.contains("sandbox: consistent"), "cycle {cycle}: {report}");
        node.restart(&Options::unthrottled(), &[]);
        check_exactly_once(&api, &node, &key, &acked).await;
        check_refunds_exactly_once(&api, &node, &key, &acked, &payments).await;
        check_reversed_once(&api, &node, &key, &acked).await;
        check_disputes(&api, &node, &key, &acked).await;
    }
    let payouts = acked.payouts.lock().unwrap().len();
    let conversions = acked.conversions.lock().unwrap().len();
    let refunds = acked.refunds.lock().unwrap().len();
    let reversed = acked.reversible.lock().unwrap().len();
    let disputes = acked.disputes.lock().unwrap().len();
    assert!(
        payouts > 0 && conversions > 0 && deposits > 0 && refunds > 0 && reversed > 0 && disputes > 0,
        "{payouts} payouts, {conversions} conversions, {deposits} deposits, {refunds} refunds, {reversed} reversed payouts, {disputes} disputes"
    );
    eprintln!(
        "{} kills: {payouts} payouts, {conversions} conversions, {deposits} deposits, {refunds} refunds, \
         {reversed} reversed payouts, {disputes} disputes acknowledged, each present once",
        cycles()
    );
    node.stop_and_verify();
}
