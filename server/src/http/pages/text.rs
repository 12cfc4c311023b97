//! Amounts as people read them on a page: `GHS 1,250.00`.

#[cfg(test)]
use crate::domain::render::group_thousands;
pub(crate) use crate::domain::render::{grouped, money};

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
