//! The payment-method catalog shipped with the node.
//!
//! The data lives in `server/catalog/capabilities.json` and is compiled into the
//! binary. It lists, per country, the local payment methods (mobile money and bank
//! transfer), plus the stablecoin networks that every country offers. A
//! [`Method`] shows on the wire as [`Method::render`] makes it, the spec's `method`
//! object (plus `chain` for crypto, and `fees`, the payout fee schedule as
//! decimal strings); the testnet chain and the per-field `required` flag are
//! internal and never shown.
//!
//! All money arithmetic here is integer or `rust_decimal`; no floating point.

// Not every accessor is used by every build of the server (the module is private
// to the crate), so unused items must not fail `-D warnings`.
#![allow(dead_code)]

use std::str::FromStr;
use std::sync::OnceLock;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::Deserialize;
use sika_api::capabilities::{self as wire, MethodKind, MethodStatus};
use sika_api::validation::DestinationCheck;
use sika_engine::Currency;

/// The input field that names a destination's bank.
pub(crate) const BANK_CODE: &str = "bankCode";

/// Method `type` values.
pub(crate) const KIND_MOBILE_MONEY: MethodKind = MethodKind::MobileMoney;
pub(crate) const KIND_BANK_TRANSFER: MethodKind = MethodKind::BankTransfer;
pub(crate) const KIND_CRYPTO: MethodKind = MethodKind::Crypto;

/// Method `status` values.
pub(crate) const STATUS_OPERATIONAL: MethodStatus = MethodStatus::Operational;
pub(crate) const STATUS_DEGRADED: MethodStatus = MethodStatus::Degraded;
pub(crate) const STATUS_DOWN: MethodStatus = MethodStatus::Down;

const SHIPPED_JSON: &str = include_str!("../../catalog/capabilities.json");

/// The whole catalog: countries with their local methods, and the stablecoin
/// networks offered in every country.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Catalog {
    countries: Vec<Country>,
    stablecoins: Vec<Method>,
}

/// One country and its local (non-stablecoin) methods.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Country {
    /// ISO 3166-1 alpha-2, upper case.
    pub code: String,
    pub name: String,
    /// ISO 4217 code of the local currency.
    pub currency: String,
    pub methods: Vec<Method>,
}

/// A payment method; [`Method::render`] shows it as the spec's `method` object.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Method {
    pub code: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MethodKind,
    pub status: MethodStatus,
    pub limits: Limits,
    pub estimated_settlement: String,
    pub fields: Vec<Field>,
    /// Payout fee schedule; shown as `fees` ([`Fee::render`]).
    pub fee: Fee,
    /// Network name for crypto methods (`ethereum`, `solana`, ...).
    pub chain: Option<String>,
    /// Network used by the sandbox stack (`sepolia`, `solana-devnet`, ...); internal.
    pub testnet_chain: Option<String>,
}

/// Per-method amount limits, in `currency`, written as JSON numbers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Limits {
    pub min: serde_json::Number,
    pub max: serde_json::Number,
    /// Checked when the catalog is read: a method in a currency the node
    /// does not know is no catalog at all.
    #[serde(deserialize_with = "known_currency")]
    pub currency: Currency,
}

/// A currency code the node knows, read from the catalog.
fn known_currency<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Currency, D::Error> {
    let code = String::deserialize(deserializer)?;
    Currency::find(&code).map_err(serde::de::Error::custom)
}

/// A decimal written as a string (`"1.00"`), read from the catalog.
fn decimal_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Decimal, D::Error> {
    let text = String::deserialize(deserializer)?;
    Decimal::from_str(text.trim()).map_err(serde::de::Error::custom)
}

/// One input field a method needs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Field {
    pub key: String,
    pub label: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub placeholder: String,
    pub description: String,
    pub group: String,
    /// Whether a payout must carry this field; internal, never shown.
    pub required: bool,
    pub options: Vec<FieldOption>,
}

/// One choice of a `select` field.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FieldOption {
    pub label: String,
    pub value: String,
}

/// Payout fee: a fixed part in the method's currency plus a percentage in basis points.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Fee {
    /// In the method currency, written `"1.00"`.
    #[serde(deserialize_with = "decimal_text")]
    pub fixed: Decimal,
    /// Percentage part, in basis points (100 = 1%).
    pub percent_bps: u32,
}

/// Result of a destination validation; [`ValidationResult::render`] shows it
/// as the spec's `result` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValidationResult {
    pub valid: bool,
    pub account_name: Option<String>,
    pub reason: Option<String>,
}

/// The catalog compiled into the binary, parsed and checked once.
///
/// Panics only if the shipped JSON is malformed or inconsistent, which the unit
/// tests rule out.
pub(crate) fn shipped() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Catalog::parse(SHIPPED_JSON).unwrap_or_else(|e| panic!("shipped capabilities.json is invalid: {e}"))
    })
}

/// Why a catalog document was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CatalogError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The document parses but breaks a rule (`Catalog::check`).
    #[error("{0}")]
    Inconsistent(String),
}

