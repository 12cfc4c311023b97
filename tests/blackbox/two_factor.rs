//! Two-factor sign-in over HTTP against the real binary (CONTRACT.md,
//! "The merchant dashboard"): enrolment, confirmation with ten recovery
//! codes shown once, log-in that needs a code once it is on
//! (`details.reason` `totp_required`), codes and recovery codes that work
//! once, turning it off, and the log-in throttle over the second factor.

use std::collections::BTreeSet;

use crate::support::team::{PASSWORD, enable_totp, member_with_role, open_session, owned_org, totp_code};
use crate::support::{Api, Node, Options};
use serde_json::json;

/// The whole rule set on one member: pending enrolment changes nothing,
/// a wrong first code is refused, then every log-in needs a fresh code or
/// an unused recovery code, and a right password alone says why it is
/// refused.
#[tokio::test]
async fn totp_enrolment_makes_log_in_ask_for_a_code_that_works_once() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "twofactor@shop.example").await;
    let me = |path: &str| node.sandbox_url(&format!("/v1/members/me/totp{path}"));
    let log_in = |extra: serde_json::Value| {
        let mut body = json!({ "email": "twofactor@shop.example", "password": PASSWORD });
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        open_session(&api, &node, body)
    };

    let enrolment = api.post(&me(""), &owner, json!({})).await;
    enrolment.expect(201);
    let secret = enrolment.body["secret"].as_str().unwrap().to_string();
    let url = enrolment.body["otpauthUrl"].as_str().unwrap();
    assert!(url.starts_with("otpauth://totp/Sika%3Atwofactor%40shop.example?secret="), "{url}");
    assert!(url.contains(&format!("secret={secret}&")), "{url}");
    // Pending: the password alone still logs in.
    log_in(json!({})).await.expect(201);
    let wrong = if totp_code(&secret, 0) == "000000" { "111111" } else { "000000" };
    api.post(&me("/confirm"), &owner, json!({ "code": wrong })).await.expect_field(
        400,
        "validation_error",
        "code",
    );

    let confirmed = api.post(&me("/confirm"), &owner, json!({ "code": totp_code(&secret, 0) })).await;
    confirmed.expect(200);
    let recovery: Vec<String> = confirmed.body["recoveryCodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().into())
        .collect();
    assert_eq!(recovery.len(), 10);
    assert_eq!(recovery.iter().collect::<BTreeSet<_>>().len(), 10, "distinct: {recovery:?}");
    // Shown once: enrolling again while on is refused.
    api.post(&me(""), &owner, json!({})).await.expect_error(409, "invalid_state");
    api.post(&me("/confirm"), &owner, json!({ "code": totp_code(&secret, 0) }))
        .await
        .expect_error(409, "invalid_state");

    let required = log_in(json!({})).await;
    required.expect_error(401, "unauthorized");
    assert_eq!(required.body["details"]["reason"], "totp_required", "{}", required.text);
    // A wrong password is the one answer to wrong credentials, whatever the factor.
    let refused = open_session(
        &api,
        &node,
        json!({ "email": "twofactor@shop.example", "password": "wrong password!" }),
    )
    .await;
    refused.expect_error(401, "unauthorized");
    assert!(refused.body["details"]["reason"].is_null(), "{}", refused.text);
    // The code confirmed is spent; the next step's code works, once.
    let spent = log_in(json!({ "code": totp_code(&secret, 0) })).await;
    spent.expect_error(401, "unauthorized");
    assert_eq!(spent.body["details"]["reason"], "totp_invalid");
    let session = log_in(json!({ "code": totp_code(&secret, 1) })).await;
    session.expect(201);
    assert!(session.body["session"]["token"].as_str().unwrap().starts_with("sess_"));
    log_in(json!({ "code": totp_code(&secret, 1) })).await.expect_error(401, "unauthorized");
    // A recovery code works once, in either case.
    log_in(json!({ "recoveryCode": recovery[0].to_uppercase() })).await.expect(201);
    let again = log_in(json!({ "recoveryCode": recovery[0] })).await;
    assert_eq!(again.body["details"]["reason"], "totp_invalid", "{}", again.text);
    log_in(json!({ "code": "123456", "recoveryCode": recovery[1] })).await.expect_invalid("recoveryCode");

    // Off with a recovery code; then the password alone logs in again.
    let url = me("");
    let delete = |code: &str| api.call("DELETE", &url, Some(&owner), Some(json!({ "code": code })));
    delete("not-a-code").await.expect_field(400, "validation_error", "code");
    let off = delete(&recovery[1]).await;
    off.expect(200);
    assert_eq!(off.body["enabled"], false);
    delete(&recovery[2]).await.expect_error(409, "invalid_state");
    log_in(json!({})).await.expect(201);
}

