//! Payments: the payouts, collections and refunds lists (status and
//! reference filters, paged like the API's lists, by its cursor), one
//! payment with its timeline, and a refund from a collection. Each reads
//! and acts through the API's use cases, asked of its requirements first.

use super::views::name;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use sika_api::collections::Collection;
use sika_api::orders::Order;
use sika_api::payouts::Payout;
use sika_api::refunds::Refund;
use sika_api::{ListPage, ListQuery, MovementFilter, TimelineEntry};

use super::session::{Posted, Signed};
use super::views::{Frame, Notice, frame, money, refusal_page, send, shell, when};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::movements::Movement;
use crate::domain::{collections, orders, payouts, refunds, search};
use crate::http::pages::shell::Shell;

/// Rows per page, as the API's default.
const PAGE_ROWS: u32 = 20;

/// A kind of payment: its path segment, its label, its statuses (the
/// domain's own list, which its filter checks against) and the operation
/// that lists it.
struct Kind {
    segment: &'static str,
    label: &'static str,
    noun: &'static str,
    statuses: &'static [&'static str],
    list: &'static str,
    read: &'static str,
}

const KINDS: [Kind; 4] = [
    Kind {
        segment: "payouts",
        label: "Payouts",
        noun: "Payout",
        statuses: <Payout as Movement>::STATUSES,
        list: "/v1/payouts",
        read: "/v1/payouts/{id}",
    },
    Kind {
        segment: "collections",
        label: "Collections",
        noun: "Collection",
        statuses: <Collection as Movement>::STATUSES,
        list: "/v1/collections",
        read: "/v1/collections/{id}",
    },
    Kind {
        segment: "orders",
        label: "Orders",
        noun: "Order",
        statuses: <Order as Movement>::STATUSES,
        list: "/v1/orders",
        read: "/v1/orders/{id}",
    },
    Kind {
        segment: "refunds",
        label: "Refunds",
        noun: "Refund",
        statuses: <Refund as Movement>::STATUSES,
        list: "/v1/refunds",
        read: "/v1/refunds/{id}",
    },
];

fn kind(segment: &str) -> ApiResult<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.segment == segment)
        .ok_or_else(|| ApiError::validation("kind", "must be one of payouts, collections, orders, refunds"))
}

#[derive(Template)]
#[template(path = "dashboard/payments.html")]
struct ListPageView {
    shell: Shell,
    frame: Frame,
    tabs: Vec<Tab>,
    kind: &'static str,
    title: &'static str,
    statuses: &'static [&'static str],
    filter_status: String,
    filter_reference: String,
    by_reference: bool,
    rows: Vec<Row>,
    next: Option<String>,
}

struct Tab {
    kind: &'static str,
    label: &'static str,
    current: bool,
}

struct Row {
    id: String,
    amount: String,
    status: String,
    reference: String,
    created: String,
}

/// What the list's address says: the kind, the filters and the cursor.
#[derive(Deserialize, Default)]
pub(super) struct ListAsked {
    kind: Option<String>,
    status: Option<String>,
    reference: Option<String>,
    cursor: Option<String>,
}

fn rows_of(signed: &Signed, kind: &Kind, asked: &ListAsked) -> ApiResult<(Vec<Row>, Option<String>)> {
    let stack = &signed.stack;
    let query = ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor: asked.cursor.clone() };
    let status = asked.status.clone().filter(|s| !s.is_empty());
    let reference = asked.reference.clone().filter(|s| !s.is_empty());
    let movement = MovementFilter { status: status.clone(), external_reference: reference };
    let page_of = |page: ListPage<Value>| -> (Vec<Row>, Option<String>) {
        let rows = page.data.iter().map(row).collect();
        (rows, page.next_cursor.filter(|_| page.has_more))
    };
    let as_values =
        |items: Vec<Value>, has_more, next_cursor| ListPage { data: items, has_more, next_cursor };
    let page = match kind.segment {
        "payouts" => {
            let page = payouts::list((&**stack).into(), &signed.principal, query, movement)?;
            as_values(page.data.iter().map(|p| json!(p)).collect(), page.has_more, page.next_cursor)
        }
        "collections" => {
            let page = collections::list((&**stack).into(), &signed.principal, query, movement)?;
            as_values(page.data.iter().map(|c| json!(c)).collect(), page.has_more, page.next_cursor)
        }
        "orders" => {
            let page = orders::list((&**stack).into(), &signed.principal, query, movement)?;
            as_values(page.data.iter().map(|o| json!(o)).collect(), page.has_more, page.next_cursor)
        }
        _ => {
            let filter = sika_api::refunds::RefundFilter { status, collection_id: None };
            let page = refunds::list((&**stack).into(), &signed.principal, query, filter)?;
            as_values(page.data.iter().map(|r| json!(r)).collect(), page.has_more, page.next_cursor)
        }
    };
    Ok(page_of(page))
}

/// A list row from the item as the API answers it: a payout's amount is
/// what leaves the balance (`from`).
fn row(item: &Value) -> Row {
    let source = if item["from"].is_object() { &item["from"] } else { item };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Row {
        id: text(&item["id"]),
        amount: money(&text(&source["currency"]), &text(&source["amount"])),
        status: text(&item["status"]),
        reference: text(&item["externalReference"]),
        created: when(&text(&item["createdAt"])),
    }
}

