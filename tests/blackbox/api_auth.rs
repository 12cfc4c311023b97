//! API keys over HTTP: stacks, revocation, expiry, scopes, who may manage
//! keys, and the caller-IP allow-list with and without a trusted proxy.

use std::time::Duration;

use crate::support::*;
use serde_json::json;

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

#[tokio::test]
async fn a_key_works_only_on_its_own_stack() {
    let node = &SHARED.get();
    let api = Api::new();
    let c = &node.creds;
    assert!(c.sandbox_key.starts_with("sk_test_") && c.live_key.starts_with("sk_live_"));
    api.get(&node.sandbox_url("/v1/accounts"), &c.sandbox_key).await.expect(200);
    api.get(&node.live_url("/v1/accounts"), &c.live_key).await.expect(200);
    api.get(&node.live_url("/v1/accounts"), &c.sandbox_key).await.expect_error(401, "unauthorized");
    api.get(&node.sandbox_url("/v1/accounts"), &c.live_key).await.expect_error(401, "unauthorized");

    // Keys created on a stack carry its prefix and work only there.
    let (_, live) =
        create_key(&api, &node.live, &c.owner_session, json!({ "name": "live", "scopes": ["*"] })).await;
    let (_, sandbox) =
        create_key(&api, &node.sandbox, &c.owner_session, json!({ "name": "sandbox", "scopes": ["*"] }))
            .await;
    assert!(live.starts_with("sk_live_") && live.len() >= "sk_live_".len() + 43, "{live}");
    assert!(sandbox.starts_with("sk_test_") && sandbox.len() >= "sk_test_".len() + 43, "{sandbox}");
    api.get(&node.live_url("/v1/accounts"), &live).await.expect(200);
    api.get(&node.sandbox_url("/v1/accounts"), &live).await.expect_error(401, "unauthorized");
    api.get(&node.sandbox_url("/v1/accounts"), &sandbox).await.expect(200);
    api.get(&node.live_url("/v1/accounts"), &sandbox).await.expect_error(401, "unauthorized");

    // A live key is not listed on the sandbox, and no list shows a secret.
    let listed = api.get(&node.sandbox_url("/v1/keys"), &c.owner_session).await;
    listed.expect(200);
    assert!(!listed.text.contains(&live) && !listed.text.contains(&sandbox), "a secret was listed");
    assert!(listed.body["data"].as_array().unwrap().iter().all(|k| k.get("secret").is_none()));
    assert!(!listed.text.contains("sk_live_"), "a live key is listed on the sandbox: {}", listed.text);
}

