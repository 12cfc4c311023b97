//! Exact sums of the decimal strings the API uses for money. The console
//! only needs them when a node sends accounts without per-currency totals;
//! it never uses floats for money.

/// Scale beyond any currency the node supports; longer fractions are refused
/// rather than rounded.
const SCALE_MAX: usize = 18;

/// `a + b` for decimal strings like `"-12.50"`; `None` when either is not a
/// plain decimal or the sum would overflow.
pub fn add(a: &str, b: &str) -> Option<String> {
    let (a_units, a_scale) = parse(a)?;
    let (b_units, b_scale) = parse(b)?;
    let scale = a_scale.max(b_scale);
    let sum = rescale(a_units, a_scale, scale)?.checked_add(rescale(b_units, b_scale, scale)?)?;
    Some(format(sum, scale))
}

fn parse(text: &str) -> Option<(i128, usize)> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) || fraction.len() > SCALE_MAX {
        return None;
    }
    let units: i128 = format!("{whole}{fraction}").parse().ok()?;
    Some((if negative { -units } else { units }, fraction.len()))
}

fn rescale(units: i128, from: usize, to: usize) -> Option<i128> {
    units.checked_mul(10i128.checked_pow(u32::try_from(to - from).ok()?)?)
}

fn format(units: i128, scale: usize) -> String {
    let sign = if units < 0 { "-" } else { "" };
    let digits = format!("{:0>width$}", units.unsigned_abs(), width = scale + 1);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let (whole, fraction) = digits.split_at(digits.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

#[cfg(test)]
mod tests {
    use super::add;

    #[test]
    fn sums_are_exact_at_the_longer_scale() {
        assert_eq!(add("0.10", "0.20").as_deref(), Some("0.30"));
        assert_eq!(add("1", "0.005").as_deref(), Some("1.005"));
        assert_eq!(add("-2.50", "1.25").as_deref(), Some("-1.25"));
        assert_eq!(add("0.00", "-0.01").as_deref(), Some("-0.01"));
        assert_eq!(add("1000000", "0").as_deref(), Some("1000000"));
    }

    #[test]
    fn non_decimals_are_refused() {
        assert_eq!(add("1e3", "1"), None);
        assert_eq!(add("", "1"), None);
        assert_eq!(add("1.2.3", "1"), None);
        assert_eq!(add(".5", "1"), None);
    }
}
