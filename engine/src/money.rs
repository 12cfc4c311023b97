//! Money: currencies with fixed scales, amounts as integer minor units.
//!
//! Amounts enter as decimal strings (or the text of a JSON number) and leave
//! as strings with exactly the currency's number of fraction digits. Inside
//! the engine every amount is an `i128` count of minor units; no float ever
//! touches money.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

/// The largest amount the engine accepts in one operation, in minor units.
/// Large enough for any real payment, small enough that summing a journal of
/// billions of them cannot overflow an `i128`.
pub const AMOUNT_MINOR_MAX: i128 = 1_000_000_000_000_000_000; // 10^18

/// A currency the node knows, with its fixed number of fraction digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    pub code: &'static str,
    pub scale: u32,
    pub name: &'static str,
}

/// Every currency the node supports. Adding one is adding a row.
pub const CURRENCIES: &[Currency] = &[
    Currency { code: "GHS", scale: 2, name: "Ghanaian cedi" },
    Currency { code: "NGN", scale: 2, name: "Nigerian naira" },
    Currency { code: "KES", scale: 2, name: "Kenyan shilling" },
    Currency { code: "UGX", scale: 2, name: "Ugandan shilling" },
    Currency { code: "TZS", scale: 2, name: "Tanzanian shilling" },
    Currency { code: "RWF", scale: 2, name: "Rwandan franc" },
    Currency { code: "ZAR", scale: 2, name: "South African rand" },
    Currency { code: "EGP", scale: 2, name: "Egyptian pound" },
    Currency { code: "XOF", scale: 0, name: "West African CFA franc" },
    Currency { code: "XAF", scale: 0, name: "Central African CFA franc" },
    Currency::USD,
    Currency { code: "EUR", scale: 2, name: "Euro" },
    Currency { code: "GBP", scale: 2, name: "Pound sterling" },
    Currency { code: "USDC", scale: 6, name: "USD Coin" },
    Currency { code: "USDT", scale: 6, name: "Tether USD" },
];

/// Why an amount or currency was refused. Each case is distinct so callers
/// can tell the user exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    #[error("unknown currency '{0}'")]
    UnknownCurrency(String),
    #[error("'{input}' is not a decimal number")]
    NotANumber { input: String },
    #[error("amount has {digits} fraction digits but {currency} allows at most {scale}")]
    TooManyDigits { currency: &'static str, scale: u32, digits: u32 },
    #[error("amount must not be negative")]
    Negative,
    #[error("amount must be greater than zero")]
    Zero,
    #[error("amount exceeds the maximum the node accepts")]
    Overflow,
}

impl Currency {
    /// The currency spend caps are kept in (in cents).
    pub const USD: Currency = Currency { code: "USD", scale: 2, name: "US dollar" };

    /// Looks a currency up by its ISO code (upper case, exact).
    pub fn find(code: &str) -> Result<Currency, MoneyError> {
        CURRENCIES
            .iter()
            .find(|c| c.code == code)
            .copied()
            .ok_or_else(|| MoneyError::UnknownCurrency(code.to_string()))
    }

    /// Whether this is a stablecoin rather than a fiat currency.
    pub fn is_crypto(&self) -> bool {
        matches!(self.code, "USDC" | "USDT")
    }

    /// Parses `input` as an amount of this currency in minor units.
    /// Zero is refused unless `allow_zero`. More fraction digits written
    /// than the currency has are refused even when they are zeros
    /// (`"1.000"` GHS): the contract refuses them, and a client that
    /// writes three digits for a two-digit currency has the wrong
    /// currency or the wrong amount in mind.
    pub fn parse(&self, input: &str, allow_zero: bool) -> Result<i128, MoneyError> {
        let too_many = |digits| MoneyError::TooManyDigits { currency: self.code, scale: self.scale, digits };
        let decimal = parse_decimal(input).map_err(|e| match e {
            MoneyError::TooManyDigits { digits, .. } => too_many(digits),
            other => other,
        })?;
        // The scale as written: `parse_decimal` keeps trailing zeros.
        if decimal.scale() > self.scale {
            return Err(too_many(decimal.scale()));
        }
        self.from_decimal(decimal, allow_zero)
    }

