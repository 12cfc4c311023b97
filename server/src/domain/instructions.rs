//! Turning payout and collection requests into engine commands: method
//! checks against the catalog, fees, cross-currency rates, spend caps, and
//! the rail that will settle them (the sandbox simulator or, on live, the
//! operator's manual settlement).

use rust_decimal::Decimal;
use serde_json::Value;
use sika_api::collections::CreateCollection;
use sika_api::orders::CreateOrder;
use sika_engine::movements::{CapCheck, Destination, NewCollection, NewPayout};
use sika_engine::rates::{convert_down, convert_up};
use sika_engine::{Currency, Engine, MoneyError, Rail, Snapshot};

use crate::domain::catalog::{self, Catalog, Method};
use crate::domain::error::{ApiError, ApiResult, money_error};
use crate::domain::principal::Principal;
use crate::domain::rails::Rails;
use crate::domain::render::AmountInput;
use crate::domain::settings::Receiving;
use crate::domain::simulator;
use crate::domain::stack_kind::StackKind;

/// What the money movements (payouts, collections, orders, deposits) are
/// checked against and made with: the stack's kind (the sandbox simulates,
/// live routes to a provider or the operator), its ledger, the catalog of
/// methods, the provider rails, what live payers are told to pay into and
/// the clock's scale. The handler fills it from its stack.
pub(crate) struct Deps<'a> {
    pub stack: StackKind,
    pub ledger: &'a Engine,
    pub catalog: &'a Catalog,
    pub rails: &'a Rails,
    pub receiving: &'a Receiving,
    pub time_scale: f64,
}

/// SHA-256 of the request body in canonical form, so the same request is
/// recognised whatever its key order or spacing and however its values are
/// written: keys sorted, an `amount` as its decimal value (`"10"`, `10.0`
/// and `"10.00"` are one amount), a `currency` in capitals, and a `null`
/// field the same as an absent one; `metadata` is compared as written.
pub(crate) fn fingerprint(body: &Value) -> [u8; 32] {
    sika_engine::digest::sha256(&[canonical(body).to_string().as_bytes()])
}

