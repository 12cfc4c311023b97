//! What the dashboard's templates show (`templates/dashboard/`), and how a
//! page is sent: the checkout's shell and base (`http::pages`), the
//! dashboard's stylesheet named by hash in a Content-Security-Policy that
//! lets no script run at all, and the headers every page carries.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::session::{Signed, public_base};
use crate::domain::error::ApiError;
use crate::domain::stack::Stack;
use crate::domain::stack_kind::StackKind;
use crate::http::pages::shell::{ACCENT_DEFAULT, InlineStyle, Shell};

const STYLESHEET: &str = include_str!("../../../templates/dashboard/dashboard.css");

/// The header of every page: the stack, the way to the other stack's
/// dashboard, who is signed in and the navigation.
pub(crate) struct Frame {
    pub sandbox: bool,
    pub other_url: String,
    pub other_label: &'static str,
    pub who: Option<Who>,
    pub links: Vec<NavLink>,
    pub notice: Option<Notice>,
}

pub(crate) struct Who {
    pub name: String,
    pub organization: String,
    pub role: &'static str,
    pub csrf: String,
}

pub(crate) struct NavLink {
    pub id: &'static str,
    pub href: &'static str,
    pub label: &'static str,
    pub current: bool,
}

/// What an action did, or why it was refused.
pub(crate) struct Notice {
    pub kind: &'static str,
    pub role: &'static str,
    pub text: String,
    /// The page's status: 200, or the refusal's.
    pub status: StatusCode,
}

impl Notice {
    pub(crate) fn done(text: impl Into<String>) -> Notice {
        Notice { kind: "ok", role: "status", text: text.into(), status: StatusCode::OK }
    }

    /// The API's refusal, worded as the API words it.
    pub(crate) fn refused(error: &ApiError) -> Notice {
        let field = error.details.as_ref().and_then(|d| d.get("field")).and_then(|f| f.as_str());
        let text = match field {
            Some(field) if !error.message.starts_with(field) => format!("{field}: {}", error.message),
            _ => error.message.clone(),
        };
        Notice { kind: "error", role: "alert", text, status: crate::http::error::status_of(error) }
    }

    pub(crate) fn of<T>(result: &Result<T, ApiError>, done: impl FnOnce(&T) -> String) -> Notice {
        match result {
            Ok(value) => Notice::done(done(value)),
            Err(error) => Notice::refused(error),
        }
    }
}

const PAGES: [(&str, &str, &str); 8] = [
    ("home", "/dashboard", "Home"),
    ("balances", "/dashboard/balances", "Balances"),
    ("payments", "/dashboard/payments", "Payments"),
    ("checkout", "/dashboard/checkout", "Checkout"),
    ("disputes", "/dashboard/disputes", "Disputes"),
    ("team", "/dashboard/team", "Team"),
    ("developers", "/dashboard/developers", "Developers"),
    ("settings", "/dashboard/settings", "Settings"),
];

fn other_stack(stack: &Stack) -> (String, &'static str) {
    match stack.kind {
        StackKind::Sandbox => {
            (format!("{}/dashboard", public_base(stack, StackKind::Live)), "Go to the live dashboard")
        }
        StackKind::Live => {
            (format!("{}/dashboard", public_base(stack, StackKind::Sandbox)), "Go to test mode")
        }
    }
}

/// The frame of a page nobody is signed in to.
pub(crate) fn anonymous_frame(stack: &Stack, notice: Option<Notice>) -> Frame {
    let (other_url, other_label) = other_stack(stack);
    Frame {
        sandbox: stack.kind == StackKind::Sandbox,
        other_url,
        other_label,
        who: None,
        links: Vec::new(),
        notice,
    }
}

