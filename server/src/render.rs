//! How records look on the wire: JSON renderers shared by every GET, list
//! and event payload, so `data` in a webhook is exactly what a GET returns.

use chrono::{DateTime, SecondsFormat};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use sika_engine::{AccountRecord, ConversionRecord, Currency, DepositRecord, QuoteRecord, QuoteStatus};

/// An ISO 8601 UTC timestamp with milliseconds.
pub fn timestamp(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn parse_timestamp(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis())
}

/// Formats minor units of a currency the engine stored.
pub fn amount(currency: &str, minor: i128) -> String {
    match Currency::find(currency) {
        Ok(c) => c.format(minor),
        Err(_) => minor.to_string(),
    }
}

/// An amount as a request sends it: a decimal string or a JSON number,
/// kept as its exact text (serde_json's `arbitrary_precision`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmountInput(String);

impl AmountInput {
    /// An amount the node itself formatted.
    pub fn from_text(text: String) -> Self {
        AmountInput(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for AmountInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) => Ok(AmountInput(s)),
            Value::Number(n) => Ok(AmountInput(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a decimal string or number, found {}",
                kind_of(&other)
            ))),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn account(record: &AccountRecord, usd_per_unit: Option<rust_decimal::Decimal>) -> Value {
    let balances = record.balances();
    let estimated_usd = usd_per_unit
        .and_then(|rate| {
            let total = Currency::find(&record.currency).ok()?.to_decimal(balances.total);
            Some(total.checked_mul(rate)?.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::ToZero))
        })
        .map(|usd| format!("{usd:.2}"))
        .unwrap_or_else(|| "0.00".to_string());
    json!({
        "id": record.id,
        "currency": record.currency,
        "availableBalance": amount(&record.currency, balances.available),
        "pendingBalance": amount(&record.currency, balances.pending),
        "totalBalance": amount(&record.currency, balances.total),
        "estimatedUsd": estimated_usd,
        "createdAt": timestamp(record.created_at),
    })
}

pub fn quote(record: &QuoteRecord, now: i64) -> Value {
    let status = match record.status {
        QuoteStatus::Executed => "executed",
        QuoteStatus::Pending if record.is_expired(now) => "expired",
        QuoteStatus::Pending => "pending",
    };
    json!({
        "id": record.id,
        "status": status,
        "from": { "currency": record.from_currency, "amount": amount(&record.from_currency, record.from_amount) },
        "to": { "currency": record.to_currency, "amount": amount(&record.to_currency, record.to_amount) },
        "rate": record.rate,
        "conversionId": record.conversion_id,
        "expiresAt": timestamp(record.expires_at),
        "createdAt": timestamp(record.created_at),
    })
}

pub fn conversion(record: &ConversionRecord) -> Value {
    json!({
        "id": record.id,
        "status": "completed",
        "quoteId": record.quote_id,
        "from": {
            "accountNumber": record.from_account,
            "amount": amount(&record.from_currency, record.from_amount),
            "currency": record.from_currency,
        },
        "to": {
            "accountNumber": record.to_account,
            "amount": amount(&record.to_currency, record.to_amount),
            "currency": record.to_currency,
        },
        "rate": record.rate,
        "externalReference": record.external_reference,
        "statusMessage": "Conversion completed",
        "completedAt": timestamp(record.completed_at),
        "createdAt": timestamp(record.created_at),
        "updatedAt": timestamp(record.completed_at),
    })
}

pub fn deposit(record: &DepositRecord) -> Value {
    json!({
        "id": record.id,
        "status": "completed",
        "accountNumber": record.account,
        "currency": record.currency,
        "amount": amount(&record.currency, record.amount),
        "externalReference": record.external_reference,
        "createdAt": timestamp(record.created_at),
    })
}

fn metadata(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!({}))
}

/// Timeline entries sorted by time; entries at the same instant keep their order.
fn in_time_order(
    mut entries: Vec<sika_engine::movements::TimelineEntry>,
) -> Vec<sika_engine::movements::TimelineEntry> {
    entries.sort_by_key(|e| e.at);
    entries
}

