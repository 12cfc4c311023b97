//! The operator's configuration checked against the catalog and turned
//! into what the node runs with: the rates' sources, each stack's methods
//! and fees, and the live stack's receiving routes. `sika config check`
//! prints the problems `resolve` finds, one line each, naming the key.

use std::collections::BTreeMap;
use std::time::Duration;

use rust_decimal::Decimal;
use sika_api::capabilities::MethodStatus;
use sika_engine::Currency;

use crate::config::file::{
    Amount, BankTable, ConfigFile, CryptoTable, MethodTable, MobileMoneyTable, Secret,
};
use crate::config::parse_duration;
use crate::domain::catalog::{self, Catalog};
use crate::domain::receiving::hd::{self, ExtendedPublicKey};

/// Everything the file sets beyond the `[node]` flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub rates: RateSettings,
    pub live: StackSettings,
    pub sandbox: StackSettings,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RateSettings {
    /// Units per one US dollar, from `[rates.usd]`.
    pub manual: BTreeMap<String, Decimal>,
    pub feed: Option<FeedSettings>,
}

#[derive(Debug, Clone)]
pub(crate) struct FeedSettings {
    pub url: String,
    pub interval: Duration,
    pub max_age: Duration,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct StackSettings {
    /// The shipped catalog with this stack's `methods` overrides applied.
    pub catalog: Option<Catalog>,
    pub receiving: Receiving,
    /// `[rails.flutterwave]`, checked (live only).
    pub flutterwave: Option<FlutterwaveSettings>,
}

/// A Flutterwave account the live stack routes methods through.
#[derive(Debug, Clone)]
pub(crate) struct FlutterwaveSettings {
    pub secret_key: Secret,
    pub webhook_hash: Secret,
    pub base_url: String,
    pub methods: Vec<String>,
    /// Who the transfers come from; required when a routed method's
    /// transfers need it (M-Pesa).
    pub sender: Option<FlutterwaveSender>,
}

/// The sender Flutterwave needs on some transfers (`meta.sender`,
/// `sender_country`, `mobile_number`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlutterwaveSender {
    pub name: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    /// Digits, the country code first.
    pub mobile_number: String,
}

/// The longest sender name Sika sends.
const SENDER_NAME_CHARS_MAX: usize = 100;

/// `[rails.flutterwave.sender]`, checked; a problem for each key missing
/// or malformed when `needed` names the methods that need it.
fn flutterwave_sender(
    table: Option<&crate::config::file::FlutterwaveSenderTable>,
    needed: &[&str],
    problems: &mut Vec<String>,
) -> Option<FlutterwaveSender> {
    if table.is_none() && needed.is_empty() {
        return None;
    }
    let table = table.cloned().unwrap_or_default();
    let key = "rails.flutterwave.sender";
    let why = if needed.is_empty() {
        String::new()
    } else {
        format!(" to route {} (Flutterwave needs the sender on those transfers)", needed.join(", "))
    };
    let mut text = |name: &str, value: Option<String>, fits: &dyn Fn(&str) -> bool, shape: &str| {
        match value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            None => problems.push(format!("{key}.{name}: is required{why}")),
            Some(v) if !fits(&v) => problems.push(format!("{key}.{name}: '{v}' is not {shape}")),
            Some(v) => return Some(v),
        }
        None
    };
    let name =
        text("name", table.name, &|v| v.chars().count() <= SENDER_NAME_CHARS_MAX, "1 to 100 characters");
    let country = text(
        "country",
        table.country,
        &|v| v.len() == 2 && v.bytes().all(|b| b.is_ascii_alphabetic()),
        "an ISO 3166-1 alpha-2 country code",
    );
    let mobile = text(
        "mobile_number",
        table.mobile_number,
        &|v| {
            let digits = v.strip_prefix('+').unwrap_or(v);
            (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
        },
        "a mobile number in international form, like +254700000001",
    );
    Some(FlutterwaveSender {
        name: name?,
        country: country?.to_ascii_uppercase(),
        mobile_number: mobile?.trim_start_matches('+').to_string(),
    })
}

pub(crate) const FLUTTERWAVE_SECRET_ENV: &str = "SIKA_FLUTTERWAVE_SECRET_KEY";
pub(crate) const FLUTTERWAVE_HASH_ENV: &str = "SIKA_FLUTTERWAVE_WEBHOOK_HASH";
const FLUTTERWAVE_API: &str = "https://api.flutterwave.com";

