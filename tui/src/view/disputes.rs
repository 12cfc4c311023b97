//! Disputes of the selected stack.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::{Cell, Row};

use crate::api::{DisputeStatus, Owned, wire_name};
use crate::app::App;
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.dispute_rows();
    let title = format!("Disputes · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::block(title, true);
    let empty = format!("No disputes on {}.", app.stack.as_str());
    if let Some(text) = widgets::placeholder(&app.disputes, rows.is_empty(), &empty) {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &app.disputes);
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|Owned { organization_id, item: d }| {
        let mut cells = vec![Cell::from(d.id.clone())];
        if wide {
            cells.push(Cell::from(app.organization_name(organization_id).to_string()));
        }
        cells.push(widgets::status_cell(&wire_name(&d.status)));
        cells.push(widgets::figure(format::money(&d.amount, &d.currency)));
        if wide {
            // What the dispute holds (or, lost, took) on the balance, and
            // how it ended.
            cells.push(widgets::figure(format::money(&d.held_amount, &d.currency)));
            cells.push(Cell::from(d.outcome.as_ref().map_or_else(|| "—".to_string(), wire_name)));
        }
        cells.push(Cell::from(wire_name(&d.reason)));
        // Only an open dispute still waits for evidence.
        let due = if d.status == DisputeStatus::Open { d.evidence_due_by.as_str() } else { "" };
        if wide {
            cells.push(Cell::from(format::time(due)));
        } else {
            cells.push(Cell::from(format::time_compact(due)));
        }
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Id", 30),
            fixed("Organization", 24),
            fixed("Status", 10),
            fixed("Amount", 16),
            fixed("Held", 16),
            fixed("Outcome", 7),
            fill("Reason"),
            fixed("Evidence due", 19),
        ]
    } else {
        vec![fixed("Id", 28), fixed("Status", 9), fixed("Amount", 14), fill("Reason"), fixed("Evidence", 11)]
    };
    SelectTable {
        block,
        columns,
        rows: table_rows.collect(),
        selected: Some(app.disputes_selected),
        focused: true,
    }
    .render(frame, area);
}
