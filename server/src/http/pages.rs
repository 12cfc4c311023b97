//! The hosted checkout page: server-rendered HTML with a little plain
//! JavaScript (no build step). The script posts the payer's attempt to
//! `/pay/{id}/sessions` and polls the session until it settles.
//!
//! What the payer reads is written for the payer: amounts as
//! `GHS 1,250.00`, the API's validation errors turned into sentences next
//! to the field they concern, a receipt once a link is paid, and a banner
//! on every sandbox page so nobody mistakes a test for a payment.

use serde_json::{Value, json};
use sika_api::payment_links::PaymentLinkStatus;
use sika_api::payment_pages::PaymentPageStatus;
use sika_engine::Currency;

use crate::domain::checkout::pay::{crypto_rails, methods_of_kind, offered_methods};
use crate::domain::checkout::{LinkState, PaymentLink, PaymentPage, Settings, link_state, page_status};
use crate::domain::error::ApiResult;
use crate::domain::render::amount;
use crate::domain::stack::{Stack, StackKind};

/// The accent of pages that have no branding of their own (the 404).
const ACCENT_DEFAULT: &str = "#1a7f5a";

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Inserts thousands separators into a decimal amount: `1250.00` reads
/// `1,250.00`. The fraction is left as it is.
fn group_thousands(plain: &str) -> String {
    let (sign, unsigned) = plain.strip_prefix('-').map_or(("", plain), |rest| ("-", rest));
    let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
    let mut out = String::from(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// An amount as the payer reads it: `GHS 1,250.00` (XOF `XOF 2,500`).
fn money(currency: &str, minor: i128) -> String {
    format!("{currency} {}", group_thousands(&amount(currency, minor)))
}

/// The currency's fraction digits; 2 for a code the node does not know.
fn scale_of(currency: &str) -> u32 {
    Currency::find(currency).map_or(2, |c| c.scale)
}

/// What a hosted address shows.
pub(crate) enum Target<'a> {
    Page(&'a PaymentPage),
    Link(&'a PaymentLink),
    Missing,
}

/// Renders the page for `target`; returns (HTTP status, HTML).
pub(crate) fn render(
    stack: &Stack,
    snapshot: &sika_engine::Snapshot,
    target: Target<'_>,
) -> ApiResult<Rendered> {
    let now = stack.now_ms();
    let sandbox = stack.kind == StackKind::Sandbox;
    let (settings, body) = match target {
        Target::Missing => {
            let body = notice(
                "This checkout link does not exist",
                "Check the address you were given, or ask the merchant for a new link.",
            );
            let (html, content_security_policy) = shell(sandbox, "Not found", ACCENT_DEFAULT, &body);
            return Ok(Rendered { status: 404, html, content_security_policy });
        }
        Target::Page(page) if suspended(stack, &page.organization) => {
            (&page.settings, suspended_body(&page.settings))
        }
        Target::Link(link) if suspended(stack, &link.organization) => {
            (&link.settings, suspended_body(&link.settings))
        }
        Target::Page(page) => (&page.settings, page_body(stack, page, now)),
        Target::Link(link) => (&link.settings, link_body(stack, snapshot, link, now)?),
    };
    let accent = settings.branding.accent_color.as_str();
    let accent = if accent.is_empty() { ACCENT_DEFAULT } else { accent };
    let (html, content_security_policy) = shell(sandbox, &settings.title, accent, &body);
    Ok(Rendered { status: 200, html, content_security_policy })
}

/// Whether the operator suspended the organization a page belongs to.
fn suspended(stack: &Stack, organization: &str) -> bool {
    stack.identity.organization(organization).is_some_and(|o| o.suspended)
}

/// A suspended merchant's page: no form, and a reason a payer understands.
fn suspended_body(settings: &Settings) -> String {
    let mut body = header(settings, None);
    body.push_str(&notice(
        "This merchant is not taking payments right now",
        "No payment can be made here at the moment. Contact the merchant for another way to pay.",
    ));
    body
}

/// What the checkout form needs to know about the page or link it pays.
struct Checkout<'a> {
    id: &'a str,
    settings: &'a Settings,
    /// The link's email, filled in for the payer.
    email: Option<&'a str>,
    /// The amount due in full, when the merchant set it (or the payer's
    /// first payment on an open amount fixed it).
    due: Option<i128>,
    remaining: Option<i128>,
    received: i128,
}

fn page_body(stack: &Stack, page: &PaymentPage, now: i64) -> String {
    let mut body = header(&page.settings, page.amount);
    if page_status(page, now) != PaymentPageStatus::Active {
        body.push_str(&notice(
            "This payment page is closed",
            "The merchant is no longer taking payments here.",
        ));
        return body;
    }
    let checkout = Checkout {
        id: &page.id,
        settings: &page.settings,
        email: None,
        due: page.amount,
        remaining: page.amount,
        received: 0,
    };
    body.push_str(&checkout_or_refusal(stack, &checkout));
    body
}

fn link_body(
    stack: &Stack,
    snapshot: &sika_engine::Snapshot,
    link: &PaymentLink,
    now: i64,
) -> ApiResult<String> {
    let state = link_state(snapshot, link, now)?;
    let due = link.amount.or(state.amount.filter(|_| state.total_received > 0));
    let ended = match state.status {
        PaymentLinkStatus::Paid => {
            let mut body = header(&link.settings, None);
            body.push_str(&receipt(snapshot, &link.settings, &state)?);
            return Ok(body);
        }
        PaymentLinkStatus::Closed => {
            Some(("This payment link is closed", "The merchant closed it. Ask them for a new link."))
        }
        PaymentLinkStatus::Expired => Some((
            "This payment link has expired",
            "Its payment window has ended. Ask the merchant for a new link.",
        )),
        PaymentLinkStatus::Active => None,
    };
    let mut body = header(&link.settings, due);
    if let Some((title, text)) = ended {
        body.push_str(&notice(title, text));
        return Ok(body);
    }
    let checkout = Checkout {
        id: &link.id,
        settings: &link.settings,
        email: link.email.as_deref(),
        due,
        remaining: state.remaining,
        received: state.total_received,
    };
    body.push_str(&checkout_or_refusal(stack, &checkout));
    Ok(body)
}

/// The form and its script, or, when no method can take this currency
/// here, a message saying so and no Pay button at all.
fn checkout_or_refusal(stack: &Stack, checkout: &Checkout<'_>) -> String {
    let offered = offered_methods(stack, checkout.settings);
    if offered.is_empty() {
        return refusal(checkout.settings);
    }
    let mut out = form(stack, checkout, &offered);
    out.push_str(&script(checkout));
    out
}

fn refusal(settings: &Settings) -> String {
    let currency = &settings.currency;
    let merchant = if settings.branding.business_name.is_empty() {
        "This merchant"
    } else {
        settings.branding.business_name.as_str()
    };
    format!(
        "<section class=\"notice\" id=\"no-methods\" role=\"alert\"><h2>Payments in {c} are not available</h2>\
         <p>{m} cannot take payments in {c} right now. Try again later, or ask the merchant for another way to pay.</p></section>\n",
        c = escape(currency),
        m = escape(merchant),
    )
}

/// The receipt a paid link shows: what was paid, to whom, when, and the
/// reference of the payment that completed it.
fn receipt(snapshot: &sika_engine::Snapshot, settings: &Settings, state: &LinkState) -> ApiResult<String> {
    let currency = &settings.currency;
    let completing = state.covering.as_ref();
    // The payment's reference is its session's id, which the checkout gives
    // its collection as the external reference.
    let reference = match completing {
        Some(arrival) => snapshot.collection(&arrival.collection_id)?.map(|c| c.external_reference),
        None => None,
    };
    let paid_at = completing
        .map(|arrival| arrival.completed_at)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|at| at.format("%-d %b %Y, %H:%M UTC").to_string());
    let merchant = if settings.branding.business_name.is_empty() {
        &settings.title
    } else {
        &settings.branding.business_name
    };
    let payments = state.payments;
    let mut rows = vec![("Amount paid", "receipt-amount", money(currency, state.total_received))];
    if payments > 1 {
        rows.push(("Payments", "receipt-payments", payments.to_string()));
    }
    rows.push(("Paid to", "receipt-merchant", merchant.clone()));
    if let Some(at) = paid_at {
        rows.push(("Date", "receipt-date", at));
    }
    if let Some(reference) = reference {
        rows.push(("Reference", "receipt-reference", reference));
    }
    let mut out = String::from(
        "<section class=\"notice receipt\" id=\"receipt\"><p class=\"tick\" aria-hidden=\"true\">&#10003;</p>\
         <h2>This payment link has been paid</h2><p>Thank you. Nothing more is due.</p>\n<dl>\n",
    );
    for (term, id, value) in rows {
        out.push_str(&format!("<div><dt>{term}</dt><dd id=\"{id}\">{}</dd></div>\n", escape(&value)));
    }
    out.push_str("</dl></section>\n");
    Ok(out)
}

/// A rendered page: its status, its HTML and the Content-Security-Policy
/// it is sent with.
pub(crate) struct Rendered {
    pub status: u16,
    pub html: String,
    pub content_security_policy: String,
}

/// Nothing runs or loads but what the page itself holds: its one script
/// and its one style element, each named by its SHA-256 (so no inline
/// script or style anyone manages to inject is run), requests to its own
/// origin only, and no framing.
fn content_security_policy(style: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash =
        |text: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(text.as_bytes()));
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src https: http: data:; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        hash(SCRIPT),
        hash(style)
    )
}

