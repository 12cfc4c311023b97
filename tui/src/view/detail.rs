//! Detail views: a movement's timeline, a dispute's thread, an endpoint's
//! recent attempts. Each is a summary, a table with a selection, and the
//! selected entry in full.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Wrap};

use crate::api::{
    Dispute, EndpointAttempt, EndpointHealth, Movement, Owned, StackName, TimelineEntry, thread, wire_name,
};
use crate::app::{App, Detail, Remote};
use crate::view::format;
use crate::view::widgets::{self, Column, SelectTable, fill, fixed};

/// The entry's full text below the table; more on tall terminals.
fn entry_height(area: Rect) -> u16 {
    if area.height >= 40 { 8 } else { 4 }
}

pub fn render(app: &App, detail: &Detail, frame: &mut Frame, area: Rect) {
    match detail {
        Detail::Movement { stack, kind, id, data, selected } => {
            let title = format!("{} {id} · {}", capitalize(kind.singular()), stack.as_str());
            render_movement(app, &title, data, *selected, frame, area);
        }
        Detail::Dispute { stack, id, data, selected } => {
            render_dispute(app, *stack, id, data, *selected, frame, area)
        }
        Detail::Endpoint { stack, health, attempts, selected } => {
            render_endpoint(*stack, health, attempts, *selected, frame, area)
        }
        Detail::Search { query, results, selected } => {
            crate::view::search::render(app, query, results, *selected, frame, area)
        }
        Detail::LedgerAccount { stack, id, pages, entries, selected } => {
            crate::view::ledger::render_entries(*stack, id, pages, entries, *selected, frame, area)
        }
        Detail::Organization { organization, members, selected } => {
            crate::view::organizations::render_detail(organization, members, *selected, frame, area)
        }
        Detail::Keys { stack, organization, keys, selected } => {
            crate::view::organizations::render_keys(*stack, organization, keys, *selected, frame, area)
        }
        Detail::Reconciliation { data, selected } => {
            crate::view::reconciliation::render(data, *selected, frame, area)
        }
    }
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A movement's timeline oldest first, whatever order the node sent.
pub fn timeline(movement: &Movement) -> Vec<&TimelineEntry> {
    let mut entries: Vec<&TimelineEntry> = movement.timeline().iter().collect();
    entries.sort_by(|a, b| a.at.cmp(&b.at));
    entries
}

/// Splits a detail view into summary, table and selected-entry areas.
fn sections(area: Rect, summary_lines: usize) -> [Rect; 3] {
    let summary_height = u16::try_from(summary_lines).unwrap_or(u16::MAX).saturating_add(2);
    Layout::vertical([
        Constraint::Length(summary_height),
        Constraint::Min(3),
        Constraint::Length(entry_height(area)),
    ])
    .areas(area)
}

fn render_movement(
    app: &App,
    title: &str,
    remote: &Remote<Movement>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let Some(movement) = &remote.data else {
        let text = widgets::placeholder(remote, true, "").unwrap_or_default();
        return widgets::message(frame, area, widgets::block(title, true), text);
    };
    let summary = movement_summary(movement, app.organization_name(movement.organization_id()));
    let [summary_area, table_area, entry_area] = sections(area, summary.len());
    let summary_block = widgets::with_error(status_block(title, &movement.status()), remote);
    frame.render_widget(Paragraph::new(summary).block(summary_block), summary_area);

    let entries = timeline(movement);
    let rows = entries.iter().map(|e| {
        Row::new(vec![
            Cell::from(format::time(&e.at)),
            Cell::from(e.kind.clone()),
            Cell::from(e.title.clone()),
        ])
    });
    let block = widgets::block(format!("Timeline ({})", entries.len()), true);
    let columns = vec![fixed("Time", 19), fixed("Kind", 10), fill("What happened")];
    render_entries(block, "No timeline entries.", columns, rows.collect(), selected, frame, table_area);
    let entry = entries
        .get(selected)
        .map(|e| vec![Line::styled(e.title.clone(), format::title_style()), Line::from(e.detail.clone())]);
    render_entry(entry.unwrap_or_default(), frame, entry_area);
}

fn movement_summary(movement: &Movement, organization: &str) -> Vec<Line<'static>> {
    let org = format::dash(organization).to_string();
    let created = format::time(movement.created_at());
    let reference = format::dash(movement.external_reference()).to_string();
    let mut lines = match movement {
        Movement::Payout(p) => {
            let (from, to) = (&p.item.from, &p.item.to);
            vec![
                widgets::fields(&[
                    ("from", format::money(&from.amount, &from.currency)),
                    ("account", format::dash(&from.account_number).to_string()),
                    ("fee", format::money(&p.item.fee.amount, &p.item.fee.currency)),
                ]),
                widgets::fields(&[
                    ("to", format::money(&to.amount, &to.currency)),
                    ("via", format::dash(&to.code).to_string()),
                    ("account", format::dash(destination(&to.account_number, &to.address)).to_string()),
                ]),
            ]
        }
        Movement::Collection(c) => vec![widgets::fields(&[
            ("amount", format::money(&c.item.amount, &c.item.currency)),
            ("via", format::dash(&c.item.code).to_string()),
            ("account", format::dash(&c.item.account_number).to_string()),
        ])],
        Movement::Refund(r) => vec![widgets::fields(&[
            ("amount", format::money(&r.item.amount, &r.item.currency)),
            ("of", r.item.collection_id.clone()),
            ("reason", format::dash(r.item.reason.as_deref().unwrap_or_default()).to_string()),
        ])],
        Movement::Order(o) => {
            let (from, to) = (&o.item.from, &o.item.to);
            vec![
                widgets::fields(&[
                    ("from", format::money(&from.amount, &from.currency)),
                    ("method", format::dash(&from.method).to_string()),
                ]),
                widgets::fields(&[
                    ("to", format::dash(&to.currency).to_string()),
                    ("via", format::dash(&to.code).to_string()),
                    ("account", format::dash(destination(&to.account_number, &to.address)).to_string()),
                ]),
            ]
        }
    };
    lines.push(widgets::fields(&[("organization", org), ("created", created)]));
    let mut last = vec![("reference", reference)];
    if !movement.status_message().is_empty() {
        last.push(("message", movement.status_message().to_string()));
    }
    lines.push(widgets::fields(&last));
    lines
}

