//! The hosted checkout page (`templates/pay/`): server-rendered HTML with a
//! little plain JavaScript (no build step). The script posts the payer's
//! attempt to `/pay/{id}/sessions` and polls the session until it settles.
//!
//! What the payer reads is written for the payer: amounts as
//! `GHS 1,250.00`, the API's validation errors turned into sentences next
//! to the field they concern, whom they pay, a receipt once a link is paid,
//! and a banner on every sandbox page so nobody mistakes a test for a
//! payment. This module only gathers what the templates show; every value
//! is escaped by the template.

use askama::Template;
use serde_json::{Value, json};
use sika_api::payment_links::PaymentLinkStatus;
use sika_api::payment_pages::PaymentPageStatus;

use super::shell::{ACCENT_DEFAULT, InlineStyle, ScriptJson, Shell, content_security_policy};
use sika_engine::Currency;

use super::text::{grouped, money};
use crate::domain::checkout::pay::{crypto_rails, methods_of_kind, offered_methods};
use crate::domain::checkout::phone::PhoneFormat;
use crate::domain::checkout::sessions::Hosted;
use crate::domain::checkout::{
    Deps, LinkState, PaymentLink, PaymentPage, Settings, link_state, page_status, payee,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::amount;
use crate::domain::stack_kind::StackKind;

/// The checkout's stylesheet and script, compiled in; the page's
/// Content-Security-Policy names each by its hash.
const STYLESHEET: &str = include_str!("../../../templates/pay/checkout.css");
const SCRIPT: &str = include_str!("../../../templates/pay/checkout.js");

#[derive(Template)]
#[template(path = "pay/page.html")]
struct CheckoutPage {
    shell: Shell,
    header: Option<Header>,
    content: Content,
}

/// The summary at the top of the card: whom the payer pays, for what, and how much.
struct Header {
    logo_url: String,
    payee: String,
    title: String,
    currency: String,
    /// The amount due, grouped (`1,250.00`).
    due: Option<String>,
    description: String,
}

enum Content {
    Notice(Notice),
    Refusal(Refusal),
    Receipt(Receipt),
    Form(Box<Form>),
}

struct Notice {
    title: &'static str,
    text: &'static str,
}

/// No method can take the page's currency here.
struct Refusal {
    payee: String,
    currency: String,
}

struct Receipt {
    rows: Vec<ReceiptRow>,
}

struct ReceiptRow {
    term: &'static str,
    id: &'static str,
    value: String,
}

/// The payer's form: the amount, their details, how they pay, and the Pay
/// button with the amount on it.
struct Form {
    id: String,
    /// The link the attempts go to, once there is one (a page's payer gets
    /// a link with their first attempt).
    link_id: String,
    currency: String,
    partial: Option<Partial>,
    amount_label: &'static str,
    amount_value: String,
    amount_placeholder: &'static str,
    email: String,
    /// The email field's label: a receipt is promised only when the node
    /// sends email (`[email]`).
    email_label: &'static str,
    custom_fields: Vec<CustomInput>,
    methods: Vec<MethodChoice>,
    mobile_money: Option<MobileMoney>,
    bank_transfer: bool,
    coins: Vec<Choice>,
    pay_label: String,
    /// What the script reads (`#checkout-data`).
    data: ScriptJson,
    script: &'static str,
}

struct Partial {
    received: String,
    remaining: String,
}

struct CustomInput {
    name: String,
    label: String,
    required: bool,
    input_type: &'static str,
}

struct MethodChoice {
    value: &'static str,
    label: &'static str,
    checked: bool,
}

struct Choice {
    value: String,
    label: String,
}

struct MobileMoney {
    networks: Vec<Network>,
    /// The sandbox prompts the payer's phone (simulated); live gives the
    /// operator's merchant number instead.
    prompted: bool,
}

/// A mobile-money network and what a wallet number of its country looks like.
struct Network {
    code: String,
    label: String,
    country: String,
    /// The country's example as its people write it (`0241234567`).
    local: String,
    international: String,
}

/// A rendered page: its status, its HTML and the Content-Security-Policy
/// it is sent with.
pub(crate) struct Rendered {
    pub status: u16,
    pub html: String,
    pub content_security_policy: String,
}

/// Renders the page for `target`.
pub(crate) fn render(
    deps: &Deps<'_>,
    snapshot: &sika_engine::Snapshot,
    target: &Hosted,
) -> ApiResult<Rendered> {
    let now = deps.now_ms();
    let (settings, header, content) = match target {
        Hosted::Missing => {
            let content = Content::Notice(Notice {
                title: "This checkout link does not exist",
                text: "Check the address you were given, or ask the merchant for a new link.",
            });
            return page(deps, "Not found", ACCENT_DEFAULT, None, content, 404);
        }
        Hosted::Page(page) => {
            let header = header(deps, &page.settings, &page.organization, page.amount);
            (&page.settings, header, page_content(deps, page, now))
        }
        Hosted::Link(link) => link_content(deps, snapshot, link, now)?,
    };
    let accent = settings.branding.accent_color.as_str();
    page(deps, &settings.title, accent, Some(header), content, 200)
}

fn page(
    deps: &Deps<'_>,
    title: &str,
    accent: &str,
    header: Option<Header>,
    content: Content,
    status: u16,
) -> ApiResult<Rendered> {
    let style = InlineStyle::new(STYLESHEET, accent);
    let content_security_policy = content_security_policy(SCRIPT, &style);
    let shell = Shell::new(title, deps.kind == StackKind::Sandbox, style);
    let html = CheckoutPage { shell, header, content }.render().map_err(|e| {
        tracing::error!(error = %e, "cannot render the checkout page");
        ApiError::internal_from(e)
    })?;
    Ok(Rendered { status, html, content_security_policy })
}

/// Whether the operator suspended the organization a page belongs to.
fn suspended(deps: &Deps<'_>, organization: &str) -> bool {
    deps.identity.organization(organization).is_some_and(|o| o.suspended)
}

/// A suspended merchant's page: no form, and a reason a payer understands.
const SUSPENDED: Notice = Notice {
    title: "This merchant is not taking payments right now",
    text: "No payment can be made here at the moment. Contact the merchant for another way to pay.",
};

const UNPRICED: Notice = Notice {
    title: "This checkout cannot take payments",
    text: "Its currency is not available here. Contact the merchant for another way to pay.",
};

fn header(deps: &Deps<'_>, settings: &Settings, organization: &str, due: Option<i128>) -> Header {
    Header {
        logo_url: settings.branding.logo_url.clone(),
        payee: payee(deps, settings, organization),
        title: settings.title.clone(),
        currency: settings.currency.clone(),
        due: due.map(|total| grouped(&settings.currency, total)),
        description: settings.description.clone(),
    }
}

/// What the form needs to know about the page or link it pays.
struct Checkout<'a> {
    id: &'a str,
    organization: &'a str,
    settings: &'a Settings,
    /// The link's email, filled in for the payer.
    email: Option<&'a str>,
    /// The amount due in full, when the merchant set it (or the payer's
    /// first payment on an open amount fixed it).
    due: Option<i128>,
    remaining: Option<i128>,
    received: i128,
}