fn shell(sandbox: bool, title: &str, accent: &str, body: &str) -> (String, String) {
    // Every sandbox page says so, so a payer never mistakes a test for a payment.
    let banner = if sandbox {
        "<p class=\"test-mode\" id=\"test-mode\" role=\"note\">Test mode \u{2014} no real money moves</p>\n"
    } else {
        ""
    };
    let style = format!(":root{{--accent:{}}}{STYLE}", escape(accent));
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{style}</style>\n</head>\n\
         <body>\n{banner}<main>\n<div class=\"card\">\n{body}</div>\n\
         <p class=\"footer\">Secure checkout by Sika</p>\n</main>\n</body>\n</html>\n",
        title = escape(title),
    );
    let policy = content_security_policy(&style);
    (html, policy)
}

fn notice(title: &str, text: &str) -> String {
    format!(
        "<section class=\"notice\" id=\"notice\"><h2>{}</h2><p>{}</p></section>\n",
        escape(title),
        escape(text)
    )
}

/// The summary at the top of the card: who is asking, for what, and how much.
fn header(settings: &Settings, due: Option<i128>) -> String {
    let mut out = String::from("<header>");
    if !settings.branding.logo_url.is_empty() {
        out.push_str(&format!(
            "<img class=\"logo\" src=\"{}\" alt=\"\">",
            escape(&settings.branding.logo_url)
        ));
    }
    if !settings.branding.business_name.is_empty() {
        out.push_str(&format!("<p class=\"business\">{}</p>", escape(&settings.branding.business_name)));
    }
    out.push_str(&format!("<h1>{}</h1>", escape(&settings.title)));
    if let Some(total) = due {
        let currency = &settings.currency;
        out.push_str(&format!(
            "<p class=\"amount\" id=\"amount-due\"><span class=\"currency\">{}</span> {}</p>",
            escape(currency),
            escape(&group_thousands(&amount(currency, total))),
        ));
    }
    if !settings.description.is_empty() {
        out.push_str(&format!("<p class=\"description\">{}</p>", escape(&settings.description)));
    }
    out.push_str("</header>\n");
    out
}

