//! Exchange rates: a source of mid rates behind a trait, and the spread
//! that turns a mid rate into the all-in rate a quote locks.
//!
//! Rounding rule: the all-in rate is `mid * (1 - spread)`, rounded down to
//! `RATE_SCALE` decimal places. A quote for a fixed `from` amount receives
//! `floor(from * rate)` in the `to` currency; a quote for a fixed `to`
//! amount costs `ceil(to / rate)` in the `from` currency. Every rounding
//! favours the node by less than one minor unit, so the FX desk can never
//! be made to pay out more than the rate allows.

use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::EngineError;

/// Decimal places of an all-in rate.
pub const RATE_SCALE: u32 = 8;

pub trait RateSource: Send + Sync + 'static {
    /// Units of `to` per one unit of `from`, before the spread; `None` when
    /// the pair is not quoted.
    fn mid_rate(&self, from: &str, to: &str) -> Option<Decimal>;
}

/// A configured table of mid rates, each as units of the currency per one US dollar.
#[derive(Debug, Clone)]
pub struct RateTable {
    per_usd: Vec<(&'static str, Decimal)>,
}

impl Default for RateTable {
    /// The sandbox's fixed reference rates.
    fn default() -> Self {
        let table = [
            ("USD", "1"),
            ("USDC", "1"),
            ("USDT", "1"),
            ("EUR", "0.92"),
            ("GBP", "0.79"),
            ("GHS", "15.50"),
            ("NGN", "1550"),
            ("KES", "129.50"),
            ("UGX", "3750"),
            ("TZS", "2650"),
            ("RWF", "1400"),
            ("ZAR", "18.20"),
            ("EGP", "48.50"),
            ("XOF", "605"),
            ("XAF", "605"),
        ];
        RateTable { per_usd: table.iter().map(|(c, r)| (*c, r.parse().expect("valid table rate"))).collect() }
    }
}

impl RateSource for RateTable {
    fn mid_rate(&self, from: &str, to: &str) -> Option<Decimal> {
        let find = |code: &str| self.per_usd.iter().find(|(c, _)| *c == code).map(|(_, r)| *r);
        let (from_per_usd, to_per_usd) = (find(from)?, find(to)?);
        to_per_usd.checked_div(from_per_usd)
    }
}

/// Turns mid rates into all-in rates.
pub struct Pricing {
    pub source: Box<dyn RateSource>,
    /// The node's margin in basis points, taken off the mid rate.
    pub spread_bps: u32,
}

impl Pricing {
    pub fn all_in_rate(&self, from: &str, to: &str) -> Result<Decimal, EngineError> {
        let no_rate = || EngineError::NoRate { from: from.to_string(), to: to.to_string() };
        if from == to {
            return Err(no_rate());
        }
        let mid = self.source.mid_rate(from, to).ok_or_else(no_rate)?;
        let keep =
            Decimal::ONE.checked_sub(Decimal::new(i64::from(self.spread_bps), 4)).ok_or_else(no_rate)?;
        let rate = mid.checked_mul(keep).ok_or_else(no_rate)?;
        let rate = rate.round_dp_with_strategy(RATE_SCALE, RoundingStrategy::ToZero);
        // A spread of 100% or more (or a source's negative rate) leaves no
        // rate to quote, rather than a negative one.
        if rate <= Decimal::ZERO { Err(no_rate()) } else { Ok(rate) }
    }
}

/// `floor(amount * rate)`, amounts in major units as exact decimals.
pub fn convert_down(amount: Decimal, rate: Decimal, scale: u32) -> Option<Decimal> {
    Some(amount.checked_mul(rate)?.round_dp_with_strategy(scale, RoundingStrategy::ToZero))
}

/// `ceil(amount / rate)`.
pub fn convert_up(amount: Decimal, rate: Decimal, scale: u32) -> Option<Decimal> {
    Some(amount.checked_div(rate)?.round_dp_with_strategy(scale, RoundingStrategy::AwayFromZero))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_taken_off_the_mid_rate() {
        let pricing = Pricing { source: Box::new(RateTable::default()), spread_bps: 100 };
        assert_eq!(pricing.all_in_rate("USD", "GHS").unwrap(), "15.345".parse::<Decimal>().unwrap());
        assert!(pricing.all_in_rate("USD", "USD").is_err());
        assert!(pricing.all_in_rate("USD", "XYZ").is_err());
        let all = Pricing { source: Box::new(RateTable::default()), spread_bps: 10_000 };
        assert!(all.all_in_rate("USD", "GHS").is_err(), "a 100% spread leaves no rate");
        let more = Pricing { source: Box::new(RateTable::default()), spread_bps: u32::MAX };
        assert!(more.all_in_rate("USD", "GHS").is_err(), "nor does a larger one");
    }

    #[test]
    fn rounding_favours_the_node() {
        let rate: Decimal = "0.33333333".parse().unwrap();
        assert_eq!(convert_down(Decimal::ONE, rate, 2).unwrap(), "0.33".parse::<Decimal>().unwrap());
        assert_eq!(convert_up("0.33".parse().unwrap(), rate, 2).unwrap(), "1.00".parse::<Decimal>().unwrap());
    }
}
