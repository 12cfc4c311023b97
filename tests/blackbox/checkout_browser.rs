//! Hosted checkout in a real browser: headless Chromium, driven over
//! WebDriver, pays a sandbox payment page the way a payer on a phone would
//! (a validation error, a failed attempt, then a successful one and the
//! redirect), and the API then shows exactly that history. Needs
//! /usr/bin/chromium and /usr/bin/chromedriver: without them the tests fail
//! when `CI` is set and are skipped otherwise.

use std::time::{Duration, Instant};

use crate::support::browser::{Browser, Viewport, WdResult, browser_available};
use crate::support::*;
use serde_json::{Value, json};

use crate::support::browser::BROWSER;

/// `html` as a `data:` URL (every byte outside [A-Za-z0-9] percent-encoded).
fn data_url(html: &str) -> String {
    let mut out = String::from("data:text/html;charset=utf-8,");
    for b in html.bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The browser harness (fantoccini under it) itself, on a page that needs no server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webdriver_client_drives_a_data_url_page() {
    if !browser_available("webdriver_client_drives_a_data_url_page") {
        return;
    }
    let _one = BROWSER.lock().await;
    let started = Instant::now();
    let mut b = Browser::start().await;
    b.show_on_failure(&["#out", "#later"]);
    let started_in = started.elapsed();
    let html = r#"<!doctype html><html><head>
        <meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
        <p id="out" data-state="idle">waiting</p>
        <p id="later"></p>
        <input id="name" value="prefilled">
        <select id="pick"><option value="">Choose</option><option value="mtn_gh">MTN</option>
          <option value="vodafone_gh">Telecel</option></select>
        <button id="go" onclick="
          var o = document.getElementById('out');
          o.textContent = 'clicked by ' + document.getElementById('name').value
            + ' on ' + document.getElementById('pick').value;
          o.setAttribute('data-state', 'done');
          setTimeout(function () { document.getElementById('later').textContent = 'later'; }, 300);
        ">Go</button></body></html>"#;
    let url = data_url(html);
    b.goto(&url).await;
    assert!(b.current_url().await.starts_with("data:text/html"), "{}", b.current_url().await);
    assert_eq!(b.text("#out").await, "waiting");
    assert_eq!(b.attr("#out", "data-state").await.as_deref(), Some("idle"));
    assert_eq!(b.attr("#out", "data-missing").await, None);
    let name = b.find("#name").await;
    assert_eq!(name.prop("value").await.as_deref(), Some("prefilled"));
    name.send_keys("Ama").await; // clears first
    assert_eq!(name.prop("value").await.as_deref(), Some("Ama"));
    b.find("#pick").await.select_value("vodafone_gh").await;
    assert_eq!(b.find("#pick").await.prop("value").await.as_deref(), Some("vodafone_gh"));
    b.click("#go").await;
    assert_eq!(b.text("#out").await, "clicked by Ama on vodafone_gh");
    assert_eq!(b.attr("#out", "data-state").await.as_deref(), Some("done"));
    let later = b
        .wait_until("#later to fill in", Duration::from_secs(5), || async {
            let text = b.find("#later").await.try_text().await?;
            Ok((!text.is_empty()).then_some(text))
        })
        .await;
    assert_eq!(later, "later");
    let width = b.execute("return [window.innerWidth, arguments[0] + 1];", vec![json!(41)]).await;
    assert_eq!(width, json!([390, 42]), "a phone-sized window and script arguments");
    assert_eq!(b.find_all("option").await.len(), 3);
    assert!(b.try_find("#nothing-here").await.unwrap().is_none());
    assert!(b.source().await.contains("id=\"later\""));
    let quit = Instant::now();
    b.quit().await;
    eprintln!("quit took {:?}", quit.elapsed());
    eprintln!("data: URL test: browser up in {started_in:?}, total {:?}", started.elapsed());
}

/// `Some` once `#status`'s `data-state` equals `state` (`None` while there is no `#status`).
async fn state_is(b: &Browser, state: &str) -> WdResult<Option<()>> {
    let Some(el) = b.try_find("#status").await? else { return Ok(None) };
    Ok((el.try_attr("data-state").await?.as_deref() == Some(state)).then_some(()))
}

/// Fills the payer's fields (amount, method, network, phone) and clicks Pay.
async fn pay(b: &Browser, amount: &str) {
    b.fill("#amount", amount).await;
    let method = b.find("input[name=method][value=mobile_money]").await;
    if method.prop("checked").await.as_deref() != Some("true") {
        method.click().await;
    }
    b.find("select#network").await.select_value("mtn_gh").await;
    b.fill("#phone", MTN_PHONE).await;
    b.wait_until("#pay to be enabled", Duration::from_secs(5), || async {
        let disabled = b.find("#pay").await.try_prop("disabled").await?;
        Ok((disabled.as_deref() != Some("true")).then_some(()))
    })
    .await;
    b.click("#pay").await;
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

async fn links_of(api: &Api, node: &Node, page_id: &str) -> Vec<Value> {
    let url = node.sandbox_url(&format!("/v1/payment-links?parentId={page_id}&parentType=payment_page"));
    let r = api.get(&url, &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["data"].as_array().unwrap_or_else(|| panic!("a list: {}", r.text)).clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn hosted_checkout_in_a_real_browser() {
    if !browser_available("hosted_checkout_in_a_real_browser") {
        return;
    }
    let _one = BROWSER.lock().await;
    let t0 = Instant::now();
    let mut lap = t0;
    let mut laps: Vec<(&str, Duration)> = Vec::new();
    let mut mark = |name: &'static str| {
        laps.push((name, lap.elapsed()));
        lap = Instant::now();
    };

    let Sandbox { node, api, key, .. } = Sandbox::start();
    let before = balances_minor(&api, &node.sandbox, &key, "GHS", 2).await.0;
    let redirect = node.sandbox_url("/v1/openapi.json");
    let r = api
        .post(
            &node.sandbox_url("/v1/payment-pages"),
            &key,
            json!({
                "currency": "GHS",
                "title": "Kente scarves",
                "description": "Hand woven",
                "allowedMethods": ["mobile_money"],
                "redirectUrl": redirect,
                "branding": { "businessName": "Ama's Shop", "accentColor": "#0a7d4f", "logoUrl": "" },
            }),
        )
        .await;
    r.expect(201);
    let page = &r.body["paymentPage"];
    let page_id = page["id"].as_str().unwrap_or_else(|| panic!("paymentPage.id: {}", r.text)).to_string();
    assert!(page_id.starts_with("pp_"), "{page_id}");
    let page_url = page["url"].as_str().unwrap_or_else(|| panic!("paymentPage.url: {}", r.text)).to_string();
    mark("node and payment page");

    let mut b = Browser::start().await;
    b.show_on_failure(&["#status", "#error"]);
    mark("browser");
    b.goto(&page_url).await;
    b.find("#checkout").await;
    let source = b.source().await;
    for shown in ["Kente scarves", "Hand woven"] {
        if !source.contains(shown) {
            b.fail(&format!("the page does not show {shown:?}")).await;
        }
    }
    let methods = b.find_all("input[name=method]").await;
    let mut offered = Vec::new();
    for m in &methods {
        offered.push(m.attr("value").await.unwrap_or_default());
    }
    if offered != ["mobile_money"] {
        b.fail(&format!("a GHS page offers only mobile_money, not {offered:?}")).await;
    }
    if !matches!(state_is(&b, "idle").await, Ok(Some(()))) {
        b.fail("#status starts idle").await;
    }
    mark("page loaded");

    // No amount: a validation error, and no attempt starts.
    pay(&b, "").await;
    b.wait_until("#error to show a validation error", Duration::from_secs(5), || async {
        let text = b.find("#error").await.try_text().await?;
        Ok((!text.trim().is_empty()).then_some(()))
    })
    .await;
    let link_attr = b.attr("#checkout", "data-link-id").await.unwrap_or_default();
    if !link_attr.is_empty() {
        b.fail(&format!("an invalid form started an attempt: data-link-id={link_attr}")).await;
    }
    assert!(links_of(&api, &node, &page_id).await.is_empty(), "no child link after a validation error");
    mark("validation error");

    // x.51 fails in the sandbox: the payer is told, and the form stays usable.
    pay(&b, "25.51").await;
    b.wait_until("#status data-state=failed", Duration::from_secs(20), || state_is(&b, "failed")).await;
    let failed_text = b.text("#status").await;
    if !failed_text.to_lowercase().contains("fail") {
        b.fail(&format!("the failure text does not say it failed: {failed_text:?}")).await;
    }
    let link_id = b.attr("#checkout", "data-link-id").await.unwrap_or_default();
    if !link_id.starts_with("pl_") {
        b.fail(&format!("#checkout data-link-id after the first attempt: {link_id:?}")).await;
    }
    let error_text = b.text("#error").await;
    if !error_text.trim().is_empty() {
        b.fail(&format!("#error is not cleared after a valid submit: {error_text:?}")).await;
    }
    mark("failed attempt");

    // x.00 succeeds: success text, then the redirect with the outcome.
    pay(&b, "25.00").await;
    b.wait_until("#status data-state=complete", Duration::from_secs(20), || state_is(&b, "complete")).await;
    let done_text = b.text("#status").await.to_lowercase();
    if !["success", "paid", "complete", "thank", "received"].iter().any(|w| done_text.contains(w)) {
        b.fail(&format!("no success text after complete: {done_text:?}")).await;
    }
    let same_link = b.attr("#checkout", "data-link-id").await.unwrap_or_default();
    if same_link != link_id {
        b.fail(&format!("the retry moved to another link: {link_id} then {same_link}")).await;
    }
    mark("complete");
    let landed = b
        .wait_until("the redirect to redirectUrl", Duration::from_secs(10), || async {
            let url = b.try_current_url().await?;
            Ok((url.starts_with(&redirect) && url.contains("status=complete")).then_some(url))
        })
        .await;
    mark("redirect");
    assert_eq!(query_param(&landed, "paymentLinkId").as_deref(), Some(link_id.as_str()), "{landed}");
    assert_eq!(query_param(&landed, "status").as_deref(), Some("complete"), "{landed}");
    let session_id = query_param(&landed, "sessionId").unwrap_or_default();
    assert!(session_id.starts_with("cs_"), "sessionId in {landed}");
    b.quit().await;

    // The API tells the same story.
    let links = links_of(&api, &node, &page_id).await;
    assert_eq!(links.len(), 1, "one child link for one payer: {links:?}");
    assert_eq!(links[0]["id"], link_id.as_str());
    assert_eq!(links[0]["parentId"], page_id.as_str());
    assert_eq!(links[0]["parentType"], "payment_page");
    let r = api.get(&node.sandbox_url(&format!("/v1/payment-links/{link_id}")), &key).await;
    r.expect(200);
    let link = &r.body["paymentLink"];
    assert_eq!(link["status"], "paid", "{link}");
    assert_eq!(link["totalReceived"], "25.00", "{link}");
    assert_eq!(link["currency"], "GHS", "{link}");
    let sessions = link["sessions"].as_array().unwrap_or_else(|| panic!("sessions: {link}"));
    let statuses: Vec<&str> = sessions.iter().map(|s| s["status"].as_str().unwrap_or("")).collect();
    assert_eq!(statuses, ["complete", "failed"], "sessions newest first: {link}");
    assert_eq!(
        sessions[0]["id"],
        session_id.as_str(),
        "the redirect's sessionId is the complete one: {link}"
    );
    assert_eq!(sessions[0]["method"], "mobile_money", "{link}");
    assert_eq!(sessions[0]["originAmount"], "25.00", "{link}");
    assert_eq!(sessions[1]["originAmount"], "25.51", "{link}");
    for s in sessions {
        assert_eq!(s["paymentLinkId"], link_id.as_str(), "{s}");
    }
    let r = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{page_id}")), &key).await;
    r.expect(200);
    let page = &r.body["paymentPage"];
    assert_eq!(page["paymentCount"], 1, "{page}");
    assert_eq!(page["totalCollected"], "25.00", "{page}");
    let after = eventually("the GHS balance to rise by 25.00", Duration::from_secs(10), || async {
        let now = balances_minor(&api, &node.sandbox, &key, "GHS", 2).await.0;
        (now == before + 2_500).then_some(now)
    })
    .await;
    assert_eq!(after - before, 2_500);
    mark("API checks");

    node.stop_and_verify();
    mark("stop and verify");
    let summary: Vec<String> = laps.iter().map(|(n, d)| format!("{n} {:.2}s", d.as_secs_f64())).collect();
    eprintln!("checkout browser test: {} (total {:.2}s)", summary.join(", "), t0.elapsed().as_secs_f64());
}

/// Where screenshots go: `SIKA_SCREENSHOTS` names a folder outside the
/// repository; unset, none are taken.
async fn snap(b: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("SIKA_SCREENSHOTS") {
        b.screenshot(&std::path::Path::new(&dir).join(format!("{name}.png"))).await;
    }
}

/// Creates a page or link on `stack` ("sandbox" or "live"); returns its id and url.
async fn create(api: &Api, node: &Node, stack: &str, path: &str, body: Value) -> (String, String) {
    let (url, key) = match stack {
        "live" => (node.live_url(path), &node.creds.live_key),
        _ => (node.sandbox_url(path), &node.creds.sandbox_key),
    };
    let r = api.post(&url, key, body).await;
    r.expect(201);
    let made = if path.contains("pages") { &r.body["paymentPage"] } else { &r.body["paymentLink"] };
    (made["id"].as_str().unwrap().to_string(), made["url"].as_str().unwrap().to_string())
}

fn checkout_body(currency: &str, amount: Option<&str>, methods: Value) -> Value {
    let mut body = json!({
        "currency": currency,
        "title": "Kente scarves",
        "description": "Hand woven in Bonwire",
        "allowedMethods": methods,
        "branding": { "businessName": "Ama's Shop", "accentColor": "#0a7d4f", "logoUrl": "" },
    });
    if let Some(a) = amount {
        body["amount"] = json!(a);
    }
    body
}

/// `#error`'s text once it has some.
async fn error_text(b: &Browser) -> String {
    b.wait_until("#error to show a message", Duration::from_secs(10), || async {
        let text = b.find("#error").await.try_text().await?;
        Ok((!text.trim().is_empty()).then_some(text))
    })
    .await
}

/// On an open-amount sandbox page: the banner, the Pay button following
/// the typed amount, the API's errors as sentences next to the field, and
/// the error clearing as the payer corrects the field.
async fn open_amount_page(b: &Browser, api: &Api, node: &Node) {
    let body = checkout_body("GHS", None, json!(["mobile_money"]));
    let (_, url) = create(api, node, "sandbox", "/v1/payment-pages", body).await;
    b.goto(&url).await;
    let banner = b.text("#test-mode").await;
    assert_eq!(banner, "Test mode \u{2014} no real money moves");
    assert_eq!(b.text("#pay").await, "Pay");
    b.fill("#amount", "1250").await;
    assert_eq!(b.text("#pay").await, "Pay GHS 1,250.00", "the button follows the typed amount");
    b.fill("#amount", "0.5").await;
    assert_eq!(b.text("#pay").await, "Pay GHS 0.50");
    snap(b, "phone-open-amount").await;
    // 3 decimals passes the script's own check; the API refuses it, and the payer reads a sentence.
    pay(b, "12.345").await;
    let text = error_text(b).await;
    assert_eq!(text, "Enter an amount with at most 2 decimals.");
    let beside = b
        .execute("var e = document.getElementById('error'); return e.previousElementSibling.id;", vec![])
        .await;
    assert_eq!(beside, json!("amount"), "the error sits next to the amount field");
    assert_eq!(b.attr("#amount", "aria-invalid").await.as_deref(), Some("true"));
    snap(b, "phone-error").await;
    b.find("#amount").await.send_keys("12.34").await;
    assert_eq!(b.text("#error").await, "", "correcting the field clears its error");
    assert!(!b.attr("#amount", "class").await.unwrap_or_default().contains("invalid"));
    pay(b, "20000.00").await;
    let text = error_text(b).await;
    assert!(text.contains("from GHS 1 to GHS 10,000"), "the method's limits, in the payer's words: {text:?}");
}

/// A sandbox bank transfer: its instructions show, disappear once it is
/// paid (with the success message), and the link then shows its receipt.
async fn instructions_then_receipt(b: &Browser, api: &Api, node: &Node) {
    let body = checkout_body("NGN", Some("125000.00"), json!(["bank_transfer"]));
    let (link_id, url) = create(api, node, "sandbox", "/v1/payment-links", body).await;
    b.goto(&url).await;
    assert_eq!(b.text("#amount-due").await, "NGN 125,000.00");
    assert_eq!(b.text("#pay").await, "Pay NGN 125,000.00");
    // The sandbox settles within milliseconds: record whether the instructions ever showed.
    b.execute(
        "var el = document.getElementById('instructions'); window.instructionsShown = '';
         new MutationObserver(function () {
           if (!el.hidden && el.textContent) { window.instructionsShown = el.textContent; }
         }).observe(el, { attributes: true, childList: true });",
        vec![],
    )
    .await;
    b.click("#pay").await;
    b.wait_until("#status data-state=complete", Duration::from_secs(20), || state_is(b, "complete")).await;
    let shown = b.execute("return window.instructionsShown;", vec![]).await;
    let shown = shown.as_str().unwrap_or_default();
    assert!(shown.contains("Transfer NGN 125,000.00 to") && shown.contains("Account number"), "{shown:?}");
    assert_eq!(b.find("#instructions").await.prop("hidden").await.as_deref(), Some("true"));
    assert!(b.text("#status").await.contains("NGN 125,000.00 paid"));
    assert_eq!(b.find("#pay").await.prop("hidden").await.as_deref(), Some("true"));
    snap(b, "phone-paid").await;
    b.goto(&url).await;
    assert!(b.text("#receipt").await.contains("has been paid"));
    assert_eq!(b.text("#receipt-amount").await, "NGN 125,000.00");
    assert_eq!(b.text("#receipt-merchant").await, "Ama's Shop");
    assert!(b.text("#receipt-reference").await.starts_with("cs_"));
    assert!(!b.text("#receipt-date").await.is_empty());
    assert!(b.try_find("#pay").await.unwrap().is_none(), "no Pay button on {link_id}'s receipt");
    snap(b, "phone-receipt").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payer_reads_amounts_errors_instructions_and_a_receipt() {
    if !browser_available("the_payer_reads_amounts_errors_instructions_and_a_receipt") {
        return;
    }
    let _one = BROWSER.lock().await;
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let mut b = Browser::start().await;
    b.show_on_failure(&["#status", "#error", "#pay", "#instructions"]);
    open_amount_page(&b, &api, &node).await;
    instructions_then_receipt(&b, &api, &node).await;
    // A live page takes real money: no banner, and the form is there.
    let body = checkout_body("GHS", Some("1250.00"), json!(["mobile_money"]));
    let (_, url) = create(&api, &node, "live", "/v1/payment-links", body).await;
    b.goto(&url).await;
    assert_eq!(b.text("#pay").await, "Pay GHS 1,250.00");
    assert!(b.try_find("#test-mode").await.unwrap().is_none(), "no test-mode banner on live");
    b.quit().await;
    node.stop_and_verify();
}

/// A live bank transfer waits for the operator to confirm it (until the
/// session expires, 1.8 s at the tests' time scale), so its instructions
/// stay up long enough to read: the operator's account and the reference.
async fn live_instructions(b: &Browser, size: &str) {
    b.click("#pay").await;
    b.wait_until("#instructions to show", Duration::from_secs(5), || async {
        let Some(el) = b.try_find("#instructions").await? else { return Ok(None) };
        let hidden = el.try_prop("hidden").await?;
        Ok((hidden.as_deref() == Some("false")).then_some(()))
    })
    .await;
    b.execute("document.getElementById('instructions').scrollIntoView({ block: 'center' });", vec![]).await;
    snap(b, &format!("{size}-instructions")).await;
    let text = b.text("#instructions").await;
    assert!(text.contains("Transfer NGN 125,000.00 to") && text.contains("0123456789"), "{text:?}");
}

/// The layout at a phone's and a desktop's size: one full-width column on
/// the phone, a centred card on the desktop, nothing wider than the screen.
/// With `SIKA_SCREENSHOTS` set, each state is saved as a PNG to look at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payer_page_fits_phone_and_desktop() {
    if !browser_available("the_payer_page_fits_phone_and_desktop") {
        return;
    }
    let _one = BROWSER.lock().await;
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let mut pages = Vec::new();
    let mut body = checkout_body("GHS", Some("1250.00"), json!(["mobile_money"]));
    body["email"] = json!("kofi@example.com");
    pages.push(("form", create(&api, &node, "sandbox", "/v1/payment-links", body).await.1));
    let body = checkout_body("NGN", None, json!(["mobile_money", "bank_transfer", "crypto"]));
    pages.push(("methods", create(&api, &node, "sandbox", "/v1/payment-pages", body).await.1));
    // Live XOF by bank transfer: the catalog has the rail, the operator no account.
    let body = checkout_body("XOF", Some("20000"), json!(["bank_transfer"]));
    pages.push(("no-method", create(&api, &node, "live", "/v1/payment-pages", body).await.1));
    let body = checkout_body("GHS", Some("1250.00"), json!(["mobile_money"]));
    pages.push(("live", create(&api, &node, "live", "/v1/payment-links", body).await.1));
    let body = checkout_body("NGN", Some("125000.00"), json!(["bank_transfer"]));
    pages.push(("instructions", create(&api, &node, "live", "/v1/payment-links", body).await.1));
    for (size, viewport) in [("phone", Viewport::PHONE), ("desktop", Viewport::DESKTOP)] {
        let mut b = Browser::start_with(viewport).await;
        b.show_on_failure(&["#status", "#error"]);
        for (name, url) in &pages {
            b.goto(url).await;
            b.find(".card").await;
            let layout = b
                .execute(
                    "var r = document.querySelector('.card').getBoundingClientRect();
                     var d = document.documentElement;
                     return [window.innerWidth, d.scrollWidth, r.left, r.right, d.clientWidth];",
                    vec![],
                )
                .await;
            let [inner, scroll, left, right, client] =
                [0, 1, 2, 3, 4].map(|i| layout[i].as_f64().unwrap_or(-1.0));
            assert_eq!(inner, f64::from(viewport.width), "{name} at {size}");
            assert!(scroll <= inner, "{name} at {size} scrolls sideways: {layout}");
            if viewport.mobile {
                assert!(left == 0.0 && right == inner, "{name}: the card spans the phone: {layout}");
            } else {
                assert!(
                    (left - (client - right)).abs() <= 1.0 && right - left <= 480.0,
                    "{name}: centred: {layout}"
                );
            }
            snap(&b, &format!("{size}-{name}")).await;
            if *name == "instructions" {
                live_instructions(&b, size).await;
            }
        }
        b.quit().await;
    }
    node.stop_and_verify();
}

/// A laptop's window, where the failure message fell below the fold.
const LAPTOP: Viewport = Viewport { width: 1366, height: 900, mobile: false, pixel_ratio: 1.0 };

/// WCAG 2's contrast ratio of two computed CSS colours (`rgb(…)`), in the page.
const CONTRAST_JS: &str = "
    function luminance(colour) {
      var c = colour.match(/[0-9.]+/g).slice(0, 3).map(function (v) {
        v = Number(v) / 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
      });
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    }
    function ratio(a, b) {
      var x = luminance(a), y = luminance(b);
      return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
    }";

/// The contrast of `text`'s colour on `background`'s background colour.
async fn contrast(b: &Browser, text: &str, background: &str) -> f64 {
    let script = format!(
        "{CONTRAST_JS}
         var fg = getComputedStyle(document.querySelector(arguments[0])).color;
         var bg = getComputedStyle(document.querySelector(arguments[1])).backgroundColor;
         return ratio(fg, bg);"
    );
    let value = b.execute(&script, vec![json!(text), json!(background)]).await;
    value.as_f64().unwrap_or_else(|| panic!("a contrast ratio: {value}"))
}

/// `[top, bottom, window height]` of the element matching `css`.
async fn position(b: &Browser, css: &str) -> [f64; 3] {
    let value = b
        .execute(
            "var r = document.querySelector(arguments[0]).getBoundingClientRect();
             return [r.top, r.bottom, window.innerHeight];",
            vec![json!(css)],
        )
        .await;
    [0, 1, 2].map(|i| value[i].as_f64().unwrap_or(f64::NAN))
}

/// Whether all of the element matching `css` is in the window (to the
/// pixel: layout positions are fractional).
async fn wholly_in_view(b: &Browser, css: &str) -> bool {
    let [top, bottom, height] = position(b, css).await;
    top >= -1.0 && bottom <= height + 1.0
}

/// A checkout long enough that, on a phone and on a laptop, the Pay
/// button is the last thing on screen once the payer gets to it.
fn long_checkout(currency: &str, amount: Option<&str>, methods: Value) -> Value {
    let mut body = checkout_body(currency, amount, methods);
    body["description"] = json!("Hand woven in Bonwire from cotton and silk. ".repeat(12));
    let mut fields =
        vec![json!({ "name": "order", "type": "text", "required": true, "label": "Order number" })];
    for (name, label) in
        [("size", "Size"), ("colour", "Colour"), ("gift", "Gift message"), ("notes", "Notes")]
    {
        fields.push(json!({ "name": name, "type": "text", "required": false, "label": label }));
    }
    body["customFields"] = json!(fields);
    body
}

/// Puts the Pay button at the bottom edge of the window, where a payer
/// who has just filled the form in sees it, and presses it.
async fn press_pay_at_the_bottom(b: &Browser) {
    b.execute("document.getElementById('pay').scrollIntoView({ block: 'end' });", vec![]).await;
    let [top, bottom, height] = position(b, "#status").await;
    assert!(top >= height - 1.0, "the status starts below the fold before Pay: {top} {bottom} {height}");
    b.click("#pay").await;
}

/// The organization's name, as the operator's API has it.
async fn organization_name(api: &Api, node: &Node) -> String {
    let r = api.get(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token).await;
    r.expect(200);
    r.body["data"][0]["name"].as_str().unwrap_or_else(|| panic!("a name: {}", r.text)).to_string()
}

/// Issue 30.3, 30.5, 30.6 and 30.7 on a phone (390×844): after Pay the
/// status and the instructions come into view; the crypto instructions
/// carry the address with a copy button and a QR code (loaded under the
/// page's policy), the countdown to the session's expiry, the rate and
/// the amount, and a warning to send only on the named network. A yellow
/// accent gets dark text, the footer reads at AA, the payee is the
/// organization when the page names no business, and the required field
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::too_many_lines)]
async fn after_pay_a_phone_shows_the_status_and_the_crypto_instructions() {
    if !browser_available("after_pay_a_phone_shows_the_status_and_the_crypto_instructions") {
        return;
    }
    let _one = BROWSER.lock().await;
    // Real time: the sandbox's x.50 completes after a minute, so the
    // instructions stay up for the test to read.
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "1")]);
    let api = Api::new();
    let organization = organization_name(&api, &node).await;
    let mut body = long_checkout("NGN", Some("5000.50"), json!(["crypto"]));
    body["allowedCryptoAssets"] = json!(["USDT"]);
    body["branding"] = json!({ "accentColor": "#ffff00" });
    let (_, url) = create(&api, &node, "sandbox", "/v1/payment-links", body).await;

    let mut b = Browser::start().await;
    b.show_on_failure(&["#status", "#error", "#instructions"]);
    b.goto(&url).await;
    assert_eq!(b.text("#payee").await, organization, "with no business name, the organization is the payee");
    let on_accent = contrast(&b, "#pay", "#pay").await;
    assert!(on_accent >= 4.5, "the Pay button's text on #ffff00 reads at AA: {on_accent:.2}");
    let footer = contrast(&b, ".footer", "body").await;
    assert!(footer >= 4.5, "the footer reads at AA: {footer:.2}");
    assert_eq!(b.attr("#custom-order", "required").await.as_deref(), Some("true"));
    assert_eq!(b.attr("#custom-order", "aria-required").await.as_deref(), Some("true"));
    assert_eq!(b.attr("#custom-size", "required").await, None);
    assert_eq!(b.text("label[for=email]").await, "Email (optional)");
    snap(&b, "phone-yellow").await;

    // The required field first: its sentence, beside it.
    press_pay_at_the_bottom(&b).await;
    assert_eq!(error_text(&b).await, "Fill in Order number.");
    b.fill("#custom-order", "A-17").await;
    b.find("select#coin").await.select_value("USDT|tron").await;
    press_pay_at_the_bottom(&b).await;
    b.wait_until("#instructions to show", Duration::from_secs(10), || async {
        let hidden = b.find("#instructions").await.try_prop("hidden").await?;
        Ok((hidden.as_deref() == Some("false")).then_some(()))
    })
    .await;
    assert!(
        wholly_in_view(&b, "#status").await,
        "the status is in view after Pay: {:?}",
        position(&b, "#status").await
    );
    let [top, _, height] = position(&b, "#instructions").await;
    assert!(top >= 0.0 && top < height / 2.0, "the instructions start in view: {top} of {height}");
    assert_eq!(b.text("#status").await, "Waiting for your coins to arrive\u{2026}");

    let address = b.text("#address").await;
    assert!(address.starts_with('T') && address.len() == 34, "a Tron address: {address}");
    let warning = b.text("#network-warning").await;
    assert!(warning.starts_with("Send only USDT on the Tron network."), "{warning}");
    let text = b.text("#instructions").await;
    assert!(text.contains("Rate\n1 USDT = NGN 1,534.5"), "the rate: {text:?}");
    assert!(text.contains("Amount due\nNGN 5,000.50"), "{text:?}");
    let origin = "3.258717"; // 5000.50 / 1534.5, rounded up to USDT's 6 digits
    assert!(text.contains(&format!("Send USDT {origin} on Tron to")), "{text:?}");
    let countdown = b.text("#countdown").await;
    let left = countdown.strip_prefix("Send within ").and_then(|rest| rest.split(';').next()).unwrap_or("");
    assert!(
        ["29:5", "30:00"].iter().any(|start| left.starts_with(start)) && left.len() == 5,
        "thirty minutes, counting down: {countdown:?}"
    );
    // Loaded, so the page's policy let it load: an image of its own origin.
    let qr = b
        .wait_until("the QR code to load", Duration::from_secs(10), || async {
            let img = "var img = document.getElementById('address-qr');
                       return img.complete ? img.naturalWidth : 0;";
            let width = b.execute(img, vec![]).await.as_u64().unwrap_or(0);
            Ok((width > 0).then_some(width))
        })
        .await;
    assert!(qr >= 184, "an SVG QR code of at least 184 px: {qr}");
    snap(&b, "phone-crypto-instructions").await;

    b.click("#copy-address").await;
    let copied = b
        .wait_until("the copy button to answer", Duration::from_secs(5), || async {
            let text = b.find("#copy-address").await.try_text().await?;
            Ok((text != "Copy address").then_some(text))
        })
        .await;
    if copied != "Copied" {
        // No clipboard in this browser: the address is selected to copy by hand.
        let selected = b.execute("return String(window.getSelection());", vec![]).await;
        assert_eq!(selected, json!(address), "{copied}");
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_ne!(b.text("#countdown").await, countdown, "the countdown moves");
    b.quit().await;
    node.stop_and_verify();
}

