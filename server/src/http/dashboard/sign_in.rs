//! Signing in and out: log-in (then the two-factor code when the member
//! has it on), an emailed invitation's link, an emailed password reset's
//! link, and log-out. Each goes through the API's `POST /v1/sessions` use
//! case (`members::create_session`: the same throttle, the same answers)
//! and keeps the session it opens in the cookie.

use std::sync::Arc;

use askama::Template;
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use sika_api::members::{CreateSession, PasswordResetRequest};

use super::session::{
    Anonymous, BROWSER_COOKIE, Pending, Posted, SESSION_COOKIE, browser_binding, cookie, csrf_token,
    set_cookie,
};
use super::views::{Frame, Notice, anonymous_frame, see_other, send, shell};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::members;
use crate::domain::stack::Stack;
use crate::http::pages::shell::Shell;

/// How long the browser cookie lasts: a day is ample to fill a form.
const BROWSER_COOKIE_MAX_AGE_S: i64 = 24 * 3600;

#[derive(Template)]
#[template(path = "dashboard/login.html")]
struct LogInPage {
    shell: Shell,
    frame: Frame,
    csrf: String,
    email: String,
    /// The two-factor step: the pending sign-in's ticket.
    ticket: Option<String>,
    /// Password resets are offered only when the node sends email.
    can_reset: bool,
}

#[derive(Template)]
#[template(path = "dashboard/password.html")]
struct PasswordPage {
    shell: Shell,
    frame: Frame,
    csrf: String,
    heading: &'static str,
    lead: &'static str,
    action: String,
    button: &'static str,
    ask_code: bool,
}

/// The CSRF token of a sign-in form and the browser cookie to set first
/// when the browser has none.
fn binding(stack: &Stack, headers: &HeaderMap) -> (String, Vec<HeaderValue>) {
    let (browser, fresh) = browser_binding(headers);
    let cookies = if fresh {
        vec![set_cookie(stack, BROWSER_COOKIE, &browser, BROWSER_COOKIE_MAX_AGE_S)]
    } else {
        Vec::new()
    };
    (csrf_token(stack, &browser), cookies)
}

fn log_in_page(
    stack: &Stack,
    headers: &HeaderMap,
    email: String,
    ticket: Option<String>,
    notice: Option<Notice>,
) -> Response {
    let (csrf, cookies) = binding(stack, headers);
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let page = LogInPage {
        shell: shell(stack, "Log in"),
        frame: anonymous_frame(stack, notice),
        csrf,
        email,
        ticket,
        can_reset: stack.mailer().is_some(),
    };
    send(status, &page, cookies)
}

/// The session's cookie, and on to the home page.
fn signed_in(stack: &Stack, session: &sika_api::members::Session) -> Response {
    let max_age = i64::try_from(stack.config.session_ttl.as_secs()).unwrap_or(i64::MAX);
    see_other("/dashboard", vec![set_cookie(stack, SESSION_COOKIE, &session.token, max_age)])
}

fn needs_code(error: &ApiError) -> bool {
    error.details.as_ref().is_some_and(|d| d["reason"] == crate::domain::totp::REASON_REQUIRED)
}

async fn open(
    stack: &Arc<Stack>,
    ip: Option<std::net::IpAddr>,
    body: CreateSession,
) -> ApiResult<sika_api::members::Session> {
    let ttl_ms = i64::try_from(stack.config.session_ttl.as_millis()).unwrap_or(i64::MAX);
    members::create_session(stack.identity.clone(), ip, body, stack.now_ms(), ttl_ms).await
}

/// A code with a dash or letters is a recovery code.
fn second_factor(body: &mut CreateSession, code: String) {
    if code.chars().all(|c| c.is_ascii_digit()) {
        body.code = Some(code);
    } else {
        body.recovery_code = Some(code);
    }
}

pub(super) async fn log_in_form(State(stack): State<Arc<Stack>>, headers: HeaderMap) -> Response {
    if cookie(&headers, SESSION_COOKIE)
        .is_some_and(|token| stack.identity.session(token, stack.now_ms()).is_some())
    {
        return see_other("/dashboard", Vec::new());
    }
    log_in_page(&stack, &headers, String::new(), None, None)
}

