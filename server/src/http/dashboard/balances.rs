//! Balances: each currency's balance, the balance transactions list
//! (currency and type filters, paged like the API's list, by its cursor),
//! a currency's statement for a period, and the CSV exports, downloaded
//! with the dashboard's session. Each reads through the API's own use case
//! (`domain::balance_transactions`, `domain::exports`), asked of the API's
//! requirements first.

use askama::Template;
use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use sika_api::exports::ExportRange;
use sika_api::refunds::RefundFilter;
use sika_api::statements::{BalanceTransactionFilter, Statement, StatementQuery};
use sika_api::{ListQuery, MovementFilter};
use sika_engine::balance_changes::ChangeType;

use super::pages::{BalanceRow, balances};
use super::session::Signed;
use super::views::{Frame, frame, money, refusal_page, send, shell, when};
use crate::domain::balance_transactions;
use crate::domain::error::ApiResult;
use crate::domain::exports;
use crate::http::pages::shell::Shell;
use crate::http::routes::exports::csv_response;

/// Rows per page, as the API's default.
const PAGE_ROWS: u32 = 20;

/// What the balances page's address says: the list's filters, its cursor,
/// and the period the statement form and the downloads start from.
#[derive(Deserialize, Default)]
pub(super) struct BalancesAsked {
    currency: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    cursor: Option<String>,
}

struct TransactionRow {
    id: String,
    kind: String,
    description: String,
    available_change: String,
    change: String,
    available_after: String,
    total_after: String,
    created: String,
}

/// A download: its label and the address that serves it.
struct Download {
    id: &'static str,
    label: &'static str,
    href: String,
}

/// The period form's values: this month so far, by default.
struct Period {
    from: String,
    to: String,
}

#[derive(Template)]
#[template(path = "dashboard/balances.html")]
struct BalancesPage {
    shell: Shell,
    frame: Frame,
    balances: Vec<BalanceRow>,
    currencies: Vec<String>,
    types: Vec<&'static str>,
    filter_currency: String,
    filter_type: String,
    rows: Vec<TransactionRow>,
    next: Option<String>,
    period: Period,
    downloads: Vec<Download>,
}

fn filled(value: &Option<String>) -> Option<String> {
    value.clone().filter(|s| !s.is_empty())
}

fn address(path: &str, pairs: &[(&str, &str)]) -> String {
    let kept = pairs.iter().filter(|(_, v)| !v.is_empty());
    let query: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(kept).finish();
    if query.is_empty() { path.to_string() } else { format!("{path}?{query}") }
}

/// The first day of this month and of the next, as dates.
fn this_month(now_ms: i64) -> Period {
    use chrono::Datelike as _;
    let today = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default().date_naive();
    let first = today.with_day(1).unwrap_or(today);
    let next = first.checked_add_months(chrono::Months::new(1)).unwrap_or(first);
    Period { from: first.to_string(), to: next.to_string() }
}

/// The four exports of `period` (`currency` narrowing the balance
/// transactions'), each only when the member may read its list.
fn downloads(signed: &Signed, period: &Period, currency: &str) -> Vec<Download> {
    let range = [("createdFrom", period.from.as_str()), ("createdTo", period.to.as_str())];
    [
        ("download-balance-transactions", "Balance transactions", "balance-transactions"),
        ("download-payouts", "Payouts", "payouts"),
        ("download-collections", "Collections", "collections"),
        ("download-refunds", "Refunds", "refunds"),
    ]
    .into_iter()
    .filter(|(_, _, resource)| signed.can(&Method::GET, &format!("/v1/exports/{resource}.csv")))
    .map(|(id, label, resource)| {
        let mut pairs = range.to_vec();
        if resource == "balance-transactions" {
            pairs.push(("currency", currency));
        }
        Download { id, label, href: address(&format!("/dashboard/exports/{resource}.csv"), &pairs) }
    })
    .collect()
}

fn balances_page(signed: &Signed, asked: &BalancesAsked) -> ApiResult<BalancesPage> {
    signed.admit(&Method::GET, "/v1/balance-transactions")?;
    let balances = balances(signed)?.unwrap_or_default();
    let filter = BalanceTransactionFilter {
        currency: filled(&asked.currency),
        kind: filled(&asked.kind),
        ..Default::default()
    };
    let query = ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor: filled(&asked.cursor) };
    let page = balance_transactions::list((&*signed.stack).into(), &signed.principal, query, filter)?;
    let rows = page
        .data
        .iter()
        .map(|t| TransactionRow {
            id: t.id.clone(),
            kind: t.kind.clone(),
            description: t.description.clone(),
            available_change: money(&t.currency, &t.available_change),
            change: money(&t.currency, &t.total_change),
            available_after: money(&t.currency, &t.available_after),
            total_after: money(&t.currency, &t.total_after),
            created: when(&t.created_at),
        })
        .collect();
    let (currency, kind) =
        (asked.currency.clone().unwrap_or_default(), asked.kind.clone().unwrap_or_default());
    let next = page.next_cursor.filter(|_| page.has_more).map(|cursor| {
        address("/dashboard/balances", &[("currency", &currency), ("type", &kind), ("cursor", &cursor)])
    });
    let period = this_month(signed.stack.now_ms());
    Ok(BalancesPage {
        shell: shell(&signed.stack, "Balances"),
        frame: frame(signed, "balances", None),
        currencies: balances.iter().map(|b| b.currency.clone()).collect(),
        balances,
        types: ChangeType::ALL.iter().map(|t| t.name()).collect(),
        downloads: downloads(signed, &period, &currency),
        filter_currency: currency,
        filter_type: kind,
        rows,
        next,
        period,
    })
}

