//! Reconciliation with the provider (`GET /admin/v1/live/reconciliation`,
//! `sika reconcile`, the console's view), against the strict fake in
//! `support::flutterwave`, whose transfer and transaction lists page as the
//! reference shows: pairs that agree are counted, a movement missing on
//! either side is listed, a pair that disagrees is listed per field and not
//! counted, several provider pages are read, a bad period is refused naming
//! its field, and a provider that cannot be read answers 503 and nothing
//! else.

use std::time::Duration;

use crossterm::event::KeyCode;
use serde_json::{Value, json};
use sika_tui::{Detail, Tab};

use crate::support::console::Console;
use crate::support::flutterwave::{FakeFlutterwave, PAGE_SIZE};
use crate::support::*;

fn options(fake: &FakeFlutterwave) -> Options {
    Options { config: Some(fake.config(&["mtn_gh"])), ..Options::unthrottled() }
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

    /// A GHS collection charged by the fake (pending at both); its id.
    async fn collection(&self, fake: &FakeFlutterwave, amount: &str, reference: &str) -> String {
        let body = json!({ "amount": amount, "currency": "GHS", "code": "mtn_gh",
                           "accountNumber": MTN_PHONE, "externalReference": reference });
        let r = self.api.post(&self.url("/v1/collections"), &self.key, body).await;
        let (_, id) = r.created("collection", "col_");
        eventually(&format!("a charge for {id}"), Duration::from_secs(20), || async { fake.charge_for(&id) })
            .await;
        id
    }

    /// Funds the live GHS balance through a collection the fake confirms.
    async fn fund(&self, fake: &FakeFlutterwave, amount: &str) -> String {
        let id = self.collection(fake, amount, &format!("fund-{amount}")).await;
        fake.settle_charge(&id, "successful");
        self.status_of("collections", &id, "completed").await;
        id
    }

    /// A GHS payout the fake took as a transfer (pending at both); its id.
    async fn payout(&self, fake: &FakeFlutterwave, amount: &str, reference: &str) -> String {
        let body = json!({ "from": { "currency": "GHS", "amount": amount },
                           "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE },
                           "externalReference": reference, "metadata": { "beneficiaryName": "Ama Mensah" } });
        let r = self.api.post(&self.url("/v1/payouts"), &self.key, body).await;
        let (_, id) = r.created("payout", "pay_");
        eventually(&format!("a transfer for {id}"), Duration::from_secs(20), || async {
            fake.transfers_for(&id).pop()
        })
        .await;
        id
    }

    /// A payout the provider delivered and Sika completed.
    async fn delivered(&self, fake: &FakeFlutterwave, amount: &str, reference: &str) -> String {
        let id = self.payout(fake, amount, reference).await;
        fake.settle_transfer(&id, "SUCCESSFUL", "Delivered");
        self.status_of("payouts", &id, "completed").await;
        id
    }

    async fn status_of(&self, plural: &str, id: &str, wanted: &str) {
        let url = self.url(&format!("/v1/{plural}/{id}"));
        let key = plural.trim_end_matches('s');
        eventually(&format!("{plural}/{id} {wanted}"), Duration::from_secs(30), || async {
            let r = self.api.get(&url, &self.key).await;
            r.expect(200);
            (r.body[key]["status"] == wanted).then_some(())
        })
        .await;
    }

    /// `GET /admin/v1/live/reconciliation` with `query` as the operator.
    async fn reconcile_with(&self, query: &str) -> Resp {
        let url = self.node.admin_url(&format!("/admin/v1/live/reconciliation?{query}"));
        self.api.get(&url, &self.node.creds.admin_token).await
    }

    /// The reconciliation of `period` (200 expected).
    async fn reconcile(&self, period: &(String, String)) -> Value {
        let r = self.reconcile_with(&query(period)).await;
        r.expect(200);
        r.body
    }
}

/// The hour before now to the hour after it: every movement a test makes.
fn around_now() -> (String, String) {
    let now = chrono::Utc::now();
    let text = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    (text(now - chrono::Duration::hours(1)), text(now + chrono::Duration::hours(1)))
}