/// Where a payout leg goes: the account number, else the crypto address.
fn destination<'a>(account_number: &'a Option<String>, address: &'a Option<String>) -> &'a str {
    let given = |text: &'a Option<String>| text.as_deref().filter(|t| !t.is_empty());
    given(account_number).or_else(|| given(address)).unwrap_or_default()
}

/// A detail view's summary block, its status at the top right.
fn status_block(title: impl Into<String>, status: &str) -> Block<'static> {
    widgets::block(title, false).title_top(
        Line::from(Span::styled(format!(" {status} "), format::status_style(status))).right_aligned(),
    )
}

/// The entries of a detail view (a timeline, a thread) with one selected,
/// or `empty` when there are none.
fn render_entries(
    block: Block<'static>,
    empty: &str,
    columns: Vec<Column>,
    rows: Vec<Row<'static>>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    if rows.is_empty() {
        let text = Text::from(Line::styled(empty.to_string(), format::label_style()));
        return widgets::message(frame, area, block, text);
    }
    SelectTable { block, columns, rows, selected: Some(selected), focused: true }.render(frame, area);
}

fn render_entry(lines: Vec<Line<'static>>, frame: &mut Frame, area: Rect) {
    let block = widgets::block("Selected", false);
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

fn render_dispute(
    app: &App,
    stack: StackName,
    id: &str,
    remote: &Remote<Owned<Dispute>>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let title = format!("Dispute {id} · {}", stack.as_str());
    let Some(Owned { organization_id, item: dispute }) = &remote.data else {
        let text = widgets::placeholder(remote, true, "").unwrap_or_default();
        return widgets::message(frame, area, widgets::block(title, true), text);
    };
    let summary = vec![
        widgets::fields(&[
            ("amount", format::money(&dispute.amount, &dispute.currency)),
            ("held", format::money(&dispute.held_amount, &dispute.currency)),
            ("outcome", dispute.outcome.as_ref().map_or_else(|| "—".to_string(), wire_name)),
            ("reason", wire_name(&dispute.reason)),
        ]),
        widgets::fields(&[
            ("organization", format::dash(app.organization_name(organization_id)).to_string()),
            ("opened", format::time(&dispute.created_at)),
        ]),
        widgets::fields(&[
            ("evidence due", format::time(&dispute.evidence_due_by)),
            ("payment", dispute.collection_id.clone()),
        ]),
        Line::from(format::dash(&dispute.status_message).to_string()),
    ];
    let [summary_area, table_area, entry_area] = sections(area, summary.len());
    let block = status_block(title, &wire_name(&dispute.status));
    frame.render_widget(Paragraph::new(summary).block(widgets::with_error(block, remote)), summary_area);

    let messages = thread(dispute);
    let block = widgets::block(format!("Thread ({})", messages.len()), true);
    let rows = messages.iter().map(|m| {
        Row::new(vec![
            Cell::from(format::time(&m.created_at)),
            Cell::from(wire_name(&m.author_type)),
            widgets::figure(m.attachments.len().to_string()),
            Cell::from(m.body.lines().next().unwrap_or_default().to_string()),
        ])
    });
    let columns = vec![fixed("Time", 19), fixed("From", 10), fixed("Files", 5), fill("Message")];
    render_entries(block, "No messages yet.", columns, rows.collect(), selected, frame, table_area);
    let message = messages.get(selected).map(|m| {
        let author = wire_name(&m.author_type);
        let mut lines = vec![Line::styled(format!("{author} wrote:"), format::title_style())];
        lines.extend(m.body.lines().map(|l| Line::from(l.to_string())));
        // Where the operator reads the file: the admin API serves a
        // dispute's evidence (the merchant's `url` needs their key).
        for attachment in &m.attachments {
            let text = format!(
                "attachment {} ({}): GET /admin/v1/{}/disputes/{id}/files/{}",
                attachment.name,
                attachment.file_id,
                stack.as_str(),
                attachment.file_id
            );
            lines.push(Line::styled(text, format::label_style()));
        }
        lines
    });
    render_entry(message.unwrap_or_default(), frame, entry_area);
}

fn render_endpoint(
    stack: StackName,
    health: &EndpointHealth,
    attempts: &Remote<Vec<EndpointAttempt>>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let endpoint = &health.endpoint;
    let title = format!("Endpoint {} · {}", endpoint.id, stack.as_str());
    let mut summary = vec![
        widgets::fields(&[("url", endpoint.url.clone())]),
        widgets::fields(&[
            ("success", format::percent(health.success_rate)),
            ("latency", format::millis(health.average_latency_ms)),
            ("consecutive failures", endpoint.consecutive_failures.to_string()),
        ]),
        widgets::fields(&[
            ("pending", format::count(health.pending_deliveries)),
            ("failed", format::count(health.failed_deliveries)),
            ("last attempt", format::time(health.last_attempt_at.as_deref().unwrap_or_default())),
        ]),
    ];
    if let Some(reason) = &endpoint.disabled_reason {
        summary.push(Line::styled(format!("disabled: {}", wire_name(reason)), format::error_style()));
    }
    summary.push(crate::view::webhooks::last_error_line(health));
    let [summary_area, table_area, entry_area] = sections(area, summary.len());
    let status = &wire_name(&endpoint.status);
    let block = widgets::block(title, false).title_top(
        Line::from(Span::styled(format!(" {status} "), format::status_style(status))).right_aligned(),
    );
    frame.render_widget(Paragraph::new(summary).block(block), summary_area);

    let rows = attempts.data.as_deref().unwrap_or_default();
    let block = widgets::block(format!("Recent attempts ({})", rows.len()), true);
    if let Some(text) = widgets::placeholder(attempts, rows.is_empty(), "No delivery attempts yet.") {
        widgets::message(frame, table_area, block, text);
    } else {
        let table_rows = rows.iter().map(|a| {
            let code = a.status_code.map_or_else(|| "—".to_string(), |c| c.to_string());
            let error = a.error.as_deref().unwrap_or_default();
            let result = if a.succeeded { "ok".to_string() } else { format::dash(error).to_string() };
            let result_style = format::status_style(if a.succeeded { "succeeded" } else { "failed" });
            Row::new(vec![
                Cell::from(format::time(&a.at)),
                Cell::from(a.event.clone()),
                widgets::figure(code),
                widgets::figure(format::millis(Some(a.duration_ms as f64))),
                Cell::from(Span::styled(result, result_style)),
            ])
        });
        SelectTable {
            block: widgets::with_error(block, attempts),
            columns: vec![
                fixed("Time", 19),
                fixed("Event", 20),
                fixed("HTTP", 4),
                fixed("Duration", 8),
                fill("Result"),
            ],
            rows: table_rows.collect(),
            selected: Some(selected),
            focused: true,
        }
        .render(frame, table_area);
    }
    let attempt = rows.get(selected).map(|a| {
        vec![
            Line::from(widgets::field("delivery", a.delivery_id.clone())),
            Line::from(widgets::field(
                "error",
                format::dash(a.error.as_deref().unwrap_or_default()).to_string(),
            )),
        ]
    });
    render_entry(attempt.unwrap_or_default(), frame, entry_area);
}
