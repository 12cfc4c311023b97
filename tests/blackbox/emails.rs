//! Notifications by email over the real binary and a real SMTP server on
//! loopback (`support::smtp`, aiosmtpd): invitations and password resets
//! with their dashboard links, payer receipts, notices to owners and
//! admins, the durable outbox (a refusing server, SIGKILL before and while
//! sending), the hourly bound, `GET /admin/v1/emails` and `config check`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::smtp::{SmtpServer, link};
use crate::support::{
    Api, EXAMPLE_CONFIG, MTN_PHONE, Node, Options, collect_until, deposit, eventually, mtn_collection,
    mtn_payout,
};

const PASSWORD: &str = "correct horse battery";

fn options(smtp: &SmtpServer, extra: &str) -> Options {
    Options { config: Some(format!("{EXAMPLE_CONFIG}\n{}", smtp.config(extra))), ..Options::default() }
}

async fn emails(api: &Api, node: &Node, query: &str) -> Vec<Value> {
    let r = api.get(&node.admin_url(&format!("/admin/v1/emails{query}")), &node.creds.admin_token).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// Waits until the outbox shows the email with this Message-ID in `status`.
async fn email_status(api: &Api, node: &Node, message_id: &str, status: &str) -> Value {
    eventually(&format!("{message_id} to be {status}"), Duration::from_secs(30), || async {
        emails(api, node, "?limit=100")
            .await
            .into_iter()
            .find(|e| e["messageId"] == message_id && e["status"] == status)
    })
    .await
}

async fn invite(api: &Api, node: &Node, email: &str) -> Value {
    let body = json!({ "email": email, "name": "Kofi", "role": "developer" });
    let r = api.post(&node.sandbox_url("/v1/members"), &node.creds.owner_session, body).await;
    r.expect(201);
    r.body.clone()
}

/// The operator onboards an organization: its owner gets the invitation by
/// email, with the dashboard's link carrying the same token; the owner
/// accepts it. A password reset is 202 for an unknown email too (which
/// gets nothing); the emailed `rst_` token sets the password once, logs
/// in, and expires after an hour of node time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_and_password_resets_are_emailed() {
    let Some(smtp) = SmtpServer::start("invitations_and_password_resets_are_emailed") else { return };
    let node = Node::start(options(&smtp, ""));
    let api = Api::new();

    let body = json!({ "name": "Ama's Shop", "owner": { "email": "ama@shop.example", "name": "Ama" } });
    let created = api.post(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token, body).await;
    created.expect(201);
    let token = created.body["invitation"]["token"].as_str().unwrap().to_string();
    let invitation = smtp.wait_for("ama@shop.example", 1).await.remove(0);
    assert_eq!(link(&invitation, "http://"), format!("{}/dashboard/invitations/{token}", node.live));
    assert!(invitation["subject"].as_str().unwrap().contains("Ama's Shop"), "{invitation}");
    assert!(invitation["html"].as_str().unwrap().contains("Ama&#39;s Shop"), "HTML is escaped: {invitation}");
    assert!(invitation["messageId"].as_str().unwrap().starts_with("<eml_"), "{invitation}");
    let accepted = api
        .post_anonymous(&node.live_url("/v1/sessions"), json!({ "invitation": token, "password": PASSWORD }))
        .await;
    accepted.expect(201);

    // Unknown and known emails get the same answer; only the member gets mail.
    let reset_url = node.live_url("/v1/sessions/password-reset");
    let unknown = api.post_anonymous(&reset_url, json!({ "email": "nobody@shop.example" })).await;
    unknown.expect(202);
    let known = api.post_anonymous(&reset_url, json!({ "email": "AMA@shop.example" })).await;
    known.expect(202);
    assert_eq!(unknown.body, known.body);
    let reset = smtp.wait_for("ama@shop.example", 2).await.remove(1);
    let reset_link = link(&reset, "http://");
    let prefix = format!("{}/dashboard/reset/rst_", node.live);
    assert!(reset_link.starts_with(&prefix), "{reset_link}");
    let reset_token = reset_link.rsplit('/').next().unwrap().to_string();
    assert!(!reset["text"].as_str().unwrap().contains(&token), "no other secret in the email");

    let new_password = "a brand new passphrase";
    let sessions = node.live_url("/v1/sessions");
    let used = api.post_anonymous(&sessions, json!({ "reset": reset_token, "password": new_password })).await;
    used.expect(201);
    assert_eq!(used.body["session"]["member"]["email"], "ama@shop.example");
    assert!(used.body["session"]["token"].as_str().unwrap().starts_with("sess_"));
    // Once.
    api.post_anonymous(&sessions, json!({ "reset": reset_token, "password": "yet another passphrase" }))
        .await
        .expect_error(401, "unauthorized");
    api.post_anonymous(&sessions, json!({ "email": "ama@shop.example", "password": new_password }))
        .await
        .expect(201);
    api.post_anonymous(&sessions, json!({ "email": "ama@shop.example", "password": PASSWORD }))
        .await
        .expect_error(401, "unauthorized");

    // An hour of node time (3.6 s at the suite's time scale) ends a reset.
    api.post_anonymous(&reset_url, json!({ "email": "ama@shop.example" })).await.expect(202);
    let late = smtp.wait_for("ama@shop.example", 3).await.remove(2);
    let late_token = link(&late, "http://").rsplit('/').next().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(4000)).await;
    api.post_anonymous(&sessions, json!({ "reset": late_token, "password": "too late passphrase" }))
        .await
        .expect_error(401, "unauthorized");

    assert!(smtp.to("nobody@shop.example").is_empty());
    // The outbox lists them, sent, with the Message-IDs the server saw.
    let listed = emails(&api, &node, "?kind=password_reset").await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|e| e["status"] == "sent" && e["to"] == "ama@shop.example"));
    email_status(&api, &node, invitation["messageId"].as_str().unwrap(), "sent").await;
    api.get(&node.admin_url("/admin/v1/emails"), "adm_wrong").await.expect_error(401, "unauthorized");
    api.get(&node.admin_url("/admin/v1/emails?status=lost"), &node.creds.admin_token).await.expect_field(
        400,
        "validation_error",
        "status",
    );
    node.stop_and_verify();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A reset for a known email takes as long as one for an unknown email:
/// interleaved requests, compared by their medians.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_reset_takes_the_same_time_for_known_and_unknown_emails() {
    let Some(smtp) = SmtpServer::start("password_reset_takes_the_same_time") else { return };
    let node = Node::start(options(&smtp, "max_per_org_per_hour = 1000"));
    let api = Api::new();
    invite(&api, &node, "kofi@shop.example").await;
    let url = node.live_url("/v1/sessions/password-reset");
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for i in 0..40 {
        for (email, samples) in
            [("kofi@shop.example".to_string(), &mut known), (format!("x{i}@shop.example"), &mut unknown)]
        {
            let started = Instant::now();
            api.post_anonymous(&url, json!({ "email": email })).await.expect(202);
            samples.push(started.elapsed());
        }
    }
    let (known, unknown) = (median(known), median(unknown));
    let gap = known.abs_diff(unknown);
    assert!(
        gap < Duration::from_millis(3) + known.max(unknown) / 4,
        "known {known:?} and unknown {unknown:?} differ by {gap:?}"
    );
    drop(smtp);
}

/// A checkout payer who gave an email gets a receipt (amount as the page
/// writes it, merchant, reference, date, the paid page's link); a failed
/// payout is noticed to the organization's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_and_payout_failure_notices_are_emailed() {
    let Some(smtp) = SmtpServer::start("receipts_and_payout_failure_notices_are_emailed") else { return };
    let node = Node::start(options(&smtp, ""));
    let api = Api::new();
    let body = json!({
        "currency": "GHS", "amount": "1250.00", "title": "Kente scarves", "description": "Hand woven",
        "allowedMethods": ["mobile_money"], "redirectUrl": "https://shop.example/thanks",
        "branding": { "businessName": "Ama's Shop" }, "email": "payer@buyer.example",
    });
    let r = api.post(&node.sandbox_url("/v1/payment-links"), &node.creds.sandbox_key, body).await;
    r.expect(201);
    let link_id = r.body["paymentLink"]["id"].as_str().unwrap().to_string();
    // With [email] the page may promise a receipt (without it, it does not:
    // checkout.rs).
    let page =
        reqwest::get(node.sandbox_url(&format!("/pay/{link_id}"))).await.unwrap().text().await.unwrap();
    assert!(page.contains("<label for=\"email\">Email for your receipt (optional)</label>"), "{page}");
    let pay =
        json!({ "amount": "1250.00", "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    let paid = api.post_anonymous(&node.sandbox_url(&format!("/pay/{link_id}/sessions")), pay).await;
    paid.expect(201);
    let receipt = smtp.wait_for("payer@buyer.example", 1).await.remove(0);
    let text = receipt["text"].as_str().unwrap();
    assert!(text.contains("GHS 1,250.00") && text.contains("Ama's Shop"), "{text}");
    assert!(text.contains(&format!("{}/pay/{link_id}", node.sandbox)), "{text}");
    assert!(text.contains("Reference: ") && text.contains("Date: "), "{text}");
    assert!(receipt["subject"].as_str().unwrap().starts_with("[Test mode]"), "{receipt}");

    deposit(&api, &node, &node.creds.sandbox_key, "GHS", "100.00").await;
    let r = api
        .post(&node.sandbox_url("/v1/payouts"), &node.creds.sandbox_key, mtn_payout("10.01", "fail-1"))
        .await;
    r.expect(201);
    let payout_id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let notice = smtp.wait_for("owner@localhost", 1).await.remove(0);
    let text = notice["text"].as_str().unwrap();
    assert!(notice["subject"].as_str().unwrap().contains("payout failed"), "{notice}");
    assert!(text.contains(&payout_id) && text.contains("GHS 10.01"), "{text}");
    assert!(text.contains(&format!("/dashboard/payouts/{payout_id}")), "{text}");
    assert!(!text.contains("sk_test_") && !text.contains(&node.creds.sandbox_key));
    let kinds: Vec<Value> = emails(&api, &node, "").await.into_iter().map(|e| e["kind"].clone()).collect();
    assert!(kinds.contains(&json!("receipt")) && kinds.contains(&json!("payout_failed")), "{kinds:?}");
    node.stop_and_verify();
}

/// Counts how many times each Message-ID reached the server.
fn deliveries(smtp: &SmtpServer) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for message in smtp.messages() {
        *seen.entry(message["messageId"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    seen
}

/// A server that refuses (4xx, then 5xx) gets the email again with backoff,
/// and it is delivered once when the server accepts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_server_is_retried_and_the_email_delivered_once() {
    let Some(smtp) = SmtpServer::start("a_refusing_server_is_retried") else { return };
    smtp.refuse(Some("451"));
    let node = Node::start(options(&smtp, ""));
    let api = Api::new();
    invite(&api, &node, "kofi@shop.example").await;
    let retrying = eventually("the invitation to be retrying", Duration::from_secs(20), || async {
        emails(&api, &node, "?status=retrying").await.into_iter().next()
    })
    .await;
    assert!(retrying["lastError"].as_str().unwrap().contains("451"), "{retrying}");
    assert!(retrying["nextAttemptAt"].is_string());
    smtp.refuse(Some("554"));
    eventually("a 5xx to be recorded", Duration::from_secs(20), || async {
        let found = emails(&api, &node, "?status=retrying").await;
        found.into_iter().find(|e| e["lastError"].as_str().is_some_and(|t| t.contains("554")))
    })
    .await;
    smtp.refuse(None);
    let delivered = smtp.wait_for("kofi@shop.example", 1).await.remove(0);
    let message_id = delivered["messageId"].as_str().unwrap();
    assert_eq!(message_id, retrying["messageId"]);
    let sent = email_status(&api, &node, message_id, "sent").await;
    assert!(sent["attempts"].as_u64().unwrap() >= 3, "{sent}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(deliveries(&smtp)[message_id], 1);
    node.stop_and_verify();
}

/// SIGKILL after emails were queued and before they could be sent, then
/// while one is being sent (the server holds its DATA answer): after a
/// restart each Message-ID reaches the server exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_queueing_and_sending_loses_and_repeats_nothing() {
    let Some(smtp) = SmtpServer::start("sigkill_between_queueing_and_sending") else { return };
    let options = options(&smtp, "");
    smtp.refuse(Some("451"));
    let mut node = Node::start(options.clone());
    let api = Api::new();
    for i in 0..3 {
        invite(&api, &node, &format!("member{i}@shop.example")).await;
    }
    let queued: Vec<String> =
        emails(&api, &node, "").await.iter().map(|e| e["messageId"].as_str().unwrap().to_string()).collect();
    assert_eq!(queued.len(), 3);
    node.kill9();
    smtp.refuse(None);
    node.restart(&options, &[]);
    for i in 0..3 {
        smtp.wait_for(&format!("member{i}@shop.example"), 1).await;
    }

    // Killed while the server holds the DATA answer: never acknowledged,
    // so sent again after the restart, under the same Message-ID.
    smtp.delay(Some(3.0));
    invite(&api, &node, "slow@shop.example").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    node.kill9();
    smtp.delay(None);
    node.restart(&options, &[]);
    smtp.wait_for("slow@shop.example", 1).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let seen = deliveries(&smtp);
    assert_eq!(seen.len(), 4, "{seen:?}");
    for id in &queued {
        assert_eq!(seen.get(id), Some(&1), "{id}: {seen:?}");
    }
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    for e in emails(&api, &node, "").await {
        assert_eq!(e["status"], "sent", "{e}");
    }
    node.stop_and_verify();
}

/// Past `max_per_org_per_hour` an organization's emails are recorded as
/// `suppressed` and never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_over_its_hourly_bound_is_suppressed() {
    let Some(smtp) = SmtpServer::start("an_organization_over_its_hourly_bound") else { return };
    let node = Node::start(options(&smtp, "max_per_org_per_hour = 2"));
    let api = Api::new();
    for i in 0..4 {
        invite(&api, &node, &format!("m{i}@shop.example")).await;
    }
    smtp.wait_for("m1@shop.example", 1).await;
    let suppressed = emails(&api, &node, "?status=suppressed").await;
    assert_eq!(suppressed.len(), 2, "{suppressed:?}");
    assert_eq!(suppressed[0]["organizationId"], node.creds.organization_id.as_str());
    let sent = eventually("two sent", Duration::from_secs(10), || async {
        let sent = emails(&api, &node, "?status=sent").await;
        (sent.len() == 2).then_some(sent)
    })
    .await;
    assert_eq!(sent.len(), 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(smtp.to("m2@shop.example").is_empty() && smtp.to("m3@shop.example").is_empty());
    // Paging walks the outbox.
    let first = api.get(&node.admin_url("/admin/v1/emails?limit=3"), &node.creds.admin_token).await;
    first.expect(200);
    assert_eq!(first.body["hasMore"], true);
    let cursor = first.body["nextCursor"].as_str().unwrap();
    let rest = emails(&api, &node, &format!("?limit=3&cursor={cursor}")).await;
    assert_eq!(rest.len(), 1);
    node.stop_and_verify();
}

/// `sika config check` names each problem of `[email]`.
#[test]
fn config_check_names_email_problems() {
    let dir = tempfile::tempdir().unwrap();
    let check = |toml: &str| {
        let path = dir.path().join("sika.toml");
        std::fs::write(&path, toml).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
            .args(["config", "check", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let good = "[email]\nsmtp_url = \"smtps://mailer:s%40cret@mail.example.com:465\"\nfrom = \"Sika <noreply@example.com>\"\noperator = \"ops@example.com\"\n";
    assert_eq!(check(good), (true, String::new()));
    let (ok, problems) = check(
        "[email]\nsmtp_url = \"http://mail.example.com\"\nfrom = \"not an address\"\noperator = \"ops\"\nmax_per_org_per_hour = 0\n",
    );
    assert!(!ok);
    for key in ["email.smtp_url", "email.from", "email.operator", "email.max_per_org_per_hour"] {
        assert!(problems.contains(key), "{key} in {problems}");
    }
    assert!(!problems.contains("s%40cret"), "{problems}");
    let (ok, problems) = check("[email]\nfrom = \"noreply@example.com\"\n");
    assert!(!ok && problems.contains("email.smtp_url: is required"), "{problems}");
}

/// An endpoint the dispatcher disables after ten failures in a row is
/// noticed once to the organization's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_webhook_endpoint_is_noticed_once() {
    let Some(smtp) = SmtpServer::start("a_disabled_webhook_endpoint_is_noticed_once") else { return };
    let node = Node::start(options(&smtp, ""));
    let api = Api::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let body = json!({ "url": format!("http://127.0.0.1:{closed}/hook"), "events": ["webhook.test"] });
    let r = api.post(&node.sandbox_url("/v1/webhooks/endpoints"), &node.creds.sandbox_key, body).await;
    r.expect(201);
    let endpoint_id = r.body["webhookEndpoint"]["id"].as_str().unwrap().to_string();
    let test_url = node.sandbox_url(&format!("/v1/webhooks/endpoints/{endpoint_id}/test"));
    // Retries of the first events fail too (30 ms apart), so on a slow
    // machine the endpoint can be disabled before the tenth test: it then
    // refuses more, saying so.
    for _ in 0..10 {
        let r = api.post(&test_url, &node.creds.sandbox_key, json!({})).await;
        if r.status == 400 && r.body["details"]["status"] == "disabled" {
            break;
        }
        r.expect(202);
    }
    let notice = smtp.wait_for("owner@localhost", 1).await.remove(0);
    assert!(notice["subject"].as_str().unwrap().contains("webhook endpoint was disabled"), "{notice}");
    assert!(notice["text"].as_str().unwrap().contains(&endpoint_id), "{notice}");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(smtp.to("owner@localhost").len(), 1);
    let kinds = emails(&api, &node, "?kind=webhook_endpoint_disabled").await;
    assert_eq!(kinds.len(), 1, "{kinds:?}");
    node.stop_and_verify();
}

/// A payout the rail reverses (the sandbox's `05`) and a dispute opened on
/// a payment each tell the organization's owner, once, with a link to it in
/// the dashboard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reversed_payouts_and_opened_disputes_are_noticed() {
    let Some(smtp) = SmtpServer::start("reversed_payouts_and_opened_disputes_are_noticed") else { return };
    let node = Node::start(options(&smtp, ""));
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    deposit(&api, &node, key, "GHS", "100.00").await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), key, mtn_payout("10.05", "reversed-1")).await;
    r.expect(201);
    let payout_id = r.body["payout"]["id"].as_str().unwrap().to_string();
    let notice = smtp.wait_for("owner@localhost", 1).await.remove(0);
    assert!(notice["subject"].as_str().unwrap().contains("reversed"), "{notice}");
    let text = notice["text"].as_str().unwrap();
    assert!(text.contains(&payout_id) && text.contains("GHS 10.05"), "{text}");
    assert!(text.contains(&format!("/dashboard/payouts/{payout_id}")), "{text}");

    let (_, paid) = collect_until(&api, &node, mtn_collection("40.00", "disputed-1"), "completed").await;
    let collection = paid["id"].as_str().unwrap();
    let body = json!({ "collectionId": collection, "amount": "15.00" });
    let r = api.post(&node.sandbox_url("/v1/simulations/disputes"), key, body).await;
    let (_, dispute_id) = r.created("dispute", "dsp_");
    let notices = smtp.wait_for("owner@localhost", 2).await;
    let opened = &notices[1];
    assert!(opened["subject"].as_str().unwrap().contains("A dispute was opened: GHS 15.00"), "{opened}");
    let text = opened["text"].as_str().unwrap();
    assert!(text.contains(&dispute_id) && text.contains(collection), "{text}");
    assert!(text.contains(&format!("/dashboard/disputes/{dispute_id}")), "{text}");
    let kinds: Vec<Value> = emails(&api, &node, "").await.into_iter().map(|e| e["kind"].clone()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == json!("payout_reversed")).count(), 1, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == json!("dispute_opened")).count(), 1, "{kinds:?}");
    node.stop_and_verify();
}

