//! Checkout: payment pages and payment links, listed (status filter,
//! paged like the API's lists), made from a form, one of them with its
//! address to copy (a read-only field: no script), closed, and the
//! payments of each (a page's payers' links, a link's checkout sessions).
//! Each reads and acts through the API's use cases
//! (`domain::checkout::{pages, links}`), asked of its requirements first.

use super::views::name;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use sika_api::payment_links::{PaymentLink, PaymentLinkFilter};
use sika_api::payment_pages::{PaymentPage, PaymentPageFilter};
use sika_api::{ListPage, ListQuery};

use super::pages::wire;
use super::session::{Fields, Posted, Signed};
use super::views::{Frame, Notice, frame, money, refusal_page, send, shell, when};
use crate::domain::checkout::{self, links, pages, requests};
use crate::domain::error::{ApiError, ApiResult};
use crate::http::found::owned;
use crate::http::pages::shell::Shell;
use crate::http::routes::checkout::deps;

/// Rows per page, as the API's default.
const PAGE_ROWS: u32 = 20;

/// The methods a checkout may take, as the API names them.
const METHODS: [(&str, &str); 3] =
    [("mobile_money", "Mobile money"), ("bank_transfer", "Bank transfer"), ("crypto", "Crypto")];

/// Payment pages or payment links: the path segment, the words, the
/// statuses and the operations that list, read, create and close them.
struct Kind {
    segment: &'static str,
    label: &'static str,
    noun: &'static str,
    statuses: &'static [&'static str],
    list: &'static str,
    read: &'static str,
    close: &'static str,
}

const KINDS: [Kind; 2] = [
    Kind {
        segment: "pages",
        label: "Payment pages",
        noun: "Payment page",
        statuses: pages::STATUSES,
        list: "/v1/payment-pages",
        read: "/v1/payment-pages/{id}",
        close: "/v1/payment-pages/{id}/close",
    },
    Kind {
        segment: "links",
        label: "Payment links",
        noun: "Payment link",
        statuses: links::STATUSES,
        list: "/v1/payment-links",
        read: "/v1/payment-links/{id}",
        close: "/v1/payment-links/{id}/close",
    },
];

fn kind(segment: &str) -> ApiResult<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.segment == segment)
        .ok_or_else(|| ApiError::validation("kind", "must be one of pages, links"))
}

struct Row {
    id: String,
    title: String,
    amount: String,
    status: String,
    /// A page's payments and total collected; a link's total received.
    received: String,
    created: String,
}

fn price(currency: &str, amount: &Option<String>) -> String {
    amount.as_deref().map_or_else(|| format!("{currency}, payer chooses"), |a| money(currency, a))
}

fn page_row(p: &PaymentPage) -> Row {
    Row {
        id: p.id.clone(),
        title: p.title.clone(),
        amount: price(&p.currency, &p.amount),
        status: name(&p.status),
        received: format!(
            "{} ({} {})",
            money(&p.currency, &p.total_collected),
            p.payment_count,
            if p.payment_count == 1 { "payment" } else { "payments" }
        ),
        created: when(&p.created_at),
    }
}

fn link_row(l: &PaymentLink) -> Row {
    Row {
        id: l.id.clone(),
        title: l.title.clone(),
        amount: price(&l.currency, &l.amount),
        status: name(&l.status),
        received: money(&l.currency, &l.total_received),
        created: when(&l.created_at),
    }
}

#[derive(Template)]
#[template(path = "dashboard/checkout.html")]
struct ListView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    tabs: Vec<(&'static str, &'static str, bool)>,
    kind: &'static str,
    title: &'static str,
    statuses: &'static [&'static str],
    filter_status: String,
    rows: Vec<Row>,
    next: Option<String>,
    can_create: bool,
    methods: &'static [(&'static str, &'static str)],
    crypto_assets: &'static [&'static str],
    custom_types: &'static [&'static str],
    form: FormShown,
}

/// One row of the form's fields the payer fills in (`customFields`).
#[derive(Default)]
struct CustomRow {
    index: usize,
    name: String,
    kind: String,
    required: bool,
    label: String,
}

impl CustomRow {
    fn filled(&self) -> bool {
        !self.name.is_empty() || !self.label.is_empty()
    }
}