#[tokio::test]
async fn a_revoked_key_is_refused() {
    let node = &SHARED.get();
    let api = Api::new();
    let session = &node.creds.owner_session;
    let (id, secret) =
        create_key(&api, &node.sandbox, session, json!({ "name": "to revoke", "scopes": ["*"] })).await;
    let other = scoped_key(&api, node, "stays", &["*"]).await;
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect(200);
    let r = api.call("DELETE", &node.sandbox_url(&format!("/v1/keys/{id}")), Some(session), None).await;
    r.expect(200);
    assert!(r.body["apiKey"]["revokedAt"].is_string(), "{}", r.text);
    assert!(r.body["apiKey"].get("secret").is_none());
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect_error(401, "unauthorized");
    // Revoking is idempotent; unknown ids are 404; the other key still works.
    api.call("DELETE", &node.sandbox_url(&format!("/v1/keys/{id}")), Some(session), None).await.expect(200);
    api.call("DELETE", &node.sandbox_url("/v1/keys/key_nope"), Some(session), None)
        .await
        .expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/accounts"), &other).await.expect(200);
    // The revoked key is still listed, as revoked.
    let listed = api.get(&node.sandbox_url("/v1/keys"), session).await;
    let entry = listed.body["data"].as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).cloned();
    assert!(entry.expect("revoked key listed")["revokedAt"].is_string());
    // A sandbox key id cannot be revoked through the live stack.
    api.call("DELETE", &node.live_url(&format!("/v1/keys/{id}")), Some(session), None)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn an_expired_key_is_refused() {
    let node = &SHARED.get();
    let api = Api::new();
    let body = json!({ "name": "short-lived", "scopes": ["accounts:read"], "expiresAt": in_seconds(2) });
    let (_, secret) = create_key(&api, &node.sandbox, &node.creds.owner_session, body).await;
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect(200);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    api.get(&node.sandbox_url("/v1/accounts"), &secret).await.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn scopes_limit_what_a_key_may_do() {
    let node = &SHARED.get();
    let api = Api::new();
    let rates = scoped_key(&api, node, "rates", &["rates:read"]).await;
    api.get(&node.sandbox_url("/v1/accounts"), &rates).await.expect_error(403, "forbidden");
    let r = api.get(&node.sandbox_url("/v1/rates/usd/ghs"), &rates).await;
    r.expect(200);
    assert_eq!(
        (r.body["rate"]["origin"].as_str(), r.body["rate"]["destination"].as_str()),
        (Some("USD"), Some("GHS"))
    );
    api.get(&node.sandbox_url("/v1/conversions"), &rates).await.expect_error(403, "forbidden");
    api.get(&node.sandbox_url("/v1/capabilities/GH"), &rates).await.expect_error(403, "forbidden");
    // A HEAD runs the GET's handler, so it needs the GET's scope.
    let head = |key: String| {
        let url = node.sandbox_url("/v1/conversions");
        async move { reqwest::Client::new().head(url).bearer_auth(key).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(head(rates.clone()).await, 403);
    assert_eq!(head(node.creds.sandbox_key.clone()).await, 200);

    let reader = scoped_key(&api, node, "reader", &["conversions:read"]).await;
    api.get(&node.sandbox_url("/v1/conversions"), &reader).await.expect(200);
    api.post(
        &node.sandbox_url("/v1/conversions/quotes"),
        &reader,
        json!({ "from": { "currency": "USD", "amount": "1.00" }, "to": { "currency": "GHS" } }),
    )
    .await
    .expect_error(403, "forbidden");
    api.post(&node.sandbox_url("/v1/conversions"), &reader, json!({ "quoteId": "qte_x" }))
        .await
        .expect_error(403, "forbidden");
    api.post(
        &node.sandbox_url("/v1/simulations/deposits"),
        &reader,
        json!({ "currency": "USD", "amount": "1.00" }),
    )
    .await
    .expect_error(403, "forbidden");
}

#[tokio::test]
async fn only_sessions_of_owners_and_admins_manage_keys() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    api.post(&node.sandbox_url("/v1/keys"), key, json!({ "name": "x", "scopes": ["*"] }))
        .await
        .expect_error(403, "forbidden");
    api.get(&node.sandbox_url("/v1/keys"), key).await.expect_error(403, "forbidden");
    api.call("DELETE", &node.sandbox_url("/v1/keys/key_x"), Some(key), None)
        .await
        .expect_error(403, "forbidden");
    api.get(&node.live_url("/v1/keys"), &node.creds.live_key).await.expect_error(403, "forbidden");
    // The owner's session works on both stacks.
    api.get(&node.sandbox_url("/v1/keys"), &node.creds.owner_session).await.expect(200);
    api.get(&node.live_url("/v1/keys"), &node.creds.owner_session).await.expect(200);
}

#[tokio::test]
async fn the_ip_allow_list_without_a_trusted_proxy() {
    let node = &SHARED.get();
    let api = Api::new();
    let session = &node.creds.owner_session;
    let url = node.sandbox_url("/v1/accounts");
    let elsewhere = key_allowing(&api, &node.sandbox, session, "elsewhere", "10.9.9.9").await;
    let loopback = key_allowing(&api, &node.sandbox, session, "here", "127.0.0.1").await;
    let block = key_allowing(&api, &node.sandbox, session, "block", "127.0.0.0/8").await;
    api.get(&url, &elsewhere).await.expect_error(403, "forbidden");
    api.get(&url, &loopback).await.expect(200);
    api.get(&url, &block).await.expect(200);
    // With no trusted proxy configured, X-Forwarded-For is ignored both ways.
    let xff = |key: String, hop: &'static str| {
        let api = api.clone();
        let url = url.clone();
        async move { api.send("GET", &url, |rb| rb.bearer_auth(key).header("x-forwarded-for", hop)).await }
    };
    xff(elsewhere.clone(), "10.9.9.9").await.expect_error(403, "forbidden");
    xff(loopback.clone(), "203.0.113.7").await.expect(200);
}

#[tokio::test]
async fn the_ip_allow_list_behind_a_trusted_proxy() {
    // Two proxies in a chain: a load balancer (10.0.0.1) in front of one on
    // this machine.
    let node =
        Node::start(Options { trusted_proxies: Some("127.0.0.1,10.0.0.1".into()), ..Options::unthrottled() });
    let api = Api::new();
    let session = &node.creds.owner_session;
    let url = node.sandbox_url("/v1/accounts");
    let remote = key_allowing(&api, &node.sandbox, session, "remote", "203.0.113.7").await;
    let loopback = key_allowing(&api, &node.sandbox, session, "here", "127.0.0.1").await;
    let get = |key: &str, hop: Option<&str>| {
        let (api, url, key, hop) = (api.clone(), url.clone(), key.to_string(), hop.map(str::to_string));
        async move {
            api.send("GET", &url, |mut rb| {
                rb = rb.bearer_auth(key);
                if let Some(hop) = hop {
                    rb = rb.header("x-forwarded-for", hop);
                }
                rb
            })
            .await
        }
    };
    get(&remote, Some("203.0.113.7")).await.expect(200);
    get(&remote, Some("203.0.113.7, 10.0.0.1")).await.expect(200);
    // The caller is the right-most hop no trusted proxy wrote: hops to its
    // left are the client's own words, so a forged one changes nothing.
    get(&remote, Some("198.51.100.1, 203.0.113.7")).await.expect(200);
    get(&remote, Some("203.0.113.7, 198.51.100.1")).await.expect_error(403, "forbidden");
    get(&remote, Some("203.0.113.7, 198.51.100.1, 10.0.0.1")).await.expect_error(403, "forbidden");
    get(&remote, None).await.expect_error(403, "forbidden");
    get(&remote, Some("198.51.100.1")).await.expect_error(403, "forbidden");
    // The forwarded address replaces the proxy's own.
    get(&loopback, Some("203.0.113.7")).await.expect_error(403, "forbidden");
    get(&loopback, None).await.expect(200);
    // An unparseable header falls back to the peer.
    get(&loopback, Some("not-an-address")).await.expect(200);
}

/// A sandbox key of every scope that only callers from `allowed` (an
/// address or a block) may use.
async fn key_allowing(api: &Api, sandbox: &str, session: &str, name: &str, allowed: &str) -> String {
    let body = json!({ "name": name, "scopes": ["*"], "allowedIps": [allowed] });
    create_key(api, sandbox, session, body).await.1
}

/// RFC 7235: the authentication scheme is case-insensitive, on both stacks
/// and on the admin API.
#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let node = &SHARED.get();
    let client = reqwest::Client::new();
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        for (url, token) in [
            (node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key),
            (node.live_url("/v1/accounts"), &node.creds.live_key),
            (node.admin_url("/admin/v1/organizations"), &node.creds.admin_token),
        ] {
            let r =
                client.get(&url).header("authorization", format!("{scheme} {token}")).send().await.unwrap();
            assert_eq!(r.status(), 200, "{scheme} on {url}");
        }
    }
    let r = client
        .get(node.sandbox_url("/v1/accounts"))
        .header("authorization", format!("Basic {}", node.creds.sandbox_key))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "another scheme is still refused");
}

