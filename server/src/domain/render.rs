//! How records look on the wire: JSON renderers shared by every GET, list
//! and event payload, so `data` in a webhook is exactly what a GET returns.

use crate::domain::error::ApiResult;
use crate::domain::timeline::{self, Line};
use chrono::{DateTime, SecondsFormat};
use serde_json::Value;
use sika_api::Money;
use sika_engine::{AccountRecord, ConversionRecord, Currency, DepositRecord, QuoteRecord, QuoteStatus};

/// An ISO 8601 UTC timestamp with milliseconds.
pub(crate) fn timestamp(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A logged request as `GET /v1/requests/{id}` shows it.
pub(crate) fn logged_request(
    entry: &crate::store::request_log::RequestLogEntry,
) -> sika_api::requests::LoggedRequest {
    // A body that is not JSON is shown as its text.
    let parse = |body: &Option<String>| {
        body.as_ref().map(|b| serde_json::from_str::<Value>(b).unwrap_or_else(|_| Value::String(b.clone())))
    };
    sika_api::requests::LoggedRequest {
        id: entry.id.clone(),
        method: entry.method.clone(),
        path: entry.path.clone(),
        status: entry.status,
        duration_ms: entry.duration_us as f64 / 1000.0,
        api_key_id: entry.api_key_id.clone(),
        request_body: parse(&entry.request_body),
        response_body: parse(&entry.response_body),
        created_at: timestamp(entry.created_at),
    }
}

pub(crate) fn parse_timestamp(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis())
}

/// Formats minor units of a currency the engine stored, as
/// `sika_engine::Money` does every amount. The engine stores only
/// currencies it knows, so an unknown code is a broken record: it is logged,
/// and the number is shown as what it is (minor units), never at a guessed
/// scale.
pub(crate) fn amount(currency: &str, minor: i128) -> String {
    match sika_engine::Money::of(currency, minor) {
        Ok(money) => money.amount(),
        Err(error) => {
            tracing::error!(currency, %minor, %error, "a stored amount in a currency the node does not know");
            format!("{minor} minor units of {currency}")
        }
    }
}

pub(crate) use sika_api::AmountInput;

/// A name the node stored as text (a payment method, a custom field's
/// type) as its wire enum. The node checked the name when it stored it, so
/// one the enum does not know is an internal error, not the caller's.
pub(crate) fn wire_enum<T: serde::de::DeserializeOwned>(name: &str) -> ApiResult<T> {
    serde_json::from_value(Value::String(name.to_string()))
        .map_err(|e| crate::domain::error::ApiError::internal_from(e))
}

/// A view as JSON, for the places that still assemble JSON by hand (events,
/// the admin API). Views are plain data, so this cannot fail.
pub(crate) fn to_json<T: serde::Serialize>(view: &T) -> Value {
    serde_json::to_value(view).expect("a view serializes to JSON")
}

pub(crate) fn account(
    record: &AccountRecord,
    usd_per_unit: Option<rust_decimal::Decimal>,
) -> ApiResult<sika_api::accounts::Account> {
    account_at(record, record.balances()?, usd_per_unit)
}

/// An account with the given balances (now's, or those at an instant).
pub(crate) fn account_at(
    record: &AccountRecord,
    balances: sika_engine::Balances,
    usd_per_unit: Option<rust_decimal::Decimal>,
) -> ApiResult<sika_api::accounts::Account> {
    let estimated_usd = usd_per_unit
        .and_then(|rate| {
            let total = Currency::find(&record.currency).ok()?.to_decimal(balances.total).ok()?;
            Some(total.checked_mul(rate)?.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::ToZero))
        })
        .map(|usd| format!("{usd:.2}"))
        .unwrap_or_else(|| "0.00".to_string());
    Ok(sika_api::accounts::Account {
        available_balance: amount(&record.currency, balances.available),
        created_at: timestamp(record.created_at),
        currency: record.currency.clone(),
        estimated_usd,
        id: record.id.clone(),
        pending_balance: amount(&record.currency, balances.pending),
        total_balance: amount(&record.currency, balances.total),
    })
}

