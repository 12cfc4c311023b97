//! Per-key rate limiting over a rolling second, exactly: a key may have at
//! most `limit` requests accepted in any one-second interval. Each key keeps
//! the times of its requests accepted in the last second (never more than
//! the limit, so memory follows the real rate), and a request is refused
//! until the oldest of them is a second old. An estimate from fixed windows
//! refused up to three quarters of a key's requests right after it had
//! waited out its limit.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys tracked at once before idle ones are forgotten.
const TRACKED_KEYS_MAX: usize = 100_000;
const WINDOW: Duration = Duration::from_secs(1);

pub(crate) struct RateLimiter {
    limit_per_second: u32,
    /// Per key, the times its accepted requests of the last second, oldest first.
    accepted: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimiter {
    pub(crate) fn new(limit_per_second: u32) -> Self {
        RateLimiter { limit_per_second, accepted: Mutex::new(HashMap::new()) }
    }

    /// Counts one request for `key`; `Err(seconds)` says how long to wait.
    pub(crate) fn check(&self, key: &str, now: Instant) -> Result<(), u64> {
        let Ok(mut accepted) = self.accepted.lock() else { return Ok(()) };
        if accepted.len() >= TRACKED_KEYS_MAX && !accepted.contains_key(key) {
            accepted.retain(|_, times| times.back().is_some_and(|last| now.duration_since(*last) < WINDOW));
        }
        let times = accepted.entry(key.to_string()).or_default();
        while times.front().is_some_and(|oldest| now.duration_since(*oldest) >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= self.limit_per_second as usize {
            let oldest = *times.front().expect("a full window has an oldest request");
            let wait = (oldest + WINDOW).saturating_duration_since(now);
            // Rounded up, so a client that waits as told is accepted.
            return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
        }
        times.push_back(now);
        debug_assert!(times.len() <= self.limit_per_second as usize);
        Ok(())
    }
}

/// At most `limit` events per key in a window that starts with the key's
/// first event (payment attempts per payer address on one link, failed
/// log-ins per address and per email). It remembers at most
/// `THROTTLE_ENTRIES_MAX` keys: when full it forgets keys whose window has
/// ended, and past that an event of a new key is not counted, so memory
/// stays bounded under a flood of addresses.
pub(crate) struct WindowedCounter {
    limit: u32,
    window: Duration,
    counts: Mutex<HashMap<String, (Instant, u32)>>,
}

/// Keys a `WindowedCounter` remembers at most.
const THROTTLE_ENTRIES_MAX: usize = 100_000;

impl WindowedCounter {
    pub(crate) fn new(limit: u32, window: Duration) -> Self {
        WindowedCounter { limit, window, counts: Mutex::new(HashMap::new()) }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, u32)>> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Seconds until the window of `entry` ends, when it is full.
    fn wait(&self, entry: Option<&(Instant, u32)>, now: Instant) -> Option<u64> {
        let (start, count) = entry?;
        let elapsed = now.duration_since(*start);
        (*count >= self.limit && elapsed < self.window)
            .then(|| self.window.saturating_sub(elapsed).as_secs().max(1))
    }

    /// Counts one event for `key`, or `Err(seconds until its window
    /// ends)` without counting it when `key` has had `limit` events in its
    /// window.
    pub(crate) fn take(&self, key: &str, now: Instant) -> Result<(), u64> {
        let mut counts = self.counts();
        if let Some(wait) = self.wait(counts.get(key), now) {
            return Err(wait);
        }
        Self::add(&mut counts, self.window, key, now);
        Ok(())
    }

    /// `take` for every key at once, under one lock: all are counted, or
    /// none when any is at its limit (the longest wait is returned).
    pub(crate) fn take_all(&self, keys: &[String], now: Instant) -> Result<(), u64> {
        let mut counts = self.counts();
        if let Some(wait) = keys.iter().filter_map(|key| self.wait(counts.get(key), now)).max() {
            return Err(wait);
        }
        for key in keys {
            Self::add(&mut counts, self.window, key, now);
        }
        Ok(())
    }

    /// Takes back events counted at `at` for `keys`, unless a key's
    /// window has started again since (the event is no longer counted).
    pub(crate) fn give_back(&self, keys: &[String], at: Instant) {
        let mut counts = self.counts();
        for key in keys {
            if let Some((start, count)) = counts.get_mut(key)
                && *start <= at
            {
                *count = count.saturating_sub(1);
            }
        }
    }

    fn add(counts: &mut HashMap<String, (Instant, u32)>, window: Duration, key: &str, now: Instant) {
        if counts.len() >= THROTTLE_ENTRIES_MAX && !counts.contains_key(key) {
            counts.retain(|_, (start, _)| now.duration_since(*start) < window);
            if counts.len() >= THROTTLE_ENTRIES_MAX {
                return;
            }
        }
        let entry = counts.entry(key.to_string()).or_insert((now, 0));
        if now.duration_since(entry.0) >= window {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }
}

/// Failed log-ins allowed per caller address, and per email, in one window.
const LOGIN_FAILURES_MAX: u32 = 10;
/// Wrong operator tokens allowed per caller address in one window.
const OPERATOR_TOKEN_FAILURES_MAX: u32 = 20;
const FAILURE_WINDOW: Duration = Duration::from_secs(15 * 60);

/// Refuses more attempts (log-ins, operator tokens) for a key once it has
/// seen its limit of failed ones in a window. An attempt is counted when it
/// begins, before the credential is checked, and given back once it proves
/// right: attempts still being checked hold their place, so however many
/// arrive at once, no more than the limit are ever checked and found wrong.
pub(crate) struct FailureThrottle {
    failures: WindowedCounter,
}

/// One attempt, counted against its keys until it is forgiven. Dropping it
/// leaves it counted (a failure), so an attempt whose outcome is lost
/// errs on the side of the throttle.
#[must_use = "an attempt stays counted as a failure unless it is forgiven"]
#[derive(Debug)]
pub(crate) struct Attempt {
    keys: Vec<String>,
    at: Instant,
}

impl FailureThrottle {
    /// Log-ins: `LOGIN_FAILURES_MAX` per caller address and per email.
    pub(crate) fn log_ins() -> Self {
        FailureThrottle { failures: WindowedCounter::new(LOGIN_FAILURES_MAX, FAILURE_WINDOW) }
    }

    /// The operator token: `OPERATOR_TOKEN_FAILURES_MAX` per caller address.
    pub(crate) fn operator_tokens() -> Self {
        FailureThrottle { failures: WindowedCounter::new(OPERATOR_TOKEN_FAILURES_MAX, FAILURE_WINDOW) }
    }

    /// The keys a log-in counts against: its address and its email.
    pub(crate) fn login_keys(ip: Option<IpAddr>, email: Option<&str>) -> Vec<String> {
        let mut keys = Vec::with_capacity(2);
        if let Some(ip) = ip {
            keys.push(format!("ip:{ip}"));
        }
        if let Some(email) = email {
            keys.push(format!("email:{}", email.trim().to_lowercase()));
        }
        keys
    }

    /// The key of an address (an unknown one is one address of its own).
    pub(crate) fn address_key(ip: Option<IpAddr>) -> Vec<String> {
        vec![ip.map_or_else(|| "ip:unknown".to_string(), |ip| format!("ip:{ip}"))]
    }

    /// Counts an attempt against every key, or `Err(seconds to wait)`
    /// without counting anything when any key is at its limit.
    pub(crate) fn begin(&self, keys: Vec<String>, now: Instant) -> Result<Attempt, u64> {
        self.failures.take_all(&keys, now)?;
        Ok(Attempt { keys, at: now })
    }

    /// The attempt was not a failure (the credential was right, or the
    /// request was refused before any check): it no longer counts.
    pub(crate) fn forgive(&self, attempt: Attempt) {
        self.failures.give_back(&attempt.keys, attempt.at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_windowed_counter_allows_its_limit_per_key_per_window() {
        let counter = WindowedCounter::new(3, Duration::from_secs(60));
        let start = Instant::now();
        for _ in 0..3 {
            assert!(counter.take("a", start).is_ok());
        }
        assert_eq!(counter.take("a", start + Duration::from_secs(15)), Err(45));
        assert!(counter.take("b", start).is_ok(), "other keys are unaffected");
        assert!(counter.take("a", start + Duration::from_secs(60)).is_ok(), "a new window");
    }

    /// Issue 29.1: attempts are counted when they begin, so however many
    /// race, no more than the limit are let through to be checked; a right
    /// credential gives its place back.
    #[test]
    fn racing_attempts_never_pass_the_limit_and_a_forgiven_one_frees_its_place() {
        let throttle = std::sync::Arc::new(FailureThrottle::log_ins());
        let keys = || FailureThrottle::login_keys(Some([10, 0, 0, 1].into()), Some("a@example.com"));
        let now = Instant::now();
        let racers: Vec<_> = (0..64)
            .map(|_| {
                let throttle = throttle.clone();
                std::thread::spawn(move || throttle.begin(keys(), now))
            })
            .collect();
        let mut admitted: Vec<Attempt> = racers.into_iter().filter_map(|r| r.join().unwrap().ok()).collect();
        assert_eq!(admitted.len(), LOGIN_FAILURES_MAX as usize);
        assert_eq!(throttle.begin(keys(), now).unwrap_err(), 900);
        // The email alone is full too, from any address.
        let elsewhere = FailureThrottle::login_keys(Some([10, 0, 0, 2].into()), Some("A@example.com "));
        assert!(throttle.begin(elsewhere, now).is_err());
        throttle.forgive(admitted.pop().unwrap());
        let again = throttle.begin(keys(), now).expect("a forgiven attempt's place");
        assert!(throttle.begin(keys(), now).is_err());
        // An attempt forgiven after its window has started again takes
        // nothing from the new window.
        let later = now + FAILURE_WINDOW;
        let fresh = throttle.begin(keys(), later).unwrap();
        throttle.forgive(again);
        for _ in 1..LOGIN_FAILURES_MAX {
            let _failed = throttle.begin(keys(), later).unwrap();
        }
        assert!(throttle.begin(keys(), later).is_err());
        drop(fresh);
    }

    #[test]
    fn operator_tokens_are_limited_per_address() {
        let throttle = FailureThrottle::operator_tokens();
        let now = Instant::now();
        let address = |last: u8| FailureThrottle::address_key(Some([10, 0, 0, last].into()));
        for _ in 0..OPERATOR_TOKEN_FAILURES_MAX {
            let _failed = throttle.begin(address(1), now).unwrap();
        }
        assert!(throttle.begin(address(1), now).is_err());
        assert!(throttle.begin(address(2), now).is_ok());
    }

    #[test]
    fn allows_the_limit_then_refuses() {
        let limiter = RateLimiter::new(10);
        let start = Instant::now();
        for _ in 0..10 {
            assert!(limiter.check("a", start).is_ok());
        }
        // All ten are within the last second until a second has passed.
        assert_eq!(limiter.check("a", start), Err(1));
        assert!(limiter.check("a", start + Duration::from_millis(999)).is_err());
        assert!(limiter.check("a", start + Duration::from_millis(1000)).is_ok());
        assert!(limiter.check("b", start).is_ok(), "other keys are unaffected");
        // Two full windows later the slate is clean.
        assert!(limiter.check("a", start + Duration::from_millis(2100)).is_ok());
    }

    /// The spec's rule: 100 per key per rolling second. A key that used its
    /// 100 and then waited 1.1 s has all of its next 100 accepted.
    #[test]
    fn after_waiting_a_second_the_whole_limit_is_available_again() {
        let limiter = RateLimiter::new(100);
        let start = Instant::now();
        for i in 0..100u64 {
            assert!(limiter.check("k", start + Duration::from_millis(i)).is_ok());
        }
        assert!(limiter.check("k", start + Duration::from_millis(500)).is_err());
        let later = start + Duration::from_millis(1100);
        let accepted =
            (0..100u64).filter(|i| limiter.check("k", later + Duration::from_micros(i * 10)).is_ok()).count();
        assert_eq!(accepted, 100);
        assert!(limiter.check("k", later + Duration::from_millis(2)).is_err(), "the 101st within a second");
    }

    #[test]
    fn no_second_ever_holds_more_than_the_limit() {
        let limiter = RateLimiter::new(50);
        let start = Instant::now();
        let accepted: Vec<u64> = (0..5000u64)
            .map(|i| i * 1_700) // ~590 requests a second, in microseconds
            .filter(|us| limiter.check("k", start + Duration::from_micros(*us)).is_ok())
            .collect();
        for (i, first) in accepted.iter().enumerate() {
            let within = accepted[i..].iter().take_while(|t| **t < first + 1_000_000).count();
            assert!(within <= 50, "{within} accepted in the second from {first} us");
        }
    }

    #[test]
    fn waiting_as_told_is_enough() {
        for limit in [1u32, 5, 100] {
            let limiter = RateLimiter::new(limit);
            let start = Instant::now();
            // A burst every 7 ms until refused, then a retry that obeys the answer exactly.
            let (now, wait) = (0..1000u64)
                .map(|step| start + Duration::from_millis(step * 7))
                .find_map(|now| limiter.check("k", now).err().map(|wait| (now, wait)))
                .expect("the burst is refused");
            assert!(
                limiter.check("k", now + Duration::from_secs(wait)).is_ok(),
                "limit {limit}: {wait} s was too short"
            );
        }
    }

    #[test]
    fn steady_overload_accepts_about_the_limit() {
        let limiter = RateLimiter::new(100);
        let start = Instant::now();
        let mut accepted = 0;
        // 300 requests per second for 10 seconds.
        for i in 0..3000u64 {
            if limiter.check("k", start + Duration::from_micros(i * 3333)).is_ok() {
                accepted += 1;
            }
        }
        assert!((950..=1050).contains(&accepted), "accepted {accepted} of 3000 in 10 s");
    }
}
