//! The HTTP layer: routers and handlers (`routes/` public, `admin/`
//! operator), extractors, middleware, the hosted pages and the OpenAPI
//! documents. Handlers parse, call `domain`, and render its views.

pub mod admin;
pub mod auth;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod health;
pub mod openapi;
pub mod pages;
pub mod routes;
