//! A stack's one source of mid rates: the operator's manual table (from
//! the configuration file, or replaced at runtime through the admin API
//! and kept durably), a polled feed, and on the sandbox alone the built-in
//! reference table for every currency neither of those sets. Quotes, conversions,
//! cross-currency payouts, orders, checkout and spend caps all read it
//! through the engine's `RateSource`, so they can never disagree.
//!
//! A currency's rate comes from the manual table if it lists it, else from
//! the feed while the feed's `asOf` is younger than `max_age` (a currency
//! the feed lists but whose rate went stale is unavailable, on the sandbox
//! too, so a stale feed is never hidden), else on the sandbox from the
//! reference table: setting one rate does not take away the others. The
//! live stack has no built-in rates: a currency neither lists is
//! unavailable, and anything that needs it answers `503 rates_unavailable`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sika_engine::rates::{RateSource, RateTable};

use crate::domain::settings::{FeedSettings, RateSettings};

/// Where a rate in effect came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Source {
    /// `[rates.usd]` in the configuration file.
    Config,
    /// `PUT /admin/v1/{stack}/rates`.
    Admin,
    Feed,
    /// The sandbox's reference table.
    Builtin,
}

impl Source {
    pub(crate) fn wire(self) -> sika_api::admin::RateSourceName {
        use sika_api::admin::RateSourceName;
        match self {
            Source::Config => RateSourceName::Config,
            Source::Admin => RateSourceName::Admin,
            Source::Feed => RateSourceName::Feed,
            Source::Builtin => RateSourceName::Builtin,
        }
    }
}

/// The manual table an operator set through the admin API, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredTable {
    /// Units per one US dollar, as decimal strings.
    pub rates: BTreeMap<String, String>,
    pub as_of: i64,
}

/// The collection and id the admin table is stored under.
pub(crate) const STORED: (&str, &str) = ("settings", "rates");

#[derive(Debug, Clone)]
pub(crate) struct Manual {
    pub rates: BTreeMap<String, Decimal>,
    pub source: Source,
    pub as_of: i64,
}

impl Manual {
    pub(crate) fn from_stored(stored: &StoredTable) -> Result<Manual, crate::domain::error::ApiError> {
        let mut rates = BTreeMap::new();
        for (code, text) in &stored.rates {
            let rate = text.parse().map_err(|e| crate::domain::error::ApiError::internal_from(e))?;
            rates.insert(code.clone(), rate);
        }
        Ok(Manual { rates, source: Source::Admin, as_of: stored.as_of })
    }
}

/// The feed's last good document and how polling it went.
#[derive(Debug, Clone, Default)]
pub(crate) struct FeedState {
    pub rates: BTreeMap<String, Decimal>,
    /// The document's `asOf`; `None` until a fetch succeeds.
    pub as_of: Option<i64>,
    pub last_attempt_at: Option<i64>,
    pub last_success_at: Option<i64>,
    pub last_error: Option<String>,
}

/// One rate in effect.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rate {
    pub per_usd: Decimal,
    pub source: Source,
    pub as_of: i64,
}

