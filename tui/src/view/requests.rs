//! Requests: the stack's recent failed requests, and one request log
//! entry (a failed request's, or found by its `x-request-id` on either
//! stack) with both bodies.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};
use serde_json::Value;

use crate::api::RequestLookup;
use crate::app::App;
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [prompt, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let (spans, hint) = match (&app.lookup_id, &app.requests_query) {
        (Some(id), _) => (widgets::field("request id", id.clone()), "   Esc back to the failed requests"),
        (None, Some(query)) => (widgets::field("search", query.clone()), "   Esc clears"),
        (None, None) => (widgets::field("search", "—"), "   / any part of an id, route, error or address"),
    };
    let mut spans = spans;
    spans.push(Span::styled(hint, format::label_style()));
    frame.render_widget(Paragraph::new(Line::from(spans)), prompt);
    if app.lookup_id.is_none() {
        return render_failed(app, frame, body);
    }
    let block = widgets::block("Request log", true);
    let Some(lookup) = &app.lookup.data else {
        let text = widgets::placeholder(&app.lookup, true, "").unwrap_or_default();
        return widgets::message(frame, body, block, text);
    };
    let lines = lines(lookup, app.organization_name(&lookup.organization_id));
    let visible = usize::from(body.height.saturating_sub(2));
    let scroll = app.lookup_scroll.min(lines.len().saturating_sub(visible));
    let scroll = u16::try_from(scroll).unwrap_or(u16::MAX);
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), body);
}

/// The stack's recent failed requests, newest first; Enter opens one.
fn render_failed(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.failed_request_rows();
    let title = format!("Recent failed requests · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::block(title, true);
    let empty = if app.requests_query.is_some() {
        "No failed request holds this. A full request id (req_…) is looked up in the request log."
    } else {
        "No failed requests since the node started. Press / and type a request id to look one up."
    };
    if let Some(text) = widgets::placeholder(&app.failed_requests, rows.is_empty(), empty) {
        return widgets::message(frame, area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|r| {
        let status_style = if r.status >= 500 {
            Style::default().fg(Color::Red)
        } else {
            Style::default().fg(Color::Yellow)
        };
        let error = format::dash(r.error.as_deref().unwrap_or_default()).to_string();
        let mut cells = vec![
            Cell::from(if wide { format::time(&r.created_at) } else { format::time_compact(&r.created_at) }),
            Cell::from(Span::styled(r.status.to_string(), status_style)),
            Cell::from(r.method.clone()),
            Cell::from(r.route.clone()),
            Cell::from(error),
        ];
        if wide {
            let organization = r.organization_id.as_deref().map_or("—", |id| app.organization_name(id));
            cells.push(Cell::from(organization.to_string()));
            cells.push(Cell::from(format::dash(r.client_address.as_deref().unwrap_or_default()).to_string()));
            cells.push(Cell::from(r.id.clone()));
        }
        Row::new(cells)
    });
    let mut columns = vec![
        fixed("Time", if wide { 19 } else { 11 }),
        fixed("HTTP", 4),
        fixed("Method", 6),
        fill("Route"),
        fixed("Error", 20),
    ];
    if wide {
        columns.extend([fixed("Organization", 20), fixed("Client", 15), fixed("Request", 30)]);
    }
    SelectTable {
        block: widgets::with_error(block, &app.failed_requests),
        columns,
        rows: table_rows.collect(),
        selected: Some(app.failed_requests_selected),
        focused: true,
    }
    .render(frame, area);
}

/// The entry as lines of text, bodies pretty-printed.
/// The lookup's text; `organization` is the name to show for its
/// organization.
pub fn lines(lookup: &RequestLookup, organization: &str) -> Vec<Line<'static>> {
    let request = &lookup.request;
    let status_style = match request.status {
        200..=299 => Style::default().fg(Color::Green),
        400..=499 => Style::default().fg(Color::Yellow),
        500.. => Style::default().fg(Color::Red),
        _ => Style::default(),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{} ", request.method), format::title_style()),
            Span::raw(request.path.clone()),
            Span::raw("  →  "),
            Span::styled(request.status.to_string(), status_style),
            Span::raw(format!("  in {}", format::millis(Some(request.duration_ms)))),
        ]),
        widgets::fields(&[
            ("stack", lookup.stack.as_str().to_string()),
            ("organization", format::dash(organization).to_string()),
        ]),
        widgets::fields(&[
            ("api key", format::dash(request.api_key_id.as_deref().unwrap_or_default()).to_string()),
            ("at", format::time(&request.created_at)),
        ]),
    ];
    for (title, body) in [("Request body", &request.request_body), ("Response body", &request.response_body)]
    {
        lines.push(Line::default());
        lines.push(Line::styled(title, format::title_style()));
        lines.extend(json_lines(body.as_ref()));
    }
    lines
}

/// A body as lines: text as sent, JSON pretty-printed, none as `(none)`.
fn json_lines(body: Option<&Value>) -> Vec<Line<'static>> {
    let Some(body) = body else { return vec![Line::styled("(none)", format::label_style())] };
    match body {
        Value::Null => vec![Line::styled("(none)", format::label_style())],
        Value::String(text) => text.lines().map(|l| Line::from(l.to_string())).collect(),
        other => serde_json::to_string_pretty(other)
            .unwrap_or_default()
            .lines()
            .map(|l| Line::from(l.to_string()))
            .collect(),
    }
}