/// Why the operator's limits or fees cannot apply to a method.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OverrideError {
    #[error("the catalog's {0} is not a decimal")]
    NotDecimal(&'static str),
    #[error("min {min} is above max {max}")]
    MinAboveMax { min: Decimal, max: Decimal },
    #[error(transparent)]
    Number(#[from] serde_json::Error),
}

impl Catalog {
    /// Parses and checks a catalog document (the shape of `capabilities.json`).
    pub(crate) fn parse(json: &str) -> Result<Catalog, CatalogError> {
        let catalog: Catalog = serde_json::from_str(json)?;
        catalog.check()?;
        Ok(catalog)
    }

    pub(crate) fn countries(&self) -> &[Country] {
        &self.countries
    }

    /// The stablecoin networks offered in every country.
    pub(crate) fn stablecoins(&self) -> &[Method] {
        &self.stablecoins
    }

    /// Looks a country up by ISO code, case-insensitively.
    pub(crate) fn country(&self, code: &str) -> Option<&Country> {
        let code = code.trim();
        self.countries.iter().find(|c| c.code.eq_ignore_ascii_case(code))
    }

    /// The country's methods followed by the stablecoin networks; `None` if the
    /// country is unknown.
    pub(crate) fn methods_for(&self, country: &str) -> Option<Vec<&Method>> {
        let country = self.country(country)?;
        Some(country.methods.iter().chain(self.stablecoins.iter()).collect())
    }

    /// One method of a country (case-insensitive country, exact code); the
    /// stablecoin networks are found under every known country.
    pub(crate) fn method(&self, country: &str, code: &str) -> Option<&Method> {
        let country = self.country(country)?;
        country.methods.iter().chain(self.stablecoins.iter()).find(|m| m.code == code)
    }

    /// A method by exact code, in any country or among the stablecoin networks.
    pub(crate) fn find_method(&self, code: &str) -> Option<&Method> {
        self.countries
            .iter()
            .flat_map(|c| c.methods.iter())
            .chain(self.stablecoins.iter())
            .find(|m| m.code == code)
    }

    /// A method by exact code, to change (the operator's overrides).
    pub(crate) fn find_method_mut(&mut self, code: &str) -> Option<&mut Method> {
        self.countries
            .iter_mut()
            .flat_map(|c| c.methods.iter_mut())
            .chain(self.stablecoins.iter_mut())
            .find(|m| m.code == code)
    }

    /// The country whose local methods include `code`; `None` for stablecoin
    /// networks and unknown codes.
    pub(crate) fn country_of_method(&self, code: &str) -> Option<&Country> {
        self.countries.iter().find(|c| c.methods.iter().any(|m| m.code == code))
    }

    /// Consistency checks run on every parse (serde has refused an unknown
    /// method type or status already).
    fn check(&self) -> Result<(), CatalogError> {
        let mut seen = std::collections::HashSet::new();
        self.check_countries(&mut seen)?;
        self.check_methods(&mut seen)
    }

    /// Each country's code, and that its methods are local ones in its currency.
    fn check_countries(&self, seen: &mut std::collections::HashSet<String>) -> Result<(), CatalogError> {
        for country in &self.countries {
            let cc = &country.code;
            if cc.len() != 2 || !cc.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(CatalogError::Inconsistent(format!(
                    "country code {cc:?} is not ISO alpha-2 upper case"
                )));
            }
            if !seen.insert(format!("country:{cc}")) {
                return Err(CatalogError::Inconsistent(format!("duplicate country {cc}")));
            }
            let suffix = format!("_{}", cc.to_ascii_lowercase());
            for m in &country.methods {
                if !m.code.ends_with(&suffix) {
                    return Err(CatalogError::Inconsistent(format!(
                        "method {} does not end with {suffix}",
                        m.code
                    )));
                }
                if m.kind == KIND_CRYPTO {
                    return Err(CatalogError::Inconsistent(format!(
                        "crypto method {} belongs in stablecoins",
                        m.code
                    )));
                }
                if m.limits.currency.code != country.currency {
                    return Err(CatalogError::Inconsistent(format!(
                        "method {} limits currency {} differs from {}",
                        m.code, m.limits.currency, country.currency
                    )));
                }
            }
        }
        for m in &self.stablecoins {
            if m.kind != KIND_CRYPTO {
                return Err(CatalogError::Inconsistent(format!(
                    "stablecoin {} must have type crypto",
                    m.code
                )));
            }
            if m.chain.as_deref().is_none_or(str::is_empty)
                || m.testnet_chain.as_deref().is_none_or(str::is_empty)
            {
                return Err(CatalogError::Inconsistent(format!(
                    "stablecoin {} needs chain and testnetChain",
                    m.code
                )));
            }
        }
        Ok(())
    }

    /// Every method's code, limits, fee and fields.
    fn check_methods(&self, seen: &mut std::collections::HashSet<String>) -> Result<(), CatalogError> {
        let all = self.countries.iter().flat_map(|c| c.methods.iter()).chain(self.stablecoins.iter());
        for m in all {
            if !seen.insert(format!("method:{}", m.code)) {
                return Err(CatalogError::Inconsistent(format!("duplicate method code {}", m.code)));
            }
            if m.code.is_empty()
                || !m.code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(CatalogError::Inconsistent(format!(
                    "method code {:?} is not lower-case snake",
                    m.code
                )));
            }
            let min = number_to_decimal(&m.limits.min).ok_or_else(|| {
                CatalogError::Inconsistent(format!("method {} limits.min is not a decimal", m.code))
            })?;
            let max = number_to_decimal(&m.limits.max).ok_or_else(|| {
                CatalogError::Inconsistent(format!("method {} limits.max is not a decimal", m.code))
            })?;
            if min.is_sign_negative() || min > max {
                return Err(CatalogError::Inconsistent(format!(
                    "method {} limits are not 0 <= min <= max",
                    m.code
                )));
            }
            let fixed = m.fee.fixed;
            if fixed.is_sign_negative() {
                return Err(CatalogError::Inconsistent(format!("method {} fee.fixed is negative", m.code)));
            }
            if m.fee.percent_bps > 10_000 {
                return Err(CatalogError::Inconsistent(format!(
                    "method {} fee.percentBps exceeds 100%",
                    m.code
                )));
            }
            if !m.fields.iter().any(|f| f.required) {
                return Err(CatalogError::Inconsistent(format!("method {} has no required field", m.code)));
            }
        }
        Ok(())
    }
}

impl Country {
    /// One of this country's local methods (stablecoins not included).
    pub(crate) fn method(&self, code: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.code == code)
    }
}

impl Method {
    /// The currency the method pays out in (the limits' currency).
    pub(crate) fn currency(&self) -> Currency {
        self.limits.currency
    }

    pub(crate) fn is_crypto(&self) -> bool {
        self.kind == KIND_CRYPTO
    }

    /// The network to use on a stack: `testnetChain` in sandbox, `chain` in live.
    pub(crate) fn chain_for(&self, sandbox: bool) -> Option<&str> {
        if sandbox { self.testnet_chain.as_deref().or(self.chain.as_deref()) } else { self.chain.as_deref() }
    }

