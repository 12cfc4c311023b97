//! # sika-server
//!
//! The node's HTTP side: the public API of the live and sandbox stacks (one
//! router per resource under `routes/`), authentication, rate limiting, the
//! request log, versioning and the admin API. Domain rules live in
//! `sika-engine`; handlers parse, call, and render.

pub mod config;
pub mod domain;
pub mod http;
pub mod runtime;
pub mod store;

pub use config::NodeConfig;
pub use runtime::node::{Node, init, serve};