fn list_address(kind: &Kind, asked: &ListAsked, cursor: &str) -> String {
    let pairs = [
        ("kind", kind.segment),
        ("status", asked.status.as_deref().unwrap_or_default()),
        ("reference", asked.reference.as_deref().unwrap_or_default()),
        ("cursor", cursor),
    ];
    let query: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
    format!("/dashboard/payments?{query}")
}

/// `GET /dashboard/payments?kind=…&status=…&reference=…&cursor=…`.
pub(super) async fn list(signed: Signed, Query(asked): Query<ListAsked>) -> Response {
    let shown = kind(asked.kind.as_deref().unwrap_or("payouts"))
        .and_then(|kind| signed.admit(&Method::GET, kind.list).map(|()| kind))
        .and_then(|kind| Ok((kind, rows_of(&signed, kind, &asked)?)));
    let (kind, (rows, cursor)) = match shown {
        Ok(shown) => shown,
        Err(e) => return refusal_page(&signed.stack, &e),
    };
    let tabs = KINDS
        .iter()
        .filter(|k| signed.can(&Method::GET, k.list))
        .map(|k| Tab { kind: k.segment, label: k.label, current: k.segment == kind.segment })
        .collect();
    let page = ListPageView {
        shell: shell(&signed.stack, kind.label),
        frame: frame(&signed, "payments", None),
        tabs,
        kind: kind.segment,
        title: kind.label,
        statuses: kind.statuses,
        filter_status: asked.status.clone().unwrap_or_default(),
        filter_reference: asked.reference.clone().unwrap_or_default(),
        by_reference: kind.segment != "refunds",
        next: cursor.map(|c| list_address(kind, &asked, &c)),
        rows,
    };
    send(StatusCode::OK, &page, Vec::new())
}

#[derive(Template)]
#[template(path = "dashboard/payment.html")]
struct DetailView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    kind: &'static str,
    noun: &'static str,
    id: String,
    facts: Vec<(&'static str, String)>,
    timeline: Vec<(String, String, String)>,
    can_refund: bool,
}

/// The payment `id` of `kind` as the API's GET answers it, or its 404.
fn payment(signed: &Signed, kind: &Kind, id: &str) -> ApiResult<Value> {
    let snapshot = signed.stack.engine.read()?;
    let (stack, principal) = (&signed.stack, &signed.principal);
    Ok(match kind.segment {
        "payouts" => {
            json!(crate::http::found::owned::<Payout>(stack, &snapshot, principal, id)?)
        }
        "collections" => {
            json!(crate::http::found::owned::<Collection>(stack, &snapshot, principal, id)?)
        }
        "orders" => {
            json!(crate::http::found::owned::<sika_api::orders::Order>(stack, &snapshot, principal, id)?)
        }
        _ => json!(crate::http::found::owned::<Refund>(stack, &snapshot, principal, id)?),
    })
}

fn detail_page(signed: &Signed, segment: &str, id: &str, notice: Option<Notice>) -> Response {
    let found = kind(segment)
        .and_then(|kind| signed.admit(&Method::GET, kind.read).map(|()| kind))
        .and_then(|kind| Ok((kind, payment(signed, kind, id)?)));
    let (kind, item) = match found {
        Ok(found) => found,
        Err(e) => return refusal_page(&signed.stack, &e),
    };
    let summary = row(&item);
    let mut facts =
        vec![("Amount", summary.amount), ("Status", summary.status), ("Created", summary.created)];
    let text = |key: &str| item[key].as_str().unwrap_or_default().to_string();
    for (label, key) in [
        ("Reference", "externalReference"),
        ("Message", "statusMessage"),
        ("Collection", "collectionId"),
        ("Payout", "payoutId"),
    ] {
        if !text(key).is_empty() {
            facts.push((label, text(key)));
        }
    }
    if kind.segment == "collections" {
        facts.push(("Refunded", money(&text("currency"), &text("refundedAmount"))));
    }
    let entries: Vec<TimelineEntry> = serde_json::from_value(item["timeline"].clone()).unwrap_or_default();
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let page = DetailView {
        shell: shell(&signed.stack, kind.noun),
        frame: frame(signed, "payments", notice),
        csrf: signed.csrf(),
        kind: kind.segment,
        noun: kind.noun,
        id: id.to_string(),
        facts,
        timeline: entries.into_iter().map(|e| (when(&e.at), e.title, e.detail)).collect(),
        can_refund: kind.segment == "collections" && signed.can(&Method::POST, "/v1/refunds"),
    };
    send(status, &page, Vec::new())
}

/// `GET /dashboard/payments/{kind}/{id}`: one payment and its timeline.
pub(super) async fn detail(signed: Signed, Path((segment, id)): Path<(String, String)>) -> Response {
    detail_page(&signed, &segment, &id, None)
}

