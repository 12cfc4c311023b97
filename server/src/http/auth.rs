//! Who is calling: an API key of this stack or a team member's session.
//! The middleware resolves the caller once per request and checks the
//! scopes the operation's documented `security` names; handlers read the
//! resulting `Principal` for the caller's organization.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::domain::error::ApiError;
use crate::domain::identity::{Role, hash_secret};
use crate::domain::principal::{Caller, CurrentSession, Principal};
use crate::domain::stack::Stack;

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("missing Authorization header"))
    }
}

/// One authenticated call: the stack it reached and who made it, the
/// caller the authentication layer resolved (and whose scopes it checked).
pub(crate) struct Call {
    pub(crate) stack: Arc<Stack>,
    pub(crate) principal: Principal,
}

impl FromRequestParts<Arc<Stack>> for Call {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, stack: &Arc<Stack>) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, stack).await?;
        Ok(Call { stack: stack.clone(), principal })
    }
}

/// The caller's address: the socket peer, or, when the peer is a proxy
/// named in the configuration, the right-most `X-Forwarded-For` hop that is
/// not itself a trusted proxy. Hops to its left were written by the client
/// and prove nothing: the left-most one is whatever the caller chose.
pub(crate) fn caller_ip(stack: &Stack, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
    caller_address(&stack.config.trusted_proxies, peer, headers)
}

/// `caller_ip` with the node's trusted proxies given.
pub(crate) fn caller_address(
    trusted: &[IpAddr],
    peer: Option<SocketAddr>,
    headers: &HeaderMap,
) -> Option<IpAddr> {
    let peer = peer?.ip();
    if !trusted.contains(&peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    for hop in hops.iter().rev() {
        match hop.trim().parse::<IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => continue,
            Ok(ip) => return Some(ip),
            // A hop that is no address: nothing left of it can be believed.
            Err(_) => break,
        }
    }
    Some(peer)
}

/// `429 rate_limited` with `Retry-After` once the address `ip` has made
/// more than the rate limit's requests of `kind` in the last second.
/// Callers without a valid credential (no key, a bad key, the hosted
/// checkout's payers) are limited this way, so they cannot flood the node
/// at no cost; a valid credential is limited per key instead.
pub(crate) fn limit_address(stack: &Stack, kind: &str, ip: Option<IpAddr>) -> Result<(), Box<Response>> {
    let ip = ip.map(|ip| ip.to_string()).unwrap_or_default();
    stack.rate_limiter.check(&format!("{kind}:{ip}"), Instant::now()).map_err(|retry_after| {
        let mut response = ApiError::new(
            sika_api::ErrorCode::RateLimited,
            format!("more than {} requests per second from this address; slow down", stack.config.rate_limit),
        )
        .with_detail("retryAfter", retry_after)
        .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        Box::new(response)
    })
}

/// The hosted checkout's routes (no key): limited per caller address.
pub(crate) async fn limit_anonymous(
    State(stack): State<Arc<Stack>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let ip = caller_ip(&stack, peer, request.headers());
    match limit_address(&stack, "page", ip) {
        Ok(()) => next.run(request).await,
        Err(refused) => *refused,
    }
}

