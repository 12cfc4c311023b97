//! # sika-server
//!
//! The node's HTTP side: the public API of the live and sandbox stacks (one
//! router per resource under `http/routes/`), authentication, rate limiting,
//! the request log, versioning and the admin API. Ledger rules live in
//! `sika-engine`; handlers parse, call `domain`, and render.
//!
//! Everything is private to the crate except what the binary and the
//! black-box tests use: serving, initialising, the configuration, the
//! OpenAPI documents (tests validate responses against them) and webhook
//! signing (tests verify signatures with it).
#![warn(unreachable_pub)]

pub(crate) mod adapters;
pub mod config;
pub(crate) mod domain;
pub(crate) mod http;
pub(crate) mod runtime;
pub(crate) mod store;

pub use config::NodeConfig;
pub use domain::backup::{in_use as node_running, offline as backup_offline};
pub use domain::checkout_format::LEDGER_STEPS;
pub use domain::timeline::words as timeline_words;
pub use domain::webhooks::signing;
pub use http::openapi;
pub use runtime::error::NodeError;
pub use runtime::node::{configure, init, serve};