/// The payer's form: the amount, their details, how they pay, and the Pay
/// button with the amount on it.
fn form(stack: &Stack, checkout: &Checkout<'_>, offered: &[&str]) -> String {
    let id = checkout.id;
    let mut out = format!(
        "<form id=\"checkout\" data-target=\"{}\" data-link-id=\"{}\" novalidate>\n<div id=\"fields\">\n",
        escape(id),
        if id.starts_with("pl_") { escape(id) } else { String::new() }
    );
    let value = amount_fields(checkout, &mut out);
    contact_fields(checkout, &mut out);
    method_fields(stack, checkout.settings, offered, &mut out);
    let label = match &value {
        Some(minor) => format!("Pay {}", money(&checkout.settings.currency, *minor)),
        None => "Pay".to_string(),
    };
    out.push_str(&format!(
        "</div>\n<p id=\"error\" class=\"error\" role=\"alert\"></p>\n\
         <button id=\"pay\" type=\"submit\">{}</button>\n\
         <section id=\"status\" data-state=\"idle\" aria-live=\"polite\"></section>\n\
         <section id=\"instructions\" hidden></section>\n</form>\n",
        escape(&label)
    ));
    out
}

/// The amount line and field; returns the amount the field starts with.
fn amount_fields(checkout: &Checkout<'_>, out: &mut String) -> Option<i128> {
    let currency = &checkout.settings.currency;
    if checkout.received > 0 {
        out.push_str(&format!(
            "<p class=\"partial\" id=\"remaining\">Already paid {} {c}; remaining {} {c}</p>\n",
            escape(&group_thousands(&amount(currency, checkout.received))),
            escape(&group_thousands(&amount(currency, checkout.remaining.unwrap_or(0)))),
            c = escape(currency),
        ));
    }
    let (label, start) = match checkout.due {
        Some(_) => ("Amount to pay now", checkout.remaining.filter(|r| *r > 0)),
        None => ("Amount", None),
    };
    // The field holds plain digits (what the API takes); only the text around it is grouped.
    let value = start.map(|minor| amount(currency, minor)).unwrap_or_default();
    let placeholder = if scale_of(currency) == 0 { "0" } else { "0.00" };
    out.push_str(&format!(
        "<label for=\"amount\">{label} ({c})</label>\n\
         <input id=\"amount\" name=\"amount\" inputmode=\"decimal\" autocomplete=\"off\" value=\"{v}\" placeholder=\"{placeholder}\">\n",
        c = escape(currency),
        v = escape(&value),
    ));
    start
}

