//! Accounts: the ledger's own figures, totals per currency and every
//! organization's balance accounts on the selected stack.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{CurrencyTotal, Owned, StackAccounts};
use crate::app::{App, Remote, stack_index};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

/// Rows of totals shown before the accounts table takes over.
const TOTAL_ROWS_MAX: u16 = 6;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let remote = &app.accounts[stack_index(app.stack)];
    let totals = app.totals(app.stack);
    let total_rows = u16::try_from(totals.len()).unwrap_or(u16::MAX).clamp(1, TOTAL_ROWS_MAX);
    let [ledger, totals_area, accounts] =
        Layout::vertical([Constraint::Length(5), Constraint::Length(total_rows + 3), Constraint::Min(0)])
            .areas(area);
    render_ledger(app, frame, ledger);
    render_totals(app, totals, frame, totals_area);
    if app.show_system_accounts {
        crate::view::ledger::render_system_accounts(app, frame, accounts);
    } else {
        render_accounts(app, frame, accounts, remote);
    }
}

fn render_ledger(app: &App, frame: &mut Frame, area: Rect) {
    let block = widgets::block(format!("Ledger · {}", app.stack.as_str()), false);
    let Some(page) = &app.accounts[stack_index(app.stack)].data else {
        let text = Line::styled("Loading…", format::label_style());
        return widgets::message(frame, area, block, text.into());
    };
    let mut lines = vec![widgets::fields(&[
        ("journal entries", format::count(page.ledger.journal_length)),
        ("accounts", format::count(page.data.len() as u64)),
    ])];
    match &page.ledger.last_verify {
        None => {
            lines.push(Line::styled("last verify: never run on this node (press v)", format::label_style()))
        }
        Some(verify) => {
            let verdict = if verify.consistent { "consistent" } else { "INCONSISTENT" };
            let mut spans = widgets::field("last verify", format::time(&verify.at));
            widgets::after_gap(&mut spans, [Span::styled(verdict, format::status_style(verdict))]);
            lines.push(Line::from(spans));
            // The first problem says more than the summary when there is one.
            lines.push(match verify.problems.first() {
                Some(problem) => {
                    let more = verify.problems.len() - 1;
                    let text =
                        if more > 0 { format!("{problem} (and {more} more)") } else { problem.to_string() };
                    Line::styled(text, format::error_style())
                }
                None => Line::from(verify.summary.clone()),
            });
        }
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn render_totals(app: &App, totals: &[CurrencyTotal], frame: &mut Frame, area: Rect) {
    let block = widgets::block("Totals per currency", false);
    if totals.is_empty() {
        let remote = &app.accounts[stack_index(app.stack)];
        let text = widgets::placeholder(remote, true, "No balances yet.").unwrap_or_default();
        return widgets::message(frame, area, block, text);
    }
    let rows = totals.iter().map(|t| {
        Row::new(vec![
            Cell::from(t.currency.clone()),
            widgets::figure(t.available_balance.clone()),
            widgets::figure(t.pending_balance.clone()),
            widgets::figure(t.total_balance.clone()),
            widgets::figure(format::count(t.accounts)),
        ])
    });
    SelectTable {
        block,
        columns: vec![
            fixed("Currency", 8),
            fixed("Available", 18),
            fixed("Pending", 18),
            fixed("Total", 18),
            fixed("Accounts", 8),
        ],
        rows: rows.collect(),
        selected: None,
        focused: false,
    }
    .render(frame, area);
}

fn render_accounts(app: &App, frame: &mut Frame, area: Rect, remote: &Remote<StackAccounts>) {
    let rows = app.account_rows();
    let title = format!("Balance accounts · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::with_error(widgets::block(title, true), remote);
    if let Some(text) =
        widgets::placeholder(remote, rows.is_empty(), "No balance accounts on this stack yet.")
    {
        return widgets::message(frame, area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|Owned { organization_id, item: a }| {
        let mut cells = Vec::new();
        if wide {
            cells.push(Cell::from(app.organization_name(organization_id).to_string()));
        }
        cells.push(Cell::from(a.id.clone()));
        cells.push(Cell::from(a.currency.clone()));
        cells.push(widgets::figure(a.available_balance.clone()));
        if wide {
            cells.push(widgets::figure(a.pending_balance.clone()));
        }
        cells.push(widgets::figure(a.total_balance.clone()));
        cells.push(widgets::figure(a.estimated_usd.clone()));
        if wide {
            cells.push(Cell::from(format::time(&a.created_at)));
        }
        Row::new(cells)
    });
    let columns = if wide {
        vec![
            fill("Organization"),
            fill("Account"),
            fixed("Cur", 4),
            fixed("Available", 16),
            fixed("Pending", 16),
            fixed("Total", 16),
            fixed("≈ USD", 12),
            fixed("Created", 19),
        ]
    } else {
        vec![fill("Account"), fixed("Cur", 4), fixed("Available", 14), fixed("Total", 14), fixed("≈ USD", 10)]
    };
    SelectTable {
        block,
        columns,
        rows: table_rows.collect(),
        selected: Some(app.accounts_selected),
        focused: true,
    }
    .render(frame, area);
}
