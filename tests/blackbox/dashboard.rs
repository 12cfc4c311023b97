//! The merchant dashboard over plain HTTP against the real binary, as a
//! browser without script uses it (`support::dashboard`): the headers and
//! cookies every page sends, the CSRF token every form needs, what an
//! owner and a viewer see and may do (the API's answer, through the same
//! use cases), and log-in with two-factor sign-in. The real browser's tour
//! is `dashboard_browser.rs`.

use crate::support::dashboard::Dashboard;
use crate::support::smtp::{SmtpServer, link};
use crate::support::team::{PASSWORD, enable_totp, member_with_role, owned_org, totp_code};
use std::time::Duration;

use crate::support::{
    Api, EXAMPLE_CONFIG, Node, Options, WebhookSink, create_key, eventually, mtn_collection, poll_until,
};

/// The attributes every dashboard cookie carries.
fn assert_cookie_rules(set_cookie: &str, secure: bool) {
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/dashboard"] {
        assert!(set_cookie.contains(attribute), "{attribute} missing: {set_cookie}");
    }
    assert_eq!(set_cookie.contains("Secure"), secure, "{set_cookie}");
}

/// Every page sends a strict Content-Security-Policy (no script at all),
/// refuses framing and caching; the cookies are `HttpOnly` and
/// `SameSite=Strict` (and not `Secure` over plain http); the sandbox's
/// pages say "Test mode" and link to the live dashboard, and back.
#[tokio::test]
async fn dashboard_pages_send_a_strict_policy_and_cookie_rules() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    owned_org(&api, &node, "headers@shop.example").await;
    let sandbox = Dashboard::new(&node.sandbox);
    let login = sandbox.get("/dashboard").await;
    assert_eq!((login.status, login.path.as_str()), (200, "/dashboard/login"), "signed out: to the log-in");
    let policy = login.header("content-security-policy").unwrap();
    for rule in [
        "default-src 'none'",
        "script-src 'none'",
        "style-src 'sha256-",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(policy.contains(rule), "{rule} missing: {policy}");
    }
    assert_eq!(login.header("x-frame-options"), Some("DENY"));
    assert_eq!(login.header("cache-control"), Some("no-store"));
    assert!(!login.text.contains("<script"), "no script on the page");
    assert!(login.text.contains("Test mode"), "{}", login.text);
    assert!(
        login.text.contains(&format!("href=\"{}/dashboard\"", node.live)),
        "links to live: {}",
        login.text
    );

    let home = sandbox.log_in("headers@shop.example", PASSWORD).await;
    assert!(home.text.contains("Test mode") && home.has("balances-title"), "{}", home.text);
    assert!(home.header("content-security-policy").unwrap().contains("script-src 'none'"));
    let cookies = sandbox.set_cookies.lock().unwrap().clone();
    let session = cookies.iter().find(|c| c.starts_with("sika_session=sess_")).expect("a session cookie");
    assert_cookie_rules(session, false);
    assert_cookie_rules(cookies.iter().find(|c| c.starts_with("sika_browser=")).unwrap(), false);

    // The live dashboard: no test mode, and the way back to it.
    let live = Dashboard::new(&node.live).get("/dashboard/login").await;
    assert!(!live.text.contains("Test mode"), "{}", live.text);
    assert!(live.text.contains(&format!("href=\"{}/dashboard\"", node.sandbox)), "{}", live.text);

    // Behind https the cookies are `Secure` too.
    let config = "[node]\nsandbox_public_url = \"https://sandbox.shop.example\"\n".to_string();
    let https = Node::start(Options { config: Some(config), ..Options::unthrottled() });
    let behind = Dashboard::new(&https.sandbox);
    behind.get("/dashboard/login").await;
    let cookies = behind.set_cookies.lock().unwrap().clone();
    assert_cookie_rules(&cookies[0], true);
}

