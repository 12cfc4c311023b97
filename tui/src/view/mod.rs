//! Views: functions from [`crate::App`] to a frame. They read the state and
//! never change it or fetch anything.

pub mod accounts;
pub mod activity;
pub mod audit;
mod chrome;
pub mod detail;
pub mod disputes;
pub mod form;
pub mod format;
pub mod ledger;
pub mod organizations;
pub mod overview;
pub mod rates;
pub mod reconciliation;
pub mod requests;
pub mod search;
pub mod webhooks;
mod widgets;

pub use chrome::{KEYS, render};
