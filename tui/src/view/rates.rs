//! Rates: the selected stack's spread and rate feed, and every currency's
//! rate per US dollar with where it comes from and how old it is.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::api::{RateFeedStatus, StackRate, StackRates, wire_name};
use crate::app::App;
use crate::view::format;
use crate::view::widgets::{self, SelectTable, WIDE_WIDTH_MIN, fixed};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let lines = summary_lines(app);
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let [summary, table] = Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(area);
    let block = widgets::block(format!("Rates · {}", app.stack.as_str()), false);
    frame.render_widget(Paragraph::new(lines).block(block), summary);
    render_rates(app, frame, table);
}

/// The spread, then the feed's settings and how polling it goes.
fn summary_lines(app: &App) -> Vec<Line<'static>> {
    let Some(rates) = &app.rates.data else {
        return vec![Line::styled("Loading…", format::label_style())];
    };
    let mut lines = vec![widgets::fields(&[
        ("spread", format!("{} bps", rates.spread_bps)),
        ("base", rates.base.clone()),
        ("currencies", format::count(rates.rates.len() as u64)),
    ])];
    match &rates.feed {
        None => lines.push(Line::styled(
            "no rate feed configured: rates come from the manual table",
            format::label_style(),
        )),
        Some(feed) => lines.extend(feed_lines(feed)),
    }
    lines
}

fn feed_lines(feed: &RateFeedStatus) -> Vec<Line<'static>> {
    let settings = widgets::fields(&[
        ("feed", feed.url.clone()),
        ("every", format::age(seconds(feed.interval_seconds))),
        ("max age", format::age(seconds(feed.max_age_seconds))),
    ]);
    let freshness = if feed.stale { "stale" } else { "fresh" };
    let mut polling = vec![Span::styled(freshness, format::status_style(freshness)), Span::raw("   ")];
    polling.extend(widgets::field("as of", ago(feed.as_of.as_deref(), feed.age_seconds)));
    polling.push(Span::raw("   "));
    let last_success = feed.last_success_at.as_deref().map_or_else(|| "never".to_string(), format::time);
    polling.extend(widgets::field("last success", last_success));
    let mut lines = vec![settings, Line::from(polling)];
    if let Some(error) = &feed.last_error {
        lines.push(Line::styled(format!("last error: {error}"), format::error_style()));
    }
    lines
}

/// A timestamp and its age, e.g. `2025-03-14 10:20:30 (4m ago)`.
fn ago(at: Option<&str>, age_seconds: Option<i64>) -> String {
    match (at, age_seconds) {
        (Some(at), Some(age)) => format!("{} ({} ago)", format::time(at), format::age(age)),
        (Some(at), None) => format::time(at),
        (None, _) => "—".to_string(),
    }
}

fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn render_rates(app: &App, frame: &mut Frame, area: Rect) {
    let rows = app.rate_rows();
    let title = format!("Units per USD · {} ({})", app.stack.as_str(), rows.len());
    let block = widgets::with_error(widgets::block(title, true), &app.rates);
    if let Some(text) = widgets::placeholder(&app.rates, rows.is_empty(), "No rates on this stack.") {
        return widgets::message(frame, area, block, text);
    }
    let wide = area.width >= WIDE_WIDTH_MIN;
    let unavailable = unavailable_text(app.rates.data.as_ref());
    let table_rows = rows.iter().map(|(code, rate)| rate_row(code, rate, wide, unavailable));
    let columns = vec![
        fixed("Currency", 8),
        fixed("Rate", 18),
        fixed("Source", 24),
        if wide { fixed("As of", 19) } else { fixed("As of", 11) },
        fixed("Age", 5),
    ];
    SelectTable {
        block,
        columns,
        rows: table_rows.collect(),
        selected: Some(app.rates_selected),
        focused: true,
    }
    .render(frame, area);
}

/// Why a currency has no rate: only a stale feed takes a rate away, so say
/// so when the feed is stale.
fn unavailable_text(rates: Option<&StackRates>) -> &'static str {
    match rates.and_then(|r| r.feed.as_ref()) {
        Some(feed) if feed.stale => "unavailable (feed stale)",
        _ => "unavailable",
    }
}

fn rate_row<'a>(code: &str, rate: &StackRate, wide: bool, unavailable: &'static str) -> Row<'a> {
    let Some(value) = &rate.rate else {
        // Payments in this currency are refused until the feed recovers.
        let cells = [Cell::from(code.to_string()), widgets::figure("—"), Cell::from(unavailable)];
        return Row::new(cells).style(format::warning_style());
    };
    let source = rate.source.as_ref().map_or_else(|| "—".to_string(), wire_name);
    let as_of = rate.as_of.as_deref().unwrap_or_default();
    let as_of = if wide { format::time(as_of) } else { format::time_compact(as_of) };
    let age = rate.age_seconds.map_or_else(|| "—".to_string(), format::age);
    Row::new(vec![
        Cell::from(code.to_string()),
        widgets::figure(value.clone()),
        Cell::from(source),
        Cell::from(as_of),
        widgets::figure(age),
    ])
}