fn query((from, to): &(String, String)) -> String {
    let encode = |t: &str| t.replace('+', "%2B").replace(':', "%3A");
    format!("from={}&to={}", encode(from), encode(to))
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        list.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

/// `sika reconcile` against the node, with the operator token read from
/// the data directory.
fn sika_reconcile(node: &Node, args: &[&str]) -> std::process::Output {
    let admin_addr = node.admin.trim_start_matches("http://").to_string();
    std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["reconcile", "--data-dir"])
        .arg(node.data_dir())
        .args(["--admin-addr", &admin_addr])
        .args(args)
        .env_remove("SIKA_DATA_DIR")
        .env_remove("SIKA_ADMIN_ADDR")
        .env_remove("SIKA_CONFIG")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_flutterwave_shows_is_matched_and_sika_reconcile_prints_the_same() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let funding = live.fund(&fake, "500.00").await;
    let delivered = live.delivered(&fake, "25.00", "rc-delivered").await;
    let sent = live.payout(&fake, "12.50", "rc-pending").await;
    let charging = live.collection(&fake, "7.50", "rc-charging").await;
    let period = around_now();

    let answer = live.reconcile(&period).await;
    assert_eq!(answer["matched"], 4, "{answer}");
    for list in ["missingAtProvider", "missingInSika", "mismatched"] {
        assert_eq!(answer[list], json!([]), "{list}: {answer}");
    }
    assert_eq!(answer["from"], chrono_text(&period.0));
    assert_eq!(answer["to"], chrono_text(&period.1));
    // Both of the provider's lists were read.
    let pages = fake.with(|s| s.list_pages.clone());
    assert!(pages.contains(&"transfers page=1".to_string()), "{pages:?}");
    assert!(pages.contains(&"transactions page=1".to_string()), "{pages:?}");
    assert!(fake.with(|s| s.refused.is_empty()), "{:?}", fake.with(|s| s.refused.clone()));
    let _ = (funding, sent, charging);

    // A pair at the period's edge is one pair: the provider's clock puts
    // the transfer inside a later period that Sika's payout is not in.
    let later = {
        let now = chrono::Utc::now();
        let text = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        (text(now + chrono::Duration::minutes(10)), text(now + chrono::Duration::minutes(70)))
    };
    let inside = (chrono::Utc::now() + chrono::Duration::minutes(20))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    fake.with(|s| {
        let t = s.transfers.iter_mut().find(|t| t["reference"] == delivered.as_str()).unwrap();
        t["created_at"] = inside.into();
    });
    let edge = live.reconcile(&later).await;
    assert_eq!(edge["matched"], 1, "{edge}");
    assert_eq!((&edge["missingInSika"], &edge["missingAtProvider"]), (&json!([]), &json!([])), "{edge}");
    assert_eq!(live.reconcile(&period).await["matched"], 4, "and inside the first period too");

    // The command prints the API's answer.
    let out = sika_reconcile(&live.node, &["--from", &period.0, "--to", &period.1]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, live.reconcile(&period).await);
    // Pretty-printed, its fields in the API's order.
    let text = String::from_utf8_lossy(&out.stdout);
    let keys =
        ["\"from\"", "\"to\"", "\"matched\"", "\"missingAtProvider\"", "\"missingInSika\"", "\"mismatched\""];
    let at: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap_or(usize::MAX)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]) && text.lines().count() > 6, "{text}");
    // A refusal is the node's message naming the field, and exit 1.
    let out = sika_reconcile(&live.node, &["--from", &period.1, "--to", &period.0]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("(to)") && said.contains("after from"), "{said}");
    live.node.stop_and_verify();
}