    /// Converts an exact decimal to minor units, refusing what does not fit.
    pub fn from_decimal(&self, decimal: Decimal, allow_zero: bool) -> Result<i128, MoneyError> {
        if decimal.is_sign_negative() && !decimal.is_zero() {
            return Err(MoneyError::Negative);
        }
        if decimal.is_zero() && !allow_zero {
            return Err(MoneyError::Zero);
        }
        let normalized = decimal.normalize();
        if normalized.scale() > self.scale {
            return Err(MoneyError::TooManyDigits {
                currency: self.code,
                scale: self.scale,
                digits: normalized.scale(),
            });
        }
        // mantissa * 10^(scale - normalized.scale) is exact: no rounding.
        let factor = self
            .scale
            .checked_sub(normalized.scale())
            .and_then(|shift| 10i128.checked_pow(shift))
            .ok_or(MoneyError::Overflow)?;
        let minor = normalized.mantissa().checked_mul(factor).ok_or(MoneyError::Overflow)?;
        if minor > AMOUNT_MINOR_MAX {
            return Err(MoneyError::Overflow);
        }
        Ok(minor)
    }

    /// Formats minor units with exactly this currency's fraction digits.
    pub fn format(&self, minor: i128) -> String {
        format_minor(minor, self.scale)
    }