/// Every member manages their own two-factor sign-in, whatever the role
/// (a viewer too) and ends their own session; an API key cannot.
#[tokio::test]
async fn every_role_turns_on_its_own_totp_and_keys_cannot() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "roles2fa@shop.example").await;
    let (_, viewer) = member_with_role(&api, &node, &owner, "viewer2fa@shop.example", "viewer").await;
    let (secret, codes) = enable_totp(&api, &node, &viewer).await;
    assert_eq!(codes.len(), 10);
    let body = json!({ "email": "viewer2fa@shop.example", "password": PASSWORD });
    let required = open_session(&api, &node, body).await;
    assert_eq!(required.body["details"]["reason"], "totp_required", "{}", required.text);
    let body =
        json!({ "email": "viewer2fa@shop.example", "password": PASSWORD, "code": totp_code(&secret, 1) });
    open_session(&api, &node, body).await.expect(201);
    // The owner's own log-in is untouched by the viewer's second factor.
    open_session(&api, &node, json!({ "email": "roles2fa@shop.example", "password": PASSWORD }))
        .await
        .expect(201);
    let key = node.creds.sandbox_key.clone();
    api.post(&node.sandbox_url("/v1/members/me/totp"), &key, json!({})).await.expect_error(403, "forbidden");
    api.call("DELETE", &node.sandbox_url("/v1/sessions/current"), Some(&viewer), None).await.expect(200);
    api.post(&node.sandbox_url("/v1/members/me/totp"), &viewer, json!({}))
        .await
        .expect_error(401, "unauthorized");
}

/// The API's log-in throttle holds over the second factor: a right
/// password without its code is no failure (the member is asked for the
/// code however often), but wrong codes are, and after ten the log-in is
/// `429` even with the right code.
#[tokio::test]
async fn wrong_codes_are_throttled_like_wrong_passwords() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "throttle2fa@shop.example").await;
    let (secret, _) = enable_totp(&api, &node, &owner).await;
    // Its own caller address, so the per-address count is this test's.
    let caller = Api::from_address([127, 0, 0, 35]);
    let url = node.sandbox_url("/v1/sessions");
    let body = |code: Option<&str>| match code {
        Some(code) => json!({ "email": "throttle2fa@shop.example", "password": PASSWORD, "code": code }),
        None => json!({ "email": "throttle2fa@shop.example", "password": PASSWORD }),
    };
    for _ in 0..12 {
        let asked = caller.post_anonymous(&url, body(None)).await;
        assert_eq!(asked.body["details"]["reason"], "totp_required", "{}", asked.text);
    }
    let right = totp_code(&secret, 1);
    let wrong = if right == "000000" { "111111" } else { "000000" };
    for _ in 0..10 {
        let refused = caller.post_anonymous(&url, body(Some(wrong))).await;
        assert_eq!(refused.body["details"]["reason"], "totp_invalid", "{}", refused.text);
    }
    caller.post_anonymous(&url, body(Some(&right))).await.expect_error(429, "rate_limited");
}