/// `[rails.flutterwave]`: both secrets (from the file or the environment),
/// an http(s) base URL, and methods the connector can carry both ways.
fn flutterwave(file: &ConfigFile, problems: &mut Vec<String>) -> Option<FlutterwaveSettings> {
    let table = file.rails.flutterwave.as_ref()?;
    let secret = |value: &Option<Secret>, env: &str, key: &str, problems: &mut Vec<String>| {
        let found = std::env::var(env)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| Secret::new(v.trim().to_string()))
            .or_else(|| value.clone().filter(|v| !v.expose().trim().is_empty()));
        if found.is_none() {
            problems.push(format!("rails.flutterwave.{key}: is required (or set {env})"));
        }
        found
    };
    let secret_key = secret(&table.secret_key, FLUTTERWAVE_SECRET_ENV, "secret_key", problems);
    let webhook_hash = secret(&table.webhook_hash, FLUTTERWAVE_HASH_ENV, "webhook_hash", problems);
    let base_url = table.base_url.clone().unwrap_or_else(|| FLUTTERWAVE_API.to_string());
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("https://") || base_url.starts_with("http://")) || base_url.contains(' ') {
        problems.push(format!("rails.flutterwave.base_url: '{base_url}' is not an http(s) URL"));
    }
    if table.methods.is_empty() {
        problems.push("rails.flutterwave.methods: name at least one method code to route".to_string());
    }
    let mut needs_sender = Vec::new();
    for code in &table.methods {
        let route = crate::domain::rails::flutterwave::route(code);
        if catalog::shipped().find_method(code).is_none() {
            problems.push(format!("rails.flutterwave.methods: '{code}' is not a method code"));
        } else if route.is_none() {
            let why = crate::domain::rails::flutterwave::unroutable(code);
            problems
                .push(format!("rails.flutterwave.methods: '{code}' cannot go through the connector: {why}"));
        } else if route.is_some_and(|r| r.needs_sender) {
            needs_sender.push(code.as_str());
        }
    }
    let sender = flutterwave_sender(table.sender.as_ref(), &needs_sender, problems);
    Some(FlutterwaveSettings {
        secret_key: secret_key?,
        webhook_hash: webhook_hash?,
        base_url,
        methods: table.methods.clone(),
        sender,
    })
}

/// What live payers are told to pay into; empty on the sandbox, which
/// generates its details.
#[derive(Debug, Clone, Default)]
pub(crate) struct Receiving {
    pub banks: Vec<BankAccount>,
    pub crypto: Vec<CryptoRoute>,
    pub mobile_money: Vec<MerchantNumber>,
    /// Real accounts, each given to one virtual account.
    pub virtual_accounts: Vec<BankAccount>,
}

/// A bank account, as the file writes it once checked and trimmed.
pub(crate) type BankAccount = BankTable;

#[derive(Debug, Clone)]
pub(crate) struct CryptoRoute {
    pub asset: String,
    pub chain: String,
    pub addresses: AddressSource,
}

#[derive(Debug, Clone)]
pub(crate) enum AddressSource {
    /// Each payment gets the key's address at `0/<index>`.
    Xpub(Box<ExtendedPublicKey>),
    /// Each address is given to one payment.
    Pool(Vec<String>),
}

/// A merchant number, as the file writes it once checked and trimmed.
pub(crate) type MerchantNumber = MobileMoneyTable;

impl Receiving {
    pub(crate) fn bank(&self, currency: &str) -> Option<&BankAccount> {
        self.banks.iter().find(|b| b.currency == currency)
    }

    pub(crate) fn crypto(&self, asset: &str, chain: &str) -> Option<&CryptoRoute> {
        self.crypto.iter().find(|c| c.asset == asset && c.chain == chain)
    }

    pub(crate) fn mobile_money(&self, method: &str) -> Option<&MerchantNumber> {
        self.mobile_money.iter().find(|m| m.method == method)
    }
}