pub(crate) fn quote(record: &QuoteRecord, now: i64) -> sika_api::conversions::Quote {
    use sika_api::conversions::{Quote, QuoteStatus as Wire};
    let status = match record.status {
        QuoteStatus::Executed => Wire::Executed,
        QuoteStatus::Pending if record.is_expired(now) => Wire::Expired,
        QuoteStatus::Pending => Wire::Pending,
    };
    Quote {
        id: record.id.clone(),
        status,
        from: Money {
            amount: amount(&record.from_currency, record.from_amount),
            currency: record.from_currency.clone(),
        },
        to: Money {
            amount: amount(&record.to_currency, record.to_amount),
            currency: record.to_currency.clone(),
        },
        rate: record.rate.clone(),
        conversion_id: record.conversion_id.clone(),
        expires_at: timestamp(record.expires_at),
        created_at: timestamp(record.created_at),
    }
}

pub(crate) fn conversion(record: &ConversionRecord) -> sika_api::conversions::Conversion {
    use sika_api::conversions::{Conversion, ConversionLeg, ConversionStatus};
    Conversion {
        completed_at: timestamp(record.completed_at),
        created_at: timestamp(record.created_at),
        external_reference: record.external_reference.clone(),
        from: ConversionLeg {
            account_number: record.from_account.clone(),
            amount: amount(&record.from_currency, record.from_amount),
            currency: record.from_currency.clone(),
        },
        id: record.id.clone(),
        quote_id: record.quote_id.clone(),
        rate: record.rate.clone(),
        status: ConversionStatus::Completed,
        status_message: "Conversion completed".to_string(),
        to: ConversionLeg {
            account_number: record.to_account.clone(),
            amount: amount(&record.to_currency, record.to_amount),
            currency: record.to_currency.clone(),
        },
        updated_at: timestamp(record.completed_at),
    }
}

/// A deposit as the deposit simulations show it; the virtual-account
/// simulation adds the account it was paid into.
pub(crate) fn deposit(record: &DepositRecord) -> sika_api::simulations::Deposit {
    sika_api::simulations::Deposit {
        id: record.id.clone(),
        status: sika_api::simulations::DepositStatus::Completed,
        account_number: record.account.clone(),
        currency: record.currency.clone(),
        amount: amount(&record.currency, record.amount),
        external_reference: record.external_reference.clone(),
        virtual_account_id: None,
        created_at: timestamp(record.created_at),
    }
}

/// Timeline entries sorted by time; entries at the same instant keep their order.
fn in_time_order(mut entries: Vec<Line>) -> Vec<Line> {
    entries.sort_by_key(|e| e.at);
    entries
}

/// A payout as its GET returns it; `extra` adds entries (webhook deliveries)
/// to the timeline, which is kept in time order.
pub(crate) fn payout(
    record: &sika_engine::movements::PayoutRecord,
    extra: &[Line],
) -> sika_api::payouts::Payout {
    use sika_api::payouts::{Payout, PayoutDestination, PayoutSource};
    let entries =
        in_time_order(record.timeline.iter().map(timeline::line).chain(extra.iter().cloned()).collect());
    Payout {
        id: record.id.clone(),
        status: payout_status(record.status),
        from: PayoutSource {
            account_number: record.from_account.clone(),
            amount: amount(&record.from_currency, record.from_amount),
            currency: record.from_currency.clone(),
            kyc: Default::default(),
        },
        to: PayoutDestination {
            code: record.to.code.clone(),
            amount: amount(&record.to_currency, record.to_amount),
            currency: record.to_currency.clone(),
            account_number: record.to.account_number.clone(),
            address: record.to.address.clone(),
            tag: record.to.tag.clone(),
            recipient_id: record.to.recipient_id.clone(),
            bank_code: record.to.bank_code.clone(),
            kyc: Default::default(),
        },
        fee: Money {
            amount: amount(&record.from_currency, record.fee_amount),
            currency: record.from_currency.clone(),
        },
        rate: record.rate.clone(),
        narration: record.narration.clone(),
        external_reference: record.external_reference.clone(),
        metadata: metadata_map(&record.metadata),
        status_message: record.status_message.clone(),
        completed_at: record.completed_at.map(timestamp),
        created_at: timestamp(record.created_at),
        updated_at: timestamp(record.updated_at),
        timeline: typed_timeline(&entries),
    }
}