/// `GET /dashboard/balances?currency=…&type=…&cursor=…`.
pub(super) async fn page(signed: Signed, Query(asked): Query<BalancesAsked>) -> Response {
    match balances_page(&signed, &asked) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/statement.html")]
struct StatementPage {
    shell: Shell,
    frame: Frame,
    statement: Statement,
    from: String,
    to: String,
    opening_available: String,
    opening_total: String,
    closing_available: String,
    closing_total: String,
    totals: Vec<(String, u64, String, String)>,
    period: Period,
    downloads: Vec<Download>,
}

/// What the statement form sends: a currency and a period.
#[derive(Deserialize)]
pub(super) struct StatementAsked {
    currency: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

fn statement_page(signed: &Signed, asked: StatementAsked) -> ApiResult<StatementPage> {
    signed.admit(&Method::GET, "/v1/statements")?;
    let query = StatementQuery { currency: asked.currency, from: asked.from.clone(), to: asked.to.clone() };
    let statement = balance_transactions::statement(&signed.stack.engine, &signed.principal, query)?;
    let c = statement.currency.clone();
    let period = Period { from: asked.from.unwrap_or_default(), to: asked.to.unwrap_or_default() };
    Ok(StatementPage {
        shell: shell(&signed.stack, &format!("{c} statement")),
        frame: frame(signed, "balances", None),
        from: when(&statement.from),
        to: when(&statement.to),
        opening_available: money(&c, &statement.opening.available),
        opening_total: money(&c, &statement.opening.total),
        closing_available: money(&c, &statement.closing.available),
        closing_total: money(&c, &statement.closing.total),
        totals: statement
            .totals
            .iter()
            .map(|t| (t.kind.clone(), t.count, money(&c, &t.available_change), money(&c, &t.total_change)))
            .collect(),
        downloads: downloads(signed, &period, &c),
        period,
        statement,
    })
}

/// `GET /dashboard/balances/statement?currency=…&from=…&to=…`: the API's
/// statement of one currency for the period.
pub(super) async fn statement(signed: Signed, Query(asked): Query<StatementAsked>) -> Response {
    match statement_page(&signed, asked) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

/// What a download's address says: the period and the list's filters.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ExportAsked {
    created_from: Option<String>,
    created_to: Option<String>,
    currency: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    status: Option<String>,
}

impl ExportAsked {
    fn range(&self) -> ExportRange {
        ExportRange { created_from: filled(&self.created_from), created_to: filled(&self.created_to) }
    }

    fn movements(&self) -> MovementFilter {
        MovementFilter { status: filled(&self.status), external_reference: None }
    }
}

/// One export as the API serves it, refused as a page when the member's
/// role may not read it or the period is wrong.
fn export(signed: &Signed, resource: &str, asked: &ExportAsked) -> Response {
    let lists = || (&*signed.stack).into();
    let principal = &signed.principal;
    let made =
        signed.admit(&Method::GET, &format!("/v1/exports/{resource}.csv")).and_then(|()| match resource {
            "balance-transactions" => exports::balance_transactions(
                lists(),
                principal,
                BalanceTransactionFilter {
                    currency: filled(&asked.currency),
                    kind: filled(&asked.kind),
                    source_id: None,
                    created_from: filled(&asked.created_from),
                    created_to: filled(&asked.created_to),
                },
            ),
            "payouts" => exports::payouts(lists(), principal, &asked.range(), asked.movements()),
            "collections" => exports::collections(lists(), principal, &asked.range(), asked.movements()),
            _ => {
                let filter = RefundFilter { status: filled(&asked.status), collection_id: None };
                exports::refunds(lists(), principal, &asked.range(), filter)
            }
        });
    match made {
        Ok(export) => csv_response(export),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

/// `GET /dashboard/exports/balance-transactions.csv`.
pub(super) async fn export_balance_transactions(
    signed: Signed,
    Query(asked): Query<ExportAsked>,
) -> Response {
    export(&signed, "balance-transactions", &asked)
}

/// `GET /dashboard/exports/payouts.csv`.
pub(super) async fn export_payouts(signed: Signed, Query(asked): Query<ExportAsked>) -> Response {
    export(&signed, "payouts", &asked)
}

/// `GET /dashboard/exports/collections.csv`.
pub(super) async fn export_collections(signed: Signed, Query(asked): Query<ExportAsked>) -> Response {
    export(&signed, "collections", &asked)
}

/// `GET /dashboard/exports/refunds.csv`.
pub(super) async fn export_refunds(signed: Signed, Query(asked): Query<ExportAsked>) -> Response {
    export(&signed, "refunds", &asked)
}
