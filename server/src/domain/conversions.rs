//! Quotes and conversions: a rate locked for a while, then executed
//! between two of the organization's balances. Each operation is one
//! function here; `http::routes::conversions` only translates its input
//! and output.

use sika_api::conversions::{Conversion, CreateConversion, CreateQuote, Quote};
use sika_api::{ListPage, ListQuery};
use sika_engine::{Command, Engine, Outcome, QuoteAmount};

use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::instructions::{currency, validate_reference};
use crate::domain::movements::Created;
use crate::domain::pagination::{Lists, page_of_views};
use crate::domain::principal::Principal;
use crate::domain::render;

/// Locks the all-in rate for the conversion `request` asks for: exactly
/// one of `from.amount` and `to.amount` is given, and the quote computes
/// the other.
pub(crate) async fn create_quote(
    ledger: &Engine,
    principal: &Principal,
    request: CreateQuote,
) -> ApiResult<Quote> {
    let from = currency("from.currency", &request.from.currency)?;
    let to = currency("to.currency", &request.to.currency)?;
    if from == to {
        return Err(ApiError::validation("to.currency", "must differ from from.currency"));
    }
    let amount = match (&request.from.amount, &request.to.amount) {
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
    let applied = ledger
        .execute(Command::CreateQuote {
            organization: principal.organization().to_string(),
            from_currency: from.code.to_string(),
            to_currency: to.code.to_string(),
            amount,
        })
        .await?;
    let Outcome::Quote(quote) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    Ok(render::quote(&quote, ledger.now_ms()))
}

/// Executes the pending quote `request` names: a concurrent execute of the
/// same quote, or a retry with the same `externalReference`, answers the
/// same conversion, `replayed`.
pub(crate) async fn execute(
    ledger: &Engine,
    principal: &Principal,
    request: CreateConversion,
) -> ApiResult<Created<Conversion>> {
    if request.quote_id.is_empty() {
        return Err(ApiError::validation("quoteId", "must not be empty"));
    }
    if let Some(reference) = &request.external_reference {
        validate_reference(reference)?;
    }
    let applied = ledger
        .execute(Command::ExecuteQuote {
            organization: principal.organization().to_string(),
            quote_id: request.quote_id,
            external_reference: request.external_reference,
        })
        .await?;
    let Outcome::Conversion(conversion) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    Ok(Created { view: render::conversion(&conversion), replayed: applied.replayed })
}

/// One page of the caller's conversions, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: &ListQuery,
) -> ApiResult<ListPage<Conversion>> {
    page_of_views(lists, principal.organization(), "conversions", query, |snapshot, id| {
        Ok(snapshot.conversion(id)?.map(|c| render::conversion(&c)))
    })
}
