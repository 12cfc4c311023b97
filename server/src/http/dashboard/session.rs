//! Who is signed in to the dashboard, and the rules every form obeys.
//!
//! - The session is the API's own (`sess_…`, from `members::create_session`),
//!   kept in an `HttpOnly`, `SameSite=Strict` cookie scoped to `/dashboard`
//!   (`Secure` when the stack's public URL is https). It is resolved by
//!   `auth::session_caller`, as a bearer session is.
//! - Every form carries a CSRF token: an HMAC, under the node's secret, of
//!   the session token (or, before signing in, of a random browser cookie),
//!   checked on every POST before anything else is read.
//! - What a member may do is asked of the API's `Requirements` (the
//!   OpenAPI document's `security`), by the operation the page stands for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::domain::error::ApiError;
use crate::domain::identity::Member;
use crate::domain::principal::{CurrentSession, Principal};
use crate::domain::stack::Stack;
use crate::domain::stack_kind::StackKind;
use crate::http::auth::Requirements;

/// The session cookie.
pub(crate) const SESSION_COOKIE: &str = "sika_session";
/// A random value a browser holds before it signs in, which the sign-in
/// forms' CSRF tokens are bound to.
pub(crate) const BROWSER_COOKIE: &str = "sika_browser";
/// The largest form body read.
const FORM_BYTES_MAX: usize = 64 * 1024;
/// How long a sign-in waits for its two-factor code.
const PENDING_TTL_MS: i64 = 5 * 60 * 1000;
/// Sign-ins waiting for their code at once, per node.
const PENDING_COUNT_MAX: usize = 10_000;

/// The value of cookie `name` in the request.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// `Set-Cookie` for `name`: the dashboard's attributes, `Secure` behind
/// https; `max_age_s` 0 deletes it.
pub(crate) fn set_cookie(stack: &Stack, name: &str, value: &str, max_age_s: i64) -> HeaderValue {
    let secure = if https(stack) { "; Secure" } else { "" };
    let text =
        format!("{name}={value}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}");
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("sika_invalid=; Max-Age=0"))
}

/// Whether the stack's public URL is https.
pub(crate) fn https(stack: &Stack) -> bool {
    public_base(stack, stack.kind).starts_with("https://")
}

/// Where people reach the `kind` stack of this node.
pub(crate) fn public_base(stack: &Stack, kind: StackKind) -> String {
    crate::domain::emails::messages::public_base(&stack.config, kind)
}

/// The CSRF token of forms bound to `binding` (a session token or the
/// browser cookie).
pub(crate) fn csrf_token(stack: &Stack, binding: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&stack.identity.secret()) else {
        return String::new();
    };
    mac.update(b"sika dashboard form\0");
    mac.update(binding.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

fn csrf_holds(stack: &Stack, binding: &str, given: Option<&str>) -> bool {
    let expected = csrf_token(stack, binding);
    given.is_some_and(|given| !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(given.as_bytes())))
}

/// A refusal a page shows instead of running an action.
pub(crate) fn refused_csrf() -> ApiError {
    ApiError::forbidden(
        "this form has expired or did not come from this dashboard; reload the page and try again",
    )
}

/// A signed-in member on a dashboard page.
pub(crate) struct Signed {
    pub stack: Arc<Stack>,
    pub principal: Principal,
    pub session: CurrentSession,
    token: String,
    access: Arc<Requirements>,
}

impl Signed {
    pub(crate) fn member(&self) -> &Member {
        match &self.principal {
            Principal::Session(member) => member,
            // `session_caller` only gives sessions.
            Principal::Key(_) => unreachable!("a dashboard session is a member's"),
        }
    }

    /// Whether the API would let this member call `method template`.
    pub(crate) fn can(&self, method: &Method, template: &str) -> bool {
        self.access.admits(&self.principal, method, template).is_ok()
    }

    /// The API's `403` unless this member may call `method template`.
    pub(crate) fn admit(&self, method: &Method, template: &str) -> Result<(), ApiError> {
        self.access.admits(&self.principal, method, template)
    }

    /// The API's statement of who may call what.
    pub(crate) fn access(&self) -> &Requirements {
        &self.access
    }

