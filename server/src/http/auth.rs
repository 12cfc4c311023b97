//! Who is calling: an API key of this stack or a team member's session.
//! The middleware resolves the caller once per request; handlers ask the
//! resulting `Principal` for scopes.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::domain::error::ApiError;
use crate::domain::identity::hash_secret;
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

/// The caller's address: the socket peer, or the first `X-Forwarded-For`
/// hop when the peer is a proxy named in the configuration.
pub(crate) fn caller_ip(stack: &Stack, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
    let peer = peer?.ip();
    if stack.config.trusted_proxies.contains(&peer)
        && let Some(forwarded) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok())
        && let Some(first) = forwarded.split(',').next().and_then(|s| s.trim().parse().ok())
    {
        return Some(first);
    }
    Some(peer)
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
    let mut current = None;
    let principal = if token.starts_with("sess_") {
        let (member, session) = stack
            .identity
            .session(token, now)
            .ok_or_else(|| ApiError::unauthorized("invalid or expired session"))?;
        current = Some(CurrentSession(session));
        Principal::Session(member)
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
            .key_by_hash(&hash)
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
    match stack.identity.organization(principal.organization()) {
        Some(org) if org.suspended => Err(ApiError::new(
            sika_api::ErrorCode::OrganizationSuspended,
            "this organization is suspended; contact the node operator",
        )),
        Some(_) => Ok((principal, current)),
        None => Err(ApiError::unauthorized("the organization of this credential no longer exists")),
    }
}

/// Resolves the caller, then applies the per-credential rate limit.
pub(crate) async fn authenticate_layer(
    State(stack): State<Arc<Stack>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let ip = caller_ip(&stack, peer, request.headers());
    let (principal, current) = match authenticate(&stack, request.headers(), ip) {
        Ok(found) => found,
        Err(e) => return e.into_response(),
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
        Ok(()) => {
            request.extensions_mut().insert(principal);
            if let Some(current) = current {
                request.extensions_mut().insert(current);
            }
            next.run(request).await
        }
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

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer sk_test_x", "bearer sk_test_x", "BEARER sk_test_x", "bEaReR  sk_test_x "] {
            assert_eq!(bearer_token(value), Some("sk_test_x"), "{value}");
        }
        for value in ["Basic sk_test_x", "Bearer", "Bearer ", "Bearersk_test_x", "sk_test_x"] {
            assert_eq!(bearer_token(value), None, "{value}");
        }
    }
}
