//! The hosted checkout part of the OpenAPI document: payment pages, payment
//! links and their checkout sessions.

use serde_json::{Value, json};

use super::{Operation, amount, envelope, list, nullable_string, object, string};

pub(super) const OPERATIONS: &[Operation] = &[
    Operation {
        method: "post",
        path: "/v1/payment-links",
        id: "createPaymentLink",
        summary: "Create a payment link for one customer",
        scope: "payment-pages:write",
        body: Some("CheckoutRequest"),
        responses: &[(201, "PaymentLinkEnvelope")],
    },
    Operation {
        method: "get",
        path: "/v1/payment-links",
        id: "listPaymentLinks",
        summary: "Payment links, newest first, including those spawned by pages; filters parentType, parentId, \
                  status, email, customerReference",
        scope: "payment-pages:read",
        body: None,
        responses: &[(200, "PaymentLinkList")],
    },
    Operation {
        method: "get",
        path: "/v1/payment-links/{id}",
        id: "getPaymentLink",
        summary: "One payment link with its checkout sessions, newest first",
        scope: "payment-pages:read",
        body: None,
        responses: &[(200, "PaymentLinkEnvelope"), (404, "Error")],
    },
    Operation {
        method: "post",
        path: "/v1/payment-links/{id}/close",
        id: "closePaymentLink",
        summary: "Close a link (idempotent); a paid link cannot be closed",
        scope: "payment-pages:write",
        body: None,
        responses: &[(200, "PaymentLinkEnvelope"), (404, "Error")],
    },
];

pub(super) fn schemas(add: &mut impl FnMut(&str, Value)) {
    let custom_field = object(
        &["name", "type", "required"],
        json!({ "name": string(), "type": { "enum": ["text", "number", "email", "phone", "date"] }, "required": { "type": "boolean" }, "label": string() }),
    );
    let branding =
        object(&[], json!({ "logoUrl": string(), "accentColor": string(), "businessName": string() }));
    let methods =
        json!({ "type": "array", "items": { "enum": ["mobile_money", "bank_transfer", "crypto"] } });
    let assets = json!({ "type": ["array", "null"], "items": string() });
    let shared = |extra: Value| {
        let mut properties = json!({ "url": string(), "amount": { "type": ["string", "null"], "pattern": "^[0-9]+(\\.[0-9]+)?$" }, "currency": string(), "title": string(), "description": string(), "allowedMethods": methods, "allowedCryptoAssets": assets, "customFields": { "type": "array", "items": custom_field }, "branding": branding, "redirectUrl": string(), "metadata": { "type": "object" }, "expiresAt": nullable_string(), "closedAt": nullable_string(), "createdAt": string(), "updatedAt": string() });
        if let (Some(map), Value::Object(more)) = (properties.as_object_mut(), extra) {
            map.extend(more);
        }
        properties
    };
    let session = object(
        &[
            "id",
            "paymentLinkId",
            "status",
            "statusMessage",
            "method",
            "originAmount",
            "originCurrency",
            "destinationAmount",
            "destinationCurrency",
            "rate",
            "expiresAt",
            "createdAt",
        ],
        json!({ "id": { "type": "string", "pattern": "^cs_" }, "paymentLinkId": string(), "status": { "enum": ["pending", "partial", "complete", "failed", "expired"] }, "statusMessage": string(), "method": { "enum": ["mobile_money", "bank_transfer", "crypto"] }, "code": string(), "chain": nullable_string(), "originAmount": amount(), "originCurrency": string(), "destinationAmount": amount(), "destinationCurrency": string(), "rate": string(), "collectionId": string(), "instructions": { "type": ["object", "null"] }, "expiresAt": string(), "createdAt": string() }),
    );
    add("CheckoutSession", session);
    add(
        "PaymentLink",
        object(
            &[
                "id",
                "url",
                "parentType",
                "parentId",
                "amount",
                "currency",
                "status",
                "statusMessage",
                "totalReceived",
                "remaining",
                "overpaymentAmount",
                "createdAt",
            ],
            shared(
                json!({ "id": { "type": "string", "pattern": "^pl_" }, "parentType": { "enum": ["payment_page", null] }, "parentId": nullable_string(), "email": nullable_string(), "status": { "enum": ["active", "paid", "expired", "closed"] }, "statusMessage": string(), "totalReceived": amount(), "remaining": { "type": ["string", "null"] }, "overpaymentAmount": { "type": ["string", "null"] }, "customerReference": nullable_string(), "customFieldValues": { "type": "object" }, "sessions": { "type": "array", "items": super::reference("CheckoutSession") } }),
            ),
        ),
    );
    add("PaymentLinkEnvelope", envelope("paymentLink", "PaymentLink"));
    add("PaymentLinkList", list("PaymentLink"));
}