    /// The token every form of this session carries.
    pub(crate) fn csrf(&self) -> String {
        csrf_token(&self.stack, &self.token)
    }
}

impl FromRequestParts<Arc<Stack>> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, stack: &Arc<Stack>) -> Result<Self, Response> {
        let access = parts.extensions.get::<Arc<Requirements>>().cloned().ok_or_else(|| {
            ApiError::internal_from("the dashboard's router has no requirements").into_response()
        })?;
        let to_login = || Redirect::to("/dashboard/login").into_response();
        let token = cookie(&parts.headers, SESSION_COOKIE).ok_or_else(to_login)?.to_string();
        match crate::http::auth::session_caller(stack, &token) {
            Ok((principal, session)) => {
                Ok(Signed { stack: stack.clone(), principal, session, token, access })
            }
            Err(e) if e.code == sika_api::ErrorCode::Unauthorized => Err(to_login()),
            Err(e) => Err(super::views::refusal_page(stack, &e)),
        }
    }
}

/// A form's fields, in order (a checkbox list repeats its name).
#[derive(Default)]
pub(crate) struct Fields(Vec<(String, String)>);

impl Fields {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// The field trimmed, `""` when absent.
    pub(crate) fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().trim().to_string()
    }

    pub(crate) fn all(&self, name: &str) -> Vec<String> {
        self.0.iter().filter(|(key, _)| key == name).map(|(_, value)| value.clone()).collect()
    }
}

async fn read_fields(body: axum::body::Body) -> Result<Fields, ApiError> {
    let bytes = axum::body::to_bytes(body, FORM_BYTES_MAX)
        .await
        .map_err(|_| ApiError::validation("form", format!("must be at most {FORM_BYTES_MAX} bytes")))?;
    Ok(Fields(form_urlencoded::parse(&bytes).into_owned().collect()))
}

/// A signed-in member's form, its CSRF token checked.
pub(crate) struct Posted {
    pub signed: Signed,
    pub fields: Fields,
}

impl FromRequest<Arc<Stack>> for Posted {
    type Rejection = Response;

    async fn from_request(request: Request, stack: &Arc<Stack>) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let signed = Signed::from_request_parts(&mut parts, stack).await?;
        let fields = read_fields(body).await.map_err(|e| super::views::refusal_page(stack, &e))?;
        if !csrf_holds(stack, &signed.token, fields.get("csrf")) {
            return Err(super::views::refusal_page(stack, &refused_csrf()));
        }
        Ok(Posted { signed, fields })
    }
}

/// A file sent with a `multipart/form-data` form.
pub(crate) struct UploadedFile {
    pub name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// A signed-in member's `multipart/form-data` form (one that sends files),
/// its CSRF token checked before any of it is used. A file input left
/// empty is no file.
pub(crate) struct Uploaded {
    pub signed: Signed,
    pub fields: Fields,
    pub files: Vec<UploadedFile>,
}

async fn read_multipart(mut form: axum::extract::Multipart) -> Result<(Fields, Vec<UploadedFile>), ApiError> {
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        ApiError::validation("form", format!("cannot be read: {}", e.body_text()))
    };
    let (mut fields, mut files) = (Vec::new(), Vec::new());
    while let Some(part) = form.next_field().await.map_err(unreadable)? {
        let name = part.name().unwrap_or_default().to_string();
        match part.file_name().map(str::to_string) {
            Some(file_name) => {
                let content_type = part.content_type().map(str::to_string);
                let bytes = part.bytes().await.map_err(unreadable)?.to_vec();
                if !(file_name.is_empty() && bytes.is_empty()) {
                    files.push(UploadedFile { name: file_name, content_type, bytes });
                }
            }
            None => fields.push((name, part.text().await.map_err(unreadable)?)),
        }
    }
    Ok((Fields(fields), files))
}

impl FromRequest<Arc<Stack>> for Uploaded {
    type Rejection = Response;

