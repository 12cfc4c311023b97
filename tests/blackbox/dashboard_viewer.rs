//! Every page of the dashboard as a viewer, over plain HTTP against the
//! real binary: each page shows no control that would change anything
//! (its only forms are logging out, their own two-factor sign-in, and
//! reading a signing secret, which a viewer may read through the API
//! too), and every POST route of the dashboard's router, forged with a
//! valid CSRF token, is refused with the API's 403 and changes nothing.
//! The route list is read from the router's source, so a new form's route
//! fails this test until it is forged here too.

use serde_json::{Value, json};

use crate::support::dashboard::{Dashboard, Page};
use crate::support::team::{PASSWORD, member_with_role, owned_org};
use crate::support::{Api, Node, Options, WebhookSink, create_key, mtn_collection, poll_until};

/// The `action` of every `<form method="post">` on the page, unescaped.
fn post_actions(page: &Page) -> Vec<String> {
    page.text
        .split("<form method=\"post\" action=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
        .collect()
}

/// The path of every route of the dashboard's router that takes a POST.
fn post_routes() -> Vec<String> {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("server/src/http/dashboard/mod.rs"),
    )
    .unwrap();
    source
        .split(".route(")
        .skip(1)
        .filter(|route| route.split(".route(").next().unwrap().contains("post("))
        .map(|route| route.split('"').nth(1).unwrap().to_string())
        .collect()
}

/// What the owner's API shows of everything a forged post could change.
async fn state(api: &Api, node: &Node, owner: &str, dispute: &str, endpoint: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    for path in [
        "/v1/keys".to_string(),
        "/v1/members".to_string(),
        "/v1/payment-pages".to_string(),
        "/v1/payment-links".to_string(),
        format!("/v1/disputes/{dispute}"),
        "/v1/refunds".to_string(),
        "/v1/files".to_string(),
        "/v1/webhooks/endpoints".to_string(),
        format!("/v1/webhooks/deliveries?endpointId={endpoint}"),
        "/v1/organization/representative".to_string(),
    ] {
        let r = api.get(&node.sandbox_url(&path), owner).await;
        let mut body = r.body;
        // An error's request id is the read's own.
        body.as_object_mut().map(|o| o.remove("requestId"));
        without_scheduled_deliveries(&mut body);
        seen.push(json!({ "path": path, "status": r.status, "body": body }));
    }
    seen
}

/// Leaves out of a page of endpoints or deliveries what the delivery
/// schedule changes on its own while the test runs (the endpoint's
/// failure count; a delivery's scheduled attempts, its status, count and
/// times), so a slow machine's retries are not taken for a forged post's
/// doing. A manual attempt (a retry through the API or the dashboard) is
/// kept: a forged retry would add one.
fn without_scheduled_deliveries(body: &mut Value) {
    let Some(items) = body.get_mut("data").and_then(Value::as_array_mut) else { return };
    for item in items.iter_mut().filter_map(Value::as_object_mut) {
        item.remove("consecutiveFailures");
        if let Some(attempts) = item.get_mut("attempts").and_then(Value::as_array_mut) {
            attempts.retain(|attempt| attempt["manual"] == true);
            for key in ["status", "attemptCount", "nextAttemptAt", "updatedAt"] {
                item.remove(key);
            }
        }
    }
}

/// One of each thing a page shows or a form acts on, and the owner's
/// session and key.
struct Shop {
    owner: String,
    owner_id: String,
    spare_key: String,
    collection: String,
    dispute: String,
    page_id: String,
    link_id: String,
    endpoint: String,
    delivery: String,
    request_id: String,
}

