//! Overview: what needs the operator on each stack (movements awaiting
//! manual settlement, failing webhook endpoints, open disputes, recent
//! failed requests), node status, throughput, balances per currency.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Sparkline};

use crate::api::{Attention, StackName, StackStatus};
use crate::app::{App, stack_index};
use crate::view::format;
use crate::view::widgets::{self, SelectTable, fixed};

const STACKS: [StackName; 2] = [StackName::Live, StackName::Sandbox];

/// Below this height the stack boxes keep only the writer's main figures.
const FULL_STATUS_HEIGHT_MIN: u16 = 30;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let spark_height = if area.height >= 40 { 8 } else { 4 };
    let full = area.height >= FULL_STATUS_HEIGHT_MIN;
    let stack_height = 2 + ATTENTION_ROWS + if full { 7 } else { 4 };
    let [info, stacks, throughput, balances] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(stack_height),
        Constraint::Length(spark_height),
        Constraint::Min(0),
    ])
    .areas(area);
    render_info(app, frame, info);
    let columns = Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)]);
    let [live, sandbox] = columns.areas(stacks);
    for (stack, area) in STACKS.into_iter().zip([live, sandbox]) {
        render_stack(app, stack, full, frame, area);
    }
    let [live, sandbox] = columns.areas(throughput);
    for (stack, area) in STACKS.into_iter().zip([live, sandbox]) {
        render_throughput(app, stack, frame, area);
    }
    render_balances(app, frame, balances);
}

fn render_info(app: &App, frame: &mut Frame, area: Rect) {
    let line = match &app.status {
        Some(status) => widgets::fields(&[
            ("node", format!("v{}", status.version)),
            ("up", format::uptime(status.uptime_seconds)),
            ("admin", app.admin_url.clone()),
        ]),
        None => Line::styled(format!("waiting for {} …", app.admin_url), format::label_style()),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn render_stack(app: &App, stack: StackName, full: bool, frame: &mut Frame, area: Rect) {
    let block =
        widgets::block(format!("{} · to do · counts since start", stack.as_str()), stack == app.stack);
    let Some(status) = app.status.as_ref().map(|s| s.stack(stack)) else {
        let text = Line::styled("Loading…", format::label_style());
        return widgets::message(frame, area, block, text.into());
    };
    let mut lines = attention_lines(&status.attention);
    lines.extend(stack_lines(status, full));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Lines `attention_lines` writes.
const ATTENTION_ROWS: u16 = 4;

/// What waits for the operator, first and coloured when anything does.
fn attention_lines(attention: &Attention) -> Vec<Line<'static>> {
    let waiting = |n: u64, color: Color| if n > 0 { Style::default().fg(color) } else { Style::default() };
    let settlement = match attention.oldest_awaiting_age_seconds {
        Some(age) if attention.awaiting_settlement > 0 => {
            let age = format::age(i64::try_from(age).unwrap_or(i64::MAX));
            format!("{} · oldest {age}", format::count(attention.awaiting_settlement))
        }
        _ => format::count(attention.awaiting_settlement),
    };
    vec![
        row("awaiting operator", settlement, waiting(attention.awaiting_settlement, Color::Yellow)),
        row(
            "failing endpoints",
            format::count(attention.failing_endpoints),
            waiting(attention.failing_endpoints, Color::Red),
        ),
        row(
            "open disputes",
            format::count(attention.open_disputes),
            waiting(attention.open_disputes, Color::Yellow),
        ),
        row(
            "failed requests",
            format::count(attention.recent_failed_requests),
            waiting(attention.recent_failed_requests, Color::Yellow),
        ),
    ]
}

fn row(label: &str, value: String, style: Style) -> Line<'static> {
    Line::from(vec![Span::styled(format!("{label:<18}"), format::label_style()), Span::styled(value, style)])
}

fn stack_lines(status: &StackStatus, full: bool) -> Vec<Line<'static>> {
    let failed_style =
        if status.commands_failed > 0 { Style::default().fg(Color::Yellow) } else { Style::default() };
    let queue_style =
        if status.writer_queue_depth > 0 { Style::default().fg(Color::Yellow) } else { Style::default() };
    if !full {
        return vec![
            row("commands", format::count(status.commands), Style::default()),
            row("commands failed", format::count(status.commands_failed), failed_style),
            row("writer queue", format::count(status.writer_queue_depth), queue_style),
            row("database", format::bytes(status.database_bytes), Style::default()),
        ];
    }
    vec![
        row("journal entries", format::count(status.journal_length), Style::default()),
        row("commits", format::count(status.commits), Style::default()),
        row("commands", format::count(status.commands), Style::default()),
        row("commands failed", format::count(status.commands_failed), failed_style),
        row("transfers", format::count(status.transfers), Style::default()),
        row("writer queue", format::count(status.writer_queue_depth), queue_style),
        row("database", format::bytes(status.database_bytes), Style::default()),
    ]
}

fn render_throughput(app: &App, stack: StackName, frame: &mut Frame, area: Rect) {
    let throughput = &app.throughput[stack_index(stack)];
    let rate = throughput.latest().map_or_else(|| "—".to_string(), format::count);
    let block = widgets::block(format!("{} commands/s: {rate}", stack.as_str()), false);
    // The newest samples that fit, oldest on the left.
    let width = usize::from(area.width.saturating_sub(2));
    let skip = throughput.per_second.len().saturating_sub(width);
    let data: Vec<u64> = throughput.per_second.iter().skip(skip).copied().collect();
    let sparkline = Sparkline::default().block(block).data(&data).style(Style::default().fg(Color::Cyan));
    frame.render_widget(sparkline, area);
}

fn render_balances(app: &App, frame: &mut Frame, area: Rect) {
    let mut rows = Vec::new();
    for stack in STACKS {
        for total in app.totals(stack) {
            rows.push(Row::new(vec![
                ratatui::widgets::Cell::from(stack.as_str()),
                ratatui::widgets::Cell::from(total.currency.clone()),
                widgets::figure(total.available_balance.clone()),
                widgets::figure(total.pending_balance.clone()),
                widgets::figure(total.total_balance.clone()),
                widgets::figure(format::count(total.accounts)),
            ]));
        }
    }
    let block = widgets::block("Balances per currency", false);
    if rows.is_empty() {
        let remote = &app.accounts[stack_index(app.stack)];
        let text = widgets::placeholder(remote, true, "No balances yet on either stack.").unwrap_or_default();
        return widgets::message(frame, area, block, text);
    }
    SelectTable {
        block,
        columns: vec![
            fixed("Stack", 8),
            fixed("Currency", 8),
            fixed("Available", 18),
            fixed("Pending", 18),
            fixed("Total", 18),
            fixed("Accounts", 8),
        ],
        rows,
        selected: None,
        focused: false,
    }
    .render(frame, area);
}
