//! The black-box tests: each starts the real `sika` binary on loopback and
//! talks to it over HTTP (or drives it in a browser or a terminal). They are
//! one test binary, so the harness in `support` is compiled once; each module
//! is one area of the node.

mod support;

mod accounts_and_recipients;
mod admin;
mod admin_ledger;
mod admin_search;
mod api_auth;
mod api_conversions;
mod api_errors;
mod api_misc;
mod api_ratelimit;
mod checkout;
mod checkout_browser;
mod collections;
mod console;
mod contract;
mod crash;
mod dashboard;
mod dashboard_browser;
mod dashboard_disputes;
mod dashboard_forms;
mod dashboard_gaps;
mod dashboard_money;
mod dashboard_viewer;
mod disputes;
mod disputes_money;
mod emails;
mod exports;
mod flutterwave;
mod footprint;
mod format_upgrade;
mod hardening;
mod identity;
mod isolation;
mod limits;
mod live_money;
mod live_refunds;
mod loose_input;
mod newcomer;
mod operating;
mod operator_watch;
mod orders;
mod payouts;
mod postgres;
mod reconciliation;
mod refunds;
mod reversals;
mod statements;
mod tui_pty;
mod two_factor;
mod webhooks;