    /// Applies the operator's limits and fees; unset values stay. Refuses a
    /// minimum above the maximum.
    pub(crate) fn apply(
        &mut self,
        min: Option<Decimal>,
        max: Option<Decimal>,
        fee_fixed: Option<Decimal>,
        fee_percent_bps: Option<u32>,
    ) -> Result<(), OverrideError> {
        let number = |d: Decimal| serde_json::Number::from_str(&d.normalize().to_string());
        let current_min = number_to_decimal(&self.limits.min).ok_or(OverrideError::NotDecimal("min"))?;
        let current_max = number_to_decimal(&self.limits.max).ok_or(OverrideError::NotDecimal("max"))?;
        let (min_now, max_now) = (min.unwrap_or(current_min), max.unwrap_or(current_max));
        if min_now > max_now {
            return Err(OverrideError::MinAboveMax { min: min_now, max: max_now });
        }
        if let Some(min) = min {
            self.limits.min = number(min)?;
        }
        if let Some(max) = max {
            self.limits.max = number(max)?;
        }
        if let Some(fixed) = fee_fixed {
            self.fee.fixed = fixed;
        }
        if let Some(bps) = fee_percent_bps {
            self.fee.percent_bps = bps;
        }
        Ok(())
    }

    pub(crate) fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// Whether a destination of this method names its bank (a `bankCode`
    /// field: the bank methods).
    pub(crate) fn takes_bank_code(&self) -> bool {
        self.field(BANK_CODE).is_some()
    }

    /// The `bankCode` option `value` names (letters in either case), as the
    /// catalog writes it; `None` if it names none.
    pub(crate) fn bank_code(&self, value: &str) -> Option<&str> {
        let value = value.trim();
        let field = self.field(BANK_CODE)?;
        field.options.iter().map(|o| o.value.as_str()).find(|o| o.eq_ignore_ascii_case(value))
    }

    /// The `bankCode` options, for a message: `044, 058, …`.
    pub(crate) fn bank_codes(&self) -> String {
        let options = self.field(BANK_CODE).map(|f| f.options.as_slice()).unwrap_or_default();
        options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// The method as the capabilities lookup shows it.
    pub(crate) fn render(&self) -> wire::Method {
        wire::Method {
            code: self.code.clone(),
            name: self.name.clone(),
            kind: self.kind,
            status: self.status,
            limits: wire::MethodLimits {
                min: self.limits.min.clone(),
                max: self.limits.max.clone(),
                currency: self.limits.currency.code.to_string(),
            },
            estimated_settlement: self.estimated_settlement.clone(),
            fields: self.fields.iter().map(Field::render).collect(),
            fees: self.fee.render(self.limits.currency),
            chain: self.chain.clone(),
        }
    }
}

impl Field {
    fn render(&self) -> wire::MethodField {
        wire::MethodField {
            key: self.key.clone(),
            label: self.label.clone(),
            kind: self.kind.clone(),
            placeholder: self.placeholder.clone(),
            description: self.description.clone(),
            group: self.group.clone(),
            options: self
                .options
                .iter()
                .map(|o| wire::FieldOption { label: o.label.clone(), value: o.value.clone() })
                .collect(),
        }
    }
}

impl Fee {
    /// The fixed part in minor units at `scale` (rounded half up if it has
    /// more fraction digits); `None` if `fixed` is not a decimal.
    pub(crate) fn fixed_minor(&self, scale: u32) -> Option<i128> {
        decimal_to_minor(self.fixed, scale, Rounding::HalfUp)
    }

    /// Fee in minor units for an amount in minor units of the same currency:
    /// the fixed part plus `amount * percentBps / 10000`, rounded half up to
    /// the minor unit (1.00 + 1 % of 3.33 GHS is 1.03). Integer arithmetic
    /// only, checked: `None` when it overflows or `fixed` is not a decimal
    /// (impossible for the checked catalog). A negative amount counts as zero.
    pub(crate) fn amount_minor(&self, amount_minor: i128, scale: u32) -> Option<i128> {
        let fixed = self.fixed_minor(scale)?;
        let amount = amount_minor.max(0);
        let bps = i128::from(self.percent_bps);
        // amount = q * 10000 + r, so amount * bps / 10000 = q * bps + r * bps / 10000
        // without the intermediate product overflowing (r * bps < 10^8).
        let (q, r) = (amount / 10_000, amount % 10_000);
        let percent = q.checked_mul(bps)?.checked_add((r * bps + 5_000) / 10_000)?;
        fixed.checked_add(percent)
    }

    /// The schedule as capabilities show it: the fixed part at the
    /// currency's digits and the percentage with two, as decimal strings.
    pub(crate) fn render(&self, currency: Currency) -> wire::MethodFees {
        let fixed = self.fixed.round_dp_with_strategy(currency.scale, RoundingStrategy::MidpointAwayFromZero);
        wire::MethodFees {
            fixed: format!("{fixed:.prec$}", prec = currency.scale as usize),
            percent: sika_engine::money::format_minor(i128::from(self.percent_bps), 2),
            currency: currency.code.to_string(),
        }
    }
}

impl Limits {
    /// `min` in minor units at `scale`, rounded up. An unparsable number (impossible
    /// for the checked shipped catalog) gives `i128::MAX`, so nothing fits.
    pub(crate) fn min_minor(&self, scale: u32) -> i128 {
        number_to_decimal(&self.min)
            .and_then(|d| decimal_to_minor(d, scale, Rounding::Up))
            .unwrap_or(i128::MAX)
    }

    /// `max` in minor units at `scale`, rounded down. An unparsable number gives `0`.
    pub(crate) fn max_minor(&self, scale: u32) -> i128 {
        number_to_decimal(&self.max).and_then(|d| decimal_to_minor(d, scale, Rounding::Down)).unwrap_or(0)
    }