fn timeline(entries: &[sika_engine::movements::TimelineEntry]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| json!({ "at": timestamp(e.at), "kind": e.kind, "title": e.title, "detail": e.detail }))
        .collect()
}

/// A payout as its GET returns it; `extra` adds entries (webhook deliveries)
/// to the timeline, which is kept in time order.
pub fn payout(
    record: &sika_engine::movements::PayoutRecord,
    extra: &[sika_engine::movements::TimelineEntry],
) -> Value {
    let entries = in_time_order(record.timeline.iter().chain(extra).cloned().collect());
    json!({
        "id": record.id,
        "status": record.status.name(),
        "from": {
            "accountNumber": record.from_account,
            "amount": amount(&record.from_currency, record.from_amount),
            "currency": record.from_currency,
            "kyc": {},
        },
        "to": {
            "code": record.to.code,
            "amount": amount(&record.to_currency, record.to_amount),
            "currency": record.to_currency,
            "accountNumber": record.to.account_number,
            "address": record.to.address,
            "tag": record.to.tag,
            "recipientId": record.to.recipient_id,
            "kyc": {},
        },
        "fee": { "amount": amount(&record.from_currency, record.fee_amount), "currency": record.from_currency },
        "rate": record.rate,
        "narration": record.narration,
        "externalReference": record.external_reference,
        "metadata": metadata(&record.metadata),
        "statusMessage": record.status_message,
        "completedAt": record.completed_at.map(timestamp),
        "createdAt": timestamp(record.created_at),
        "updatedAt": timestamp(record.updated_at),
        "timeline": timeline(&entries),
    })
}

pub fn collection(
    record: &sika_engine::movements::CollectionRecord,
    extra: &[sika_engine::movements::TimelineEntry],
) -> Value {
    let entries = in_time_order(record.timeline.iter().chain(extra).cloned().collect());
    json!({
        "id": record.id,
        "status": record.status.name(),
        "amount": amount(&record.currency, record.amount),
        "currency": record.currency,
        "accountNumber": record.account_number,
        "code": record.code,
        "balanceAccount": record.account,
        "externalReference": record.external_reference,
        "metadata": metadata(&record.metadata),
        "statusMessage": record.status_message,
        "completedAt": record.completed_at.map(timestamp),
        "createdAt": timestamp(record.created_at),
        "updatedAt": timestamp(record.updated_at),
        "timeline": timeline(&entries),
    })
}

/// An order with one merged timeline across both legs (and the webhook
/// deliveries of both), in time order.
pub fn order(
    record: &sika_engine::orders::OrderRecord,
    payout: Option<&sika_engine::movements::PayoutRecord>,
    extra: &[sika_engine::movements::TimelineEntry],
) -> Value {
    let mut entries = record.timeline.clone();
    if let Some(p) = payout {
        entries.extend(p.timeline.iter().map(|e| sika_engine::movements::TimelineEntry {
            title: format!("Payout: {}", e.title),
            ..e.clone()
        }));
    }
    entries.extend_from_slice(extra);
    let entries = in_time_order(entries);
    json!({
        "id": record.id,
        "status": record.status.name(),
        "from": {
            "method": record.from_method,
            "currency": record.from_currency,
            "amount": amount(&record.from_currency, record.from_amount),
            "chain": record.from_chain,
            "receivedAmount": amount(&record.from_currency, record.received_amount),
        },
        "to": {
            "code": record.to.code,
            "currency": record.to_currency,
            "accountNumber": record.to.account_number,
            "address": record.to.address,
            "tag": record.to.tag,
        },
        "depositInstructions": metadata(&record.deposit_instructions),
        "requiredConfirmations": record.required_confirmations,
        "payoutId": record.payout_id,
        "payout": payout.map(|p| json!({ "id": p.id, "status": p.status.name(), "amount": amount(&p.to_currency, p.to_amount), "currency": p.to_currency, "fee": amount(&p.from_currency, p.fee_amount) })),
        "externalReference": record.external_reference,
        "metadata": metadata(&record.metadata),
        "statusMessage": record.status_message,
        "expiresAt": timestamp(record.expires_at),
        "createdAt": timestamp(record.created_at),
        "updatedAt": timestamp(record.updated_at),
        "timeline": timeline(&entries),
    })
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