/// The credentials of an `Authorization: Bearer <token>` value. The scheme
/// is case-insensitive (RFC 7235 §2.1: `bearer`, `BEARER` and `Bearer` are
/// one scheme) and spaces around the token are ignored.
pub(crate) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn authenticate(
    stack: &Stack,
    headers: &HeaderMap,
    ip: Option<IpAddr>,
) -> Result<(Principal, Option<CurrentSession>), ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("missing Authorization header; send Authorization: Bearer <API key>")
    })?;
    let token = value.to_str().ok().and_then(bearer_token).ok_or_else(|| {
        ApiError::unauthorized("malformed Authorization header; expected 'Bearer <API key>'")
    })?;
    let now = stack.now_ms();
    let principal = if token.starts_with("sess_") {
        let (principal, current) = session_caller(stack, token)?;
        return Ok((principal, Some(current)));
    } else if token.starts_with("sk_live_") || token.starts_with("sk_test_") {
        if !token.starts_with(stack.kind.key_prefix()) {
            return Err(ApiError::unauthorized(format!(
                "this key belongs to the other stack; the {} stack takes {}… keys",
                stack.kind.name(),
                stack.kind.key_prefix()
            )));
        }
        let hash = hash_secret(token);
        let key = stack
            .keys()
            .by_hash(&hash)
            .filter(|k| bool::from(k.hash.ct_eq(&hash)))
            .ok_or_else(|| ApiError::unauthorized("invalid API key"))?;
        if key.revoked_at.is_some() {
            return Err(ApiError::unauthorized("this API key was revoked"));
        }
        if key.expires_at.is_some_and(|at| at <= now) {
            return Err(ApiError::unauthorized("this API key has expired"));
        }
        if let Some(ip) = ip
            && !key.allows_ip(ip)
        {
            return Err(ApiError::forbidden(format!("requests from {ip} are not allowed for this key")));
        }
        Principal::Key(key)
    } else {
        return Err(ApiError::unauthorized("malformed API key; keys start with sk_live_ or sk_test_"));
    };
    organization_admits(stack, &principal)?;
    Ok((principal, None))
}

/// The member a session token (`sess_…`) acts for, as the API and the
/// dashboard's cookie both resolve it: the session must last and the
/// member's organization must exist and not be suspended.
pub(crate) fn session_caller(stack: &Stack, token: &str) -> Result<(Principal, CurrentSession), ApiError> {
    let (member, session) = stack
        .identity
        .session(token, stack.now_ms())
        .ok_or_else(|| ApiError::unauthorized("invalid or expired session"))?;
    let principal = Principal::Session(member);
    organization_admits(stack, &principal)?;
    Ok((principal, CurrentSession(session)))
}

fn organization_admits(stack: &Stack, principal: &Principal) -> Result<(), ApiError> {
    match stack.identity.organization(principal.organization()) {
        Some(org) if org.suspended => Err(ApiError::new(
            sika_api::ErrorCode::OrganizationSuspended,
            "this organization is suspended; contact the node operator",
        )),
        Some(_) => Ok(()),
        None => Err(ApiError::unauthorized("the organization of this credential no longer exists")),
    }
}

/// Resolves the caller, applies the per-credential rate limit, then checks
/// the operation's requirement.
pub(crate) async fn authenticate_layer(
    State(Guard { stack, requirements }): State<Guard>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let ip = caller_ip(&stack, peer, request.headers());
    let (principal, current) = match authenticate(&stack, request.headers(), ip) {
        Ok(found) => found,
        Err(e) => {
            return match limit_address(&stack, "unauthenticated", ip) {
                Ok(()) => e.into_response(),
                Err(refused) => *refused,
            };
        }
    };
    let caller = Caller {
        organization: principal.organization().to_string(),
        api_key_id: principal.api_key_id().map(str::to_string),
    };
    let limit_key = match &principal {
        Principal::Key(k) => k.id.clone(),
        Principal::Session(m) => m.id.clone(),
    };
    let mut response = match stack.rate_limiter.check(&limit_key, Instant::now()) {
        Ok(()) => match permitted(&requirements, &principal, &request) {
            Ok(()) => {
                request.extensions_mut().insert(principal);
                if let Some(current) = current {
                    request.extensions_mut().insert(current);
                }
                next.run(request).await
            }
            Err(e) => e.into_response(),
        },
        Err(retry_after) => {
            let mut response = ApiError::new(
                sika_api::ErrorCode::RateLimited,
                format!("more than {} requests per second with this key; slow down", stack.config.rate_limit),
            )
            .with_detail("retryAfter", retry_after)
            .into_response();
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            response
        }
    };
    response.extensions_mut().insert(caller);
    response
}

