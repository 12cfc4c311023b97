//! The configuration file (`--config`, TOML) as it is written: every key
//! an operator can set, read strictly (an unknown key is a problem, not
//! silence). Checking values against the catalog and turning them into the
//! settings the node runs with is `domain::settings`'s work; this module
//! only reads the file and resolves the `[node]` table, which flags and
//! environment variables override.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The whole file. Every table is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub node: NodeTable,
    #[serde(default)]
    pub pricing: PricingTable,
    #[serde(default)]
    pub rates: RatesTable,
    #[serde(default)]
    pub live: LiveTable,
    #[serde(default)]
    pub sandbox: SandboxTable,
    /// `[rails.<provider>]`: provider connectors for the live stack.
    #[serde(default)]
    pub rails: RailsTable,
    /// `[email]`: the SMTP server notifications go through; without it no
    /// email is sent.
    pub email: Option<EmailTable>,
}

/// `[email]`: where and as whom the node sends its emails.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailTable {
    /// `smtp://[user:password@]host[:port]` (STARTTLS when the server
    /// offers it) or `smtps://…` (TLS from the first byte). It may hold a
    /// password, so it is a secret.
    pub smtp_url: Option<Secret>,
    /// The sender: `Sika <noreply@example.com>` or a bare address.
    pub from: Option<String>,
    /// The operator's address for alerts (storage, provider, movements
    /// awaiting the operator).
    pub operator: Option<String>,
    /// At most this many emails per organization per hour (default 100);
    /// the excess is recorded as `suppressed`, not sent.
    pub max_per_org_per_hour: Option<u32>,
}

/// `[rails]`: one table per provider connector.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailsTable {
    pub flutterwave: Option<FlutterwaveTable>,
}

/// `[rails.flutterwave]`. The two secrets may come from the environment
/// instead (`SIKA_FLUTTERWAVE_SECRET_KEY`, `SIKA_FLUTTERWAVE_WEBHOOK_HASH`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlutterwaveTable {
    pub secret_key: Option<Secret>,
    pub webhook_hash: Option<Secret>,
    /// Default: the provider's production API.
    pub base_url: Option<String>,
    /// Method codes routed through Flutterwave on live.
    #[serde(default)]
    pub methods: Vec<String>,
    /// `[rails.flutterwave.sender]`: who transfers come from, which
    /// Flutterwave needs on M-Pesa transfers.
    pub sender: Option<FlutterwaveSenderTable>,
}

/// `[rails.flutterwave.sender]`: the business that sends the transfers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlutterwaveSenderTable {
    pub name: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub country: Option<String>,
    /// In international form (`+254…`).
    pub mobile_number: Option<String>,
}

/// A secret read from the file: its `Debug` never shows it, so no log line
/// or error that prints a configuration can leak it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `[node]`: the same settings as the command line's flags, which win.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTable {
    pub data_dir: Option<PathBuf>,
    pub live_addr: Option<SocketAddr>,
    pub sandbox_addr: Option<SocketAddr>,
    pub admin_addr: Option<SocketAddr>,
    pub time_scale: Option<f64>,
    /// A duration like `30s`.
    pub quote_ttl: Option<String>,
    /// A duration like `12h`.
    pub session_ttl: Option<String>,
    pub rate_limit: Option<u32>,
    pub trusted_proxies: Option<Vec<IpAddr>>,
    pub allow_private_webhooks: Option<bool>,
    /// Request log entries kept per organization on each stack.
    pub request_log_retention: Option<u64>,
    /// How long request log entries are kept, a duration like `30d`.
    pub request_log_max_age: Option<String>,
    /// Payment attempts one payment link takes in all.
    pub checkout_attempts_per_link: Option<u32>,
    /// Payment attempts one payer address makes on one page or link in an hour.
    pub checkout_attempts_per_address: Option<u32>,
    /// `postgres://…`: keep the stacks' state in PostgreSQL.
    pub store: Option<String>,
    /// How long a stack's writer lease lasts unless renewed, a duration
    /// like `10s` (PostgreSQL only).
    pub lease_ttl: Option<String>,
    pub live_public_url: Option<String>,
    pub sandbox_public_url: Option<String>,
    /// Open connections per listener (default: a quarter of the file
    /// descriptors the process may open, at most 4,096).
    pub connections_max: Option<usize>,
    /// Open connections per caller address on one listener (default: an
    /// eighth of `connections_max`).
    pub connections_per_address_max: Option<usize>,
    /// A duration like `10s`: how long a request's head may take to arrive.
    pub header_timeout: Option<String>,
    /// How long a request's body may take to arrive once it is read.
    pub body_timeout: Option<String>,
    /// How long a connection may stay open with no request and nothing sent
    /// either way (a kept-alive connection between requests).
    pub idle_timeout: Option<String>,
    /// The most bytes of files one organization keeps on one stack:
    /// `"100MiB"` or a byte count.
    pub files_bytes_max: Option<super::Size>,
    /// Free space under the data directory below which the sandbox refuses
    /// writes: `"1GiB"` or a byte count.
    pub disk_reserve: Option<super::Size>,
}