fn page_content(deps: &Deps<'_>, page: &PaymentPage, now: i64) -> Content {
    if suspended(deps, &page.organization) {
        return Content::Notice(SUSPENDED);
    }
    if page_status(page, now) != PaymentPageStatus::Active {
        return Content::Notice(Notice {
            title: "This payment page is closed",
            text: "The merchant is no longer taking payments here.",
        });
    }
    checkout_or_refusal(
        deps,
        &Checkout {
            id: &page.id,
            organization: &page.organization,
            settings: &page.settings,
            email: None,
            due: page.amount,
            remaining: page.amount,
            received: 0,
        },
    )
}

fn link_content<'a>(
    deps: &Deps<'_>,
    snapshot: &sika_engine::Snapshot,
    link: &'a PaymentLink,
    now: i64,
) -> ApiResult<(&'a Settings, Header, Content)> {
    let settings = &link.settings;
    if suspended(deps, &link.organization) {
        return Ok((settings, header(deps, settings, &link.organization, None), Content::Notice(SUSPENDED)));
    }
    let state = link_state(snapshot, link, now)?;
    let due = link.amount.or(state.amount.filter(|_| state.total_received > 0));
    let ended = match state.status {
        PaymentLinkStatus::Paid => {
            let receipt = receipt(deps, snapshot, link, &state)?;
            return Ok((settings, header(deps, settings, &link.organization, None), receipt));
        }
        PaymentLinkStatus::Closed => Some(Notice {
            title: "This payment link is closed",
            text: "The merchant closed it. Ask them for a new link.",
        }),
        PaymentLinkStatus::Expired => Some(Notice {
            title: "This payment link has expired",
            text: "Its payment window has ended. Ask the merchant for a new link.",
        }),
        PaymentLinkStatus::Active => None,
    };
    let header = header(deps, settings, &link.organization, due);
    if let Some(notice) = ended {
        return Ok((settings, header, Content::Notice(notice)));
    }
    let checkout = Checkout {
        id: &link.id,
        organization: &link.organization,
        settings,
        email: link.email.as_deref(),
        due,
        remaining: state.remaining,
        received: state.total_received,
    };
    Ok((settings, header, checkout_or_refusal(deps, &checkout)))
}

