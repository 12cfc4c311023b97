//! Disputes: a payer contests a paid collection or payment-link payment,
//! and the merchant answers in the dispute's message thread until it is
//! resolved. Opening one holds its amount on the merchant's balance;
//! resolving it takes the hold (`accepted`) or releases it (`declined`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AmountInput;

/// Where a dispute stands: `open` until it is resolved as `accepted` or
/// `declined`. `resolved` is the spec's name for both: the node writes
/// `accepted` or `declined`, and the list's `status=resolved` matches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeStatus {
    Open,
    Accepted,
    Declined,
    Resolved,
}

/// Why the payer disputes the payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeReason {
    Fraudulent,
    Duplicate,
    ProductNotReceived,
    ProductUnacceptable,
    Unrecognized,
    General,
}

/// How a dispute is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Hash, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeOutcome {
    Accepted,
    Declined,
}

/// What a resolved dispute meant for the merchant: `lost` when it was
/// resolved `accepted` (the amount is taken), `won` when `declined` (the
/// hold is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeResult {
    Won,
    Lost,
}

/// Who wrote a message: the merchant, through the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeAuthorType {
    Merchant,
}

/// A dispute as every response and every dispute event shows it.
///
/// The fields are in alphabetical order on purpose: a dispute event's
/// `data` is this view serialized through a JSON value, whose keys are
/// sorted, and it is byte for byte what `GET /v1/disputes/{id}` writes only
/// while the struct's own order is the same (the same holds for messages
/// and attachments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dispute {
    /// What is disputed, at most the payment's amount.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "10.00")]
    pub amount: String,
    /// The disputed payment.
    pub collection_id: String,
    pub created_at: String,
    #[schema(example = "GHS")]
    pub currency: String,
    /// When the merchant's answer is due: seven days after opening.
    pub evidence_due_by: String,
    /// What the dispute has on the merchant's balance of its currency:
    /// held while it is open (less than `amount` while the balance lacked
    /// the rest, which the next inflows fill), taken once `accepted`
    /// (growing to `amount` as inflows come), `0.00` once `declined` (the
    /// hold is released).
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "10.00")]
    pub held_amount: String,
    #[schema(example = "dsp_0VbowfAbCdEf", pattern = "^dsp_")]
    pub id: String,
    /// The thread, oldest first. A single dispute's answer (reading,
    /// opening or resolving it) and every dispute event hold it; list
    /// items do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<DisputeMessage>, required = false)]
    pub messages: Option<Vec<DisputeMessage>>,
    /// `null` while open; `lost` once accepted, `won` once declined.
    pub outcome: Option<DisputeResult>,
    /// The payment link the payment came through, if any.
    pub payment_link_id: Option<String>,
    pub reason: DisputeReason,
    pub resolved_at: Option<String>,
    pub status: DisputeStatus,
    /// A sentence on where the dispute stands.
    pub status_message: String,
    pub updated_at: String,
}

/// One message of a dispute's thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DisputeMessage {
    pub attachments: Vec<DisputeAttachment>,
    pub author_type: DisputeAuthorType,
    pub body: String,
    pub created_at: String,
    pub dispute_id: String,
    #[schema(example = "dsm_0VbowfAbCdEf", pattern = "^dsm_")]
    pub id: String,
}

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DisputeAttachment {
    pub file_id: String,
    pub name: String,
    /// The file's contents (`/v1/files/{id}/contents`) unless the message
    /// gave another address.
    pub url: String,
}

/// `{dispute}`: what reading, opening (201) and resolving a dispute answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DisputeEnvelope {
    pub dispute: Dispute,
}

/// `{message}`: what posting a message answers (201).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DisputeMessageEnvelope {
    pub message: DisputeMessage,
}