fn metadata_map(text: &str) -> sika_api::Metadata {
    serde_json::from_str(text).unwrap_or_default()
}

fn typed_timeline(entries: &[Line]) -> Vec<sika_api::TimelineEntry> {
    entries
        .iter()
        .map(|e| sika_api::TimelineEntry {
            at: timestamp(e.at),
            kind: e.kind.clone(),
            title: e.title.clone(),
            detail: e.detail.clone(),
        })
        .collect()
}

/// A collection as its GET returns it; `extra` adds entries (webhook
/// deliveries) to the timeline, which is kept in time order, and
/// `refunded_minor` is what its refunds completed or pending give back.
pub(crate) fn collection(
    record: &sika_engine::movements::CollectionRecord,
    extra: &[Line],
    refunded_minor: i128,
) -> sika_api::collections::Collection {
    use sika_api::collections::{Collection, CollectionStatus};
    use sika_engine::movements::MovementStatus;
    let entries =
        in_time_order(record.timeline.iter().map(timeline::line).chain(extra.iter().cloned()).collect());
    Collection {
        id: record.id.clone(),
        status: match record.status {
            MovementStatus::Pending => CollectionStatus::Pending,
            // The engine reverses payouts only (`Step::Reverse` on a
            // collection is refused), so no collection is `Reversed`.
            MovementStatus::Completed | MovementStatus::Reversed => CollectionStatus::Completed,
            MovementStatus::Failed => CollectionStatus::Failed,
        },
        amount: amount(&record.currency, record.amount),
        refunded_amount: amount(&record.currency, refunded_minor),
        currency: record.currency.clone(),
        account_number: record.account_number.clone(),
        code: record.code.clone(),
        balance_account: record.account.clone(),
        external_reference: record.external_reference.clone(),
        metadata: metadata_map(&record.metadata),
        status_message: record.status_message.clone(),
        completed_at: record.completed_at.map(timestamp),
        created_at: timestamp(record.created_at),
        updated_at: timestamp(record.updated_at),
        timeline: typed_timeline(&entries),
    }
}

/// An order with one merged timeline across both legs (and the webhook
/// deliveries of both), in time order.
pub(crate) fn order(
    record: &sika_engine::orders::OrderRecord,
    payout: Option<&sika_engine::movements::PayoutRecord>,
    extra: &[Line],
) -> sika_api::orders::Order {
    use sika_api::orders::{Order, OrderDestination, OrderSource};
    let mut entries: Vec<Line> = record.timeline.iter().map(timeline::line).collect();
    if let Some(p) = payout {
        entries.extend(
            p.timeline
                .iter()
                .map(timeline::line)
                .map(|line| Line { title: format!("Payout: {}", line.title), ..line }),
        );
    }
    entries.extend_from_slice(extra);
    let entries = in_time_order(entries);
    Order {
        id: record.id.clone(),
        status: order_status(record.status),
        from: OrderSource {
            method: record.from_method.clone(),
            currency: record.from_currency.clone(),
            amount: amount(&record.from_currency, record.from_amount),
            chain: record.from_chain.clone(),
            received_amount: amount(&record.from_currency, record.received_amount),
        },
        to: OrderDestination {
            code: record.to.code.clone(),
            currency: record.to_currency.clone(),
            account_number: record.to.account_number.clone(),
            address: record.to.address.clone(),
            tag: record.to.tag.clone(),
            bank_code: record.to.bank_code.clone(),
        },
        deposit_instructions: metadata_map(&record.deposit_instructions),
        required_confirmations: record.required_confirmations,
        payout_id: record.payout_id.clone(),
        payout: payout.map(order_payout),
        external_reference: record.external_reference.clone(),
        metadata: metadata_map(&record.metadata),
        status_message: record.status_message.clone(),
        expires_at: timestamp(record.expires_at),
        created_at: timestamp(record.created_at),
        updated_at: timestamp(record.updated_at),
        timeline: typed_timeline(&entries),
    }
}

