//! Conversions: a quote locks a rate between two currencies for a short
//! time; executing it moves the money between the two balances at once.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AmountInput, Money};

/// Where a quote stands. `pending` until it is executed or its time runs
/// out; `executed` and `expired` quotes cannot be executed (again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuoteStatus {
    Pending,
    Executed,
    Expired,
}

/// `POST /v1/conversions/quotes`: give exactly one of `from.amount` (what
/// you spend) and `to.amount` (what you receive).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"from": {"currency": "USD", "amount": "100.00"}, "to": {"currency": "GHS"}})))]
pub struct CreateQuote {
    pub from: QuoteSide,
    pub to: QuoteSide,
}

/// One currency of a quote request, with its amount on one side only.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteSide {
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    pub amount: Option<AmountInput>,
}

/// A quote as every response shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    #[schema(example = "qte_0VbowfAbCdEf", pattern = "^qte_")]
    pub id: String,
    pub status: QuoteStatus,
    /// What is debited from the `from.currency` balance.
    pub from: Money,
    /// What is credited to the `to.currency` balance.
    pub to: Money,
    /// The all-in rate: units of `to.currency` per unit of `from.currency`.
    pub rate: String,
    /// The conversion that executed the quote.
    pub conversion_id: Option<String>,
    /// Until when the quote can be executed.
    pub expires_at: String,
    pub created_at: String,
}

/// `{quote}`: what creating and reading a quote answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuoteEnvelope {
    pub quote: Quote,
}

/// Where a conversion stands: it completes as it is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConversionStatus {
    Completed,
}

/// `POST /v1/conversions`: executes a pending quote.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"quoteId": "qte_0VbowfAbCdEf", "externalReference": "fx-2026-11-24"})))]
pub struct CreateConversion {
    #[schema(max_length = 64, min_length = 1, example = "qte_0VbowfAbCdEf")]
    pub quote_id: String,
    /// Your own reference, unique per organization: the same reference
    /// with the same quote answers the original conversion (200); with
    /// another quote, `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: Option<String>,
}

/// A conversion as every response and webhook shows it.
///
/// The fields are in alphabetical order on purpose: a webhook's `data` is
/// this view serialized through a JSON value, whose keys are sorted, and it
/// is byte for byte what `GET /v1/conversions/{id}` writes only while the
/// struct's own order is the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    pub completed_at: String,
    pub created_at: String,
    pub external_reference: Option<String>,
    pub from: ConversionLeg,
    #[schema(example = "conv_0VbowfAbCdEf", pattern = "^conv_")]
    pub id: String,
    pub quote_id: String,
    /// The quote's all-in rate.
    pub rate: String,
    pub status: ConversionStatus,
    pub status_message: String,
    pub to: ConversionLeg,
    pub updated_at: String,
}

/// A balance a conversion debits or credits, and by how much (fields in
/// alphabetical order, as `Conversion`'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversionLeg {
    /// The balance account's id.
    pub account_number: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "100.00")]
    pub amount: String,
    pub currency: String,
}

/// `{conversion}`: what executing (201), replaying (200) and reading a
/// conversion answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConversionEnvelope {
    pub conversion: Conversion,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversion_serializes_as_its_json_value_does() {
        let leg = |currency: &str| ConversionLeg {
            account_number: format!("{currency}1000000001"),
            amount: "10.00".to_string(),
            currency: currency.to_string(),
        };
        let conversion = Conversion {
            completed_at: "2026-02-20T10:00:00.000Z".to_string(),
            created_at: "2026-02-20T10:00:00.000Z".to_string(),
            external_reference: None,
            from: leg("USD"),
            id: "conv_1".to_string(),
            quote_id: "qte_1".to_string(),
            rate: "15.345".to_string(),
            status: ConversionStatus::Completed,
            status_message: "Conversion completed".to_string(),
            to: leg("GHS"),
            updated_at: "2026-02-20T10:00:00.000Z".to_string(),
        };
        let direct = serde_json::to_string(&conversion).unwrap();
        let through_value = serde_json::to_string(&serde_json::to_value(&conversion).unwrap()).unwrap();
        assert_eq!(direct, through_value, "a webhook's data must be the GET's bytes");
    }
}
