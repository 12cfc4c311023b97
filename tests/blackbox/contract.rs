//! The contract's exactness, seen from outside: query parameters an
//! operation does not take, paging on every list, idempotency by meaning,
//! `updatedAt` on status changes, the simulations index, live validation
//! and the free-text limits.

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

fn link_body(email: &str) -> Value {
    json!({
        "currency": "GHS",
        "title": "Kente scarves",
        "amount": "50.00",
        "allowedMethods": ["mobile_money"],
        "email": email,
    })
}

/// A typo in a filter never silently lists everything: an unknown query
/// parameter is refused, naming it, on every operation that takes a query.
#[tokio::test]
async fn unknown_query_parameters_are_refused_by_name() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    for (path, parameter) in [
        ("/v1/payouts?staus=failed", "staus"),
        ("/v1/collections?limit=5&foo=1", "foo"),
        ("/v1/orders?status=completed&externalRef=x", "externalRef"),
        ("/v1/conversions?page=2", "page"),
        ("/v1/payment-pages?state=active", "state"),
        ("/v1/payment-links?mail=a@b.co", "mail"),
        ("/v1/disputes?status=open&sort=asc", "sort"),
        ("/v1/recipients?q=ama", "q"),
        ("/v1/virtual-accounts?currency=GHS", "currency"),
        ("/v1/files?kind=pdf", "kind"),
        ("/v1/webhooks/endpoints?status=active", "status"),
        ("/v1/webhooks/events?type=payout.completed", "type"),
        ("/v1/webhooks/deliveries?state=failed", "state"),
    ] {
        let r = api.get(&node.sandbox_url(path), key).await;
        r.expect_field(400, "validation_error", parameter);
        assert!(r.body["message"].as_str().unwrap().contains(parameter), "{path}: {}", r.body);
    }
    // The parameters an operation does take still work, together.
    api.get(&node.sandbox_url("/v1/payouts?limit=5&status=failed&externalReference=x"), key)
        .await
        .expect(200);
    let admin = &node.creds.admin_token;
    let r = api.get(&node.admin_url("/admin/v1/sandbox/payouts?limit=5&stauts=failed"), admin).await;
    r.expect_field(400, "validation_error", "stauts");
}

/// The payment links' email filter matches an address whatever its case.
#[tokio::test]
async fn the_payment_link_email_filter_ignores_case() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let r = api.post(&node.sandbox_url("/v1/payment-links"), key, link_body("Efua.Owusu@Example.com")).await;
    r.expect(201);
    let id = r.body["paymentLink"]["id"].clone();
    for email in ["efua.owusu@example.com", "EFUA.OWUSU@EXAMPLE.COM", "Efua.Owusu@Example.com"] {
        let url = node.sandbox_url(&format!("/v1/payment-links?email={}", email.replace('@', "%40")));
        let r = api.get(&url, key).await;
        r.expect(200);
        let ids: Vec<&Value> = r.body["data"].as_array().unwrap().iter().map(|l| &l["id"]).collect();
        assert_eq!(ids, vec![&id], "{email}");
    }
}