/// Every POST needs the form's CSRF token, bound to the session (or,
/// before signing in, to the browser's cookie): without it, with a wrong
/// one, or with another session's, nothing happens and the answer is 403.
#[tokio::test]
async fn dashboard_forms_without_their_csrf_token_are_refused() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "csrf@shop.example").await;
    let (other, _) = (Dashboard::new(&node.sandbox), ());
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("csrf@shop.example", PASSWORD).await;
    other.log_in("csrf@shop.example", PASSWORD).await;
    let others_token = other.get("/dashboard/developers").await.csrf();
    let key = [("name", "forged"), ("scopes", "*")];
    for csrf in [None, Some("forged"), Some(others_token.as_str())] {
        let mut fields = key.to_vec();
        if let Some(csrf) = csrf {
            fields.push(("csrf", csrf));
        }
        let refused = dash.post("/dashboard/developers/keys", &fields).await;
        assert_eq!(refused.status, 403, "{csrf:?}: {}", refused.text);
        assert!(refused.text.contains("reload the page"), "{}", refused.text);
    }
    let keys = api.get(&node.sandbox_url("/v1/keys"), &owner).await;
    assert!(keys.body["data"].as_array().unwrap().is_empty(), "no key was made: {}", keys.text);
    // With its own token the same form works.
    let made = dash.submit("/dashboard/developers", "/dashboard/developers/keys", &key).await;
    assert_eq!(made.status, 200, "{}", made.text);
    assert!(made.element("new-secret").unwrap().starts_with("sk_test_"), "{}", made.text);

    // Signing in: the browser cookie's token, or nothing.
    let stranger = Dashboard::new(&node.sandbox);
    let fields = [("email", "csrf@shop.example"), ("password", PASSWORD), ("csrf", "made-up")];
    assert_eq!(stranger.post("/dashboard/login", &fields).await.status, 403);
    assert!(stranger.cookie("sika_session").is_none());
}

/// A viewer sees no write control and their forged POSTs (with a valid
/// CSRF token) are refused with the API's 403, changing nothing; an owner
/// sees and uses each control, and a key made in the dashboard works on
/// the API until it is revoked there.
#[tokio::test]
async fn a_viewer_sees_no_write_control_and_an_owner_uses_each() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "owner@roles.example").await;
    let (viewer_id, _) = member_with_role(&api, &node, &owner, "viewer@roles.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    let home = viewer.log_in("viewer@roles.example", PASSWORD).await;
    assert_eq!(home.element("role").as_deref(), Some("viewer"));
    let team = viewer.get("/dashboard/team").await;
    assert!(team.has("team-hidden") && !team.has("invite-form"), "{}", team.text);
    let developers = viewer.get("/dashboard/developers").await;
    assert!(developers.has("keys-hidden") && !developers.has("key-form"), "{}", developers.text);
    let settings = viewer.get("/dashboard/settings").await;
    assert!(!settings.has("representative-form"), "{}", settings.text);
    assert!(settings.has("totp-start-form"), "their own two-factor sign-in is theirs: {}", settings.text);
    let owner_id = api.get(&node.sandbox_url("/v1/members"), &owner).await.body["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forged: Vec<(String, Vec<(&str, &str)>)> = vec![
        ("/dashboard/developers/keys".into(), vec![("name", "forged"), ("scopes", "*")]),
        ("/dashboard/team".into(), vec![("email", "new@roles.example"), ("name", "New"), ("role", "owner")]),
        (format!("/dashboard/team/{owner_id}/role"), vec![("role", "viewer")]),
        (format!("/dashboard/team/{owner_id}/remove"), vec![]),
        (
            "/dashboard/settings/representative".into(),
            vec![
                ("fullName", "Forged"),
                ("phone", "+233241234567"),
                ("idNumber", "GHA-123456789-0"),
                ("country", "GH"),
            ],
        ),
    ];
    for (path, fields) in &forged {
        let refused = viewer.submit("/dashboard/settings", path, fields).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text);
        assert!(
            refused.element("notice").is_some_and(|n| n.contains("owner or admin")),
            "{path}: {}",
            refused.text
        );
    }
    assert!(api.get(&node.sandbox_url("/v1/keys"), &owner).await.body["data"].as_array().unwrap().is_empty());
    let team = api.get(&node.sandbox_url("/v1/members"), &owner).await;
    assert_eq!(team.body["data"].as_array().unwrap().len(), 2, "{}", team.text);
    assert_eq!(team.body["data"][0]["role"], "owner");

    owner_uses_each_control(&node, &api, &owner, &viewer, &viewer_id, &owner_id).await;
}