const OPERATOR: &str = "ops@sika.example";

/// The operator's alerts, from the subjects that reached their address.
fn alerts(smtp: &SmtpServer) -> Vec<String> {
    smtp.to(OPERATOR).iter().map(|m| m["subject"].as_str().unwrap().to_string()).collect()
}

/// A sandbox whose disk is below the reserve refuses writes; the operator
/// hears of it once by email (not at every check), with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_is_alerted_once_when_storage_is_unavailable() {
    let Some(smtp) = SmtpServer::start("the_operator_is_alerted_once_when_storage_is_unavailable") else {
        return;
    };
    let operator = format!("operator = \"{OPERATOR}\"");
    // A reserve no disk has: the sandbox is below it from the start.
    let node =
        Node::start_with_env(options(&smtp, &operator), &[("SIKA_DISK_RESERVE", "1000000000000000000")]);
    let api = Api::new();
    let r = api
        .post(
            &node.sandbox_url("/v1/simulations/deposits"),
            &node.creds.sandbox_key,
            json!({ "currency": "GHS", "amount": "1.00" }),
        )
        .await;
    r.expect_error(503, "storage_unavailable");
    let alert = smtp.wait_for(OPERATOR, 1).await.remove(0);
    let subject = alert["subject"].as_str().unwrap();
    assert_eq!(subject, "Sika alert: the sandbox stack's storage is unavailable", "{alert}");
    assert!(alert["text"].as_str().unwrap().contains("disk reserve"), "{alert}");
    // The condition lasts past the next checks (every 5 s): still one alert.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(alerts(&smtp), [subject], "one alert per condition");
    let listed = emails(&api, &node, "?kind=operator_alert").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "sent");
    node.stop();
}

