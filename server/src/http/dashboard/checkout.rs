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
use crate::domain::checkout::{self, links, pages};
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
        statuses: &["active", "closed"],
        list: "/v1/payment-pages",
        read: "/v1/payment-pages/{id}",
        close: "/v1/payment-pages/{id}/close",
    },
    Kind {
        segment: "links",
        label: "Payment links",
        noun: "Payment link",
        statuses: &["active", "paid", "expired", "closed"],
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
    form: FormShown,
}

/// The create form's values, kept when the API refuses them.
#[derive(Default)]
struct FormShown {
    currency: String,
    title: String,
    amount: String,
    description: String,
    email: String,
    customer_reference: String,
    methods: Vec<String>,
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
        }
    }

    fn checked(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }
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
        form,
    };
    send(status, &page, Vec::new())
}

/// `GET /dashboard/checkout?kind=pages|links&status=…&cursor=…`.
pub(super) async fn list(signed: Signed, Query(asked): Query<ListAsked>) -> Response {
    list_page(&signed, &asked, None, FormShown::default())
}

/// The create form as the API's `CheckoutRequest`: empty fields are left
/// out, as a JSON body would leave them.
fn checkout_request(kind: &Kind, fields: &Fields) -> Value {
    let mut body = json!({ "allowedMethods": fields.all("allowedMethods") });
    let mut keys = vec!["currency", "title", "amount", "description"];
    if kind.segment == "links" {
        keys.extend(["email", "customerReference"]);
    }
    for key in keys {
        let value = fields.text(key);
        if !value.trim().is_empty() {
            body[key] = Value::String(value);
        }
    }
    body
}

/// `POST /v1/payment-pages` or `/v1/payment-links` from the create form:
/// the new one's page, or the list with the API's refusal.
pub(super) async fn create(Path(segment): Path<String>, Posted { signed, fields }: Posted) -> Response {
    let deps = deps(&signed.stack);
    let organization = signed.principal.organization();
    let made = kind(&segment)
        .and_then(|kind| signed.admit(&Method::POST, kind.list).map(|()| kind))
        .and_then(|kind| Ok((kind, wire(checkout_request(kind, &fields))?)));
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
            list_page(&signed, &asked, Some(Notice::refused(&e)), FormShown::of(&fields))
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
