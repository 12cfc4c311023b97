//! QR codes of deposit addresses, drawn as SVG on the server: the payer's
//! page loads one as an image from its own origin, so nothing outside the
//! page's Content-Security-Policy runs or loads.

use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};

/// The smallest side of a QR code, in pixels (the page shows it at 184).
const QR_SIDE_PX_MIN: u32 = 184;

/// `text` as a QR code in SVG; `None` when it is too long for one.
pub(crate) fn qr_svg(text: &str) -> Option<String> {
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M).ok()?;
    Some(
        code.render::<svg::Color<'_>>()
            .min_dimensions(QR_SIDE_PX_MIN, QR_SIDE_PX_MIN)
            .dark_color(svg::Color("#000000"))
            .light_color(svg::Color("#ffffff"))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_draws_as_an_svg_qr_code() {
        let svg = qr_svg("TJRabPrwbZy45sbavfcjinPJC18kjpRTv8").unwrap();
        assert!(svg.contains("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert!(svg.contains("fill=\"#000000\""));
        assert!(qr_svg(&"x".repeat(10_000)).is_none(), "too long for a QR code");
    }
}
