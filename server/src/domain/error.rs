//! Every failure the node answers with is an `ApiError`: a stable code
//! (`sika_api::ErrorCode`), a message, and optional details. It knows
//! nothing of HTTP: `crate::http::error` maps each code to its one status,
//! and the envelope middleware writes the body with its `requestId`.

use std::panic::Location;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sika_api::ErrorCode;
use sika_engine::{Currency, EngineError, Field, Money, MoneyError, Problem, SpendCap};

#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Map<String, Value>>,
    /// A `validation_error` for what the organization already keeps rather
    /// than the request's own shape: a quota the request would pass. The
    /// code stays `validation_error` (CONTRACT.md pins it) and the answer
    /// is 413, which `http::error` reads from here.
    pub over_quota: bool,
    /// Why an `internal_error` happened and where: written on the
    /// request's log line by the envelope, never into the body.
    pub cause: Option<Cause>,
}

/// The source of an internal error and the line that turned it into one.
#[derive(Debug, Clone)]
pub(crate) struct Cause {
    pub source: Arc<dyn std::error::Error + Send + Sync>,
    pub at: &'static Location<'static>,
}

impl std::fmt::Display for Cause {
    /// The source and each of its own sources, outermost first.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.source)?;
        let mut next = self.source.source();
        while let Some(inner) = next {
            write!(f, ": {inner}")?;
            next = inner.source();
        }
        Ok(())
    }
}

impl ApiError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into(), details: None, over_quota: false, cause: None }
    }

    /// `413 validation_error`: storing this would pass a quota of `limit`
    /// bytes, of which `used` are taken; `details.field` names what was
    /// sent.
    pub(crate) fn over_quota(field: &str, message: impl Into<String>, limit: u64, used: u64) -> Self {
        let mut error =
            ApiError::validation(field, message).with_detail("limit", limit).with_detail("used", used);
        error.over_quota = true;
        error
    }

    pub(crate) fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.get_or_insert_with(Map::new).insert(key.to_string(), value.into());
        self
    }

    /// `400 validation_error` naming the offending field.
    pub(crate) fn validation(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError::new(ErrorCode::ValidationError, format!("{field}: {message}"))
            .with_detail("field", field)
            .with_detail("reason", message)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unauthorized, message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Forbidden, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotFound, message)
    }

    /// `500 internal_error` because of `cause`: the body says only that the
    /// node failed; the cause and the caller's line go to the request's
    /// log line. A plain message (`&str`, `String`) is a cause too, for a
    /// failure that has no error value (an outcome of the wrong kind).
    #[track_caller]
    pub(crate) fn internal_from(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        let mut error = ApiError::new(ErrorCode::InternalError, "the node could not complete the request");
        error.cause = Some(Cause { source: Arc::from(cause.into()), at: Location::caller() });
        error
    }

    pub(crate) fn unavailable() -> Self {
        ApiError::new(ErrorCode::Unavailable, "the node is shutting down; retry shortly")
    }

    /// `503 unavailable` for a reason the operator must fix (an exhausted
    /// address or account pool).
    pub(crate) fn unavailable_because(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unavailable, message)
    }

    /// No current rate between two currencies: none is configured, or the
    /// feed is older than its `max_age`.
    pub(crate) fn rates_unavailable(from: &str, to: &str) -> Self {
        ApiError::new(
            ErrorCode::RatesUnavailable,
            format!("no current rate from {from} to {to}: the operator has configured none, or the rate feed is stale"),
        )
        .with_detail("pair", format!("{from}/{to}"))
    }

    /// The error as one item's result in a bulk answer.
    pub(crate) fn item_error(&self) -> sika_api::ItemError {
        sika_api::ItemError { error: self.code, message: self.message.clone(), details: self.details.clone() }
    }

    /// The JSON body, with the request id filled in.
    pub(crate) fn body(&self, request_id: &str) -> Value {
        let mut body = json!({
            "error": self.code.as_str(),
            "message": self.message,
            "requestId": request_id,
        });
        if let Some(details) = &self.details {
            body["details"] = Value::Object(details.clone());
        }
        body
    }
}

/// `500 internal_error` for an engine answer of another kind than the
/// command it answers makes.
#[track_caller]
pub(crate) fn unexpected(outcome: &sika_engine::Outcome) -> ApiError {
    use sika_engine::Outcome;
    // The kind only: a record's fields may name a beneficiary, and no
    // log line carries those.
    let kind = match outcome {
        Outcome::Transfers(_) => "transfers",
        Outcome::Deposit(_) => "a deposit",
        Outcome::Quote(_) => "a quote",
        Outcome::Conversion(_) => "a conversion",
        Outcome::Document { .. } => "a document",
        Outcome::Payout(_) => "a payout",
        Outcome::Collection(_) => "a collection",
        Outcome::Order(_) => "an order",
        Outcome::Refund(_) => "a refund",
        Outcome::Dispute(_) => "a dispute",
    };
    ApiError::internal_from(format!("the engine answered the command with {kind}"))
}