/// The live stack's provider keeps failing: once the breaker marks its
/// methods down, the operator gets an alert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_is_alerted_when_the_provider_is_down() {
    let Some(smtp) = SmtpServer::start("the_operator_is_alerted_when_the_provider_is_down") else { return };
    let fake = crate::support::flutterwave::FakeFlutterwave::start();
    let config =
        format!("{}\n{}", fake.config(&["mtn_gh"]), smtp.config(&format!("operator = \"{OPERATOR}\"")));
    let node = Node::start(Options { config: Some(config), ..Options::unthrottled() });
    let api = Api::new();
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(alerts(&smtp).is_empty(), "no alert while the provider answers: {:?}", alerts(&smtp));

    fake.with(|s| s.down = true);
    let r = api
        .post(&node.live_url("/v1/collections"), &node.creds.live_key, mtn_collection("10.00", "outage-1"))
        .await;
    r.expect(201);
    let alert = smtp.wait_for(OPERATOR, 1).await.remove(0);
    assert_eq!(alert["subject"], "Sika alert: the payment provider is down", "{alert}");
    assert!(alert["text"].as_str().unwrap().contains("Flutterwave"), "{alert}");
    assert!(
        !alert["text"].as_str().unwrap().contains(crate::support::flutterwave::SECRET_KEY),
        "no secret in an alert"
    );
    node.stop();
}

