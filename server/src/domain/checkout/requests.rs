//! Creating pages and links from API requests: every rule of the spec, with
//! `details.field` naming what failed.

use serde_json::Value;
use sika_api::checkout::CheckoutRequest;
use sika_engine::Currency;

use super::{Branding, CustomField, METHODS, PaymentLink, PaymentPage, Settings};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::parse_timestamp;

pub(crate) const TITLE_MAX: usize = 255;
pub(crate) const DESCRIPTION_MAX: usize = 2_000;
pub(crate) const CUSTOM_FIELDS_MAX: usize = 20;
pub(crate) const CUSTOM_FIELD_TYPES: [&str; 5] = ["text", "number", "email", "phone", "date"];
pub(crate) const CRYPTO_ASSETS: [&str; 2] = ["USDC", "USDT"];

fn length(field: &str, value: &str, min: usize, max: usize) -> ApiResult<()> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(ApiError::validation(field, format!("must be {min} to {max} characters")));
    }
    Ok(())
}

/// A URL a page shows or sends the payer to, as written (it is shown to
/// the payer as the merchant gave it): every URL field's rules
/// (`limits::web_url`), and nothing that would end an HTML attribute.
fn web_url(field: &str, value: &str) -> ApiResult<()> {
    crate::domain::limits::web_url(field, value)?;
    if value.chars().any(|c| c.is_whitespace() || c == '"' || c == '<' || c == '>') {
        return Err(ApiError::validation(field, "must be an http or https URL"));
    }
    Ok(())
}

pub(crate) fn email(field: &str, value: &str) -> ApiResult<String> {
    let value = value.trim();
    let ok = value.len() <= 254
        && value.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
        && !value.chars().any(char::is_whitespace);
    if !ok {
        return Err(ApiError::validation(field, "must be an email address"));
    }
    Ok(value.to_string())
}

