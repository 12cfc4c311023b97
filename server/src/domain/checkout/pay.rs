//! A payer's attempt: a checkout session and its collection, created in one
//! transaction (with the payer's child link when paying on a page).

use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sika_api::payment_links::PaymentLinkStatus;
use sika_api::payment_pages::PaymentPageStatus;
use sika_engine::movements::{NewCollection, ScheduledStep, Step};
use sika_engine::{Command, Currency, Document, Snapshot};

use crate::store::documents::document;

use super::phone::PhoneFormat;
use super::requests::{CRYPTO_ASSETS, email};
use super::{
    Deps, Instructions, LINK_SESSIONS, LINKS, PAGE_LINKS, PaymentLink, SESSIONS, Session, link_state,
    load_link, load_page, page_status,
};
use crate::domain::catalog::{self, Method};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::AmountInput;
use crate::domain::simulator;
use crate::domain::stack_kind::StackKind;

/// How long a session waits for the payer (scaled by `--time-scale`, like
/// every other deadline).
pub(crate) const SESSION_TTL_MS: i64 = 30 * 60 * 1000;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PayRequest {
    pub amount: Option<AmountInput>,
    pub method: Option<String>,
    /// The mobile money network (a method code such as `mtn_gh`).
    pub network: Option<String>,
    pub phone: Option<String>,
    pub asset: Option<String>,
    pub chain: Option<String>,
    pub email: Option<String>,
    pub custom_fields: Option<Map<String, Value>>,
}

/// The methods the hosted page offers for a link's settings: GHS stays on
/// mobile money; each method needs a rail for the currency and, on live, a
/// receiving route the operator configured.
pub(crate) fn offered_methods(deps: &Deps<'_>, settings: &super::Settings) -> Vec<&'static str> {
    super::METHODS
        .into_iter()
        .filter(|m| settings.allowed_methods.iter().any(|a| a == m))
        .filter(|m| settings.currency != "GHS" || *m == "mobile_money")
        .filter(|m| match *m {
            "crypto" => !crypto_rails(deps, settings).is_empty(),
            kind => !methods_of_kind(deps, &settings.currency, kind).is_empty(),
        })
        .collect()
}

/// The stack's methods of `kind` collecting `currency` that are not down;
/// on live, only those the operator configured a receiving route for: bank
/// transfer where there is an account in the currency, a mobile-money
/// network where there is a merchant number for it. Hosted checkout never
/// goes through a provider connector, so nothing else would tell the payer
/// where to pay.
pub(crate) fn methods_of_kind<'s>(deps: &Deps<'s>, currency: &str, kind: &str) -> Vec<&'s Method> {
    let live = deps.kind == StackKind::Live;
    if live && kind == "bank_transfer" && deps.receiving.bank(currency).is_none() {
        return Vec::new();
    }
    deps.catalog
        .countries()
        .iter()
        .filter(|c| c.currency == currency)
        .flat_map(|c| c.methods.iter())
        .filter(|m| m.kind.as_str() == kind && m.status != catalog::STATUS_DOWN)
        .filter(|m| !live || kind != "mobile_money" || deps.receiving.mobile_money(&m.code).is_some())
        .collect()
}

/// The stablecoin rails a link accepts; on live, only those the operator
/// configured a receiving route for.
pub(crate) fn crypto_rails<'s>(deps: &Deps<'s>, settings: &super::Settings) -> Vec<&'s Method> {
    let live = deps.kind == StackKind::Live;
    deps.catalog
        .stablecoins()
        .iter()
        .filter(|m| {
            let asset = m.currency().code;
            let routed = !live || deps.receiving.crypto(asset, m.chain.as_deref().unwrap_or("")).is_some();
            routed
                && m.status != catalog::STATUS_DOWN
                && CRYPTO_ASSETS.contains(&asset)
                && settings.allowed_crypto_assets.as_ref().is_none_or(|list| list.iter().any(|a| a == asset))
        })
        .collect()
}

/// The method's own limits, as `POST /v1/collections` applies them: an
/// attempt is a collection, whoever starts it.
fn within_limits(rail: &Method, amount_minor: i128, scale: u32) -> ApiResult<()> {
    if rail.limits.contains_minor(amount_minor, scale) {
        return Ok(());
    }
    Err(ApiError::validation(
        "amount",
        format!("{} accepts {} to {} {}", rail.name, rail.limits.min, rail.limits.max, rail.limits.currency),
    ))
}

