//! What each resource an operation names by id is called and how its ids
//! begin, in one table: the envelope a read of it answers with implements
//! [`Resource`].

use crate::Resource;

/// Implements [`Resource`] for each envelope of the table.
macro_rules! resources {
    ($($envelope:ty => $name:literal, $prefix:literal;)*) => {
        $(impl Resource for $envelope {
            const NAME: &'static str = $name;
            const ID_PREFIX: &'static str = $prefix;
        })*
    };
}

resources! {
    crate::admin::OrganizationEnvelope => "organization", "org_";
    crate::collections::CollectionEnvelope => "collection", "col_";
    crate::conversions::QuoteEnvelope => "quote", "qte_";
    crate::conversions::ConversionEnvelope => "conversion", "conv_";
    crate::disputes::DisputeEnvelope => "dispute", "dsp_";
    crate::files::FileEnvelope => "file", "file_";
    crate::keys::ApiKeyEnvelope => "key", "key_";
    crate::members::MemberEnvelope => "member", "mem_";
    crate::orders::OrderEnvelope => "order", "ord_";
    crate::payment_links::PaymentLinkEnvelope => "link", "pl_";
    crate::payment_pages::PaymentPageEnvelope => "page", "pp_";
    crate::payouts::PayoutEnvelope => "payout", "pay_";
    crate::recipients::RecipientEnvelope => "recipient", "rcp_";
    crate::refunds::RefundEnvelope => "refund", "rf_";
    crate::requests::LoggedRequestEnvelope => "request", "req_";
    crate::virtual_accounts::VirtualAccountEnvelope => "virtual account", "va_";
    crate::webhooks::WebhookEndpointEnvelope => "endpoint", "we_";
    crate::webhooks::WebhookEventEnvelope => "event", "evt_";
    crate::webhooks::WebhookDeliveryEnvelope => "delivery", "whd_";
}
