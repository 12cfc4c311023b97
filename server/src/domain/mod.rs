//! The business rules: turning requests into engine commands, checkout,
//! disputes, files, keys, recipients, virtual accounts, webhooks, and the
//! views responses show. Never imports axum or `http`.

pub mod catalog;
pub mod checkout;
pub mod credentials;
pub mod disputes;
pub mod error;
pub mod files;
pub mod identity;
pub mod instructions;
pub mod pagination;
pub mod principal;
pub mod ratelimit;
pub mod recipients;
pub mod render;
pub mod representative;
pub mod simulator;
pub mod stack;
pub mod virtual_accounts;
pub mod webhooks;