/// The payer's wallet number in international form, normalised for the
/// country of `rail` (a local `0712345678` on M-Pesa Kenya is
/// `+254712345678`); refused naming `phone` with that country's example.
fn wallet_number(catalog: &catalog::Catalog, rail: &Method, typed: &str) -> ApiResult<String> {
    let format = PhoneFormat::of_method(catalog, &rail.code)
        .ok_or_else(|| ApiError::internal_from(format!("method '{}' has no phone format", rail.code)))?;
    format.normalise(typed).ok_or_else(|| ApiError::validation("phone", format.problem()))
}

/// The amount as the payer may type it, thousands separators and all:
/// `1,500.00` reads `1500.00`, as the page itself writes amounts. Only
/// well-formed groups of three are taken apart; anything else is left for
/// the currency's parser to refuse.
fn ungrouped(typed: &str) -> String {
    let typed = typed.trim();
    let (whole, fraction) = typed.split_once('.').map_or((typed, None), |(w, f)| (w, Some(f)));
    let mut groups = whole.split(',');
    let first = groups.next().unwrap_or("");
    let grouped = whole.contains(',')
        && (1..=3).contains(&first.len())
        && first.chars().all(|c| c.is_ascii_digit())
        && groups.all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()));
    if !grouped {
        return typed.to_string();
    }
    let whole = whole.replace(',', "");
    match fraction {
        Some(fraction) => format!("{whole}.{fraction}"),
        None => whole,
    }
}

/// A stable pseudo-random number from a session id, for sandbox account
/// numbers.
fn digits_from(id: &str, n: usize) -> String {
    let hash = sika_engine::commands::digest(id.as_bytes());
    hash.iter().map(|b| char::from(b'0' + b % 10)).take(n).collect()
}

/// Starts a session on page or link `target` for an anonymous payer.
/// Returns (link id, session id).
#[expect(clippy::too_many_lines)]
pub(crate) async fn start(deps: &Deps<'_>, target: &str, request: PayRequest) -> ApiResult<(String, String)> {
    let snapshot = deps.engine.read()?;
    let now = deps.now_ms();
    let mut documents = Vec::new();
    let link = if target.starts_with("pp_") {
        let page = load_page(&snapshot, target)?
            .ok_or_else(|| ApiError::not_found(format!("payment page '{target}' not found")))?;
        if page_status(&page, now) != PaymentPageStatus::Active {
            return Err(ApiError::bad_request("This payment page is closed and takes no new payments"));
        }
        let link = PaymentLink {
            id: sika_engine::ids::new_id("pl"),
            organization: page.organization.clone(),
            page: Some(page.id.clone()),
            email: request
                .email
                .as_deref()
                .filter(|e| !e.trim().is_empty())
                .map(|e| email("email", e))
                .transpose()?,
            customer_reference: None,
            amount: page.amount,
            settings: page.settings.clone(),
            custom_values: Vec::new(),
            closed_at: None,
            created_at: now,
            updated_at: now,
        };
        documents.push(Document {
            collection: PAGE_LINKS.into(),
            id: link.id.clone(),
            body: vec![1],
            list: Some((page.id.clone(), PAGE_LINKS.into())),
        });
        link
    } else {
        let link = load_link(&snapshot, target)?
            .ok_or_else(|| ApiError::not_found(format!("payment link '{target}' not found")))?;
        check_attempt_limit(deps, &snapshot, &link.id)?;
        link
    };
    if deps.identity.organization(&link.organization).is_some_and(|o| o.suspended) {
        return Err(ApiError::new(
            sika_api::ErrorCode::OrganizationSuspended,
            "This merchant is not taking payments right now",
        ));
    }
    let is_new_link = documents.len() == 1;
    let (mut session, custom_values) = build_session(deps, &snapshot, &link, &request, now)?;
    if session.method == "crypto" && session.payer.is_empty() {
        claim_live_address(deps, &mut session).await?;
    }
    if is_new_link {
        let mut link = link.clone();
        link.custom_values = custom_values;
        documents.push(document(LINKS, &link.id, &link, Some((&link.organization, LINKS))));
    }
    documents.push(document(SESSIONS, &session.id, &session, Some((&link.id, LINK_SESSIONS))));
    let currency = Currency::find(&session.destination_currency).map_err(|e| ApiError::internal_from(e))?;
    // Hosted checkout is not routed to a provider (its attempts expire on
    // Sika's clock): an empty code keeps it on the operator's rail.
    // Only a mobile-money payer is known: a transfer's or crypto session's
    // `payer` is where the payer sends to (the node's own account).
    let payer = (session.method == "mobile_money").then(|| session.payer.clone());
    let (rail, rail_note, mut schedule) =
        hosted_rail(deps, session.destination_amount, currency.scale, payer.as_deref());
    // An attempt the payer never finishes expires: its collection fails.
    schedule.push(ScheduledStep {
        after_ms: session.expires_at - now,
        step: Step::Settle { success: false, message: super::SESSION_EXPIRED.into() },
    });
    let mut metadata = json!({ "paymentLinkId": link.id, "checkoutSessionId": session.id });
    if let Some(page) = &link.page {
        metadata["paymentPageId"] = json!(page);
    }
    let new = NewCollection {
        organization: link.organization.clone(),
        currency: session.destination_currency.clone(),
        amount: session.destination_amount,
        code: session.code.clone(),
        account_number: session.payer.clone(),
        metadata: metadata.to_string(),
        external_reference: session.id.clone(),
        rail: rail.to_string(),
        rail_note,
        payer,
        schedule,
        request_fingerprint: sika_engine::commands::digest(session.id.as_bytes()),
        id: Some(session.collection.clone()),
        attach: documents,
        // The link's tally counts this attempt once its money arrives.
        group: Some(super::link_group(&link)),
    };
    deps.engine.execute(Command::CreateCollection(Box::new(new))).await?;
    Ok((link.id, session.id))
}