/// The frame of a signed-in page; `current` names it in the navigation.
pub(crate) fn frame(signed: &Signed, current: &str, notice: Option<Notice>) -> Frame {
    let member = signed.member();
    let organization = signed
        .stack
        .identity
        .organization(&member.organization)
        .map_or_else(|| member.organization.clone(), |o| o.name);
    let links =
        PAGES.iter().map(|&(id, href, label)| NavLink { id, href, label, current: id == current }).collect();
    Frame {
        who: Some(Who {
            name: member.name.clone(),
            organization,
            role: crate::domain::principal::role_name(member.role),
            csrf: signed.csrf(),
        }),
        links,
        ..anonymous_frame(&signed.stack, notice)
    }
}

/// The shell of a dashboard page titled `title`.
pub(crate) fn shell(stack: &Stack, title: &str) -> Shell {
    Shell::new(&format!("{title} · Sika"), stack.kind == StackKind::Sandbox, style())
}

fn style() -> InlineStyle {
    InlineStyle::new(STYLESHEET, ACCENT_DEFAULT)
}

/// No script runs, no plugin loads, styles only the page's own element
/// (by hash), images only from the page itself (the QR code is a `data:`
/// image), forms post only here, and no site may frame it.
fn content_security_policy(style: &InlineStyle) -> String {
    use sha2::Digest as _;
    let hash = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        sha2::Sha256::digest(style.as_str().as_bytes()),
    );
    format!(
        "default-src 'none'; script-src 'none'; style-src 'sha256-{hash}'; img-src 'self' data:; \
         form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
}

/// A rendered page with its status, the dashboard's headers and any
/// cookies to set.
pub(crate) fn send(status: StatusCode, page: &impl Template, cookies: Vec<HeaderValue>) -> Response {
    let html = match page.render() {
        Ok(html) => html,
        Err(e) => {
            tracing::error!(error = %e, "cannot render a dashboard page");
            return ApiError::internal_from(e).into_response();
        }
    };
    let policy = HeaderValue::from_str(&content_security_policy(&style()))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
    let mut response = (
        status,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        ],
        html,
    )
        .into_response();
    for cookie in cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `303 See Other` to `to`, setting `cookies`.
pub(crate) fn see_other(to: &str, cookies: Vec<HeaderValue>) -> Response {
    let mut response = axum::response::Redirect::to(to).into_response();
    for cookie in cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

#[derive(Template)]
#[template(path = "dashboard/refused.html")]
struct Refused {
    shell: Shell,
    frame: Frame,
    heading: &'static str,
    message: String,
}

/// A refusal as a page of its own, with the API's status and message.
pub(crate) fn refusal_page(stack: &Stack, error: &ApiError) -> Response {
    let status = crate::http::error::status_of(error);
    let heading = match status {
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::TOO_MANY_REQUESTS => "Slow down",
        _ => "Something went wrong",
    };
    let message = if status.is_server_error() {
        "The node could not do this; try again.".into()
    } else {
        error.message.clone()
    };
    let page =
        Refused { shell: shell(stack, heading), frame: anonymous_frame(stack, None), heading, message };
    send(status, &page, Vec::new())
}

/// An amount as the payer's page writes it: `GHS 1,250.00`.
pub(crate) fn money(currency: &str, amount: &str) -> String {
    format!("{currency} {}", crate::domain::render::group_thousands(amount))
}

/// A wire timestamp as people read it: `27 Nov 2026, 11:35 UTC`.
pub(crate) fn when(timestamp: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .map(|at| at.with_timezone(&chrono::Utc).format("%-d %b %Y, %H:%M UTC").to_string())
        .unwrap_or_else(|_| timestamp.to_string())
}

/// An enum as the API writes it (`"pending"`), for a page to show.
pub(super) fn name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_and_times_read_as_on_the_payers_page() {
        assert_eq!(money("GHS", "1250.00"), "GHS 1,250.00");
        assert_eq!(money("XOF", "2500"), "XOF 2,500");
        assert_eq!(when("2026-11-27T11:35:00.000Z"), "27 Nov 2026, 11:35 UTC");
    }

    #[test]
    fn the_policy_runs_no_script_and_names_the_style() {
        let policy = content_security_policy(&style());
        assert!(policy.contains("script-src 'none'") && policy.contains("style-src 'sha256-"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'") && policy.contains("form-action 'self'"));
    }
}