/// `POST /v1/disputes/{id}/messages`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"body": "The customer collected the goods in store; the signed receipt is attached.", "attachments": [{"fileId": "file_0VbowfAbCdEf", "name": "receipt.pdf"}]})))]
pub struct CreateDisputeMessage {
    /// 1 to 5,000 characters once trimmed.
    #[schema(min_length = 1, max_length = 5000)]
    pub body: String,
    /// At most 10 files uploaded with `POST /v1/files`.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub attachments: Vec<DisputeAttachmentInput>,
}

/// A file to attach, as a message sends it.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DisputeAttachmentInput {
    /// A file of this organization (`file_…`).
    #[schema(max_length = 64)]
    pub file_id: String,
    /// The file's own name when omitted.
    #[schema(max_length = 255)]
    pub name: Option<String>,
    /// The file's contents address when omitted; at most 2,048 characters.
    #[schema(max_length = 2048)]
    pub url: Option<String>,
}

/// `POST /v1/simulations/disputes` (sandbox): the payer disputes a
/// completed payment, named by exactly one of `collectionId` and
/// `paymentLinkId` (the link's newest payment).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"collectionId": "col_0VbowfAbCdEf", "amount": "20.00", "reason": "product_not_received"})))]
pub struct SimulateDispute {
    #[schema(max_length = 64)]
    pub collection_id: Option<String>,
    #[schema(max_length = 64)]
    pub payment_link_id: Option<String>,
    /// At most the paid amount, which it defaults to.
    pub amount: Option<AmountInput>,
    /// `general` when omitted.
    // Text, so that a bad value gets the node's own message naming the field.
    #[schema(value_type = Option<DisputeReason>)]
    pub reason: Option<String>,
}

/// `POST /v1/simulations/disputes/{id}/resolve` (sandbox), and the
/// operator's resolution.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"outcome": "declined"})))]
pub struct ResolveDispute {
    // Text, so that a bad value gets the node's own message naming the field.
    #[schema(value_type = DisputeOutcome)]
    pub outcome: String,
}

/// The filter `GET /v1/disputes` takes besides paging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DisputeFilter {
    /// Only disputes in this state; `resolved` matches `accepted` and
    /// `declined`.
    // Text, so that a bad value gets the node's own message naming the field.
    #[param(value_type = Option<DisputeStatus>)]
    pub status: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispute_serializes_as_its_json_value_does() {
        let message = DisputeMessage {
            attachments: vec![DisputeAttachment {
                file_id: "file_1".into(),
                name: "receipt.pdf".into(),
                url: "/v1/files/file_1/contents".into(),
            }],
            author_type: DisputeAuthorType::Merchant,
            body: "Delivered on the 3rd".into(),
            created_at: "2026-02-20T10:00:00.000Z".into(),
            dispute_id: "dsp_1".into(),
            id: "dsm_1".into(),
        };
        let dispute = Dispute {
            amount: "10.00".into(),
            collection_id: "col_1".into(),
            created_at: "2026-02-20T10:00:00.000Z".into(),
            currency: "GHS".into(),
            evidence_due_by: "2026-02-27T10:00:00.000Z".into(),
            held_amount: "4.00".into(),
            id: "dsp_1".into(),
            messages: Some(vec![message]),
            outcome: None,
            payment_link_id: None,
            reason: DisputeReason::ProductNotReceived,
            resolved_at: None,
            status: DisputeStatus::Open,
            status_message: "Open".into(),
            updated_at: "2026-02-20T10:00:00.000Z".into(),
        };
        let direct = serde_json::to_string(&dispute).unwrap();
        let through_value = serde_json::to_string(&serde_json::to_value(&dispute).unwrap()).unwrap();
        assert_eq!(direct, through_value, "a dispute event's data must be the GET's bytes");
        let summary = Dispute { messages: None, ..dispute };
        let written = serde_json::to_value(&summary).unwrap();
        assert!(written.get("messages").is_none() && written["paymentLinkId"].is_null(), "{written}");
        assert_eq!(written["reason"], "product_not_received");
    }
}