/// The rail an attempt's collection goes on: the sandbox's simulator, or on
/// live the operator, who confirms the payment (hosted checkout is not
/// routed to a provider: its attempts expire on Sika's clock).
fn hosted_rail(
    deps: &Deps<'_>,
    amount: i128,
    scale: u32,
    payer: Option<&str>,
) -> (sika_engine::Rail, String, Vec<ScheduledStep>) {
    match deps.kind {
        StackKind::Sandbox => simulator::collection_rail(amount, scale, payer, deps.config.time_scale),
        StackKind::Live => (
            sika_engine::Rail::ManualSettlement,
            "Waiting for the operator to confirm the payment".to_string(),
            Vec::new(),
        ),
    }
}

/// Refuses an attempt past the link's limit (`checkout_attempts_per_link`),
/// counting at most that many of its listed attempts.
fn check_attempt_limit(deps: &Deps<'_>, snapshot: &Snapshot, link_id: &str) -> ApiResult<()> {
    let limit = deps.config.checkout_attempts_per_link as usize;
    if snapshot.list(link_id, LINK_SESSIONS, None, limit)?.len() >= limit {
        return Err(ApiError::bad_request(format!(
            "This payment link has taken its {limit} payment attempts; ask the merchant for a new link"
        ))
        .with_detail("limit", limit));
    }
    Ok(())
}

/// Gives a live crypto session its own address from the operator's route.
async fn claim_live_address(deps: &Deps<'_>, session: &mut Session) -> ApiResult<()> {
    let chain = session.chain.clone().unwrap_or_default();
    let address = crate::domain::receiving::crypto_address(
        deps.engine,
        deps.receiving,
        &session.origin_currency,
        &chain,
        &session.id,
    )
    .await?
    .ok_or_else(|| {
        ApiError::validation(
            "chain",
            format!("{} on '{chain}' is not accepted here", session.origin_currency),
        )
    })?;
    session.payer = address.clone();
    if let Some(instructions) = &mut session.instructions {
        for (key, value) in &mut instructions.fields {
            if key == "address" {
                value.clone_from(&address);
            }
        }
    }
    Ok(())
}

