//! The JSON log line, written straight into the line's buffer. The stock
//! formatter (`tracing_subscriber::fmt().json()`) serialises every field
//! through serde_json and a `fmt::Write` adaptor: callgrind counted ~25,000
//! instructions for each API request's line, a fifth of the node's work
//! for a `GET /v1/accounts`. This one writes the same object (`timestamp`,
//! `level`, the event's fields in the order they were recorded, `message`
//! first, then `target`) with the same JSON types and escapes, for a
//! fraction of that. An event inside a span goes to the stock formatter,
//! which knows how to list spans (the node opens none today).

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::time::SystemTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent};
use tracing_subscriber::registry::LookupSpan;

/// The node's JSON line format.
pub(crate) struct JsonLines {
    /// For events inside a span.
    stock: Format<Json, SystemTime>,
}

impl JsonLines {
    pub(crate) fn new() -> JsonLines {
        JsonLines { stock: Format::default().json().flatten_event(true).with_current_span(false) }
    }
}

impl<S> FormatEvent<S, JsonFields> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if ctx.lookup_current().is_some() {
            return self.stock.format_event(ctx, writer, event);
        }
        let mut line = String::with_capacity(320);
        line.push_str("{\"timestamp\":\"");
        timestamp(&mut line, std::time::SystemTime::now());
        line.push_str("\",\"level\":\"");
        line.push_str(event.metadata().level().as_str());
        line.push('"');
        let mut fields = Fields { line: &mut line, result: Ok(()) };
        event.record(&mut fields);
        fields.result?;
        line.push_str(",\"target\":");
        quoted(&mut line, event.metadata().target());
        line.push_str("}\n");
        writer.write_str(&line)
    }
}

/// Appends `at` as the stock formatter writes it (RFC 3339 in UTC with
/// microseconds, `2026-11-27T15:30:36.157744Z`). The part up to the second
/// is formatted once a second per thread: formatting the whole instant
/// each time was ~2,300 instructions a line.
fn timestamp(line: &mut String, at: std::time::SystemTime) {
    thread_local! {
        static SECOND: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seconds = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != seconds {
            text.clear();
            match chrono::DateTime::from_timestamp(seconds, 0) {
                Some(at) => {
                    let _ = write!(text, "{}", at.format("%Y-%m-%dT%H:%M:%S"));
                }
                None => text.push_str("1970-01-01T00:00:00"),
            }
            *cached = seconds;
        }
        line.push_str(text);
    });
    let micros = since.subsec_micros();
    let mut digits = [b'0'; 6];
    let mut rest = micros;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    line.push('.');
    line.push_str(std::str::from_utf8(&digits).unwrap_or("000000"));
    line.push('Z');
}

/// Appends `,"name":value` for each field.
struct Fields<'a> {
    line: &'a mut String,
    result: fmt::Result,
}