/// `[pricing]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricingTable {
    /// The FX margin taken off the mid rate, in basis points (default 100).
    pub spread_bps: Option<u32>,
}

/// `[rates]`: a manual table and/or a feed; both stacks use them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatesTable {
    /// `[rates.usd]`: units of each currency per one US dollar.
    #[serde(default)]
    pub usd: BTreeMap<String, Amount>,
    /// `[rates.feed]`.
    pub feed: Option<FeedTable>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedTable {
    pub url: String,
    /// How often it is polled (default `60s`).
    pub interval: Option<String>,
    /// How old its `asOf` may be before its rates are refused (default `10m`).
    pub max_age: Option<String>,
}

/// `[live]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveTable {
    /// `[live.methods.<code>]`.
    #[serde(default)]
    pub methods: BTreeMap<String, MethodTable>,
    /// `[live.receiving]`: what payers are told to pay into.
    #[serde(default)]
    pub receiving: ReceivingTable,
    /// `[[live.virtual_accounts]]`: real accounts, each given to one
    /// virtual account.
    #[serde(default)]
    pub virtual_accounts: Vec<BankTable>,
}

/// `[sandbox]`: the sandbox generates its receiving details, so only
/// methods can be set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    #[serde(default)]
    pub methods: BTreeMap<String, MethodTable>,
}

/// `[<stack>.methods.<code>]`: unset keys keep the catalog's values.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodTable {
    pub status: Option<String>,
    pub min: Option<Amount>,
    pub max: Option<Amount>,
    pub fee_fixed: Option<Amount>,
    /// A percentage, like `"1.5"` for 1.5 %.
    pub fee_percent: Option<Amount>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceivingTable {
    /// `[[live.receiving.bank]]`: one account per currency.
    #[serde(default)]
    pub bank: Vec<BankTable>,
    /// `[[live.receiving.crypto]]`: one route per asset and chain.
    #[serde(default)]
    pub crypto: Vec<CryptoTable>,
    /// `[[live.receiving.mobile_money]]`: a merchant number per method.
    #[serde(default)]
    pub mobile_money: Vec<MobileMoneyTable>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankTable {
    pub currency: String,
    pub bank_name: String,
    pub account_name: String,
    pub account_number: String,
    pub bank_code: Option<String>,
    pub branch: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CryptoTable {
    pub asset: String,
    pub chain: String,
    /// A BIP32 extended public key; each payment gets the address at `0/<index>`.
    pub xpub: Option<String>,
    /// A pool of addresses, each given to one payment.
    pub addresses: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MobileMoneyTable {
    /// The method code, like `mtn_gh`.
    pub method: String,
    pub merchant_number: String,
    pub merchant_name: String,
}

impl NodeTable {
    /// This table with every key `over` sets replaced by `over`'s value:
    /// flags and environment variables over the file.
    pub fn overlay(self, over: NodeTable) -> NodeTable {
        NodeTable {
            data_dir: over.data_dir.or(self.data_dir),
            live_addr: over.live_addr.or(self.live_addr),
            sandbox_addr: over.sandbox_addr.or(self.sandbox_addr),
            admin_addr: over.admin_addr.or(self.admin_addr),
            time_scale: over.time_scale.or(self.time_scale),
            quote_ttl: over.quote_ttl.or(self.quote_ttl),
            session_ttl: over.session_ttl.or(self.session_ttl),
            rate_limit: over.rate_limit.or(self.rate_limit),
            trusted_proxies: over.trusted_proxies.or(self.trusted_proxies),
            allow_private_webhooks: over.allow_private_webhooks.or(self.allow_private_webhooks),
            request_log_retention: over.request_log_retention.or(self.request_log_retention),
            request_log_max_age: over.request_log_max_age.or(self.request_log_max_age),
            checkout_attempts_per_link: over.checkout_attempts_per_link.or(self.checkout_attempts_per_link),
            checkout_attempts_per_address: over
                .checkout_attempts_per_address
                .or(self.checkout_attempts_per_address),
            store: over.store.or(self.store),
            lease_ttl: over.lease_ttl.or(self.lease_ttl),
            live_public_url: over.live_public_url.or(self.live_public_url),
            sandbox_public_url: over.sandbox_public_url.or(self.sandbox_public_url),
            connections_max: over.connections_max.or(self.connections_max),
            connections_per_address_max: over
                .connections_per_address_max
                .or(self.connections_per_address_max),
            header_timeout: over.header_timeout.or(self.header_timeout),
            body_timeout: over.body_timeout.or(self.body_timeout),
            idle_timeout: over.idle_timeout.or(self.idle_timeout),
            files_bytes_max: over.files_bytes_max.or(self.files_bytes_max),
            disk_reserve: over.disk_reserve.or(self.disk_reserve),
        }
    }
}

/// A decimal written as a string (`"15.50"`) or an integer. Floats are
/// refused: `15.1` in TOML is a binary fraction, not the number written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Text(String),
    Integer(i64),
    Float(f64),
}

impl Amount {
    /// The decimal, or why it is not one.
    pub fn decimal(&self) -> Result<rust_decimal::Decimal, super::ValueError> {
        match self {
            Amount::Text(text) => {
                text.trim().parse().map_err(|_| super::ValueError::NotADecimal(text.clone()))
            }
            Amount::Integer(n) => Ok((*n).into()),
            Amount::Float(f) => Err(super::ValueError::InexactNumber(*f)),
        }
    }
}

impl ConfigFile {
    /// Reads and parses `path`; a problem names the key (and line) it is about.
    pub fn load(path: &Path) -> Result<ConfigFile, Vec<String>> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| vec![format!("{}: cannot read it: {e}", path.display())])?;
        ConfigFile::parse(&text)
    }

    pub fn parse(text: &str) -> Result<ConfigFile, Vec<String>> {
        toml::from_str(text).map_err(|e| vec![describe(text, &e)])
    }
}