    async fn from_request(request: Request, stack: &Arc<Stack>) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let signed = Signed::from_request_parts(&mut parts, stack).await?;
        let request = Request::from_parts(parts, body);
        let refused = |e: &ApiError| super::views::refusal_page(stack, e);
        let form = axum::extract::Multipart::from_request(request, stack)
            .await
            .map_err(|e| refused(&ApiError::bad_request(e.body_text())))?;
        let (fields, files) = read_multipart(form).await.map_err(|e| refused(&e))?;
        if !csrf_holds(stack, &signed.token, fields.get("csrf")) {
            return Err(refused(&refused_csrf()));
        }
        Ok(Uploaded { signed, fields, files })
    }
}

/// A sign-in form (no session yet), its CSRF token checked against the
/// browser cookie; `ip` is the caller's address for the log-in throttle.
pub(crate) struct Anonymous {
    pub fields: Fields,
    pub ip: Option<std::net::IpAddr>,
}

impl FromRequest<Arc<Stack>> for Anonymous {
    type Rejection = Response;

    async fn from_request(request: Request, stack: &Arc<Stack>) -> Result<Self, Response> {
        let (parts, body) = request.into_parts();
        let peer = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0);
        let ip = crate::http::auth::caller_ip(stack, peer, &parts.headers);
        let fields = read_fields(body).await.map_err(|e| super::views::refusal_page(stack, &e))?;
        let browser = cookie(&parts.headers, BROWSER_COOKIE).unwrap_or_default();
        if browser.is_empty() || !csrf_holds(stack, browser, fields.get("csrf")) {
            return Err(super::views::refusal_page(stack, &refused_csrf()));
        }
        Ok(Anonymous { fields, ip })
    }
}

/// The browser cookie of a sign-in page: the request's, or a new one to set.
pub(crate) fn browser_binding(headers: &HeaderMap) -> (String, bool) {
    match cookie(headers, BROWSER_COOKIE) {
        Some(value) => (value.to_string(), false),
        None => (crate::domain::identity::secret_token("brw_"), true),
    }
}

/// Sign-ins whose password was right and that wait for the member's
/// two-factor code: the email and password stay on the node (never in the
/// page), behind a random ticket, for `PENDING_TTL_MS`; the code is then
/// checked with them through the API's log-in, throttle included.
#[derive(Default)]
pub(crate) struct Pending(Mutex<HashMap<String, PendingLogIn>>);

#[derive(Clone)]
pub(crate) struct PendingLogIn {
    pub email: String,
    pub password: String,
    expires_at: i64,
}

impl Pending {
    /// A ticket for this sign-in; `None` when too many wait already.
    pub(crate) fn hold(&self, email: String, password: String, now: i64) -> Option<String> {
        let mut held = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.retain(|_, pending| pending.expires_at > now);
        if held.len() >= PENDING_COUNT_MAX {
            return None;
        }
        let ticket = crate::domain::identity::secret_token("tfa_");
        held.insert(ticket.clone(), PendingLogIn { email, password, expires_at: now + PENDING_TTL_MS });
        Some(ticket)
    }

    pub(crate) fn get(&self, ticket: &str, now: i64) -> Option<PendingLogIn> {
        let held = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.get(ticket).filter(|pending| pending.expires_at > now).cloned()
    }

    pub(crate) fn end(&self, ticket: &str) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(ticket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_exact_name() {
        let mut headers = HeaderMap::new();
        headers
            .insert(header::COOKIE, HeaderValue::from_static("a=1; sika_session=sess_x; sika_sessionx=no"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("sess_x"));
        assert_eq!(cookie(&headers, "sika_browser"), None);
        headers.insert(header::COOKIE, HeaderValue::from_static("sika_session="));
        assert_eq!(cookie(&headers, SESSION_COOKIE), None);
    }

    #[test]
    fn pending_sign_ins_expire_and_end() {
        let pending = Pending::default();
        let ticket = pending.hold("a@b.c".into(), "pw".into(), 0).unwrap();
        assert_eq!(pending.get(&ticket, 1).unwrap().email, "a@b.c");
        assert!(pending.get(&ticket, PENDING_TTL_MS).is_none(), "expired");
        pending.end(&ticket);
        assert!(pending.get(&ticket, 1).is_none());
        assert!(pending.get("tfa_unknown", 1).is_none());
    }
}