/// `POST /v1/refunds` `{collectionId, amount?, reason?, externalReference}`
/// from a collection's refund form.
pub(super) async fn refund(Path(id): Path<String>, Posted { signed, fields }: Posted) -> Response {
    let mut body = json!({ "collectionId": id, "externalReference": fields.text("externalReference") });
    for key in ["amount", "reason"] {
        if !fields.text(key).is_empty() {
            body[key] = Value::String(fields.text(key));
        }
    }
    let print = crate::domain::instructions::fingerprint(&body);
    let deps = crate::http::routes::movements::deps(&signed.stack);
    let created = match signed
        .admit(&Method::POST, "/v1/refunds")
        .and_then(|()| serde_json::from_value(body).map_err(|e| ApiError::bad_request(e.to_string())))
    {
        Ok(request) => refunds::create(&deps, &signed.principal, request, print).await,
        Err(e) => Err(e),
    };
    let notice = Notice::of(&created, |c| {
        format!(
            "Refund {} of {} is {}",
            c.view.id,
            money(&c.view.currency, &c.view.amount),
            name(&c.view.status)
        )
    });
    detail_page(&signed, "collections", &id, Some(notice))
}

#[derive(Template)]
#[template(path = "dashboard/payments_search.html")]
struct SearchView {
    shell: Shell,
    frame: Frame,
    q: String,
    hits: Vec<Hit>,
    /// The search stopped at its bound on records read or on hits.
    partial: bool,
}

struct Hit {
    kind: &'static str,
    noun: &'static str,
    id: String,
    field: String,
    value: String,
    created: String,
}

#[derive(Deserialize, Default)]
pub(super) struct SearchAsked {
    q: Option<String>,
}

/// The kind of payment a search hit is, when the member may read that kind.
fn hit_kind(signed: &Signed, kind: sika_api::admin::SearchKind) -> Option<&'static Kind> {
    let segment = match kind {
        sika_api::admin::SearchKind::Payout => "payouts",
        sika_api::admin::SearchKind::Collection => "collections",
        sika_api::admin::SearchKind::Order => "orders",
        _ => return None,
    };
    KINDS.iter().find(|k| k.segment == segment).filter(|k| signed.can(&Method::GET, k.read))
}

/// The node's search (`domain::search`, the operator's, run on this
/// stack for the member's organization only): any part of an id, a
/// reference or a phone number, among the kinds the member may read.
fn search_page(signed: &Signed, asked: &SearchAsked) -> ApiResult<SearchView> {
    if !KINDS.iter().any(|k| k.segment != "refunds" && signed.can(&Method::GET, k.read)) {
        signed.admit(&Method::GET, "/v1/payouts/{id}")?;
    }
    let needle = search::needle(asked.q.as_deref())?;
    let stacks = [(signed.stack.kind, &signed.stack.engine)];
    let found = search::search(&stacks, &[signed.member().organization.clone()], &needle)?;
    let hits = found
        .data
        .into_iter()
        .filter_map(|hit| {
            let kind = hit_kind(signed, hit.kind)?;
            Some(Hit {
                kind: kind.segment,
                noun: kind.noun,
                id: hit.id,
                field: hit.field,
                value: hit.value,
                created: when(&hit.created_at),
            })
        })
        .collect();
    Ok(SearchView {
        shell: shell(&signed.stack, "Search payments"),
        frame: frame(signed, "payments", None),
        q: asked.q.clone().unwrap_or_default().trim().to_string(),
        hits,
        partial: found.scan_limit_reached || found.hits_limit_reached,
    })
}

/// `GET /dashboard/payments/search?q=…`.
pub(super) async fn find(signed: Signed, Query(asked): Query<SearchAsked>) -> Response {
    match search_page(&signed, &asked) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sika_api::collections::CollectionStatus;
    use sika_api::orders::OrderStatus;
    use sika_api::payouts::PayoutStatus;
    use sika_api::refunds::RefundStatus;

    /// The wire names of every status of a wire enum (`VARIANTS`, so a
    /// status added to the enum is listed with no change here).
    fn names<T: serde::Serialize + strum::VariantArray>() -> Vec<String> {
        T::VARIANTS.iter().map(name).collect()
    }

    /// Each tab's status filter offers exactly the statuses its payments
    /// have: the domain's list (`Movement::STATUSES`, which the API's
    /// filter checks), which names every status the API writes. A status
    /// added to the domain shows in the dashboard with no change here.
    #[test]
    fn each_status_filter_lists_every_status_of_the_domain() {
        let wire = [
            ("payouts", names::<PayoutStatus>()),
            ("collections", names::<CollectionStatus>()),
            ("orders", names::<OrderStatus>()),
            ("refunds", names::<RefundStatus>()),
        ];
        assert_eq!(KINDS.len(), wire.len());
        for (segment, statuses) in wire {
            let shown = kind(segment).unwrap().statuses;
            assert_eq!(shown, statuses.iter().map(String::as_str).collect::<Vec<_>>(), "{segment}");
        }
        assert_eq!(kind("payouts").unwrap().statuses, <Payout as Movement>::STATUSES);
        assert_eq!(kind("orders").unwrap().statuses, <Order as Movement>::STATUSES);
    }
}
