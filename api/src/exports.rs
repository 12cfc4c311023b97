//! CSV exports (`GET /v1/exports/{resource}.csv`): the period every export
//! takes beside its list's filters, and the CSV document's schema.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The period an export covers: `createdFrom` inclusive, `createdTo`
/// exclusive, at most 366 days apart. Without both, the 366 days ending
/// now; with one, the 366 days from or to it (`createdFrom` alone ends
/// now). Each is an RFC 3339 date-time or a date (00:00 UTC).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ExportRange {
    /// Only those created at or after this instant.
    #[param(example = "2026-01-01T00:00:00Z")]
    pub created_from: Option<String>,
    /// Only those created before this instant.
    #[param(example = "2026-02-01T00:00:00Z")]
    pub created_to: Option<String>,
}

/// An export's body: RFC 4180 CSV with a header row and CRLF line ends,
/// newest first. The columns are the list item's fields, nested objects
/// flattened with dots (`from.amount`); a free-form object (`metadata`) or a
/// list (`timeline`) is one column holding its JSON. `id` comes first, the
/// rest in the order the item's schema lists them; a field the item does
/// not have is an empty cell, so every row has every column.
pub struct CsvDocument;

impl utoipa::PartialSchema for CsvDocument {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("RFC 4180 CSV: a header row, then one row per item, newest first."))
            .into()
    }
}

impl ToSchema for CsvDocument {}

/// The 400 of an export.
#[derive(utoipa::IntoResponses)]
pub enum BadExport {
    /// A bad filter, `createdFrom` or `createdTo` (not a date-time, the end
    /// before the start, or more than 366 days apart), a query parameter the
    /// operation does not take, or an unknown `sika-version` header
    /// (`validation_error`, `details.field` naming it)
    #[response(status = 400)]
    BadRequest(crate::ErrorBody),
}

/// The refusals of an export: its 400, then the usual ones.
pub type ExportRefusals = crate::With<BadExport, crate::Refusals>;
