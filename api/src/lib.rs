//! # sika-api
//!
//! Sika's wire contract, written once: the request bodies, resource views,
//! list pages and error bodies of the public API (and, as they move here,
//! the admin API), as serde types that also derive their OpenAPI schema.
//! The server renders responses from these types, the OpenAPI document is
//! generated from them and from the routers, and the console and the tests
//! read responses back into them, so none of the three can drift.
//!
//! Field names on the wire are camelCase; amounts are decimal strings with
//! the currency's fraction digits; timestamps are RFC 3339 strings in UTC.
//!
//! ```
//! use sika_api::{ErrorBody, ErrorCode};
//!
//! let body: ErrorBody = serde_json::from_str(
//!     r#"{"error":"not_found","message":"payout 'pay_x' not found","requestId":"req_1"}"#,
//! )
//! .unwrap();
//! assert_eq!(body.error, ErrorCode::NotFound);
//! assert_eq!(serde_json::to_value(&body).unwrap()["error"], "not_found");
//! ```

pub mod accounts;
pub mod admin;
pub mod backup;
pub mod capabilities;
pub mod checkout;
pub mod collections;
mod common;
pub mod conversions;
pub mod disputes;
mod error;
pub mod exports;
pub mod files;
pub mod keys;
pub mod members;
pub mod orders;
pub mod payment_links;
pub mod payment_pages;
pub mod payouts;
pub mod rates;
pub mod recipients;
pub mod reconciliation;
pub mod refunds;
pub mod representative;
pub mod requests;
mod resources;
pub mod simulations;
pub mod statements;
pub mod validation;
pub mod virtual_accounts;
pub mod webhooks;

pub use common::{AmountInput, Id, ListPage, ListQuery, Metadata, Money, MovementFilter, TimelineEntry};
pub use error::{
    BadBody, BadField, BadPage, BodyRefusals, Duplicate, ErrorBody, ErrorCode, FieldRefusals, ItemError,
    NoSuch, PageRefusals, ReadRefusals, Refusals, Replays, Resource, SessionRefusals, UnknownVersion,
    VersionRefusals, With,
};