/// The form, or, when no method can take this currency here, a message
/// saying so and no Pay button at all.
fn checkout_or_refusal(deps: &Deps<'_>, checkout: &Checkout<'_>) -> Content {
    let offered = offered_methods(deps, checkout.settings);
    if offered.is_empty() {
        return Content::Refusal(Refusal {
            payee: payee(deps, checkout.settings, checkout.organization),
            currency: checkout.settings.currency.clone(),
        });
    }
    // The currency was checked when the page or link was made; one the
    // node no longer knows cannot be priced, so nothing is offered.
    let currency = match Currency::find(&checkout.settings.currency) {
        Ok(currency) => currency,
        Err(error) => {
            tracing::error!(checkout = checkout.id, %error, "a checkout in a currency the node does not know");
            return Content::Notice(UNPRICED);
        }
    };
    Content::Form(Box::new(form(deps, checkout, currency, &offered)))
}

/// The receipt a paid link shows: what was paid, to whom, when, and the
/// reference of the payment that completed it.
fn receipt(
    deps: &Deps<'_>,
    snapshot: &sika_engine::Snapshot,
    link: &PaymentLink,
    state: &LinkState,
) -> ApiResult<Content> {
    let currency = &link.settings.currency;
    let completing = state.covering.as_ref();
    // The payment's reference is its session's id, which the checkout gives
    // its collection as the external reference.
    let reference = match completing {
        Some(arrival) => snapshot
            .collection(&sika_engine::CollectionId::named(&arrival.collection_id))?
            .map(|c| c.external_reference),
        None => None,
    };
    let paid_at = completing
        .map(|arrival| arrival.completed_at)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|at| at.format("%-d %b %Y, %H:%M UTC").to_string());
    let row = |term, id, value| ReceiptRow { term, id, value };
    let mut rows = vec![row("Amount paid", "receipt-amount", money(currency, state.total_received))];
    if state.payments > 1 {
        rows.push(row("Payments", "receipt-payments", state.payments.to_string()));
    }
    rows.push(row("Paid to", "receipt-merchant", payee(deps, &link.settings, &link.organization)));
    if let Some(at) = paid_at {
        rows.push(row("Date", "receipt-date", at));
    }
    if let Some(reference) = reference {
        rows.push(row("Reference", "receipt-reference", reference));
    }
    Ok(Content::Receipt(Receipt { rows }))
}