/// Issue 15.6: who may call is decided before the body is read. An API key
/// on an owner's or admin's action is `403 forbidden` whatever it sends (an
/// invalid body, a text body, no body), and so is a key without the
/// operation's scope.
#[tokio::test]
async fn credentials_are_refused_before_the_body_is_read() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let reader = scoped_key(&api, node, "reader", &["payouts:read"]).await;
    let text = |url: String, key: String, method: &'static str| {
        let api = api.clone();
        async move {
            api.send(method, &url, |rb| {
                rb.bearer_auth(key).header("content-type", "text/plain").body("hello")
            })
            .await
        }
    };
    for (method, path) in [("POST", "/v1/keys"), ("PUT", "/v1/organization/representative")] {
        let url = node.sandbox_url(path);
        api.call(method, &url, Some(key), Some(json!({ "unknown": true })))
            .await
            .expect_error(403, "forbidden");
        api.call(method, &url, Some(key), Some(json!([1, 2]))).await.expect_error(403, "forbidden");
        text(url.clone(), key.clone(), method).await.expect_error(403, "forbidden");
    }
    let payouts = node.sandbox_url("/v1/payouts");
    api.call("POST", &payouts, Some(&reader), Some(json!({ "from": 5 })))
        .await
        .expect_error(403, "forbidden");
    text(payouts.clone(), reader.clone(), "POST").await.expect_error(403, "forbidden");
    // With the scope, the same bodies get their own answers.
    text(payouts, key.clone(), "POST").await.expect_error(415, "unsupported_media_type");
}
