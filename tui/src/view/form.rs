//! Popups that take the keyboard: a form being typed and a notice to read
//! (an invitation token, shown once).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span, Text};

use crate::app::{Form, Notice};
use crate::view::format;
use crate::view::widgets;

pub fn render_form(form: &Form, frame: &mut Frame, area: Rect) {
    let label_width = form.fields.iter().map(|f| f.label.chars().count()).max().unwrap_or(0) + 1;
    let mut lines: Vec<Line> = Vec::new();
    if let Some(intro) = &form.intro {
        lines.push(Line::from(format!(" {intro}")));
        lines.push(Line::default());
    }
    lines.extend(form.fields.iter().enumerate().map(|(index, field)| {
        let focused = index == form.focus;
        let label_style = if focused { Style::default().fg(Color::Cyan) } else { format::label_style() };
        let mut spans = vec![
            Span::styled(format!(" {:<label_width$}", field.label), label_style),
            Span::raw(field.value.clone()),
        ];
        if focused && !form.submitting {
            spans.push(Span::styled("█", Style::default().fg(Color::Cyan)));
        }
        Line::from(spans)
    }));
    lines.push(Line::default());
    if let Some(error) = &form.error {
        lines.push(Line::styled(format!(" {error}"), format::error_style()));
    }
    let hint = if form.submitting {
        " sending…"
    } else {
        " Tab/Enter next field · Enter on the last sends · Esc cancel"
    };
    lines.push(Line::styled(hint, format::label_style()));
    // Long lines (the intro, a refusal) wrap inside the popup.
    let width = area.width.min(72);
    let inner_width = usize::from(width.saturating_sub(2)).max(1);
    let height: usize = lines.iter().map(|l| l.width().div_ceil(inner_width).max(1)).sum();
    let height = u16::try_from(height + 2).unwrap_or(u16::MAX);
    let popup = widgets::centered(area, width, height);
    widgets::popup(frame, popup, &form.title, Text::from(lines), Color::Cyan);
}

pub fn render_notice(notice: &Notice, frame: &mut Frame, area: Rect) {
    let mut lines: Vec<Line> = notice.lines.iter().map(|l| Line::from(format!(" {l}"))).collect();
    lines.push(Line::default());
    lines.push(Line::styled(" Enter or Esc closes", format::label_style()));
    let width = area.width.min(80);
    let inner_width = usize::from(width.saturating_sub(2)).max(1);
    let height: usize = lines.iter().map(|l| l.width().div_ceil(inner_width).max(1)).sum();
    let height = u16::try_from(height + 2).unwrap_or(u16::MAX);
    widgets::popup(
        frame,
        widgets::centered(area, width, height),
        &notice.title,
        Text::from(lines),
        Color::Green,
    );
}
