//! Text for figures, times and statuses, and the styles that go with them.

use ratatui::style::{Color, Modifier, Style};

/// `2025-01-02T03:04:05.678Z` as `2025-01-02 03:04:05`; other text as is.
pub fn time(timestamp: &str) -> String {
    match parse(timestamp) {
        Some((date, clock)) => format!("{date} {clock}"),
        None => dash(timestamp).to_string(),
    }
}

/// `2025-01-02T03:04:05.678Z` as `01-02 03:04`, for narrow columns.
pub fn time_compact(timestamp: &str) -> String {
    match parse(timestamp) {
        Some((date, clock)) => format!("{} {}", &date[5..], &clock[..5]),
        None => dash(timestamp).to_string(),
    }
}

/// The date and `hh:mm:ss` of an RFC 3339 timestamp.
fn parse(timestamp: &str) -> Option<(&str, &str)> {
    let (date, rest) = timestamp.split_once('T')?;
    let clock = rest.get(..8)?;
    let valid = date.len() == 10 && date.is_char_boundary(5) && clock.as_bytes().get(2) == Some(&b':');
    valid.then_some((date, clock))
}

/// An empty value as an em dash, so a blank cell reads as "none".
pub fn dash(text: &str) -> &str {
    if text.is_empty() { "—" } else { text }
}

/// `1234567` as `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

pub fn uptime(seconds: u64) -> String {
    let (days, hours, minutes, secs) =
        (seconds / 86_400, seconds % 86_400 / 3_600, seconds % 3_600 / 60, seconds % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, _) => format!("{minutes}m {secs:02}s"),
        (0, _, _) => format!("{hours}h {minutes:02}m {secs:02}s"),
        _ => format!("{days}d {hours:02}h {minutes:02}m"),
    }
}

/// How old something is, in its largest whole unit: `12s`, `4m`, `2h`,
/// `3d`. A negative age (a timestamp ahead of the node's clock) shows as
/// it is rather than as fresh.
pub fn age(seconds: i64) -> String {
    match seconds {
        ..60 => format!("{seconds}s"),
        60..3_600 => format!("{}m", seconds / 60),
        3_600..86_400 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// A ratio in 0..1 as a percentage.
pub fn percent(ratio: Option<f64>) -> String {
    match ratio {
        Some(r) if r.is_finite() => format!("{:.1}%", r * 100.0),
        _ => "—".to_string(),
    }
}

pub fn millis(ms: Option<f64>) -> String {
    match ms {
        Some(ms) if ms.is_finite() && ms < 10.0 => format!("{ms:.1} ms"),
        Some(ms) if ms.is_finite() => format!("{ms:.0} ms"),
        _ => "—".to_string(),
    }
}

/// An amount with its currency, as one cell.
pub fn money(amount: &str, currency: &str) -> String {
    match (amount.is_empty(), currency.is_empty()) {
        (true, _) => "—".to_string(),
        (false, true) => amount.to_string(),
        (false, false) => format!("{amount} {currency}"),
    }
}

/// The colour of a status word, the same in every table.
pub fn status_style(status: &str) -> Style {
    let color = match status {
        "completed" | "succeeded" | "active" | "enabled" | "won" | "consistent" | "fresh" => Color::Green,
        "pending" | "processing" | "retrying" | "open" | "needs_response" | "under_review" | "stale" => {
            Color::Yellow
        }
        "failed" | "disabled" | "suspended" | "lost" | "expired" | "revoked" | "INCONSISTENT" => Color::Red,
        // Money that came back after completing: neither a success nor a failure.
        "reversed" => Color::Magenta,
        _ => return Style::default(),
    };
    Style::default().fg(color)
}

pub fn title_style() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn label_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub fn error_style() -> Style {
    Style::default().fg(Color::Red)
}

/// Something the operator should look at that is not yet a failure.
pub fn warning_style() -> Style {
    Style::default().fg(Color::Yellow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_shorten_and_odd_text_passes_through() {
        assert_eq!(time("2025-01-02T03:04:05.678Z"), "2025-01-02 03:04:05");
        assert_eq!(time_compact("2025-01-02T03:04:05.678Z"), "01-02 03:04");
        assert_eq!(time(""), "—");
        assert_eq!(time("yesterday"), "yesterday");
        assert_eq!(time_compact("éT12:00:00"), "éT12:00:00");
    }

    #[test]
    fn figures_read_well() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(uptime(59), "59s");
        assert_eq!(uptime(3_723), "1h 02m 03s");
        assert_eq!(uptime(90_061), "1d 01h 01m");
        assert_eq!(age(12), "12s");
        assert_eq!(age(4 * 60 + 59), "4m");
        assert_eq!(age(2 * 3_600 + 1), "2h");
        assert_eq!(age(3 * 86_400), "3d");
        assert_eq!(age(-5), "-5s");
        assert_eq!(percent(Some(0.985)), "98.5%");
        assert_eq!(percent(None), "—");
        assert_eq!(millis(Some(123.4)), "123 ms");
        assert_eq!(millis(Some(1.25)), "1.2 ms");
    }
}
