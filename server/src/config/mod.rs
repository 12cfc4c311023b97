//! The node's settings, filled from the command line, the environment and
//! the configuration file (`file`), in that order of precedence.

pub mod email;
pub mod file;

pub use email::EmailConfig;
pub use file::{ConfigFile, NodeTable};

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
    /// How long a team member's session lasts after it is opened.
    pub session_ttl: Duration,
    /// Requests per second per API key.
    pub rate_limit: u32,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Request log entries kept per organization on each stack; older
    /// ones are deleted, so one organization's traffic never pushes out
    /// another's.
    pub request_log_retention: u64,
    /// Request log entries older than this are deleted.
    pub request_log_max_age: Duration,
    /// Payment attempts one payment link takes in all; more are refused.
    pub checkout_attempts_per_link: u32,
    /// Payment attempts one payer address makes on one page or link in an
    /// hour; more are refused until the hour is over.
    pub checkout_attempts_per_address: u32,
    /// `postgres://…`: the stacks' state lives in PostgreSQL; `None` keeps
    /// it in the data directory.
    pub store: Option<String>,
    /// How long a stack's writer lease lasts unless renewed (PostgreSQL).
    pub lease_ttl: Duration,
    /// The FX margin in basis points.
    pub spread_bps: u32,
    /// Lets live webhook endpoints point at loopback and private addresses.
    pub allow_private_webhooks: bool,
    /// Where payers reach each stack (hosted checkout URLs); `None` means
    /// `http://<listen address>`.
    pub live_public_url: Option<String>,
    pub sandbox_public_url: Option<String>,
    /// The most bytes of files one organization keeps on one stack.
    pub files_bytes_max: u64,
    /// Free space under the data directory below which the sandbox refuses
    /// writes, so it never takes the live stack's last bytes.
    pub disk_reserve: u64,
    /// Connection limits and timeouts of every listener.
    pub connections: ConnectionSettings,
    /// `[email]`, checked; `None`: the node sends no email.
    pub email: Option<EmailConfig>,
    /// The configuration file's operator settings (rates, methods,
    /// receiving routes); empty without `--config`.
    pub file: file::ConfigFile,
}

/// What each listener allows a connection: how many may be open, how many
/// from one address, and how long each part of a request may take. A client
/// holding connections open, or sending a byte at a time, is cut off by
/// these rather than starving everyone else.
#[derive(Debug, Clone)]
pub struct ConnectionSettings {
    /// Open connections per listener; `None` derives it from the process's
    /// file descriptor limit when the node starts.
    pub max: Option<usize>,
    /// Open connections per caller address on one listener (trusted proxies
    /// excepted); `None` is an eighth of `max`.
    pub per_address_max: Option<usize>,
    /// From the first byte of a request's head to its end.
    pub header_timeout: Duration,
    /// From when a handler starts reading a body to its end.
    pub body_timeout: Duration,
    /// With no request in progress and no byte moving either way.
    pub idle_timeout: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            max: None,
            per_address_max: None,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// `files_bytes_max` unless set: 100 MiB per organization per stack.
pub const FILES_BYTES_MAX_DEFAULT: u64 = 100 << 20;
/// `disk_reserve` unless set: 1 GiB.
pub const DISK_RESERVE_DEFAULT: u64 = 1 << 30;

impl NodeConfig {
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        NodeConfig {
            data_dir,
            live_addr: "127.0.0.1:8080".parse().expect("literal address"),
            sandbox_addr: "127.0.0.1:8081".parse().expect("literal address"),
            admin_addr: "127.0.0.1:8082".parse().expect("literal address"),
            time_scale: 1.0,
            quote_ttl: Duration::from_secs(30),
            session_ttl: Duration::from_secs(12 * 3600),
            rate_limit: 100,
            trusted_proxies: Vec::new(),
            request_log_retention: 100_000,
            request_log_max_age: Duration::from_secs(30 * 86_400),
            checkout_attempts_per_link: 1_000,
            checkout_attempts_per_address: 50,
            store: None,
            lease_ttl: Duration::from_secs(10),
            spread_bps: 100,
            allow_private_webhooks: false,
            live_public_url: None,
            sandbox_public_url: None,
            files_bytes_max: FILES_BYTES_MAX_DEFAULT,
            disk_reserve: DISK_RESERVE_DEFAULT,
            connections: ConnectionSettings::default(),
            email: None,
            file: file::ConfigFile::default(),
        }
    }
}