/// The owner: each control, each through the API's rules.
async fn owner_uses_each_control(
    node: &Node,
    api: &Api,
    owner: &str,
    viewer: &Dashboard,
    viewer_id: &str,
    owner_id: &str,
) {
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("owner@roles.example", PASSWORD).await;
    let made = dash
        .submit(
            "/dashboard/developers",
            "/dashboard/developers/keys",
            &[
                ("name", "Shop server"),
                ("scopes", "accounts:read"),
                ("scopes", "payouts:read"),
                ("allowedIps", "127.0.0.0/8, ::1"),
                ("dailyUsd", "500.00"),
            ],
        )
        .await;
    let secret = made.element("new-secret").expect("the secret, shown once");
    assert!(
        made.text.contains("accounts:read, payouts:read") && made.text.contains("daily USD 500.00"),
        "{}",
        made.text
    );
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect(200);
    assert!(!dash.get("/dashboard/developers").await.text.contains(&secret), "shown once");
    let id = api.get(&node.sandbox_url("/v1/keys"), owner).await.body["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let revoked =
        dash.submit("/dashboard/developers", &format!("/dashboard/developers/keys/{id}/revoke"), &[]).await;
    assert!(revoked.element("notice").unwrap().contains("Revoked"), "{}", revoked.text);
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect_error(401, "unauthorized");
    // A refusal of the API reads as the API words it, next to nothing made.
    let bad =
        dash.submit("/dashboard/developers", "/dashboard/developers/keys", &[("name", "No scopes")]).await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.element("notice").unwrap().contains("scopes"), "{}", bad.text);

    owner_runs_the_team(node, &dash, viewer, viewer_id, owner_id).await;
    let saved = dash
        .submit(
            "/dashboard/settings",
            "/dashboard/settings/representative",
            &[
                ("fullName", "Ama Mensah"),
                ("phone", "+233241234567"),
                ("idNumber", "GHA-123456789-0"),
                ("country", "GH"),
            ],
        )
        .await;
    assert!(saved.element("notice").unwrap().contains("Ama Mensah"), "{}", saved.text);
    let representative = api.get(&node.sandbox_url("/v1/organization/representative"), owner).await;
    assert_eq!(representative.body["representative"]["fullName"], "Ama Mensah", "{}", representative.text);
}

/// The owner invites, promotes (the promoted member's next page follows),
/// cannot demote the last owner, and removes (ending that member's session).
async fn owner_runs_the_team(
    node: &Node,
    dash: &Dashboard,
    viewer: &Dashboard,
    viewer_id: &str,
    owner_id: &str,
) {
    let invited = dash
        .submit(
            "/dashboard/team",
            "/dashboard/team",
            &[("email", "dev@roles.example"), ("name", "Kofi"), ("role", "developer")],
        )
        .await;
    let link = invited.element("invitation-link").expect("the invitation link");
    assert!(link.starts_with(&format!("{}/dashboard/invitations/inv_", node.sandbox)), "{link}");
    let promoted = dash
        .submit("/dashboard/team", &format!("/dashboard/team/{viewer_id}/role"), &[("role", "admin")])
        .await;
    assert!(promoted.element("notice").unwrap().contains("is now admin"), "{}", promoted.text);
    // The viewer, now an admin, sees the team on the next page, as the API lets them.
    assert!(viewer.get("/dashboard/team").await.has("invite-form"));
    let last_owner = dash
        .submit("/dashboard/team", &format!("/dashboard/team/{owner_id}/role"), &[("role", "viewer")])
        .await;
    assert_eq!(last_owner.status, 409, "{}", last_owner.text);
    let removed = dash.submit("/dashboard/team", &format!("/dashboard/team/{viewer_id}/remove"), &[]).await;
    assert!(removed.element("notice").unwrap().contains("was removed"), "{}", removed.text);
    assert_eq!(viewer.get("/dashboard").await.path, "/dashboard/login", "a removed member's session ends");
}

