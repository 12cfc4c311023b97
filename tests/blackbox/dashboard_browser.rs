//! The merchant dashboard in a real browser (headless Chromium over
//! WebDriver, `support::browser`): an owner accepts the emailed invitation
//! (a real SMTP server on loopback), moves between the live dashboard and
//! test mode, turns on two-factor sign-in with the QR code's secret and
//! sees the ten recovery codes once, invites a viewer and makes a key, logs
//! out and back in with a code; the viewer accepts their emailed link and
//! sees no write control; the balances, a statement and the checkout pages
//! (a payment page made by keyboard, its address to copy). The owner also answers a dispute (a reply in its
//! thread, then accepting it behind its confirmation page). Every page passes axe-core (from npm, injected
//! into the page) with no serious or critical violation, and fits a
//! 390 px phone without sideways scrolling. The reply carries a file chosen
//! in the file input, which then downloads byte for byte.
//!
//! The README's screenshots are taken here: with `SIKA_SCREENSHOTS` set
//! (`SIKA_SCREENSHOTS=docs/screenshots`), each page of `SCREENSHOTS` is
//! saved there as a PNG at a fixed window size; without it none is
//! written, so a run leaves the tree as it was.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::browser::{BROWSER, Browser, Viewport, browser_available};
use crate::support::smtp::{SmtpServer, link};
use crate::support::team::{PASSWORD, open_session, totp_code};
use crate::support::{
    Api, EXAMPLE_CONFIG, Node, Options, cannot_run, create_key, mtn_collection, poll_until,
};

/// axe-core's script: `SIKA_AXE_JS`, or where `.ci/run` installs it.
fn axe_source(test: &str) -> Option<String> {
    let path = std::env::var("SIKA_AXE_JS").unwrap_or_else(|_| {
        format!(
            "{}/.cache/sika-axe/node_modules/axe-core/axe.min.js",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(e) => {
            cannot_run(test, &format!("axe-core is missing at {path} ({e}); .ci/run installs it from npm"));
            None
        }
    }
}

/// The README's screenshots (`docs/screenshots/{name}.png`): each page at
/// desktop width (1280x800), and one dispute's thread on a 390 px phone.
pub const SCREENSHOTS: [&str; 10] = [
    "home",
    "payments",
    "payment",
    "balances",
    "checkout",
    "disputes",
    "team",
    "developers",
    "settings",
    "dispute-phone",
];

/// Saves the window as `name`.png under `SIKA_SCREENSHOTS`, when it is set:
/// nothing focused, scrolled to the top (or to the element `at`), so the
/// picture shows the page as a visitor first sees it.
async fn screenshot(b: &Browser, name: &str, at: Option<&str>) {
    let Ok(dir) = std::env::var("SIKA_SCREENSHOTS") else { return };
    assert!(SCREENSHOTS.contains(&name), "{name} is not one of SCREENSHOTS");
    let script = "if (document.activeElement) { document.activeElement.blur(); }
        var at = arguments[0] && document.querySelector(arguments[0]);
        if (at) { at.scrollIntoView(); } else { window.scrollTo(0, 0); }";
    b.execute(script, vec![json!(at)]).await;
    b.screenshot(&Path::new(&dir).join(format!("{name}.png"))).await;
}

/// Runs axe-core on the page: no serious or critical violation, and
/// nothing wider than the window.
async fn check_page(b: &Browser, axe: &str, what: &str) {
    b.execute(axe, vec![]).await;
    let script = "return axe.run(document, { resultTypes: ['violations'] }).then(function (r) {
        return r.violations.filter(function (v) { return v.impact === 'serious' || v.impact === 'critical'; })
          .map(function (v) { return { id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(function (n) { return n.target.join(' '); }) }; });
      });";
    let violations = b.execute(script, vec![]).await;
    if violations.as_array().is_none_or(|v| !v.is_empty()) {
        b.fail(&format!("{what}: serious or critical accessibility violations: {violations:#}")).await;
    }
    // The layout viewport (`innerWidth`) of a phone grows to hold a page
    // wider than the screen; the screen's width is the root's `clientWidth`.
    let fits = b
        .execute(
            "return document.documentElement.scrollWidth <= document.documentElement.clientWidth;",
            vec![],
        )
        .await;
    if fits != json!(true) {
        let wide = b
            .execute(
                "var w = document.documentElement.clientWidth, out = [];
                 document.querySelectorAll('body *').forEach(function (e) {
                   var r = e.getBoundingClientRect();
                   if (r.right > w + 1 && out.length < 10) { out.push(e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(r.right)); }
                 });
                 return out;",
                vec![],
            )
            .await;
        b.fail(&format!("{what}: the page is wider than the window: {wide}")).await;
    }
}

