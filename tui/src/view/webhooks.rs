//! Webhooks: the health of every endpoint, and the deliveries that failed
//! or are being retried.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{EndpointHealth, Owned, WebhookDelivery, wire_name};
use crate::app::{App, Remote, WebhookPane};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [endpoints, deliveries] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    render_endpoints(app, frame, endpoints);
    render_deliveries(app, frame, deliveries);
}

fn render_endpoints(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.endpoint_rows();
    let focused = app.webhook_pane == WebhookPane::Endpoints;
    let block = widgets::block(format!("Endpoints · {} ({})", app.stack.as_str(), rows.len()), focused);
    let empty = "No webhook endpoints on this stack.";
    if let Some(text) = widgets::placeholder(&app.endpoints, rows.is_empty(), empty) {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &app.endpoints);
    let wide = area.width >= WIDE_WIDTH_MIN;
    // The selected endpoint's last error on the line below the table.
    let [area, last_error] = if area.height > 4 {
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area)
    } else {
        [area, Rect::default()]
    };
    if let Some(health) = rows.get(app.endpoints_selected) {
        frame.render_widget(Paragraph::new(last_error_line(health)), last_error);
    }
    let columns = if wide {
        vec![
            fill("URL"),
            fixed("Organization", 30),
            fixed("Status", 9),
            fixed("Success", 7),
            fixed("Latency", 8),
            fixed("Fails", 5),
            fixed("Pending", 7),
            fixed("Failed", 6),
            fixed("Last attempt", 19),
        ]
    } else {
        vec![
            fill("URL"),
            fixed("Status", 9),
            fixed("Success", 7),
            fixed("Latency", 8),
            fixed("Fails", 5),
            fixed("Pend", 4),
            fixed("Fail", 4),
        ]
    };
    SelectTable {
        block,
        columns,
        rows: rows.iter().map(|e| endpoint_row(app, e, wide)).collect(),
        selected: Some(app.endpoints_selected),
        focused,
    }
    .render(frame, area);
}

/// `last error <time> <url>: <what>`, or that none failed lately.
pub fn last_error_line(health: &EndpointHealth) -> Line<'static> {
    let url = health.endpoint.url.clone();
    match (&health.last_error, &health.last_error_at) {
        (Some(error), at) => Line::from(vec![
            Span::styled(" last error ", format::label_style()),
            Span::raw(format::time(at.as_deref().unwrap_or_default())),
            Span::raw(format!(" {url}: ")),
            Span::styled(error.clone(), format::error_style()),
        ]),
        (None, _) => Line::from(vec![
            Span::styled(" last error ", format::label_style()),
            Span::raw(format!("none lately ({url})")),
        ]),
    }
}

fn endpoint_row(app: &App, health: &EndpointHealth, wide: bool) -> Row<'static> {
    let endpoint = &health.endpoint;
    let failing =
        if endpoint.consecutive_failures > 0 { Style::default().fg(Color::Red) } else { Style::default() };
    let mut cells = vec![Cell::from(endpoint.url.clone())];
    if wide {
        cells.push(Cell::from(app.organization_name(&health.organization_id).to_string()));
    }
    cells.push(widgets::status_cell(&wire_name(&endpoint.status)));
    cells.push(widgets::figure(format::percent(health.success_rate)));
    cells.push(widgets::figure(format::millis(health.average_latency_ms)));
    cells.push(widgets::figure(endpoint.consecutive_failures.to_string()).style(failing));
    cells.push(widgets::figure(format::count(health.pending_deliveries)));
    cells.push(widgets::figure(format::count(health.failed_deliveries)));
    if wide {
        cells.push(Cell::from(format::time(health.last_attempt_at.as_deref().unwrap_or_default())));
    }
    Row::new(cells)
}

fn render_deliveries(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.failing_deliveries();
    let focused = app.webhook_pane == WebhookPane::Deliveries;
    let block = widgets::block(format!("Failing deliveries ({})", rows.len()), focused);
    let remote = deliveries_state(&app.failed_deliveries, &app.pending_deliveries);
    if let Some(text) = widgets::placeholder(&remote, rows.is_empty(), "No failed or retrying deliveries.") {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &remote);
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|Owned { item: d, .. }| {
        let next_attempt = d.next_attempt_at.as_deref().unwrap_or_default();
        let mut cells = vec![Cell::from(d.id.clone())];
        if wide {
            // The URL the operator knows the receiver by; its id until the
            // endpoints are loaded.
            let endpoint = app.endpoint_rows().iter().find(|e| e.endpoint.id == d.endpoint_id);
            cells
                .push(Cell::from(endpoint.map_or_else(|| d.endpoint_id.clone(), |e| e.endpoint.url.clone())));
        }
        cells.push(Cell::from(d.event.clone()));
        cells.push(widgets::status_cell(&wire_name(&d.status)));
        cells.push(widgets::figure(d.attempt_count.to_string()));
        if wide {
            cells.push(Cell::from(format::time(next_attempt)));
            cells.push(Cell::from(format::time(&d.created_at)));
        } else {
            cells.push(Cell::from(format::time_compact(next_attempt)));
        }
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fill("Delivery"),
            fill("Endpoint"),
            fixed("Event", 22),
            fixed("Status", 8),
            fixed("Tries", 5),
            fixed("Next attempt", 19),
            fixed("Created", 19),
        ]
    } else {
        vec![fill("Delivery"), fixed("Event", 20), fixed("Status", 8), fixed("Tries", 5), fixed("Next", 11)]
    };
    let table_rows: Vec<Row> = table_rows.collect();
    SelectTable { block, columns, rows: table_rows, selected: Some(app.deliveries_selected), focused }
        .render(frame, area);
}

fn deliveries_state(
    failed: &Remote<Vec<Owned<WebhookDelivery>>>,
    pending: &Remote<Vec<Owned<WebhookDelivery>>>,
) -> Remote<()> {
    Remote {
        data: (failed.data.is_some() || pending.data.is_some()).then_some(()),
        error: failed.error.clone().or_else(|| pending.error.clone()),
        loading: failed.loading || pending.loading,
    }
}
