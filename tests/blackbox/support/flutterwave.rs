//! A strict fake of Flutterwave's v3 API on loopback, written from the
//! public reference (developer.flutterwave.com): it refuses what the
//! provider would refuse (no or a wrong `Authorization: Bearer` secret, a
//! missing required field, a reference or `tx_ref` it has already seen, an
//! M-Pesa transfer without the sender in `meta`, a bank transfer to a bank
//! code it does not list or, where the reference asks for one, without a
//! branch code, an account resolve of an account it does not hold) and can
//! be scripted: transfers and charges settle when a test says so, the
//! next N answers (or every answer) are 5xx, and a transfer's answer can be
//! held after the transfer is recorded (a node killed meanwhile never hears
//! it). Tests post notifications to the node themselves, as the provider
//! would, with [`FakeFlutterwave::notify`].
//!
//! Refunds, from the v3 reference ("Refund a transaction", "Fetch multiple
//! refunded transactions", "Get a refund", and the refunds guide:
//! developer.flutterwave.com/v3.0.0/reference/transaction-refund,
//! /v3.0.0/reference/get-all-refunds, /docs/collecting-payments/refunds):
//! `POST /v3/transactions/{id}/refund` takes the charge's numeric `id` in the
//! path and `amount` (a partial refund; the whole charge when absent),
//! `comments` and `callback_url` in the body, and has no reference field of
//! its own: it refuses a charge it does not hold or that is not
//! `successful`, an amount that is not a positive number, and an amount over
//! what is left of the charge. `GET /v3/refunds` filters by `from`, `to`,
//! `status`, `currency`, `flw_ref` and `id` (the charge's id), and refuses
//! any other parameter; `GET /v3/refunds/{id}` reads one refund. A refund
//! starts `pending` (or as [`FakeState::refund_status`] says) and settles
//! when a test says so (`completed` or `failed`).
//!
//! Lists, for reconciliation, from the v3 reference ("Get all transfers" in
//! developer.flutterwave.com/reference/endpoints/transfers; "Get multiple
//! transactions" in developer.flutterwave.com/reference/endpoints/transactions
//! and flutterwaveinc.mintlify.app/api-reference/transactions/get-multiple-transactions):
//! `GET /v3/transfers` takes `page` and `status` (and `reference`, which the
//! connector finds one transfer by) and no dates; `GET /v3/transactions`
//! takes `from` and `to` (`YYYY-MM-DD`, both days included), `page`,
//! `customer_email`, `status`, `tx_ref`, `customer_fullname` and
//! `currency`. Both answer pages of [`PAGE_SIZE`], newest first, with
//! `meta.page_info` `{total, current_page, total_pages}`, and refuse any
//! other parameter, a `page` that is not a whole number from 1, and a date
//! not written `YYYY-MM-DD`. Each transfer and charge carries `created_at`.
//! A test makes the provider disagree with Sika through the state, as the
//! provider's own records would: [`FakeFlutterwave::add_transfer`] and
//! [`FakeFlutterwave::add_charge`] (movements Sika never made),
//! [`FakeFlutterwave::set_amount`] and [`FakeFlutterwave::forget`].
//!
//! A transfer that succeeded can be
//! reversed afterwards ([`FakeFlutterwave::reverse_transfer`]), as the
//! reference's transfer reversal shows it: `status` `FAILED` and a
//! `reversal` object (`reversal_datetime`, `initial_status` `SUCCESSFUL`,
//! `reconciliation_status` `REVERSED`, `reconciliation_type`); only a
//! successful transfer can be, and only once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const SECRET_KEY: &str = "FLWSECK_TEST-5a1c0ffee0000000000000000000000-X";
pub const WEBHOOK_HASH: &str = "a-webhook-hash-only-flutterwave-and-sika-know";
pub const SENDER_NAME: &str = "Sika Test Ltd";

