//! The public API of one stack: one router per resource, merged here, with
//! authentication on every matched route and the envelope around it all.

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use tower_http::catch_panic::CatchPanicLayer;

use crate::auth::authenticate_layer;
use crate::envelope::envelope;
use crate::stack::Stack;

mod accounts;
mod capabilities;
mod checkout;
mod collections;
pub mod conversions;
mod disputes;
mod files;
mod keys;
pub mod openapi;
pub mod orders;
mod payment_links;
mod payment_pages;
pub mod payouts;
mod rates;
mod recipients;
mod representative;
mod requests;
mod simulations;
mod validation;
mod virtual_accounts;
mod webhooks;

pub fn app(stack: Arc<Stack>) -> Router {
    let authenticated = Router::new()
        .merge(accounts::router())
        .merge(rates::router())
        .merge(conversions::router())
        .merge(representative::router())
        .merge(capabilities::router())
        .merge(validation::router())
        .merge(simulations::router())
        .merge(keys::router())
        .merge(requests::router())
        .merge(webhooks::router())
        .merge(payouts::router())
        .merge(orders::router())
        .merge(collections::router())
        .merge(recipients::router())
        .merge(virtual_accounts::router())
        .merge(payment_pages::router())
        .merge(payment_links::router())
        .merge(disputes::router())
        .merge(files::router())
        .route_layer(from_fn_with_state(stack.clone(), authenticate_layer));
    Router::new()
        .merge(authenticated)
        .merge(openapi::router())
        // The hosted checkout pages: public, no key.
        .merge(checkout::router())
        .with_state(stack.clone())
        .layer(CatchPanicLayer::new())
        .layer(from_fn_with_state(Some(stack), envelope))
}