/// Through the API: a completed collection, disputed; a payment page and a
/// link; a webhook endpoint with one delivery; a refused request.
async fn a_shop_with_one_of_each(api: &Api, node: &Node) -> Shop {
    let (_, owner) = owned_org(api, node, "owner@viewer.example").await;
    let (spare_key, key) =
        create_key(api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let made = api.post(&node.sandbox_url("/v1/collections"), &key, mtn_collection("80.00", "ord-v")).await;
    let (_, collection) = made.created("collection", "col_");
    let url = node.sandbox_url(&format!("/v1/collections/{collection}"));
    poll_until(api, &url, &key, |b| b["collection"]["status"] == "completed").await;
    let opened = api
        .post(&node.sandbox_url("/v1/simulations/disputes"), &key, json!({ "collectionId": collection }))
        .await;
    let (_, dispute) = opened.created("dispute", "dsp_");
    let checkout = json!({ "title": "Scarves", "currency": "GHS", "amount": "5.00", "allowedMethods": ["mobile_money"] });
    let page = api.post(&node.sandbox_url("/v1/payment-pages"), &key, checkout.clone()).await;
    let (_, page_id) = page.created("paymentPage", "pp_");
    let link = api.post(&node.sandbox_url("/v1/payment-links"), &key, checkout).await;
    let (_, link_id) = link.created("paymentLink", "pl_");
    let endpoint = WebhookSink::start().register(api, &node.sandbox, &key).await;
    let test_event = node.sandbox_url(&format!("/v1/webhooks/endpoints/{endpoint}/test"));
    api.post(&test_event, &key, json!({})).await.expect(202);
    let deliveries = node.sandbox_url(&format!("/v1/webhooks/deliveries?endpointId={endpoint}"));
    let listed = poll_until(api, &deliveries, &key, |b| b["data"][0]["attemptCount"] == 1).await;
    let delivery = listed["data"][0]["id"].as_str().unwrap().to_string();
    let refused = api.post(&node.sandbox_url("/v1/payouts"), &key, json!({})).await;
    let request_id = refused.body["requestId"].as_str().unwrap().to_string();
    let members = api.get(&node.sandbox_url("/v1/members"), &owner).await;
    let owner_id = members.body["data"][0]["id"].as_str().unwrap().to_string();
    Shop { owner, owner_id, spare_key, collection, dispute, page_id, link_id, endpoint, delivery, request_id }
}

/// Every page a viewer reads: 200, and no form but their own.
async fn each_page_shows_no_write_control(viewer: &Dashboard, shop: &Shop) {
    let secret = format!("/dashboard/developers/webhooks/{}/secret", shop.endpoint);
    let own = ["/dashboard/logout", "/dashboard/settings/totp", secret.as_str()];
    for path in [
        "/dashboard".to_string(),
        "/dashboard/payments?kind=payouts".into(),
        "/dashboard/payments?kind=collections".into(),
        "/dashboard/payments?kind=orders".into(),
        "/dashboard/payments?kind=refunds".into(),
        format!("/dashboard/payments/collections/{}", shop.collection),
        "/dashboard/payments/search?q=ord-v".into(),
        "/dashboard/balances".into(),
        "/dashboard/balances/statement?currency=GHS&from=2020-01-01&to=2100-01-01".into(),
        "/dashboard/checkout?kind=pages".into(),
        "/dashboard/checkout?kind=links".into(),
        format!("/dashboard/checkout/pages/{}", shop.page_id),
        format!("/dashboard/checkout/links/{}", shop.link_id),
        "/dashboard/disputes".into(),
        format!("/dashboard/disputes/{}", shop.dispute),
        "/dashboard/team".into(),
        "/dashboard/developers".into(),
        format!("/dashboard/developers/webhooks/{}", shop.endpoint),
        format!("/dashboard/developers/requests?id={}", shop.request_id),
        "/dashboard/settings".into(),
    ] {
        let seen = viewer.get(&path).await;
        assert_eq!(seen.status, 200, "{path}: {}", seen.text);
        for action in post_actions(&seen) {
            assert!(own.contains(&action.as_str()), "{path}: a viewer is shown the form {action}");
        }
    }
}

/// A forged post: the router's path, this test's path, the fields.
type Forged = (&'static str, String, Vec<(&'static str, String)>);

fn owned(fields: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    fields.iter().map(|&(k, v)| (k, v.to_string())).collect()
}

