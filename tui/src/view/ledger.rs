//! The node's own books: the system accounts table (the Accounts tab after
//! `o`) and one account's journal entries.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{EntrySide, LedgerEntries, StackName, wire_name};
use crate::app::{App, Pages, Remote};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render_system_accounts(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.system_account_rows();
    let title = format!("The node's own accounts · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::block(title, true);
    let empty = "No system account has been touched on this stack yet.";
    if let Some(text) = widgets::placeholder(&app.system_accounts, rows.is_empty(), empty) {
        return widgets::message(frame, area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|a| {
        let mut cells = vec![
            Cell::from(wire_name(&a.kind)),
            Cell::from(a.currency.clone()),
            widgets::figure(a.balance.clone()),
        ];
        if wide {
            cells.push(widgets::figure(a.debits_posted.clone()));
            cells.push(widgets::figure(a.credits_posted.clone()));
            cells.push(widgets::figure(a.debits_pending.clone()));
            cells.push(widgets::figure(a.credits_pending.clone()));
        }
        cells.push(Cell::from(a.id.clone()));
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Kind", 14),
            fixed("Currency", 8),
            fixed("Balance", 18),
            fixed("Debits", 18),
            fixed("Credits", 18),
            fixed("Held out", 14),
            fixed("Held in", 14),
            fill("Id"),
        ]
    } else {
        vec![fixed("Kind", 14), fixed("Currency", 8), fixed("Balance", 18), fill("Id")]
    };
    SelectTable {
        block: widgets::with_error(block, &app.system_accounts),
        columns,
        rows: table_rows.collect(),
        selected: Some(app.accounts_selected),
        focused: true,
    }
    .render(frame, area);
}

/// One account's entries: what the page read, then the entries.
pub fn render_entries(
    stack: StackName,
    id: &str,
    pages: &Pages,
    entries: &Remote<LedgerEntries>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let [summary_area, table_area] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(area);
    let page = entries.data.as_ref();
    let mut spans = widgets::field("page", (pages.previous.len() + 1).to_string());
    if let Some(page) = page {
        widgets::after_gap(&mut spans, widgets::field("journal entries read", format::count(page.scanned)));
        if page.scan_limit_reached {
            widgets::after_gap(
                &mut spans,
                widgets::warning("stopped at the read limit: n reads further back"),
            );
        } else if page.has_more {
            widgets::after_gap(&mut spans, [Span::styled("n older", format::label_style())]);
        }
    }
    let kind = page.and_then(|p| p.account.kind).map(|k| wire_name(&k));
    let title = match kind {
        Some(kind) => format!("{kind} {id} · {}", stack.as_str()),
        None => format!("{id} · {}", stack.as_str()),
    };
    let block = widgets::block(title, false);
    frame.render_widget(Paragraph::new(Line::from(spans)).block(block), summary_area);

    let rows = page.map_or(&[][..], |p| p.data.as_slice());
    let block = widgets::block(format!("Entries, newest first ({})", rows.len()), true);
    if let Some(text) = widgets::placeholder(entries, rows.is_empty(), "No entries in the journal read.") {
        return widgets::message(frame, table_area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|e| {
        let signed = match e.side {
            EntrySide::Debit => format!("-{}", e.amount),
            EntrySide::Credit => format!("+{}", e.amount),
        };
        let mut cells = vec![Cell::from(format::time(&e.created_at))];
        if wide {
            cells.push(widgets::figure(e.seq.to_string()));
            cells.push(Cell::from(wire_name(&e.kind)));
        }
        cells.push(widgets::figure(signed));
        cells.push(Cell::from(e.counterparty.clone()));
        cells.push(Cell::from(e.memo.clone()));
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fixed("Time", 19),
            fixed("Seq", 8),
            fixed("Kind", 12),
            fixed("Amount", 18),
            fixed("Counterparty", 28),
            fill("Memo"),
        ]
    } else {
        vec![fixed("Time", 19), fixed("Amount", 14), fixed("Counterparty", 18), fill("Memo")]
    };
    SelectTable {
        block: widgets::with_error(block, entries),
        columns,
        rows: table_rows.collect(),
        selected: Some(selected),
        focused: true,
    }
    .render(frame, table_area);
}
