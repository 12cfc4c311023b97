//! Account lookups at the provider a method is routed through, before any
//! money moves: `POST /v1/validate/bulk` answers with the holder's name,
//! and a payout or order to an account the provider says does not exist
//! is refused (`400`, `to.accountNumber`) instead of failing after its
//! funds were held. A lookup is an exchange like any other: it counts in
//! the breaker, and while the breaker shows the provider `down` none is
//! attempted. A provider that cannot answer never refuses a payout by
//! itself: the transfer is checked again by the provider when it takes it.

use sika_api::capabilities::MethodStatus;
use sika_engine::movements::Destination;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::rails::{AsyncRail, Rails, wallet_number};

/// What the provider said about an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// It exists; the holder's name when the provider gives one.
    Found(Option<String>),
    /// The provider says there is no such account.
    NotFound,
    /// The provider failed, timed out, or the breaker has it down.
    Unavailable,
}

/// Looks an account up at the provider `code` is routed through; `None`
/// when no provider looks up `code`'s accounts.
pub(crate) async fn lookup(
    rails: &Rails,
    code: &str,
    bank_code: &str,
    account_number: &str,
) -> Option<Lookup> {
    let rail = rails.flutterwave.as_ref().filter(|rail| rail.resolves(code))?;
    if rails.health.status() == MethodStatus::Down {
        return Some(Lookup::Unavailable);
    }
    Some(match rail.resolve(bank_code, &wallet_number(account_number)).await {
        Ok(Some(name)) => {
            rails.health.answered();
            Lookup::Found(Some(name).filter(|n| !n.is_empty()))
        }
        Ok(None) => {
            rails.health.answered();
            Lookup::NotFound
        }
        Err(error) => {
            rails.health.failed();
            tracing::warn!(error = ?error, "cannot look the account up at the provider");
            Lookup::Unavailable
        }
    })
}

/// Checks a new payout's or order's destination at the provider before
/// anything is stored: refuses an account the provider says does not exist
/// and returns what the lookup found (`None` when nothing was asked: no
/// lookup for the method, or `operation` under `reference` was already
/// created, so the request only replays it).
pub(crate) async fn confirm_destination(
    ledger: &sika_engine::Engine,
    rails: &Rails,
    organization: &str,
    operation: &str,
    reference: &str,
    destination: &Destination,
) -> ApiResult<Option<Lookup>> {
    let (Some(bank_code), Some(number)) = (&destination.bank_code, &destination.account_number) else {
        return Ok(None);
    };
    if !rails.resolves(&destination.code) {
        return Ok(None);
    }
    if ledger.read()?.idempotency(organization, operation, reference)?.is_some() {
        return Ok(None);
    }
    let found = lookup(rails, &destination.code, bank_code, number).await;
    if found == Some(Lookup::NotFound) {
        return Err(ApiError::validation(
            "to.accountNumber",
            format!(
                "the bank with code {bank_code} has no account {}: check it and to.bankCode",
                number.trim()
            ),
        ));
    }
    Ok(found)
}