/// A forged post to each POST route a viewer may not use (the reply, a
/// multipart form, is forged on its own).
fn forged_posts(shop: &Shop) -> Vec<Forged> {
    let checkout = owned(&[
        ("title", "Forged"),
        ("currency", "GHS"),
        ("amount", "1.00"),
        ("allowedMethods", "mobile_money"),
    ]);
    let representative = owned(&[
        ("fullName", "Forged"),
        ("phone", "+233241234567"),
        ("idNumber", "GHA-123456789-0"),
        ("country", "GH"),
    ]);
    let Shop { owner_id, spare_key, collection, dispute, page_id, link_id, endpoint, delivery, .. } = shop;
    vec![
        ("/dashboard/checkout/{kind}", "/dashboard/checkout/pages".into(), checkout.clone()),
        ("/dashboard/checkout/{kind}", "/dashboard/checkout/links".into(), checkout),
        (
            "/dashboard/checkout/{kind}/{id}/close",
            format!("/dashboard/checkout/pages/{page_id}/close"),
            vec![],
        ),
        (
            "/dashboard/checkout/{kind}/{id}/close",
            format!("/dashboard/checkout/links/{link_id}/close"),
            vec![],
        ),
        (
            "/dashboard/payments/collections/{id}/refund",
            format!("/dashboard/payments/collections/{collection}/refund"),
            owned(&[("amount", "1.00"), ("externalReference", "rf-forged")]),
        ),
        ("/dashboard/disputes/{id}/accept", format!("/dashboard/disputes/{dispute}/accept"), vec![]),
        (
            "/dashboard/team",
            "/dashboard/team".into(),
            owned(&[("email", "new@viewer.example"), ("name", "New"), ("role", "owner")]),
        ),
        (
            "/dashboard/team/{id}/role",
            format!("/dashboard/team/{owner_id}/role"),
            owned(&[("role", "viewer")]),
        ),
        ("/dashboard/team/{id}/remove", format!("/dashboard/team/{owner_id}/remove"), vec![]),
        (
            "/dashboard/developers/keys",
            "/dashboard/developers/keys".into(),
            owned(&[("name", "forged"), ("scopes", "*")]),
        ),
        (
            "/dashboard/developers/keys/{id}/revoke",
            format!("/dashboard/developers/keys/{spare_key}/revoke"),
            vec![],
        ),
        (
            "/dashboard/developers/webhooks/{id}/test",
            format!("/dashboard/developers/webhooks/{endpoint}/test"),
            vec![],
        ),
        (
            "/dashboard/developers/webhooks/{id}/enable",
            format!("/dashboard/developers/webhooks/{endpoint}/enable"),
            vec![],
        ),
        (
            "/dashboard/developers/deliveries/{id}/retry",
            format!("/dashboard/developers/deliveries/{delivery}/retry"),
            vec![("endpoint", endpoint.clone())],
        ),
        ("/dashboard/settings/representative", "/dashboard/settings/representative".into(), representative),
    ]
}

/// Every POST route of the router is forged, or is one anyone (or the
/// viewer for themselves, or for a read) may use.
fn every_post_route_is_forged(forged: &[Forged]) {
    let anyone = [
        "/dashboard/login",
        "/dashboard/logout",
        "/dashboard/reset",
        "/dashboard/reset/{token}",
        "/dashboard/invitations/{token}",
        "/dashboard/settings/totp",
        "/dashboard/settings/totp/confirm",
        "/dashboard/settings/totp/disable",
        "/dashboard/developers/webhooks/{id}/secret",
    ];
    let multipart = "/dashboard/disputes/{id}/messages";
    let routes = post_routes();
    assert!(routes.len() > 20, "{routes:?}");
    for route in routes {
        assert!(
            anyone.contains(&route.as_str())
                || route == multipart
                || forged.iter().any(|(r, _, _)| *r == route),
            "the POST route {route} is not forged by this test"
        );
    }
}

#[tokio::test]
async fn a_viewer_sees_no_write_control_on_any_page_and_every_forged_post_is_refused() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let shop = a_shop_with_one_of_each(&api, &node).await;
    member_with_role(&api, &node, &shop.owner, "viewer@viewer.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@viewer.example", PASSWORD).await;
    each_page_shows_no_write_control(&viewer, &shop).await;
    let secret = node.sandbox_url(&format!("/v1/webhooks/signing-secret/{}", shop.endpoint));
    let by_api = api.get(&secret, &viewer.cookie("sika_session").unwrap()).await;
    assert_eq!(by_api.status, 200, "a viewer reads the secret through the API too: {}", by_api.text);

    // Every POST route, forged with the viewer's valid CSRF token.
    let before = state(&api, &node, &shop.owner, &shop.dispute, &shop.endpoint).await;
    let csrf = viewer.get("/dashboard/settings").await.csrf();
    let forged = forged_posts(&shop);
    for (_, path, fields) in &forged {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields.iter().map(|(k, v)| (*k, v.as_str())));
        let refused = viewer.post(path, &all).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text);
        assert!(refused.has("notice"), "{path}: the refusal is shown: {}", refused.text);
    }
    let reply = format!("/dashboard/disputes/{}/messages", shop.dispute);
    let fields = [("csrf", csrf.as_str()), ("body", "forged")];
    let refused = viewer.post_multipart(&reply, &fields, ("file", "f.txt", "text/plain", b"forged")).await;
    assert_eq!(refused.status, 403, "{reply}: {}", refused.text);
    let after = state(&api, &node, &shop.owner, &shop.dispute, &shop.endpoint).await;
    for (before, after) in before.iter().zip(&after) {
        assert_eq!(after, before, "a forged post changed nothing at {}", before["path"]);
    }
    every_post_route_is_forged(&forged);
}