/// Maps a money error on `field` to a validation error naming it.
pub(crate) fn money_error(field: &str, error: MoneyError) -> ApiError {
    ApiError::validation(field, error.to_string())
}

impl From<EngineError> for ApiError {
    /// An engine failure of the node's own is an `internal_error` caused by
    /// it, located where `?` converted it.
    #[track_caller]
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Money(e) => ApiError::validation("amount", e.to_string()),
            EngineError::Invalid { field, problem } => {
                ApiError::validation(field_path(field), reason(&problem))
            }
            EngineError::InsufficientFunds { available, required, currency } => {
                match (Money::of(&currency, available), Money::of(&currency, required)) {
                    (Ok(available), Ok(required)) => insufficient_funds(available, required),
                    (Err(e), _) | (_, Err(e)) => ApiError::internal_from(e),
                }
            }
            EngineError::Duplicate { reference } => ApiError::new(
                ErrorCode::Duplicate,
                format!("externalReference '{reference}' was already used with a different request body"),
            )
            .with_detail("field", "externalReference"),
            EngineError::NotFound { resource, id } => {
                ApiError::not_found(format!("{resource} '{id}' not found"))
            }
            e @ (EngineError::QuoteExpired(_) | EngineError::QuoteExecuted(_)) => {
                ApiError::bad_request(e.to_string())
            }
            e @ EngineError::NotPending(_) => ApiError::bad_request(e.to_string()),
            EngineError::NoRate { from, to } => ApiError::rates_unavailable(&from, &to),
            EngineError::SpendCapExceeded { cap, limit_usd_cents, attempted_usd_cents } => {
                spend_cap_exceeded(cap, limit_usd_cents, attempted_usd_cents)
            }
            EngineError::NotRefundable { refundable, currency, .. } => {
                match Money::of(&currency, refundable) {
                    Ok(left) => {
                        ApiError::validation("amount", format!("at most {left} {currency} can be refunded"))
                            .with_detail("refundable", left.amount())
                    }
                    Err(e) => ApiError::internal_from(e),
                }
            }
            EngineError::InvalidState(message) => ApiError::new(ErrorCode::InvalidState, message),
            e @ EngineError::Conflict(_) => ApiError::new(ErrorCode::Conflict, e.to_string()),
            EngineError::Unavailable => ApiError::unavailable(),
            EngineError::Standby(reason) => {
                ApiError::unavailable_because(format!("this node is a standby: {reason}"))
            }
            // Counted by the engine and logged once per interval by the
            // node (`runtime::node`), not once per refused request.
            EngineError::Storage(message) => ApiError::new(ErrorCode::StorageUnavailable, message),
            // A ledger total or counter out of range is the node's failure
            // (a request's own amount too large arrives as `Money` above).
            e @ EngineError::Overflow(_) => {
                tracing::error!(error = %e, "ledger arithmetic overflow");
                ApiError::internal_from(e)
            }
            other => {
                tracing::error!(error = %other, "engine failure");
                ApiError::internal_from(other)
            }
        }
    }
}

/// The wire path (`details.field`) of an engine command's field.
fn field_path(field: Field) -> &'static str {
    match field {
        Field::Amount => "amount",
        Field::Account => "account",
        Field::Transfers => "transfers",
        Field::Documents => "documents",
        Field::FromCurrency => "from.currency",
        Field::ToCurrency => "to.currency",
        Field::FromAmount => "from.amount",
        Field::ToAmount => "to.amount",
        Field::Group => "group",
        Field::Id => "id",
        Field::BenchOptions => "accounts",
    }
}

/// What the caller reads about an engine refusal of a field.
fn reason(problem: &Problem) -> String {
    match problem {
        Problem::NotPositive => "must be positive".into(),
        Problem::SameAccount => "debit and credit accounts must differ".into(),
        Problem::GroupSize { max } => format!("a linked group holds 1 to {max} transfers"),
        Problem::Empty => "at least one document is required".into(),
        Problem::Money(e) => e.to_string(),
        Problem::SameCurrency => "must differ from from.currency".into(),
        Problem::TooSmallToConvert => "too small to convert at the current rate".into(),
        Problem::GroupTarget { group } => format!("group '{group}' has a target that is not positive"),
        Problem::NotNew { id } => format!("'{id}' is not a new collection id"),
        Problem::BenchTooSmall => "needs at least 2 accounts, 1 transfer and a batch of 1".into(),
    }
}

