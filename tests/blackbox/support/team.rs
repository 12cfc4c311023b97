//! Organizations and members for the sign-in and dashboard tests: an
//! organization whose owner has accepted the invitation, members of each
//! role, and an authenticator app's codes (RFC 6238) computed as the
//! member's phone would.

use serde_json::{Value, json};

use super::{Api, Node, Resp};

/// Every test member's password.
pub const PASSWORD: &str = "correct horse battery";

/// `POST /admin/v1/organizations`; returns (organization id, invitation token).
pub async fn create_org(api: &Api, node: &Node, name: &str, email: &str) -> (String, String) {
    let body = json!({ "name": name, "owner": { "email": email, "name": "Ama Owner" } });
    let created = api.post(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token, body).await;
    created.expect(201);
    let id = created.body["organization"]["id"].as_str().unwrap().to_string();
    let token = created.body["invitation"]["token"].as_str().unwrap().to_string();
    (id, token)
}

/// `POST /v1/sessions` on the sandbox with `body`.
pub async fn open_session(api: &Api, node: &Node, body: Value) -> Resp {
    api.post_anonymous(&node.sandbox_url("/v1/sessions"), body).await
}

/// Accepts an invitation on the sandbox; returns the session token.
pub async fn accept(api: &Api, node: &Node, invitation: &str) -> String {
    let session = open_session(api, node, json!({ "invitation": invitation, "password": PASSWORD })).await;
    session.expect(201);
    session.body["session"]["token"].as_str().unwrap().to_string()
}

/// A new organization whose owner `email` has set `PASSWORD`; returns
/// (organization id, owner's session).
pub async fn owned_org(api: &Api, node: &Node, email: &str) -> (String, String) {
    let (org, invitation) = create_org(api, node, &format!("Shop of {email}"), email).await;
    (org, accept(api, node, &invitation).await)
}

/// `manager` invites `email` as `role`, who accepts; returns (member id, session).
pub async fn member_with_role(
    api: &Api,
    node: &Node,
    manager: &str,
    email: &str,
    role: &str,
) -> (String, String) {
    let body = json!({ "email": email, "name": format!("A {role}"), "role": role });
    let invited = api.post(&node.sandbox_url("/v1/members"), manager, body).await;
    invited.expect(201);
    let id = invited.body["member"]["id"].as_str().unwrap().to_string();
    (id, accept(api, node, invited.body["invitation"]["token"].as_str().unwrap()).await)
}

/// The authenticator's code for the base32 `secret`, `steps_ahead`
/// 30-second steps after now (SHA-1, 6 digits).
pub fn totp_code(secret: &str, steps_ahead: u64) -> String {
    let bytes = totp_rs::Secret::Encoded(secret.to_string()).to_bytes().expect("a base32 secret");
    let totp = totp_rs::TOTP::new_unchecked(totp_rs::Algorithm::SHA1, 6, 1, 30, bytes);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    totp.generate(now + steps_ahead * 30)
}

/// Turns two-factor sign-in on for the member of `session`; returns the
/// secret and the recovery codes. The code confirmed is this step's.
pub async fn enable_totp(api: &Api, node: &Node, session: &str) -> (String, Vec<String>) {
    let enrolment = api.post(&node.sandbox_url("/v1/members/me/totp"), session, json!({})).await;
    enrolment.expect(201);
    let secret = enrolment.body["secret"].as_str().unwrap().to_string();
    let body = json!({ "code": totp_code(&secret, 0) });
    let confirmed = api.post(&node.sandbox_url("/v1/members/me/totp/confirm"), session, body).await;
    confirmed.expect(200);
    let codes = confirmed.body["recoveryCodes"].as_array().unwrap();
    (secret, codes.iter().map(|c| c.as_str().unwrap().to_string()).collect())
}