impl NodeConfig {
    /// The settings `node` (the file's `[node]` with the flags laid over
    /// it) and `file` make, every unset one at its default; or every
    /// problem, one line each, naming the key.
    pub fn resolve(node: NodeTable, file: ConfigFile) -> Result<NodeConfig, Vec<String>> {
        let mut problems = Vec::new();
        let mut connections = ConnectionSettings::default();
        resolve_connections(&node, &mut connections, &mut problems);
        let mut config =
            NodeConfig::for_data_dir(node.data_dir.clone().unwrap_or_else(|| PathBuf::from("./sika-data")));
        resolve_limits(&node, &mut config, &mut problems);
        resolve_store(&node, &mut config, &mut problems);
        config.live_addr = node.live_addr.unwrap_or(config.live_addr);
        config.sandbox_addr = node.sandbox_addr.unwrap_or(config.sandbox_addr);
        config.admin_addr = node.admin_addr.unwrap_or(config.admin_addr);
        if let Some(scale) = node.time_scale {
            if scale.is_finite() && scale > 0.0 {
                config.time_scale = scale;
            } else {
                problems.push("node.time_scale (--time-scale): must be a positive number".to_string());
            }
        }
        if let Some(ttl) = &node.quote_ttl {
            match parse_duration(ttl) {
                Ok(ttl) => config.quote_ttl = ttl,
                Err(e) => problems.push(format!("node.quote_ttl (--quote-ttl): {e}")),
            }
        }
        let session_ttl = node.session_ttl.as_deref();
        positive_duration(
            "node.session_ttl (--session-ttl)",
            session_ttl,
            &mut config.session_ttl,
            &mut problems,
        );
        config.connections = connections;
        config.trusted_proxies = node.trusted_proxies.unwrap_or_default();
        config.allow_private_webhooks = node.allow_private_webhooks.unwrap_or(false);
        for (key, url, slot) in [
            ("node.live_public_url (--live-public-url)", node.live_public_url, &mut config.live_public_url),
            (
                "node.sandbox_public_url (--sandbox-public-url)",
                node.sandbox_public_url,
                &mut config.sandbox_public_url,
            ),
        ] {
            match url {
                Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                    problems.push(format!("{key}: must start with http:// or https://"));
                }
                url => *slot = url.map(|u| u.trim_end_matches('/').to_string()),
            }
        }
        if let Some(bps) = file.pricing.spread_bps {
            config.spread_bps = bps;
        }
        config.email = email::resolve(file.email.as_ref(), &mut problems);
        config.file = file;
        if problems.is_empty() { Ok(config) } else { Err(problems) }
    }
}

/// Where the stacks' state lives: a `postgres://` (or `postgresql://`)
/// connection string, and the writer lease's time.
fn resolve_store(node: &NodeTable, config: &mut NodeConfig, problems: &mut Vec<String>) {
    match &node.store {
        Some(url) if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) => {
            problems.push("node.store (--store): must be a postgres:// connection string".to_string());
        }
        store => config.store = store.clone(),
    }
    let lease_ttl = node.lease_ttl.as_deref();
    positive_duration("node.lease_ttl (--lease-ttl)", lease_ttl, &mut config.lease_ttl, problems);
}

fn resolve_connections(node: &NodeTable, settings: &mut ConnectionSettings, problems: &mut Vec<String>) {
    for (key, value, slot) in [
        ("node.header_timeout (--header-timeout)", &node.header_timeout, &mut settings.header_timeout),
        ("node.body_timeout (--body-timeout)", &node.body_timeout, &mut settings.body_timeout),
        ("node.idle_timeout (--idle-timeout)", &node.idle_timeout, &mut settings.idle_timeout),
    ] {
        match value.as_deref().map(parse_duration) {
            Some(Ok(duration)) if duration.is_zero() => problems.push(format!("{key}: must be more than 0")),
            Some(Ok(duration)) => *slot = duration,
            Some(Err(e)) => problems.push(format!("{key}: {e}")),
            None => {}
        }
    }
    for (key, value, slot) in [
        ("node.connections_max (--connections-max)", node.connections_max, &mut settings.max),
        (
            "node.connections_per_address_max (--connections-per-address-max)",
            node.connections_per_address_max,
            &mut settings.per_address_max,
        ),
    ] {
        match value {
            Some(0) => problems.push(format!("{key}: must be at least 1")),
            value => *slot = value.or(*slot),
        }
    }
}