/// Who may call each operation behind the authentication layer: its
/// `security` alternatives (scope sets, any one of which admits the
/// caller), by path template and method, read from the generated OpenAPI
/// document. The document is the one statement of who may call what, and
/// checking it here, before the handler runs, answers a caller without the
/// scope or role `403 forbidden` before its body is read or validated. It
/// is the only check of an operation's scopes: a handler states its scopes
/// once, in its `security`, and does not check them again. It is the
/// router's own (the layer's state), so no router can run with another's
/// table or with none, and an operation it does not list is refused.
#[derive(Debug)]
pub(crate) struct Requirements {
    /// Path template, then method (upper case), to the scope sets that
    /// admit a caller: looked up by `&str`, with no key built per request.
    operations: HashMap<String, HashMap<String, Vec<Vec<String>>>>,
}

/// Why the API's security requirements could not be read from its document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequirementsError {
    #[error("the OpenAPI document cannot be read as JSON: {0}")]
    Document(#[from] serde_json::Error),
    /// Each `METHOD /path` behind authentication that states no requirement.
    #[error("these operations behind authentication state no security requirement: {}", .0.join(", "))]
    Unstated(Vec<String>),
}

impl Requirements {
    /// Reads every operation's requirement from `document`. An operation
    /// that states none (no `security`, an empty list, or an alternative
    /// `{}` needing no credential) is an error naming it: behind the authentication layer, saying nothing would
    /// leave the handler to check, and one that forgets would be open.
    pub(crate) fn from_document(
        document: &utoipa::openapi::OpenApi,
    ) -> Result<Requirements, RequirementsError> {
        Requirements::from_json(&serde_json::to_value(document)?)
    }

    /// `from_document` over the document as JSON.
    pub(crate) fn from_json(document: &serde_json::Value) -> Result<Requirements, RequirementsError> {
        let mut operations: HashMap<String, HashMap<String, Vec<Vec<String>>>> = HashMap::new();
        let mut unstated = Vec::new();
        for (path, item) in document["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                // A path item also holds what is not an operation (its
                // `parameters`, a `summary`).
                if !OPERATION_METHODS.contains(&method.as_str()) {
                    continue;
                }
                match alternatives(&operation["security"]) {
                    Some(alternatives) => {
                        operations
                            .entry(path.clone())
                            .or_default()
                            .insert(method.to_ascii_uppercase(), alternatives);
                    }
                    None => unstated.push(format!("{} {path}", method.to_ascii_uppercase())),
                }
            }
        }
        if !unstated.is_empty() {
            unstated.sort();
            return Err(RequirementsError::Unstated(unstated));
        }
        Ok(Requirements { operations })
    }

    /// The alternatives of the operation at `template` for `method`.
    fn of(&self, template: &str, method: &Method) -> Option<&[Vec<String>]> {
        self.operations.get(template)?.get(method.as_str()).map(Vec::as_slice)
    }

    /// `403 forbidden` unless `principal` meets one of the alternatives of
    /// the operation `method template`: the API's check (`permitted`), and
    /// the dashboard's before it shows a control or runs a form, so both
    /// follow the one statement of who may do what.
    pub(crate) fn admits(
        &self,
        principal: &Principal,
        method: &Method,
        template: &str,
    ) -> Result<(), ApiError> {
        Requirements::admits_by(self.of(template, method), principal, method, template)
    }

    /// `admits`, given the operation's alternatives as the table lists
    /// them (`None`: not listed).
    fn admits_by(
        alternatives: Option<&[Vec<String>]>,
        principal: &Principal,
        method: &Method,
        template: &str,
    ) -> Result<(), ApiError> {
        let Some(alternatives) = alternatives else {
            tracing::error!(template, %method, "an operation with no stated requirement was refused");
            return Err(ApiError::forbidden("this operation states no requirement, so nobody may call it"));
        };
        if alternatives.iter().any(|scopes| scopes.iter().all(|s| holds(principal, s))) {
            return Ok(());
        }
        let roles_only = alternatives.iter().flatten().all(|scope| scope.starts_with("session:"));
        Err(match (principal, roles_only) {
            (Principal::Key(_), true) => {
                ApiError::forbidden("this action needs an owner's or admin's session, not an API key")
            }
            (Principal::Session(_), true) => ApiError::forbidden("only an owner or admin may do this"),
            (_, false) => {
                let scope =
                    alternatives.iter().flatten().find(|s| !holds(principal, s)).cloned().unwrap_or_default();
                match principal {
                    Principal::Session(member) => ApiError::forbidden(format!(
                        "a member with the {} role cannot use '{scope}'",
                        crate::domain::principal::role_name(member.role)
                    )),
                    Principal::Key(_) => ApiError::forbidden(format!("this key lacks the '{scope}' scope")),
                }
            }
        })
    }
}