#[derive(Default)]
pub struct FakeState {
    pub transfers: Vec<Value>,
    pub charges: Vec<Value>,
    /// Every `POST /v3/transfers` that reached validation, accepted or not.
    pub transfer_posts: u32,
    /// Bank accounts `POST /v3/accounts/resolve` knows: (bank code,
    /// account number, holder's name).
    pub accounts: Vec<(String, String, String)>,
    /// Every `POST /v3/accounts/resolve` that passed the gate.
    pub resolve_posts: u32,
    /// Refunds, in the shape `GET /v3/refunds` lists them (plus `tx_id`,
    /// `currency` and `destination` as the initiate answer shows them).
    pub refunds: Vec<Value>,
    /// Every `POST /v3/transactions/{id}/refund` that passed the gate.
    pub refund_posts: u32,
    /// The status a new refund starts in (`pending` when unset).
    pub refund_status: Option<String>,
    /// Record a refund, then hold its answer while this is set (past the
    /// node's request timeout, or across a SIGKILL).
    pub hold_refunds: bool,
    /// Refuse every refund with this message, as the provider does when
    /// the merchant's balance there cannot pay it.
    pub refuse_refunds: Option<String>,
    /// The refund list lags its writes: `GET /v3/refunds` shows none while
    /// this is set (`GET /v3/refunds/{id}` still does).
    pub refunds_lag: bool,
    /// Requests refused as malformed, with why.
    pub refused: Vec<String>,
    /// Answer the next N requests with a 5xx.
    pub fail_next: u32,
    /// Answer every request with a 5xx.
    pub down: bool,
    /// Hold the next N answers for [`STALL`] (longer than Sika waits).
    pub stall_next: u32,
    /// Record a transfer, then hold its answer while this is set.
    pub hold: bool,
    /// The transfer list lags its writes: `GET /v3/transfers` shows none
    /// while this is set (a duplicate reference is still refused).
    pub list_lags: bool,
    /// Every page of the transfer and transaction lists asked for, as
    /// `transfers page=N` or `transactions page=N`.
    pub list_pages: Vec<String>,
    /// Answer this page of either list with a 5xx (the others as usual).
    pub fail_list_page: Option<usize>,
    next_id: u64,
}

