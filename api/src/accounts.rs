//! Balance accounts: one per currency an organization has touched.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A balance account. Amounts are decimal strings in the account's
/// currency.
///
/// The fields are in alphabetical order on purpose: an `account.credited`
/// webhook's `data` is this view serialized through a JSON value, whose
/// keys are sorted, and it is byte for byte what `GET /v1/accounts` writes
/// only while the struct's own order is the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    /// What can be spent now: settled credits less settled debits and
    /// outgoing holds.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "25.00")]
    pub available_balance: String,
    pub created_at: String,
    #[schema(example = "GHS")]
    pub currency: String,
    /// The total balance in US dollars at the mid rate, rounded down to cents.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "1.61")]
    pub estimated_usd: String,
    /// The currency code followed by digits.
    #[schema(example = "GHS1000000004")]
    pub id: String,
    /// Incoming money not yet settled.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "0.00")]
    pub pending_balance: String,
    /// `availableBalance + pendingBalance`: the balance once everything in
    /// flight settles as expected.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "25.00")]
    pub total_balance: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_serializes_as_its_json_value_does() {
        let account = Account {
            available_balance: "25.00".to_string(),
            created_at: "2026-02-20T10:00:00.000Z".to_string(),
            currency: "GHS".to_string(),
            estimated_usd: "1.61".to_string(),
            id: "GHS1000000004".to_string(),
            pending_balance: "0.00".to_string(),
            total_balance: "25.00".to_string(),
        };
        let page = crate::ListPage { data: vec![account], has_more: false, next_cursor: None };
        let direct = serde_json::to_string(&page).unwrap();
        let through_value = serde_json::to_string(&serde_json::to_value(&page).unwrap()).unwrap();
        assert_eq!(direct, through_value, "a webhook's data must be the GET's bytes");
    }
}