    /// Whether `amount_minor` (at `scale`) lies within `[min, max]`.
    pub(crate) fn contains_minor(&self, amount_minor: i128, scale: u32) -> bool {
        amount_minor >= self.min_minor(scale) && amount_minor <= self.max_minor(scale)
    }
}

#[derive(Clone, Copy)]
enum Rounding {
    Up,
    Down,
    /// To the nearest, a half away from zero (fees are never negative).
    HalfUp,
}

/// Parses a JSON number through its text form (exact with or without serde_json's
/// `arbitrary_precision`), accepting exponent notation.
fn number_to_decimal(n: &serde_json::Number) -> Option<Decimal> {
    let s = n.to_string();
    Decimal::from_str(&s).or_else(|_| Decimal::from_scientific(&s)).ok()
}

/// `d * 10^scale` as an integer, rounding toward +inf (`Up`), -inf (`Down`)
/// or the nearest (`HalfUp`) when `d` has more fraction digits than `scale`;
/// `None` on overflow.
fn decimal_to_minor(d: Decimal, scale: u32, rounding: Rounding) -> Option<i128> {
    let mantissa = d.mantissa();
    let dscale = d.scale();
    if scale >= dscale {
        mantissa.checked_mul(10i128.checked_pow(scale - dscale)?)
    } else {
        // dscale <= 28, so the divisor fits.
        let divisor = 10i128.pow(dscale - scale);
        let floor = mantissa.div_euclid(divisor);
        let remainder = mantissa.rem_euclid(divisor);
        Some(match rounding {
            Rounding::Up if remainder != 0 => floor + 1,
            Rounding::HalfUp if remainder >= divisor / 2 => floor + 1,
            _ => floor,
        })
    }
}

/// The international dialling code of a country Sika serves.
pub(crate) fn dialling_code(country: &str) -> Option<&'static str> {
    Some(match country {
        "GH" => "233",
        "NG" => "234",
        "KE" => "254",
        "UG" => "256",
        "TZ" => "255",
        "RW" => "250",
        "CI" => "225",
        "SN" => "221",
        "ZA" => "27",
        _ => return None,
    })
}

impl Catalog {
    /// Why `number` cannot be paid on the local method `code`, or `None`
    /// when its format fits: mobile money wants the country's E.164
    /// number (`+233…`), bank transfer an account number (10 digits in
    /// Nigeria, the NUBAN; elsewhere 6 to 34 letters and digits).
    pub(crate) fn account_problem(&self, code: &str, number: &str) -> Option<String> {
        let country = self.country_of_method(code)?;
        let method = country.method(code)?;
        let number = number.trim();
        if method.kind == KIND_MOBILE_MONEY {
            let dial = dialling_code(&country.code)?;
            let digits = number.strip_prefix('+').unwrap_or("");
            let fits = digits.starts_with(dial)
                && (9..=15).contains(&digits.len())
                && digits.chars().all(|c| c.is_ascii_digit());
            return (!fits).then(|| {
                format!(
                    "must be a {} mobile number in international form, like +{dial}241234567",
                    country.name
                )
            });
        }
        let compact: String = number.chars().filter(|c| !matches!(c, ' ' | '-')).collect();
        if country.code == "NG" {
            let nuban = compact.len() == 10 && compact.chars().all(|c| c.is_ascii_digit());
            return (!nuban).then(|| "must be a 10-digit NUBAN account number".to_string());
        }
        let fits = (6..=34).contains(&compact.len()) && compact.chars().all(|c| c.is_ascii_alphanumeric());
        (!fits).then(|| "must be 6 to 34 letters and digits".to_string())
    }
}

/// Live rule of `POST /v1/validate/bulk` for one item: the format only, as
/// a payout would check it (the method, an account number of the method's
/// shape, an address of the chain's), never the sandbox's suffixes, and no
/// account name, since no rail was asked.
pub(crate) fn live_validate(
    catalog: &Catalog,
    code: &str,
    account_number: Option<&str>,
    address: Option<&str>,
) -> ValidationResult {
    let Some(method) = catalog.find_method(code) else {
        return ValidationResult::invalid("unknown_method");
    };
    let account_number = account_number.map(str::trim).filter(|s| !s.is_empty());
    let address = address.map(str::trim).filter(|s| !s.is_empty());
    let problem = if method.is_crypto() {
        let Some(address) = address.or(account_number) else {
            return ValidationResult::invalid("missing_account");
        };
        let chain = method.chain.as_deref().unwrap_or_default();
        crate::domain::receiving::address::address_problem(chain, address).map(|_| "invalid_address")
    } else {
        let Some(number) = account_number else { return ValidationResult::invalid("missing_account") };
        catalog.account_problem(code, number).map(|_| "invalid_account_number")
    };
    match problem {
        Some(reason) => ValidationResult::invalid(reason),
        None => ValidationResult { valid: true, account_name: None, reason: None },
    }
}

/// Sandbox rule of `POST /v1/validate/bulk` for one item.
///
/// Unknown method code: `unknown_method`. Neither `accountNumber` nor `address`
/// (blank counts as missing): `missing_account`. Crypto methods check the address
/// (falling back to `accountNumber`) loosely: 20 to 100 ASCII alphanumerics, else
/// `invalid_address`; a valid address has no account name. Other methods need an
/// `accountNumber` (else `missing_account`) and are decided by its suffix:
/// `000000` `account_not_found`, `000001` `account_closed`, `000002` `timeout`,
/// anything else valid with a deterministic account name derived from the digits.
pub(crate) fn sandbox_validate(
    code: &str,
    account_number: Option<&str>,
    address: Option<&str>,
) -> ValidationResult {
    let catalog = shipped();
    let Some(method) = catalog.find_method(code) else {
        return ValidationResult::invalid("unknown_method");
    };
    let account_number = account_number.map(str::trim).filter(|s| !s.is_empty());
    let address = address.map(str::trim).filter(|s| !s.is_empty());
    if account_number.is_none() && address.is_none() {
        return ValidationResult::invalid("missing_account");
    }

    if method.is_crypto() {
        let Some(address) = address.or(account_number) else {
            return ValidationResult::invalid("missing_account");
        };
        let len = address.chars().count();
        let shape_ok = (20..=100).contains(&len) && address.chars().all(|c| c.is_ascii_alphanumeric());
        return if shape_ok {
            ValidationResult { valid: true, account_name: None, reason: None }
        } else {
            ValidationResult::invalid("invalid_address")
        };
    }

    let Some(number) = account_number else {
        return ValidationResult::invalid("missing_account");
    };
    if let Some(reason) = crate::domain::simulator::validation_reason(number) {
        return ValidationResult::invalid(reason);
    }
    let country = catalog.country_of_method(code).map(|c| c.code.as_str());
    ValidationResult {
        valid: true,
        account_name: Some(sandbox_account_name(country.unwrap_or("GH"), number)),
        reason: None,
    }
}

