//! The merchant dashboard, served by each stack's listener at `/dashboard`
//! (CONTRACT.md, "The merchant dashboard"): server-rendered pages from the
//! same auto-escaping templates and base as the payer's page, plain forms
//! that work without any script, and no script at all on the pages.
//!
//! It adds no rule of its own: signing in is the API's `POST /v1/sessions`
//! use case (its throttle included), every page reads and acts through the
//! API's use cases, and what a member may see or do is asked of the API's
//! requirements (the OpenAPI document's `security`) by the operation each
//! part stands for. `session` holds the cookie, CSRF and sign-in rules,
//! `sign_in` the sign-in pages, `pages` the signed-in ones (`payments`,
//! `balances` and `checkout` theirs), `views` what
//! every page shares.

use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::domain::stack::Stack;
use crate::http::auth::Requirements;

mod balances;
mod checkout;
mod disputes;
mod pages;
mod payments;
mod session;
mod sign_in;
mod views;
mod webhooks;

/// The dashboard's routes; `requirements` is the API router's own table.
pub(crate) fn router(requirements: Arc<Requirements>) -> Router<Arc<Stack>> {
    Router::new()
        .route("/dashboard", get(pages::home))
        .route("/dashboard/login", get(sign_in::log_in_form).post(sign_in::log_in))
        .route("/dashboard/logout", get(sign_in::log_out_form).post(sign_in::log_out))
        .route("/dashboard/reset", post(sign_in::request_reset))
        .route("/dashboard/reset/{token}", get(sign_in::reset_form).post(sign_in::use_reset))
        .route(
            "/dashboard/invitations/{token}",
            get(sign_in::invitation_form).post(sign_in::accept_invitation),
        )
        .route("/dashboard/balances", get(balances::page))
        .route("/dashboard/balances/statement", get(balances::statement))
        .route("/dashboard/exports/balance-transactions.csv", get(balances::export_balance_transactions))
        .route("/dashboard/exports/payouts.csv", get(balances::export_payouts))
        .route("/dashboard/exports/collections.csv", get(balances::export_collections))
        .route("/dashboard/exports/refunds.csv", get(balances::export_refunds))
        .route("/dashboard/checkout", get(checkout::list))
        .route("/dashboard/checkout/{kind}", post(checkout::create))
        .route("/dashboard/checkout/{kind}/{id}", get(checkout::detail))
        .route("/dashboard/checkout/{kind}/{id}/close", post(checkout::close))
        .route("/dashboard/payments", get(payments::list))
        .route("/dashboard/payments/search", get(payments::find))
        .route("/dashboard/payments/{kind}/{id}", get(payments::detail))
        .route("/dashboard/payments/collections/{id}/refund", post(payments::refund))
        .route("/dashboard/disputes", get(disputes::list))
        .route("/dashboard/disputes/{id}", get(disputes::detail))
        .route("/dashboard/disputes/{id}/messages", post(disputes::reply))
        .route("/dashboard/disputes/{id}/accept", get(disputes::confirm_accept).post(disputes::accept))
        .route("/dashboard/files/{id}", get(disputes::file))
        .route("/dashboard/team", get(pages::team).post(pages::invite))
        .route("/dashboard/team/{id}/role", post(pages::change_role))
        .route("/dashboard/team/{id}/remove", post(pages::remove))
        .route("/dashboard/developers", get(pages::developers))
        .route("/dashboard/developers/keys", post(pages::create_key))
        .route("/dashboard/developers/keys/{id}/revoke", post(pages::revoke_key))
        .route("/dashboard/developers/webhooks/{id}/test", post(pages::test_endpoint))
        .route("/dashboard/developers/webhooks/{id}/enable", post(pages::enable_endpoint))
        .route("/dashboard/developers/webhooks/{id}", get(webhooks::endpoint))
        .route("/dashboard/developers/webhooks/{id}/secret", post(webhooks::secret))
        .route("/dashboard/developers/deliveries/{id}/retry", post(webhooks::retry))
        .route("/dashboard/developers/requests", get(webhooks::request))
        .route("/dashboard/settings", get(pages::settings))
        .route("/dashboard/settings/totp", post(pages::totp_start))
        .route("/dashboard/settings/totp/confirm", post(pages::totp_confirm))
        .route("/dashboard/settings/totp/disable", post(pages::totp_disable))
        .route("/dashboard/settings/representative", post(pages::set_representative))
        .layer(Extension(requirements))
        .layer(Extension(Arc::new(session::Pending::default())))
}