/// The email (the link's, when it has one) and the merchant's custom fields.
fn contact_fields(checkout: &Checkout<'_>, out: &mut String) {
    out.push_str(&format!(
        "<label for=\"email\">Email (for your receipt, optional)</label>\n\
         <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\" value=\"{}\">\n",
        escape(checkout.email.unwrap_or_default())
    ));
    for field in &checkout.settings.custom_fields {
        let input_type = match field.kind.as_str() {
            "number" => "number",
            "email" => "email",
            "phone" => "tel",
            "date" => "date",
            _ => "text",
        };
        out.push_str(&format!(
            "<label for=\"custom-{n}\">{l}{r}</label>\n<input id=\"custom-{n}\" name=\"custom:{n}\" type=\"{input_type}\"{req}>\n",
            n = escape(&field.name),
            l = escape(&field.label),
            r = if field.required { " *" } else { "" },
            req = if field.required { " data-required=\"true\"" } else { "" },
        ));
    }
}

/// The methods to choose from and each one's details.
fn method_fields(stack: &Stack, settings: &Settings, offered: &[&str], out: &mut String) {
    let currency = &settings.currency;
    out.push_str("<fieldset class=\"methods\" id=\"methods\"><legend>Pay with</legend>\n");
    for method in offered {
        let label = match *method {
            "mobile_money" => "Mobile money",
            "bank_transfer" => "Bank transfer",
            _ => "Stablecoins",
        };
        out.push_str(&format!(
            "<label class=\"method\"><input type=\"radio\" name=\"method\" value=\"{method}\"{checked}> {label}</label>\n",
            checked = if offered.len() == 1 { " checked" } else { "" },
        ));
    }
    out.push_str("</fieldset>\n");
    if offered.contains(&"mobile_money") {
        out.push_str("<div class=\"details\" data-method=\"mobile_money\" hidden>\n<label for=\"network\">Network</label>\n<select id=\"network\" name=\"network\">\n");
        for m in methods_of_kind(stack, currency, "mobile_money") {
            out.push_str(&format!("<option value=\"{}\">{}</option>\n", escape(&m.code), escape(&m.name)));
        }
        out.push_str(
            "</select>\n<label for=\"phone\">Wallet number</label>\n\
             <input id=\"phone\" name=\"phone\" type=\"tel\" autocomplete=\"tel\" placeholder=\"+233241234567\">\n\
             <p class=\"hint\">You will get a prompt on your phone to approve.</p>\n</div>\n",
        );
    }
    if offered.contains(&"bank_transfer") {
        out.push_str(
            "<div class=\"details\" data-method=\"bank_transfer\" hidden>\n\
             <p class=\"hint\">You will get account details to transfer the amount into.</p>\n</div>\n",
        );
    }
    if offered.contains(&"crypto") {
        out.push_str("<div class=\"details\" data-method=\"crypto\" hidden>\n<label for=\"coin\">Coin and network</label>\n<select id=\"coin\" name=\"coin\">\n");
        for m in crypto_rails(stack, settings) {
            out.push_str(&format!(
                "<option value=\"{}|{}\">{}</option>\n",
                escape(m.currency()),
                escape(m.chain.as_deref().unwrap_or("")),
                escape(&m.name)
            ));
        }
        out.push_str(
            "</select>\n<p class=\"hint\">You will get an address to send the coins to.</p>\n</div>\n",
        );
    }
}

