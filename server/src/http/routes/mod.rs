//! The public API of one stack: one router per resource, merged here, with
//! authentication on every matched route and the envelope around it all.

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::domain::stack::Stack;
use crate::http::auth::{Guard, Requirements, authenticate_layer};
use crate::http::envelope::envelope;
use crate::http::openapi::tagged;

mod accounts;
mod capabilities;
pub(crate) mod checkout;
mod collections;
pub(crate) mod conversions;
pub(crate) mod disputes;
pub(crate) mod exports;
pub(crate) mod files;
mod keys;
mod members;
pub(crate) mod movements;
pub(crate) mod openapi;
pub(crate) mod orders;
mod payment_links;
mod payment_pages;
pub(crate) mod payouts;
mod rates;
mod recipients;
mod refunds;
mod representative;
mod requests;
mod sessions;
mod simulations;
mod statements;
mod totp;
mod validation;
mod virtual_accounts;
mod webhooks;

/// The routes whose operations the OpenAPI document is generated from: a
/// route added here cannot be served without its operation in the document.
/// Each resource's operations are grouped under its tag.
/// Resources move here from the hand-written table in `crate::http::openapi` one
/// at a time.
pub(crate) fn documented() -> OpenApiRouter<Arc<Stack>> {
    authenticated().merge(open())
}

/// The routes that need no credentials (the authentication layer is not
/// on them).
fn open() -> OpenApiRouter<Arc<Stack>> {
    tagged("sessions", sessions::open_router())
}

/// The routes behind the authentication layer.
pub(crate) fn authenticated() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .merge(tagged("payouts", payouts::router()))
        .merge(tagged("collections", collections::router()))
        .merge(tagged("orders", orders::router()))
        .merge(tagged("conversions", conversions::router()))
        .merge(tagged("rates", rates::router()))
        .merge(tagged("webhooks", webhooks::router()))
        .merge(tagged("recipients", recipients::router()))
        .merge(tagged("virtual-accounts", virtual_accounts::router()))
        .merge(tagged("keys", keys::router()))
        .merge(tagged("requests", requests::router()))
        .merge(tagged("accounts", accounts::router()))
        .merge(tagged("payment-pages", payment_pages::router()))
        .merge(tagged("payment-links", payment_links::router()))
        .merge(tagged("files", files::router()))
        .merge(tagged("organization", representative::router()))
        .merge(tagged("capabilities", capabilities::router()))
        .merge(tagged("disputes", disputes::router()))
        .merge(tagged("refunds", refunds::router()))
        .merge(tagged("statements", statements::router()))
        .merge(tagged("exports", exports::router()))
        .merge(tagged("validation", validation::router()))
        .merge(tagged("simulations", simulations::router()))
        .merge(tagged("sessions", sessions::router()))
        .merge(tagged("members", members::router()))
        .merge(tagged("members", totp::router()))
}

/// The stack's router. An operation behind authentication that states no
/// requirement is an error here, so the node does not start with it.
pub(crate) fn app(
    stack: Arc<Stack>,
    health: Arc<crate::http::health::Health>,
) -> Result<Router, crate::http::auth::RequirementsError> {
    let (documented, document) = authenticated().split_for_parts();
    let requirements = Arc::new(Requirements::from_document(&document)?);
    let guard = Guard { stack: stack.clone(), requirements: requirements.clone() };
    let (open, _) = open().split_for_parts();
    let authenticated =
        Router::new().merge(documented).route_layer(from_fn_with_state(guard, authenticate_layer));
    Ok(Router::new()
        .merge(authenticated)
        .merge(open)
        .merge(openapi::router())
        // The hosted checkout pages: public, no key.
        .merge(
            checkout::router()
                .route_layer(from_fn_with_state(stack.clone(), crate::http::auth::limit_anonymous)),
        )
        // The merchant dashboard: a session cookie, the same requirements.
        .merge(
            crate::http::dashboard::router(requirements)
                .route_layer(from_fn_with_state(stack.clone(), crate::http::auth::limit_anonymous)),
        )
        .with_state(stack.clone())
        // Liveness and readiness: no key.
        .route_layer(from_fn_with_state(stack.clone(), crate::http::metrics::count))
        .merge(crate::http::health::router(health))
        .layer(CatchPanicLayer::new())
        .layer(from_fn_with_state(Some(stack), envelope)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every `(method, path)` a `.route(…)` call in `source` serves.
    fn routes_in(source: &str) -> Vec<(String, String)> {
        let method = regex_lite::Regex::new(r"\b(get|post|put|patch|delete)\(").unwrap();
        let mut found = Vec::new();
        for (start, _) in source.match_indices(".route(\"") {
            let rest = &source[start + ".route(\"".len()..];
            let Some(end) = rest.find('"') else { continue };
            let path = &rest[..end];
            // The call's text, up to its closing parenthesis.
            let mut depth = 1;
            let call: String = rest
                .chars()
                .take_while(|c| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth > 0
                })
                .collect();
            for m in method.captures_iter(&call) {
                found.push((m[1].to_string(), path.to_string()));
            }
        }
        found
    }

    /// A route cannot be served without its operation in the public
    /// document: generated routers (`documented`) are documented by
    /// construction, and a plain `/v1/` route added in this folder fails
    /// here.
    #[test]
    fn every_public_route_is_in_the_document() {
        let document = crate::http::openapi::document();
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http/routes");
        let mut missing = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.ends_with("mod.rs") {
                continue; // this file: the example in the test below
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for (method, route) in routes_in(&source) {
                seen.insert((method.clone(), route.clone()));
                if !route.starts_with("/v1/") || route == "/v1/openapi.json" {
                    continue;
                }
                if !document["paths"][route.as_str()][method.as_str()].is_object() {
                    missing.insert(format!("{} {route} ({})", method.to_uppercase(), path.display()));
                }
            }
        }
        // The scan must read the routers, or the check could pass by reading
        // nothing: it finds the document's own route.
        assert!(seen.contains(&("get".to_string(), "/v1/openapi.json".to_string())), "{seen:?}");
        assert!(missing.is_empty(), "served but not in the OpenAPI document: {missing:#?}");
    }

    #[test]
    fn the_scan_sees_chained_methods() {
        let source = r#"Router::new().route("/v1/x", post(create).get(list)).route("/v1/x/{id}", get(read))"#;
        assert_eq!(
            routes_in(source),
            [("post", "/v1/x"), ("get", "/v1/x"), ("get", "/v1/x/{id}")]
                .map(|(m, p)| (m.to_string(), p.to_string()))
        );
    }
}
