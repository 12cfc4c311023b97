//! Per-key rate limiting with a sliding window: the count of the previous
//! one-second window, weighted by how much of it still overlaps the last
//! second, plus the count of the current window.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Keys tracked at once before idle ones are forgotten.
const TRACKED_KEYS_MAX: usize = 100_000;

struct Window {
    started: Instant,
    current: u32,
    previous: u32,
}

pub struct RateLimiter {
    limit_per_second: u32,
    windows: Mutex<HashMap<String, Window>>,
}

impl RateLimiter {
    pub fn new(limit_per_second: u32) -> Self {
        RateLimiter { limit_per_second, windows: Mutex::new(HashMap::new()) }
    }

    /// Counts one request for `key`; `Err(seconds)` says how long to wait.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), u64> {
        let Ok(mut windows) = self.windows.lock() else { return Ok(()) };
        if windows.len() >= TRACKED_KEYS_MAX && !windows.contains_key(key) {
            windows.retain(|_, w| now.duration_since(w.started).as_secs_f64() < 2.0);
        }
        let window = windows.entry(key.to_string()).or_insert_with(|| Window {
            started: now,
            current: 0,
            previous: 0,
        });
        let mut elapsed = now.duration_since(window.started).as_secs_f64();
        if elapsed >= 1.0 {
            let windows_passed = elapsed.floor();
            window.previous = if windows_passed >= 2.0 { 0 } else { window.current };
            window.current = 0;
            window.started += std::time::Duration::from_secs_f64(windows_passed);
            elapsed -= windows_passed;
        }
        let overlap = 1.0 - elapsed;
        let estimate = window.previous as f64 * overlap + window.current as f64;
        let limit = self.limit_per_second as f64;
        if estimate + 1.0 > limit {
            return Err(retry_after(limit, window.previous as f64, window.current as f64, elapsed));
        }
        window.current += 1;
        Ok(())
    }
}

/// Whole seconds until one more request fits: later in this window, as the
/// previous window's weight fades, or else in the next one, as this
/// window's does. Rounded up, so a client that waits as told is accepted.
fn retry_after(limit: f64, previous: f64, current: f64, elapsed: f64) -> u64 {
    let in_this_window = (previous > 0.0 && current + 1.0 <= limit)
        .then(|| 1.0 - (limit - 1.0 - current) / previous)
        .filter(|at| *at < 1.0);
    let wait = match in_this_window {
        Some(at) => at - elapsed,
        None => (1.0 - elapsed) + (1.0 - (limit - 1.0) / current.max(1.0)).max(0.0),
    };
    (wait + 0.001).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn allows_the_limit_then_refuses() {
        let limiter = RateLimiter::new(10);
        let start = Instant::now();
        for _ in 0..10 {
            assert!(limiter.check("a", start).is_ok());
        }
        // The window's 10 fade over the next second: one more fits 1.1 s on.
        assert_eq!(limiter.check("a", start), Err(2));
        assert!(limiter.check("a", start + Duration::from_millis(1050)).is_err());
        assert!(limiter.check("a", start + Duration::from_millis(1101)).is_ok());
        assert!(limiter.check("b", start).is_ok(), "other keys are unaffected");
        // Two full windows later the slate is clean.
        assert!(limiter.check("a", start + Duration::from_millis(2100)).is_ok());
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
