//! Pieces every resource shares: money, timelines, metadata, list pages.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// An amount and its currency, as responses write them: the amount is a
/// decimal string with exactly the currency's fraction digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Money {
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "10.50")]
    pub amount: String,
    #[schema(example = "GHS")]
    pub currency: String,
}

/// One step of a resource's audit trail: state changes, provider attempts,
/// ledger movements, fees and webhook deliveries, in time order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEntry {
    /// When it happened (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// What kind of step: `state`, `ledger`, `fee`, `provider`, `webhook`, …
    pub kind: String,
    pub title: String,
    pub detail: String,
}

/// The merchant's own key-value data, stored and returned as sent.
pub type Metadata = serde_json::Map<String, Value>;

/// One page of a list, newest first. Pass `nextCursor` back as `cursor`
/// for the next page; it is null on the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPage<T> {
    pub data: Vec<T>,
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

/// An amount as a request sends it: a decimal string or a JSON number,
/// kept as its exact text (serde_json's `arbitrary_precision`), so that the
/// node, not a float parser, decides what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmountInput(String);

impl utoipa::PartialSchema for AmountInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Number]))
            .description(Some("A decimal amount: a string such as \"10.50\" (preferred) or a JSON number."))
            .examples(["10.50"])
            .into()
    }
}

impl ToSchema for AmountInput {}

impl AmountInput {
    /// An amount the node itself formatted.
    pub fn from_text(text: String) -> Self {
        AmountInput(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for AmountInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) => Ok(AmountInput(s)),
            Value::Number(n) => Ok(AmountInput(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a decimal string or number, found {}",
                kind_of(&other)
            ))),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The paging parameters every list takes. Both are kept as text so that a
/// bad value gets Sika's own `400 validation_error` naming it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// How many items to return, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The previous page's `nextCursor`, unchanged.
    pub cursor: Option<String>,
}
