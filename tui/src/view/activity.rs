//! Activity: payouts, collections, orders and refunds of the selected
//! stack in one table, newest first. Refunds waiting for the operator are
//! its pending refunds (`F` to pending), completed or failed with `c`/`f`
//! from their detail, as payouts are.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::Movement;
use crate::app::{App, Remote};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [filter, table] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    render_filter(app, frame, filter);
    let rows = app.activity_rows();
    let title = format!("Payouts, collections, orders, refunds · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::block(title, true);
    let remote = merged_state(&app.movements);
    let empty = if app.activity_query.is_some() || app.activity_status.status().is_some() {
        "Nothing matches this search (Esc clears it)."
    } else {
        "No payouts, collections, orders or refunds on this stack yet."
    };
    if let Some(text) = widgets::placeholder(&remote, rows.is_empty(), empty) {
        return widgets::message(frame, table, block, text);
    }
    let block = widgets::with_error(block, &remote);
    let wide = table.width >= WIDE_WIDTH_MIN;
    SelectTable {
        block,
        columns: if wide {
            vec![
                fixed("Kind", 10),
                fixed("Id", 32),
                fixed("Organization", 28),
                fixed("Status", 9),
                fixed("Amount", 18),
                fixed("Reference", 16),
                fixed("Created", 19),
                fill("Message"),
            ]
        } else {
            vec![fill("Id"), fixed("Status", 9), fixed("Amount", 16), fixed("Created", 11)]
        },
        rows: rows.iter().map(|m| row(app, m, wide)).collect(),
        selected: Some(app.activity_selected),
        focused: true,
    }
    .render(frame, table);
}

fn render_filter(app: &App, frame: &mut Frame, area: Rect) {
    let mut spans = widgets::field("search", app.activity_query.clone().unwrap_or_else(|| "—".into()));
    spans.push(Span::raw("   "));
    spans.extend(widgets::field("status", app.activity_status.status().unwrap_or("all").to_string()));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn row(app: &App, movement: &Movement, wide: bool) -> Row<'static> {
    let (amount, currency) = movement.amount();
    // Narrow tables leave the kind out: the id's prefix says it.
    let mut cells = Vec::new();
    if wide {
        cells.push(Cell::from(movement.kind().singular()));
    }
    cells.push(Cell::from(movement.id().to_string()));
    if wide {
        cells.push(Cell::from(app.organization_name(movement.organization_id()).to_string()));
    }
    cells.push(widgets::status_cell(&movement.status()));
    cells.push(widgets::figure(format::money(amount, currency)));
    if wide {
        cells.push(Cell::from(format::dash(movement.external_reference()).to_string()));
        cells.push(Cell::from(format::time(movement.created_at())));
        cells.push(Cell::from(movement.status_message().to_string()));
    } else {
        cells.push(Cell::from(format::time_compact(movement.created_at())));
    }
    Row::new(cells)
}

/// The four lists' states as one: loaded when any is, loading while any is.
fn merged_state(lists: &[Remote<Vec<Movement>>; 4]) -> Remote<()> {
    Remote {
        data: lists.iter().any(|r| r.data.is_some()).then_some(()),
        error: first_error(lists),
        loading: lists.iter().any(|r| r.loading),
    }
}

fn first_error(lists: &[Remote<Vec<Movement>>; 4]) -> Option<String> {
    lists.iter().find_map(|r| r.error.clone())
}
