//! The live stack against the provider: the period, the matched count and
//! how many findings of each kind, then one row per finding (a movement
//! missing at the provider or in Sika, or a field a pair disagrees on).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{Reconciliation, ReconciliationItem, wire_name};
use crate::app::Remote;
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(data: &Remote<Reconciliation>, selected: usize, frame: &mut Frame, area: Rect) {
    let [summary_area, table_area] =
        Layout::vertical([Constraint::Length(4), Constraint::Min(3)]).areas(area);
    let found = data.data.as_ref();
    let mut lines = Vec::new();
    if let Some(found) = found {
        let mut counts = widgets::field("matched", found.matched.to_string());
        let shown = [
            ("missing at provider", found.missing_at_provider.len()),
            ("missing in Sika", found.missing_in_sika.len()),
            ("mismatched", found.mismatched.len()),
        ];
        for (label, count) in shown {
            widgets::after_gap(&mut counts, widgets::field(label, count.to_string()));
        }
        let mut period = widgets::field("from", format::time(&found.from));
        widgets::after_gap(&mut period, widgets::field("to", format::time(&found.to)));
        lines = vec![Line::from(counts), Line::from(period)];
    }
    let block =
        widgets::block("Reconciliation · live · the provider's transfers and charges, last 24 h", false);
    frame.render_widget(Paragraph::new(lines).block(block), summary_area);

    let rows = found.map(findings).unwrap_or_default();
    let block = widgets::block(format!("Findings ({})", rows.len()), true);
    if let Some(text) = widgets::placeholder(data, rows.is_empty(), "Sika and the provider agree.") {
        return widgets::message(frame, table_area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|(finding, id, kind, detail)| {
        let mut cells = vec![Cell::from(*finding), Cell::from(id.clone())];
        if wide {
            cells.push(Cell::from(kind.clone()));
        }
        cells.push(Cell::from(detail.clone()));
        Row::new(cells)
    });
    let columns = if wide {
        vec![fixed("Finding", 20), fixed("Id", 33), fixed("Kind", 11), fill("Detail")]
    } else {
        vec![fixed("Finding", 20), fixed("Id", 24), fill("Detail")]
    };
    SelectTable {
        block: widgets::with_error(block, data),
        columns,
        rows: table_rows.collect(),
        selected: Some(selected),
        focused: true,
    }
    .render(frame, table_area);
}

/// One row per finding: what it is, the id, the kind and what differs.
fn findings(found: &Reconciliation) -> Vec<(&'static str, String, String, String)> {
    let item = |finding, item: &ReconciliationItem| {
        let detail = format!("{} {} · {}", item.amount, item.currency, item.status);
        (finding, item.id.clone(), wire_name(&item.kind), detail)
    };
    let mut rows: Vec<_> = found.missing_at_provider.iter().map(|i| item("missing at provider", i)).collect();
    rows.extend(found.missing_in_sika.iter().map(|i| item("missing in Sika", i)));
    rows.extend(found.mismatched.iter().map(|m| {
        let detail = format!("{}: Sika {} · provider {}", wire_name(&m.field), m.sika, m.provider);
        ("mismatched", m.id.clone(), String::new(), detail)
    }));
    rows
}