pub(crate) struct RateBook {
    manual: RwLock<Option<Manual>>,
    feed: RwLock<FeedState>,
    /// The configured feed, if any.
    feed_settings: Option<FeedSettings>,
    /// `max_age` of the configured feed, in milliseconds; `None` without one.
    feed_max_age_ms: Option<i64>,
    builtin: Option<RateTable>,
    clock: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl RateBook {
    /// The book a stack starts with: the file's table and feed, and on the
    /// sandbox the built-in table under them.
    pub(crate) fn new(
        settings: &RateSettings,
        sandbox: bool,
        clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    ) -> RateBook {
        let now = clock();
        let manual = (!settings.manual.is_empty()).then(|| Manual {
            rates: settings.manual.clone(),
            source: Source::Config,
            as_of: now,
        });
        let feed_max_age_ms =
            settings.feed.as_ref().map(|f| i64::try_from(f.max_age.as_millis()).unwrap_or(i64::MAX));
        RateBook {
            manual: RwLock::new(manual),
            feed: RwLock::new(FeedState::default()),
            feed_settings: settings.feed.clone(),
            feed_max_age_ms,
            builtin: sandbox.then(RateTable::default),
            clock,
        }
    }

    /// The rate of one currency now, or `None` when no source has it.
    pub(crate) fn per_usd(&self, currency: &str) -> Option<Rate> {
        let now = (self.clock)();
        if currency == "USD" {
            return Some(Rate { per_usd: Decimal::ONE, source: Source::Builtin, as_of: now });
        }
        if let Some(manual) = self.manual.read().ok()?.as_ref()
            && let Some(rate) = manual.rates.get(currency)
        {
            return Some(Rate { per_usd: *rate, source: manual.source, as_of: manual.as_of });
        }
        if let Some(max_age) = self.feed_max_age_ms {
            let feed = self.feed.read().ok()?;
            if let (Some(as_of), Some(rate)) = (feed.as_of, feed.rates.get(currency)) {
                let fresh = now.saturating_sub(as_of) <= max_age;
                return fresh.then_some(Rate { per_usd: *rate, source: Source::Feed, as_of });
            }
        }
        let builtin = self.builtin.as_ref()?;
        let per_usd = builtin.mid_rate("USD", currency)?;
        Some(Rate { per_usd, source: Source::Builtin, as_of: now })
    }

    /// Every currency some source has a rate for, with the rate in effect
    /// (a stale feed's currencies are listed as unavailable: `None`).
    pub(crate) fn table(&self) -> BTreeMap<String, Option<Rate>> {
        let mut codes: Vec<String> =
            sika_engine::money::CURRENCIES.iter().map(|c| c.code.to_string()).collect();
        codes.retain(|c| c != "USD");
        codes
            .into_iter()
            .filter_map(|code| {
                let rate = self.per_usd(&code);
                let listed = rate.is_some() || self.feed.read().is_ok_and(|f| f.rates.contains_key(&code));
                listed.then_some((code, rate))
            })
            .collect()
    }

    pub(crate) fn feed(&self) -> FeedState {
        self.feed.read().map(|f| f.clone()).unwrap_or_default()
    }

    /// The rate feed this book reads, when one is configured.
    pub(crate) fn feed_settings(&self) -> Option<&FeedSettings> {
        self.feed_settings.as_ref()
    }

    pub(crate) fn feed_max_age_ms(&self) -> Option<i64> {
        self.feed_max_age_ms
    }

    /// Replaces the manual table (the admin API's, after it is stored).
    pub(crate) fn set_manual(&self, manual: Manual) {
        if let Ok(mut slot) = self.manual.write() {
            *slot = Some(manual);
        }
    }

    /// Records a feed poll: the new document, or why it failed (the last
    /// good rates stay until they are older than `max_age`).
    pub(crate) fn record_fetch(&self, result: Result<(BTreeMap<String, Decimal>, i64), String>) {
        let now = (self.clock)();
        let Ok(mut feed) = self.feed.write() else { return };
        feed.last_attempt_at = Some(now);
        match result {
            Ok((rates, as_of)) => {
                feed.rates = rates;
                feed.as_of = Some(as_of);
                feed.last_success_at = Some(now);
                feed.last_error = None;
            }
            Err(e) => feed.last_error = Some(e),
        }
    }

    /// The engine's view of this book.
    pub(crate) fn source(self: &Arc<Self>) -> Box<dyn RateSource> {
        Box::new(BookSource(Arc::clone(self)))
    }
}

/// A stack's rates as the admin API and the console show them.
pub(crate) fn view(
    engine: &sika_engine::Engine,
    book: &RateBook,
    stack: crate::domain::stack_kind::StackKind,
) -> sika_api::admin::StackRates {
    use crate::domain::render::timestamp;
    use sika_api::admin::{RateFeedStatus, StackRate, StackRates};
    let now = engine.now_ms();
    let age = |at: i64| now.saturating_sub(at) / 1000;
    let rates = book
        .table()
        .into_iter()
        .map(|(code, rate)| {
            let shown = match rate {
                Some(rate) => StackRate {
                    rate: Some(rate.per_usd.normalize().to_string()),
                    source: Some(rate.source.wire()),
                    as_of: Some(timestamp(rate.as_of)),
                    age_seconds: Some(age(rate.as_of)),
                },
                None => StackRate { rate: None, source: None, as_of: None, age_seconds: None },
            };
            (code, shown)
        })
        .collect();
    let feed = book.feed_settings().map(|settings| {
        let state = book.feed();
        let max_age_ms = book.feed_max_age_ms().unwrap_or(0);
        RateFeedStatus {
            url: settings.url.clone(),
            interval_seconds: settings.interval.as_secs(),
            max_age_seconds: settings.max_age.as_secs(),
            as_of: state.as_of.map(timestamp),
            age_seconds: state.as_of.map(age),
            stale: state.as_of.is_none_or(|at| now.saturating_sub(at) > max_age_ms),
            last_attempt_at: state.last_attempt_at.map(timestamp),
            last_success_at: state.last_success_at.map(timestamp),
            last_error: state.last_error,
        }
    });
    StackRates { stack: stack.wire_name(), base: "USD".into(), spread_bps: engine.spread_bps(), rates, feed }
}

/// `PUT /admin/v1/{stack}/rates`: replaces the stack's manual table and
/// answers the rates now in effect.
pub(crate) async fn replace(
    engine: &sika_engine::Engine,
    book: &RateBook,
    stack: crate::domain::stack_kind::StackKind,
    request: sika_api::admin::ReplaceRates,
) -> crate::domain::error::ApiResult<sika_api::admin::StackRates> {
    replace_manual(engine, book, request).await?;
    Ok(view(engine, book, stack))
}

/// `GET /v1/rates/{origin}/{destination}`: the rate a conversion between
/// two different currencies is quoted at now, with the mid rate under it.
pub(crate) fn rate(
    engine: &sika_engine::Engine,
    from: sika_engine::Currency,
    to: sika_engine::Currency,
    quote_ttl_seconds: u64,
) -> crate::domain::error::ApiResult<sika_api::rates::Rate> {
    use crate::domain::error::ApiError;
    if from == to {
        return Err(ApiError::validation("destination", "must differ from origin"));
    }
    let rate = engine.rate(from.code, to.code)?;
    let mid =
        engine.mid_rate(from.code, to.code).ok_or_else(|| ApiError::rates_unavailable(from.code, to.code))?;
    Ok(sika_api::rates::Rate {
        origin: from.code.to_string(),
        destination: to.code.to_string(),
        rate: rate.normalize().to_string(),
        mid_rate: mid.normalize().to_string(),
        spread_bps: engine.spread_bps(),
        quote_ttl_seconds,
        timestamp: crate::domain::render::timestamp(engine.now_ms()),
    })
}

/// Replaces the stack's manual table: stored first (so it survives a
/// restart and replaces the configuration file's), then put in effect.
async fn replace_manual(
    engine: &sika_engine::Engine,
    book: &RateBook,
    request: sika_api::admin::ReplaceRates,
) -> crate::domain::error::ApiResult<()> {
    use crate::domain::error::ApiError;
    if request.base != "USD" {
        return Err(ApiError::validation("base", "must be USD: rates are units per one US dollar"));
    }
    if request.rates.is_empty() {
        return Err(ApiError::validation("rates", "must list at least one currency"));
    }
    let mut rates = BTreeMap::new();
    for (code, amount) in &request.rates {
        let field = format!("rates.{code}");
        if sika_engine::Currency::find(code).is_err() || code == "USD" {
            return Err(ApiError::validation(&field, "is not a currency Sika converts to or from USD"));
        }
        let rate: Decimal = amount
            .as_str()
            .trim()
            .parse()
            .map_err(|_| ApiError::validation(&field, "must be a decimal number"))?;
        if rate <= Decimal::ZERO {
            return Err(ApiError::validation(&field, "must be more than zero"));
        }
        rates.insert(code.clone(), rate);
    }
    let as_of = engine.now_ms();
    let stored =
        StoredTable { rates: rates.iter().map(|(c, r)| (c.clone(), r.to_string())).collect(), as_of };
    let (collection, id) = STORED;
    let document = crate::store::documents::document(collection, id, &stored, None);
    engine.execute(sika_engine::Command::PutDocuments { documents: vec![document] }).await?;
    book.set_manual(Manual { rates, source: Source::Admin, as_of });
    Ok(())
}

struct BookSource(Arc<RateBook>);

impl RateSource for BookSource {
    fn mid_rate(&self, from: &str, to: &str) -> Option<Decimal> {
        let from = self.0.per_usd(from)?.per_usd;
        let to = self.0.per_usd(to)?.per_usd;
        to.checked_div(from)
    }
}

/// Reads a feed document: `{"base":"USD","rates":{"GHS":"15.50",…},"asOf":"<date-time>"}`.
/// Rates may be strings or numbers; every one must be a positive decimal
/// of a currency Sika knows (others are ignored).
pub(crate) fn parse_feed(body: &[u8]) -> Result<(BTreeMap<String, Decimal>, i64), String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Document {
        base: String,
        rates: BTreeMap<String, serde_json::Value>,
        as_of: String,
    }
    let doc: Document =
        serde_json::from_slice(body).map_err(|e| format!("the feed is not a rates document: {e}"))?;
    if doc.base != "USD" {
        return Err(format!("the feed's base is {}; only USD is read", doc.base));
    }
    let as_of = chrono::DateTime::parse_from_rfc3339(&doc.as_of)
        .map_err(|_| format!("the feed's asOf '{}' is not an RFC 3339 date-time", doc.as_of))?
        .timestamp_millis();
    let mut rates = BTreeMap::new();
    for (code, value) in doc.rates {
        if sika_engine::Currency::find(&code).is_err() {
            continue;
        }
        let text = match &value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return Err(format!("the feed's rate for {code} is not a number")),
        };
        let rate: Decimal =
            text.parse().map_err(|_| format!("the feed's rate for {code} is not a decimal"))?;
        if rate <= Decimal::ZERO {
            return Err(format!("the feed's rate for {code} is not positive"));
        }
        rates.insert(code, rate);
    }
    Ok((rates, as_of))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::time::Duration;

    use super::*;

    fn clock(at: &Arc<AtomicI64>) -> Arc<dyn Fn() -> i64 + Send + Sync> {
        let at = Arc::clone(at);
        Arc::new(move || at.load(Ordering::SeqCst))
    }

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn the_live_stack_has_no_built_in_rates() {
        let now = Arc::new(AtomicI64::new(1_000));
        let live = Arc::new(RateBook::new(&RateSettings::default(), false, clock(&now)));
        assert!(live.per_usd("GHS").is_none());
        assert!(live.source().mid_rate("USD", "GHS").is_none());
        let sandbox = Arc::new(RateBook::new(&RateSettings::default(), true, clock(&now)));
        assert_eq!(sandbox.source().mid_rate("USD", "GHS"), Some(d("15.50")));
        assert_eq!(sandbox.per_usd("GHS").unwrap().source, Source::Builtin);
    }

    /// GHS set by hand, and a feed polled every minute that is stale after
    /// ten.
    fn ghs_by_hand_and_a_feed() -> RateSettings {
        RateSettings {
            manual: BTreeMap::from([("GHS".to_string(), d("16"))]),
            feed: Some(FeedSettings {
                url: "http://x".into(),
                interval: Duration::from_secs(60),
                max_age: Duration::from_secs(600),
            }),
        }
    }

    #[test]
    fn manual_rates_win_and_a_stale_feed_gives_nothing() {
        let now = Arc::new(AtomicI64::new(1_000_000));
        let settings = ghs_by_hand_and_a_feed();
        let book = Arc::new(RateBook::new(&settings, false, clock(&now)));
        assert!(book.per_usd("NGN").is_none(), "live has no built-in rates");
        book.record_fetch(Ok((
            BTreeMap::from([("GHS".into(), d("15")), ("NGN".into(), d("1500"))]),
            1_000_000,
        )));
        assert_eq!(
            book.per_usd("GHS").unwrap(),
            Rate { per_usd: d("16"), source: Source::Config, as_of: 1_000_000 }
        );
        assert_eq!(book.per_usd("NGN").unwrap().source, Source::Feed);
        assert_eq!(book.source().mid_rate("GHS", "NGN"), Some(d("93.75")));
        now.store(1_000_000 + 600_000, Ordering::SeqCst);
        assert!(book.per_usd("NGN").is_some(), "exactly max_age old is still fresh");
        now.store(1_000_000 + 600_001, Ordering::SeqCst);
        assert!(book.per_usd("NGN").is_none(), "older than max_age is refused");
        book.record_fetch(Err("connection refused".into()));
        assert!(book.per_usd("NGN").is_none(), "a failed poll does not revive stale rates");
        assert_eq!(book.feed().last_error.as_deref(), Some("connection refused"));
        assert!(book.table()["NGN"].is_none(), "the table lists the stale currency as unavailable");
    }

    /// Setting one rate on the sandbox keeps the reference rates of the
    /// currencies the file does not set; a currency the feed lists is the
    /// feed's, stale or not.
    #[test]
    fn the_sandbox_keeps_reference_rates_the_file_does_not_set() {
        let now = Arc::new(AtomicI64::new(1_000_000));
        let settings = ghs_by_hand_and_a_feed();
        let book = Arc::new(RateBook::new(&settings, true, clock(&now)));
        assert_eq!(book.per_usd("GHS").unwrap().source, Source::Config);
        let ugx = book.per_usd("UGX").unwrap();
        assert_eq!(ugx.source, Source::Builtin);
        assert_eq!(Some(ugx.per_usd), RateTable::default().mid_rate("USD", "UGX"));
        book.record_fetch(Ok((BTreeMap::from([("NGN".into(), d("1500"))]), 1_000_000)));
        assert_eq!(book.per_usd("NGN").unwrap().source, Source::Feed);
        now.store(1_000_000 + 600_001, Ordering::SeqCst);
        assert!(book.per_usd("NGN").is_none(), "a stale feed is not hidden by the reference table");
        assert_eq!(book.per_usd("UGX").unwrap().source, Source::Builtin);
    }

    #[test]
    fn feed_documents_are_read_strictly() {
        let (rates, as_of) = parse_feed(
            br#"{"base":"USD","rates":{"GHS":"15.5","NGN":1550,"ZZZ":"1"},"asOf":"2026-11-23T10:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(rates, BTreeMap::from([("GHS".into(), d("15.5")), ("NGN".into(), d("1550"))]));
        assert_eq!(as_of, 1_795_428_000_000);
        assert!(parse_feed(br#"{"base":"EUR","rates":{},"asOf":"2026-11-23T10:00:00Z"}"#).is_err());
        assert!(parse_feed(br#"{"base":"USD","rates":{"GHS":"-1"},"asOf":"2026-11-23T10:00:00Z"}"#).is_err());
        assert!(parse_feed(br#"{"base":"USD","rates":{},"asOf":"yesterday"}"#).is_err());
    }
}
