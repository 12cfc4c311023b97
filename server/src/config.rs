//! The node's settings, filled from the command line and environment.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub data_dir: PathBuf,
    pub live_addr: SocketAddr,
    pub sandbox_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// Multiplies every scheduled delay (rail delays, retry ladder, deadlines).
    pub time_scale: f64,
    /// How long a conversion quote stays executable. Not scaled.
    pub quote_ttl: Duration,
    /// Requests per second per API key.
    pub rate_limit: u32,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Request log entries kept per stack; older ones are deleted.
    pub request_log_retention: u64,
    /// The FX margin in basis points.
    pub spread_bps: u32,
    /// Lets live webhook endpoints point at loopback and private addresses.
    pub allow_private_webhooks: bool,
    /// Where payers reach each stack (hosted checkout URLs); `None` means
    /// `http://<listen address>`.
    pub live_public_url: Option<String>,
    pub sandbox_public_url: Option<String>,
}

impl NodeConfig {
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        NodeConfig {
            data_dir,
            live_addr: "127.0.0.1:8080".parse().expect("literal address"),
            sandbox_addr: "127.0.0.1:8081".parse().expect("literal address"),
            admin_addr: "127.0.0.1:8082".parse().expect("literal address"),
            time_scale: 1.0,
            quote_ttl: Duration::from_secs(30),
            rate_limit: 100,
            trusted_proxies: Vec::new(),
            request_log_retention: 100_000,
            spread_bps: 100,
            allow_private_webhooks: false,
            live_public_url: None,
            sandbox_public_url: None,
        }
    }
}

/// Parses `30s`, `500ms`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    let input = input.trim();
    let (number, unit) = match input.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(index) => input.split_at(index),
        None => (input, "s"),
    };
    let value: f64 = number.parse().map_err(|_| format!("'{input}' is not a duration like 30s or 500ms"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("'{input}' has an unknown unit; use ms, s, m or h")),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("'{input}' is not a valid duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("5 parsecs").is_err());
    }
}
