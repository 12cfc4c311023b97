//! A payer's mobile-money number, as the method's country writes it.
//!
//! Payers type the number they know: `024 123 4567` in Ghana, `0712345678`
//! in Kenya, `77 123 45 67` in Senegal. The collection needs the
//! international form (`+233241234567`), so the number is normalised for
//! the country of the network the payer chose, and a number of another
//! country, or of the wrong length, is refused with an example of that
//! country's.

use crate::domain::catalog::{Catalog, dialling_code};

/// Countries whose local numbers carry no trunk `0` that the international
/// form drops: Côte d'Ivoire kept the leading `0` in its ten-digit numbers
/// (`+225 07 01 23 45 67`), and Senegal's numbers have none (`77 123 45 67`).
const NO_TRUNK_PREFIX: [&str; 2] = ["CI", "SN"];

/// What a number of one method's country looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PhoneFormat {
    pub country_name: String,
    dial: &'static str,
    trunk_zero: bool,
    /// An example in international form: `+233241234567`.
    pub international: String,
    /// The same number as people in the country dial it: `0241234567`.
    pub local: String,
}

impl PhoneFormat {
    /// The format of the mobile-money method `code`'s country, with the
    /// method's own example number (its `accountNumber` placeholder); `None`
    /// for a method of no known country.
    pub(crate) fn of_method(catalog: &Catalog, code: &str) -> Option<PhoneFormat> {
        let country = catalog.country_of_method(code)?;
        let dial = dialling_code(&country.code)?;
        let example = country.method(code)?.field("accountNumber")?.placeholder.clone();
        let national = example.strip_prefix('+')?.strip_prefix(dial)?.to_string();
        let trunk_zero = !NO_TRUNK_PREFIX.contains(&country.code.as_str());
        let local = if trunk_zero { format!("0{national}") } else { national };
        Some(PhoneFormat {
            country_name: country.name.clone(),
            dial,
            trunk_zero,
            international: example,
            local,
        })
    }

    /// How many digits a full international number has (without the `+`).
    fn digits_len(&self) -> usize {
        self.international.len() - 1
    }

    /// `typed` in international form, or `None` when it is not a number of
    /// this country. Spaces, dashes, dots and brackets are ignored; `00`
    /// reads as `+`; a local number gets the country code (less its trunk
    /// `0` where the country dials one).
    pub(crate) fn normalise(&self, typed: &str) -> Option<String> {
        let compact: String =
            typed.trim().chars().filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')')).collect();
        if !compact.trim_start_matches('+').chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let digits = if let Some(international) = compact.strip_prefix('+') {
            international.to_string()
        } else if let Some(international) = compact.strip_prefix("00") {
            international.to_string()
        } else if compact.starts_with(self.dial) && compact.len() == self.digits_len() {
            compact
        } else if let Some(national) = compact.strip_prefix('0').filter(|_| self.trunk_zero) {
            format!("{}{national}", self.dial)
        } else {
            format!("{}{compact}", self.dial)
        };
        let fits = digits.len() == self.digits_len()
            && digits.starts_with(self.dial)
            && digits.chars().all(|c| c.is_ascii_digit());
        fits.then(|| format!("+{digits}"))
    }

    /// Why a number was refused, for the API's `details.reason`.
    pub(crate) fn problem(&self) -> String {
        format!("enter a {} wallet number, like {} or {}", self.country_name, self.local, self.international)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::shipped;

    fn format(code: &str) -> PhoneFormat {
        PhoneFormat::of_method(shipped(), code).unwrap()
    }

    #[test]
    fn each_country_has_its_own_example() {
        let ghana = format("mtn_gh");
        assert_eq!((ghana.local.as_str(), ghana.international.as_str()), ("0241234567", "+233241234567"));
        let kenya = format("mpesa_ke");
        assert_eq!((kenya.local.as_str(), kenya.international.as_str()), ("0712345678", "+254712345678"));
        assert_eq!(format("orange_ci").local, "0701234567", "Côte d'Ivoire keeps its leading 0");
        assert_eq!(format("orange_sn").local, "771234567", "Senegal dials no trunk 0");
        assert_eq!(format("opay_ng").country_name, "Nigeria");
    }

    #[test]
    fn local_and_international_forms_normalise() {
        let kenya = format("mpesa_ke");
        for typed in
            ["0712345678", "0712 345 678", "+254712345678", "254712345678", "00254712345678", "712345678"]
        {
            assert_eq!(kenya.normalise(typed).as_deref(), Some("+254712345678"), "{typed}");
        }
        let ghana = format("mtn_gh");
        assert_eq!(ghana.normalise("024-123-4567").as_deref(), Some("+233241234567"));
        assert_eq!(format("orange_ci").normalise("07 01 23 45 67").as_deref(), Some("+2250701234567"));
        assert_eq!(format("wave_sn").normalise("77 123 45 67").as_deref(), Some("+221771234567"));
    }

    #[test]
    fn another_countrys_or_a_malformed_number_is_refused() {
        let kenya = format("mpesa_ke");
        for typed in ["+233241234567", "071234567", "07123456789", "0712a45678", "", "+", "++254712345678"] {
            assert_eq!(kenya.normalise(typed), None, "{typed}");
        }
        assert_eq!(kenya.problem(), "enter a Kenya wallet number, like 0712345678 or +254712345678");
    }
}
