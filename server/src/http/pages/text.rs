//! Amounts as people read them on a page: `GHS 1,250.00`.

use crate::domain::render::amount;

/// Inserts thousands separators into a decimal amount: `1250.00` reads
/// `1,250.00`. The fraction is left as it is.
pub(crate) fn group_thousands(plain: &str) -> String {
    let (sign, unsigned) = plain.strip_prefix('-').map_or(("", plain), |rest| ("-", rest));
    let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
    let mut out = String::from(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// An amount in minor units, grouped: `1,250.00` (XOF `2,500`).
pub(crate) fn grouped(currency: &str, minor: i128) -> String {
    group_thousands(&amount(currency, minor))
}

/// An amount as the payer reads it: `GHS 1,250.00` (XOF `XOF 2,500`).
pub(crate) fn money(currency: &str, minor: i128) -> String {
    format!("{currency} {}", grouped(currency, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_with_thousands_separators() {
        assert_eq!(group_thousands("0.50"), "0.50");
        assert_eq!(group_thousands("999.99"), "999.99");
        assert_eq!(group_thousands("1250.00"), "1,250.00");
        assert_eq!(group_thousands("1234567.891234"), "1,234,567.891234");
        assert_eq!(group_thousands("-100000"), "-100,000");
        assert_eq!(money("GHS", 125_000), "GHS 1,250.00");
        assert_eq!(money("XOF", 2_500), "XOF 2,500");
        assert_eq!(money("USDC", 1_250_500_000), "USDC 1,250.500000");
    }
}
