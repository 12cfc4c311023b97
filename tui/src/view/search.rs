//! A search across the node: each hit's kind, id, organization (by name),
//! and the field it matched in.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{SearchResults, wire_name};
use crate::app::{App, Remote};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(
    app: &App,
    query: &str,
    results: &Remote<SearchResults>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let [summary_area, table_area] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(area);
    let found = results.data.as_ref();
    let mut spans = widgets::field("search", query.to_string());
    if let Some(found) = found {
        widgets::after_gap(&mut spans, widgets::field("records read", format::count(found.scanned)));
        if found.scan_limit_reached {
            widgets::after_gap(
                &mut spans,
                widgets::warning("stopped at the read limit: older records not searched"),
            );
        }
        if found.hits_limit_reached {
            widgets::after_gap(&mut spans, widgets::warning("more matches than shown: narrow the search"));
        }
    }
    let block = widgets::block("Search · payouts, collections, orders, pages, links · both stacks", false);
    frame.render_widget(Paragraph::new(Line::from(spans)).block(block), summary_area);

    let rows = found.map_or(&[][..], |r| r.data.as_slice());
    let block = widgets::block(format!("Matches ({})", rows.len()), true);
    if let Some(text) = widgets::placeholder(results, rows.is_empty(), "Nothing matches.") {
        return widgets::message(frame, table_area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|hit| {
        let mut cells = vec![Cell::from(wire_name(&hit.kind)), Cell::from(hit.id.clone())];
        if wide {
            cells.push(Cell::from(hit.stack.as_str()));
            cells.push(Cell::from(app.organization_name(&hit.organization_id).to_string()));
        }
        cells.push(Cell::from(format!("{}: {}", hit.field, hit.value)));
        if wide {
            cells.push(Cell::from(format::time(&hit.created_at)));
        }
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Kind", 12),
            fixed("Id", 33),
            fixed("Stack", 7),
            fixed("Organization", 24),
            fill("Matched"),
            fixed("Created", 19),
        ]
    } else {
        vec![fixed("Kind", 12), fixed("Id", 33), fill("Matched")]
    };
    SelectTable {
        block: widgets::with_error(block, results),
        columns,
        rows: table_rows.collect(),
        selected: Some(selected),
        focused: true,
    }
    .render(frame, table_area);
}
