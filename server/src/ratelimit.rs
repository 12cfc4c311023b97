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
        if estimate + 1.0 > self.limit_per_second as f64 {
            return Err(1);
        }
        window.current += 1;
        Ok(())
    }
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
        assert_eq!(limiter.check("a", start), Err(1));
        assert!(limiter.check("b", start).is_ok(), "other keys are unaffected");
        // Two full windows later the slate is clean.
        assert!(limiter.check("a", start + Duration::from_millis(2100)).is_ok());
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