/// `insufficient_funds`, with both amounts in the account's currency.
fn insufficient_funds(available: Money, required: Money) -> ApiError {
    let currency = available.code();
    ApiError::new(
        ErrorCode::InsufficientFunds,
        format!("insufficient funds: {available} {currency} available, {required} {currency} required"),
    )
    .with_detail("available", available.amount())
    .with_detail("required", required.amount())
    .with_detail("currency", currency)
}

/// `spend_cap_exceeded`: amounts in US cents, shown in dollars.
fn spend_cap_exceeded(cap: SpendCap, limit_usd_cents: i128, attempted_usd_cents: i128) -> ApiError {
    let usd = |cents| Money::new(cents, Currency::USD).amount();
    let (limit_usd, attempted_usd) = (usd(limit_usd_cents), usd(attempted_usd_cents));
    let cap = match cap {
        SpendCap::PerTransaction => "perTransactionUsd",
        SpendCap::Daily => "dailyUsd",
        SpendCap::Monthly => "monthlyUsd",
    };
    ApiError::new(
        ErrorCode::SpendCapExceeded,
        format!("this payout of {attempted_usd} USD would exceed the key's {cap} cap of {limit_usd} USD"),
    )
    .with_detail("cap", cap)
    .with_detail("limitUsd", limit_usd)
    .with_detail("attemptedUsd", attempted_usd)
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31.3: the engine refuses with a typed field and integers; the
    /// wire path, the reason and the formatted amounts are made here.
    #[test]
    fn engine_refusals_become_wire_paths_and_formatted_money_here() {
        let refused = ApiError::from(EngineError::invalid(Field::ToAmount, Problem::TooSmallToConvert));
        let details = refused.details.clone().unwrap();
        assert_eq!(details["field"], "to.amount");
        assert_eq!(refused.message, "to.amount: too small to convert at the current rate");

        let poor = ApiError::from(EngineError::InsufficientFunds {
            available: 1_050,
            required: 250_000,
            currency: "GHS".into(),
        });
        assert_eq!(poor.code, ErrorCode::InsufficientFunds);
        assert_eq!(poor.message, "insufficient funds: 10.50 GHS available, 2500.00 GHS required");
        let details = poor.details.unwrap();
        assert_eq!((&details["available"], &details["required"]), (&json!("10.50"), &json!("2500.00")));

        let capped = ApiError::from(EngineError::SpendCapExceeded {
            cap: SpendCap::Daily,
            limit_usd_cents: 10_000,
            attempted_usd_cents: 12_345,
        });
        assert_eq!(
            capped.message,
            "this payout of 123.45 USD would exceed the key's dailyUsd cap of 100.00 USD"
        );

        // A currency the node does not know is its own failure, not a guess.
        let unknown = ApiError::from(EngineError::InsufficientFunds {
            available: 1,
            required: 2,
            currency: "ZZZ".into(),
        });
        assert_eq!(unknown.code, ErrorCode::InternalError);
    }

    #[test]
    fn an_overflow_is_the_callers_only_when_their_amount_is_too_large() {
        let request = ApiError::from(EngineError::Money(MoneyError::Overflow));
        assert_eq!(request.code, ErrorCode::ValidationError);
        let ledger = ApiError::from(EngineError::Overflow("credits posted"));
        assert_eq!(ledger.code, ErrorCode::InternalError);
    }

    #[test]
    fn an_internal_error_keeps_its_cause_and_line_out_of_its_body() {
        let io = std::io::Error::other("disk on fire");
        let line = line!() + 1;
        let error = ApiError::internal_from(io);
        let cause = error.cause.as_ref().expect("the cause is kept");
        assert_eq!(cause.to_string(), "disk on fire");
        assert_eq!((cause.at.file(), cause.at.line()), (file!(), line));
        let body = error.body("req_1").to_string();
        assert!(!body.contains("disk on fire") && !body.contains(file!()), "{body}");

        // `?` on an engine failure locates the `?`.
        fn fails() -> ApiResult<()> {
            Err(EngineError::Overflow("credits posted"))?;
            Ok(())
        }
        let line = line!() - 3;
        let error = fails().unwrap_err();
        let cause = error.cause.expect("the cause is kept");
        assert_eq!((cause.at.file(), cause.at.line()), (file!(), line));
        assert!(cause.to_string().contains("credits posted"), "{cause}");
    }
}