/// The data the script reads, then the script.
fn script(checkout: &Checkout<'_>) -> String {
    let currency = &checkout.settings.currency;
    let data = json!({
        "id": checkout.id,
        "currency": currency,
        "scale": scale_of(currency),
        "redirectUrl": checkout.settings.redirect_url,
        "messages": payer_messages(currency),
    });
    // `<` is escaped so the JSON cannot close its script element.
    let data = data.to_string().replace('<', "\\u003c");
    format!(
        "<script type=\"application/json\" id=\"checkout-data\">{data}</script>\n<script>{SCRIPT}</script>\n"
    )
}

/// The sentences the script shows a payer instead of the API's errors,
/// which name fields for developers (`amount: amount has 3 fraction
/// digits ...`). The script picks one by the error's `details.field` and
/// `details.reason`; `{label}`, `{method}`, `{min}` and `{max}` are filled in there.
fn payer_messages(currency: &str) -> Value {
    let scale = scale_of(currency);
    let decimals = match scale {
        0 => "Enter a whole amount, with no decimals.".to_string(),
        1 => "Enter an amount with at most 1 decimal.".to_string(),
        n => format!("Enter an amount with at most {n} decimals."),
    };
    let example = if scale == 0 { "2500" } else { "25.50" };
    json!({
        "amountMissing": "Enter the amount to pay.",
        "amountNumber": format!("Enter the amount as a number, like {example}."),
        "amountDecimals": decimals,
        "amountPositive": "Enter an amount greater than zero.",
        "amountTooLarge": "That amount is too large to pay here.",
        "amountRange": "{method} takes payments from {min} to {max}. Enter an amount in that range.",
        "method": "Choose how to pay.",
        "methodUnavailable": "That way of paying is not available here. Choose another.",
        "network": "Choose your mobile money network.",
        "phone": "Enter your wallet number with its country code, like +233241234567.",
        "email": "Enter a valid email address, like name@example.com, or leave it empty.",
        "chain": "That coin and network are not accepted here. Choose another.",
        "customRequired": "Fill in {label}.",
        "customLong": "Keep {label} under 500 characters.",
        "customText": "Enter {label} as text.",
        "rateLimited": "Too many attempts from your connection. Wait a moment, then try again.",
        "unavailable": "Payments are paused for a moment. Try again shortly.",
        "offline": "Could not reach the server. Check your connection and try again.",
        "generic": "The payment could not start. Check your details and try again.",
    })
}