/// The password, then (when two-factor sign-in is on) the code: the email
/// and password wait on the node behind a ticket while the code is asked.
pub(super) async fn log_in(
    State(stack): State<Arc<Stack>>,
    Extension(pending): Extension<Arc<Pending>>,
    headers: HeaderMap,
    Anonymous { fields, ip }: Anonymous,
) -> Response {
    let now = stack.now_ms();
    let ticket = fields.get("ticket").map(str::to_string);
    let mut body = CreateSession::default();
    match ticket.as_deref().and_then(|ticket| pending.get(ticket, now)) {
        Some(waiting) => {
            (body.email, body.password) = (Some(waiting.email), Some(waiting.password));
            second_factor(&mut body, fields.text("code"));
        }
        None if ticket.is_some() => {
            let notice = Notice::refused(&ApiError::unauthorized("this sign-in took too long; log in again"));
            return log_in_page(&stack, &headers, String::new(), None, Some(notice));
        }
        None => {
            (body.email, body.password) =
                (Some(fields.text("email")), fields.get("password").map(str::to_string))
        }
    }
    let (email, password) =
        (body.email.clone().unwrap_or_default(), body.password.clone().unwrap_or_default());
    match open(&stack, ip, body).await {
        Ok(session) => {
            if let Some(ticket) = &ticket {
                pending.end(ticket);
            }
            signed_in(&stack, &session)
        }
        Err(e) if needs_code(&e) && ticket.is_none() => {
            let held = pending.hold(email.clone(), password, now);
            let notice = held.is_none().then(|| Notice::refused(&ApiError::unavailable()));
            log_in_page(&stack, &headers, email, held, notice)
        }
        Err(e) => log_in_page(&stack, &headers, email, ticket, Some(Notice::refused(&e))),
    }
}

fn password_page(
    stack: &Stack,
    headers: &HeaderMap,
    invitation: bool,
    token: &str,
    notice: Option<Notice>,
) -> Response {
    let (csrf, cookies) = binding(stack, headers);
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let (heading, lead, kind, button) = if invitation {
        (
            "Join your team",
            "Choose the password you will log in with.",
            "invitations",
            "Set password and log in",
        )
    } else {
        (
            "Choose a new password",
            "The link you followed lets you set a new password once.",
            "reset",
            "Set new password",
        )
    };
    let page = PasswordPage {
        shell: shell(stack, heading),
        frame: anonymous_frame(stack, notice),
        csrf,
        heading,
        lead,
        action: format!("/dashboard/{kind}/{token}"),
        button,
        ask_code: !invitation,
    };
    send(status, &page, cookies)
}

pub(super) async fn invitation_form(
    State(stack): State<Arc<Stack>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    password_page(&stack, &headers, true, &token, None)
}

/// An emailed invitation's link: sets the password and signs in.
pub(super) async fn accept_invitation(
    State(stack): State<Arc<Stack>>,
    headers: HeaderMap,
    Path(token): Path<String>,
    Anonymous { fields, ip }: Anonymous,
) -> Response {
    let body = CreateSession {
        invitation: Some(token.clone()),
        password: fields.get("password").map(str::to_string),
        ..CreateSession::default()
    };
    match open(&stack, ip, body).await {
        Ok(session) => signed_in(&stack, &session),
        Err(e) => password_page(&stack, &headers, true, &token, Some(Notice::refused(&e))),
    }
}

pub(super) async fn reset_form(
    State(stack): State<Arc<Stack>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    password_page(&stack, &headers, false, &token, None)
}

/// An emailed reset's link: the new password (and the code when
/// two-factor sign-in is on), then signed in.
pub(super) async fn use_reset(
    State(stack): State<Arc<Stack>>,
    headers: HeaderMap,
    Path(token): Path<String>,
    Anonymous { fields, ip }: Anonymous,
) -> Response {
    let mut body = CreateSession {
        reset: Some(token.clone()),
        password: fields.get("password").map(str::to_string),
        ..CreateSession::default()
    };
    let code = fields.text("code");
    if !code.is_empty() {
        second_factor(&mut body, code);
    }
    match open(&stack, ip, body).await {
        Ok(session) => signed_in(&stack, &session),
        Err(e) => password_page(&stack, &headers, false, &token, Some(Notice::refused(&e))),
    }
}

/// "Forgot your password?": the API's `POST /v1/sessions/password-reset`.
pub(super) async fn request_reset(
    State(stack): State<Arc<Stack>>,
    headers: HeaderMap,
    Anonymous { fields, .. }: Anonymous,
) -> Response {
    let ttl_ms = members::reset_ttl_ms(stack.config.time_scale);
    let body = PasswordResetRequest { email: fields.text("email") };
    let result = members::request_password_reset(
        &stack.identity,
        stack.mailer().as_ref(),
        &body,
        stack.now_ms(),
        ttl_ms,
    );
    let notice = Notice::of(&result, |_| {
        "If this email is a member's, a link to set a new password is on its way.".into()
    });
    log_in_page(&stack, &headers, String::new(), None, Some(notice))
}

/// `GET /dashboard/logout`: a page with the button (a GET changes nothing).
pub(super) async fn log_out_form(signed: super::session::Signed) -> Response {
    let page = super::pages::confirm_log_out(&signed);
    send(StatusCode::OK, &page, Vec::new())
}

/// Ends the session (the API's `DELETE /v1/sessions/current`) and the cookie.
pub(super) async fn log_out(Posted { signed, .. }: Posted) -> Response {
    let stack = &signed.stack;
    let ended = members::end_session(&stack.identity, signed.member(), &signed.session.0, stack.now_ms());
    if let Err(e) = ended {
        return super::views::refusal_page(stack, &e);
    }
    see_other("/dashboard/login", vec![set_cookie(stack, SESSION_COOKIE, "", 0)])
}