/// The keys of an OpenAPI path item that are operations.
const OPERATION_METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// An operation's `security` as scope sets, or `None` when it states no
/// requirement: no list, an empty one, or an alternative `{}` (no
/// credential needed), which no operation behind the authentication
/// layer can mean.
fn alternatives(security: &serde_json::Value) -> Option<Vec<Vec<String>>> {
    let stated = security.as_array().filter(|stated| !stated.is_empty())?;
    stated
        .iter()
        .map(|alternative| {
            let schemes = alternative.as_object().filter(|schemes| !schemes.is_empty())?;
            let scopes = schemes.values().flat_map(|scopes| scopes.as_array().cloned().unwrap_or_default());
            Some(scopes.filter_map(|scope| scope.as_str().map(str::to_string)).collect())
        })
        .collect()
}

/// The authentication layer's state: the stack, and who may call each of
/// the router's operations.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(crate) stack: Arc<Stack>,
    pub(crate) requirements: Arc<Requirements>,
}

/// `403 forbidden` unless the caller meets one of the operation's
/// alternatives. An operation the table does not list is refused: a route
/// that states no requirement never opens.
fn permitted(requirements: &Requirements, principal: &Principal, request: &Request) -> Result<(), ApiError> {
    // A HEAD runs the GET handler, so it needs what the GET needs.
    let method = if request.method() == Method::HEAD { Method::GET } else { request.method().clone() };
    let template = request.extensions().get::<MatchedPath>().map(MatchedPath::as_str);
    let Some(template) = template else {
        tracing::error!(%method, "a request with no matched route reached the requirements");
        return Err(ApiError::forbidden("this operation states no requirement, so nobody may call it"));
    };
    // The path's methods are looked up once, and the method once in them.
    let methods = requirements.operations.get(template);
    let alternatives = methods.and_then(|m| m.get(method.as_str())).map(Vec::as_slice);
    // A path the table lists, asked with a method it does not list, has no
    // handler for that method: the answer is 405, as the router's own.
    if methods.is_some() && alternatives.is_none() {
        return Err(ApiError::new(
            sika_api::ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {template}"),
        ));
    }
    Requirements::admits_by(alternatives, principal, &method, template)
}