/// Parses `30s`, `500ms`, `2m`, `1h` or a bare number of seconds.
/// The limits: the API keys' rate, the request log's retention and the
/// payment attempts a link and a payer address take.
fn resolve_limits(node: &NodeTable, config: &mut NodeConfig, problems: &mut Vec<String>) {
    at_least_one("node.rate_limit (--rate-limit)", (node.rate_limit, &mut config.rate_limit), problems);
    config.request_log_retention = node.request_log_retention.unwrap_or(config.request_log_retention).max(1);
    let (max_age, slot) = (node.request_log_max_age.as_deref(), &mut config.request_log_max_age);
    positive_duration("node.request_log_max_age (--request-log-max-age)", max_age, slot, problems);
    let per_link = (node.checkout_attempts_per_link, &mut config.checkout_attempts_per_link);
    at_least_one("node.checkout_attempts_per_link (--checkout-attempts-per-link)", per_link, problems);
    let per_address = (node.checkout_attempts_per_address, &mut config.checkout_attempts_per_address);
    at_least_one(
        "node.checkout_attempts_per_address (--checkout-attempts-per-address)",
        per_address,
        problems,
    );
    let sizes = [
        ("node.files_bytes_max (--files-bytes-max)", &node.files_bytes_max, &mut config.files_bytes_max, 1),
        ("node.disk_reserve (--disk-reserve)", &node.disk_reserve, &mut config.disk_reserve, 0),
    ];
    for (key, value, slot, least) in sizes {
        match value.as_ref().map(Size::bytes) {
            Some(Ok(bytes)) if bytes < least => {
                problems.push(format!("{key}: must be at least {least} byte"))
            }
            Some(Ok(bytes)) => *slot = bytes,
            Some(Err(e)) => problems.push(format!("{key}: {e}")),
            None => {}
        }
    }
}

/// Why a value written in the file or given as a flag is not what its
/// setting takes; the setting's key is added where the problem is listed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("'{0}' is not a size like 64MiB, 1GiB or a byte count")]
    NotASize(String),
    #[error("'{0}' is too large")]
    TooLarge(String),
    #[error("'{0}' is not a duration like 30s or 500ms")]
    NotADuration(String),
    #[error("'{0}' has an unknown unit; use ms, s, m, h or d")]
    UnknownUnit(String),
    #[error("'{0}' is not a valid duration")]
    InvalidDuration(String),
    #[error("'{0}' is not a decimal number")]
    NotADecimal(String),
    #[error("write {0} as a string (\"{0}\") so it is exact")]
    InexactNumber(f64),
}

/// A size as the file or a flag writes it: `"64MiB"`, `"1GiB"`, or a
/// byte count (a TOML integer or a string of digits).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    pub fn bytes(&self) -> Result<u64, ValueError> {
        match self {
            Size::Bytes(bytes) => Ok(*bytes),
            Size::Text(text) => parse_size(text),
        }
    }
}

/// Parses `64MiB`, `1GiB`, `512KiB`, `10B` or a bare byte count; the
/// units are binary (KiB = 1024 bytes), and decimal ones (`MB`) are
/// refused rather than guessed at.
pub fn parse_size(input: &str) -> Result<u64, ValueError> {
    let input = input.trim();
    let split = input.find(|c: char| !c.is_ascii_digit()).unwrap_or(input.len());
    let (number, unit) = input.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => return Err(ValueError::NotASize(input.to_string())),
    };
    let number: u64 = number.parse().map_err(|_| ValueError::NotASize(input.to_string()))?;
    number.checked_mul(1u64 << shift).ok_or_else(|| ValueError::TooLarge(input.to_string()))
}

/// A count setting that must be at least 1: set, or its problem named by
/// `key`.
fn at_least_one(key: &str, (value, slot): (Option<u32>, &mut u32), problems: &mut Vec<String>) {
    match value {
        Some(0) => problems.push(format!("{key}: must be at least 1")),
        Some(value) => *slot = value,
        None => {}
    }
}

/// A duration setting that must be longer than zero: set, or its problem
/// named by `key`.
fn positive_duration(key: &str, value: Option<&str>, slot: &mut Duration, problems: &mut Vec<String>) {
    let Some(value) = value else { return };
    match parse_duration(value) {
        Ok(duration) if !duration.is_zero() => *slot = duration,
        Ok(_) => problems.push(format!("{key}: must be longer than 0s")),
        Err(e) => problems.push(format!("{key}: {e}")),
    }
}

pub fn parse_duration(input: &str) -> Result<Duration, ValueError> {
    let input = input.trim();
    let (number, unit) = match input.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(index) => input.split_at(index),
        None => (input, "s"),
    };
    let value: f64 = number.parse().map_err(|_| ValueError::NotADuration(input.to_string()))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        _ => return Err(ValueError::UnknownUnit(input.to_string())),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(ValueError::InvalidDuration(input.to_string()));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("512 KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in ["", "MiB", "1.5GiB", "64MB", "64mib", "-1", "99999999999TiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(Size::Bytes(5).bytes(), Ok(5));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert!(parse_duration("5 parsecs").is_err());
    }
}
