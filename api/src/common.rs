//! Pieces every resource shares: money, timelines, metadata, list pages.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::{PartialSchema, ToSchema};

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

impl<T> ListPage<T> {
    /// A list answered in one page: nothing more to fetch and no cursor
    /// (an organization's keys or accounts, a stack's last 100 deliveries;
    /// each is bounded where it is built).
    pub fn whole(data: Vec<T>) -> ListPage<T> {
        ListPage { data, has_more: false, next_cursor: None }
    }
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
            Value::String(s) if s.contains(['e', 'E']) => Err(serde::de::Error::custom(format!(
                "'{s}' is in exponent notation; write the amount as a plain decimal, like \"1000.00\""
            ))),
            Value::String(s) => Ok(AmountInput(s)),
            // A JSON number may be written 1e3; it means the same as 1000.
            Value::Number(n) => {
                let text = n.to_string();
                plain_decimal(&text).map(AmountInput).ok_or_else(|| {
                    serde::de::Error::custom(format!("{text} is not a number an amount can be"))
                })
            }
            other => Err(serde::de::Error::custom(format!(
                "expected a decimal string or number, found {}",
                kind_of(&other)
            ))),
        }
    }
}

/// A JSON number's text without an exponent (`1.5e2` is `150`, `25E-1` is
/// `2.5`), moving the decimal point in the digits, never through a float;
/// `None` for an exponent beyond what any amount could need.
fn plain_decimal(text: &str) -> Option<String> {
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else { return Some(text.to_string()) };
    let exponent: i32 = exponent.parse().ok().filter(|e: &i32| e.abs() <= 40)?;
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let point = i32::try_from(whole.len()).ok()? + exponent;
    let digits = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-point).ok()?))
    } else if usize::try_from(point).ok()? >= digits.len() {
        format!("{digits}{}", "0".repeat(usize::try_from(point).ok()? - digits.len()))
    } else {
        let (left, right) = digits.split_at(usize::try_from(point).ok()?);
        format!("{left}.{right}")
    };
    Some(format!("{sign}{digits}"))
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

/// The filters the payouts, collections and orders lists take besides
/// paging. `status` is text so that a bad value gets Sika's own message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct MovementFilter {
    /// Only those in this status (the resource's own status values).
    pub status: Option<String>,
    /// Only the one created with this `externalReference`.
    pub external_reference: Option<String>,
}

/// The `{id}` path parameter of an operation on one `T`, described from
/// its [`Resource`](crate::Resource): "The payout's id (`pay_…`)".
pub struct Id<T>(std::marker::PhantomData<T>);

impl<T: crate::Resource> utoipa::IntoParams for Id<T> {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let description = format!("The {}'s id (`{}…`)", T::NAME, T::ID_PREFIX);
        vec![path_parameter("id", description)]
    }
}

/// A required text parameter of the path, as `("id" = String, Path,
/// description = …)` in an operation's `params` writes it.
pub(crate) fn path_parameter(name: &str, description: String) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(String::schema()))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_in_exponent_notation() {
        let read = |json: &str| serde_json::from_str::<AmountInput>(json).map(|a| a.as_str().to_string());
        assert_eq!(read("1e3").unwrap(), "1000");
        assert_eq!(read("1.5E2").unwrap(), "150");
        assert_eq!(read("25e-1").unwrap(), "2.5");
        assert_eq!(read("5e-3").unwrap(), "0.005");
        assert_eq!(read("-1.25e1").unwrap(), "-12.5");
        assert_eq!(read("10.50").unwrap(), "10.50");
        assert!(read("\"1e3\"").is_err(), "a string in exponent notation is refused");
        assert_eq!(read("\"1000\"").unwrap(), "1000");
        assert!(read("1e400").is_err());
    }
}