/// Log-in asks for the code once the member has two-factor sign-in on: the
/// password stays on the node (never in the page), a wrong code asks
/// again, the right one signs in, and log-out ends the session.
#[tokio::test]
async fn dashboard_log_in_asks_for_the_code_and_log_out_ends_the_session() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "code@shop.example").await;
    let (secret, recovery) = enable_totp(&api, &node, &owner).await;
    let dash = Dashboard::new(&node.sandbox);
    let asked = dash
        .submit(
            "/dashboard/login",
            "/dashboard/login",
            &[("email", "code@shop.example"), ("password", PASSWORD)],
        )
        .await;
    assert!(asked.has("code-form"), "{}", asked.text);
    assert!(!asked.text.contains(PASSWORD), "the password is not in the page");
    assert!(dash.cookie("sika_session").is_none());
    let ticket_marker = "name=\"ticket\" value=\"";
    let start = asked.text.find(ticket_marker).unwrap() + ticket_marker.len();
    let ticket = asked.text[start..start + asked.text[start..].find('"').unwrap()].to_string();
    let csrf = asked.csrf();
    let wrong = if totp_code(&secret, 1) == "000000" { "111111" } else { "000000" };
    let again = dash.post("/dashboard/login", &[("csrf", &csrf), ("ticket", &ticket), ("code", wrong)]).await;
    assert_eq!(again.status, 401, "{}", again.text);
    assert!(again.has("code-form"), "asked again: {}", again.text);
    let home = dash
        .post("/dashboard/login", &[("csrf", &csrf), ("ticket", &ticket), ("code", &totp_code(&secret, 1))])
        .await;
    assert_eq!(home.path, "/dashboard", "{}", home.text);
    let session = dash.cookie("sika_session").unwrap();
    api.get(&node.sandbox_url("/v1/accounts"), &session).await.expect(200);
    // The ticket is spent with the sign-in.
    let spent =
        dash.post("/dashboard/login", &[("csrf", &csrf), ("ticket", &ticket), ("code", &recovery[0])]).await;
    assert!(spent.element("notice").is_some_and(|n| n.contains("log in again")), "{}", spent.text);

    let out = dash.submit("/dashboard/logout", "/dashboard/logout", &[]).await;
    assert_eq!(out.path, "/dashboard/login", "{}", out.text);
    assert!(dash.cookie("sika_session").is_none());
    api.get(&node.sandbox_url("/v1/accounts"), &session).await.expect_error(401, "unauthorized");
}

/// Payments: the collections list with its reference and status filters,
/// a collection's page with its timeline, and a refund made from it (the
/// API's refund, with its rules); a viewer reads the same pages without
/// the refund form, and their forged refund is refused.
#[tokio::test]
async fn payments_list_filter_and_refund_a_collection_from_its_page() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "payments@shop.example").await;
    let (_, key) =
        create_key(&api, &node.sandbox, &owner, serde_json::json!({ "name": "k", "scopes": ["*"] })).await;
    let mut ids = Vec::new();
    for reference in ["order-1", "order-2"] {
        let created =
            api.post(&node.sandbox_url("/v1/collections"), &key, mtn_collection("100.00", reference)).await;
        ids.push(created.created("collection", "col_").1);
    }
    let url = node.sandbox_url(&format!("/v1/collections/{}", ids[0]));
    poll_until(&api, &url, &key, |b| b["collection"]["status"] == "completed").await;

    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("payments@shop.example", PASSWORD).await;
    let list = dash.get("/dashboard/payments?kind=collections").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(
        list.text.contains(&ids[0]) && list.text.contains(&ids[1]) && list.text.contains("GHS 100.00"),
        "{}",
        list.text
    );
    let one = dash.get("/dashboard/payments?kind=collections&reference=order-1").await;
    assert!(one.text.contains(&ids[0]) && !one.text.contains(&ids[1]), "{}", one.text);
    assert!(dash.get("/dashboard/payments?kind=collections&status=failed").await.has("no-payments"));
    let bad = dash.get("/dashboard/payments?kind=collections&status=lost").await;
    assert_eq!(bad.status, 400, "the API's refusal: {}", bad.text);

    let page = format!("/dashboard/payments/collections/{}", ids[0]);
    let detail = dash.get(&page).await;
    assert!(detail.has("timeline") && detail.has("refund-form"), "{}", detail.text);
    let refund_path = format!("{page}/refund");
    let fields = [("amount", "10.00"), ("reason", "Item returned"), ("externalReference", "rf-1")];
    let refunded = dash.submit(&page, &refund_path, &fields).await;
    let notice = refunded.element("notice").unwrap_or_default();
    assert!(notice.contains("Refund rf_") && notice.contains("GHS 10.00"), "{}", refunded.text);
    let too_much =
        dash.submit(&page, &refund_path, &[("amount", "95.00"), ("externalReference", "rf-2")]).await;
    assert_eq!(too_much.status, 400, "{}", too_much.text);
    let refunds = api.get(&node.sandbox_url(&format!("/v1/refunds?collectionId={}", ids[0])), &key).await;
    assert_eq!(refunds.body["data"].as_array().unwrap().len(), 1, "{}", refunds.text);

    member_with_role(&api, &node, &owner, "viewer@payments.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@payments.example", PASSWORD).await;
    let seen = viewer.get(&page).await;
    assert!(seen.has("timeline") && !seen.has("refund-form"), "{}", seen.text);
    let forged = viewer.submit(&page, &refund_path, &[("externalReference", "rf-forged")]).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let refunds = api.get(&node.sandbox_url(&format!("/v1/refunds?collectionId={}", ids[0])), &key).await;
    assert_eq!(refunds.body["data"].as_array().unwrap().len(), 1, "nothing more: {}", refunds.text);
}

