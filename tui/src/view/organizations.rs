//! The Organizations tab: every organization on the node by name, one
//! organization's members (where an invitation is re-issued) and its API
//! keys on a stack (where one is revoked).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{ApiKey, Member, Organization, StackName, wire_name};
use crate::app::{App, Remote};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fill, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.organization_rows();
    let block = widgets::block(format!("Organizations ({})", rows.len()), true);
    let empty = "No organizations yet. Press n to create one.";
    if let Some(text) = widgets::placeholder(&app.organizations, rows.is_empty(), empty) {
        return widgets::message(frame, area, block, text);
    }
    let block = widgets::with_error(block, &app.organizations);
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|org| {
        let mut cells = vec![Cell::from(org.name.clone()), widgets::status_cell(&wire_name(&org.status))];
        cells.push(Cell::from(org.id.clone()));
        if wide {
            cells.push(Cell::from(format::time(&org.created_at)));
        }
        Row::new(cells)
    });
    let columns = if wide {
        vec![fill("Name"), fixed("Status", 10), fixed("Id", 30), fixed("Created", 19)]
    } else {
        vec![fill("Name"), fixed("Status", 10), fixed("Id", 30)]
    };
    SelectTable {
        block,
        columns,
        rows: table_rows.collect(),
        selected: Some(app.organizations_selected),
        focused: true,
    }
    .render(frame, area);
}

/// One organization: its name, status and id, and its members.
pub fn render_detail(
    organization: &Organization,
    members: &Remote<Vec<Member>>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let [summary_area, table_area] =
        Layout::vertical([Constraint::Length(4), Constraint::Min(3)]).areas(area);
    let status = wire_name(&organization.status);
    let block = widgets::block(organization.name.clone(), false).title_top(
        Line::from(Span::styled(format!(" {status} "), format::status_style(&status))).right_aligned(),
    );
    let summary = vec![
        widgets::fields(&[("id", organization.id.clone())]),
        widgets::fields(&[("created", format::time(&organization.created_at))]),
    ];
    frame.render_widget(Paragraph::new(summary).block(block), summary_area);

    let rows = members.data.as_deref().unwrap_or_default();
    let block = widgets::block(format!("Members ({})", rows.len()), true);
    if let Some(text) = widgets::placeholder(members, rows.is_empty(), "No members.") {
        return widgets::message(frame, table_area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|m| {
        let mut cells = vec![
            Cell::from(m.name.clone()),
            Cell::from(m.email.clone()),
            Cell::from(wire_name(&m.role)),
            widgets::status_cell(&wire_name(&m.status)),
        ];
        if wide {
            cells.push(Cell::from(m.id.clone()));
        }
        Row::new(cells)
    });
    let mut columns = vec![fill("Name"), fill("Email"), fixed("Role", 9), fixed("Status", 8)];
    if wide {
        columns.push(fixed("Id", 30));
    }
    SelectTable {
        block: widgets::with_error(block, members),
        columns,
        rows: table_rows.collect(),
        selected: Some(selected),
        focused: true,
    }
    .render(frame, table_area);
}

/// An organization's API keys on one stack (where `x` revokes one).
pub fn render_keys(
    stack: StackName,
    organization: &Organization,
    keys: &Remote<Vec<ApiKey>>,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let rows = keys.data.as_deref().unwrap_or_default();
    let title = format!("API keys of {} · {} ({})", organization.name, stack.as_str(), rows.len());
    let block = widgets::block(title, true);
    if let Some(text) = widgets::placeholder(keys, rows.is_empty(), "No API keys on this stack.") {
        return widgets::message(frame, area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let table_rows = rows.iter().map(|key| {
        let status = if key.revoked_at.is_some() { "revoked" } else { "active" };
        let mut cells = vec![
            Cell::from(key.name.clone()),
            Cell::from(format!("{}…", key.hint)),
            widgets::status_cell(status),
            Cell::from(key.scopes.join(" ")),
        ];
        if wide {
            cells.push(Cell::from(key.id.clone()));
            cells.push(Cell::from(format::time(&key.created_at)));
        }
        Row::new(cells)
    });
    let mut columns = vec![fill("Name"), fixed("Key", 18), fixed("Status", 8), fill("Scopes")];
    if wide {
        columns.push(fixed("Id", 30));
        columns.push(fixed("Created", 19));
    }
    SelectTable {
        block: widgets::with_error(block, keys),
        columns,
        rows: table_rows.collect(),
        selected: Some(selected),
        focused: true,
    }
    .render(frame, area);
}
