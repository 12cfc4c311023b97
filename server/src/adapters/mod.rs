//! Adapters: the clients that speak to the world outside the node over HTTP.
//! The domain holds the boundaries they implement (`domain::rails::AsyncRail`,
//! `domain::webhooks::dispatcher::Transport`) and every decision; an adapter
//! only turns a request into bytes on the wire and an answer back.

pub(crate) mod flutterwave;
pub(crate) mod smtp;
pub(crate) mod webhook_sender;
