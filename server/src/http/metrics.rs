//! `GET /metrics` on the admin listener (no token), in Prometheus's text
//! format, with the names pinned in CONTRACT.md; and the middleware that
//! counts each stack's requests by matched route template (never a raw
//! path, so ids cannot blow up the label set).

use std::fmt::Write;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::attention::{Counts, age_seconds, counts};
use crate::domain::metrics::BUCKETS;
use crate::domain::stack::Stack;

/// Counts one request of a stack's routers under its route template.
pub(crate) async fn count(State(stack): State<Arc<Stack>>, request: Request, next: Next) -> Response {
    // The template is shared, not copied: cloning it bumps a count.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let started = Instant::now();
    let mut response = next.run(request).await;
    let template = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    stack.metrics.record_request(template, response.status().as_u16(), started.elapsed().as_secs_f64());
    // The envelope's request log line names the same template.
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// Writes one metric family's header.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The text of `/metrics` for both stacks.
pub(crate) fn render(stacks: &[&Stack]) -> String {
    let mut out = String::new();
    http(&mut out, stacks);
    engine(&mut out, stacks);
    webhooks_and_rates(&mut out, stacks);
    out
}

fn http(o: &mut String, stacks: &[&Stack]) {
    let routes: Vec<_> = stacks.iter().map(|s| (s.kind.name(), s.metrics.routes())).collect();
    family(o, "sika_http_requests_total", "counter", "API requests answered, by route template and status.");
    for (name, stats) in &routes {
        for (route, stats) in stats {
            for (status, n) in &stats.statuses {
                let _ = writeln!(
                    o,
                    "sika_http_requests_total{{stack=\"{name}\",route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
    }
    family(o, "sika_http_request_duration_seconds", "histogram", "API request durations, by route template.");
    for (name, stats) in &routes {
        for (route, stats) in stats {
            let h = &stats.durations;
            let labels = format!("stack=\"{name}\",route=\"{route}\"");
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(h.buckets) {
                cumulative += n;
                let _ = writeln!(
                    o,
                    "sika_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ =
                writeln!(o, "sika_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(o, "sika_http_request_duration_seconds_sum{{{labels}}} {}", h.sum_seconds);
            let _ = writeln!(o, "sika_http_request_duration_seconds_count{{{labels}}} {}", h.count);
        }
    }
}

fn engine(o: &mut String, stacks: &[&Stack]) {
    let stats: Vec<_> = stacks.iter().map(|s| (s.kind.name(), s.engine.stats())).collect();
    family(o, "sika_engine_commits_total", "counter", "Ledger batches committed (each one fsync).");
    for (name, s) in &stats {
        let _ = writeln!(o, "sika_engine_commits_total{{stack=\"{name}\"}} {}", s.commits);
    }
    family(o, "sika_engine_commands_total", "counter", "Engine commands applied, by outcome.");
    for (name, s) in &stats {
        let ok = s.commands.saturating_sub(s.commands_failed);
        let _ = writeln!(o, "sika_engine_commands_total{{stack=\"{name}\",outcome=\"ok\"}} {ok}");
        let _ = writeln!(
            o,
            "sika_engine_commands_total{{stack=\"{name}\",outcome=\"refused\"}} {}",
            s.commands_failed
        );
    }
    family(o, "sika_engine_queue_depth", "gauge", "Commands waiting for the ledger writer.");
    for (name, s) in &stats {
        let _ = writeln!(o, "sika_engine_queue_depth{{stack=\"{name}\"}} {}", s.queue_depth);
    }
}

fn webhooks_and_rates(o: &mut String, stacks: &[&Stack]) {
    family(o, "sika_webhook_attempts_total", "counter", "Webhook delivery attempts, by result.");
    for stack in stacks {
        let (succeeded, failed) = stack.metrics.webhook_attempts();
        let name = stack.kind.name();
        let _ =
            writeln!(o, "sika_webhook_attempts_total{{stack=\"{name}\",result=\"succeeded\"}} {succeeded}");
        let _ = writeln!(o, "sika_webhook_attempts_total{{stack=\"{name}\",result=\"failed\"}} {failed}");
    }
    family(o, "sika_webhook_backlog", "gauge", "Webhook deliveries waiting for an attempt.");
    for stack in stacks {
        let _ = writeln!(
            o,
            "sika_webhook_backlog{{stack=\"{}\"}} {}",
            stack.kind.name(),
            stack.metrics.webhook_backlog()
        );
    }
    family(
        o,
        "sika_rates_feed_age_seconds",
        "gauge",
        "Age of the rate feed's last good document; -1 before the first (absent without a feed).",
    );
    for stack in stacks.iter().filter(|s| s.rates.feed_settings().is_some()) {
        let age = stack.rates.feed().as_of.map_or(-1, |at| stack.now_ms().saturating_sub(at) / 1000);
        let _ = writeln!(o, "sika_rates_feed_age_seconds{{stack=\"{}\"}} {age}", stack.kind.name());
    }
}

/// The work waiting for the operator: movements awaiting manual
/// settlement, with the oldest one's age. A stack whose count failed is
/// left out (its reason is logged).
fn settlement(o: &mut String, counted: &[(&Stack, Counts)]) {
    family(
        o,
        "sika_manual_settlement_pending",
        "gauge",
        "Payouts and collections awaiting the operator's manual settlement (counted at most every 10 s).",
    );
    for (stack, counts) in counted {
        let _ = writeln!(
            o,
            "sika_manual_settlement_pending{{stack=\"{}\"}} {}",
            stack.kind.name(),
            counts.awaiting_settlement
        );
    }
    family(
        o,
        "sika_manual_settlement_oldest_age_seconds",
        "gauge",
        "Age of the oldest movement awaiting manual settlement; 0 when none waits.",
    );
    for (stack, counts) in counted {
        let age = counts.oldest_awaiting_at.map_or(0, |at| age_seconds(stack.now_ms(), at));
        let _ =
            writeln!(o, "sika_manual_settlement_oldest_age_seconds{{stack=\"{}\"}} {age}", stack.kind.name());
    }
}

/// The handler: both stacks' figures.
pub(crate) async fn scrape(State(state): State<Arc<crate::http::admin::AdminState>>) -> Response {
    let mut body = render(&[&state.live, &state.sandbox]);
    let mut counted = Vec::new();
    for stack in [&state.live, &state.sandbox] {
        match counts(&stack.engine, stack.kind, &stack.attention).await {
            Ok(counts) => counted.push((stack.as_ref(), counts)),
            Err(e) => {
                tracing::error!(stack = stack.kind.name(), error = %e.message, "cannot count the work awaiting the operator")
            }
        }
    }
    settlement(&mut body, &counted);
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}