/// The create form's values, kept when the API refuses them, and the
/// refusal's field (as the form names it) to show its message beside.
#[derive(Default)]
struct FormShown {
    currency: String,
    title: String,
    amount: String,
    description: String,
    email: String,
    customer_reference: String,
    methods: Vec<String>,
    crypto_assets: Vec<String>,
    custom: Vec<CustomRow>,
    redirect_url: String,
    logo_url: String,
    accent_color: String,
    business_name: String,
    metadata: String,
    expires_at: String,
    /// The refused field (`customFields[2].name` naming the form's row)
    /// and the API's message.
    error: Option<(String, String)>,
}

impl FormShown {
    fn of(fields: &Fields) -> FormShown {
        FormShown {
            currency: fields.text("currency"),
            title: fields.text("title"),
            amount: fields.text("amount"),
            description: fields.text("description"),
            email: fields.text("email"),
            customer_reference: fields.text("customerReference"),
            methods: fields.all("allowedMethods"),
            crypto_assets: fields.all("allowedCryptoAssets"),
            custom: custom_rows(fields),
            redirect_url: fields.text("redirectUrl"),
            logo_url: fields.text("branding.logoUrl"),
            accent_color: fields.text("branding.accentColor"),
            business_name: fields.text("branding.businessName"),
            metadata: fields.text("metadata"),
            expires_at: fields.text("expiresAt"),
            error: None,
        }
    }

    fn empty() -> FormShown {
        FormShown { custom: custom_rows(&Fields::default()), ..FormShown::default() }
    }

    fn checked(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }

    fn asset_checked(&self, asset: &str) -> bool {
        self.crypto_assets.iter().any(|a| a == asset)
    }

    /// The API's message when it refused `field` (or an item of it:
    /// `allowedMethods` shows `allowedMethods[1]`'s).
    fn error_for(&self, field: &str) -> Option<&str> {
        let (refused, message) = self.error.as_ref()?;
        let item = refused.strip_prefix(field).is_some_and(|rest| rest.is_empty() || rest.starts_with('['));
        item.then_some(message.as_str())
    }

    /// The message for one row's field (`customFields[i].name`).
    fn row_error(&self, index: &usize, field: &str) -> Option<&str> {
        let (refused, message) = self.error.as_ref()?;
        (*refused == format!("customFields[{index}].{field}")).then_some(message.as_str())
    }

    /// The message for the fields as a whole (`customFields` itself).
    fn custom_error(&self) -> Option<&str> {
        self.error.as_ref().filter(|(refused, _)| refused == "customFields").map(|(_, m)| m.as_str())
    }

    /// Whether the fields the payer fills in are shown open.
    fn custom_open(&self) -> bool {
        self.custom.iter().any(CustomRow::filled)
            || self.error.as_ref().is_some_and(|(f, _)| f.starts_with("customFields"))
    }
}

/// The form's rows of fields the payer fills in: as many as the API takes.
fn custom_rows(fields: &Fields) -> Vec<CustomRow> {
    (0..requests::CUSTOM_FIELDS_MAX)
        .map(|index| {
            let at = |name: &str| fields.text(&format!("customFields[{index}].{name}"));
            let kind = at("type");
            CustomRow {
                index,
                name: at("name"),
                kind: if kind.is_empty() { "text".into() } else { kind },
                required: !at("required").is_empty(),
                label: at("label"),
            }
        })
        .collect()
}

/// What the list's address says: the kind, the status and the cursor.
#[derive(Deserialize, Default)]
pub(super) struct ListAsked {
    kind: Option<String>,
    status: Option<String>,
    cursor: Option<String>,
}

fn rows_of(signed: &Signed, kind: &Kind, asked: &ListAsked) -> ApiResult<(Vec<Row>, Option<String>)> {
    let deps = deps(&signed.stack);
    let organization = signed.principal.organization();
    let query = ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor: asked.cursor.clone() };
    let status = asked.status.clone().filter(|s| !s.is_empty());
    let next = |page_more: bool, cursor: Option<String>| cursor.filter(|_| page_more);
    Ok(match kind.segment {
        "pages" => {
            let page = pages::list(&deps, organization, &query, &PaymentPageFilter { status })?;
            (page.data.iter().map(page_row).collect(), next(page.has_more, page.next_cursor))
        }
        _ => {
            let filter = PaymentLinkFilter { status, ..Default::default() };
            let page = links::list(&deps, organization, &query, &filter)?;
            (page.data.iter().map(link_row).collect(), next(page.has_more, page.next_cursor))
        }
    })
}

