//! The business rules: turning requests into engine commands, checkout,
//! disputes, files, keys, recipients, virtual accounts, webhooks, and the
//! views responses show. Never imports axum or `http`.

pub(crate) mod attention;
pub(crate) mod audit;
pub(crate) mod backup;
pub(crate) mod catalog;
pub(crate) mod checkout;
pub(crate) mod checkout_format;
pub(crate) mod credentials;
pub(crate) mod destinations;
pub(crate) mod disputes;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod identity;
pub(crate) mod identity_format;
pub(crate) mod instructions;
pub(crate) mod limits;
pub(crate) mod members;
pub(crate) mod metrics;
pub(crate) mod pagination;
pub(crate) mod passwords;
pub(crate) mod principal;
pub(crate) mod rails;
pub(crate) mod ratelimit;
pub(crate) mod rates;
pub(crate) mod receiving;
pub(crate) mod recipients;
pub(crate) mod render;
pub(crate) mod representative;
pub(crate) mod search;
pub(crate) mod settings;
pub(crate) mod simulator;
pub(crate) mod stack;
pub(crate) mod stack_kind;
pub(crate) mod system_ledger;
pub(crate) mod views;
pub(crate) mod virtual_accounts;
pub(crate) mod webhooks;
