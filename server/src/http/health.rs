//! `/healthz` and `/readyz` on every listener, no credentials (pinned in
//! CONTRACT.md, "Operating a node"): liveness says the process serves;
//! readiness says both stacks' writers take commands (the sandbox's
//! refuse them below the disk reserve: `sandbox: disk reserve`), the data
//! directory takes writes, and the node is not draining, so a load
//! balancer stops sending traffic to a node that could only refuse it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::domain::stack::Stack;

/// What readiness looks at; one per node, shared by its three listeners.
pub(crate) struct Health {
    pub live: Arc<Stack>,
    pub sandbox: Arc<Stack>,
    pub data_dir: PathBuf,
    draining: AtomicBool,
}

#[derive(Serialize)]
struct Ready {
    status: &'static str,
    /// `standby` while another node holds a stack's writer lease
    /// (PostgreSQL backend), so a load balancer sends traffic elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<String>,
}

impl Health {
    pub(crate) fn new(live: Arc<Stack>, sandbox: Arc<Stack>, data_dir: PathBuf) -> Arc<Health> {
        Arc::new(Health { live, sandbox, data_dir, draining: AtomicBool::new(false) })
    }

    /// From now on readiness answers 503: the node is shutting down.
    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Every reason the node is not ready; empty when it is.
    pub(crate) fn reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.draining.load(Ordering::SeqCst) {
            reasons.push("draining: the node is shutting down".to_string());
        }
        for stack in [&self.live, &self.sandbox] {
            if let Some(reason) = stack.engine.unavailable_reason() {
                reasons.push(format!("{} writer: {reason}", stack.kind.name()));
            }
            if let Some(reason) = stack.disk_reserve.as_ref().and_then(|r| r.shortfall()) {
                reasons.push(format!("{}: disk reserve: {reason}", stack.kind.name()));
            }
        }
        if let Err(e) = probe_writable(&self.data_dir) {
            reasons.push(format!("data directory {} is not writable: {e}", self.data_dir.display()));
        }
        reasons
    }
}

/// Writes and removes a one-byte file, which fails on a full or read-only disk.
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let path = dir.join(".readyz-probe");
    let result = std::fs::File::create(&path).and_then(|mut file| file.write_all(b"1"));
    let _ = std::fs::remove_file(&path);
    result
}

/// The two routes, for any listener's router.
pub(crate) fn router<S>(health: Arc<Health>) -> Router<S> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route_layer(axum::middleware::from_fn(crate::http::access_log::remember_route))
        .with_state(health)
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(State(health): State<Arc<Health>>) -> (StatusCode, Json<Ready>) {
    let reasons = tokio::task::spawn_blocking(move || health.reasons())
        .await
        .unwrap_or_else(|e| vec![format!("readiness check failed: {e}")]);
    if reasons.is_empty() {
        (StatusCode::OK, Json(Ready { status: "ready", role: None, reasons }))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(Ready { status: "unavailable", role: None, reasons }))
    }
}

/// What a standby node serves on every listener until it holds the
/// writer leases: `/healthz`, `/readyz` answering 503 with
/// `"role":"standby"` and why, and 503 `unavailable` for anything else.
pub(crate) fn standby_router(reasons: Arc<std::sync::Mutex<Vec<String>>>) -> Router {
    let ready = move || {
        let reasons = reasons.lock().map(|r| r.clone()).unwrap_or_default();
        async move {
            let body = Ready { status: "unavailable", role: Some("standby"), reasons };
            (StatusCode::SERVICE_UNAVAILABLE, Json(body))
        }
    };
    let envelope: crate::http::envelope::EnvelopeState = None;
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(ready))
        .fallback(|| async {
            crate::domain::error::ApiError::unavailable_because(
                "this node is a standby: another node holds the writer lease; send requests to the writer",
            )
        })
        .layer(axum::middleware::from_fn_with_state(envelope, crate::http::envelope::envelope))
}
