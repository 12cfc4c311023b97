//! The HTTP layer: routers and handlers (`routes/` public, `admin/`
//! operator), extractors, middleware, the hosted pages and the OpenAPI
//! documents. Handlers parse, call `domain`, and render its views.

pub(crate) mod access_log;
pub(crate) mod admin;
pub(crate) mod auth;
pub(crate) mod dashboard;
pub(crate) mod envelope;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod found;
#[cfg(test)]
mod fuzz;
pub(crate) mod health;
pub(crate) mod metrics;
pub mod openapi;
pub(crate) mod pages;
pub(crate) mod rails;
pub(crate) mod routes;