fn list_page(signed: &Signed, asked: &ListAsked, notice: Option<Notice>, form: FormShown) -> Response {
    let shown = kind(asked.kind.as_deref().unwrap_or("pages"))
        .and_then(|kind| signed.admit(&Method::GET, kind.list).map(|()| kind))
        .and_then(|kind| Ok((kind, rows_of(signed, kind, asked)?)));
    let (kind, (rows, cursor)) = match shown {
        Ok(shown) => shown,
        Err(e) => return refusal_page(&signed.stack, &e),
    };
    let next = cursor.map(|c| {
        let pairs =
            [("kind", kind.segment), ("status", asked.status.as_deref().unwrap_or_default()), ("cursor", &c)];
        let query: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        format!("/dashboard/checkout?{query}")
    });
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let page = ListView {
        shell: shell(&signed.stack, kind.label),
        frame: frame(signed, "checkout", notice),
        csrf: signed.csrf(),
        tabs: KINDS
            .iter()
            .filter(|k| signed.can(&Method::GET, k.list))
            .map(|k| (k.segment, k.label, k.segment == kind.segment))
            .collect(),
        kind: kind.segment,
        title: kind.label,
        statuses: kind.statuses,
        filter_status: asked.status.clone().unwrap_or_default(),
        rows,
        next,
        can_create: signed.can(&Method::POST, kind.list),
        methods: &METHODS,
        crypto_assets: &requests::CRYPTO_ASSETS,
        custom_types: &requests::CUSTOM_FIELD_TYPES,
        form,
    };
    send(status, &page, Vec::new())
}

/// `GET /dashboard/checkout?kind=pages|links&status=…&cursor=…`.
pub(super) async fn list(signed: Signed, Query(asked): Query<ListAsked>) -> Response {
    list_page(&signed, &asked, None, FormShown::empty())
}

/// A `datetime-local` value (`2026-12-01T10:00`, no zone) read as UTC,
/// as the form's label says; anything else goes to the API as typed.
fn utc_date_time(value: &str) -> String {
    let local = value.len() == 16 && value.as_bytes().get(10) == Some(&b'T');
    let with_seconds = value.len() == 19 && value.as_bytes().get(10) == Some(&b'T');
    match (local, with_seconds) {
        (true, _) => format!("{value}:00Z"),
        (_, true) => format!("{value}Z"),
        _ => value.to_string(),
    }
}

/// The create form as the API's `CheckoutRequest`: empty fields are left
/// out, as a JSON body would leave them. Also returns, for each custom
/// field sent, the form row it came from (empty rows are not sent).
fn checkout_request(kind: &Kind, fields: &Fields) -> (Value, Vec<usize>) {
    let mut body = json!({ "allowedMethods": fields.all("allowedMethods") });
    let mut keys = vec!["currency", "title", "amount", "description", "redirectUrl"];
    if kind.segment == "links" {
        keys.extend(["email", "customerReference"]);
    }
    for key in keys {
        let value = fields.text(key);
        if !value.is_empty() {
            body[key] = Value::String(value);
        }
    }
    let assets = fields.all("allowedCryptoAssets");
    if !assets.is_empty() {
        body["allowedCryptoAssets"] = json!(assets);
    }
    let mut branding = serde_json::Map::new();
    for key in ["logoUrl", "accentColor", "businessName"] {
        let value = fields.text(&format!("branding.{key}"));
        if !value.is_empty() {
            branding.insert(key.into(), Value::String(value));
        }
    }
    if !branding.is_empty() {
        body["branding"] = Value::Object(branding);
    }
    // Metadata is a JSON object; text that is not JSON goes as a string,
    // which the API refuses naming `metadata`.
    let metadata = fields.text("metadata");
    if !metadata.is_empty() {
        body["metadata"] = serde_json::from_str(&metadata).unwrap_or(Value::String(metadata));
    }
    let expires = fields.text("expiresAt");
    if !expires.is_empty() {
        body["expiresAt"] = Value::String(utc_date_time(&expires));
    }
    let rows: Vec<CustomRow> = custom_rows(fields).into_iter().filter(CustomRow::filled).collect();
    if !rows.is_empty() {
        let sent: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut field = json!({ "type": row.kind, "required": row.required });
                for (key, value) in [("name", &row.name), ("label", &row.label)] {
                    if !value.is_empty() {
                        field[key] = Value::String(value.clone());
                    }
                }
                field
            })
            .collect();
        body["customFields"] = Value::Array(sent);
    }
    (body, rows.iter().map(|row| row.index).collect())
}