#[expect(clippy::too_many_lines)]
fn build_session(
    deps: &Deps<'_>,
    snapshot: &Snapshot,
    link: &PaymentLink,
    request: &PayRequest,
    now: i64,
) -> ApiResult<(Session, Vec<(String, String)>)> {
    let state = link_state(snapshot, link, now)?;
    match state.status {
        PaymentLinkStatus::Paid => return Err(ApiError::bad_request("This payment link is already paid")),
        PaymentLinkStatus::Closed => {
            return Err(ApiError::bad_request("This payment link was closed by the merchant"));
        }
        PaymentLinkStatus::Expired => return Err(ApiError::bad_request("This payment link has expired")),
        PaymentLinkStatus::Active => {}
    }
    let settings = &link.settings;
    let currency = Currency::find(&settings.currency).map_err(|e| ApiError::internal_from(e))?;
    let amount = match (&request.amount, link.amount) {
        (Some(input), _) if !input.as_str().trim().is_empty() => currency
            .parse(&ungrouped(input.as_str()), false)
            .map_err(|e| ApiError::validation("amount", e.to_string()))?,
        (_, Some(_)) => state.remaining.unwrap_or(0),
        (_, None) => return Err(ApiError::validation("amount", "enter the amount to pay")),
    };
    if amount <= 0 {
        return Err(ApiError::validation("amount", "must be greater than zero"));
    }
    let mut custom_values = Vec::new();
    let given = request.custom_fields.clone().unwrap_or_default();
    for field in &settings.custom_fields {
        let value = match given.get(&field.name) {
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Null) | None => String::new(),
            Some(_) => {
                return Err(ApiError::validation(&format!("customFields.{}", field.name), "must be text"));
            }
        };
        if field.required && value.is_empty() {
            return Err(ApiError::validation(
                &format!("customFields.{}", field.name),
                format!("{} is required", field.label),
            ));
        }
        if value.chars().count() > 500 {
            return Err(ApiError::validation(
                &format!("customFields.{}", field.name),
                "must be at most 500 characters",
            ));
        }
        if !value.is_empty() {
            custom_values.push((field.name.clone(), value));
        }
    }
    let offered = offered_methods(deps, settings);
    let method =
        request.method.as_deref().ok_or_else(|| ApiError::validation("method", "choose how to pay"))?;
    if !offered.contains(&method) {
        return Err(ApiError::validation(
            "method",
            format!("'{method}' is not offered here; choose one of {}", offered.join(", ")),
        ));
    }
    let id = sika_engine::ids::new_id("cs");
    let mut session = Session {
        id: id.clone(),
        organization: link.organization.clone(),
        link: link.id.clone(),
        method: method.to_string(),
        code: String::new(),
        chain: None,
        payer: String::new(),
        origin_amount: amount,
        origin_currency: currency.code.to_string(),
        destination_amount: amount,
        destination_currency: currency.code.to_string(),
        rate: "1".into(),
        collection: sika_engine::ids::new_id("col"),
        instructions: None,
        expires_at: now + ((SESSION_TTL_MS as f64) * deps.config.time_scale).round().max(1_000.0) as i64,
        created_at: now,
    };
    let business = super::payee(deps, &link.settings, &link.organization);
    let sandbox = deps.kind == StackKind::Sandbox;
    match method {
        "mobile_money" => {
            let networks = methods_of_kind(deps, currency.code, "mobile_money");
            let network = request.network.as_deref().unwrap_or("");
            let rail = networks
                .iter()
                .find(|m| m.code == network)
                .ok_or_else(|| ApiError::validation("network", "choose your mobile money network"))?;
            let phone = wallet_number(deps.catalog, rail, request.phone.as_deref().unwrap_or(""))?;
            within_limits(rail, amount, currency.scale)?;
            session.code = rail.code.clone();
            session.payer = phone;
            // Live: the operator's merchant number, told apart by the
            // reference (no rail prompts the payer's phone). The sandbox
            // simulates the prompt.
            if let Some(merchant) = deps.receiving.mobile_money(&rail.code).filter(|_| !sandbox) {
                session.instructions = Some(Instructions {
                    kind: "mobile_money".into(),
                    fields: vec![
                        ("network".into(), rail.name.clone()),
                        ("merchantNumber".into(), merchant.merchant_number.clone()),
                        ("merchantName".into(), merchant.merchant_name.clone()),
                        ("reference".into(), id.clone()),
                        ("amount".into(), currency.format(amount)),
                        ("currency".into(), currency.code.to_string()),
                    ],
                });
            }
        }
        "bank_transfer" => {
            let rail = methods_of_kind(deps, currency.code, "bank_transfer").into_iter().next().ok_or_else(
                || ApiError::validation("method", "bank transfer is not available for this currency"),
            )?;
            // Live: the operator's account, told apart by the reference.
            let (bank_name, account_number, account_name) = match deps.receiving.bank(currency.code) {
                _ if sandbox => ("Sika Sandbox Bank".to_string(), digits_from(&id, 10), business),
                Some(bank) => {
                    (bank.bank_name.clone(), bank.account_number.clone(), bank.account_name.clone())
                }
                None => {
                    return Err(ApiError::validation(
                        "method",
                        "bank transfer is not available for this currency",
                    ));
                }
            };
            within_limits(rail, amount, currency.scale)?;
            session.code = rail.code.clone();
            session.payer = format!("bank transfer to {account_number}");
            session.instructions = Some(Instructions {
                kind: "bank_transfer".into(),
                fields: vec![
                    ("bankName".into(), bank_name),
                    ("accountNumber".into(), account_number),
                    ("accountName".into(), account_name),
                    ("reference".into(), id.clone()),
                    ("amount".into(), currency.format(amount)),
                    ("currency".into(), currency.code.to_string()),
                ],
            });
        }
        "crypto" => {
            let rails = crypto_rails(deps, settings);
            let asset = request.asset.as_deref().unwrap_or("USDC").to_ascii_uppercase();
            let chain = request.chain.as_deref().unwrap_or("");
            let rail = rails
                .iter()
                .find(|m| {
                    m.currency().code == asset && (chain.is_empty() || m.chain.as_deref() == Some(chain))
                })
                .ok_or_else(|| {
                    ApiError::validation("chain", format!("{asset} on '{chain}' is not accepted here"))
                })?;
            let asset_currency = Currency::find(&asset).map_err(|e| ApiError::internal_from(e))?;
            // The payer sends the asset; the link's currency is credited.
            // Priced as a quote for a fixed `to` amount: the payer's asset
            // is sold at the node's all-in rate, and the asset amount is
            // rounded up, so every rounding favours the node.
            let rate: Decimal = deps.engine.rate(&asset, currency.code)?;
            let amount =
                currency.to_decimal(amount).map_err(|e| ApiError::validation("amount", e.to_string()))?;
            let origin = sika_engine::rates::convert_up(amount, rate, asset_currency.scale)
                .ok_or_else(|| ApiError::validation("amount", "is too large to convert"))?;
            let origin = asset_currency
                .from_decimal(origin, false)
                .map_err(|e| ApiError::validation("amount", e.to_string()))?;
            // Collections take no stablecoins, so only the rail's maximum
            // applies: its minimum is a payout's, and a deposit under it is
            // still money received.
            if origin > rail.limits.max_minor(asset_currency.scale) {
                return Err(ApiError::validation(
                    "amount",
                    format!("{} accepts at most {} {}", rail.name, rail.limits.max, rail.limits.currency),
                ));
            }
            let network = rail.chain_for(sandbox).unwrap_or("").to_string();
            // Live: claimed from the operator's route once the session is
            // built. Sandbox: one of the chain's own form (`T…` on Tron).
            let address = if sandbox {
                crate::domain::receiving::sandbox_address(rail.chain.as_deref().unwrap_or(""))
            } else {
                String::new()
            };
            session.code = rail.code.clone();
            session.chain = rail.chain.clone();
            session.payer = address.clone();
            session.origin_amount = origin;
            session.origin_currency = asset.clone();
            session.rate = rate.normalize().to_string();
            session.instructions = Some(Instructions {
                kind: "crypto".into(),
                fields: vec![
                    ("asset".into(), asset.clone()),
                    ("chain".into(), rail.chain.clone().unwrap_or_default()),
                    ("network".into(), network),
                    ("address".into(), address),
                    ("amount".into(), asset_currency.format(origin)),
                ],
            });
        }
        _ => return Err(ApiError::validation("method", "choose how to pay")),
    }
    Ok((session, custom_values))
}

#[cfg(test)]
mod tests {
    use super::ungrouped;

    #[test]
    fn thousands_separators_are_read_only_in_groups_of_three() {
        assert_eq!(ungrouped("1,500"), "1500");
        assert_eq!(ungrouped(" 1,500.00 "), "1500.00");
        assert_eq!(ungrouped("12,345,678.9"), "12345678.9");
        assert_eq!(ungrouped("1500"), "1500");
        for left in ["1,50", "1,5000", ",500", "1,,500", "1.500,00", "1,500,", "a,500"] {
            assert_eq!(ungrouped(left), left, "left for the parser to refuse");
        }
    }
}