/// One line for a TOML error: where (line and the key there), then what.
fn describe(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    match error.span() {
        Some(span) => {
            let (before, after) = text.split_at_checked(span.start).unwrap_or((text, ""));
            let line = before.matches('\n').count() + 1;
            let key = after.split(['=', '\n']).next().unwrap_or("").trim();
            format!("line {line} ({key}): {message}")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_every_default() {
        let file = ConfigFile::parse("").unwrap();
        assert!(file.rates.usd.is_empty() && file.rates.feed.is_none());
        assert!(file.live.receiving.bank.is_empty());
    }

    #[test]
    fn unknown_keys_and_floats_are_problems() {
        let problems = ConfigFile::parse("[pricing]\nspread = 100\n").unwrap_err();
        assert!(problems[0].contains("spread"), "{problems:?}");
        let file = ConfigFile::parse("[rates.usd]\nGHS = 15.1\nNGN = \"1550\"\nKES = 130\n").unwrap();
        assert!(file.rates.usd["GHS"].decimal().unwrap_err().to_string().contains("as a string"));
        assert_eq!(file.rates.usd["NGN"].decimal().unwrap(), rust_decimal::Decimal::from(1550));
        assert_eq!(file.rates.usd["KES"].decimal().unwrap(), rust_decimal::Decimal::from(130));
    }

    #[test]
    fn the_pinned_tables_read() {
        let text = r#"
            [rates.feed]
            url = "https://rates.example/usd.json"
            interval = "60s"
            max_age = "10m"
            [live.methods.mtn_gh]
            status = "down"
            fee_percent = "1.5"
            [[live.receiving.bank]]
            currency = "NGN"
            bank_name = "Zenith"
            account_name = "Acme Ltd"
            account_number = "1234567890"
            [[live.receiving.crypto]]
            asset = "USDC"
            chain = "base"
            addresses = ["0x52908400098527886E0F7030069857D2E4169EE7"]
        "#;
        let file = ConfigFile::parse(text).unwrap();
        assert_eq!(file.live.methods["mtn_gh"].status.as_deref(), Some("down"));
        assert_eq!(file.live.receiving.bank[0].account_number, "1234567890");
        assert_eq!(file.live.receiving.crypto[0].addresses.as_ref().unwrap().len(), 1);
        assert_eq!(file.rates.feed.unwrap().max_age.as_deref(), Some("10m"));
    }

    #[test]
    fn a_connector_s_secrets_never_print() {
        let text = "[rails.flutterwave]\nsecret_key = \"FLWSECK-abc\"\nwebhook_hash = \"h1\"\nmethods = [\"mtn_gh\"]\n";
        let file = ConfigFile::parse(text).unwrap();
        let table = file.rails.flutterwave.clone().unwrap();
        assert_eq!(table.secret_key.as_ref().unwrap().expose(), "FLWSECK-abc");
        let shown = format!("{file:?}");
        assert!(!shown.contains("FLWSECK-abc") && !shown.contains("\"h1\""), "{shown}");
    }
}
