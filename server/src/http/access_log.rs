//! One log line per API request, as CONTRACT.md pins it ("Logs"): the
//! request id, the stack, the method, the matched route template (never a
//! raw path, which may carry ids or a payer's link), the status, the
//! duration, the caller's address, the error code of an error answer, and
//! the organization once the caller is known; an internal error's line
//! (at error level) adds its `cause` and `causeAt`, the source line that
//! raised it. No body and no
//! header is logged, so no secret can reach a log line.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use crate::domain::principal::Caller;

/// Copies the matched route template onto the response, where the envelope
/// (outside the router, so it never sees the match) finds it.
pub(crate) async fn remember_route(request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// What one request line says.
pub(crate) struct Line<'a> {
    pub request_id: &'a str,
    pub stack: &'a str,
    pub method: &'a str,
    pub response: &'a axum::http::response::Parts,
    pub duration: std::time::Duration,
    /// The caller's address, when known.
    pub client: Option<std::net::IpAddr>,
    /// The error object's code, on an error answer.
    pub error: Option<sika_api::ErrorCode>,
    /// An internal error's cause and the line that raised it, which the
    /// body never carries.
    pub cause: Option<&'a crate::domain::error::Cause>,
}

/// The matched route template of an answered request, or `unmatched`.
pub(crate) fn route(response: &axum::http::response::Parts) -> &str {
    response.extensions.get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str)
}

pub(crate) fn log(line: &Line<'_>) {
    let route = route(line.response);
    let organization = line.response.extensions.get::<Caller>().map(|c| c.organization.as_str());
    let client = line.client.map(IpText::of);
    let client = client.as_ref().map(tracing::field::display);
    let error = line.error.map(sika_api::ErrorCode::as_str);
    let duration_ms = line.duration.as_secs_f64() * 1000.0;
    let status = line.response.status.as_u16();
    if let Some(cause) = line.cause {
        // The same line, at error level, with why and where.
        tracing::error!(
            requestId = line.request_id,
            stack = line.stack,
            method = line.method,
            route,
            status,
            durationMs = duration_ms,
            organizationId = organization,
            clientAddress = client,
            error,
            cause = %cause,
            causeAt = %cause.at,
            "request"
        );
        return;
    }
    // An absent organization leaves the field out of the line.
    tracing::info!(
        requestId = line.request_id,
        stack = line.stack,
        method = line.method,
        route,
        status,
        durationMs = duration_ms,
        organizationId = organization,
        clientAddress = client,
        error,
        "request"
    );
}

/// An address as text, made without the formatting machinery: written to
/// the line as one piece, where `IpAddr`'s `Display` wrote seven (about a
/// tenth of the line's cost).
struct IpText {
    bytes: [u8; IpText::CAPACITY],
    len: usize,
}

impl IpText {
    /// The longest text of an address (IPv6 with an IPv4 tail).
    const CAPACITY: usize = 45;

    fn of(ip: std::net::IpAddr) -> IpText {
        let mut text = IpText { bytes: [0; IpText::CAPACITY], len: 0 };
        match ip {
            std::net::IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        text.push(b".");
                    }
                    text.push(itoa::Buffer::new().format(octet).as_bytes());
                }
            }
            std::net::IpAddr::V6(v6) => {
                use std::io::Write as _;
                let mut cursor = std::io::Cursor::new(&mut text.bytes[..]);
                // Never longer than CAPACITY, so the write cannot fail.
                let _ = write!(cursor, "{v6}");
                text.len = usize::try_from(cursor.position()).unwrap_or(0);
            }
        }
        text
    }

    fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        self.bytes[self.len..end].copy_from_slice(bytes);
        self.len = end;
    }
}

impl std::fmt::Display for IpText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Only ASCII is ever written.
        f.write_str(std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::IpText;

    #[test]
    fn an_address_reads_as_its_display() {
        let addresses =
            ["0.0.0.0", "127.0.0.1", "10.20.255.9", "::1", "2001:db8::8a2e:370:7334", "::ffff:192.0.2.128"];
        for text in addresses.iter().copied().chain(["ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"]) {
            let ip: std::net::IpAddr = text.parse().unwrap();
            assert_eq!(IpText::of(ip).to_string(), ip.to_string(), "{text}");
        }
    }
}
