//! The dashboard's payments and developers pages beyond the first round,
//! over plain HTTP against the real binary: orders with their detail, the
//! search by id, reference or phone number fragment (the node's search,
//! for the member's organization only), and what a viewer may use of them.

use serde_json::{Value, json};

use crate::support::dashboard::Dashboard;
use crate::support::team::{PASSWORD, member_with_role, owned_org};
use crate::support::{Api, MTN_PHONE, Node, Options, create_key, mtn_collection};

fn ghs_order(amount: &str, reference: &str) -> Value {
    json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": amount },
        "to": { "code": "mtn_gh", "accountNumber": MTN_PHONE, "currency": "GHS" },
        "externalReference": reference,
    })
}

#[tokio::test]
async fn dashboard_orders_and_the_search_by_id_reference_or_phone() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "search@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let mut collections = Vec::new();
    for reference in ["cart-alpha", "cart-beta"] {
        let created =
            api.post(&node.sandbox_url("/v1/collections"), &key, mtn_collection("12.50", reference)).await;
        collections.push(created.created("collection", "col_").1);
    }
    let created = api.post(&node.sandbox_url("/v1/orders"), &key, ghs_order("1250.00", "order-gamma")).await;
    let (_, order) = created.created("order", "ord_");
    // Another organization's payment to the same phone is never found.
    let (_, other) = owned_org(&api, &node, "other@shop.example").await;
    let (_, other_key) =
        create_key(&api, &node.sandbox, &other, json!({ "name": "k", "scopes": ["*"] })).await;
    let theirs =
        api.post(&node.sandbox_url("/v1/collections"), &other_key, mtn_collection("9.00", "x-1")).await;
    let (_, their_id) = theirs.created("collection", "col_");

    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("search@shop.example", PASSWORD).await;
    let orders = dash.get("/dashboard/payments?kind=orders").await;
    assert_eq!(orders.status, 200, "{}", orders.text);
    assert!(orders.has("tab-orders") && orders.text.contains(&order), "{}", orders.text);
    assert!(orders.text.contains("GHS 1,250.00"), "formatted per currency: {}", orders.text);
    let waiting = dash.get("/dashboard/payments?kind=orders&status=awaiting_funds").await;
    assert!(waiting.text.contains(&order), "{}", waiting.text);
    assert!(dash.get("/dashboard/payments?kind=orders&reference=nope").await.has("no-payments"));
    let detail = dash.get(&format!("/dashboard/payments/orders/{order}")).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert!(detail.has("timeline") && detail.text.contains("Order created"), "{}", detail.text);
    assert!(!detail.has("refund-form"), "{}", detail.text);

    let by_reference = dash.get("/dashboard/payments/search?q=cart-alpha").await;
    let hits = by_reference.element("hits").map(|_| by_reference.text.clone()).unwrap_or_default();
    assert!(hits.contains(&collections[0]) && !hits.contains(&collections[1]), "{}", by_reference.text);
    let by_id = dash.get(&format!("/dashboard/payments/search?q={order}")).await;
    assert!(by_id.text.contains(&format!("/dashboard/payments/orders/{order}")), "{}", by_id.text);
    let fragment = &MTN_PHONE[4..10];
    let by_phone = dash.get(&format!("/dashboard/payments/search?q={fragment}")).await;
    for id in collections.iter().chain([&order]) {
        assert!(by_phone.text.contains(id.as_str()), "{id} by phone {fragment}: {}", by_phone.text);
    }
    assert!(!by_phone.text.contains(&their_id), "only this organization's: {}", by_phone.text);
    assert!(dash.get("/dashboard/payments/search?q=nothing-like-it").await.has("no-hits"));
    let short = dash.get("/dashboard/payments/search?q=x").await;
    assert_eq!(short.status, 400, "the search's refusal: {}", short.text);

    member_with_role(&api, &node, &owner, "viewer@search.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@search.example", PASSWORD).await;
    let seen = viewer.get("/dashboard/payments/search?q=cart-beta").await;
    assert!(seen.text.contains(&collections[1]), "{}", seen.text);
}

