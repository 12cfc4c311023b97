//! The hosted checkout page: server-rendered HTML with a little plain
//! JavaScript (no build step). The script posts the payer's attempt to
//! `/pay/{id}/sessions` and polls the session until it settles.

use serde_json::json;
use sika_api::payment_links::PaymentLinkStatus;
use sika_api::payment_pages::PaymentPageStatus;

use crate::domain::checkout::pay::{crypto_rails, methods_of_kind, offered_methods};
use crate::domain::checkout::{PaymentLink, PaymentPage, Settings, link_state, page_status};
use crate::domain::error::ApiResult;
use crate::domain::render::amount;
use crate::domain::stack::Stack;

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
) -> ApiResult<(u16, String)> {
    let now = stack.now_ms();
    let (id, settings, fixed, closed_note, remaining, received) = match target {
        Target::Missing => {
            return Ok((
                404,
                shell(
                    "Not found",
                    "#1a7f5a",
                    &notice(
                        "This checkout link does not exist",
                        "Check the address you were given, or ask the merchant for a new link.",
                    ),
                ),
            ));
        }
        Target::Page(page) => {
            let note = (page_status(page, now) != PaymentPageStatus::Active).then_some((
                "This payment page is closed",
                "The merchant is no longer taking payments here.",
            ));
            (&page.id, &page.settings, page.amount, note, page.amount, 0)
        }
        Target::Link(link) => {
            let state = link_state(snapshot, link, now)?;
            let note = match state.status {
                PaymentLinkStatus::Paid => {
                    Some(("This payment link has been paid", "Thank you. Nothing more is due."))
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
            (
                &link.id,
                &link.settings,
                link.amount.or(state.amount.filter(|_| state.total_received > 0)),
                note,
                state.remaining,
                state.total_received,
            )
        }
    };
    let accent = &settings.branding.accent_color;
    let mut body = header(settings);
    if let Some((title, text)) = closed_note {
        body.push_str(&notice(title, text));
        return Ok((200, shell(&settings.title, accent, &body)));
    }
    body.push_str(&form(stack, id, settings, fixed, remaining, received));
    let data = json!({
        "id": id,
        "currency": settings.currency,
        "redirectUrl": settings.redirect_url,
    });
    // `<` is escaped so the JSON cannot close its script element.
    let data = data.to_string().replace('<', "\\u003c");
    body.push_str(&format!(
        "<script type=\"application/json\" id=\"checkout-data\">{data}</script>\n<script>{SCRIPT}</script>\n"
    ));
    Ok((200, shell(&settings.title, accent, &body)))
}

fn shell(title: &str, accent: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>:root{{--accent:{accent}}}{STYLE}</style>\n</head>\n\
         <body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        title = escape(title),
        accent = escape(accent),
    )
}

fn notice(title: &str, text: &str) -> String {
    format!(
        "<section class=\"notice\" id=\"notice\"><h2>{}</h2><p>{}</p></section>\n",
        escape(title),
        escape(text)
    )
}

fn header(settings: &Settings) -> String {
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
    if !settings.description.is_empty() {
        out.push_str(&format!("<p class=\"description\">{}</p>", escape(&settings.description)));
    }
    out.push_str("</header>\n");
    out
}

#[expect(clippy::too_many_lines)]
fn form(
    stack: &Stack,
    id: &str,
    settings: &Settings,
    fixed: Option<i128>,
    remaining: Option<i128>,
    received: i128,
) -> String {
    let currency = &settings.currency;
    let mut out = format!(
        "<form id=\"checkout\" data-target=\"{}\" data-link-id=\"{}\" novalidate>\n",
        escape(id),
        if id.starts_with("pl_") { escape(id) } else { String::new() }
    );
    if let Some(total) = fixed {
        out.push_str(&format!(
            "<p class=\"amount\" id=\"amount-due\">{} <span>{}</span></p>\n",
            escape(&amount(currency, total)),
            escape(currency)
        ));
    }
    if received > 0 {
        out.push_str(&format!(
            "<p class=\"partial\" id=\"remaining\">Already paid {} {c}; remaining {} {c}</p>\n",
            escape(&amount(currency, received)),
            escape(&amount(currency, remaining.unwrap_or(0))),
            c = escape(currency),
        ));
    }
    let (label, value) = match fixed {
        Some(_) => ("Amount to pay now", remaining.map(|r| amount(currency, r)).unwrap_or_default()),
        None => ("Amount", String::new()),
    };
    out.push_str(&format!(
        "<label for=\"amount\">{label} ({c})</label>\n\
         <input id=\"amount\" name=\"amount\" inputmode=\"decimal\" autocomplete=\"off\" value=\"{v}\" placeholder=\"0.00\">\n",
        c = escape(currency),
        v = escape(&value),
    ));
    out.push_str(
        "<label for=\"email\">Email (for your receipt, optional)</label>\n\
         <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\">\n",
    );
    for field in &settings.custom_fields {
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
    let offered = offered_methods(stack, settings);
    out.push_str("<fieldset class=\"methods\"><legend>Pay with</legend>\n");
    if offered.is_empty() {
        out.push_str("<p>No payment method is available for this currency.</p>\n");
    }
    for method in &offered {
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
    out.push_str(
        "<p id=\"error\" class=\"error\" role=\"alert\"></p>\n\
         <button id=\"pay\" type=\"submit\">Pay</button>\n\
         <section id=\"status\" data-state=\"idle\" aria-live=\"polite\"></section>\n\
         <section id=\"instructions\" hidden></section>\n</form>\n",
    );
    out
}

const STYLE: &str = r#"
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1c1e21}
main{max-width:480px;margin:0 auto;padding:16px}
header{background:#fff;border-top:6px solid var(--accent);border-radius:8px;padding:16px;margin-bottom:12px}
.logo{max-height:48px;max-width:160px;display:block;margin-bottom:8px}
.business{margin:0;color:#555;font-size:.9rem}
h1{font-size:1.35rem;margin:.2rem 0}
.description{margin:.4rem 0 0;color:#444}
form,.notice{background:#fff;border-radius:8px;padding:16px}
.amount{font-size:1.8rem;font-weight:600;margin:0 0 8px}
.amount span{font-size:1rem;color:#555}
.partial{background:#fff8e1;padding:8px;border-radius:6px}
label{display:block;margin:12px 0 4px;font-weight:500}
input,select{width:100%;padding:10px;font-size:1rem;border:1px solid #c9ccd1;border-radius:6px}
fieldset{border:0;padding:0;margin:12px 0}
legend{font-weight:600}
label.method{display:flex;gap:8px;align-items:center;font-weight:400;border:1px solid #c9ccd1;border-radius:6px;padding:10px;margin:6px 0}
label.method input{width:auto}
.hint{color:#555;font-size:.9rem}
.error{color:#b00020;min-height:1.2em}
.invalid{border-color:#b00020}
button{width:100%;padding:14px;font-size:1.1rem;border:0;border-radius:6px;background:var(--accent);color:#fff;margin-top:8px}
button:disabled{opacity:.6}
#status{margin-top:12px;padding:0}
#status[data-state=processing]{padding:10px;background:#eef3ff;border-radius:6px}
#status[data-state=failed]{padding:10px;background:#fdecee;color:#8a0016;border-radius:6px}
#status[data-state=complete]{padding:10px;background:#e8f7ee;color:#0b5d31;border-radius:6px}
#instructions{margin-top:12px;background:#f6f7f9;padding:10px;border-radius:6px;word-break:break-all}
"#;

const SCRIPT: &str = r#"
(function () {
  var data = JSON.parse(document.getElementById('checkout-data').textContent);
  var form = document.getElementById('checkout');
  var status = document.getElementById('status');
  var error = document.getElementById('error');
  var button = document.getElementById('pay');
  var instructions = document.getElementById('instructions');
  var target = data.id;

  function setStatus(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = text;
  }
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

  function fail(message, field) {
    error.textContent = message;
    form.querySelectorAll('.invalid').forEach(function (el) { el.classList.remove('invalid'); });
    var names = { amount: 'amount', phone: 'phone', network: 'network', email: 'email', chain: 'coin' };
    var id = field && (names[field] || (field.indexOf('customFields.') === 0 ? 'custom-' + field.slice(13) : ''));
    var el = id && document.getElementById(id);
    if (el) { el.classList.add('invalid'); el.focus(); }
  }

  function showInstructions(session) {
    var i = session.instructions;
    if (!i) { instructions.hidden = true; return; }
    var lines = i.type === 'bank_transfer'
      ? ['Transfer ' + i.amount + ' ' + i.currency + ' to:', 'Bank: ' + i.bankName,
         'Account number: ' + i.accountNumber, 'Account name: ' + i.accountName, 'Reference: ' + i.reference]
      : ['Send ' + i.amount + ' ' + i.asset + ' on ' + i.chain + ' to:', i.address];
    instructions.textContent = '';
    lines.forEach(function (line) {
      var p = document.createElement('p');
      p.textContent = line;
      instructions.appendChild(p);
    });
    instructions.hidden = false;
  }

  function finish(session, link) {
    button.disabled = false;
    if (session.status === 'complete' || session.status === 'partial') {
      if (link.status === 'paid') {
        setStatus('complete', 'Payment received. Thank you! ' + session.destinationAmount + ' ' + session.destinationCurrency + ' paid.');
        button.hidden = true;
        if (data.redirectUrl) {
          var url = data.redirectUrl + (data.redirectUrl.indexOf('?') >= 0 ? '&' : '?') +
            'paymentLinkId=' + encodeURIComponent(link.id) + '&sessionId=' + encodeURIComponent(session.id) +
            '&status=complete';
          setTimeout(function () { window.location.assign(url); }, 1500);
        }
      } else {
        setStatus('complete', 'Payment received: ' + session.destinationAmount + ' ' + session.destinationCurrency +
          '. Remaining: ' + link.remaining + ' ' + link.currency + '.');
        document.getElementById('amount').value = link.remaining || '';
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

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    error.textContent = '';
    var amount = document.getElementById('amount').value.trim();
    var method = chosenMethod();
    if (!amount) { return fail('Enter the amount to pay.', 'amount'); }
    if (!/^[0-9]+(\.[0-9]+)?$/.test(amount)) { return fail('Enter the amount as a number, like 25.00.', 'amount'); }
    if (!method) { return fail('Choose how to pay.', 'method'); }
    var body = { amount: amount, method: method, customFields: {} };
    var email = document.getElementById('email').value.trim();
    if (email) { body.email = email; }
    var missing = null;
    form.querySelectorAll('input[name^="custom:"]').forEach(function (el) {
      var name = el.name.slice(7);
      if (el.value.trim()) { body.customFields[name] = el.value.trim(); }
      else if (el.getAttribute('data-required') && !missing) { missing = name; }
    });
    if (missing) { return fail('Fill in every field marked *.', 'customFields.' + missing); }
    if (method === 'mobile_money') {
      body.network = document.getElementById('network').value;
      body.phone = document.getElementById('phone').value.trim();
      if (!body.phone) { return fail('Enter your wallet number.', 'phone'); }
    }
    if (method === 'crypto') {
      var coin = document.getElementById('coin').value.split('|');
      body.asset = coin[0];
      body.chain = coin[1];
    }
    button.disabled = true;
    setStatus('processing', 'Starting the payment…');
    fetch('/pay/' + target + '/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (json) { return { ok: r.ok, json: json }; });
    }).then(function (res) {
      if (!res.ok) {
        button.disabled = false;
        setStatus('idle', '');
        return fail(res.json.message || 'The payment could not start.', res.json.details && res.json.details.field);
      }
      target = res.json.paymentLink.id;
      form.setAttribute('data-link-id', target);
      showInstructions(res.json.session);
      poll(res.json.session.id);
    }).catch(function () {
      button.disabled = false;
      setStatus('idle', '');
      fail('Could not reach the server. Check your connection and try again.');
    });
  });
})();
"#;
