//! Isolation between organizations on one node: with two organizations,
//! no endpoint (by id, list, filter, request lookup, files, webhooks,
//! disputes, hosted pages, members and keys) shows one anything of the
//! other's, and none lets one act on the other's resources.

use crate::support::{Api, MTN_PHONE, Node, Options, create_key, deposit, organization_b, poll_until};
use serde_json::{Value, json};

/// What organization A made on the sandbox, by name.
struct Made {
    ids: Vec<(&'static str, String)>,
    request_id: String,
    link_title: String,
}

async fn created(api: &Api, node: &Node, path: &str, body: Value, field: &str) -> String {
    let r = api.post(&node.sandbox_url(path), &node.creds.sandbox_key, body).await;
    r.expect(201);
    r.body[field]["id"].as_str().unwrap_or_else(|| panic!("{path}: {}", r.text)).to_string()
}

/// Organization A (the bootstrap one) moves money: a payout, a collection,
/// an order, a conversion and a quote left open; returns their ids and the
/// payout's request id.
async fn organization_a_moves_money(api: &Api, node: &Node) -> (Vec<(&'static str, String)>, String) {
    let key = &node.creds.sandbox_key;
    deposit(api, node, key, "GHS", "500.00").await;
    deposit(api, node, key, "USD", "50.00").await;
    let payout = api
        .post(
            &node.sandbox_url("/v1/payouts"),
            key,
            json!({
                "from": { "currency": "GHS", "amount": "10.00" },
                "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE },
                "externalReference": "iso-payout",
            }),
        )
        .await;
    payout.expect(201);
    let request_id = payout.request_id();
    let collection = created(
        api,
        node,
        "/v1/collections",
        json!({ "amount": "25.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": MTN_PHONE, "externalReference": "iso-col" }),
        "collection",
    )
    .await;
    poll_until(api, &node.sandbox_url(&format!("/v1/collections/{collection}")), key, |b| {
        b["collection"]["status"] == "completed"
    })
    .await;
    let order = created(
        api,
        node,
        "/v1/orders",
        json!({
            "from": { "method": "mobile_money", "currency": "GHS", "amount": "30.00" },
            "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
            "externalReference": "iso-order",
        }),
        "order",
    )
    .await;
    let quote_body = json!({ "from": { "currency": "USD", "amount": "5.00" }, "to": { "currency": "GHS" } });
    let quote = created(api, node, "/v1/conversions/quotes", quote_body.clone(), "quote").await;
    let conversion = created(api, node, "/v1/conversions", json!({ "quoteId": quote }), "conversion").await;
    let open_quote = created(api, node, "/v1/conversions/quotes", quote_body, "quote").await;
    let payout_id = payout.body["payout"]["id"].as_str().unwrap().to_string();
    let ids = vec![
        ("payout", payout_id),
        ("collection", collection),
        ("order", order),
        ("quote", quote),
        ("open_quote", open_quote),
        ("conversion", conversion),
    ];
    (ids, request_id)
}

/// Organization A (the bootstrap one) makes one of everything.
async fn organization_a_makes_everything(api: &Api, node: &Node) -> Made {
    let (mut ids, request_id) = organization_a_moves_money(api, node).await;
    let collection = ids[1].1.clone();
    let key = &node.creds.sandbox_key;
    let recipient = created(
        api,
        node,
        "/v1/recipients",
        json!({ "name": "Ama Mensah", "email": "ama@example.com", "code": "mtn_gh", "accountNumber": MTN_PHONE }),
        "recipient",
    )
    .await;
    let virtual_account = created(
        api,
        node,
        "/v1/virtual-accounts",
        json!({ "currency": "GHS", "customerReference": "iso-cust" }),
        "virtualAccount",
    )
    .await;
    let endpoint = created(
        api,
        node,
        "/v1/webhooks/endpoints",
        json!({ "url": "https://a.example/hooks", "events": ["payout.completed"] }),
        "webhookEndpoint",
    )
    .await;
    let link_title = "Secret scarves of A".to_string();
    let page_body = json!({ "currency": "GHS", "title": link_title, "allowedMethods": ["mobile_money"] });
    let page = created(api, node, "/v1/payment-pages", page_body.clone(), "paymentPage").await;
    let mut link_body = page_body;
    link_body["amount"] = json!("40.00");
    let link = created(api, node, "/v1/payment-links", link_body, "paymentLink").await;
    let file = created(
        api,
        node,
        "/v1/files",
        json!({ "name": "receipt.txt", "contentType": "text/plain", "data": "aGVsbG8=" }),
        "file",
    )
    .await;
    let dispute =
        created(api, node, "/v1/simulations/disputes", json!({ "collectionId": collection }), "dispute")
            .await;
    let events = api.get(&node.sandbox_url("/v1/webhooks/events"), key).await;
    let event = events.body["data"][0]["id"].as_str().unwrap().to_string();
    let (key_id, _) =
        create_key(api, &node.sandbox, &node.creds.owner_session, json!({ "name": "a", "scopes": ["*"] }))
            .await;
    let members = api.get(&node.sandbox_url("/v1/members"), &node.creds.owner_session).await;
    let member = members.body["data"][0]["id"].as_str().unwrap().to_string();
    ids.extend([
        ("recipient", recipient),
        ("virtual_account", virtual_account),
        ("endpoint", endpoint),
        ("page", page),
        ("link", link),
        ("file", file),
        ("dispute", dispute),
        ("event", event),
        ("key", key_id),
        ("member", member),
    ]);
    Made { ids, request_id, link_title }
}

/// Every one of A's resources by id, for the by-id checks.
fn paths_by_id(made: &Made) -> Vec<String> {
    let id = |name: &str| made.ids.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    vec![
        format!("/v1/payouts/{}", id("payout")),
        format!("/v1/collections/{}", id("collection")),
        format!("/v1/orders/{}", id("order")),
        format!("/v1/conversions/quotes/{}", id("quote")),
        format!("/v1/conversions/{}", id("conversion")),
        format!("/v1/recipients/{}", id("recipient")),
        format!("/v1/virtual-accounts/{}", id("virtual_account")),
        format!("/v1/webhooks/endpoints/{}", id("endpoint")),
        format!("/v1/webhooks/signing-secret/{}", id("endpoint")),
        format!("/v1/webhooks/events/{}", id("event")),
        format!("/v1/payment-pages/{}", id("page")),
        format!("/v1/payment-links/{}", id("link")),
        format!("/v1/files/{}", id("file")),
        format!("/v1/disputes/{}", id("dispute")),
        format!("/v1/disputes/{}/messages", id("dispute")),
        format!("/v1/requests/{}", made.request_id),
    ]
}

/// B's lists and filters hold nothing of A's, whoever asks (key or session).
async fn b_lists_nothing_of_a(api: &Api, node: &Node, made: &Made, session: &str, key: &str) {
    let lists = [
        "/v1/accounts",
        "/v1/payouts",
        "/v1/payouts?externalReference=iso-payout",
        "/v1/collections",
        "/v1/collections?externalReference=iso-col",
        "/v1/orders",
        "/v1/orders?externalReference=iso-order",
        "/v1/conversions",
        "/v1/recipients",
        "/v1/virtual-accounts",
        "/v1/webhooks/endpoints",
        "/v1/webhooks/events",
        "/v1/webhooks/deliveries",
        "/v1/payment-pages",
        "/v1/payment-links",
        "/v1/disputes",
    ];
    for path in lists {
        for credential in [key, session] {
            let r = api.get(&node.sandbox_url(path), credential).await;
            r.expect(200);
            assert_eq!(r.body["data"], json!([]), "{path} shows B nothing: {}", r.text);
        }
    }
    for path in ["/v1/keys", "/v1/members"] {
        let r = api.get(&node.sandbox_url(path), session).await;
        r.expect(200);
        for (name, value) in &made.ids {
            assert!(!r.text.contains(value.as_str()), "{path} shows B A's {name}: {}", r.text);
        }
    }
}

/// Acting on A's resources is not found for B either.
async fn b_cannot_act_on_a(api: &Api, node: &Node, made: &Made, session: &str, key: &str) {
    let id = |name: &str| made.ids.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let url = |path: &str| node.sandbox_url(path);
    let posts = [
        (format!("/v1/payment-links/{}/close", id("link")), json!({})),
        (format!("/v1/payment-pages/{}/close", id("page")), json!({})),
        (format!("/v1/disputes/{}/messages", id("dispute")), json!({ "body": "mine now" })),
        (format!("/v1/simulations/orders/{}/funds", id("order")), json!({ "amount": "30.00" })),
        (format!("/v1/simulations/disputes/{}/resolve", id("dispute")), json!({ "outcome": "accepted" })),
        (format!("/v1/webhooks/endpoints/{}/test", id("endpoint")), json!({})),
        ("/v1/simulations/disputes".to_string(), json!({ "collectionId": id("collection") })),
        ("/v1/conversions".to_string(), json!({ "quoteId": id("open_quote") })),
    ];
    for (path, body) in posts {
        let r = api.post(&url(&path), key, body).await;
        assert_eq!(r.status, 404, "POST {path} by B: {}", r.text);
    }
    api.call("DELETE", &url(&format!("/v1/webhooks/endpoints/{}", id("endpoint"))), Some(key), None)
        .await
        .expect_error(404, "not_found");
    api.call("DELETE", &url(&format!("/v1/keys/{}", id("key"))), Some(session), None)
        .await
        .expect_error(404, "not_found");
    let member = url(&format!("/v1/members/{}", id("member")));
    api.patch(&member, session, json!({ "role": "viewer" })).await.expect_error(404, "not_found");
    api.call("DELETE", &member, Some(session), None).await.expect_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_endpoint_shows_one_organization_anything_of_another() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let made = organization_a_makes_everything(&api, &node).await;
    let (session, key) = organization_b(&api, &node).await;
    let url = |path: &str| node.sandbox_url(path);
    let by_id = paths_by_id(&made);
    for path in &by_id {
        api.get(&url(path), &key).await.expect_error(404, "not_found");
    }
    let file = &made.ids.iter().find(|(n, _)| *n == "file").unwrap().1;
    let contents = api.client.get(url(&format!("/v1/files/{file}/contents"))).bearer_auth(&key).send().await;
    assert_eq!(contents.unwrap().status().as_u16(), 404);
    b_lists_nothing_of_a(&api, &node, &made, &session, &key).await;
    b_cannot_act_on_a(&api, &node, &made, &session, &key).await;

    // A still has everything, untouched.
    for path in &by_id {
        api.get(&url(path), &node.creds.sandbox_key).await.expect(200);
    }
    api.get(&url("/v1/keys"), &node.creds.owner_session).await.expect(200);

    // Hosted pages: B's own page shows B's, never A's.
    let body = json!({ "currency": "GHS", "title": "B's page", "allowedMethods": ["mobile_money"], "amount": "5.00" });
    let b_link = api.post(&url("/v1/payment-links"), &key, body).await;
    b_link.expect(201);
    let b_id = b_link.body["paymentLink"]["id"].as_str().unwrap();
    let html =
        reqwest::Client::new().get(url(&format!("/pay/{b_id}"))).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("s page"), "{html}");
    assert!(!html.contains(&made.link_title), "B's hosted page shows A's title");
    node.stop_and_verify();
}
