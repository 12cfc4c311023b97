//! The period an export covers, checked: at most [`RANGE_DAYS_MAX`] days,
//! so one request cannot ask a node for every row it has ever held.

use chrono::{DateTime, NaiveDate};
use sika_api::exports::ExportRange;

use crate::domain::error::{ApiError, ApiResult};

/// The longest period one export covers, in days.
pub(crate) const RANGE_DAYS_MAX: i64 = 366;
const DAY_MS: i64 = 86_400_000;
const RANGE_MS_MAX: i64 = RANGE_DAYS_MAX * DAY_MS;

/// `[from_ms, to_ms)`: rows created at or after `from_ms` and before `to_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CreatedRange {
    pub from_ms: i64,
    pub to_ms: i64,
}

impl CreatedRange {
    /// The period `query` asks for, `now_ms` being the node's clock: both
    /// bounds absent are the 366 days ending now (now included);
    /// `createdFrom` alone runs to now, `createdTo` alone from 366 days
    /// before it. A bound that is
    /// not a date-time or a date, an end not after its start, or more than
    /// 366 days between them is refused naming the field.
    pub(crate) fn new(query: &ExportRange, now_ms: i64) -> ApiResult<CreatedRange> {
        let from = query.created_from.as_deref().map(|text| instant("createdFrom", text)).transpose()?;
        let to = query.created_to.as_deref().map(|text| instant("createdTo", text)).transpose()?;
        let (from_ms, to_ms, wide_field) = match (from, to) {
            (None, None) => (now_ms.saturating_sub(RANGE_MS_MAX), now_ms, "createdTo"),
            (Some(from), None) => (from, now_ms.max(from), "createdFrom"),
            (None, Some(to)) => (to.saturating_sub(RANGE_MS_MAX), to, "createdTo"),
            (Some(from), Some(to)) => (from, to, "createdTo"),
        };
        if to_ms < from_ms {
            return Err(ApiError::validation("createdTo", "must not be before createdFrom"));
        }
        if to_ms.saturating_sub(from_ms) > RANGE_MS_MAX {
            return Err(ApiError::validation(
                wide_field,
                format!("createdFrom and createdTo must be at most {RANGE_DAYS_MAX} days apart"),
            )
            .with_detail("maxDays", RANGE_DAYS_MAX));
        }
        // Without `createdTo` the period ends with the request: a row made
        // in the very millisecond the export was asked for is in it.
        let to_ms = if query.created_to.is_none() { to_ms.saturating_add(1) } else { to_ms };
        Ok(CreatedRange { from_ms, to_ms })
    }

    /// Where a row created at `created_ms` stands against the period.
    pub(crate) fn place(&self, created_ms: i64) -> Place {
        if created_ms >= self.to_ms {
            Place::Later
        } else if created_ms >= self.from_ms {
            Place::Within
        } else {
            Place::Earlier
        }
    }

    /// `2026-01-01_2026-02-01`, for the file's name.
    pub(crate) fn label(&self) -> String {
        let day = |ms: i64| DateTime::from_timestamp_millis(ms).unwrap_or_default().format("%Y-%m-%d");
        format!("{}_{}", day(self.from_ms), day(self.to_ms))
    }
}

/// A row's creation time against a [`CreatedRange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Later,
    Within,
    Earlier,
}

/// Milliseconds since the epoch of an RFC 3339 date-time or a date (its
/// 00:00 UTC).
fn instant(field: &str, text: &str) -> ApiResult<i64> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        && let Some(midnight) = day.and_hms_opt(0, 0, 0)
    {
        return Ok(midnight.and_utc().timestamp_millis());
    }
    Err(ApiError::validation(
        field,
        "must be an RFC 3339 date-time (2026-01-31T00:00:00Z) or a date (2026-01-31)",
    ))
}

/// A wire timestamp (`createdAt`) in milliseconds since the epoch.
pub(crate) fn wire_ms(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text).ok().map(|at| at.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: Option<&str>, to: Option<&str>) -> ApiResult<CreatedRange> {
        let query =
            ExportRange { created_from: from.map(str::to_string), created_to: to.map(str::to_string) };
        CreatedRange::new(&query, wire_ms("2026-11-27T12:00:00Z").unwrap())
    }

    fn field(result: ApiResult<CreatedRange>) -> String {
        let error = result.unwrap_err();
        error.details.and_then(|d| d.get("field").and_then(|f| f.as_str().map(str::to_string))).unwrap()
    }

    #[test]
    fn defaults_to_the_366_days_ending_now() {
        let now = wire_ms("2026-11-27T12:00:00Z").unwrap();
        let whole = range(None, None).unwrap();
        assert_eq!((whole.from_ms, whole.to_ms), (now - RANGE_MS_MAX, now + 1), "now included");
        let to = range(None, Some("2026-03-01")).unwrap();
        assert_eq!(to.to_ms - to.from_ms, RANGE_MS_MAX);
    }

    #[test]
    fn refuses_more_than_366_days_naming_the_field() {
        assert!(range(Some("2025-01-01"), Some("2026-01-02")).is_ok(), "366 days exactly");
        assert_eq!(field(range(Some("2025-01-01"), Some("2026-01-02T00:00:00.001Z"))), "createdTo");
        assert_eq!(field(range(Some("2025-01-01T00:00:00Z"), None)), "createdFrom");
        assert_eq!(field(range(Some("yesterday"), None)), "createdFrom");
        assert_eq!(field(range(None, Some("2026-13-01"))), "createdTo");
        assert_eq!(field(range(Some("2026-02-01"), Some("2026-01-01"))), "createdTo");
    }
}