/// A period bound as the node writes it back (milliseconds, `Z`).
fn chrono_text(text: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discrepancies_on_either_side_are_listed_and_a_mismatched_pair_is_not_matched() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let funding = live.fund(&fake, "500.00").await;
    let repriced = live.delivered(&fake, "25.00", "rc-repriced").await;
    let vanished = live.delivered(&fake, "30.00", "rc-vanished").await;
    let failed_later = live.delivered(&fake, "15.00", "rc-failed-later").await;
    let period = around_now();

    // The provider's records disagree with Sika's: a transfer it no longer
    // shows, another for a different amount, a third it now shows failed,
    // and a transfer and a charge Sika never made.
    fake.forget(&vanished);
    fake.set_amount(&repriced, 27.5);
    fake.with(|s| {
        let t = s.transfers.iter_mut().find(|t| t["reference"] == failed_later.as_str()).unwrap();
        t["status"] = "FAILED".into();
    });
    let stranger = fake.add_transfer("dashboard-payout-9", 40.0, "GHS", "SUCCESSFUL");
    let walk_in = fake.add_charge("walk-in-77", 12.0, "GHS", "successful");

    let answer = live.reconcile(&period).await;
    assert_eq!(answer["matched"], 1, "only the funding collection agrees: {answer}");
    let missing = &answer["missingAtProvider"];
    assert_eq!(ids(missing), [vanished.as_str()]);
    assert_eq!(
        missing[0],
        json!({ "id": vanished, "kind": "payout", "amount": "30.00", "currency": "GHS",
                "status": "completed", "providerId": null, "createdAt": missing[0]["createdAt"] })
    );
    assert!(missing[0]["createdAt"].is_string());
    let unknown = answer["missingInSika"].as_array().unwrap();
    assert_eq!(ids(&answer["missingInSika"]), ["dashboard-payout-9", "walk-in-77"]);
    let charge = unknown.iter().find(|i| i["id"] == "walk-in-77").unwrap();
    assert_eq!(
        (&charge["kind"], &charge["amount"], &charge["status"], &charge["providerId"]),
        (&json!("collection"), &json!("12.00"), &json!("completed"), &json!(walk_in["id"].to_string()))
    );
    let transfer = unknown.iter().find(|i| i["id"] == "dashboard-payout-9").unwrap();
    assert_eq!((&transfer["kind"], &transfer["amount"]), (&json!("payout"), &json!("40.00")));
    assert_eq!(transfer["providerId"], json!(stranger["id"].to_string()));
    let mut mismatched: Vec<Value> = answer["mismatched"].as_array().unwrap().clone();
    mismatched.sort_by_key(|m| m["id"].as_str().unwrap().to_string());
    let mut expected = vec![
        json!({ "id": repriced, "field": "amount", "sika": "25.00", "provider": "27.50" }),
        json!({ "id": failed_later, "field": "status", "sika": "completed", "provider": "failed" }),
    ];
    expected.sort_by_key(|m| m["id"].as_str().unwrap().to_string());
    assert_eq!(mismatched, expected);
    let _ = funding;

    // Reading it changed nothing: the node's books still balance.
    live.node.stop_and_verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_the_provider_lists_is_read() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    live.fund(&fake, "1000.00").await;
    let payouts = PAGE_SIZE + 2;
    let collections = PAGE_SIZE + 3;
    for n in 0..payouts {
        live.payout(&fake, &format!("{}.00", 10 + n), &format!("rc-page-pay-{n}")).await;
    }
    for n in 0..collections {
        live.collection(&fake, &format!("{}.00", 5 + n), &format!("rc-page-col-{n}")).await;
    }
    // The oldest transfer (on the last page: the list is newest first) now
    // shows another amount.
    let oldest = fake.with(|s| s.transfers.first().cloned()).unwrap();
    fake.set_amount(oldest["reference"].as_str().unwrap(), 99.0);

    let answer = live.reconcile(&around_now()).await;
    // Every movement pairs (the funding collection too) but the one repriced.
    assert_eq!(answer["matched"], json!(payouts + collections), "{answer}");
    assert_eq!(answer["mismatched"].as_array().unwrap().len(), 1, "{answer}");
    assert_eq!(answer["mismatched"][0]["id"], oldest["reference"]);
    assert_eq!(answer["missingAtProvider"], json!([]));
    assert_eq!(answer["missingInSika"], json!([]));
    let pages = fake.with(|s| s.list_pages.clone());
    for page in ["transfers page=1", "transfers page=2", "transactions page=1", "transactions page=2"] {
        assert!(pages.contains(&page.to_string()), "{page}: {pages:?}");
    }
    assert!(!pages.contains(&"transfers page=3".to_string()), "two pages of transfers: {pages:?}");
    live.node.stop_and_verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_period_is_refused_naming_its_field_and_an_unreadable_provider_answers_nothing_partial() {
    let fake = FakeFlutterwave::start();
    let live = Live::start(&fake);
    let period = around_now();
    let (from, to) = (period.0.clone(), period.1.clone());
    let refused = [
        (format!("to={to}"), "from"),
        (format!("from={from}"), "to"),
        (format!("from=yesterday&to={to}"), "from"),
        (format!("from={from}&to=2026-13-01T00:00:00Z"), "to"),
        (format!("from={to}&to={from}"), "to"),
        (format!("from={from}&to={from}"), "to"),
        ("from=2026-01-01T00:00:00Z&to=2026-02-02T00:00:01Z".to_string(), "to"),
        (format!("from={from}&to={to}&currency=GHS"), "currency"),
    ];
    for (asked, field) in &refused {
        let asked = asked.replace('+', "%2B");
        live.reconcile_with(&asked).await.expect_field(400, "validation_error", field);
    }
    assert!(fake.with(|s| s.list_pages.is_empty()), "a refused request asks the provider nothing");

    // The operator's token, and only it.
    let url = live.node.admin_url(&format!("/admin/v1/live/reconciliation?{}", query(&period)));
    live.api.call("GET", &url, None, None).await.expect_error(401, "unauthorized");
    live.api.get(&url, "adm_not-the-token").await.expect_error(401, "unauthorized");
    live.api.get(&url, &live.key).await.expect_error(401, "unauthorized");

    // More transfers than a page, then the second page fails: no answer
    // at all, never the first page presented as the whole.
    for n in 0..(PAGE_SIZE + 1) {
        fake.add_transfer(&format!("elsewhere-{n}"), 5.0, "GHS", "SUCCESSFUL");
    }
    fake.with(|s| s.fail_list_page = Some(2));
    let r = live.reconcile_with(&query(&period)).await;
    r.expect_error(503, "unavailable");
    assert!(r.body.get("matched").is_none() && r.body.get("missingInSika").is_none(), "{}", r.text);
    assert!(r.body["message"].as_str().unwrap().contains("Flutterwave"), "{}", r.text);
    fake.with(|s| s.fail_list_page = None);
    fake.with(|s| s.down = true);
    live.reconcile_with(&query(&period)).await.expect_error(503, "unavailable");
    fake.with(|s| s.down = false);
    let answer = live.reconcile(&period).await;
    assert_eq!(answer["missingInSika"].as_array().unwrap().len(), PAGE_SIZE + 1, "{answer}");
    live.node.stop_and_verify();

    // A node with no connector has nothing to reconcile with.
    let plain = Node::start(Options::unthrottled());
    let url = plain.admin_url(&format!("/admin/v1/live/reconciliation?{}", query(&period)));
    live.api.get(&url, &plain.creds.admin_token).await.expect_error(409, "invalid_state");
    plain.stop_and_verify();
}

#[test]
fn the_console_shows_the_matched_count_and_every_finding() {
    let fake = FakeFlutterwave::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let live = Live::start(&fake);
    let (funding, vanished) = runtime.block_on(async {
        let funding = live.fund(&fake, "300.00").await;
        let vanished = live.delivered(&fake, "20.00", "rc-console-vanished").await;
        (funding, vanished)
    });
    fake.forget(&vanished);
    fake.add_charge("console-walk-in", 8.0, "GHS", "successful");

    let mut console = Console::open(&live.node);
    console.press(KeyCode::Char('4'));
    assert_eq!(console.app.tab, Tab::Activity);
    console.press(KeyCode::Char('R'));
    let Some(Detail::Reconciliation { data, .. }) = &console.app.detail else {
        panic!("the reconciliation is open: {:?}", console.app.detail)
    };
    let found = data.data.clone().unwrap_or_else(|| panic!("answered: {data:?}"));
    assert_eq!(found.matched, 1, "{found:?}");
    assert_eq!(found.missing_at_provider.len(), 1);
    assert_eq!(found.missing_in_sika.len(), 1);
    let screen = console.screen();
    for shown in ["matched 1", "missing at provider", "missing in Sika", "console-walk-in", vanished.as_str()]
    {
        assert!(screen.contains(shown), "{shown} on screen:\n{screen}");
    }
    let _ = funding;
    // Esc closes it.
    console.press(KeyCode::Esc);
    assert!(console.app.detail.is_none());
    live.node.stop_and_verify();
}
