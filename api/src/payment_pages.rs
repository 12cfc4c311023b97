//! Payment pages: reusable hosted checkouts any payer can pay. Each payer
//! who starts paying on a page gets a payment link of their own under it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Metadata;
use crate::checkout::{Branding, CryptoAsset, CustomField, PaymentMethodKind};

/// Whether a page takes new payers: `closed` once the merchant closed it or
/// its `expiresAt` passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum PaymentPageStatus {
    Active,
    Closed,
}

/// A payment page as every response shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPage {
    #[schema(example = "pp_0VbowfAbCdEf", pattern = "^pp_")]
    pub id: String,
    /// The hosted checkout's address.
    pub url: String,
    /// What each payer pays; null when each payer chooses.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$", example = "120.00")]
    pub amount: Option<String>,
    #[schema(example = "GHS")]
    pub currency: String,
    pub title: String,
    pub description: String,
    pub status: PaymentPageStatus,
    pub allowed_methods: Vec<PaymentMethodKind>,
    /// Null when unset: every stablecoin is accepted.
    pub allowed_crypto_assets: Option<Vec<CryptoAsset>>,
    pub custom_fields: Vec<CustomField>,
    pub branding: Branding,
    /// Empty when unset.
    pub redirect_url: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    pub expires_at: Option<String>,
    /// Payments received on the page's links.
    pub payment_count: u64,
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$", example = "0.00")]
    pub total_collected: String,
    pub closed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `{paymentPage}`: what creating (201), reading and closing a page answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPageEnvelope {
    pub payment_page: PaymentPage,
}

/// The filter `GET /v1/payment-pages` takes besides paging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PaymentPageFilter {
    /// Only pages in this state.
    // Text, so that a bad value gets the node's own message naming the field.
    #[param(value_type = Option<PaymentPageStatus>)]
    pub status: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::checkout::CustomFieldType;

    /// An open amount is null, not absent; enums are written as the spec
    /// names them.
    #[test]
    fn a_page_is_written_as_the_spec_names_it() {
        let page = PaymentPage {
            id: "pp_1".into(),
            url: "http://127.0.0.1:8081/pay/pp_1".into(),
            amount: None,
            currency: "GHS".into(),
            title: "Kente".into(),
            description: String::new(),
            status: PaymentPageStatus::Active,
            allowed_methods: vec![PaymentMethodKind::MobileMoney, PaymentMethodKind::BankTransfer],
            allowed_crypto_assets: Some(vec![CryptoAsset::Usdc]),
            custom_fields: vec![CustomField {
                name: "size".into(),
                kind: CustomFieldType::Text,
                required: true,
                label: "Size".into(),
            }],
            branding: Branding {
                logo_url: String::new(),
                accent_color: "#1a7f5a".into(),
                business_name: String::new(),
            },
            redirect_url: String::new(),
            metadata: Metadata::new(),
            expires_at: None,
            payment_count: 0,
            total_collected: "0.00".into(),
            closed_at: None,
            created_at: "2026-02-20T10:00:00.000Z".into(),
            updated_at: "2026-02-20T10:00:00.000Z".into(),
        };
        let written = serde_json::to_value(PaymentPageEnvelope { payment_page: page.clone() }).unwrap();
        let written = &written["paymentPage"];
        assert_eq!(written["amount"], json!(null));
        assert_eq!(written["allowedMethods"], json!(["mobile_money", "bank_transfer"]));
        assert_eq!(written["allowedCryptoAssets"], json!(["USDC"]));
        assert_eq!(written["customFields"][0]["type"], "text");
        assert!(written.as_object().unwrap().contains_key("closedAt"));
        assert_eq!(serde_json::from_value::<PaymentPage>(written.clone()).unwrap(), page);
    }
}