/// Issue 30.3 and 30.4 on a laptop (1366×900): the payer types `1,500.51`
/// as the page writes amounts and a local wallet number; the phone's help
/// follows the network's country; the failure comes into view, in the
/// payer's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_comes_into_view_on_a_laptop_in_the_payers_words() {
    if !browser_available("a_failure_comes_into_view_on_a_laptop_in_the_payers_words") {
        return;
    }
    let _one = BROWSER.lock().await;
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, url) = create(
        &api,
        &node,
        "sandbox",
        "/v1/payment-pages",
        long_checkout("GHS", None, json!(["mobile_money"])),
    )
    .await;
    let (_, xof) = create(
        &api,
        &node,
        "sandbox",
        "/v1/payment-pages",
        checkout_body("XOF", None, json!(["mobile_money"])),
    )
    .await;

    let mut b = Browser::start_with(LAPTOP).await;
    b.show_on_failure(&["#status", "#error", "#phone-hint"]);
    // The phone's help is the chosen network's country's.
    b.goto(&xof).await;
    b.find("select#network").await.select_value("orange_sn").await;
    assert_eq!(b.text("#phone-hint").await, "A Senegal number, like 771234567 or +221771234567.");
    assert_eq!(b.attr("#phone", "placeholder").await.as_deref(), Some("771234567"));
    b.find("select#network").await.select_value("orange_ci").await;
    assert_eq!(b.text("#phone-hint").await, "A Côte d'Ivoire number, like 0701234567 or +2250701234567.");

    b.goto(&url).await;
    assert_eq!(b.text("#phone-hint").await, "A Ghana number, like 0241234567 or +233241234567.");
    b.fill("#amount", "1,500.51").await;
    assert_eq!(b.text("#pay").await, "Pay GHS 1,500.51", "the button reads the grouped amount");
    b.fill("#custom-order", "A-17").await;
    b.find("select#network").await.select_value("mtn_gh").await;
    b.fill("#phone", "024 123 4567").await;
    press_pay_at_the_bottom(&b).await;
    b.wait_until("#status data-state=failed", Duration::from_secs(20), || state_is(&b, "failed")).await;
    let text = b.text("#status").await;
    assert_eq!(
        text,
        "The payment failed. You declined the charge on your phone. You can try again or choose another method."
    );
    assert!(
        wholly_in_view(&b, "#status").await,
        "the failure is in view: {:?}",
        position(&b, "#status").await
    );
    snap(&b, "laptop-failed").await;
    b.quit().await;
    node.stop_and_verify();
}