pub struct FakeFlutterwave {
    pub url: String,
    state: Arc<Mutex<FakeState>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

type Shared = Arc<Mutex<FakeState>>;
type Answer = (StatusCode, Json<Value>);

fn error(status: StatusCode, message: &str) -> Answer {
    (status, Json(json!({ "status": "error", "message": message, "data": null })))
}

/// Items per page of `GET /v3/transfers` and `GET /v3/transactions` (the
/// reference's example: 158 transactions in 16 pages).
pub const PAGE_SIZE: usize = 10;

/// Now, as the provider writes `created_at`.
fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// How long a stalled answer takes: past the node's 10 s request timeout.
pub const STALL: Duration = Duration::from_secs(12);

/// The checks every request passes first: the secret, then the script.
async fn gate(state: &Shared, headers: &HeaderMap) -> Result<(), Answer> {
    let stall = {
        let mut s = state.lock().unwrap();
        let stall = s.stall_next > 0;
        s.stall_next = s.stall_next.saturating_sub(1);
        stall
    };
    if stall {
        tokio::time::sleep(STALL).await;
    }
    gate_now(state, headers)
}

fn gate_now(state: &Shared, headers: &HeaderMap) -> Result<(), Answer> {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if auth != format!("Bearer {SECRET_KEY}") {
        return Err(error(StatusCode::UNAUTHORIZED, "Invalid authorization key"));
    }
    let mut s = state.lock().unwrap();
    if s.down {
        return Err(error(StatusCode::SERVICE_UNAVAILABLE, "Service unavailable"));
    }
    if s.fail_next > 0 {
        s.fail_next -= 1;
        return Err(error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error"));
    }
    Ok(())
}

fn text(body: &Value, field: &str) -> Option<String> {
    body[field].as_str().map(str::to_string).filter(|s| !s.trim().is_empty())
}

/// The reference says `amount` is a number.
fn positive_number(body: &Value) -> bool {
    body["amount"].as_f64().is_some_and(|a| a > 0.0)
}

fn refuse(state: &Shared, why: String) -> Answer {
    state.lock().unwrap().refused.push(why.clone());
    error(StatusCode::BAD_REQUEST, &why)
}

/// The mobile-money operators' `account_bank` codes (the mobile money
/// transfer guide's table).
const WALLETS: &[&str] = &[
    "MPS",
    "MPX",
    "MTN",
    "VODAFONE",
    "TELECEL",
    "AIRTELTIGO",
    "TIGO",
    "AIRTEL",
    "ORANGE",
    "ORANGEMONEY",
    "WAVE",
    "MOOV",
    "FMM",
    "EMONEY",
    "FREEMONEY",
];

/// Nigerian banks as `GET /v3/banks/NG` lists them (a few).
const NG_BANKS: &[&str] = &["044", "058", "057", "011", "033", "232", "035", "050", "070", "214"];

/// Currencies whose bank transfers need `destination_branch_code`.
const BRANCH_CODE_CURRENCIES: &[&str] = &["GHS", "UGX", "TZS", "RWF", "XOF", "XAF", "SLL", "MWK"];

/// `meta` as one object (the reference shows it both bare and in an array).
fn meta(body: &Value) -> Value {
    match &body["meta"] {
        Value::Array(items) => items.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// What the reference requires of a transfer beyond the common fields, or
/// why it would refuse it.
fn transfer_problem(body: &Value) -> Option<String> {
    let bank = text(body, "account_bank").unwrap_or_default();
    let currency = text(body, "currency").unwrap_or_default();
    let number = text(body, "account_number").unwrap_or_default();
    if WALLETS.contains(&bank.as_str()) {
        if text(body, "beneficiary_name").is_none() {
            return Some("beneficiary_name is required".into());
        }
        if bank == "MPS" && currency == "KES" {
            let meta = meta(body);
            for field in ["sender", "sender_country", "mobile_number"] {
                if text(&meta, field).is_none() {
                    return Some(format!("meta.{field} is required for M-Pesa transfers"));
                }
            }
        }
        return None;
    }
    match currency.as_str() {
        "NGN" if !NG_BANKS.contains(&bank.as_str()) => Some(format!("Invalid bank code {bank}")),
        "NGN" if number.len() != 10 || !number.bytes().all(|b| b.is_ascii_digit()) => {
            Some("account_number must be a 10-digit NUBAN".into())
        }
        c if BRANCH_CODE_CURRENCIES.contains(&c) && text(body, "destination_branch_code").is_none() => {
            Some("destination_branch_code is required".into())
        }
        "ZAR" => ["first_name", "last_name", "email", "mobile_number", "recipient_address"]
            .into_iter()
            .find(|f| text(&meta(body), f).is_none())
            .map(|f| format!("meta.{f} is required for ZAR transfers")),
        _ => None,
    }
}

async fn create_transfer(State(state): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    state.lock().unwrap().transfer_posts += 1;
    // The provider makes up a reference when none is given; Sika must
    // always give its own, or a retry could not find the first attempt.
    for field in ["account_bank", "account_number", "currency", "reference"] {
        if text(&body, field).is_none() {
            return refuse(&state, format!("{field} is required"));
        }
    }
    if !positive_number(&body) {
        return refuse(&state, "amount must be a number above 0".into());
    }
    if let Some(why) = transfer_problem(&body) {
        return refuse(&state, why);
    }
    let reference = text(&body, "reference").unwrap();
    let transfer = {
        let mut s = state.lock().unwrap();
        if s.transfers.iter().any(|t| t["reference"] == reference.as_str()) {
            drop(s);
            return error(
                StatusCode::BAD_REQUEST,
                "Duplicate reference: a transfer with this reference already exists",
            );
        }
        s.next_id += 1;
        let transfer = json!({
            "id": 400_000 + s.next_id,
            "account_number": body["account_number"],
            "bank_code": body["account_bank"],
            "full_name": body["beneficiary_name"],
            "currency": body["currency"],
            "amount": body["amount"],
            "narration": body["narration"],
            "reference": reference,
            "meta": body["meta"],
            "status": "NEW",
            "complete_message": "",
            "requires_approval": 0,
            "is_approved": 1,
            "created_at": now_text(),
        });
        s.transfers.push(transfer.clone());
        transfer
    };
    // Held: the transfer exists here, but the caller does not hear so.
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.lock().unwrap().hold && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (
        StatusCode::OK,
        Json(json!({ "status": "success", "message": "Transfer Queued Successfully", "data": transfer })),
    )
}

/// The query parameters of a `GET`, by name.
type Params = Query<std::collections::HashMap<String, String>>;

/// Answers a read once the gate lets it through, from the state as it is
/// then.
async fn read(state: &Shared, headers: &HeaderMap, answer: impl FnOnce(&FakeState) -> Answer) -> Answer {
    if let Err(answer) = gate(state, headers).await {
        return answer;
    }
    answer(&state.lock().unwrap())
}

async fn list_transfers(State(state): State<Shared>, headers: HeaderMap, Query(query): Params) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    let page = match list_page(&query, TRANSFER_FILTERS) {
        Ok(page) => page,
        Err(why) => return refuse(&state, why),
    };
    let mut s = state.lock().unwrap();
    if !query.contains_key("reference") {
        s.list_pages.push(format!("transfers page={page}"));
        if s.fail_list_page == Some(page) {
            return error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error");
        }
    }
    let data: Vec<Value> = s
        .transfers
        .iter()
        .rev()
        .filter(|_| !s.list_lags)
        .filter(|t| query.get("reference").is_none_or(|r| t["reference"] == r.as_str()))
        .filter(|t| {
            query
                .get("status")
                .is_none_or(|st| t["status"].as_str().is_some_and(|v| v.eq_ignore_ascii_case(st)))
        })
        .cloned()
        .collect();
    paged(data, page, "Transfers fetched")
}

/// The query parameters `GET /v3/transfers` takes: the reference's `page`
/// and `status`, and `reference`.
const TRANSFER_FILTERS: &[&str] = &["page", "status", "reference"];

/// The query parameters `GET /v3/transactions` takes.
const TRANSACTION_FILTERS: &[&str] =
    &["from", "to", "page", "customer_email", "status", "tx_ref", "customer_fullname", "currency"];

/// The page a list asks for (1 when unset), or why the provider refuses the
/// query: a parameter it does not take, or a `page` that is not a whole
/// number from 1.
fn list_page(query: &std::collections::HashMap<String, String>, allowed: &[&str]) -> Result<usize, String> {
    if let Some(unknown) = query.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("unknown query parameter {unknown}"));
    }
    match query.get("page") {
        None => Ok(1),
        Some(page) => page
            .parse::<usize>()
            .ok()
            .filter(|p| *p >= 1)
            .ok_or_else(|| format!("page must be a whole number from 1, not '{page}'")),
    }
}

/// One page of `items` (newest first) with `meta.page_info`.
fn paged(items: Vec<Value>, page: usize, message: &str) -> Answer {
    let total = items.len();
    let total_pages = total.div_ceil(PAGE_SIZE).max(1);
    let data: Vec<Value> = items.into_iter().skip((page - 1) * PAGE_SIZE).take(PAGE_SIZE).collect();
    let page_info = json!({ "total": total, "current_page": page, "total_pages": total_pages });
    let body =
        json!({ "status": "success", "message": message, "meta": { "page_info": page_info }, "data": data });
    (StatusCode::OK, Json(body))
}

/// A `from` or `to` of `GET /v3/transactions`: `YYYY-MM-DD`.
fn list_date(
    query: &std::collections::HashMap<String, String>,
    field: &str,
) -> Result<Option<chrono::NaiveDate>, String> {
    match query.get(field) {
        None => Ok(None),
        Some(text) => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map(Some)
            .map_err(|_| format!("{field} must be a date written YYYY-MM-DD, not '{text}'")),
    }
}

/// A charge as `GET /v3/transactions` lists it (the reference's fields).
fn listed_charge(charge: &Value) -> Value {
    json!({
        "id": charge["id"],
        "tx_ref": charge["tx_ref"],
        "flw_ref": charge["flw_ref"],
        "device_fingerprint": "N/A",
        "amount": charge["amount"],
        "currency": charge["currency"],
        "charged_amount": charge["amount"],
        "app_fee": 0,
        "merchant_fee": 0,
        "processor_response": charge["processor_response"],
        "auth_model": "MOBILEMONEY",
        "narration": "Sika Test Ltd",
        "status": charge["status"],
        "payment_type": "mobilemoneygh",
        "created_at": charge["created_at"],
        "account_id": 73362,
        "customer": { "id": 252759, "email": charge["email"], "phone_number": charge["phone_number"],
                      "name": "Anonymous customer", "created_at": charge["created_at"] },
    })
}

/// `GET /v3/transactions`: the charges made between `from` and `to` (days,
/// both included), filtered as the reference says, a page at a time.
async fn list_transactions(State(state): State<Shared>, headers: HeaderMap, Query(query): Params) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    let page = match list_page(&query, TRANSACTION_FILTERS) {
        Ok(page) => page,
        Err(why) => return refuse(&state, why),
    };
    let (from, to) = match (list_date(&query, "from"), list_date(&query, "to")) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(why), _) | (_, Err(why)) => return refuse(&state, why),
    };
    let mut s = state.lock().unwrap();
    s.list_pages.push(format!("transactions page={page}"));
    if s.fail_list_page == Some(page) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error");
    }
    let day = |charge: &Value| {
        charge["created_at"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.date_naive())
    };
    let text_is = |charge: &Value, field: &str, key: &str| {
        query.get(key).is_none_or(|want| charge[field].as_str().is_some_and(|v| v.eq_ignore_ascii_case(want)))
    };
    let data: Vec<Value> = s
        .charges
        .iter()
        .rev()
        .filter(|c| from.is_none_or(|from| day(c).is_some_and(|d| d >= from)))
        .filter(|c| to.is_none_or(|to| day(c).is_some_and(|d| d <= to)))
        .filter(|c| text_is(c, "status", "status") && text_is(c, "currency", "currency"))
        .filter(|c| text_is(c, "tx_ref", "tx_ref") && text_is(c, "email", "customer_email"))
        .map(listed_charge)
        .collect();
    paged(data, page, "Transactions fetched")
}

