//! The Audit tab: the operator's actions, newest first, a page at a time,
//! and under them the newest emails of the node's outbox with their status.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row};

use crate::api::{AuditOutcome, EmailStatus};
use crate::app::App;
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [log, outbox] = Layout::vertical([Constraint::Min(6), Constraint::Length(8)]).areas(area);
    render_log(app, frame, log);
    render_emails(app, frame, outbox);
}

fn email_status(status: EmailStatus) -> &'static str {
    match status {
        EmailStatus::Queued => "queued",
        EmailStatus::Sent => "sent",
        EmailStatus::Retrying => "retrying",
        EmailStatus::Failed => "failed",
        EmailStatus::Suppressed => "suppressed",
    }
}

/// The newest emails: when, what, to whom, status and the last refusal.
fn render_emails(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.emails.data.as_ref().map_or(&[][..], |p| p.data.as_slice());
    let block = widgets::block("Emails · newest first", false);
    if let Some(text) = widgets::placeholder(&app.emails, rows.is_empty(), "No emails sent yet.") {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &app.emails);
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|email| {
        let status = email_status(email.status);
        let mut cells = vec![Cell::from(format::time(&email.created_at)), Cell::from(email.kind.clone())];
        cells.push(Cell::from(email.to.clone()));
        cells.push(Cell::from(Span::styled(status, format::status_style(status))));
        if wide {
            cells.push(Cell::from(email.attempts.to_string()));
        }
        cells.push(Cell::from(format::dash(email.last_error.as_deref().unwrap_or_default()).to_string()));
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Time", 19),
            fixed("Kind", 26),
            fixed("To", 30),
            fixed("Status", 10),
            fixed("Tries", 5),
            fill("Last error"),
        ]
    } else {
        vec![fixed("Time", 19), fixed("Kind", 14), fixed("To", 18), fixed("Status", 10), fill("Last error")]
    };
    SelectTable { block, columns, rows: table_rows.collect(), selected: None, focused: false }
        .render(frame, area);
}

fn render_log(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.audit_rows();
    let more = app.audit.data.as_ref().is_some_and(|p| p.has_more);
    let title = format!(
        "Audit log · page {}{} · newest first",
        app.audit_page_number(),
        if more { " (n older)" } else { "" }
    );
    let block = widgets::block(title, true);
    if let Some(text) = widgets::placeholder(&app.audit, rows.is_empty(), "No operator actions yet.") {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &app.audit);
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|entry| {
        let outcome = match entry.outcome {
            AuditOutcome::Succeeded => "succeeded",
            AuditOutcome::Failed => "failed",
        };
        let stack = entry.stack.map_or("node", |s| s.as_str());
        let mut cells = vec![
            Cell::from(format::time(&entry.created_at)),
            Cell::from(entry.action.clone()),
            Cell::from(app.organization_name(&entry.target).to_string()),
        ];
        if wide {
            cells.push(Cell::from(stack));
        }
        cells.push(Cell::from(Span::styled(outcome, format::status_style(outcome))));
        let detail = entry.detail.as_deref().unwrap_or_default();
        cells.push(Cell::from(format::dash(detail).to_string()));
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Time", 19),
            fixed("Action", 22),
            fixed("Target", 34),
            fixed("Stack", 7),
            fixed("Outcome", 9),
            fill("Detail"),
        ]
    } else {
        vec![fixed("Time", 19), fixed("Action", 20), fixed("Target", 16), fixed("Outcome", 9), fill("Detail")]
    };
    SelectTable {
        block,
        columns,
        rows: table_rows.collect(),
        selected: Some(app.audit_selected),
        focused: true,
    }
    .render(frame, area);
}