/// Checks the file and resolves it, or lists every problem found.
pub(crate) fn resolve(file: &ConfigFile) -> Result<Settings, Vec<String>> {
    let mut problems = Vec::new();
    if file.pricing.spread_bps.is_some_and(|bps| bps >= 10_000) {
        problems.push("pricing.spread_bps: must be below 10000 (100 %)".to_string());
    }
    let rates = rates(file, &mut problems);
    let live = StackSettings {
        catalog: overridden(&file.live.methods, "live", &mut problems),
        receiving: receiving(file, &mut problems),
        flutterwave: flutterwave(file, &mut problems),
    };
    let sandbox = StackSettings {
        catalog: overridden(&file.sandbox.methods, "sandbox", &mut problems),
        receiving: Receiving::default(),
        flutterwave: None,
    };
    if problems.is_empty() { Ok(Settings { rates, live, sandbox }) } else { Err(problems) }
}

fn rates(file: &ConfigFile, problems: &mut Vec<String>) -> RateSettings {
    let mut manual = BTreeMap::new();
    for (code, amount) in &file.rates.usd {
        let key = format!("rates.usd.{code}");
        if Currency::find(code).is_err() {
            problems.push(format!("{key}: unknown currency"));
            continue;
        }
        match positive(amount) {
            Ok(rate) => {
                manual.insert(code.clone(), rate);
            }
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    let feed = file.rates.feed.as_ref().and_then(|feed| {
        let url_ok = feed.url.starts_with("http://") || feed.url.starts_with("https://");
        if !url_ok {
            problems.push("rates.feed.url: must be an http:// or https:// URL".to_string());
        }
        let interval = duration(feed.interval.as_deref(), "60s", "rates.feed.interval", problems)?;
        let max_age = duration(feed.max_age.as_deref(), "10m", "rates.feed.max_age", problems)?;
        if interval.is_zero() {
            problems.push("rates.feed.interval: must be more than zero".to_string());
        }
        url_ok.then(|| FeedSettings { url: feed.url.clone(), interval, max_age })
    });
    RateSettings { manual, feed }
}

fn duration(text: Option<&str>, default: &str, key: &str, problems: &mut Vec<String>) -> Option<Duration> {
    parse_duration(text.unwrap_or(default)).map_err(|e| problems.push(format!("{key}: {e}"))).ok()
}

/// Why an amount in the configuration file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
enum AmountProblem {
    /// Not a decimal, as the file's reader says.
    #[error("{0}")]
    Unreadable(String),
    #[error("must be more than zero")]
    NotPositive,
    #[error("must be from 0 to 100")]
    NotAPercentage,
    #[error("has more than two decimals (the fee is kept in basis points)")]
    TooPrecise,
    #[error("is too large")]
    TooLarge,
}

fn decimal(amount: &Amount) -> Result<Decimal, AmountProblem> {
    amount.decimal().map_err(|e| AmountProblem::Unreadable(e.to_string()))
}

fn positive(amount: &Amount) -> Result<Decimal, AmountProblem> {
    let value = decimal(amount)?;
    if value <= Decimal::ZERO { Err(AmountProblem::NotPositive) } else { Ok(value) }
}

/// The shipped catalog with `[<stack>.methods.<code>]` applied, or `None`
/// when the stack overrides nothing.
fn overridden(
    methods: &BTreeMap<String, MethodTable>,
    stack: &str,
    problems: &mut Vec<String>,
) -> Option<Catalog> {
    if methods.is_empty() {
        return None;
    }
    let mut catalog = catalog::shipped().clone();
    for (code, table) in methods {
        let key = format!("{stack}.methods.{code}");
        let Some(method) = catalog.find_method_mut(code) else {
            problems.push(format!("{key}: unknown method code"));
            continue;
        };
        let scale = method.currency().scale;
        if let Some(status) = &table.status {
            match serde_json::from_value::<MethodStatus>(serde_json::Value::from(status.as_str())) {
                Ok(status) => method.status = status,
                Err(_) => problems.push(format!("{key}.status: must be operational, degraded or down")),
            }
        }
        let mut amount = |name: &str, value: &Option<Amount>, allow_zero: bool| -> Option<Decimal> {
            let value = value.as_ref()?;
            let checked = value.decimal().map_err(|e| e.to_string()).and_then(|d| {
                if d.is_sign_negative() || (!allow_zero && d.is_zero()) {
                    Err(format!("must be {}", if allow_zero { "zero or more" } else { "more than zero" }))
                } else if d.normalize().scale() > scale {
                    Err(format!("has more than {scale} fraction digits for {}", method.currency()))
                } else {
                    Ok(d)
                }
            });
            checked.map_err(|e| problems.push(format!("{key}.{name}: {e}"))).ok()
        };
        let min = amount("min", &table.min, true);
        let max = amount("max", &table.max, false);
        let fee_fixed = amount("fee_fixed", &table.fee_fixed, true);
        let fee_percent = table
            .fee_percent
            .as_ref()
            .and_then(|p| percent_bps(p).map_err(|e| problems.push(format!("{key}.fee_percent: {e}"))).ok());
        if let Err(e) = method.apply(min, max, fee_fixed, fee_percent) {
            problems.push(format!("{key}: {e}"));
        }
    }
    Some(catalog)
}

/// `"1.5"` (per cent) as 150 basis points; at most two decimals, at most 100.
fn percent_bps(amount: &Amount) -> Result<u32, AmountProblem> {
    let percent = decimal(amount)?;
    let bps = percent.checked_mul(Decimal::ONE_HUNDRED).ok_or(AmountProblem::TooLarge)?;
    if percent.is_sign_negative() || percent > Decimal::ONE_HUNDRED {
        return Err(AmountProblem::NotAPercentage);
    }
    if bps.normalize().scale() > 0 {
        return Err(AmountProblem::TooPrecise);
    }
    u32::try_from(bps.mantissa() / 10_i128.pow(bps.scale())).map_err(|_| AmountProblem::TooLarge)
}

fn receiving(file: &ConfigFile, problems: &mut Vec<String>) -> Receiving {
    let live = &file.live;
    let mut out = Receiving::default();
    for (i, bank) in live.receiving.bank.iter().enumerate() {
        let key = format!("live.receiving.bank[{i}]");
        if let Some(account) = bank_account(bank, &key, problems) {
            if out.bank(&account.currency).is_some() {
                problems.push(format!("{key}.currency: a second account for {}", account.currency));
            } else {
                out.banks.push(account);
            }
        }
    }
    for (i, table) in live.receiving.crypto.iter().enumerate() {
        let key = format!("live.receiving.crypto[{i}]");
        if let Some(route) = crypto_route(table, &key, problems) {
            if out.crypto(&route.asset, &route.chain).is_some() {
                problems.push(format!("{key}: a second route for {} on {}", route.asset, route.chain));
            } else {
                out.crypto.push(route);
            }
        }
    }
    for (i, table) in live.receiving.mobile_money.iter().enumerate() {
        let key = format!("live.receiving.mobile_money[{i}]");
        let known = catalog::shipped()
            .find_method(&table.method)
            .is_some_and(|m| m.kind == catalog::KIND_MOBILE_MONEY);
        if !known {
            problems.push(format!("{key}.method: not a mobile-money method code"));
        } else if table.merchant_number.trim().is_empty() || table.merchant_name.trim().is_empty() {
            problems.push(format!("{key}: merchant_number and merchant_name must not be empty"));
        } else if out.mobile_money(&table.method).is_some() {
            problems.push(format!("{key}.method: a second merchant number for {}", table.method));
        } else {
            out.mobile_money.push(MerchantNumber {
                method: table.method.clone(),
                merchant_number: table.merchant_number.trim().to_string(),
                merchant_name: table.merchant_name.trim().to_string(),
            });
        }
    }
    for (i, bank) in live.virtual_accounts.iter().enumerate() {
        let key = format!("live.virtual_accounts[{i}]");
        if let Some(account) = bank_account(bank, &key, problems) {
            if out.virtual_accounts.iter().any(|a| a.account_number == account.account_number) {
                problems.push(format!("{key}.account_number: listed twice"));
            } else {
                out.virtual_accounts.push(account);
            }
        }
    }
    out
}

fn bank_account(bank: &BankTable, key: &str, problems: &mut Vec<String>) -> Option<BankAccount> {
    let before = problems.len();
    match Currency::find(&bank.currency) {
        Ok(c) if !c.is_crypto() => {}
        _ => problems.push(format!("{key}.currency: not a fiat currency Sika handles")),
    }
    for (name, value) in [
        ("bank_name", &bank.bank_name),
        ("account_name", &bank.account_name),
        ("account_number", &bank.account_number),
    ] {
        if value.trim().is_empty() {
            problems.push(format!("{key}.{name}: must not be empty"));
        }
    }
    let number = bank.account_number.trim();
    if !number.is_empty() && !number.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-') {
        problems.push(format!("{key}.account_number: only letters, digits, spaces and dashes"));
    }
    (problems.len() == before).then(|| BankAccount {
        currency: bank.currency.clone(),
        bank_name: bank.bank_name.trim().to_string(),
        account_name: bank.account_name.trim().to_string(),
        account_number: number.to_string(),
        bank_code: bank.bank_code.clone(),
        branch: bank.branch.clone(),
    })
}

fn crypto_route(table: &CryptoTable, key: &str, problems: &mut Vec<String>) -> Option<CryptoRoute> {
    let asset = table.asset.to_ascii_uppercase();
    let offered = catalog::shipped()
        .stablecoins()
        .iter()
        .any(|m| m.currency().code == asset && m.chain.as_deref() == Some(table.chain.as_str()));
    if !offered {
        problems.push(format!("{key}: {asset} on '{}' is not a stablecoin network Sika offers", table.chain));
        return None;
    }
    let addresses = match (&table.xpub, &table.addresses) {
        (Some(xpub), None) => {
            if hd::address_kind(&table.chain).is_none() {
                problems.push(format!(
                    "{key}.xpub: {} addresses cannot be derived from an xpub; list an address pool",
                    table.chain
                ));
                return None;
            }
            match xpub.trim().parse::<ExtendedPublicKey>() {
                Ok(key) => AddressSource::Xpub(Box::new(key)),
                Err(e) => {
                    problems.push(format!("{key}.xpub: {e}"));
                    return None;
                }
            }
        }
        (None, Some(pool)) => {
            let mut seen = std::collections::HashSet::new();
            let before = problems.len();
            for (j, address) in pool.iter().enumerate() {
                let checked = crate::domain::receiving::address::address_problem(&table.chain, address);
                if let Some(reason) = checked {
                    problems.push(format!("{key}.addresses[{j}]: {reason}"));
                } else if !seen.insert(address.to_ascii_lowercase()) {
                    problems.push(format!("{key}.addresses[{j}]: listed twice"));
                }
            }
            if pool.is_empty() {
                problems.push(format!("{key}.addresses: the pool is empty"));
            }
            if problems.len() > before {
                return None;
            }
            AddressSource::Pool(pool.iter().map(|a| a.trim().to_string()).collect())
        }
        _ => {
            problems.push(format!("{key}: set exactly one of xpub and addresses"));
            return None;
        }
    };
    Some(CryptoRoute { asset, chain: table.chain.clone(), addresses })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        resolve(&ConfigFile::parse(text).unwrap()).unwrap_err()
    }

    #[test]
    fn every_problem_is_one_line_naming_its_key() {
        let found = problems(
            r#"
            [pricing]
            spread_bps = 10000
            [rates.usd]
            XYZ = "1"
            GHS = "-1"
            [rates.feed]
            url = "ftp://x"
            max_age = "soon"
            [live.methods.nope_gh]
            status = "up"
            [live.methods.mtn_gh]
            status = "sideways"
            min = "0.001"
            fee_percent = "1.555"
            [[live.receiving.bank]]
            currency = "USDC"
            bank_name = ""
            account_name = "A"
            account_number = "12"
            [[live.receiving.crypto]]
            asset = "USDC"
            chain = "solana"
            xpub = "xpub"
            "#,
        );
        let keys = [
            "pricing.spread_bps",
            "rates.usd.XYZ",
            "rates.usd.GHS",
            "rates.feed.url",
            "rates.feed.max_age",
            "live.methods.nope_gh",
            "live.methods.mtn_gh.status",
            "live.methods.mtn_gh.min",
            "live.methods.mtn_gh.fee_percent",
            "live.receiving.bank[0].currency",
            "live.receiving.bank[0].bank_name",
            "live.receiving.crypto[0].xpub",
        ];
        for key in keys {
            assert!(found.iter().any(|p| p.starts_with(&format!("{key}:"))), "{key} in {found:#?}");
        }
        assert!(found.iter().all(|p| !p.contains('\n')));
    }

    #[test]
    fn method_overrides_keep_unset_values() {
        let text = "[live.methods.mtn_gh]\nstatus = \"down\"\nfee_percent = \"2.5\"\nmax = \"900\"\n";
        let settings = resolve(&ConfigFile::parse(text).unwrap()).unwrap();
        let shipped = catalog::shipped().find_method("mtn_gh").unwrap();
        let live = settings.live.catalog.unwrap();
        let method = live.find_method("mtn_gh").unwrap();
        assert_eq!(method.status, MethodStatus::Down);
        assert_eq!(method.fee.percent_bps, 250);
        assert_eq!(method.fee.fixed, shipped.fee.fixed, "unset keys keep the catalog's values");
        assert_eq!(method.limits.min, shipped.limits.min);
        assert_eq!(method.limits.max.to_string(), "900");
        assert!(settings.sandbox.catalog.is_none(), "the sandbox overrides nothing");
    }

    #[test]
    fn a_pool_and_an_xpub_resolve() {
        let text = r#"
            [[live.receiving.crypto]]
            asset = "usdc"
            chain = "base"
            xpub = "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ"
            [[live.receiving.crypto]]
            asset = "USDC"
            chain = "solana"
            addresses = ["7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"]
        "#;
        let settings = resolve(&ConfigFile::parse(text).unwrap()).unwrap();
        assert!(matches!(
            settings.live.receiving.crypto("USDC", "base").unwrap().addresses,
            AddressSource::Xpub(_)
        ));
        assert!(matches!(
            settings.live.receiving.crypto("USDC", "solana").unwrap().addresses,
            AddressSource::Pool(_)
        ));
        assert!(settings.live.receiving.crypto("USDT", "tron").is_none());
    }

    #[test]
    fn m_pesa_through_flutterwave_needs_the_sender() {
        let table = "[rails.flutterwave]\nsecret_key = \"k\"\nwebhook_hash = \"h\"\nmethods = [\"mpesa_ke\", \"bank_ng\"]\n";
        let found = problems(table);
        for key in ["name", "country", "mobile_number"] {
            let want = format!("rails.flutterwave.sender.{key}: is required to route mpesa_ke");
            assert!(found.iter().any(|p| p.starts_with(&want)), "{want} not in {found:?}");
        }
        let bad = format!(
            "{table}[rails.flutterwave.sender]\nname = \"Sika Ltd\"\ncountry = \"KEN\"\nmobile_number = \"07\"\n"
        );
        let found = problems(&bad);
        assert_eq!(found.len(), 2, "{found:?}");
        let good = format!(
            "{table}[rails.flutterwave.sender]\nname = \"Sika Ltd\"\ncountry = \"ke\"\nmobile_number = \"+254700000001\"\n"
        );
        let settings = resolve(&ConfigFile::parse(&good).unwrap()).unwrap();
        let sender = settings.live.flutterwave.unwrap().sender.unwrap();
        assert_eq!((sender.country.as_str(), sender.mobile_number.as_str()), ("KE", "254700000001"));
    }

    #[test]
    fn a_flutterwave_table_is_checked() {
        let found = problems(
            r#"
            [rails.flutterwave]
            secret_key = ""
            base_url = "ftp://x"
            methods = ["bank_gh", "nope", "mtn_gh"]
            "#,
        );
        let expect = [
            "rails.flutterwave.secret_key: is required",
            "rails.flutterwave.webhook_hash: is required",
            "rails.flutterwave.base_url:",
            "rails.flutterwave.methods: 'bank_gh' cannot go through the connector: Flutterwave's bank transfers there need the branch's code",
            "rails.flutterwave.methods: 'nope' is not a method code",
        ];
        for want in expect {
            assert!(found.iter().any(|p| p.starts_with(want)), "{want} not in {found:?}");
        }
        assert_eq!(found.len(), expect.len(), "{found:?}");
        let file = ConfigFile::parse(
            "[rails.flutterwave]\nsecret_key = \"k\"\nwebhook_hash = \"h\"\nmethods = [\"mtn_gh\"]\n",
        )
        .unwrap();
        let settings = resolve(&file).unwrap();
        let flutterwave = settings.live.flutterwave.unwrap();
        assert_eq!(flutterwave.base_url, "https://api.flutterwave.com");
        assert!(settings.sandbox.flutterwave.is_none(), "a connector is the live stack's");
    }
}
