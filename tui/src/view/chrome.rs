//! The frame around every tab: tab bar, connection banner, status line,
//! and the help and confirmation popups.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Paragraph, Tabs, Wrap};

use crate::api::StackName;
use crate::app::{App, Connection, Detail, Tab, WebhookPane};
use crate::view::{
    accounts, activity, audit, detail, disputes, form, format, organizations, overview, rates, requests,
    webhooks, widgets,
};

/// The banner wraps onto at most this many lines on narrow terminals.
const BANNER_LINES_MAX: usize = 3;

/// Every key, as the help overlay lists them.
pub const KEYS: [(&str, &str); 22] = [
    ("Tab  Shift-Tab", "next / previous tab"),
    ("1 … 9", "jump to a tab"),
    ("↑ ↓  j k", "move the selection (PgUp PgDn by 10)"),
    ("Home End  g G", "first / last row"),
    ("Enter", "open the selected row's detail"),
    ("Esc", "back: close the detail, clear the search"),
    ("/", "search any part of an id, reference, phone, email or amount"),
    ("F  R", "Activity: status filter / reconcile live, last 24 h"),
    ("s", "switch stack: live / sandbox"),
    ("r", "refresh now"),
    ("← →  h l", "Webhooks: endpoints / failing deliveries"),
    ("c  f", "Activity detail: complete / fail, with reference and note"),
    ("t", "Webhooks: retry the selected failing delivery"),
    ("e", "Webhooks: re-enable the selected endpoint"),
    ("v", "Accounts: run verify on the ledger"),
    ("o  Enter", "Accounts: the node's own accounts; an account's entries"),
    ("a  d", "Dispute detail: accept / decline an open dispute"),
    ("n e x a i K", "Orgs: new, rename, suspend, reinstate, invite, API keys"),
    ("n  p", "Audit: next (older) / previous page"),
    ("y  n", "confirm / cancel an action"),
    ("?", "this help (any key closes it)"),
    ("q  Ctrl-C", "quit"),
];

/// Draws the whole console from the state; any size, including zero.
pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let banner = banner(app);
    let banner_height = banner.as_ref().map_or(0, |(text, _)| {
        let lines = text.chars().count().div_ceil(usize::from(area.width));
        u16::try_from(lines.clamp(1, BANNER_LINES_MAX)).unwrap_or(1)
    });
    let [header, banner_area, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(banner_height),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    render_header(app, frame, header);
    if let Some((text, style)) = banner {
        frame.render_widget(Paragraph::new(text).style(style).wrap(Wrap { trim: true }), banner_area);
    }
    render_body(app, frame, body);
    render_footer(app, frame, footer);
    if let Some(open) = &app.form {
        form::render_form(open, frame, body);
    }
    if let Some(notice) = &app.notice {
        form::render_notice(notice, frame, body);
    }
    if let Some(confirm) = &app.confirm {
        render_confirm(&confirm.prompt, frame, body);
    }
    if app.help {
        render_help(frame, area);
    }
}

fn render_body(app: &App, frame: &mut Frame, area: Rect) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    if let Some(open) = &app.detail {
        return detail::render(app, open, frame, area);
    }
    match app.tab {
        Tab::Overview => overview::render(app, frame, area),
        Tab::Accounts => accounts::render(app, frame, area),
        Tab::Rates => rates::render(app, frame, area),
        Tab::Activity => activity::render(app, frame, area),
        Tab::Disputes => disputes::render(app, frame, area),
        Tab::Webhooks => webhooks::render(app, frame, area),
        Tab::Requests => requests::render(app, frame, area),
        Tab::Organizations => organizations::render(app, frame, area),
        Tab::Audit => audit::render(app, frame, area),
    }
}

fn render_header(app: &App, frame: &mut Frame, area: Rect) {
    let stack_label = format!(" ● {} ", app.stack.as_str());
    let stack_width = u16::try_from(stack_label.chars().count()).unwrap_or(u16::MAX);
    let [brand, tabs, stack] =
        Layout::horizontal([Constraint::Length(5), Constraint::Min(0), Constraint::Length(stack_width)])
            .areas(area);
    frame.render_widget(Span::styled("Sika ", format::title_style().fg(Color::Cyan)), brand);
    let titles: Vec<&str> = Tab::ALL.iter().map(|t| t.title()).collect();
    // A space either side of each title and a divider between them; on a
    // terminal too narrow for that (80 columns), no spaces and the short
    // titles, so that every title stays whole.
    let spaced_width = titles.iter().map(|t| t.chars().count() + 3).sum::<usize>() - 1;
    let fits = spaced_width <= usize::from(tabs.width);
    let padding = if fits { " " } else { "" };
    let titles: Vec<&str> = if fits { titles } else { Tab::ALL.iter().map(|t| t.short_title()).collect() };
    let tabs_widget = Tabs::new(titles)
        .padding(padding, padding)
        .select(app.tab.index())
        .style(format::label_style())
        .highlight_style(
            Style::default().fg(Color::White).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )
        .divider("│");
    frame.render_widget(tabs_widget, tabs);
    let stack_style = match app.stack {
        StackName::Live => Style::default().fg(Color::Green).add_modifier(Modifier::BOLD),
        StackName::Sandbox => Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    };
    frame.render_widget(Span::styled(stack_label, stack_style), stack);
}