async fn wait_for_path(b: &Browser, path: &str) {
    b.wait_until(&format!("the page {path}"), Duration::from_secs(10), || async {
        let url = b.try_current_url().await?;
        Ok(url.split('?').next().is_some_and(|u| u.ends_with(path)).then_some(()))
    })
    .await;
}

/// The whole sign-in path and each page, as an owner and as a viewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_sign_in_with_totp_and_an_emailed_invitation_in_a_browser() {
    let test = "dashboard_sign_in_with_totp_and_an_emailed_invitation_in_a_browser";
    if !browser_available(test) {
        return;
    }
    let Some(axe) = axe_source(test) else { return };
    let Some(smtp) = SmtpServer::start(test) else { return };
    let _one = BROWSER.lock().await;
    let node = Node::start(Options {
        config: Some(format!("{EXAMPLE_CONFIG}\n{}", smtp.config(""))),
        ..Options::unthrottled()
    });
    let api = Api::new();
    let body = json!({ "name": "Ama's Shop", "owner": { "email": "ama@dash.example", "name": "Ama" } });
    api.post(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token, body).await.expect(201);
    let invitation = smtp.wait_for("ama@dash.example", 1).await.remove(0);
    let url = link(&invitation, "http://");
    assert!(url.contains("/dashboard/invitations/inv_"), "{url}");

    // A 390 px phone at one device pixel per CSS pixel, so that its
    // screenshot stays small.
    let mut b = Browser::start_with(Viewport { pixel_ratio: 1.0, ..Viewport::PHONE }).await;
    b.show_on_failure(&["#notice", "h1"]);
    // The emailed link: set a password, and in.
    b.goto(&url).await;
    check_page(&b, &axe, "invitation page").await;
    b.fill("#password", PASSWORD).await;
    b.click("#set-password").await;
    b.find("#balances-title").await;
    assert_eq!(b.text("#role").await, "owner");
    // The same session on test mode, which says so on every page.
    b.click("#other-stack").await;
    b.find("#balances-title").await;
    assert!(b.text("#test-mode").await.contains("Test mode"));
    check_page(&b, &axe, "home (owner)").await;
    let (dispute, key) = open_a_dispute(&api, &node).await;
    owner_answers_the_dispute(&b, &axe, &node, &dispute, &key).await;

    let (secret, recovery) = owner_enrols_invites_and_makes_a_key(&b, &axe, &node, &key).await;
    log_out_and_in_with_a_code(&b, &axe, &secret).await;
    viewer_accepts_and_sees_no_write_control(&b, &axe, &smtp).await;
    b.quit().await;
    desktop_pass(&axe, &node, &recovery).await;
}

/// Through the API as the owner (before two-factor sign-in is on): a
/// completed sandbox collection, disputed; returns the dispute's id and
/// the key.
async fn open_a_dispute(api: &Api, node: &Node) -> (String, String) {
    let session = open_session(api, node, json!({ "email": "ama@dash.example", "password": PASSWORD })).await;
    let token = session.body["session"]["token"].as_str().unwrap().to_string();
    let (_, key) = create_key(api, &node.sandbox, &token, json!({ "name": "k", "scopes": ["*"] })).await;
    let created =
        api.post(&node.sandbox_url("/v1/collections"), &key, mtn_collection("80.00", "ord-b")).await;
    let (_, collection) = created.created("collection", "col_");
    let url = node.sandbox_url(&format!("/v1/collections/{collection}"));
    poll_until(api, &url, &key, |b| b["collection"]["status"] == "completed").await;
    let opened = api
        .post(&node.sandbox_url("/v1/simulations/disputes"), &key, json!({ "collectionId": collection }))
        .await;
    (opened.created("dispute", "dsp_").1, key)
}

/// A file of every byte value (a courier's receipt, say): what the
/// browser uploads must come back byte for byte.
fn receipt_bytes() -> Vec<u8> {
    (0..3_000u32).map(|i| (i * 7 % 256) as u8).chain(*b"\r\n\0end").collect()
}