/// `POST /v3/accounts/resolve`: Nigerian bank accounts (and M-Pesa numbers
/// with `type` and `country`); an account it does not hold is the
/// reference's "invalid" answer.
async fn resolve_account(State(state): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    state.lock().unwrap().resolve_posts += 1;
    for field in ["account_number", "account_bank"] {
        if text(&body, field).is_none() {
            return refuse(&state, format!("{field} is required"));
        }
    }
    let (bank, number) = (text(&body, "account_bank").unwrap(), text(&body, "account_number").unwrap());
    if bank == "MPS"
        && (text(&body, "type").as_deref() != Some("MOBILEMONEY") || text(&body, "country").is_none())
    {
        return refuse(
            &state,
            "type MOBILEMONEY and country are required to resolve an M-Pesa number".into(),
        );
    }
    if bank != "MPS" && !NG_BANKS.contains(&bank.as_str()) {
        return refuse(&state, format!("Account resolve is not available for bank code {bank}"));
    }
    let s = state.lock().unwrap();
    match s.accounts.iter().find(|(b, n, _)| *b == bank && *n == number) {
        Some((_, _, name)) => {
            let data = json!({ "account_number": number, "account_name": name });
            (
                StatusCode::OK,
                Json(json!({ "status": "success", "message": "Account details fetched", "data": data })),
            )
        }
        None => error(
            StatusCode::BAD_REQUEST,
            "Sorry, that account number is invalid, please check and try again",
        ),
    }
}