impl ValidationResult {
    pub(crate) fn invalid(reason: &str) -> Self {
        ValidationResult { valid: false, account_name: None, reason: Some(reason.to_string()) }
    }

    /// The result as `POST /v1/validate/bulk` shows it, saying how far
    /// the check went.
    pub(crate) fn render(&self, checked: sika_api::validation::ValidationDepth) -> DestinationCheck {
        DestinationCheck {
            valid: self.valid,
            account_name: self.account_name.clone(),
            reason: self.reason.clone(),
            checked,
        }
    }
}

/// A plausible local name picked deterministically from the account number's digits.
fn sandbox_account_name(country: &str, account_number: &str) -> String {
    let (first, last) = sandbox_names(country);
    // FNV-1a over the digits (over the whole string when it has none).
    let digits: Vec<u8> = account_number.bytes().filter(u8::is_ascii_digit).collect();
    let bytes = if digits.is_empty() { account_number.as_bytes() } else { &digits };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let f = first[(h % first.len() as u64) as usize];
    let l = last[((h >> 32) % last.len() as u64) as usize];
    format!("{f} {l}")
}

fn sandbox_names(country: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match country {
        "NG" => (
            &["Chinedu", "Aisha", "Tunde", "Ngozi", "Emeka", "Funmilayo", "Ibrahim", "Chiamaka"],
            &["Okafor", "Bello", "Adeyemi", "Eze", "Okonkwo", "Abubakar", "Balogun", "Nwosu"],
        ),
        "KE" => (
            &["Wanjiru", "Brian", "Achieng", "Kevin", "Njeri", "Faith", "Peter", "Mercy"],
            &["Kamau", "Ochieng", "Mutua", "Wambui", "Kiprono", "Njoroge", "Odhiambo", "Kariuki"],
        ),
        "UG" => (
            &["Moses", "Grace", "Joseph", "Sarah", "Ivan", "Prossy", "Brian", "Esther"],
            &["Mugisha", "Nakato", "Okello", "Kato", "Namukasa", "Ssempala", "Atuhaire", "Byaruhanga"],
        ),
        "TZ" => (
            &["Juma", "Neema", "Baraka", "Rehema", "Hamisi", "Zawadi", "Emmanuel", "Upendo"],
            &["Mwakyusa", "Kimaro", "Massawe", "Mushi", "Mfinanga", "Lyimo", "Salim", "Mollel"],
        ),
        "RW" => (
            &["Jean", "Aline", "Eric", "Divine", "Patrick", "Clarisse", "Olivier", "Diane"],
            &["Mugabo", "Uwase", "Niyonsaba", "Habimana", "Ishimwe", "Mukamana", "Uwimana", "Nshimiyimana"],
        ),
        "CI" => (
            &["Kouassi", "Aya", "Yao", "Adjoua", "Koffi", "Mariam", "Konan", "Awa"],
            &["Kouadio", "Koné", "Traoré", "N'Guessan", "Bamba", "Ouattara", "Diabaté", "Kouamé"],
        ),
        "SN" => (
            &["Mamadou", "Fatou", "Ousmane", "Aminata", "Cheikh", "Awa", "Ibrahima", "Khady"],
            &["Diop", "Ndiaye", "Fall", "Sow", "Sarr", "Ba", "Diallo", "Faye"],
        ),
        "ZA" => (
            &["Thabo", "Lerato", "Sipho", "Naledi", "Johan", "Ayanda", "Pieter", "Zanele"],
            &["Nkosi", "Dlamini", "Mokoena", "van der Merwe", "Khumalo", "Botha", "Naidoo", "Mahlangu"],
        ),
        _ => (
            &["Ama", "Kwame", "Kofi", "Akosua", "Yaw", "Abena", "Kwabena", "Efua", "Kojo", "Adwoa"],
            &["Mensah", "Asante", "Boateng", "Owusu", "Osei", "Agyeman", "Appiah", "Darko", "Amoah", "Addo"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRED: [(&str, &str); 9] = [
        ("GH", "GHS"),
        ("NG", "NGN"),
        ("KE", "KES"),
        ("UG", "UGX"),
        ("TZ", "TZS"),
        ("RW", "RWF"),
        ("CI", "XOF"),
        ("SN", "XOF"),
        ("ZA", "ZAR"),
    ];

    const STABLECOINS: [(&str, &str, &str, &str); 6] = [
        ("usdc_ethereum", "USDC", "ethereum", "sepolia"),
        ("usdc_solana", "USDC", "solana", "solana-devnet"),
        ("usdc_base", "USDC", "base", "base-sepolia"),
        ("usdc_polygon", "USDC", "polygon", "amoy"),
        ("usdt_tron", "USDT", "tron", "nile"),
        ("usdt_ethereum", "USDT", "ethereum", "sepolia"),
    ];

    fn num(s: &str) -> serde_json::Number {
        serde_json::from_str(s).unwrap()
    }

    fn limits(min: &str, max: &str) -> Limits {
        Limits { min: num(min), max: num(max), currency: Currency::find("GHS").unwrap() }
    }

    #[test]
    fn shipped_json_parses_and_passes_checks() {
        Catalog::parse(SHIPPED_JSON).expect("shipped catalog is valid");
        assert!(shipped().countries().len() >= REQUIRED.len());
        // Same instance every time.
        assert!(std::ptr::eq(shipped(), shipped()));
    }

    #[test]
    fn every_required_country_exists_with_its_currency() {
        for (code, currency) in REQUIRED {
            let c = shipped().country(code).unwrap_or_else(|| panic!("{code} missing"));
            assert_eq!(c.code, code);
            assert_eq!(c.currency, currency, "{code}");
            assert!(!c.name.is_empty());
            for m in &c.methods {
                assert_eq!(m.currency().code, currency, "{}", m.code);
            }
            let bank = format!("bank_{}", code.to_ascii_lowercase());
            assert_eq!(c.method(&bank).unwrap().kind, KIND_BANK_TRANSFER);
        }
        assert!(shipped().country("ZA").unwrap().methods.iter().all(|m| m.kind != KIND_MOBILE_MONEY));
    }

    #[test]
    fn expected_method_codes_exist() {
        let expected = [
            ("GH", "mtn_gh"),
            ("GH", "telecel_gh"),
            ("GH", "airteltigo_gh"),
            ("NG", "opay_ng"),
            ("NG", "palmpay_ng"),
            ("KE", "mpesa_ke"),
            ("KE", "airtel_ke"),
            ("UG", "mtn_ug"),
            ("UG", "airtel_ug"),
            ("TZ", "mpesa_tz"),
            ("TZ", "airtel_tz"),
            ("RW", "mtn_rw"),
            ("RW", "airtel_rw"),
            ("CI", "orange_ci"),
            ("CI", "mtn_ci"),
            ("CI", "wave_ci"),
            ("SN", "orange_sn"),
            ("SN", "wave_sn"),
        ];
        for (country, code) in expected {
            let m = shipped().method(country, code).unwrap_or_else(|| panic!("{code}"));
            assert_eq!(m.kind, KIND_MOBILE_MONEY, "{code}");
            assert!(m.field("accountNumber").unwrap().required);
            assert!(!m.field("accountName").unwrap().required);
        }
        for code in ["mtn_gh", "telecel_gh", "bank_gh", "mpesa_ke", "bank_ng"] {
            assert_eq!(shipped().find_method(code).unwrap().status, STATUS_OPERATIONAL);
        }
        let bank_gh = shipped().find_method("bank_gh").unwrap();
        assert!(bank_gh.field("bankCode").unwrap().options.len() >= 3);
    }

    #[test]
    fn stablecoins_are_offered_everywhere() {
        let sc = shipped().stablecoins();
        assert_eq!(sc.len(), STABLECOINS.len());
        for (code, currency, chain, testnet) in STABLECOINS {
            let m = shipped().find_method(code).unwrap();
            assert_eq!(m.kind, KIND_CRYPTO);
            assert_eq!(m.currency().code, currency);
            assert_eq!(m.chain.as_deref(), Some(chain));
            assert_eq!(m.testnet_chain.as_deref(), Some(testnet));
            assert_eq!(m.chain_for(false), Some(chain));
            assert_eq!(m.chain_for(true), Some(testnet));
            assert!(m.field("address").unwrap().required);
            assert!(!m.field("tag").unwrap().required);
            if currency == "USDC" {
                assert_eq!(m.status, STATUS_OPERATIONAL);
            }
            for (country, _) in REQUIRED {
                assert!(shipped().method(country, code).is_some(), "{code} in {country}");
            }
        }
        assert!(shipped().country_of_method("usdc_base").is_none());
        assert_eq!(shipped().country_of_method("mpesa_ke").unwrap().code, "KE");
    }

    #[test]
    fn methods_for_lists_local_then_stablecoins() {
        let gh = shipped().methods_for("gh").unwrap();
        let codes: Vec<&str> = gh.iter().map(|m| m.code.as_str()).collect();
        assert_eq!(&codes[..4], ["mtn_gh", "telecel_gh", "airteltigo_gh", "bank_gh"]);
        assert_eq!(codes.len(), 4 + STABLECOINS.len());
        assert_eq!(codes[4..], STABLECOINS.map(|s| s.0));
        let za = shipped().methods_for("Za").unwrap();
        assert_eq!(za[0].code, "bank_za");
        assert!(shipped().methods_for("XX").is_none());
        assert!(shipped().methods_for("").is_none());
    }

    #[test]
    fn lookups_are_case_insensitive_on_country_only() {
        assert_eq!(shipped().country("gh").unwrap().code, "GH");
        assert_eq!(shipped().country("Gh").unwrap().code, "GH");
        assert_eq!(shipped().method("ke", "mpesa_ke").unwrap().code, "mpesa_ke");
        assert_eq!(shipped().method("kE", "usdt_tron").unwrap().code, "usdt_tron");
        // Codes are exact.
        assert!(shipped().method("ke", "MPESA_KE").is_none());
        assert!(shipped().find_method("MTN_GH").is_none());
    }

    #[test]
    fn unknown_country_or_method_gives_none() {
        assert!(shipped().country("US").is_none());
        assert!(shipped().country("GHA").is_none());
        assert!(shipped().method("US", "mtn_gh").is_none());
        assert!(shipped().method("US", "usdc_base").is_none());
        assert!(shipped().method("GH", "nope").is_none());
        // A method of another country is not found under this one.
        assert!(shipped().method("GH", "mpesa_ke").is_none());
        assert!(shipped().find_method("nope").is_none());
    }

    #[test]
    fn fee_arithmetic() {
        let fee = Fee { fixed: Decimal::from_str("1.00").unwrap(), percent_bps: 100 };
        // 1.00 + 1% of 250.00 GHS = 3.50.
        assert_eq!(fee.amount_minor(25_000, 2), Some(350));
        // 1% of 3.33 = 0.0333 -> 0.03, half up: the fee a merchant works
        // out from the schedule capabilities show.
        assert_eq!(fee.amount_minor(333, 2), Some(103));
        // 1% of 0.50 = 0.005 -> 0.01 (a half goes up); 1% of 0.49 -> 0.00.
        assert_eq!(fee.amount_minor(50, 2), Some(101));
        assert_eq!(fee.amount_minor(49, 2), Some(100));
        // Exactly 1% of 1.00 is 0.01, no rounding.
        assert_eq!(fee.amount_minor(100, 2), Some(101));
        assert_eq!(fee.amount_minor(0, 2), Some(100));
        assert_eq!(fee.amount_minor(-500, 2), Some(100));
        // Six-digit currency: fixed 1.00 USDC = 1_000_000 minor.
        assert_eq!(fee.amount_minor(0, 6), Some(1_000_000));
        assert_eq!(fee.fixed_minor(0), Some(1));

        let xof = Fee { fixed: Decimal::from_str("0").unwrap(), percent_bps: 150 };
        // 1.5% of 1001 XOF = 15.015 -> 15; of 1034 = 15.51 -> 16.
        assert_eq!(xof.amount_minor(1001, 0), Some(15));
        assert_eq!(xof.amount_minor(1034, 0), Some(16));
        // Fixed with more digits than the scale rounds half up.
        let odd = Fee { fixed: Decimal::from_str("0.105").unwrap(), percent_bps: 0 };
        assert_eq!(odd.amount_minor(1000, 2), Some(11));
        let odd = Fee { fixed: Decimal::from_str("0.104").unwrap(), percent_bps: 0 };
        assert_eq!(odd.amount_minor(1000, 2), Some(10));
        // Huge amounts are refused instead of overflowing.
        let big = Fee { fixed: Decimal::from_str("1").unwrap(), percent_bps: 10_000 };
        assert_eq!(big.amount_minor(i128::MAX, 2), None);
        // The shipped mtn_gh fee.
        let mtn = &shipped().find_method("mtn_gh").unwrap().fee;
        assert!(mtn.fixed_minor(2).is_some());
        for m in shipped().countries().iter().flat_map(|c| c.methods.iter()).chain(shipped().stablecoins()) {
            assert!(m.fee.fixed_minor(6).is_some(), "{}", m.code);
        }
    }

    #[test]
    fn fees_render_as_decimal_strings_in_the_method_currency() {
        let mtn = shipped().find_method("mtn_gh").unwrap().render().fees;
        assert_eq!(
            (mtn.fixed.as_str(), mtn.percent.as_str(), mtn.currency.as_str()),
            ("1.00", "1.00", "GHS")
        );
        let bank_za = shipped().find_method("bank_za").unwrap().render().fees;
        assert_eq!((bank_za.fixed.as_str(), bank_za.percent.as_str()), ("5.00", "0.30"));
        let xof = shipped().find_method("orange_ci").unwrap().render().fees;
        assert_eq!((xof.fixed.as_str(), xof.percent.as_str(), xof.currency.as_str()), ("0", "1.00", "XOF"));
        let usdc = shipped().find_method("usdc_base").unwrap().render().fees;
        assert_eq!((usdc.fixed.as_str(), usdc.percent.as_str()), ("0.100000", "0.00"));
    }

    #[test]
    fn limits_conversion() {
        let l = limits("1", "10000");
        assert_eq!(l.min_minor(2), 100);
        assert_eq!(l.max_minor(2), 1_000_000);
        assert_eq!(l.max_minor(0), 10_000);
        assert_eq!(l.max_minor(6), 10_000_000_000);
        let l = limits("0.5", "1234.56");
        assert_eq!(l.min_minor(2), 50);
        assert_eq!(l.max_minor(2), 123_456);
        // Fewer fraction digits than the number: min rounds up, max rounds down.
        assert_eq!(l.min_minor(0), 1);
        assert_eq!(l.max_minor(0), 1234);
        assert!(l.contains_minor(50, 2));
        assert!(l.contains_minor(123_456, 2));
        assert!(!l.contains_minor(49, 2));
        assert!(!l.contains_minor(123_457, 2));
        // Exponent notation.
        let l = limits("1e2", "2.5E3");
        assert_eq!(l.min_minor(2), 10_000);
        assert_eq!(l.max_minor(2), 250_000);
        // Shipped values.
        let mtn = &shipped().find_method("mtn_gh").unwrap().limits;
        assert!(mtn.min_minor(2) > 0);
        assert!(mtn.min_minor(2) <= mtn.max_minor(2));
    }

    #[test]
    fn rendered_method_matches_spec_shape() {
        let m = shipped().method("GH", "mtn_gh").unwrap().render();
        let v = serde_json::to_value(&m).unwrap();
        let obj = v.as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["code", "estimatedSettlement", "fees", "fields", "limits", "name", "status", "type"]
        );
        assert_eq!(v["type"], "mobile_money");
        assert_eq!(v["status"], "operational");
        assert!(v["limits"]["min"].is_number());
        assert!(v["limits"]["max"].is_number());
        assert_eq!(v["limits"]["currency"], "GHS");
        assert!(v["estimatedSettlement"].is_string());
        let field = v["fields"][0].as_object().unwrap();
        let mut fkeys: Vec<&str> = field.keys().map(String::as_str).collect();
        fkeys.sort_unstable();
        assert_eq!(fkeys, ["description", "group", "key", "label", "options", "placeholder", "type"]);
        assert_eq!(v["fees"], serde_json::json!({"fixed": "1.00", "percent": "1.00", "currency": "GHS"}));
        let text = serde_json::to_string(&m).unwrap();
        assert!(!text.contains("\"fee\""));
        assert!(!text.contains("percentBps"));
        assert!(!text.contains("\"required\""));

        let c = serde_json::to_value(shipped().find_method("usdc_solana").unwrap().render()).unwrap();
        assert_eq!(c["chain"], "solana");
        assert!(c.get("fee").is_none());
        assert!(c.get("testnetChain").is_none());

        let bank = serde_json::to_value(shipped().find_method("bank_ng").unwrap().render()).unwrap();
        let opts = bank["fields"][0]["options"].as_array().unwrap();
        assert!(opts.iter().all(|o| o["label"].is_string() && o["value"].is_string()));
    }

    #[test]
    fn sandbox_validation_suffixes() {
        let r = sandbox_validate("mtn_gh", Some("+233241000000"), None);
        assert_eq!(r, ValidationResult::invalid("account_not_found"));
        let r = sandbox_validate("bank_ng", Some("0123000001"), None);
        assert_eq!(r.reason.as_deref(), Some("account_closed"));
        assert!(!r.valid);
        let r = sandbox_validate("mpesa_ke", Some("+254712000002"), None);
        assert_eq!(r.reason.as_deref(), Some("timeout"));
        assert!(!r.valid);
        assert!(r.account_name.is_none());

        let ok = sandbox_validate("mtn_gh", Some("+233241234567"), None);
        assert!(ok.valid);
        assert!(ok.reason.is_none());
        let name = ok.account_name.clone().unwrap();
        assert!(name.contains(' '));
        // Deterministic, and derived from the digits only.
        assert_eq!(sandbox_validate("mtn_gh", Some("+233241234567"), None), ok);
        assert_eq!(sandbox_validate("telecel_gh", Some(" 233 241 234 567 "), None).account_name, Some(name));
        // 000003 and a shorter run of zeros are ordinary numbers.
        assert!(sandbox_validate("mtn_gh", Some("+233241000003"), None).valid);
        assert!(sandbox_validate("bank_gh", Some("100000"), None).valid);

        // Different numbers spread over several names.
        let names: std::collections::HashSet<String> = (0..50)
            .filter_map(|i| {
                sandbox_validate("mtn_gh", Some(&format!("+2332412345{i:02}")), None).account_name
            })
            .collect();
        assert!(names.len() > 5);
    }

    #[test]
    fn sandbox_validation_unknown_and_missing() {
        let r = sandbox_validate("nope", Some("+233241234567"), None);
        assert_eq!(r.reason.as_deref(), Some("unknown_method"));
        assert!(!r.valid);
        let r = sandbox_validate("mtn_gh", None, None);
        assert_eq!(r.reason.as_deref(), Some("missing_account"));
        let r = sandbox_validate("mtn_gh", Some("  "), Some(""));
        assert_eq!(r.reason.as_deref(), Some("missing_account"));
        // An address does not stand in for a mobile money number.
        let r = sandbox_validate("mtn_gh", None, Some("0x742d35Cc6634C0532925a3b844Bc454e4438f44e"));
        assert_eq!(r.reason.as_deref(), Some("missing_account"));
    }

    #[test]
    fn sandbox_validation_crypto_addresses() {
        let evm = "0x742d35Cc6634C0532925a3b844Bc454e4438f44e";
        let r = sandbox_validate("usdc_base", None, Some(evm));
        assert!(r.valid);
        assert!(r.reason.is_none());
        assert!(sandbox_validate("usdt_tron", None, Some("TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7")).valid);
        // accountNumber is accepted as the address when address is absent.
        assert!(sandbox_validate("usdc_ethereum", Some(evm), None).valid);
        for bad in ["short", "0x742d35Cc6634C0532925a3b8-4Bc454e4438f44e", &"a".repeat(101)] {
            let r = sandbox_validate("usdc_solana", None, Some(bad));
            assert_eq!(r.reason.as_deref(), Some("invalid_address"), "{bad}");
            assert!(!r.valid);
        }
        assert!(sandbox_validate("usdc_solana", None, Some(&"a".repeat(100))).valid);
        assert!(sandbox_validate("usdc_solana", None, Some(&"a".repeat(20))).valid);
        assert!(!sandbox_validate("usdc_solana", None, Some(&"a".repeat(19))).valid);
    }

    #[test]
    fn validation_result_renders_camel_case() {
        let v = serde_json::to_value(sandbox_validate("mtn_gh", Some("+233241000000"), None).render(RAIL))
            .unwrap();
        assert_eq!(v["valid"], false);
        assert_eq!(v["checked"], "rail");
        assert_eq!(v["reason"], "account_not_found");
        assert!(v["accountName"].is_null());
        let v = serde_json::to_value(sandbox_validate("mtn_gh", Some("+233241234567"), None).render(RAIL))
            .unwrap();
        assert!(v["accountName"].is_string());
    }

    const RAIL: sika_api::validation::ValidationDepth = sika_api::validation::ValidationDepth::Rail;

    /// Live checks the format only: the sandbox's suffixes mean nothing there.
    #[test]
    fn live_validation_checks_the_format_only() {
        let catalog = shipped();
        for suffix in ["000000", "000001", "000002"] {
            let result = live_validate(catalog, "mtn_gh", Some(&format!("+233241{suffix}")), None);
            assert!(result.valid && result.account_name.is_none(), "{suffix}");
        }
        assert_eq!(
            live_validate(catalog, "mtn_gh", Some("hello"), None).reason.unwrap(),
            "invalid_account_number"
        );
        assert_eq!(
            live_validate(catalog, "usdc_base", None, Some("nope")).reason.unwrap(),
            "invalid_address"
        );
        assert_eq!(live_validate(catalog, "nope", Some("1"), None).reason.unwrap(), "unknown_method");
    }

    /// The document lists the reasons as `ValidationReason`: every reason
    /// the sandbox gives must be one of them.
    #[test]
    fn every_reason_is_a_documented_one() {
        use sika_api::validation::ValidationReason;
        let refused = [
            sandbox_validate("nope", Some("+233241234567"), None),
            sandbox_validate("mtn_gh", None, None),
            sandbox_validate("usdc_solana", None, Some("short")),
        ];
        let by_rule =
            crate::domain::simulator::VALIDATION_SCENARIOS.iter().filter(|(suffix, _)| *suffix != "default");
        let reasons = refused.iter().map(|r| r.reason.clone().unwrap()).chain(by_rule.map(|(digits, _)| {
            let number = format!("0241{}{digits}", crate::domain::simulator::VALIDATION_SUFFIX_PREFIX);
            sandbox_validate("mtn_gh", Some(&number), None).reason.unwrap()
        }));
        for reason in reasons {
            let documented = serde_json::from_value::<ValidationReason>(reason.clone().into());
            assert!(documented.is_ok(), "{reason} is not a ValidationReason");
        }
    }

    #[test]
    fn parse_rejects_inconsistent_documents() {
        let mut doc: serde_json::Value = serde_json::from_str(SHIPPED_JSON).unwrap();
        doc["countries"][0]["methods"][0]["code"] = "mtn_ng".into();
        assert!(Catalog::parse(&doc.to_string()).is_err());

        let mut doc: serde_json::Value = serde_json::from_str(SHIPPED_JSON).unwrap();
        doc["countries"][0]["methods"][0]["fee"]["fixed"] = "abc".into();
        assert!(Catalog::parse(&doc.to_string()).is_err());

        let mut doc: serde_json::Value = serde_json::from_str(SHIPPED_JSON).unwrap();
        doc["countries"][0]["methods"][0]["limits"]["min"] = 1_000_000.into();
        assert!(Catalog::parse(&doc.to_string()).is_err());

        let mut doc: serde_json::Value = serde_json::from_str(SHIPPED_JSON).unwrap();
        doc["countries"][0]["methods"][0]["extra"] = true.into();
        assert!(Catalog::parse(&doc.to_string()).is_err());

        for (field, value) in [("type", "cash"), ("status", "closed")] {
            let mut doc: serde_json::Value = serde_json::from_str(SHIPPED_JSON).unwrap();
            doc["countries"][0]["methods"][0][field] = value.into();
            assert!(Catalog::parse(&doc.to_string()).is_err(), "{field} {value}");
        }
    }
}