/// A webhook endpoint's page: its signing secret shown on demand, equal to
/// the API's; its deliveries with a retry button that sends one again
/// through the API's retry; and a request looked up by its id as `GET
/// /v1/requests/{id}` finds it. A viewer gets exactly what the API lets a
/// viewer have, and their forged retry changes nothing.
#[tokio::test]
async fn dashboard_endpoint_secret_deliveries_retry_and_a_request_by_its_id() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "devs@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let sink = crate::support::WebhookSink::start();
    let id = sink.register(&api, &node.sandbox, &key).await;
    api.post(&node.sandbox_url(&format!("/v1/webhooks/endpoints/{id}/test")), &key, json!({}))
        .await
        .expect(202);
    let deliveries = node.sandbox_url(&format!("/v1/webhooks/deliveries?endpointId={id}"));
    let listed =
        crate::support::poll_until(&api, &deliveries, &key, |b| b["data"][0]["attemptCount"] == 1).await;
    let delivery = listed["data"][0]["id"].as_str().unwrap().to_string();

    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("devs@shop.example", PASSWORD).await;
    let listing = dash.get("/dashboard/developers").await;
    assert!(listing.has(&format!("open-{id}")) && listing.has("request-form"), "{}", listing.text);
    let page = format!("/dashboard/developers/webhooks/{id}");
    let shown = dash.get(&page).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(shown.has(&format!("delivery-{delivery}")) && shown.has("secret-form"), "{}", shown.text);
    assert!(!shown.has("signing-secret"), "not until asked: {}", shown.text);
    let revealed = dash.submit(&page, &format!("{page}/secret"), &[]).await;
    let secret = api.get(&node.sandbox_url(&format!("/v1/webhooks/signing-secret/{id}")), &key).await;
    assert_eq!(revealed.element("signing-secret"), secret.body["secret"].as_str().map(str::to_string));

    let retry = format!("/dashboard/developers/deliveries/{delivery}/retry");
    let retried = dash.submit(&page, &retry, &[("endpoint", id.as_str())]).await;
    assert!(retried.element("notice").unwrap_or_default().contains("was sent again"), "{}", retried.text);
    let one = node.sandbox_url(&format!("/v1/webhooks/deliveries/{delivery}"));
    let after = api.get(&one, &key).await;
    assert_eq!(after.body["delivery"]["attemptCount"], 2, "{}", after.text);
    assert_eq!(after.body["delivery"]["attempts"][1]["manual"], true, "{}", after.text);

    // A refused call's request id, looked up in the log.
    let refused = api.post(&node.sandbox_url("/v1/collections"), &key, json!({})).await;
    let request_id = refused.body["requestId"].as_str().unwrap().to_string();
    let found = dash.get(&format!("/dashboard/developers/requests?id={request_id}")).await;
    assert_eq!(found.status, 200, "{}", found.text);
    let facts = found.element("request").map(|_| found.text.clone()).unwrap_or_default();
    assert!(facts.contains("POST /v1/collections") && facts.contains("400"), "{}", found.text);
    let missing = dash.get("/dashboard/developers/requests?id=req_unknown").await;
    assert_eq!(missing.status, 404, "{}", missing.text);

    member_with_role(&api, &node, &owner, "viewer@devs.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    let session = viewer.log_in("viewer@devs.example", PASSWORD).await;
    let seen = viewer.get(&page).await;
    assert!(
        seen.has(&format!("delivery-{delivery}")) && !seen.has(&format!("retry-{delivery}")),
        "{}",
        seen.text
    );
    let viewer_token = viewer.cookie("sika_session").unwrap();
    let api_secret =
        api.get(&node.sandbox_url(&format!("/v1/webhooks/signing-secret/{id}")), &viewer_token).await;
    assert_eq!(seen.has("secret-form"), api_secret.status == 200, "as the API: {}", seen.text);
    let forged = viewer.post(&retry, &[("csrf", session.csrf().as_str()), ("endpoint", id.as_str())]).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert_eq!(api.get(&one, &key).await.body["delivery"]["attemptCount"], 2, "nothing more");
}

/// The keys table pages like `GET /v1/keys` (20 a page, newest first, the
/// API's cursor in the next page's address).
#[tokio::test]
async fn dashboard_keys_page_like_the_api() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "pages@shop.example").await;
    for i in 0..21 {
        create_key(&api, &node.sandbox, &owner, json!({ "name": format!("key-{i:02}"), "scopes": ["*"] }))
            .await;
    }
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("pages@shop.example", PASSWORD).await;
    let first = dash.get("/dashboard/developers").await;
    assert!(first.text.contains("key-20") && !first.text.contains("key-00"), "{}", first.text);
    let next = first.text.split("id=\"keys-next\"").next().unwrap();
    let href = next[next.rfind("href=\"").unwrap() + 6..].split('"').next().unwrap().replace("&amp;", "&");
    let second = dash.get(&href).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert!(second.text.contains("key-00") && !second.text.contains("key-20"), "{}", second.text);
    assert!(!second.has("keys-next"), "{}", second.text);
    assert!(!dash.get("/dashboard/team").await.has("members-next"), "one member, one page");
}

/// The ids of the rows of the members table, in order.
fn member_rows(page: &crate::support::dashboard::Page) -> Vec<String> {
    page.text
        .split("<tr id=\"member-")
        .skip(1)
        .map(|row| row.split('"').next().unwrap().to_string())
        .collect()
}

/// The team table pages like `GET /v1/members`: 22 members are 20 rows and
/// a next page of 2, the same members in the same order as the API's two
/// pages, and the last page has no next link.
#[tokio::test]
async fn dashboard_team_pages_like_the_api() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "team-pages@shop.example").await;
    for i in 0..21 {
        let body = json!({ "email": format!("m{i:02}@shop.example"), "name": format!("M {i:02}"), "role": "viewer" });
        api.post(&node.sandbox_url("/v1/members"), &owner, body).await.expect(201);
    }
    let first_api = api.get(&node.sandbox_url("/v1/members"), &owner).await;
    let ids = |page: &Value| -> Vec<String> {
        page["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
    };
    let cursor = first_api.body["nextCursor"].as_str().expect("a second page").to_string();
    let second_api = api.get(&node.sandbox_url(&format!("/v1/members?cursor={cursor}")), &owner).await;
    assert_eq!((ids(&first_api.body).len(), ids(&second_api.body).len()), (20, 2), "{}", first_api.text);

    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("team-pages@shop.example", PASSWORD).await;
    let first = dash.get("/dashboard/team").await;
    assert_eq!(member_rows(&first), ids(&first_api.body), "{}", first.text);
    let next = first.text.split("id=\"members-next\"").next().unwrap();
    let href = next[next.rfind("href=\"").unwrap() + 6..].split('"').next().unwrap().replace("&amp;", "&");
    let second = dash.get(&href).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(member_rows(&second), ids(&second_api.body), "{}", second.text);
    assert!(!second.has("members-next"), "the last page: {}", second.text);
}
