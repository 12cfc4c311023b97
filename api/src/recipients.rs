//! Recipients: saved payout destinations. A payout may name a
//! `recipientId` instead of the destination's fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::ItemError;

/// `POST /v1/recipients`, and each item of `POST /v1/recipients/bulk`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"name": "Ama Mensah", "email": "ama@shop.example", "code": "mtn_gh", "accountNumber": "+233241234567"})))]
pub struct CreateRecipient {
    /// 1 to 200 characters.
    #[schema(max_length = 255, example = "Ama Mensah")]
    pub name: String,
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// The payment method; the recipient's currency is the method's.
    #[schema(max_length = 64, example = "mtn_gh")]
    pub code: String,
    /// Required for bank and mobile-money methods.
    #[schema(max_length = 64, example = "+233241234567")]
    pub account_number: Option<String>,
    /// Required for crypto methods.
    #[schema(max_length = 128)]
    pub address: Option<String>,
    /// A memo or destination tag, for the crypto networks that use one.
    #[schema(max_length = 64)]
    pub tag: Option<String>,
}

/// A recipient as every response shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recipient {
    #[schema(example = "rcp_0VbowfAbCdEf", pattern = "^rcp_")]
    pub id: String,
    pub name: String,
    pub email: Option<String>,
    pub code: String,
    /// The method's currency.
    pub currency: String,
    pub account_number: Option<String>,
    pub address: Option<String>,
    pub tag: Option<String>,
    pub created_at: String,
}

/// `{recipient}`: what creating (201) and reading a recipient answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RecipientEnvelope {
    pub recipient: Recipient,
}

/// `POST /v1/recipients/bulk`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"items": [{"name": "Ama Mensah", "code": "mtn_gh", "accountNumber": "+233241234567"}, {"name": "Kwame Asante", "code": "usdc_base", "address": "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"}]})))]
pub struct CreateRecipients {
    /// 1 to 100 recipients.
    // Each item is read on its own, so that a bad one gets its own result
    // instead of refusing the whole request.
    #[schema(value_type = Vec<CreateRecipient>, min_items = 1, max_items = 100)]
    pub items: Vec<Value>,
}

/// What happened to one item of a bulk request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RecipientResult {
    /// The item was valid and the recipient is saved.
    Created {
        /// The item's place in `items`, from 0.
        index: usize,
        recipient: Recipient,
    },
    /// The item was refused and nothing was saved for it.
    Failed {
        /// The item's place in `items`, from 0.
        index: usize,
        error: ItemError,
    },
}

/// What `POST /v1/recipients/bulk` answers: a result per item, in the
/// items' order. Valid items are saved even when others fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RecipientResults {
    pub results: Vec<RecipientResult>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ErrorCode;

    /// The results are written as `{status, index, recipient | error}`.
    #[test]
    fn results_carry_their_status_beside_the_index() {
        let recipient = Recipient {
            id: "rcp_1".into(),
            name: "Ama".into(),
            email: None,
            code: "mtn_gh".into(),
            currency: "GHS".into(),
            account_number: Some("+233241234567".into()),
            address: None,
            tag: None,
            created_at: "2026-02-20T10:00:00.000Z".into(),
        };
        let created = RecipientResult::Created { index: 0, recipient };
        let written = serde_json::to_value(&created).unwrap();
        assert_eq!(
            (&written["status"], &written["index"], &written["recipient"]["id"]),
            (&json!("created"), &json!(0), &json!("rcp_1"))
        );
        assert!(written["recipient"]["email"].is_null() && written.get("error").is_none(), "{written}");
        let error = ItemError {
            error: ErrorCode::ValidationError,
            message: "name: is required".into(),
            details: None,
        };
        let failed = serde_json::to_value(RecipientResult::Failed { index: 1, error }).unwrap();
        assert_eq!(
            failed,
            json!({ "status": "failed", "index": 1, "error": { "error": "validation_error", "message": "name: is required", "details": null } })
        );
        assert_eq!(serde_json::from_value::<RecipientResult>(written).unwrap(), created);
    }
}