/// The red lines that say the node cannot be used, or `None`.
fn banner(app: &App) -> Option<(String, Style)> {
    let text = match &app.connection {
        Connection::Connected => return None,
        Connection::Connecting => {
            let line = format!(" connecting to the admin API at {} …", app.admin_url);
            return Some((line, Style::default().fg(Color::Black).bg(Color::Yellow)));
        }
        Connection::Unreachable(cause) => {
            format!(" ✖ cannot reach the admin API at {}; retrying every 2 s ({cause})", app.admin_url)
        }
        Connection::Unauthorized(message) => format!(
            " ✖ the admin API at {} refused the operator token (401: {message}); \
             check --token or <data-dir>/admin-token",
            app.admin_url
        ),
    };
    let style = Style::default().fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD);
    Some((text, style))
}

fn render_footer(app: &App, frame: &mut Frame, area: Rect) {
    let line = if let Some(buffer) = &app.search {
        let label = match app.tab {
            Tab::Requests => "request id",
            Tab::Activity => "search id or externalReference",
            _ => "search ids, references, phones, emails, amounts",
        };
        Line::from(vec![
            Span::styled(format!("/ {label}: "), Style::default().fg(Color::Cyan)),
            Span::raw(buffer.clone()),
            Span::styled("█", Style::default().fg(Color::Cyan)),
            Span::styled("   Enter search · Esc cancel", format::label_style()),
        ])
    } else if let Some(flash) = &app.flash {
        let style = if flash.error { format::error_style() } else { Style::default().fg(Color::Green) };
        Line::from(Span::styled(flash.text.clone(), style))
    } else {
        Line::from(Span::styled(hints(app), format::label_style()))
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The keys that matter where the operator is.
fn hints(app: &App) -> &'static str {
    match (&app.detail, app.tab) {
        (Some(Detail::Movement { data, .. }), _) => {
            if data.data.as_ref().is_some_and(|m| m.awaits_settlement()) {
                "c complete · f fail · j/k entries · Esc back · ? help · q quit"
            } else {
                "j/k entries · r refresh · Esc back · ? help · q quit"
            }
        }
        (Some(Detail::Dispute { .. }), _) => "a accept · d decline · j/k messages · Esc back · ? help",
        (Some(Detail::Endpoint { .. }), _) => "j/k attempts · t retry · e enable · Esc back · ? help",
        (Some(Detail::Search { .. }), _) => "j/k move · Enter timeline · / search again · Esc back · ? help",
        (Some(Detail::LedgerAccount { .. }), _) => "j/k move · n older · p newer · Esc back · ? help",
        (Some(Detail::Organization { .. }), _) => {
            "j/k members · i new invitation · K API keys · Esc back · ? help"
        }
        (Some(Detail::Keys { .. }), _) => "j/k keys · x revoke · Esc back · ? help · q quit",
        (Some(Detail::Reconciliation { .. }), _) => "j/k findings · r reconcile again · Esc back · ? help",
        (None, Tab::Overview) => "Tab next tab · s stack · r refresh · ? help · q quit",
        (None, Tab::Accounts) if app.show_system_accounts => {
            "Enter entries · o organizations' accounts · v verify · s stack · ? help"
        }
        (None, Tab::Accounts) => "Enter entries · o node's own accounts · v verify · s stack · ? help",
        (None, Tab::Rates) => "j/k move · s stack · r refresh · ? help · q quit",
        (None, Tab::Activity) => "Enter timeline · / search · F status · s stack · ? help · q quit",
        (None, Tab::Disputes) => "Enter thread · s stack · r refresh · ? help · q quit",
        (None, Tab::Webhooks) if app.webhook_pane == WebhookPane::Deliveries => {
            "t retry · Enter endpoint · ← endpoints · s stack · ? help · q quit"
        }
        (None, Tab::Webhooks) => "Enter attempts · e enable · → deliveries · s stack · ? help · q quit",
        (None, Tab::Requests) if app.lookup_id.is_some() => {
            "j/k scroll · Esc failed requests · ? help · q quit"
        }
        (None, Tab::Requests) => "Enter request log · / search · s stack · ? help · q quit",
        (None, Tab::Organizations) => "n new · e rename · x suspend · a reinstate · Enter members · K keys",
        (None, Tab::Audit) => "n older page · p newer page · j/k move · r refresh · ? help · q quit",
    }
}

fn render_confirm(prompt: &str, frame: &mut Frame, area: Rect) {
    let width = area.width.min(64);
    let inner_width = usize::from(width.saturating_sub(2)).max(1);
    let prompt_lines = prompt.chars().count().div_ceil(inner_width);
    let height = u16::try_from(prompt_lines + 4).unwrap_or(u16::MAX);
    let text = Text::from(vec![
        Line::from(prompt.to_string()),
        Line::default(),
        Line::from(vec![
            Span::styled("y", Style::default().fg(Color::Green).add_modifier(Modifier::BOLD)),
            Span::raw(" confirm   "),
            Span::styled("n", Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)),
            Span::raw(" / Esc cancel"),
        ]),
    ]);
    widgets::popup(frame, widgets::centered(area, width, height), "Confirm", text, Color::Yellow);
}

fn render_help(frame: &mut Frame, area: Rect) {
    let key_width = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0) + 2;
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(format!(" {key:<key_width$}"), Style::default().fg(Color::Cyan)),
                Span::raw(*what),
            ])
        })
        .collect();
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let popup = widgets::centered(area, 80, height);
    widgets::popup(frame, popup, "Keys", Text::from(lines), Color::Cyan);
}
