//! An export's columns, read once from the item's wire type: its OpenAPI
//! schema (utoipa) names every field, optional ones too, so the column set
//! does not depend on which fields the rows happen to carry.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Object, Schema, SchemaType, Type};

/// How deep nested objects are flattened; a schema nested deeper (none is)
/// is written as JSON in one cell rather than followed.
const DEPTH_MAX: usize = 4;

/// One column: its header (`from.amount`) and the path of wire field
/// names it is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Column {
    pub header: String,
    path: Vec<String>,
}

impl Column {
    /// This column's cell for `item` (the row's wire JSON): text as it is,
    /// numbers and booleans as JSON writes them, an absent or null field
    /// empty, a free-form object or a list as compact JSON.
    pub(crate) fn cell(&self, item: &Value) -> String {
        let mut value = item;
        for name in &self.path {
            match value.get(name) {
                Some(inner) => value = inner,
                None => return String::new(),
            }
        }
        match value {
            Value::Null => String::new(),
            Value::String(text) => text.clone(),
            Value::Bool(_) | Value::Number(_) => value.to_string(),
            Value::Array(_) | Value::Object(_) => value.to_string(),
        }
    }
}

/// The columns of `T`'s rows: `id` first, then every field in the order its
/// schema lists them, objects with declared fields flattened with dots.
pub(crate) fn columns<T: ToSchema>() -> Vec<Column> {
    let mut components = Vec::new();
    T::schemas(&mut components);
    let components: BTreeMap<String, RefOr<Schema>> = components.into_iter().collect();
    let mut out = Vec::new();
    walk(&components, &T::schema(), &mut Vec::new(), &mut out);
    if let Some(at) = out.iter().position(|c| c.header == "id") {
        let id = out.remove(at);
        out.insert(0, id);
    }
    out
}

fn walk(
    components: &BTreeMap<String, RefOr<Schema>>,
    schema: &RefOr<Schema>,
    path: &mut Vec<String>,
    out: &mut Vec<Column>,
) {
    match fields(components, schema, 0) {
        Some(object) if path.len() < DEPTH_MAX => {
            for (name, property) in &object.properties {
                path.push(name.clone());
                walk(components, property, path, out);
                path.pop();
            }
        }
        _ => out.push(Column { header: path.join("."), path: path.clone() }),
    }
}

/// The declared fields of `schema` when it is an object that has some
/// (through a reference, or an optional one's `oneOf [null, T]`); `None`
/// for everything written in one cell.
fn fields<'a>(
    components: &'a BTreeMap<String, RefOr<Schema>>,
    schema: &'a RefOr<Schema>,
    hops: usize,
) -> Option<&'a Object> {
    if hops > DEPTH_MAX {
        return None;
    }
    match schema {
        RefOr::Ref(reference) => {
            let name = reference.ref_location.rsplit('/').next()?;
            fields(components, components.get(name)?, hops + 1)
        }
        RefOr::T(Schema::Object(object)) => {
            let is_object = matches!(&object.schema_type, SchemaType::Type(Type::Object))
                || matches!(&object.schema_type, SchemaType::Array(types) if types.contains(&Type::Object));
            (is_object && !object.properties.is_empty()).then_some(object)
        }
        RefOr::T(Schema::OneOf(one)) => {
            let mut not_null = one.items.iter().filter(|item| !is_null(item));
            let only = not_null.next()?;
            if not_null.next().is_some() {
                return None;
            }
            fields(components, only, hops + 1)
        }
        RefOr::T(Schema::AllOf(all)) if all.items.len() == 1 => fields(components, &all.items[0], hops + 1),
        _ => None,
    }
}

fn is_null(schema: &RefOr<Schema>) -> bool {
    matches!(schema, RefOr::T(Schema::Object(object)) if matches!(object.schema_type, SchemaType::Type(Type::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sika_api::payouts::Payout;

    #[test]
    fn a_payouts_columns_flatten_its_objects_and_keep_its_optional_fields() {
        let headers: Vec<String> = columns::<Payout>().into_iter().map(|c| c.header).collect();
        assert_eq!(headers[0], "id");
        for wanted in [
            "from.amount",
            "from.kyc",
            "to.bankCode",
            "to.recipientId",
            "fee.currency",
            "metadata",
            "timeline",
        ] {
            assert!(headers.iter().any(|h| h == wanted), "{wanted} in {headers:?}");
        }
        assert!(!headers.iter().any(|h| h == "from" || h == "fee"), "objects are flattened: {headers:?}");
    }

    #[test]
    fn cells_are_text_empty_or_json() {
        let item = json!({ "a": { "b": "x,\"y\"", "n": null }, "m": {}, "t": [1], "k": 2 });
        let cell = |path: &[&str]| {
            Column { header: path.join("."), path: path.iter().map(|p| p.to_string()).collect() }.cell(&item)
        };
        assert_eq!(cell(&["a", "b"]), "x,\"y\"");
        assert_eq!(cell(&["a", "n"]), "");
        assert_eq!(cell(&["a", "missing"]), "");
        assert_eq!(cell(&["m"]), "{}");
        assert_eq!(cell(&["t"]), "[1]");
        assert_eq!(cell(&["k"]), "2");
    }
}