/// Developers: a webhook endpoint gets a test event from its button, and a
/// disabled one is re-enabled there (what needs attention on the home page
/// until then); a viewer sees the endpoints without either button.
#[tokio::test]
async fn developers_send_a_test_event_and_re_enable_an_endpoint() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "hooks@shop.example").await;
    let (_, key) =
        create_key(&api, &node.sandbox, &owner, serde_json::json!({ "name": "k", "scopes": ["*"] })).await;
    let sink = WebhookSink::start();
    let id = sink.register(&api, &node.sandbox, &key).await;
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("hooks@shop.example", PASSWORD).await;
    let page = dash.get("/dashboard/developers").await;
    assert!(page.has(&format!("endpoint-{id}")) && page.text.contains("Send test event"), "{}", page.text);
    let sent =
        dash.submit("/dashboard/developers", &format!("/dashboard/developers/webhooks/{id}/test"), &[]).await;
    assert!(sent.element("notice").unwrap_or_default().contains("test event"), "{}", sent.text);
    eventually("the test event", Duration::from_secs(10), || async {
        sink.received().into_iter().find(|b| b["event"] == "webhook.test")
    })
    .await;

    let one = node.sandbox_url(&format!("/v1/webhooks/endpoints/{id}"));
    api.patch(&one, &key, serde_json::json!({ "status": "disabled" })).await.expect(200);
    let home = dash.get("/dashboard").await;
    assert!(home.element("attention").unwrap_or_default().contains("is disabled"), "{}", home.text);
    let enabled = dash
        .submit("/dashboard/developers", &format!("/dashboard/developers/webhooks/{id}/enable"), &[])
        .await;
    assert!(enabled.element("notice").unwrap_or_default().contains("is active again"), "{}", enabled.text);
    assert_eq!(api.get(&one, &key).await.body["webhookEndpoint"]["status"], "active");

    member_with_role(&api, &node, &owner, "viewer@hooks.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@hooks.example", PASSWORD).await;
    let seen = viewer.get("/dashboard/developers").await;
    assert!(seen.has(&format!("endpoint-{id}")) && !seen.text.contains("Send test event"), "{}", seen.text);
}

/// "Forgot your password?": the log-in page's form emails a link to
/// `/dashboard/reset/{token}` (the SMTP server on loopback); with
/// two-factor sign-in on, the link alone does not get in (the code is
/// asked), with the code it sets the new password and signs in, once.
#[tokio::test]
async fn a_password_reset_by_the_emailed_link_needs_the_code_too() {
    let test = "a_password_reset_by_the_emailed_link_needs_the_code_too";
    let Some(smtp) = SmtpServer::start(test) else { return };
    let config = format!("{EXAMPLE_CONFIG}\n{}", smtp.config(""));
    let node = Node::start(Options { config: Some(config), ..Options::unthrottled() });
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "reset@shop.example").await;
    let (secret, _) = enable_totp(&api, &node, &owner).await;
    let dash = Dashboard::new(&node.sandbox);
    let asked = dash.submit("/dashboard/login", "/dashboard/reset", &[("email", "reset@shop.example")]).await;
    assert!(asked.element("notice").unwrap_or_default().contains("on its way"), "{}", asked.text);
    let mails = smtp.wait_for("reset@shop.example", 2).await;
    let url = link(mails.last().unwrap(), "http://");
    let path = url.split_once("/dashboard/").map(|(_, rest)| format!("/dashboard/{rest}")).unwrap();
    assert!(path.starts_with("/dashboard/reset/rst_"), "{url}");
    let new_password = "a brand new pass phrase";
    let without = dash.submit(&path, &path, &[("password", new_password)]).await;
    assert_eq!(without.status, 401, "{}", without.text);
    assert!(without.element("notice").unwrap_or_default().contains("two-factor"), "{}", without.text);
    let done =
        dash.submit(&path, &path, &[("password", new_password), ("code", &totp_code(&secret, 1))]).await;
    assert_eq!(done.path, "/dashboard", "{}", done.text);
    let again = dash.submit(&path, &path, &[("password", "yet another pass phrase")]).await;
    assert_eq!(again.status, 401, "a reset works once: {}", again.text);
    let body = serde_json::json!({ "email": "reset@shop.example", "password": PASSWORD });
    let old = api.post_anonymous(&node.sandbox_url("/v1/sessions"), body).await;
    old.expect_error(401, "unauthorized");
    assert!(old.body["details"]["reason"].is_null(), "the old password is wrong now: {}", old.text);
}