/// `body` with every value written as it is read (see [`fingerprint`]).
fn canonical(body: &Value) -> Value {
    match body {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(name, value)| (name.clone(), canonical_field(name, value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn canonical_field(name: &str, value: &Value) -> Value {
    match (name, value) {
        ("amount", Value::String(_) | Value::Number(_)) => {
            serde_json::from_value::<AmountInput>(value.clone())
                .ok()
                .and_then(|amount| amount.as_str().parse::<rust_decimal::Decimal>().ok())
                .map_or_else(|| value.clone(), |amount| Value::String(amount.normalize().to_string()))
        }
        ("currency", Value::String(code)) => Value::String(code.trim().to_ascii_uppercase()),
        // The caller's own data is compared as written.
        ("metadata", _) => value.clone(),
        _ => canonical(value),
    }
}

pub(crate) use sika_api::payouts::{
    CreatePayout as PayoutRequest, PayoutAmount as Amount, PayoutTarget as PayoutTo,
};

/// The currency `code` (any case), or `400` naming `field`.
pub(crate) fn currency(field: &str, code: &str) -> ApiResult<Currency> {
    Currency::find(&code.to_ascii_uppercase()).map_err(|e| ApiError::validation(field, e.to_string()))
}

fn method_for<'s>(deps: &Deps<'s>, field: &str, code: &str) -> ApiResult<&'s Method> {
    let method = deps
        .catalog
        .find_method(code)
        .ok_or_else(|| ApiError::validation(field, format!("unknown payment method '{code}'")))?;
    if deps.rails.status(&method.code, method.status) == catalog::STATUS_DOWN {
        return Err(ApiError::new(
            sika_api::ErrorCode::MethodUnavailable,
            format!("{code} is down at the moment; check GET /v1/capabilities"),
        )
        .with_detail("field", field));
    }
    Ok(method)
}

/// Fills the destination from a saved recipient or the inline fields, and
/// checks what the method needs.
fn destination(
    deps: &Deps<'_>,
    snapshot: &Snapshot,
    organization: &str,
    to: &PayoutTo,
) -> ApiResult<Destination> {
    let mut destination = match &to.recipient_id {
        Some(id) => {
            let recipient = crate::domain::recipients::load(snapshot, id)?
                .filter(|r| r.organization == organization)
                .ok_or_else(|| {
                    ApiError::validation("to.recipientId", format!("recipient '{id}' not found"))
                })?;
            Destination {
                code: recipient.code,
                account_number: recipient.account_number,
                address: recipient.address,
                tag: recipient.tag,
                recipient_id: Some(recipient.id),
                bank_code: None,
            }
        }
        None => Destination {
            code: to.code.clone().ok_or_else(|| ApiError::validation("to.code", "is required"))?,
            account_number: to.account_number.clone(),
            address: to.address.clone(),
            tag: to.tag.clone(),
            recipient_id: None,
            bank_code: None,
        },
    };
    let method = method_for(deps, "to.code", &destination.code)?;
    // A saved recipient keeps no bank code, so the request names it either way.
    destination.bank_code = bank_code(deps, method, to.bank_code.as_deref())?;
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    if method.is_crypto() {
        if blank(&destination.address) {
            return Err(ApiError::validation(
                "to.address",
                format!("{} needs a wallet address", destination.code),
            ));
        }
        let address = destination.address.as_deref().unwrap_or_default();
        let chain = method.chain.as_deref().unwrap_or_default();
        if let Some(problem) = crate::domain::receiving::address_problem(chain, address) {
            return Err(ApiError::validation("to.address", problem));
        }
    } else if blank(&destination.account_number) {
        return Err(ApiError::validation(
            "to.accountNumber",
            format!("{} needs an account number", destination.code),
        ));
    } else if let Some(problem) =
        deps.catalog.account_problem(&method.code, destination.account_number.as_deref().unwrap_or_default())
    {
        return Err(ApiError::validation("to.accountNumber", problem));
    }
    if deps.stack == StackKind::Sandbox
        && let Some(number) = &destination.account_number
        && let Some(reason) = simulator::validation_reason(number)
    {
        return Err(ApiError::validation(
            "to.accountNumber",
            format!("the destination failed validation: {reason}"),
        ));
    }
    destination.code = method.code.clone();
    Ok(destination)
}

/// The destination's bank code as the catalog writes it: one of the
/// method's `bankCode` options, and required on live for every bank method
/// (a provider needs it to pay out, and so does an operator settling by
/// hand).
fn bank_code(deps: &Deps<'_>, method: &Method, given: Option<&str>) -> ApiResult<Option<String>> {
    let given = given.map(str::trim).filter(|s| !s.is_empty());
    let country = deps.catalog.country_of_method(&method.code).map_or("", |c| c.code.as_str());
    let options = || {
        format!(
            "one of {}'s bank codes: {} (GET /v1/capabilities/{country}/{})",
            method.code,
            method.bank_codes(),
            method.code
        )
    };
    match given {
        Some(_) if !method.takes_bank_code() => Err(ApiError::validation(
            "to.bankCode",
            format!("{} is not a bank method and takes no bank code", method.code),
        )),
        Some(code) => match method.bank_code(code) {
            Some(known) => Ok(Some(known.to_string())),
            None => Err(ApiError::validation("to.bankCode", format!("'{code}' is not {}", options()))),
        },
        None if deps.stack == StackKind::Live && deps.rails.needs_bank_code(&method.code) => {
            Err(ApiError::validation(
                "to.bankCode",
                format!(
                    "is required: {} payouts go through Flutterwave, which needs the bank's code, {}",
                    method.code,
                    options()
                ),
            ))
        }
        // With no connector the operator pays the account by hand, and an
        // account number names no bank: the payout must say which.
        None if deps.stack == StackKind::Live && method.takes_bank_code() => Err(ApiError::validation(
            "to.bankCode",
            format!("is required: a live {} payout names the bank to pay into, {}", method.code, options()),
        )),
        None => Ok(None),
    }
}

/// US cents for a spend-cap check, at the mid rate, rounded up.
fn usd_cents(ledger: &Engine, currency: Currency, amount: i128) -> ApiResult<i128> {
    let rate = ledger
        .mid_rate(currency.code, "USD")
        .ok_or_else(|| ApiError::rates_unavailable(currency.code, "USD"))?;
    let amount = currency.to_decimal(amount).map_err(|e| money_error("from.amount", e))?;
    let usd =
        convert_down(amount, rate, 6).ok_or_else(|| ApiError::validation("from.amount", "is too large"))?;
    let cents = (usd * Decimal::from(100)).ceil();
    Ok(cents.mantissa() / 10i128.pow(cents.scale()))
}

/// The longest payout narration, in characters.
pub(crate) const NARRATION_MAX: usize = 500;

/// Stripe's limits on metadata: at most 50 keys, each key at most 40
/// characters, each value a string, number, boolean or null of at most 500
/// characters as written.
pub(crate) fn check_metadata(metadata: Option<&serde_json::Map<String, Value>>) -> ApiResult<()> {
    let Some(metadata) = metadata else { return Ok(()) };
    if metadata.len() > 50 {
        return Err(ApiError::validation("metadata", "must have at most 50 keys"));
    }
    for (key, value) in metadata {
        let field = format!("metadata.{key}");
        if key.is_empty() || key.chars().count() > 40 {
            return Err(ApiError::validation("metadata", format!("key '{key}' must be 1 to 40 characters")));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
            _ => return Err(ApiError::validation(&field, "must be a string, number, boolean or null")),
        };
        if text.chars().count() > 500 {
            return Err(ApiError::validation(&field, "must be at most 500 characters"));
        }
    }
    Ok(())
}

#[expect(clippy::too_many_lines)]
pub(crate) fn new_payout(
    deps: &Deps<'_>,
    principal: &Principal,
    request: PayoutRequest,
    fingerprint: [u8; 32],
) -> ApiResult<NewPayout> {
    let organization = principal.organization();
    validate_reference(&request.external_reference)?;
    check_metadata(request.metadata.as_ref())?;
    if request.narration.chars().count() > NARRATION_MAX {
        return Err(ApiError::validation("narration", format!("must be at most {NARRATION_MAX} characters")));
    }
    let from = currency("from.currency", &request.from.currency)?;
    let from_amount =
        from.parse(request.from.amount.as_str(), false).map_err(|e| money_error("from.amount", e))?;
    let snapshot = deps.ledger.read()?;
    let to = destination(deps, &snapshot, organization, &request.to)?;
    let method = method_for(deps, "to.code", &to.code)?;
    let to_currency = currency("to.currency", request.to.currency.as_deref().unwrap_or(from.code))?;
    if to_currency.code != method.currency().code {
        return Err(ApiError::validation(
            "to.currency",
            format!("{} pays out in {}, not {}", method.code, method.currency(), to_currency.code),
        ));
    }
    let (to_amount, rate) = if to_currency == from {
        (from_amount, Decimal::ONE)
    } else {
        let rate = deps.ledger.rate(from.code, to_currency.code)?;
        let from_major = from.to_decimal(from_amount).map_err(|e| money_error("from.amount", e))?;
        // Beyond a decimal's range is an amount too large, never a payout of 0.
        let major = convert_down(from_major, rate, to_currency.scale)
            .ok_or_else(|| money_error("from.amount", MoneyError::Overflow))?;
        (to_currency.from_decimal(major, true).map_err(|e| money_error("from.amount", e))?, rate)
    };
    if !method.limits.contains_minor(to_amount, to_currency.scale) {
        return Err(ApiError::validation(
            "from.amount",
            format!(
                "{} accepts {} to {} {}; this payout is {} {}",
                method.code,
                method.limits.min,
                method.limits.max,
                method.limits.currency,
                to_currency.format(to_amount),
                to_currency.code
            ),
        ));
    }
    let fee_in_method_currency = method
        .fee
        .amount_minor(to_amount, to_currency.scale)
        .ok_or_else(|| ApiError::validation("from.amount", "is too large"))?;
    let fee_amount = if to_currency == from {
        fee_in_method_currency
    } else {
        let fee =
            to_currency.to_decimal(fee_in_method_currency).map_err(|e| money_error("from.amount", e))?;
        let major = convert_up(fee, rate, from.scale)
            .ok_or_else(|| ApiError::validation("from.amount", "is too large to convert"))?;
        from.from_decimal(major, true).map_err(|e| money_error("from.amount", e))?
    };
    let cap = match principal {
        Principal::Key(key) => {
            let caps = &key.caps;
            let any =
                caps.daily_usd_cents.or(caps.per_transaction_usd_cents).or(caps.monthly_usd_cents).is_some();
            if any {
                let now = chrono::DateTime::from_timestamp_millis(deps.ledger.now_ms()).unwrap_or_default();
                Some(CapCheck {
                    key_id: key.id.clone(),
                    amount_usd_cents: usd_cents(deps.ledger, from, from_amount)?,
                    per_transaction_usd_cents: caps.per_transaction_usd_cents,
                    daily_usd_cents: caps.daily_usd_cents,
                    monthly_usd_cents: caps.monthly_usd_cents,
                    day: now.format("%Y-%m-%d").to_string(),
                    month: now.format("%Y-%m").to_string(),
                })
            } else {
                None
            }
        }
        _ => None,
    };
    let (rail, rail_note, schedule) = match deps.stack {
        StackKind::Sandbox => {
            let outcome = simulator::outcome(
                simulator::PAYOUT_SCENARIOS,
                &simulator::trigger_digits(from_amount, from.scale),
            );
            (
                Rail::SandboxSimulator,
                simulator::payout_note(outcome),
                simulator::payout_steps(outcome, deps.time_scale),
            )
        }
        StackKind::Live if deps.rails.routes(&method.code) => {
            (Rail::Flutterwave, "Routed to Flutterwave".to_string(), Vec::new())
        }
        StackKind::Live => (
            Rail::ManualSettlement,
            format!("No provider connector sends {}: the operator pays it and settles it", method.code),
            Vec::new(),
        ),
    };
    Ok(NewPayout {
        organization: organization.to_string(),
        from_currency: from.code.to_string(),
        from_amount,
        to,
        to_currency: to_currency.code.to_string(),
        to_amount,
        fee_amount,
        rate: rate.normalize().to_string(),
        narration: request.narration,
        metadata: Value::Object(request.metadata.unwrap_or_default()).to_string(),
        external_reference: request.external_reference,
        api_key_id: principal.api_key_id().map(str::to_string),
        cap,
        rail: rail.name().to_string(),
        rail_note,
        schedule,
        request_fingerprint: fingerprint,
        order_id: None,
    })
}

/// How a collection reaches its payer on the stack `stack`: on the sandbox
/// the simulator, whose outcome the amount's trigger digits choose (its
/// steps scaled by `time_scale`); on live a provider of `rails`, or the
/// operator, who confirms the payment. Returns (rail, note for the
/// timeline, schedule).
pub(crate) fn collection_rail(
    stack: StackKind,
    rails: &Rails,
    time_scale: f64,
    code: &str,
    amount: i128,
    scale: u32,
    payer: Option<&str>,
) -> (Rail, String, Vec<sika_engine::movements::ScheduledStep>) {
    match stack {
        StackKind::Sandbox => simulator::collection_rail(amount, scale, payer, time_scale),
        StackKind::Live if rails.collects(code) => (
            Rail::Flutterwave,
            format!("Routed to Flutterwave; it will prompt {}", payer.unwrap_or("the payer")),
            Vec::new(),
        ),
        StackKind::Live => (
            Rail::ManualSettlement,
            "Waiting for the operator to confirm the payment".to_string(),
            Vec::new(),
        ),
    }
}

pub(crate) fn new_collection(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreateCollection,
    fingerprint: [u8; 32],
) -> ApiResult<NewCollection> {
    validate_reference(&request.external_reference)?;
    check_metadata(request.metadata.as_ref())?;
    let currency = currency("currency", &request.currency)?;
    let amount = currency.parse(request.amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    let method = method_for(deps, "code", &request.code)?;
    if method.currency().code != currency.code {
        return Err(ApiError::validation(
            "currency",
            format!("{} collects {}", method.code, method.currency()),
        ));
    }
    if method.is_crypto() {
        return Err(ApiError::validation("code", "collections take mobile money or bank transfer methods"));
    }
    if request.account_number.trim().is_empty() {
        return Err(ApiError::validation("accountNumber", "the payer's phone or account number is required"));
    }
    if !method.limits.contains_minor(amount, currency.scale) {
        return Err(ApiError::validation(
            "amount",
            format!(
                "{} accepts {} to {} {}",
                method.code, method.limits.min, method.limits.max, method.limits.currency
            ),
        ));
    }
    let payer = Some(request.account_number.as_str());
    let (rail, rail_note, schedule) =
        collection_rail(deps.stack, deps.rails, deps.time_scale, &method.code, amount, currency.scale, payer);
    Ok(NewCollection {
        organization: principal.organization().to_string(),
        currency: currency.code.to_string(),
        amount,
        code: method.code.clone(),
        account_number: request.account_number.clone(),
        metadata: Value::Object(request.metadata.unwrap_or_default()).to_string(),
        external_reference: request.external_reference,
        rail: rail.name().to_string(),
        rail_note,
        payer: Some(request.account_number),
        schedule,
        request_fingerprint: fingerprint,
        id: None,
        attach: Vec::new(),
        group: None,
    })
}

/// Confirmations a crypto deposit needs before the order proceeds.
pub(crate) const CRYPTO_CONFIRMATIONS_REQUIRED: u32 = 3;
/// How long an order waits for funds, unscaled: 30 minutes.
pub(crate) const ORDER_DEADLINE_MS: i64 = 30 * 60 * 1000;

/// What the payer of an order is told to pay into. Live: only what the
/// operator configured (a method with no route is refused, naming the
/// field); the sandbox invents plausible details.
async fn deposit_instructions(
    deps: &Deps<'_>,
    method: &str,
    currency: Currency,
    chain: Option<&str>,
    order_id_hint: &str,
    owner: &str,
) -> ApiResult<Value> {
    if deps.stack == StackKind::Live {
        return live_deposit_instructions(deps, method, currency, chain, order_id_hint, owner).await;
    }
    // A sandbox order may name the testnet (`nile`); its address takes the
    // form of the mainnet chain it stands for (`T…` on Tron).
    let address_chain = chain.map(|chain| {
        deps.catalog
            .stablecoins()
            .iter()
            .find(|m| {
                m.currency().code == currency.code
                    && (m.chain.as_deref() == Some(chain) || m.chain_for(true) == Some(chain))
            })
            .and_then(|m| m.chain.as_deref())
            .unwrap_or(chain)
    });
    Ok(sandbox_deposit_instructions(method, currency, chain, address_chain, order_id_hint))
}

async fn live_deposit_instructions(
    deps: &Deps<'_>,
    method: &str,
    currency: Currency,
    chain: Option<&str>,
    reference: &str,
    owner: &str,
) -> ApiResult<Value> {
    let not_offered = |what: String| {
        ApiError::validation(
            "from.method",
            format!("{what} is not offered on live: the operator has configured no account to receive it"),
        )
    };
    match method {
        "bank_transfer" => {
            let bank = deps
                .receiving
                .bank(currency.code)
                .ok_or_else(|| not_offered(format!("bank transfer in {}", currency.code)))?;
            let mut instructions = serde_json::json!({
                "type": "bank_transfer",
                "bankName": bank.bank_name,
                "accountNumber": bank.account_number,
                "accountName": bank.account_name,
                "reference": reference,
            });
            if let Some(code) = &bank.bank_code {
                instructions["bankCode"] = code.as_str().into();
            }
            if let Some(branch) = &bank.branch {
                instructions["branch"] = branch.as_str().into();
            }
            Ok(instructions)
        }
        "crypto" => {
            let chain = chain.unwrap_or_default();
            let address = crate::domain::receiving::crypto_address(deps.ledger, deps.receiving, currency.code, chain, owner)
                .await?
                .ok_or_else(|| {
                    ApiError::validation(
                        "from.chain",
                        format!("{} on '{chain}' is not offered on live: the operator has configured no address for it", currency.code),
                    )
                })?;
            Ok(serde_json::json!({
                "type": "crypto",
                "asset": currency.code,
                "chain": chain,
                "address": address,
                "network": "mainnet",
                "confirmationsRequired": CRYPTO_CONFIRMATIONS_REQUIRED,
            }))
        }
        _ => {
            let merchant = deps
                .receiving
                .mobile_money
                .iter()
                .find(|m| {
                    deps.catalog
                        .find_method(&m.method)
                        .is_some_and(|method| method.currency().code == currency.code)
                })
                .ok_or_else(|| not_offered(format!("mobile money in {}", currency.code)))?;
            Ok(serde_json::json!({
                "type": "mobile_money",
                "instructions": format!("Pay {} on {} with the reference", merchant.merchant_name, merchant.method),
                "merchantNumber": merchant.merchant_number,
                "reference": reference,
            }))
        }
    }
}

fn sandbox_deposit_instructions(
    method: &str,
    currency: Currency,
    chain: Option<&str>,
    address_chain: Option<&str>,
    order_id_hint: &str,
) -> Value {
    let digits: u64 = rand::random::<u64>() % 10_000_000_000;
    match method {
        "bank_transfer" => serde_json::json!({
            "type": "bank_transfer",
            "bankName": "Sika Partner Bank",
            "accountNumber": format!("{digits:010}"),
            "accountName": "Sika Collections",
            "reference": order_id_hint,
        }),
        "crypto" => {
            let address = crate::domain::receiving::sandbox_address(address_chain.unwrap_or_default());
            serde_json::json!({
                "type": "crypto",
                "asset": currency.code,
                "chain": chain,
                "address": address,
                "network": "testnet",
                "confirmationsRequired": CRYPTO_CONFIRMATIONS_REQUIRED,
            })
        }
        _ => serde_json::json!({
            "type": "mobile_money",
            "instructions": "Approve the payment prompt sent to your phone, or pay to the merchant number with the reference",
            "merchantNumber": format!("{:06}", digits % 1_000_000),
            "reference": order_id_hint,
        }),
    }
}

/// The chain a crypto order collects on: required for crypto, one the
/// catalog offers `from` on, and refused for any other method.
fn order_chain(
    catalog: &Catalog,
    method: &str,
    from: Currency,
    chain: Option<&String>,
) -> ApiResult<Option<String>> {
    Ok(match (method, chain) {
        ("crypto", None) => return Err(ApiError::validation("from.chain", "is required for crypto")),
        ("crypto", Some(chain)) => {
            let known = catalog.stablecoins().iter().any(|m| {
                m.currency().code == from.code
                    && (m.chain.as_deref() == Some(chain) || m.chain_for(true) == Some(chain.as_str()))
            });
            if !known {
                return Err(ApiError::validation(
                    "from.chain",
                    format!("{} is not offered on '{chain}'", from.code),
                ));
            }
            Some(chain.clone())
        }
        (_, Some(_)) => return Err(ApiError::validation("from.chain", "applies to crypto only")),
        (_, None) => None,
    })
}

pub(crate) async fn new_order(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreateOrder,
    fingerprint: [u8; 32],
) -> ApiResult<sika_engine::orders::NewOrder> {
    validate_reference(&request.external_reference)?;
    check_metadata(request.metadata.as_ref())?;
    let method = request.from.method.as_str();
    if !["mobile_money", "bank_transfer", "crypto"].contains(&method) {
        return Err(ApiError::validation("from.method", "must be mobile_money, bank_transfer or crypto"));
    }
    let from = currency("from.currency", &request.from.currency)?;
    let from_amount =
        from.parse(request.from.amount.as_str(), false).map_err(|e| money_error("from.amount", e))?;
    let chain = order_chain(deps.catalog, method, from, request.from.chain.as_ref())?;
    if method == "crypto" && !from.code.starts_with("USD") {
        return Err(ApiError::validation("from.currency", "crypto orders collect USDC or USDT"));
    }
    let snapshot = deps.ledger.read()?;
    let to = destination(deps, &snapshot, principal.organization(), &request.to)?;
    // No read is held over the provider's lookup below.
    drop(snapshot);
    let payout_method = method_for(deps, "to.code", &to.code)?;
    let to_currency =
        currency("to.currency", request.to.currency.as_deref().unwrap_or(payout_method.currency().code))?;
    if to_currency.code != payout_method.currency().code {
        return Err(ApiError::validation(
            "to.currency",
            format!("{} pays out in {}", payout_method.code, payout_method.currency()),
        ));
    }
    if to_currency != from {
        deps.ledger.rate(from.code, to_currency.code)?;
    }
    // Before a deposit address is claimed for it.
    let (organization, reference) = (principal.organization(), &request.external_reference);
    crate::domain::rails::lookup::confirm_destination(
        deps.ledger,
        deps.rails,
        organization,
        "order",
        reference,
        &to,
    )
    .await?;
    let now = deps.ledger.now_ms();
    let deadline = ((ORDER_DEADLINE_MS as f64) * deps.time_scale).round() as i64;
    let hint = sika_engine::ids::new_id("ref");
    // A replayed request is given the same address, not another one.
    let owner = format!("order/{}/{}", principal.organization(), request.external_reference);
    Ok(sika_engine::orders::NewOrder {
        organization: principal.organization().to_string(),
        from_method: method.to_string(),
        from_currency: from.code.to_string(),
        from_amount,
        from_chain: chain.clone(),
        to,
        to_currency: to_currency.code.to_string(),
        deposit_instructions: deposit_instructions(deps, method, from, chain.as_deref(), &hint, &owner)
            .await?
            .to_string(),
        required_confirmations: if method == "crypto" { CRYPTO_CONFIRMATIONS_REQUIRED } else { 0 },
        external_reference: request.external_reference,
        metadata: Value::Object(request.metadata.unwrap_or_default()).to_string(),
        expires_at: now + deadline,
        request_fingerprint: fingerprint,
    })
}

/// Funds for an order: the payout on actuals is built now, at the current
/// rate and fee; if it cannot be, the order fails and the funds stay.
pub(crate) fn order_funds(
    deps: &Deps<'_>,
    principal: &Principal,
    order: &sika_engine::orders::OrderRecord,
    amount: i128,
    confirmations: u32,
) -> ApiResult<sika_engine::orders::OrderFunds> {
    let from = currency("from.currency", &order.from_currency)?;
    // The fee comes out of what arrived: pay out the rest.
    let first = new_payout(deps, principal, payout_request(order, from, amount), [0; 32]);
    let (payout, payout_refusal) = match first {
        Ok(p) if p.from_amount + p.fee_amount > amount => {
            match new_payout(deps, principal, payout_request(order, from, amount - p.fee_amount), [0; 32]) {
                Ok(payout) => (Some(payout), None),
                Err(e) => (None, Some(e.message)),
            }
        }
        Ok(payout) => (Some(payout), None),
        Err(e) => (None, Some(e.message)),
    };
    Ok(sika_engine::orders::OrderFunds {
        order_id: order.id.clone(),
        amount,
        confirmations,
        payout,
        payout_refusal,
    })
}

fn payout_request(order: &sika_engine::orders::OrderRecord, from: Currency, amount: i128) -> PayoutRequest {
    PayoutRequest {
        from: Amount { currency: from.code.to_string(), amount: AmountInput::from_text(from.format(amount)) },
        to: PayoutTo {
            code: Some(order.to.code.clone()),
            account_number: order.to.account_number.clone(),
            address: order.to.address.clone(),
            tag: order.to.tag.clone(),
            currency: Some(order.to_currency.clone()),
            recipient_id: None,
            bank_code: order.to.bank_code.clone(),
            account_name: None,
        },
        external_reference: format!("order:{}", order.id),
        narration: format!("Order {}", order.id),
        metadata: None,
    }
}

/// An externalReference: 1 to 255 characters, none of them hidden
/// (`limits::check_visible`).
pub(crate) fn validate_reference(reference: &str) -> ApiResult<()> {
    if reference.is_empty() || reference.chars().count() > 255 {
        return Err(ApiError::validation("externalReference", "must be 1 to 255 printable characters"));
    }
    crate::domain::limits::check_visible("externalReference", reference)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fingerprint;

    #[test]
    fn one_meaning_is_one_fingerprint() {
        let body = |amount: serde_json::Value| json!({ "from": { "currency": "GHS", "amount": amount }, "externalReference": "r", "narration": null });
        let ten = fingerprint(&body(json!("10")));
        for same in [json!(10), json!("10.00"), json!(10.0), json!("10.0")] {
            assert_eq!(fingerprint(&body(same.clone())), ten, "{same}");
        }
        assert_ne!(fingerprint(&body(json!("10.01"))), ten);
        let lower = json!({ "from": { "currency": "ghs", "amount": "10" }, "externalReference": "r" });
        assert_eq!(fingerprint(&lower), ten);
    }
}
