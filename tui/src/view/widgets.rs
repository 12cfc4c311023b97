//! Pieces every tab uses: a bordered table with a selection, a placeholder
//! for empty or failed lists, and a centered popup.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};

use crate::app::Remote;
use crate::view::format;

/// Terminals at least this wide get the wide layouts with more columns.
pub const WIDE_WIDTH_MIN: u16 = 120;

pub fn block(title: impl Into<String>, focused: bool) -> Block<'static> {
    let border =
        if focused { Style::default().fg(Color::Cyan) } else { Style::default().fg(Color::DarkGray) };
    Block::bordered()
        .border_style(border)
        .title(Span::styled(format!(" {} ", title.into()), format::title_style()))
}

/// A table's column: the header over it and its width.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub title: &'static str,
    pub width: Constraint,
}

/// A column `width` cells wide.
pub const fn fixed(title: &'static str, width: u16) -> Column {
    Column { title, width: Constraint::Length(width) }
}

/// A column sharing out the width the fixed columns leave.
pub const fn fill(title: &'static str) -> Column {
    Column { title, width: Constraint::Fill(1) }
}

/// A table with a header row and the selected row highlighted.
pub struct SelectTable<'a> {
    pub block: Block<'a>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row<'a>>,
    pub selected: Option<usize>,
    pub focused: bool,
}

impl SelectTable<'_> {
    pub fn render(self, frame: &mut Frame, area: Rect) {
        let header = Row::new(self.columns.iter().map(|c| Cell::from(c.title).style(format::label_style())));
        let highlight = if self.focused {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default().add_modifier(Modifier::BOLD)
        };
        let table = Table::new(self.rows, self.columns.iter().map(|c| c.width))
            .header(header)
            .block(self.block)
            .column_spacing(1)
            .row_highlight_style(highlight)
            .highlight_symbol("▶ ")
            .highlight_spacing(ratatui::widgets::HighlightSpacing::Always);
        let mut state = TableState::default().with_selected(self.selected);
        frame.render_stateful_widget(table, area, &mut state);
    }
}

/// A right-aligned cell, for figures.
pub fn figure<'a>(text: impl Into<String>) -> Cell<'a> {
    Cell::from(Line::from(text.into()).right_aligned())
}

pub fn status_cell<'a>(status: &str) -> Cell<'a> {
    Cell::from(Span::styled(format::dash(status).to_string(), format::status_style(status)))
}

/// What to show instead of rows: loading, an error, or that there is
/// nothing. `None` when the rows should be drawn.
pub fn placeholder<T>(remote: &Remote<T>, is_empty: bool, empty: &str) -> Option<Text<'static>> {
    if !is_empty {
        return None;
    }
    if let Some(error) = &remote.error {
        return Some(Text::from(Line::styled(error.clone(), format::error_style())));
    }
    if remote.data.is_none() {
        return Some(Text::from(Line::styled("Loading…", format::label_style())));
    }
    Some(Text::from(Line::styled(empty.to_string(), format::label_style())))
}

/// A placeholder (or an error under the rows) inside a block.
pub fn message(frame: &mut Frame, area: Rect, block: Block<'_>, text: Text<'_>) {
    frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: false }), area);
}

/// A rectangle of at most `width` × `height` in the middle of `area`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height }
}

/// A bordered popup over whatever is below it.
pub fn popup(frame: &mut Frame, area: Rect, title: &str, text: Text<'_>, border: Color) {
    frame.render_widget(Clear, area);
    let block = Block::bordered()
        .border_style(Style::default().fg(border))
        .title(Span::styled(format!(" {title} "), format::title_style()));
    frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: false }), area);
}

/// `label value` with the label dimmed.
pub fn field<'a>(label: &str, value: impl Into<String>) -> Vec<Span<'a>> {
    vec![Span::styled(format!("{label} "), format::label_style()), Span::raw(value.into())]
}

/// Adds `spans` to a line of fields, after the gap that separates them.
pub fn after_gap<'a>(line: &mut Vec<Span<'a>>, spans: impl IntoIterator<Item = Span<'a>>) {
    line.push(Span::raw("   "));
    line.extend(spans);
}

/// A warning on a line of fields: what a limit left out.
pub fn warning<'a>(text: &'a str) -> [Span<'a>; 1] {
    [Span::styled(text, format::warning_style())]
}

/// Several fields on one line, separated by gaps.
pub fn fields<'a>(pairs: &[(&str, String)]) -> Line<'a> {
    let mut spans = Vec::new();
    for (i, (label, value)) in pairs.iter().enumerate() {
        if i == 0 {
            spans.extend(field(label, value.clone()));
        } else {
            after_gap(&mut spans, field(label, value.clone()));
        }
    }
    Line::from(spans)
}

/// The error of a list that still shows its old rows, as the block's
/// bottom title.
pub fn with_error<'a, T>(block: Block<'a>, remote: &Remote<T>) -> Block<'a> {
    match &remote.error {
        Some(error) if remote.data.is_some() => {
            block.title_bottom(Span::styled(format!(" {error} "), format::error_style()))
        }
        _ => block,
    }
}