impl Fields<'_> {
    fn name(&mut self, field: &Field) {
        self.line.push(',');
        quoted(self.line, field.name());
        self.line.push(':');
    }

    /// An integer field, written as JSON writes it.
    fn number(&mut self, field: &Field, value: impl itoa::Integer) {
        self.name(field);
        self.line.push_str(itoa::Buffer::new().format(value));
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.name(field);
        quoted(self.line, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.name(field);
        self.line.push('"');
        if let Err(e) = write!(Escaped(self.line), "{value:?}") {
            self.result = Err(e);
        }
        self.line.push('"');
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.name(field);
        self.line.push('"');
        if let Err(e) = write!(Escaped(self.line), "{value}") {
            self.result = Err(e);
        }
        self.line.push('"');
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.number(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.number(field, value);
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        self.number(field, value);
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.number(field, value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.name(field);
        // As serde_json writes them (with its formatter): a finite
        // number, or null.
        if value.is_finite() {
            self.line.push_str(zmij::Buffer::new().format_finite(value));
        } else {
            self.line.push_str("null");
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.name(field);
        self.line.push_str(if value { "true" } else { "false" });
    }
}

/// `text` as a JSON string.
fn quoted(line: &mut String, text: &str) {
    line.push('"');
    let _ = Escaped(line).write_str(text);
    line.push('"');
}

/// Writes what it is given with JSON's string escapes, as serde_json does.
struct Escaped<'a>(&'a mut String);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        // Most text needs no escape: one pass without branches to find out.
        let escapes = text.bytes().fold(false, |any, b| any | (b < 0x20) | (b == b'"') | (b == b'\\'));
        if !escapes {
            self.0.push_str(text);
            return Ok(());
        }
        let mut plain = 0;
        for (at, byte) in text.bytes().enumerate() {
            let escape = match byte {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            self.0.push_str(&text[plain..at]);
            if escape.is_empty() {
                write!(self.0, "\\u{byte:04x}")?;
            } else {
                self.0.push_str(escape);
            }
            plain = at + 1;
        }
        self.0.push_str(&text[plain..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(log: impl FnOnce(), stock: bool) -> String {
        let out = Captured::default();
        let writer = {
            let out = out.clone();
            move || out.clone()
        };
        let builder = tracing_subscriber::fmt().json().flatten_event(true).with_current_span(false);
        if stock {
            tracing::subscriber::with_default(builder.with_writer(writer).finish(), log);
        } else {
            tracing::subscriber::with_default(
                builder.event_format(JsonLines::new()).with_writer(writer).finish(),
                log,
            );
        }
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn the_timestamp_is_rfc_3339_in_utc_with_microseconds() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_795_793_436_157_744);
        let mut line = String::new();
        timestamp(&mut line, at);
        assert_eq!(line, "2026-11-27T15:30:36.157744Z");
        // The same second again (from the cache), then the next one.
        line.clear();
        timestamp(&mut line, at + std::time::Duration::from_micros(5));
        assert_eq!(line, "2026-11-27T15:30:36.157749Z");
        line.clear();
        timestamp(&mut line, at + std::time::Duration::from_secs(1));
        assert_eq!(line, "2026-11-27T15:30:37.157744Z");
    }

    /// Every field type and escape the request line and the node's other
    /// lines use, logged by both formatters: the objects are equal, with the
    /// same keys in the same order.
    #[test]
    fn lines_read_as_the_stock_formatters_do() {
        let log = || {
            let client: std::net::IpAddr = [127, 0, 0, 1].into();
            tracing::info!(
                requestId = "req_1",
                stack = "sandbox",
                status = 200u16,
                durationMs = 0.9951450000000001,
                organizationId = Some("org_1"),
                missing = None::<&str>,
                clientAddress = %client,
                negative = -3i64,
                flag = true,
                nan = f64::NAN,
                tiny = 1e-7,
                huge = 1.5e300,
                whole = 3.0,
                large = u64::MAX,
                "request"
            );
            let error = std::io::Error::other("disk \"full\"\n\tand\u{1}more\\");
            tracing::error!(error = %error, debug = ?"quoted \"x\"", "cannot write");
            tracing::warn!("a plain message with unicode: é ✓");
        };
        let ours = lines(log, false);
        let stock = lines(log, true);
        // The same text but for the instant each was taken.
        let untimed = |text: &str| -> Vec<String> {
            text.lines()
                .map(|line| {
                    let rest = line.strip_prefix("{\"timestamp\":\"").unwrap_or_else(|| panic!("{line}"));
                    let end = rest.find('"').unwrap();
                    assert!(rest[..end].ends_with('Z') && rest[..end].len() == 27, "RFC 3339 in UTC: {line}");
                    rest[end..].to_string()
                })
                .collect()
        };
        assert_eq!(untimed(&ours), untimed(&stock));
        assert_eq!(ours.lines().count(), 3);
        for line in ours.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        }
    }
}