/// `GET url` with `headers`; the body's bytes.
async fn download(url: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert_eq!(response.status(), 200, "GET {url}");
    response.bytes().await.unwrap().to_vec()
}

/// The disputes list, the dispute's thread, a reply with a file chosen in
/// the file input (sent by a real tap on Send), the file downloaded byte for
/// byte from the thread's link and from the API, and accepting the dispute
/// behind its confirmation page, at 390 px.
async fn owner_answers_the_dispute(b: &Browser, axe: &str, node: &Node, dispute: &str, key: &str) {
    b.click("#nav-disputes").await;
    b.find("#disputes").await;
    check_page(b, axe, "disputes (owner)").await;
    b.click(&format!("a[href='/dashboard/disputes/{dispute}']")).await;
    b.find("#reply-form").await;
    check_page(b, axe, "a dispute (owner)").await;
    b.fill("#reply-body", "The goods were delivered; the courier's receipt is attached.").await;
    let dir = std::env::temp_dir().join(format!("sika-dash-upload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("courier-receipt.bin");
    std::fs::write(&file, receipt_bytes()).unwrap();
    b.find("#reply-file").await.choose_file(&file).await;
    // A real WebDriver tap on Send. (A summary wider than the phone once
    // widened the layout viewport to 429x918 on an 390x844 screen, and the
    // tap landed below the button; the page now fits, which `check_page`
    // holds every page to.)
    b.click("#reply").await;
    wait_for_path(b, "/messages").await;
    let notice = b.text("#notice").await;
    assert!(notice.contains("Your message and 1 file(s) are in the thread"), "{notice}");
    b.find("#thread").await;
    let link = b.find("#thread a[id^='file-']").await;
    assert_eq!(link.text().await, "courier-receipt.bin");
    let href = link.attr("href").await.unwrap_or_default();
    let file_id = href.rsplit('/').next().unwrap_or_default().to_string();
    assert!(href.starts_with("/dashboard/files/file_"), "{href}");
    let cookie = format!("sika_session={}", b.cookie("sika_session").await.expect("the session cookie"));
    let from_link = download(&format!("{}{href}", node.sandbox), &[("cookie", &cookie)]).await;
    assert!(
        from_link == receipt_bytes(),
        "the thread's link serves the bytes chosen ({} bytes)",
        from_link.len()
    );
    let authorization = format!("Bearer {key}");
    let from_api = download(
        &node.sandbox_url(&format!("/v1/files/{file_id}/contents")),
        &[("authorization", &authorization)],
    )
    .await;
    assert!(from_api == receipt_bytes(), "GET /v1/files/{file_id}/contents ({} bytes)", from_api.len());
    let _ = std::fs::remove_dir_all(&dir);
    check_page(b, axe, "a dispute's thread (owner)").await;
    screenshot(b, "dispute-phone", Some("#thread-title")).await;
    b.click("#accept-link").await;
    b.find("#accept-form").await;
    check_page(b, axe, "accepting a dispute").await;
    b.click("#accept").await;
    assert!(b.text("#notice").await.contains("You accepted dispute"));
    assert!(b.try_find("#reply-form").await.unwrap().is_none(), "resolved: no reply");
}

/// Two-factor sign-in (the QR code, the secret, a code, ten recovery codes
/// once), a viewer invited, a key made; returns the secret and a recovery code.
async fn owner_enrols_invites_and_makes_a_key(
    b: &Browser,
    axe: &str,
    node: &Node,
    key: &str,
) -> (String, String) {
    b.click("#nav-settings").await;
    check_page(b, axe, "settings (owner)").await;
    b.click("#totp-start").await;
    let qr = b.attr("#totp-qr", "src").await.unwrap_or_default();
    assert!(qr.starts_with("data:image/svg+xml;base64,"), "{qr}");
    let secret = b.text("#totp-secret").await;
    check_page(b, axe, "two-factor enrolment").await;
    b.fill("#totp-code", &totp_code(&secret, 0)).await;
    b.click("#totp-confirm").await;
    b.find("#recovery-codes").await;
    let codes = b.find_all("#recovery-codes li").await;
    assert_eq!(codes.len(), 10);
    let recovery = codes[0].text().await;
    b.goto(&format!("{}/dashboard/settings", node.sandbox)).await;
    assert!(b.try_find("#recovery-codes").await.unwrap().is_none(), "shown once");
    assert!(b.text("#totp-state").await.starts_with("On"));

    // The team: invite a viewer (emailed); developers: a key, shown once.
    b.click("#nav-team").await;
    b.fill("#invite-name", "Kofi").await;
    b.fill("#invite-email", "kofi@dash.example").await;
    b.find("#invite-role").await.select_value("viewer").await;
    b.click("#invite").await;
    b.find("#invitation-link").await;
    check_page(b, axe, "team (owner)").await;
    b.click("#nav-developers").await;
    b.fill("#key-name", "Shop server").await;
    b.click("input[value='accounts:read']").await;
    b.click("#create-key").await;
    assert!(b.text("#new-secret").await.starts_with("sk_test_"));
    check_page(b, axe, "developers (owner)").await;
    owner_walks_balances_and_checkout(b, axe, node, key).await;

    (secret, recovery)
}

/// Balances and a statement; a payment page made by keyboard (Enter in
/// the form) with its branding and a field the payer fills in: the API's
/// refusal of a bad colour shown beside that field, then fixed; the page's
/// address shown to copy in a read-only field, and the API reads it back.
async fn owner_walks_balances_and_checkout(b: &Browser, axe: &str, node: &Node, key: &str) {
    b.click("#nav-balances").await;
    b.find("#transactions-title").await;
    check_page(b, axe, "balances (owner)").await;
    b.fill("#statement-currency", "GHS").await;
    b.click("#show-statement").await;
    b.find("#statement").await;
    check_page(b, axe, "statement (owner)").await;
    b.click("#nav-checkout").await;
    b.fill("#checkout-title", "Kente scarves").await;
    b.fill("#checkout-currency", "GHS").await;
    b.click("#method-mobile_money").await;
    b.click("#more-settings summary").await;
    b.fill("#checkout-business", "Ama's Shop").await;
    b.fill("#checkout-accent", "green").await;
    b.click("#custom-fields summary").await;
    b.fill("#cf-0-name", "size").await;
    b.click("#cf-0-required").await;
    b.find("#checkout-amount").await.send_keys("150.00\u{E007}").await;
    let beside = b.text("#checkout-accent-error").await;
    assert!(beside.contains("hex colour"), "{beside}");
    assert_eq!(b.attr("#checkout-accent", "aria-invalid").await.as_deref(), Some("true"));
    assert_eq!(b.find("#checkout-title").await.prop("value").await.as_deref(), Some("Kente scarves"));
    assert_eq!(b.find("#cf-0-name").await.prop("value").await.as_deref(), Some("size"));
    check_page(b, axe, "a refused payment page (owner)").await;
    b.fill("#checkout-accent", "#0a7d4f").await;
    b.click("#create").await;
    b.find("#checkout-url").await;
    let url = b.attr("#checkout-url", "value").await.unwrap_or_default();
    assert!(url.contains("/pay/"), "{url}");
    assert!(b.attr("#checkout-url", "readonly").await.is_some(), "read-only");
    let id = b.text("#checkout-id").await;
    let made = Api::new().get(&node.sandbox_url(&format!("/v1/payment-pages/{id}")), key).await;
    let page = &made.body["paymentPage"];
    assert_eq!(page["branding"]["accentColor"], "#0a7d4f", "{}", made.text);
    assert_eq!(page["branding"]["businessName"], "Ama's Shop", "{}", made.text);
    assert_eq!(page["customFields"][0]["name"], "size", "{}", made.text);
    assert_eq!(page["customFields"][0]["required"], true, "{}", made.text);
    check_page(b, axe, "payment page (owner)").await;
    b.click("#nav-checkout").await;
    b.find("#checkouts").await;
    check_page(b, axe, "payment pages (owner)").await;
    b.click("#tab-links").await;
    b.find("#create-form").await;
    check_page(b, axe, "payment links (owner)").await;
}

/// Out, and back in by keyboard with a code.
async fn log_out_and_in_with_a_code(b: &Browser, axe: &str, secret: &str) {
    b.click("#log-out").await;
    wait_for_path(b, "/dashboard/login").await;
    check_page(b, axe, "log-in").await;
    // By keyboard alone: Tab from the email to the password, Enter submits.
    b.find("#email").await.send_keys("ama@dash.example\u{E004}").await;
    let focused = b.execute("return document.activeElement.id;", vec![]).await;
    assert_eq!(focused, json!("password"), "Tab moves from the email to the password");
    b.find("#password").await.send_keys(&format!("{PASSWORD}\u{E007}")).await;
    b.find("#code").await;
    check_page(b, axe, "two-factor code").await;
    b.find("#code").await.send_keys(&format!("{}\u{E007}", totp_code(secret, 1))).await;
    b.find("#balances-title").await;
    b.click("#log-out").await;
    wait_for_path(b, "/dashboard/login").await;
}

/// The viewer's emailed link; no write control anywhere.
async fn viewer_accepts_and_sees_no_write_control(b: &Browser, axe: &str, smtp: &SmtpServer) {
    let mail = smtp.wait_for("kofi@dash.example", 1).await.remove(0);
    b.goto(&link(&mail, "http://")).await;
    b.fill("#password", PASSWORD).await;
    b.click("#set-password").await;
    b.find("#balances-title").await;
    assert_eq!(b.text("#role").await, "viewer");
    check_page(b, axe, "home (viewer)").await;
    for (page, hidden, absent) in [
        ("payments", "#filter-form", "#refund-form"),
        ("balances", "#transactions-title", "form[method='post']:not([action='/dashboard/logout'])"),
        ("checkout", "#checkouts", "#create-form"),
        ("disputes", "#disputes", "#reply-form"),
        ("team", "#team-hidden", "#invite-form"),
        ("developers", "#keys-hidden", "#key-form"),
        ("settings", "#totp-start-form", "#representative-form"),
    ] {
        b.click(&format!("#nav-{page}")).await;
        b.find(hidden).await;
        assert!(b.try_find(absent).await.unwrap().is_none(), "{page}: a viewer sees no {absent}");
        check_page(b, axe, &format!("{page} (viewer)")).await;
    }
    b.click("#log-out").await;
    wait_for_path(b, "/dashboard/login").await;
}

/// At desktop width too, logging in with a recovery code this time.
async fn desktop_pass(axe: &str, node: &Node, recovery: &str) {
    let b = Browser::start_with(Viewport::DESKTOP).await;
    b.goto(&format!("{}/dashboard/login", node.sandbox)).await;
    b.fill("#email", "ama@dash.example").await;
    b.fill("#password", PASSWORD).await;
    b.click("#log-in").await;
    b.fill("#code", recovery).await;
    b.click("#verify").await;
    b.find("#balances-title").await;
    for page in ["home", "balances", "payments", "checkout", "disputes", "team", "developers", "settings"] {
        b.click(&format!("#nav-{page}")).await;
        b.find("h1").await;
        check_page(&b, axe, &format!("{page} (owner, desktop)")).await;
        if page != "payments" {
            screenshot(&b, page, None).await;
        }
    }
    // The collections (the payouts tab has none here), and a payment's
    // page: the disputed collection, with its timeline.
    b.click("#nav-payments").await;
    b.click("#tab-collections").await;
    b.find("#payments").await;
    screenshot(&b, "payments", None).await;
    b.click("#payments a[href^='/dashboard/payments/collections/']").await;
    b.find("#timeline").await;
    check_page(&b, axe, "a payment (owner, desktop)").await;
    screenshot(&b, "payment", None).await;
    let width: Value = b.execute("return window.innerWidth;", vec![]).await;
    assert!(width.as_u64() > Some(1000), "{width}");
    b.quit().await;
}

/// The README's merchant tour shows the screenshots the browser test
/// takes: every image it names under `docs/screenshots/` exists and is one
/// of `SCREENSHOTS`, each of `SCREENSHOTS` is shown, and together they
/// stay small (the repository carries them).
#[test]
fn dashboard_readme_shows_each_screenshot_and_each_file_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let shown: Vec<&str> = readme
        .split("](docs/screenshots/")
        .skip(1)
        .map(|rest| &rest[..rest.find(')').expect("a closed image link")])
        .collect();
    let mut total = 0;
    for file in &shown {
        let path = root.join("docs/screenshots").join(file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("README shows {}: {e}", path.display()));
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{file} is a PNG");
        assert!(
            SCREENSHOTS.iter().any(|name| format!("{name}.png") == *file),
            "{file} is not taken by the browser test"
        );
        total += bytes.len();
    }
    for name in SCREENSHOTS {
        assert!(shown.contains(&format!("{name}.png").as_str()), "the README does not show {name}.png");
    }
    assert!(total <= 700 * 1024, "the screenshots weigh {total} bytes");
}