/// The refused field as the form names it: the API's `customFields[i]`
/// counts only the rows sent, the form's every row.
fn form_field(error: &ApiError, rows: &[usize]) -> Option<String> {
    let field = error.details.as_ref()?.get("field")?.as_str()?;
    let Some(rest) = field.strip_prefix("customFields[") else { return Some(field.to_string()) };
    let (sent, tail) = rest.split_once(']')?;
    let row = sent.parse::<usize>().ok().and_then(|i| rows.get(i))?;
    Some(format!("customFields[{row}]{tail}"))
}

/// `POST /v1/payment-pages` or `/v1/payment-links` from the create form:
/// the new one's page, or the list with the API's refusal beside its field.
pub(super) async fn create(Path(segment): Path<String>, Posted { signed, fields }: Posted) -> Response {
    let deps = deps(&signed.stack);
    let organization = signed.principal.organization();
    let mut rows = Vec::new();
    let made = kind(&segment)
        .and_then(|kind| signed.admit(&Method::POST, kind.list).map(|()| kind))
        .and_then(|kind| {
            let (body, sent) = checkout_request(kind, &fields);
            rows = sent;
            Ok((kind, wire(body)?))
        });
    let created = match made {
        Ok((kind, request)) if kind.segment == "pages" => {
            pages::create(&deps, organization, request).await.map(|p| (kind, json!(p)))
        }
        Ok((kind, request)) => links::create(&deps, organization, request).await.map(|l| (kind, json!(l))),
        Err(e) => Err(e),
    };
    match created {
        Ok((kind, item)) => {
            let notice = Notice::done(format!("Created {}", item["id"].as_str().unwrap_or_default()));
            detail_page(&signed, kind.segment, item["id"].as_str().unwrap_or_default(), Some(notice))
        }
        Err(e) => {
            let asked = ListAsked { kind: Some(segment), ..Default::default() };
            let mut form = FormShown::of(&fields);
            form.error = form_field(&e, &rows).map(|field| (field, e.message.clone()));
            list_page(&signed, &asked, Some(Notice::refused(&e)), form)
        }
    }
}

/// One payment, as the detail page lists it.
struct Payment {
    id: String,
    href: Option<String>,
    method: String,
    amount: String,
    status: String,
    created: String,
}

#[derive(Template)]
#[template(path = "dashboard/checkout_item.html")]
struct DetailView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    kind: &'static str,
    noun: &'static str,
    id: String,
    url: String,
    facts: Vec<(&'static str, String)>,
    payments_title: &'static str,
    payments: Vec<Payment>,
    can_close: bool,
}