const CHARGE_TYPES: &[&str] =
    &["mobile_money_ghana", "mobile_money_uganda", "mobile_money_rwanda", "mobile_money_franco", "mpesa"];

async fn create_charge(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
    Json(body): Json<Value>,
) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    let kind = query.get("type").cloned().unwrap_or_default();
    if !CHARGE_TYPES.contains(&kind.as_str()) {
        return refuse(&state, format!("unknown charge type '{kind}'"));
    }
    for field in ["tx_ref", "currency", "email", "phone_number"] {
        if text(&body, field).is_none() {
            return refuse(&state, format!("{field} is required"));
        }
    }
    if matches!(kind.as_str(), "mobile_money_ghana" | "mobile_money_uganda")
        && text(&body, "network").is_none()
    {
        return refuse(&state, "network is required".into());
    }
    if kind == "mobile_money_franco" && text(&body, "country").is_none() {
        return refuse(&state, "country is required".into());
    }
    if !positive_number(&body) {
        return refuse(&state, "amount must be a number above 0".into());
    }
    let tx_ref = text(&body, "tx_ref").unwrap();
    let mut s = state.lock().unwrap();
    if s.charges.iter().any(|c| c["tx_ref"] == tx_ref.as_str()) {
        return error(StatusCode::BAD_REQUEST, "Duplicate transaction reference");
    }
    s.next_id += 1;
    let charge = json!({
        "id": 700_000 + s.next_id,
        "tx_ref": tx_ref,
        "flw_ref": format!("FLW-MOCK-{}", s.next_id),
        "amount": body["amount"],
        "currency": body["currency"],
        "network": body["network"],
        "phone_number": body["phone_number"],
        "email": body["email"],
        "charge_type": kind,
        "status": "pending",
        "processor_response": "Transaction in progress",
        "created_at": now_text(),
    });
    s.charges.push(charge.clone());
    (StatusCode::OK, Json(json!({ "status": "success", "message": "Charge initiated", "data": charge })))
}

async fn verify_by_reference(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(query): Params,
) -> Answer {
    let tx_ref = query.get("tx_ref").cloned().unwrap_or_default();
    read(&state, &headers, |s| match s.charges.iter().find(|c| c["tx_ref"] == tx_ref.as_str()) {
        Some(charge) => (
            StatusCode::OK,
            Json(
                json!({ "status": "success", "message": "Transaction fetched successfully", "data": charge }),
            ),
        ),
        None => error(StatusCode::BAD_REQUEST, "No transaction was found for this id"),
    })
    .await
}

/// An amount as the reference takes it: a JSON number, or a string of one
/// (the reference's own examples send both), above 0.
fn refund_amount(value: &Value) -> Option<Result<f64, String>> {
    let amount = match value {
        Value::Null => return None,
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|a| a.is_finite()),
        _ => None,
    };
    Some(amount.filter(|a| *a > 0.0).ok_or_else(|| "amount must be a number above 0".to_string()))
}

/// Minor units (hundredths) of an amount, so sums compare exactly.
fn cents(amount: f64) -> i64 {
    (amount * 100.0).round() as i64
}