/// A live collection nobody settles: once it has waited for the operator
/// over an hour of node time (`--time-scale` applies), the operator is
/// alerted, and not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_is_alerted_when_live_movements_wait_over_an_hour() {
    let Some(smtp) = SmtpServer::start("the_operator_is_alerted_when_live_movements_wait_over_an_hour")
    else {
        return;
    };
    let operator = format!("operator = \"{OPERATOR}\"");
    // A node hour is 18 s here, so the first checks see a young movement.
    let node = Node::start(Options { time_scale: Some(0.005), ..options(&smtp, &operator) });
    let api = Api::new();
    let r = api
        .post(&node.live_url("/v1/collections"), &node.creds.live_key, mtn_collection("10.00", "waiting-1"))
        .await;
    r.expect(201);
    let created = Instant::now();
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(alerts(&smtp).is_empty(), "alerted before an hour: {:?}", alerts(&smtp));
    let alert = smtp.wait_for(OPERATOR, 1).await.remove(0);
    assert!(created.elapsed() >= Duration::from_secs(18), "alerted after {:?}", created.elapsed());
    assert_eq!(alert["subject"], "Sika alert: live movements await the operator", "{alert}");
    assert!(alert["text"].as_str().unwrap().contains("1 live payout(s) or collection(s)"), "{alert}");
    node.stop();
}
