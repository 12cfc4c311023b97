//! Requests: one request log entry, found by its `x-request-id` on either
//! stack, with both bodies.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::Paragraph;
use serde_json::Value;

use crate::api::RequestLookup;
use crate::app::App;
use crate::view::format;
use crate::view::widgets;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [prompt, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let hint =
        if app.lookup_id.is_some() { "   press / to look up another" } else { "   press / to look one up" };
    let id = app.lookup_id.clone().unwrap_or_else(|| "—".into());
    let mut spans = widgets::field("request id", id);
    spans.push(Span::styled(hint, format::label_style()));
    frame.render_widget(Paragraph::new(Line::from(spans)), prompt);
    let block = widgets::block("Request log", true);
    if app.lookup_id.is_none() {
        let text = Text::from(vec![
            Line::from("Press / and type a request id (the x-request-id header of any answer)."),
            Line::styled("Both stacks' request logs are searched.", format::label_style()),
        ]);
        return widgets::message(frame, body, block, text);
    }
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