fn accent(value: &str) -> bool {
    let hex = value.strip_prefix('#').unwrap_or("");
    (hex.len() == 3 || hex.len() == 6) && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// Whether a page in `currency` could ever offer `method`: GHS is
/// collected by mobile money only; a local method needs a rail of its kind
/// in a country of that currency; stablecoins are taken for any other.
fn can_offer(currency: &str, method: &str) -> bool {
    match method {
        _ if currency == "GHS" => method == "mobile_money",
        "crypto" => true,
        _ => crate::domain::catalog::shipped()
            .countries()
            .iter()
            .filter(|c| c.currency == currency)
            .any(|c| c.methods.iter().any(|m| m.kind.as_str() == method)),
    }
}

/// Checks the settings a page and a link share; returns them with the
/// parsed amount (minor units) when one was given.
#[expect(clippy::too_many_lines)]
fn settings(request: &CheckoutRequest, now: i64) -> ApiResult<(Settings, Option<i128>)> {
    let code = request.currency.as_deref().ok_or_else(|| ApiError::validation("currency", "is required"))?;
    length("currency", code, 1, 10)?;
    let currency = Currency::find(&code.to_ascii_uppercase())
        .map_err(|e| ApiError::validation("currency", e.to_string()))?;
    let title = request.title.as_deref().ok_or_else(|| ApiError::validation("title", "is required"))?;
    length("title", title, 1, TITLE_MAX)?;
    if title.trim().is_empty() {
        return Err(ApiError::validation("title", "must not be blank"));
    }
    let methods = request
        .allowed_methods
        .as_ref()
        .ok_or_else(|| ApiError::validation("allowedMethods", "is required"))?;
    if methods.is_empty() {
        return Err(ApiError::validation("allowedMethods", "must hold at least 1 method"));
    }
    let mut allowed_methods: Vec<String> = Vec::new();
    for (i, m) in methods.iter().enumerate() {
        if !METHODS.contains(&m.as_str()) {
            return Err(ApiError::validation(
                &format!("allowedMethods[{i}]"),
                format!("'{m}' is not one of {}", METHODS.join(", ")),
            ));
        }
        if !can_offer(currency.code, m) {
            return Err(ApiError::validation(
                "allowedMethods",
                format!("{m} cannot be offered for {}: no {m} rail collects it", currency.code),
            ));
        }
        if !allowed_methods.contains(m) {
            allowed_methods.push(m.clone());
        }
    }
    let amount = match &request.amount {
        None => None,
        Some(input) => Some(
            currency
                .parse(input.as_str(), false)
                .map_err(|e| ApiError::validation("amount", e.to_string()))?,
        ),
    };
    let description = request.description.clone().unwrap_or_default();
    length("description", &description, 0, DESCRIPTION_MAX)?;
    let allowed_crypto_assets = match &request.allowed_crypto_assets {
        None => None,
        Some(assets) => {
            let mut out: Vec<String> = Vec::new();
            for (i, a) in assets.iter().enumerate() {
                let upper = a.to_ascii_uppercase();
                if !CRYPTO_ASSETS.contains(&upper.as_str()) {
                    return Err(ApiError::validation(
                        &format!("allowedCryptoAssets[{i}]"),
                        format!("'{a}' is not one of {}", CRYPTO_ASSETS.join(", ")),
                    ));
                }
                if !out.contains(&upper) {
                    out.push(upper);
                }
            }
            Some(out)
        }
    };
    let mut custom_fields: Vec<CustomField> = Vec::new();
    let inputs = request.custom_fields.as_deref().unwrap_or_default();
    if inputs.len() > CUSTOM_FIELDS_MAX {
        return Err(ApiError::validation(
            "customFields",
            format!("must hold at most {CUSTOM_FIELDS_MAX} fields"),
        ));
    }
    for (i, f) in inputs.iter().enumerate() {
        let at = |name: &str| format!("customFields[{i}].{name}");
        let name = f.name.as_deref().ok_or_else(|| ApiError::validation(&at("name"), "is required"))?;
        length(&at("name"), name, 1, 64)?;
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(ApiError::validation(&at("name"), "may hold only letters, digits, '_' and '-'"));
        }
        if custom_fields.iter().any(|c| c.name == name) {
            return Err(ApiError::validation(&at("name"), format!("'{name}' appears twice")));
        }
        let kind = f.kind.clone().unwrap_or_else(|| "text".into());
        if !CUSTOM_FIELD_TYPES.contains(&kind.as_str()) {
            return Err(ApiError::validation(
                &at("type"),
                format!("'{kind}' is not one of {}", CUSTOM_FIELD_TYPES.join(", ")),
            ));
        }
        let label = f.label.clone().unwrap_or_else(|| name.replace(['_', '-'], " "));
        length(&at("label"), &label, 1, 120)?;
        custom_fields.push(CustomField {
            name: name.into(),
            kind,
            required: f.required.unwrap_or(false),
            label,
        });
    }
    let redirect_url = request.redirect_url.clone().unwrap_or_default();
    if !redirect_url.is_empty() {
        web_url("redirectUrl", &redirect_url)?;
    }
    let input = request.branding.as_ref();
    let logo_url = input.and_then(|b| b.logo_url.clone()).unwrap_or_default();
    if !logo_url.is_empty() {
        web_url("branding.logoUrl", &logo_url)?;
    }
    let accent_color = input.and_then(|b| b.accent_color.clone()).unwrap_or_else(|| "#1a7f5a".into());
    if !accent(&accent_color) {
        return Err(ApiError::validation("branding.accentColor", "must be a hex colour like #1a7f5a"));
    }
    let business_name = input.and_then(|b| b.business_name.clone()).unwrap_or_default();
    length("branding.businessName", &business_name, 0, 120)?;
    let metadata = Value::Object(request.metadata.clone().unwrap_or_default()).to_string();
    if metadata.len() > 8_192 {
        return Err(ApiError::validation("metadata", "must be at most 8 KiB of JSON"));
    }
    let expires_at = match &request.expires_at {
        None => None,
        Some(text) => {
            let at = parse_timestamp(text)
                .ok_or_else(|| ApiError::validation("expiresAt", "must be an ISO 8601 date-time"))?;
            if at <= now {
                return Err(ApiError::validation("expiresAt", "must be in the future"));
            }
            Some(at)
        }
    };
    let settings = Settings {
        currency: currency.code.to_string(),
        title: title.to_string(),
        description,
        allowed_methods,
        allowed_crypto_assets,
        custom_fields,
        branding: Branding { logo_url, accent_color, business_name },
        redirect_url,
        metadata,
        expires_at,
    };
    Ok((settings, amount))
}

pub(crate) fn new_page(request: CheckoutRequest, organization: &str, now: i64) -> ApiResult<PaymentPage> {
    if request.email.is_some() {
        return Err(ApiError::validation("email", "a page takes any payer; set email on a payment link"));
    }
    if request.customer_reference.is_some() {
        return Err(ApiError::validation("customerReference", "is a payment link field"));
    }
    let (settings, amount) = settings(&request, now)?;
    Ok(PaymentPage {
        id: sika_engine::ids::new_id("pp"),
        organization: organization.to_string(),
        amount,
        settings,
        closed_at: None,
        created_at: now,
        updated_at: now,
    })
}

pub(crate) fn new_link(request: CheckoutRequest, organization: &str, now: i64) -> ApiResult<PaymentLink> {
    let (settings, amount) = settings(&request, now)?;
    let email = request.email.as_deref().map(|e| email("email", e)).transpose()?;
    if let Some(reference) = &request.customer_reference {
        length("customerReference", reference, 1, 255)?;
        crate::domain::limits::check_visible("customerReference", reference)?;
    }
    Ok(PaymentLink {
        id: sika_engine::ids::new_id("pl"),
        organization: organization.to_string(),
        page: None,
        email,
        customer_reference: request.customer_reference,
        amount,
        settings,
        custom_values: Vec::new(),
        closed_at: None,
        created_at: now,
        updated_at: now,
    })
}