/// What one checkout's page shows: its address, its facts, its payments
/// and whether it is still open.
struct Detail {
    url: String,
    facts: Vec<(&'static str, String)>,
    payments: Vec<Payment>,
    open: bool,
}

/// A page's facts and its payers' links (the API's `parentId` list).
fn page_detail(signed: &Signed, id: &str) -> ApiResult<Detail> {
    let deps = deps(&signed.stack);
    let snapshot = signed.stack.engine.read()?;
    let record: checkout::PaymentPage = owned(&signed.stack, &snapshot, &signed.principal, id)?;
    let p = pages::get(&deps, &snapshot, &record)?;
    let row = page_row(&p);
    let facts = vec![
        ("Title", p.title.clone()),
        ("Amount", row.amount),
        ("Status", row.status.clone()),
        ("Collected", row.received),
        ("Created", row.created),
    ];
    let mut payments = Vec::new();
    if signed.can(&Method::GET, "/v1/payment-links") {
        let filter = PaymentLinkFilter { parent_id: Some(p.id.clone()), ..Default::default() };
        let query = ListQuery { limit: Some("100".into()), cursor: None };
        let payers: ListPage<PaymentLink> =
            links::list(&deps, signed.principal.organization(), &query, &filter)?;
        payments.extend(payers.data.iter().map(|l| Payment {
            id: l.id.clone(),
            href: Some(format!("/dashboard/checkout/links/{}", l.id)),
            method: l.email.clone().unwrap_or_default(),
            amount: money(&l.currency, &l.total_received),
            status: name(&l.status),
            created: when(&l.created_at),
        }));
    }
    Ok(Detail { url: p.url, facts, payments, open: row.status == "active" })
}

/// A link's facts and its checkout sessions, newest first.
fn link_detail(signed: &Signed, id: &str) -> ApiResult<Detail> {
    let deps = deps(&signed.stack);
    let snapshot = signed.stack.engine.read()?;
    let record: checkout::PaymentLink = owned(&signed.stack, &snapshot, &signed.principal, id)?;
    let l = links::get(&deps, &snapshot, &record)?;
    let row = link_row(&l);
    let mut facts = vec![
        ("Title", l.title.clone()),
        ("Amount", row.amount),
        ("Status", row.status.clone()),
        ("Received", row.received),
    ];
    if let Some(remaining) = &l.remaining {
        facts.push(("Remaining", money(&l.currency, remaining)));
    }
    for (label, value) in
        [("Email", &l.email), ("Customer reference", &l.customer_reference), ("Page", &l.parent_id)]
    {
        if let Some(value) = value {
            facts.push((label, value.clone()));
        }
    }
    facts.push(("Created", row.created));
    let payments = l
        .sessions
        .iter()
        .flatten()
        .map(|s| Payment {
            id: s.id.clone(),
            href: (!s.collection_id.is_empty())
                .then(|| format!("/dashboard/payments/collections/{}", s.collection_id)),
            method: name(&s.method),
            amount: money(&s.destination_currency, &s.destination_amount),
            status: name(&s.status),
            created: when(&s.created_at),
        })
        .collect();
    Ok(Detail { url: l.url, facts, payments, open: row.status == "active" })
}

fn detail_page(signed: &Signed, segment: &str, id: &str, notice: Option<Notice>) -> Response {
    let found = kind(segment).and_then(|kind| signed.admit(&Method::GET, kind.read).map(|()| kind)).and_then(
        |kind| {
            let detail =
                if kind.segment == "pages" { page_detail(signed, id)? } else { link_detail(signed, id)? };
            Ok((kind, detail))
        },
    );
    let (kind, Detail { url, facts, payments, open }) = match found {
        Ok(found) => found,
        Err(e) => return refusal_page(&signed.stack, &e),
    };
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let page = DetailView {
        shell: shell(&signed.stack, kind.noun),
        frame: frame(signed, "checkout", notice),
        csrf: signed.csrf(),
        kind: kind.segment,
        noun: kind.noun,
        id: id.to_string(),
        url,
        facts,
        payments_title: if kind.segment == "pages" { "Payers' links" } else { "Payments" },
        payments,
        can_close: open && signed.can(&Method::POST, kind.close),
    };
    send(status, &page, Vec::new())
}

/// `GET /dashboard/checkout/{kind}/{id}`.
pub(super) async fn detail(signed: Signed, Path((segment, id)): Path<(String, String)>) -> Response {
    detail_page(&signed, &segment, &id, None)
}

/// `POST /v1/payment-pages/{id}/close` or `/v1/payment-links/{id}/close`.
pub(super) async fn close(
    Path((segment, id)): Path<(String, String)>,
    Posted { signed, .. }: Posted,
) -> Response {
    let deps = deps(&signed.stack);
    let organization = signed.principal.organization();
    let closed = match kind(&segment).and_then(|kind| signed.admit(&Method::POST, kind.close).map(|()| kind))
    {
        Ok(kind) if kind.segment == "pages" => pages::close(&deps, organization, &id).await.map(|_| kind),
        Ok(kind) => links::close(&deps, organization, &id).await.map(|_| kind),
        Err(e) => Err(e),
    };
    let notice = Notice::of(&closed, |kind| format!("{} {id} is closed", kind.noun));
    detail_page(&signed, &segment, &id, Some(notice))
}

#[cfg(test)]
mod tests {
    use sika_api::payment_links::PaymentLinkStatus;
    use sika_api::payment_pages::PaymentPageStatus;

    use super::{kind, name};

    /// The pages' and links' status filters offer exactly the statuses the
    /// API writes (the domain's lists, which the API's filter refusal names
    /// too): every variant of each wire enum, so a status added to one
    /// fails this until the domain lists it.
    #[test]
    fn each_status_filter_lists_every_status_the_api_writes() {
        use strum::VariantArray;
        let pages = PaymentPageStatus::VARIANTS;
        let links = PaymentLinkStatus::VARIANTS;
        let shown = |segment| kind(segment).unwrap().statuses.to_vec();
        assert_eq!(shown("pages"), pages.iter().map(name).collect::<Vec<_>>());
        assert_eq!(shown("links"), links.iter().map(name).collect::<Vec<_>>());
    }
}
