//! The organization representative: the person registered with the
//! partner bank for GHS virtual accounts, one per organization per stack.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Metadata;

/// The kinds of identity document the node accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdType {
    /// The Ghana Card, numbered like `GHA-123456789-0`.
    GhanaCard,
}

/// Where the record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RepresentativeStatus {
    /// Set by an owner or admin.
    Active,
    /// Filled by the sandbox from the owner's name, with placeholder `phone`
    /// and `idNumber`, when a GHS virtual account was opened without one.
    /// Production needs a real representative.
    SandboxDefault,
}

/// `PUT /v1/organization/representative`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"fullName": "Ama Mensah", "phone": "+233241234567", "idType": "ghana_card", "idNumber": "GHA-123456789-0", "country": "GH"})))]
pub struct SetRepresentative {
    /// 2 to 120 characters.
    #[schema(min_length = 2, max_length = 120, example = "Ama Mensah")]
    pub full_name: String,
    /// E.164: a plus sign and 8 to 15 digits.
    #[schema(max_length = 16, pattern = r"^\+\d{8,15}$", example = "+233241234567")]
    pub phone: String,
    /// Defaults to `ghana_card`.
    // Text, so that another value gets the node's own validation message.
    #[schema(value_type = Option<IdType>)]
    pub id_type: Option<String>,
    #[schema(max_length = 64, pattern = r"^GHA-\d{9}-\d$", example = "GHA-123456789-0")]
    pub id_number: String,
    /// Exactly 2 characters (ISO 3166-1 alpha-2); stored in upper case.
    #[schema(min_length = 2, max_length = 2, example = "GH")]
    pub country: String,
    /// Your own key-value data, stored and returned as sent.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// The representative as every response shows it. `idNumber` is returned
/// in full, and only to its own organization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Representative {
    #[schema(example = "rep_0VbowfAbCdEf", pattern = "^rep_")]
    pub id: String,
    pub full_name: String,
    #[schema(example = "+233241234567")]
    pub phone: String,
    #[schema(value_type = IdType)]
    pub id_type: String,
    #[schema(example = "GHA-123456789-0")]
    pub id_number: String,
    #[schema(example = "GH")]
    pub country: String,
    pub status: RepresentativeStatus,
    /// As last set; `{}` when none was sent.
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    pub created_at: String,
    pub updated_at: String,
}

/// `{representative}`: what reading and setting the representative answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RepresentativeEnvelope {
    pub representative: Representative,
}