    /// The amount as an exact decimal. A decimal holds 96 bits, so an
    /// amount beyond that (never one the node accepts) is an overflow
    /// rather than the panic `Decimal::from_i128_with_scale` would raise.
    pub fn to_decimal(&self, minor: i128) -> Result<Decimal, MoneyError> {
        Decimal::try_from_i128_with_scale(minor, self.scale).map_err(|_| MoneyError::Overflow)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

/// Formats `minor` units at `scale` fraction digits: `format_minor(1050, 2) == "10.50"`.
pub fn format_minor(minor: i128, scale: u32) -> String {
    let negative = minor < 0;
    let digits = minor.unsigned_abs().to_string();
    let scale = scale as usize;
    let mut out = String::with_capacity(digits.len().saturating_add(3));
    if negative {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(&digits);
        return out;
    }
    if digits.len() <= scale {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', scale.saturating_sub(digits.len())));
        out.push_str(&digits);
    } else {
        let (whole, fraction) = digits.split_at(digits.len().saturating_sub(scale));
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// Parses a plain decimal (`"10.50"`, `"7"`) or scientific (`"1.5e2"`) string.
/// Rejects empty strings, spaces, signs other than a leading `-`, `NaN` and
/// infinities.
fn parse_decimal(input: &str) -> Result<Decimal, MoneyError> {
    let not_a_number = || MoneyError::NotANumber { input: truncate(input) };
    let trimmed = input;
    if trimmed.is_empty() || trimmed.len() > 64 {
        return Err(not_a_number());
    }
    let body = trimmed.strip_prefix('-').unwrap_or(trimmed);
    let plain = body.chars().all(|c| c.is_ascii_digit() || c == '.');
    let scientific = body.contains(['e', 'E']);
    let well_formed = body.chars().next().is_some_and(|c| c.is_ascii_digit())
        && body.chars().last().is_some_and(|c| c.is_ascii_digit())
        && body.matches('.').count() <= 1;
    if !well_formed {
        return Err(not_a_number());
    }
    if plain {
        let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
        // Count digits first so a 40-digit integer is an overflow, not a parse error.
        if whole.trim_start_matches('0').len() > 27 {
            return Err(MoneyError::Overflow);
        }
        // Written digits count, trailing zeros too (`Currency::parse`
        // refuses more than the currency has); a decimal holds at most 28,
        // so more are too many digits rather than an overflow (the fuzzer
        // found "10.5" and 30 zeros refused as one).
        if fraction.len() > 28 {
            let digits = u32::try_from(fraction.len()).unwrap_or(u32::MAX);
            return Err(MoneyError::TooManyDigits { currency: "", scale: 0, digits });
        }
        let sign = if trimmed.starts_with('-') { "-" } else { "" };
        let exact =
            if fraction.is_empty() { format!("{sign}{whole}") } else { format!("{sign}{whole}.{fraction}") };
        return Decimal::from_str_exact(&exact).map_err(|_| MoneyError::Overflow);
    }
    if scientific {
        let ok_chars = body.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
        if !ok_chars {
            return Err(not_a_number());
        }
        // Shape first: digits[.digits](e|E)[+|-]digits.
        let (mantissa, exponent) = body.split_once(['e', 'E']).ok_or_else(not_a_number)?;
        let exponent_digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        let shaped = !mantissa.is_empty()
            && mantissa.chars().all(|c| c.is_ascii_digit() || c == '.')
            && !exponent_digits.is_empty()
            && exponent_digits.chars().all(|c| c.is_ascii_digit());
        if !shaped {
            return Err(not_a_number());
        }
        // A well-formed number that does not fit is too large, or too precise.
        return Decimal::from_scientific(trimmed).map_err(|_| {
            if exponent.starts_with('-') {
                MoneyError::TooManyDigits { currency: "", scale: 0, digits: 29 }
            } else {
                MoneyError::Overflow
            }
        });
    }
    Err(not_a_number())
}

fn truncate(input: &str) -> String {
    input.chars().take(40).collect()
}

/// An amount of a known currency, in its minor units. The one way an
/// amount becomes text is [`Money::amount`] (its `Display`): exactly the
/// currency's fraction digits, no grouping, no code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    pub minor: i128,
    pub currency: Currency,
}

impl Money {
    pub fn new(minor: i128, currency: Currency) -> Money {
        Money { minor, currency }
    }

    /// `minor` units of the currency `code` names. A code the node does
    /// not know is an error, never a guessed scale.
    pub fn of(code: &str, minor: i128) -> Result<Money, MoneyError> {
        Ok(Money { minor, currency: Currency::find(code)? })
    }

    /// The amount as a decimal string: `Money::of("USD", 1050)` is `10.50`.
    pub fn amount(&self) -> String {
        format_minor(self.minor, self.currency.scale)
    }

    pub fn code(&self) -> &'static str {
        self.currency.code
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.amount())
    }
}

impl FromStr for Currency {
    type Err = MoneyError;
    fn from_str(code: &str) -> Result<Self, Self::Err> {
        Currency::find(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd() -> Currency {
        Currency::find("USD").unwrap()
    }

    #[test]
    fn money_formats_at_its_currencys_digits_and_refuses_an_unknown_code() {
        assert_eq!(Money::of("USD", 1050).unwrap().to_string(), "10.50");
        assert_eq!(Money::of("XOF", 2500).unwrap().amount(), "2500");
        assert_eq!(Money::of("USDC", 1).unwrap().amount(), "0.000001");
        assert_eq!(Money::of("USD", -5).unwrap().amount(), "-0.05");
        assert!(Money::of("ZZZ", 1).is_err());
        assert_eq!(Money::new(7, usd()).code(), "USD");
    }

    #[test]
    fn scales_follow_the_table() {
        for (code, scale) in [("GHS", 2), ("XOF", 0), ("XAF", 0), ("USDC", 6), ("USDT", 6), ("GBP", 2)] {
            assert_eq!(Currency::find(code).unwrap().scale, scale, "{code}");
        }
    }

    #[test]
    fn parses_plain_decimals() {
        assert_eq!(usd().parse("10.50", false), Ok(1050));
        assert_eq!(usd().parse("10.5", false), Ok(1050));
        assert_eq!(usd().parse("7", false), Ok(700));
        assert_eq!(usd().parse("0.01", false), Ok(1));
        assert_eq!(
            usd().parse("10.500", false),
            Err(MoneyError::TooManyDigits { currency: "USD", scale: 2, digits: 3 }),
            "issue 29.4: digits written past the currency's are refused, zeros too"
        );
        assert_eq!(usd().parse("1.000", false), usd().parse("10.500", false));
        assert_eq!(usd().parse("1.000e0", false), usd().parse("10.500", false), "written in a JSON number");
        assert_eq!(usd().parse("1.000e1", false), Ok(1000), "10.00: two digits after the exponent");
        assert!(Currency::find("XOF").unwrap().parse("1500.0", false).is_err());
        assert_eq!(Currency::find("XOF").unwrap().parse("1500", false), Ok(1500));
        assert_eq!(Currency::find("USDC").unwrap().parse("1.000001", false), Ok(1_000_001));
    }

    #[test]
    fn parses_scientific_json_numbers() {
        assert_eq!(usd().parse("1.5e2", false), Ok(15000));
        assert_eq!(usd().parse("1E1", false), Ok(1000));
    }

    #[test]
    fn too_many_digits_is_its_own_error() {
        assert_eq!(
            usd().parse("10.505", false),
            Err(MoneyError::TooManyDigits { currency: "USD", scale: 2, digits: 3 })
        );
        assert!(matches!(
            Currency::find("XOF").unwrap().parse("1.5", false),
            Err(MoneyError::TooManyDigits { scale: 0, .. })
        ));
    }

    #[test]
    fn negative_zero_and_overflow_are_distinct() {
        assert_eq!(usd().parse("-1.00", false), Err(MoneyError::Negative));
        assert_eq!(usd().parse("0", false), Err(MoneyError::Zero));
        assert_eq!(usd().parse("0.00", false), Err(MoneyError::Zero));
        assert_eq!(usd().parse("0", true), Ok(0));
        assert_eq!(usd().parse("100000000000000000000", false), Err(MoneyError::Overflow));
        assert_eq!(usd().parse("99999999999999999999999999999999999999", false), Err(MoneyError::Overflow));
        assert_eq!(usd().parse("1e40", false), Err(MoneyError::Overflow));
    }

    /// Found by `tests/fuzz.rs`: trailing zeros past a decimal's 28 digits
    /// were refused as an overflow; they are too many digits.
    #[test]
    fn trailing_zeros_past_a_decimals_digits_are_too_many_digits() {
        assert_eq!(
            usd().parse(&format!("10.5{}", "0".repeat(30)), false),
            Err(MoneyError::TooManyDigits { currency: "USD", scale: 2, digits: 31 })
        );
        assert!(matches!(
            usd().parse(&format!("-0.{}", "0".repeat(40)), true),
            Err(MoneyError::TooManyDigits { currency: "USD", digits: 40, .. })
        ));
        assert!(matches!(
            usd().parse(&format!("0.{}1", "0".repeat(30)), false),
            Err(MoneyError::TooManyDigits { currency: "USD", digits: 31, .. })
        ));
    }

    #[test]
    fn garbage_is_not_a_number() {
        for input in ["", " 1", "1 ", "abc", "1.2.3", ".5", "5.", "NaN", "inf", "+1", "1,00", "0x10", "--1"] {
            assert!(
                matches!(usd().parse(input, false), Err(MoneyError::NotANumber { .. })),
                "{input:?} -> {:?}",
                usd().parse(input, false)
            );
        }
    }

    #[test]
    fn unknown_currency() {
        assert_eq!(Currency::find("XYZ"), Err(MoneyError::UnknownCurrency("XYZ".into())));
        assert!(Currency::find("usd").is_err(), "codes are upper case");
    }

    #[test]
    fn formats_with_exact_digits() {
        assert_eq!(usd().format(1050), "10.50");
        assert_eq!(usd().format(5), "0.05");
        assert_eq!(usd().format(0), "0.00");
        assert_eq!(usd().format(-250), "-2.50");
        assert_eq!(Currency::find("XOF").unwrap().format(1500), "1500");
        assert_eq!(Currency::find("USDC").unwrap().format(1), "0.000001");
    }

    #[test]
    fn to_decimal_refuses_what_a_decimal_cannot_hold() {
        assert_eq!(usd().to_decimal(1050), Ok("10.50".parse().unwrap()));
        assert_eq!(usd().to_decimal(-AMOUNT_MINOR_MAX), Ok("-10000000000000000.00".parse().unwrap()));
        assert_eq!(usd().to_decimal(i128::MAX), Err(MoneyError::Overflow));
        assert_eq!(usd().to_decimal(1 << 96), Err(MoneyError::Overflow));
    }

    #[test]
    fn parse_then_format_round_trips() {
        for s in ["0.01", "10.50", "123456789.99", "1000000.00"] {
            assert_eq!(usd().format(usd().parse(s, false).unwrap()), s);
        }
    }
}
