use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sika_engine::{Command, Outcome, QuoteAmount};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, money_error};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PageQuery, Paging, list_body};
use crate::render::{self, AmountInput};
use crate::routes::rates::currency_param;
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/conversions/quotes", post(create_quote))
        .route("/v1/conversions/quotes/{id}", get(get_quote))
        .route("/v1/conversions", post(execute).get(list))
        .route("/v1/conversions/{id}", get(get_conversion))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuoteSide {
    currency: String,
    amount: Option<AmountInput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuoteRequest {
    from: QuoteSide,
    to: QuoteSide,
}

async fn create_quote(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<QuoteRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("conversions:write")?;
    let from = currency_param("from.currency", &body.from.currency)?;
    let to = currency_param("to.currency", &body.to.currency)?;
    if from == to {
        return Err(ApiError::validation("to.currency", "must differ from from.currency"));
    }
    let amount = match (&body.from.amount, &body.to.amount) {
        (Some(a), None) => {
            QuoteAmount::From(from.parse(a.as_str(), false).map_err(|e| money_error("from.amount", e))?)
        }
        (None, Some(a)) => {
            QuoteAmount::To(to.parse(a.as_str(), false).map_err(|e| money_error("to.amount", e))?)
        }
        _ => {
            return Err(ApiError::validation("from.amount", "give exactly one of from.amount and to.amount"));
        }
    };
    let applied = stack
        .engine
        .execute(Command::CreateQuote {
            organization: principal.organization().to_string(),
            from_currency: from.code.to_string(),
            to_currency: to.code.to_string(),
            amount,
        })
        .await?;
    let Outcome::Quote(quote) = applied.outcome else { return Err(ApiError::internal()) };
    Ok((StatusCode::CREATED, Json(json!({ "quote": render::quote(&quote, stack.now_ms()) }))))
}

async fn get_quote(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("conversions:read")?;
    let quote = stack
        .engine
        .read()?
        .quote(&id)?
        .filter(|q| q.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("quote '{id}' not found")))?;
    Ok(Json(json!({ "quote": render::quote(&quote, stack.now_ms()) })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExecuteRequest {
    quote_id: String,
    external_reference: Option<String>,
}

/// Executes a quote. A concurrent execute of the same quote answers 200
/// with the same conversion; so does an idempotent retry.
async fn execute(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<ExecuteRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("conversions:write")?;
    if body.quote_id.is_empty() {
        return Err(ApiError::validation("quoteId", "must not be empty"));
    }
    if let Some(reference) = &body.external_reference {
        validate_reference(reference)?;
    }
    let applied = stack
        .engine
        .execute(Command::ExecuteQuote {
            organization: principal.organization().to_string(),
            quote_id: body.quote_id,
            external_reference: body.external_reference,
        })
        .await?;
    let Outcome::Conversion(conversion) = applied.outcome else { return Err(ApiError::internal()) };
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(json!({ "conversion": render::conversion(&conversion) }))))
}

/// An externalReference: 1 to 255 printable characters.
pub fn validate_reference(reference: &str) -> ApiResult<()> {
    if reference.is_empty() || reference.chars().count() > 255 || reference.chars().any(char::is_control) {
        return Err(ApiError::validation("externalReference", "must be 1 to 255 printable characters"));
    }
    Ok(())
}

async fn get_conversion(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("conversions:read")?;
    let conversion = stack
        .engine
        .read()?
        .conversion(&id)?
        .filter(|c| c.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("conversion '{id}' not found")))?;
    Ok(Json(json!({ "conversion": render::conversion(&conversion) })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("conversions:read")?;
    let organization = principal.organization();
    // The stack is part of the scope: a sandbox cursor is refused on live.
    let scope = format!("{}/{organization}/conversions", stack.kind.name());
    let secret = stack.identity.secret();
    let page = query.page(&secret, &scope)?;
    let snapshot = stack.engine.read()?;
    let mut entries = snapshot.list(organization, "conversions", page.before, page.limit + 1)?;
    let has_more = entries.len() > page.limit;
    entries.truncate(page.limit);
    let mut data = Vec::with_capacity(entries.len());
    for (_, id) in &entries {
        if let Some(conversion) = snapshot.conversion(id)? {
            data.push(render::conversion(&conversion));
        }
    }
    let last = entries.last().map(|(position, _)| *position);
    Ok(Json(list_body(data, last, has_more, &secret, &scope)))
}
