//! # sika-server
//!
//! The node's HTTP side: the public API of the live and sandbox stacks (one
//! router per resource under `routes/`), authentication, rate limiting, the
//! request log, versioning and the admin API. Domain rules live in
//! `sika-engine`; handlers parse, call, and render.

pub mod admin;
pub mod auth;
pub mod catalog;
pub mod checkout;
pub mod config;
pub mod credentials;
pub mod disputes;
pub mod documents;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod files;
pub mod health;
pub mod identity;
pub mod movements;
pub mod node;
pub mod openapi;
pub mod pagination;
pub mod ratelimit;
pub mod recipients;
pub mod render;
pub mod representative;
pub mod request_log;
pub mod routes;
pub mod scheduler;
pub mod simulator;
pub mod stack;
pub mod virtual_accounts;
pub mod webhooks;

pub use config::NodeConfig;
pub use node::{Node, init, serve};