fn holds(principal: &Principal, scope: &str) -> bool {
    // `session`: any member's own session, whatever the role (ending it,
    // their two-factor sign-in).
    if scope == "session" {
        return principal.member().is_some();
    }
    match (scope.strip_prefix("session:"), principal.member()) {
        (Some("owner"), Some(member)) => member.role == Role::Owner,
        (Some("admin"), Some(member)) => member.role == Role::Admin,
        (Some(_), _) => false,
        (None, _) => principal.require(scope).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use serde_json::json;
    use tower_service::Service;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer sk_test_x", "bearer sk_test_x", "BEARER sk_test_x", "bEaReR  sk_test_x "] {
            assert_eq!(bearer_token(value), Some("sk_test_x"), "{value}");
        }
        for value in ["Basic sk_test_x", "Bearer", "Bearer ", "Bearersk_test_x", "sk_test_x"] {
            assert_eq!(bearer_token(value), None, "{value}");
        }
    }

    /// Issue 29.7: an operation behind authentication that states no
    /// requirement is an error when the router is built, naming it.
    #[test]
    fn an_operation_that_states_no_requirement_is_an_error() {
        let operation = |security: Option<serde_json::Value>| match security {
            Some(security) => json!({ "operationId": "x", "security": security }),
            None => json!({ "operationId": "x" }),
        };
        let stated = json!({ "paths": { "/v1/things": {
            "get": operation(Some(json!([{ "bearer": ["things:read"] }]))),
            "post": operation(Some(json!([{ "bearer": [] }]))),
            "parameters": [],
        } } });
        assert!(Requirements::from_json(&stated).is_ok());
        for security in [None, Some(json!([])), Some(json!([{}])), Some(json!([{ "bearer": ["a"] }, {}]))] {
            let document = json!({ "paths": {
                "/v1/things": { "get": operation(Some(json!([{ "bearer": ["things:read"] }]))) },
                "/v1/things/{id}": { "delete": operation(security.clone()) },
            } });
            let refused = Requirements::from_json(&document).unwrap_err().to_string();
            assert!(refused.contains("DELETE /v1/things/{id}"), "{security:?}: {refused}");
            assert!(!refused.contains("GET"), "{refused}");
        }
    }

    /// Every operation the stacks serve behind authentication states its
    /// requirement, so the node starts.
    #[test]
    fn every_authenticated_operation_of_the_stacks_states_a_requirement() {
        let (_, document) = crate::http::routes::authenticated().split_for_parts();
        let requirements = Requirements::from_document(&document).unwrap();
        assert!(requirements.of("/v1/payouts", &Method::POST).is_some());
    }

    fn session(role: Role) -> Principal {
        Principal::Session(crate::domain::identity::Member {
            id: "mem_1".into(),
            organization: "org_1".into(),
            name: "Ama".into(),
            email: "ama@example.com".into(),
            role,
            created_at: 0,
            password_hash: None,
        })
    }

    /// Issue 29.7: a route the requirements do not list is refused, even
    /// to an owner; one they list admits whom it names.
    #[tokio::test]
    async fn a_route_the_requirements_do_not_list_is_refused() {
        let document = json!({ "paths": {
            "/v1/listed": { "get": { "security": [{ "bearer": ["session:owner"] }] } },
        } });
        let requirements = Arc::new(Requirements::from_json(&document).unwrap());
        let app = |principal: Principal| {
            let requirements = requirements.clone();
            Router::new()
                .route("/v1/listed", get(|| async { "ok" }))
                .route("/v1/unlisted", get(|| async { "ok" }))
                .route_layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                    let (requirements, principal) = (requirements.clone(), principal.clone());
                    async move {
                        match permitted(&requirements, &principal, &request) {
                            Ok(()) => next.run(request).await,
                            Err(e) => e.into_response(),
                        }
                    }
                }))
        };
        let status = |principal: Principal, path: &'static str| {
            let request = axum::http::Request::get(path).body(Body::empty()).unwrap();
            // A `Router` is always ready: no `poll_ready` needed first.
            async move { app(principal).call(request).await.unwrap().status().as_u16() }
        };
        assert_eq!(status(session(Role::Owner), "/v1/listed").await, 200);
        assert_eq!(status(session(Role::Viewer), "/v1/listed").await, 403);
        assert_eq!(status(session(Role::Owner), "/v1/unlisted").await, 403);
        // A listed path asked with a method it has no operation for is a
        // 405, still without running any handler.
        let delete = axum::http::Request::delete("/v1/listed").body(Body::empty()).unwrap();
        assert_eq!(app(session(Role::Owner)).call(delete).await.unwrap().status().as_u16(), 405);
    }
}