fn form(deps: &Deps<'_>, checkout: &Checkout<'_>, unit: Currency, offered: &[&'static str]) -> Form {
    let settings = checkout.settings;
    let currency = &settings.currency;
    let (amount_label, start) = match checkout.due {
        Some(_) => ("Amount to pay now", checkout.remaining.filter(|r| *r > 0)),
        None => ("Amount", None),
    };
    let partial = (checkout.received > 0).then(|| Partial {
        received: grouped(currency, checkout.received),
        remaining: grouped(currency, checkout.remaining.unwrap_or(0)),
    });
    let methods = offered
        .iter()
        .map(|&value| MethodChoice {
            value,
            label: match value {
                "mobile_money" => "Mobile money",
                "bank_transfer" => "Bank transfer",
                _ => "Stablecoins",
            },
            checked: offered.len() == 1,
        })
        .collect();
    let mobile_money = offered.contains(&"mobile_money").then(|| MobileMoney {
        networks: networks(deps, currency),
        prompted: deps.kind == StackKind::Sandbox,
    });
    let coins = if offered.contains(&"crypto") {
        crypto_rails(deps, settings)
            .into_iter()
            .map(|m| Choice {
                value: format!("{}|{}", m.currency(), m.chain.as_deref().unwrap_or("")),
                label: m.name.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let id = checkout.id;
    Form {
        email_label: if deps.config.email.is_some() {
            "Email for your receipt (optional)"
        } else {
            "Email (optional)"
        },
        id: id.to_string(),
        link_id: if id.starts_with("pl_") { id.to_string() } else { String::new() },
        currency: currency.clone(),
        partial,
        amount_label,
        // The field holds plain digits (what the API takes); only the text around it is grouped.
        amount_value: start.map(|minor| amount(currency, minor)).unwrap_or_default(),
        amount_placeholder: if unit.scale == 0 { "0" } else { "0.00" },
        email: checkout.email.unwrap_or_default().to_string(),
        custom_fields: custom_fields(settings),
        methods,
        mobile_money,
        bank_transfer: offered.contains(&"bank_transfer"),
        coins,
        pay_label: match start {
            Some(minor) => format!("Pay {}", money(currency, minor)),
            None => "Pay".to_string(),
        },
        data: script_data(checkout, unit),
        script: SCRIPT,
    }
}

fn custom_fields(settings: &Settings) -> Vec<CustomInput> {
    settings
        .custom_fields
        .iter()
        .map(|field| CustomInput {
            name: field.name.clone(),
            label: field.label.clone(),
            required: field.required,
            input_type: match field.kind.as_str() {
                "number" => "number",
                "email" => "email",
                "phone" => "tel",
                "date" => "date",
                _ => "text",
            },
        })
        .collect()
}

/// The mobile-money networks of `currency` offered here, each with its
/// country's example number. A currency of several countries (XOF) names
/// the country beside each network, whose names repeat.
fn networks(deps: &Deps<'_>, currency: &str) -> Vec<Network> {
    let methods = methods_of_kind(deps, currency, "mobile_money");
    let countries: std::collections::BTreeSet<_> =
        methods.iter().filter_map(|m| deps.catalog.country_of_method(&m.code)).map(|c| &c.code).collect();
    methods
        .into_iter()
        .filter_map(|m| {
            let format = PhoneFormat::of_method(deps.catalog, &m.code)?;
            let label = if countries.len() > 1 {
                format!("{} ({})", m.name, format.country_name)
            } else {
                m.name.clone()
            };
            Some(Network {
                code: m.code.clone(),
                label,
                country: format.country_name,
                local: format.local,
                international: format.international,
            })
        })
        .collect()
}

/// The data the script reads.
fn script_data(checkout: &Checkout<'_>, unit: Currency) -> ScriptJson {
    let currency = &checkout.settings.currency;
    ScriptJson::new(&json!({
        "id": checkout.id,
        "currency": currency,
        "scale": unit.scale,
        "redirectUrl": checkout.settings.redirect_url,
        "messages": payer_messages(unit),
    }))
}

/// The sentences the script shows a payer instead of the API's errors,
/// which name fields for developers (`amount: amount has 3 fraction
/// digits ...`). The script picks one by the error's `details.field` and
/// `details.reason`; `{label}`, `{method}`, `{min}`, `{max}`, `{country}`
/// and `{example}` are filled in there.
fn payer_messages(currency: Currency) -> Value {
    let scale = currency.scale;
    let decimals = match scale {
        0 => "Enter a whole amount, with no decimals.".to_string(),
        1 => "Enter an amount with at most 1 decimal.".to_string(),
        n => format!("Enter an amount with at most {n} decimals."),
    };
    let example = if scale == 0 { "2,500" } else { "25.50" };
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
        "phone": "Enter your {country} wallet number, like {example}.",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decimals_sentence_follows_the_currency() {
        assert_eq!(
            payer_messages(Currency::find("GHS").unwrap())["amountDecimals"],
            "Enter an amount with at most 2 decimals."
        );
        assert_eq!(
            payer_messages(Currency::find("XOF").unwrap())["amountDecimals"],
            "Enter a whole amount, with no decimals."
        );
        assert_eq!(
            payer_messages(Currency::find("USDC").unwrap())["amountDecimals"],
            "Enter an amount with at most 6 decimals."
        );
    }
}
