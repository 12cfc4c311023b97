//! Rates: what converting between two currencies costs now.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The all-in rate a quote would lock now, and what it is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    #[schema(example = "USD")]
    pub origin: String,
    #[schema(example = "GHS")]
    pub destination: String,
    /// Units of `destination` per unit of `origin`, spread included.
    #[schema(example = "15.345")]
    pub rate: String,
    /// The market rate before the spread.
    #[schema(example = "15.5")]
    pub mid_rate: String,
    /// The spread taken from the mid rate, in basis points.
    pub spread_bps: u32,
    /// How long a quote at this rate stays executable.
    pub quote_ttl_seconds: u64,
    /// When the rate was read (RFC 3339, UTC, milliseconds).
    pub timestamp: String,
}

/// `{rate}`: what reading a rate answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RateEnvelope {
    pub rate: Rate,
}