const STYLE: &str = r##"
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f2f4f7;color:#1a1f36;line-height:1.45}
.test-mode{margin:0;background:#ffe08a;color:#5c3c00;text-align:center;font-size:.85rem;font-weight:600;padding:7px 12px;border-bottom:1px solid #f0c04a}
main{max-width:440px;margin:0 auto}
.card{background:#fff;border-top:4px solid var(--accent)}
header{padding:20px 20px 8px}
.logo{max-height:40px;max-width:160px;display:block;margin-bottom:10px}
.business{margin:0;color:#5b6478;font-size:.9rem;font-weight:600}
h1{font-size:1.1rem;font-weight:500;margin:.2rem 0 0;color:#3c4257}
.amount{font-size:2.1rem;font-weight:700;margin:.15rem 0 0;letter-spacing:-.01em;font-variant-numeric:tabular-nums}
.amount .currency{font-size:1.05rem;font-weight:600;color:#5b6478;vertical-align:.45em;margin-right:.1em}
.description{margin:.5rem 0 0;color:#5b6478;font-size:.95rem}
form,.notice{padding:8px 20px 22px}
.notice h2{font-size:1.1rem;margin:.6rem 0 .3rem}
.notice p{margin:.3rem 0;color:#3c4257}
.partial{background:#fff6dd;padding:8px 10px;border-radius:6px;font-size:.95rem}
label{display:block;margin:14px 0 5px;font-weight:500;font-size:.92rem;color:#3c4257}
input,select{width:100%;padding:11px 12px;font-size:1rem;border:1px solid #cfd4dc;border-radius:8px;background:#fff;color:inherit}
input:focus,select:focus{outline:2px solid var(--accent);outline-offset:-1px;border-color:transparent}
fieldset{border:0;padding:0;margin:16px 0 0}
legend{font-weight:600;font-size:.92rem;color:#3c4257;padding:0}
label.method{display:flex;gap:10px;align-items:center;font-weight:500;border:1px solid #cfd4dc;border-radius:8px;padding:11px 12px;margin:8px 0 0;color:#1a1f36}
label.method:has(input:checked){border-color:var(--accent);box-shadow:0 0 0 1px var(--accent)}
label.method input{width:auto;margin:0;accent-color:var(--accent)}
.hint{color:#5b6478;font-size:.88rem;margin:6px 0 0}
.error{color:#b00020;font-size:.9rem;margin:6px 0 0}
.error:empty{display:none}
.invalid,.invalid:focus,.methods.invalid label.method{border-color:#b00020;outline-color:#b00020}
button{width:100%;padding:14px;font-size:1.05rem;font-weight:600;border:0;border-radius:8px;background:var(--accent);color:#fff;margin-top:20px;cursor:pointer;-webkit-tap-highlight-color:transparent}
button:disabled{opacity:.6;cursor:default}
#status{margin-top:12px;padding:0}
#status[data-state=processing]{padding:10px 12px;background:#eef3ff;border-radius:8px}
#status[data-state=failed]{padding:10px 12px;background:#fdecee;color:#8a0016;border-radius:8px}
#status[data-state=complete]{padding:12px;background:#e8f7ee;color:#0b5d31;border-radius:8px;font-weight:500}
#instructions{margin-top:12px;background:#f6f7f9;padding:12px;border-radius:8px;overflow-wrap:anywhere}
#instructions p{margin:.25rem 0}
#instructions .key{display:block;color:#5b6478;font-size:.85rem}
.receipt .tick{width:44px;height:44px;border-radius:50%;background:#e8f7ee;color:#0b5d31;font-size:1.5rem;line-height:44px;text-align:center;margin:.4rem 0 0}
.receipt dl{margin:16px 0 0;border-top:1px solid #e6e8ec}
.receipt dl div{display:flex;justify-content:space-between;gap:16px;padding:10px 0;border-bottom:1px solid #e6e8ec}
.receipt dt{color:#5b6478}
.receipt dd{margin:0;font-weight:500;text-align:right;overflow-wrap:anywhere}
#receipt-reference{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem;font-weight:400}
.footer{text-align:center;color:#8792a2;font-size:.8rem;margin:16px 0}
@media (min-width:600px){
main{padding:24px 16px}
.card{border-radius:12px;overflow:hidden;box-shadow:0 1px 3px rgba(16,24,40,.08),0 8px 28px rgba(16,24,40,.08)}
header{padding:28px 28px 8px}
form,.notice{padding:8px 28px 28px}
}
"##;

const SCRIPT: &str = r##"
(function () {
  var data = JSON.parse(document.getElementById('checkout-data').textContent);
  var say = data.messages;
  var form = document.getElementById('checkout');
  var fields = document.getElementById('fields');
  var status = document.getElementById('status');
  var error = document.getElementById('error');
  var button = document.getElementById('pay');
  var instructions = document.getElementById('instructions');
  var amountInput = document.getElementById('amount');
  var target = data.id;
  // The field the shown error is about: it sits next to it until corrected.
  var errorFor = null;

  function setStatus(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = text;
  }
  // 1250.5 -> 1,250.5: thousands separators in the whole part.
  function group(text) {
    var parts = String(text).split('.');
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return parts.join('.');
  }
  function money(text, currency) { return currency + ' ' + group(text); }
  // What the payer typed, at the currency's scale ('' when it is not a positive amount).
  function typedAmount(text) {
    var m = /^(\d+)(?:\.(\d*))?$/.exec(text.trim());
    if (!m || (m[2] || '').length > data.scale || !/[1-9]/.test(m[1] + (m[2] || ''))) { return ''; }
    var fraction = ((m[2] || '') + '000000000000000000').slice(0, data.scale);
    var whole = m[1].replace(/^0+(?=\d)/, '');
    return group(whole) + (data.scale ? '.' + fraction : '');
  }
  function payLabel() {
    var shown = typedAmount(amountInput.value);
    button.textContent = shown ? 'Pay ' + data.currency + ' ' + shown : 'Pay';
  }
  amountInput.addEventListener('input', payLabel);

  function chosenMethod() {
    var checked = form.querySelector('input[name=method]:checked');
    return checked ? checked.value : '';
  }
  function showDetails() {
    var method = chosenMethod();
    form.querySelectorAll('.details').forEach(function (el) {
      el.hidden = el.getAttribute('data-method') !== method;
    });
  }
  form.querySelectorAll('input[name=method]').forEach(function (el) {
    el.addEventListener('change', showDetails);
  });
  showDetails();

  function fieldElement(field) {
    var ids = { amount: 'amount', phone: 'phone', network: 'network', email: 'email', chain: 'coin', method: 'methods' };
    var id = field && (ids[field] || (field.indexOf('customFields.') === 0 ? 'custom-' + field.slice(13) : ''));
    return id ? document.getElementById(id) : null;
  }
  function labelOf(id) {
    var labels = form.getElementsByTagName('label');
    for (var i = 0; i < labels.length; i++) {
      if (labels[i].htmlFor === id) { return labels[i].textContent.replace(/\s*\*$/, ''); }
    }
    return 'this field';
  }
  function clearError() {
    error.textContent = '';
    if (errorFor) { errorFor.classList.remove('invalid'); errorFor.removeAttribute('aria-invalid'); }
    errorFor = null;
    button.insertAdjacentElement('beforebegin', error);
  }
  // Shows `message` next to the field it is about (above the button otherwise).
  function fail(message, field) {
    clearError();
    error.textContent = message;
    var el = fieldElement(field);
    if (!el) { return; }
    el.classList.add('invalid');
    el.setAttribute('aria-invalid', 'true');
    el.insertAdjacentElement('afterend', error);
    errorFor = el;
    if (el.focus) { el.focus(); }
  }
  // Correcting the field clears its error as the payer types.
  function corrected(event) {
    if (errorFor && (event.target === errorFor || errorFor.contains(event.target))) { clearError(); }
  }
  form.addEventListener('input', corrected);
  form.addEventListener('change', corrected);

  // The API names fields for developers; the payer gets a sentence.
  function amountSentence(reason) {
    var range = /^(.*) accepts (\S+) to (\S+) (\S+)$/.exec(reason);
    if (range) {
      return say.amountRange.replace('{method}', range[1])
        .replace('{min}', money(range[2], range[4])).replace('{max}', money(range[3], range[4]));
    }
    if (reason.indexOf('fraction digits') >= 0) { return say.amountDecimals; }
    if (reason.indexOf('not a decimal') >= 0) { return say.amountNumber; }
    if (/zero|negative/.test(reason)) { return say.amountPositive; }
    if (reason.indexOf('maximum') >= 0) { return say.amountTooLarge; }
    return say.amountMissing;
  }
  function sentence(status, body) {
    var details = body.details || {};
    var field = String(details.field || '');
    var reason = String(details.reason || '');
    if (status === 429) { return say.rateLimited; }
    if (status >= 500) { return say.unavailable; }
    if (body.error !== 'validation_error') {
      var text = String(body.message || '');
      return text ? text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.') : say.generic;
    }
    if (field === 'amount') { return amountSentence(reason); }
    if (field === 'method') { return reason.indexOf('not offered') >= 0 ? say.methodUnavailable : say.method; }
    if (field.indexOf('customFields.') === 0) {
      var which = reason.indexOf('required') >= 0 ? say.customRequired
        : reason.indexOf('500') >= 0 ? say.customLong : say.customText;
      return which.replace('{label}', labelOf('custom-' + field.slice(13)));
    }
    return say[field] || say.generic;
  }

  function showInstructions(session) {
    var i = session.instructions;
    if (!i) { instructions.hidden = true; return; }
    var rows = i.type === 'bank_transfer'
      ? ['Transfer ' + money(i.amount, i.currency) + ' to', ['Bank', i.bankName],
         ['Account number', i.accountNumber], ['Account name', i.accountName], ['Reference', i.reference]]
      : ['Send ' + money(i.amount, i.asset) + ' on ' + i.chain + ' to', ['Address', i.address]];
    instructions.textContent = '';
    rows.forEach(function (row) {
      var p = document.createElement('p');
      if (typeof row === 'string') {
        var strong = document.createElement('strong');
        strong.textContent = row;
        p.appendChild(strong);
      } else {
        var key = document.createElement('span');
        key.className = 'key';
        key.textContent = row[0];
        p.appendChild(key);
        p.appendChild(document.createTextNode(row[1]));
      }
      instructions.appendChild(p);
    });
    instructions.hidden = false;
  }

  function redirect(link, session) {
    if (!data.redirectUrl) { return; }
    var url = data.redirectUrl + (data.redirectUrl.indexOf('?') >= 0 ? '&' : '?') +
      'paymentLinkId=' + encodeURIComponent(link.id) + '&sessionId=' + encodeURIComponent(session.id) +
      '&status=complete';
    setTimeout(function () { window.location.assign(url); }, 1500);
  }

  function finish(session, link) {
    button.disabled = false;
    // The attempt is over: what it asked the payer to send no longer applies.
    instructions.hidden = true;
    var paid = money(session.destinationAmount, session.destinationCurrency);
    if (session.status === 'complete' || session.status === 'partial') {
      if (link.status === 'paid') {
        setStatus('complete', 'Payment received. Thank you! ' + paid + ' paid.');
        fields.hidden = true;
        button.hidden = true;
        redirect(link, session);
      } else {
        setStatus('complete', 'Payment received: ' + paid + '. Remaining: ' + money(link.remaining, link.currency) + '.');
        amountInput.value = link.remaining || '';
        payLabel();
      }
    } else {
      setStatus('failed', 'The payment failed: ' + session.statusMessage + '. You can try again or choose another method.');
    }
  }

  function poll(sessionId) {
    fetch('/pay/' + target + '/sessions/' + sessionId).then(function (r) { return r.json(); }).then(function (body) {
      var session = body.session;
      if (!session) { throw new Error(body.message || 'lost the payment'); }
      if (session.status === 'pending') {
        var waiting = session.method === 'mobile_money'
          ? 'Approve the prompt on your phone. Waiting for confirmation…'
          : 'Waiting for your payment to arrive…';
        setStatus('processing', waiting);
        setTimeout(function () { poll(sessionId); }, 500);
      } else {
        finish(session, body.paymentLink);
      }
    }).catch(function () {
      setStatus('processing', 'Connection lost; retrying…');
      setTimeout(function () { poll(sessionId); }, 1500);
    });
  }

  // The request body, or null after showing what the payer must fix first.
  function attempt() {
    var amount = amountInput.value.trim();
    var method = chosenMethod();
    if (!amount) { return fail(say.amountMissing, 'amount'); }
    if (!/^[0-9]+(\.[0-9]+)?$/.test(amount)) { return fail(say.amountNumber, 'amount'); }
    if (!method) { return fail(say.method, 'method'); }
    var body = { amount: amount, method: method, customFields: {} };
    var email = document.getElementById('email').value.trim();
    if (email) { body.email = email; }
    var missing = null;
    form.querySelectorAll('input[name^="custom:"]').forEach(function (el) {
      var name = el.name.slice(7);
      if (el.value.trim()) { body.customFields[name] = el.value.trim(); }
      else if (el.getAttribute('data-required') && !missing) { missing = name; }
    });
    if (missing) {
      return fail(say.customRequired.replace('{label}', labelOf('custom-' + missing)), 'customFields.' + missing);
    }
    if (method === 'mobile_money') {
      body.network = document.getElementById('network').value;
      body.phone = document.getElementById('phone').value.trim();
      if (!body.phone) { return fail(say.phone, 'phone'); }
    }
    if (method === 'crypto') {
      var coin = document.getElementById('coin').value.split('|');
      body.asset = coin[0];
      body.chain = coin[1];
    }
    return body;
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    clearError();
    var body = attempt();
    if (!body) { return; }
    button.disabled = true;
    setStatus('processing', 'Starting the payment…');
    fetch('/pay/' + target + '/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (json) { return { ok: r.ok, status: r.status, json: json }; });
    }).then(function (res) {
      if (!res.ok) {
        button.disabled = false;
        setStatus('idle', '');
        return fail(sentence(res.status, res.json || {}), res.json.details && res.json.details.field);
      }
      target = res.json.paymentLink.id;
      form.setAttribute('data-link-id', target);
      showInstructions(res.json.session);
      poll(res.json.session.id);
    }).catch(function () {
      button.disabled = false;
      setStatus('idle', '');
      fail(say.offline);
    });
  });
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_with_thousands_separators() {
        assert_eq!(group_thousands("0.50"), "0.50");
        assert_eq!(group_thousands("999.99"), "999.99");
        assert_eq!(group_thousands("1250.00"), "1,250.00");
        assert_eq!(group_thousands("1234567.891234"), "1,234,567.891234");
        assert_eq!(group_thousands("-100000"), "-100,000");
        assert_eq!(money("GHS", 125_000), "GHS 1,250.00");
        assert_eq!(money("XOF", 2_500), "XOF 2,500");
        assert_eq!(money("USDC", 1_250_500_000), "USDC 1,250.500000");
    }

    #[test]
    fn the_decimals_sentence_follows_the_currency() {
        assert_eq!(payer_messages("GHS")["amountDecimals"], "Enter an amount with at most 2 decimals.");
        assert_eq!(payer_messages("XOF")["amountDecimals"], "Enter a whole amount, with no decimals.");
        assert_eq!(payer_messages("USDC")["amountDecimals"], "Enter an amount with at most 6 decimals.");
    }
}