fn order_status(status: sika_engine::orders::OrderStatus) -> sika_api::orders::OrderStatus {
    use sika_api::orders::OrderStatus as Wire;
    use sika_engine::orders::OrderStatus;
    match status {
        OrderStatus::AwaitingFunds => Wire::AwaitingFunds,
        OrderStatus::AwaitingConfirmations => Wire::AwaitingConfirmations,
        OrderStatus::FundsReceived => Wire::FundsReceived,
        OrderStatus::ProcessingPayout => Wire::ProcessingPayout,
        OrderStatus::Completed => Wire::Completed,
        OrderStatus::Failed => Wire::Failed,
        OrderStatus::Expired => Wire::Expired,
    }
}

/// An order's payout leg in brief: what the recipient gets and the fee.
fn order_payout(payout: &sika_engine::movements::PayoutRecord) -> sika_api::orders::OrderPayout {
    sika_api::orders::OrderPayout {
        id: payout.id.clone(),
        status: payout_status(payout.status),
        amount: amount(&payout.to_currency, payout.to_amount),
        currency: payout.to_currency.clone(),
        fee: amount(&payout.from_currency, payout.fee_amount),
        fee_currency: payout.from_currency.clone(),
    }
}

/// A refund as its GET returns it; `extra` adds entries (webhook
/// deliveries) to the timeline, which is kept in time order.
pub(crate) fn refund(record: &sika_engine::RefundRecord, extra: &[Line]) -> sika_api::refunds::Refund {
    use sika_api::refunds::{Refund, RefundStatus};
    use sika_engine::movements::MovementStatus;
    let entries =
        in_time_order(record.timeline.iter().map(timeline::line).chain(extra.iter().cloned()).collect());
    Refund {
        id: record.id.clone(),
        status: match record.status {
            MovementStatus::Pending => RefundStatus::Pending,
            MovementStatus::Completed => RefundStatus::Completed,
            MovementStatus::Failed => RefundStatus::Failed,
            // Only payouts are reversed: `refunds::advance_refund` moves a
            // refund from pending to completed or failed and nowhere else.
            MovementStatus::Reversed => unreachable!("refund {} is reversed", record.id),
        },
        collection_id: record.collection_id.clone(),
        session_id: record.session_id.clone(),
        amount: amount(&record.currency, record.amount),
        currency: record.currency.clone(),
        reason: record.reason.clone(),
        external_reference: record.external_reference.clone(),
        metadata: metadata_map(&record.metadata),
        status_message: record.status_message.clone(),
        timeline: typed_timeline(&entries),
        created_at: timestamp(record.created_at),
        updated_at: timestamp(record.updated_at),
        completed_at: record.completed_at.map(timestamp),
    }
}

fn payout_status(status: sika_engine::movements::MovementStatus) -> sika_api::payouts::PayoutStatus {
    use sika_api::payouts::PayoutStatus;
    use sika_engine::movements::MovementStatus;
    match status {
        MovementStatus::Pending => PayoutStatus::Pending,
        MovementStatus::Completed => PayoutStatus::Completed,
        MovementStatus::Failed => PayoutStatus::Failed,
        MovementStatus::Reversed => PayoutStatus::Reversed,
    }
}

/// Inserts thousands separators into a decimal amount: `1250.00` reads
/// `1,250.00`. The fraction is left as it is.
pub(crate) fn group_thousands(plain: &str) -> String {
    let (sign, unsigned) = plain.strip_prefix('-').map_or(("", plain), |rest| ("-", rest));
    let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
    let mut out = String::from(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// An amount in minor units, grouped: `1,250.00` (XOF `2,500`).
pub(crate) fn grouped(currency: &str, minor: i128) -> String {
    group_thousands(&amount(currency, minor))
}

/// An amount as the payer reads it: `GHS 1,250.00` (XOF `XOF 2,500`).
pub(crate) fn money(currency: &str, minor: i128) -> String {
    format!("{currency} {}", grouped(currency, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(parse_timestamp("2026-02-20T10:00:00Z"), Some(1_771_581_600_000));
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn amounts_keep_their_exact_text() {
        let a: AmountInput = serde_json::from_str("10.50").unwrap();
        assert_eq!(a.as_str(), "10.50");
        let b: AmountInput = serde_json::from_str("\"7.25\"").unwrap();
        assert_eq!(b.as_str(), "7.25");
        assert!(serde_json::from_str::<AmountInput>("true").is_err());
    }
}
