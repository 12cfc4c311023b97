//! Disputes opened on paid collections and payment-link payments, with
//! their message threads.