/// `POST /v3/transactions/{id}/refund`.
async fn refund_transaction(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Answer {
    if let Err(answer) = gate(&state, &headers).await {
        return answer;
    }
    state.lock().unwrap().refund_posts += 1;
    // The path takes the charge's numeric `data.id`, never its `tx_ref`.
    let Ok(tx_id) = id.parse::<u64>() else {
        return refuse(&state, format!("Invalid transaction id {id}"));
    };
    let amount = match refund_amount(&body["amount"]) {
        Some(Ok(amount)) => Some(amount),
        Some(Err(why)) => return refuse(&state, why),
        None => None,
    };
    for field in ["comments", "callback_url"] {
        if !matches!(body[field], Value::Null | Value::String(_)) {
            return refuse(&state, format!("{field} must be a string"));
        }
    }
    let recorded = record_refund(&mut state.lock().unwrap(), tx_id, amount, &body["comments"]);
    let refund = match recorded {
        Ok(refund) => refund,
        Err(why) => return refuse(&state, why),
    };
    // Held: the refund exists here, but the caller does not hear so.
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.lock().unwrap().hold_refunds && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let data = shown(&refund, INITIATED_FIELDS);
    (
        StatusCode::OK,
        Json(json!({ "status": "success", "message": "Transaction refund initiated", "data": data })),
    )
}

/// Records a refund of charge `tx_id` as the provider would, or says why
/// it refuses it.
fn record_refund(
    s: &mut FakeState,
    tx_id: u64,
    amount: Option<f64>,
    comments: &Value,
) -> Result<Value, String> {
    if let Some(why) = s.refuse_refunds.clone() {
        return Err(why);
    }
    let Some(charge) = s.charges.iter().find(|c| c["id"] == tx_id).cloned() else {
        return Err("No transaction was found for this id".into());
    };
    if charge["status"] != "successful" {
        return Err("Only a successful transaction can be refunded".into());
    }
    let charged = charge["amount"].as_f64().unwrap_or(0.0);
    let refunded: i64 = s
        .refunds
        .iter()
        .filter(|r| r["transaction_id"] == tx_id && r["status"] != "failed")
        .map(|r| cents(r["amount_refunded"].as_f64().unwrap_or(0.0)))
        .sum();
    let left = cents(charged) - refunded;
    let amount = amount.unwrap_or(left as f64 / 100.0);
    if cents(amount) > left || left <= 0 {
        return Err("Refund amount cannot be greater than the transaction amount left".into());
    }
    s.next_id += 1;
    let n = s.next_id;
    let status = s.refund_status.clone().unwrap_or_else(|| "pending".into());
    let refund = json!({
        "id": 900_000 + n,
        "account_id": 73362,
        "tx_id": tx_id,
        "transaction_id": tx_id,
        "flw_ref": format!("URF_MOCK_{n}"),
        "wallet_id": 74639,
        "amount_refunded": amount,
        "currency": charge["currency"],
        "status": status,
        "destination": "payment_source",
        "comment": comments,
        "settlement_id": "NEW",
        "meta": { "source": "availablebalance" },
        "created_at": "2026-11-27T09:00:00.000Z",
    });
    s.refunds.push(refund.clone());
    Ok(refund)
}

/// The fields the initiate answer shows (the reference's example).
const INITIATED_FIELDS: &[&str] = &[
    "id",
    "account_id",
    "tx_id",
    "flw_ref",
    "wallet_id",
    "amount_refunded",
    "status",
    "destination",
    "meta",
    "created_at",
];

/// The fields `GET /v3/refunds` and `GET /v3/refunds/{id}` show.
const LISTED_FIELDS: &[&str] = &[
    "id",
    "amount_refunded",
    "status",
    "flw_ref",
    "comment",
    "settlement_id",
    "meta",
    "created_at",
    "account_id",
    "transaction_id",
];

/// A refund as one endpoint shows it: only the fields its reference names.
fn shown(refund: &Value, fields: &[&str]) -> Value {
    Value::Object(fields.iter().map(|f| (f.to_string(), refund[*f].clone())).collect())
}

/// The query parameters `GET /v3/refunds` takes.
const REFUND_FILTERS: &[&str] = &["from", "to", "status", "currency", "flw_ref", "id", "page"];

/// `GET /v3/refunds`.
async fn list_refunds(State(state): State<Shared>, headers: HeaderMap, Query(query): Params) -> Answer {
    if let Some(unknown) = query.keys().find(|k| !REFUND_FILTERS.contains(&k.as_str())) {
        let why = format!("unknown query parameter {unknown}");
        if let Err(answer) = gate(&state, &headers).await {
            return answer;
        }
        return refuse(&state, why);
    }
    read(&state, &headers, |s| {
        let data: Vec<Value> = s
            .refunds
            .iter()
            .filter(|_| !s.refunds_lag)
            .filter(|r| query.get("id").is_none_or(|id| id.parse::<u64>().is_ok_and(|id| r["transaction_id"] == id)))
            .filter(|r| query.get("flw_ref").is_none_or(|f| r["flw_ref"] == f.as_str()))
            .filter(|r| query.get("status").is_none_or(|st| r["status"] == st.as_str()))
            .filter(|r| query.get("currency").is_none_or(|c| r["currency"] == c.as_str()))
            .map(|r| shown(r, LISTED_FIELDS))
            .collect();
        let page_info = json!({ "total": data.len(), "current_page": 1, "total_pages": 1, "page_size": 20 });
        let body = json!({ "status": "success", "message": "Refunds fetched", "meta": { "page_info": page_info }, "data": data });
        (StatusCode::OK, Json(body))
    })
    .await
}

/// `GET /v3/refunds/{id}`.
async fn get_refund(State(state): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Answer {
    let id = id.parse::<u64>().ok();
    read(&state, &headers, |s| match s.refunds.iter().find(|r| id.is_some_and(|id| r["id"] == id)) {
        Some(refund) => (
            StatusCode::OK,
            Json(json!({ "status": "success", "message": "Refund fetched", "data": shown(refund, LISTED_FIELDS) })),
        ),
        None => error(StatusCode::NOT_FOUND, "Refund not found"),
    })
    .await
}

async fn balances(State(state): State<Shared>, headers: HeaderMap) -> Answer {
    read(&state, &headers, |_| {
        (
            StatusCode::OK,
            Json(json!({ "status": "success", "message": "Wallet balances fetched", "data": [] })),
        )
    })
    .await
}

impl FakeFlutterwave {
    pub fn start() -> FakeFlutterwave {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route("/v3/transfers", post(create_transfer).get(list_transfers))
            .route("/v3/charges", post(create_charge))
            .route("/v3/transactions", get(list_transactions))
            .route("/v3/transactions/verify_by_reference", get(verify_by_reference))
            .route("/v3/balances", get(balances))
            .route("/v3/accounts/resolve", post(resolve_account))
            .route("/v3/transactions/{id}/refund", post(refund_transaction))
            .route("/v3/refunds", get(list_refunds))
            .route("/v3/refunds/{id}", get(get_refund))
            .with_state(state.clone());
        let (url, stop) = super::serve_in_background(app, "the fake Flutterwave");
        FakeFlutterwave { url, state, _stop: stop }
    }

    /// The `[rails.flutterwave]` table pointing at this fake, with the
    /// sender M-Pesa transfers need.
    pub fn config(&self, methods: &[&str]) -> String {
        let methods: Vec<String> = methods.iter().map(|m| format!("\"{m}\"")).collect();
        format!(
            "\n[rails.flutterwave]\nsecret_key = \"{SECRET_KEY}\"\nwebhook_hash = \"{WEBHOOK_HASH}\"\n\
             base_url = \"{}\"\nmethods = [{}]\n\n[rails.flutterwave.sender]\nname = \"{SENDER_NAME}\"\n\
             country = \"KE\"\nmobile_number = \"+254700000001\"\n",
            self.url,
            methods.join(", ")
        )
    }

    /// Makes `POST /v3/accounts/resolve` know an account.
    pub fn open_account(&self, bank: &str, number: &str, name: &str) {
        self.with(|s| s.accounts.push((bank.into(), number.into(), name.into())));
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut FakeState) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    pub fn transfers_for(&self, reference: &str) -> Vec<Value> {
        self.with(|s| s.transfers.iter().filter(|t| t["reference"] == reference).cloned().collect())
    }

    pub fn charge_for(&self, tx_ref: &str) -> Option<Value> {
        self.with(|s| s.charges.iter().find(|c| c["tx_ref"] == tx_ref).cloned())
    }

    /// Records a transfer Sika never asked for (made from the provider's
    /// dashboard, say), created now.
    pub fn add_transfer(&self, reference: &str, amount: f64, currency: &str, status: &str) -> Value {
        self.with(|s| {
            s.next_id += 1;
            let transfer = json!({
                "id": 400_000 + s.next_id, "account_number": "0241234567", "bank_code": "MTN",
                "full_name": "Someone Else", "currency": currency, "amount": amount, "fee": 0,
                "narration": "made elsewhere", "reference": reference, "meta": null, "status": status,
                "complete_message": "", "requires_approval": 0, "is_approved": 1, "created_at": now_text(),
            });
            s.transfers.push(transfer.clone());
            transfer
        })
    }

    /// Records a charge Sika never asked for, created now.
    pub fn add_charge(&self, tx_ref: &str, amount: f64, currency: &str, status: &str) -> Value {
        self.with(|s| {
            s.next_id += 1;
            let charge = json!({
                "id": 700_000 + s.next_id, "tx_ref": tx_ref, "flw_ref": format!("FLW-MOCK-{}", s.next_id),
                "amount": amount, "currency": currency, "network": "MTN", "phone_number": "233240000000",
                "email": "payer@example.com", "charge_type": "mobile_money_ghana", "status": status,
                "processor_response": "Approved", "created_at": now_text(),
            });
            s.charges.push(charge.clone());
            charge
        })
    }

    /// Changes the amount the provider shows for the transfer or charge
    /// carrying `reference`.
    pub fn set_amount(&self, reference: &str, amount: f64) {
        self.with(|s| {
            let item = s
                .transfers
                .iter_mut()
                .find(|t| t["reference"] == reference)
                .or_else(|| s.charges.iter_mut().find(|c| c["tx_ref"] == reference))
                .expect("a transfer or charge with this reference");
            item["amount"] = amount.into();
        });
    }

    /// Removes the transfer or charge carrying `reference`, as if the
    /// provider never made it.
    pub fn forget(&self, reference: &str) {
        self.with(|s| {
            s.transfers.retain(|t| t["reference"] != reference);
            s.charges.retain(|c| c["tx_ref"] != reference);
        });
    }

    /// Settles a transfer at the provider (`SUCCESSFUL` or `FAILED`).
    pub fn settle_transfer(&self, reference: &str, status: &str, message: &str) {
        self.with(|s| {
            let t = s.transfers.iter_mut().find(|t| t["reference"] == reference).expect("the transfer");
            t["status"] = status.into();
            t["complete_message"] = message.into();
        });
    }

    /// The refunds of a charge made for Sika's `tx_ref`, oldest first.
    pub fn refunds_for(&self, tx_ref: &str) -> Vec<Value> {
        let Some(charge) = self.charge_for(tx_ref) else { return Vec::new() };
        self.with(|s| s.refunds.iter().filter(|r| r["transaction_id"] == charge["id"]).cloned().collect())
    }

    /// Settles a refund at the provider (`completed` or `failed`), by the
    /// provider's refund id.
    pub fn settle_refund(&self, id: &Value, status: &str) {
        self.with(|s| {
            let r = s.refunds.iter_mut().find(|r| r["id"] == *id).expect("the refund");
            r["status"] = status.into();
        });
    }

    /// The notification Flutterwave would send for a refund (by its id), as
    /// it is now at the fake (`claimed_status` overrides what it claims).
    pub fn refund_event(&self, id: &Value, claimed_status: Option<&str>) -> Value {
        let mut refund =
            self.with(|s| s.refunds.iter().find(|r| r["id"] == *id).cloned()).expect("the refund");
        if let Some(status) = claimed_status {
            refund["status"] = status.into();
        }
        json!({ "event": "refund.completed", "data": shown(&refund, LISTED_FIELDS) })
    }

    /// Reverses a transfer that succeeded (a mobile-money reversal, a bank
    /// return): what `GET /v3/transfers` shows of it afterwards.
    pub fn reverse_transfer(&self, reference: &str, message: &str) {
        self.with(|s| {
            let t = s.transfers.iter_mut().find(|t| t["reference"] == reference).expect("the transfer");
            assert_eq!(t["status"], "SUCCESSFUL", "only a successful transfer is reversed: {t}");
            assert!(t["reversal"].is_null(), "a transfer is reversed once: {t}");
            t["status"] = "FAILED".into();
            t["complete_message"] = message.into();
            t["reversal"] = json!({
                "reversal_datetime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "initial_status": "SUCCESSFUL",
                "reconciliation_status": "REVERSED",
                "reconciliation_type": "D",
            });
        });
    }

    /// The notification of a transfer's reversal as the newer API names it
    /// (`transfer.reversal`), with the transfer as it is now at the fake.
    pub fn reversal_event(&self, reference: &str) -> Value {
        let t = self.transfers_for(reference).pop().expect("a transfer with this reference");
        json!({ "event": "transfer.reversal", "data": t })
    }

    /// Settles a charge at the provider (`successful` or `failed`).
    pub fn settle_charge(&self, tx_ref: &str, status: &str) {
        self.with(|s| {
            let c = s.charges.iter_mut().find(|c| c["tx_ref"] == tx_ref).expect("the charge");
            c["status"] = status.into();
            c["processor_response"] =
                if status == "successful" { "Approved" } else { "Declined by the payer" }.into();
        });
    }

    /// The notification Flutterwave would send for a movement, as it is now
    /// at the fake (`status` overrides what it claims).
    pub fn event(&self, reference: &str, claimed_status: Option<&str>) -> Value {
        if let Some(mut t) = self.transfers_for(reference).pop() {
            if let Some(status) = claimed_status {
                t["status"] = status.into();
            }
            return json!({ "event": "transfer.completed", "event.type": "Transfer", "data": t });
        }
        let mut c = self.charge_for(reference).expect("a transfer or charge with this reference");
        if let Some(status) = claimed_status {
            c["status"] = status.into();
        }
        json!({ "event": "charge.completed", "data": c })
    }

    /// Posts a notification to the node as Flutterwave would; returns the status.
    pub async fn notify(live_base: &str, hash: &str, body: &Value) -> u16 {
        reqwest::Client::new()
            .post(format!("{live_base}/rails/flutterwave/webhook"))
            .header("verif-hash", hash)
            .json(body)
            .send()
            .await
            .expect("the node answers the notification")
            .status()
            .as_u16()
    }
}
