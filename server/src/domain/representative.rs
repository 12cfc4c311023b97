//! The organization representative: the person registered with the partner
//! bank for GHS virtual accounts. One per organization per stack.

use std::sync::LazyLock;

use regex_lite::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sika_api::Metadata;
use sika_api::representative::{self as wire, SetRepresentative};
use sika_engine::Command;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Member;
use crate::domain::render::timestamp;
use sika_engine::Engine;

const COLLECTION: &str = "representative";
static PHONE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\+\d{8,15}$").expect("valid regex"));
static ID_NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^GHA-\d{9}-\d$").expect("valid regex"));

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RepresentativeStatus {
    Active,
    SandboxDefault,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Representative {
    pub id: String,
    pub full_name: String,
    pub phone: String,
    pub id_type: String,
    pub id_number: String,
    pub country: String,
    pub status: RepresentativeStatus,
    /// JSON text of the caller's metadata object.
    pub metadata: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Representative {
    /// The record as every response shows it.
    pub(crate) fn render(&self) -> wire::Representative {
        wire::Representative {
            id: self.id.clone(),
            full_name: self.full_name.clone(),
            phone: self.phone.clone(),
            id_type: self.id_type.clone(),
            id_number: self.id_number.clone(),
            country: self.country.clone(),
            status: match self.status {
                RepresentativeStatus::Active => wire::RepresentativeStatus::Active,
                RepresentativeStatus::SandboxDefault => wire::RepresentativeStatus::SandboxDefault,
            },
            metadata: serde_json::from_str::<Metadata>(&self.metadata).unwrap_or_default(),
            created_at: timestamp(self.created_at),
            updated_at: timestamp(self.updated_at),
        }
    }
}

/// Checks every field against the spec's rules, in the order listed there.
pub(crate) fn validate(request: &SetRepresentative) -> ApiResult<()> {
    let name_length = request.full_name.chars().count();
    if !(2..=120).contains(&name_length) {
        return Err(ApiError::validation("fullName", "must be 2 to 120 characters"));
    }
    if request.full_name.trim().chars().count() < 2 || request.full_name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            "fullName",
            "must be a name: not only spaces, and no control characters",
        ));
    }
    if !PHONE.is_match(&request.phone) {
        return Err(ApiError::validation("phone", "must be E.164: a plus sign and 8 to 15 digits"));
    }
    if let Some(id_type) = &request.id_type
        && id_type != "ghana_card"
    {
        return Err(ApiError::validation("idType", "must be 'ghana_card'"));
    }
    if !ID_NUMBER.is_match(&request.id_number) {
        return Err(ApiError::validation("idNumber", "must look like GHA-123456789-0"));
    }
    if request.country.len() != 2 || !request.country.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(ApiError::validation("country", "must be a two-letter ISO 3166 country code, like GH"));
    }
    Ok(())
}

pub(crate) fn load(engine: &Engine, organization: &str) -> ApiResult<Option<Representative>> {
    Ok(crate::store::documents::load(&engine.read()?, COLLECTION, organization)?)
}

async fn save(engine: &Engine, organization: &str, record: &Representative) -> ApiResult<()> {
    let body = crate::store::documents::encode(record);
    engine
        .execute(Command::PutDocument {
            collection: COLLECTION.to_string(),
            id: organization.to_string(),
            body,
            list: None,
        })
        .await?;
    Ok(())
}

/// `GET /v1/organization/representative`: the organization's, or 404.
pub(crate) fn get(
    engine: &Engine,
    organization: &str,
) -> ApiResult<sika_api::representative::Representative> {
    let record = load(engine, organization)?
        .ok_or_else(|| ApiError::not_found("this organization has no representative yet"))?;
    Ok(record.render())
}

/// `PUT /v1/organization/representative`: an owner or admin creates or
/// replaces it (a `sandbox_default` included).
pub(crate) async fn set(
    engine: &Engine,
    member: Option<&Member>,
    organization: &str,
    request: SetRepresentative,
) -> ApiResult<sika_api::representative::Representative> {
    crate::domain::credentials::require_owner_or_admin(member)?;
    Ok(replace(engine, organization, request).await?.render())
}

/// Creates or replaces the representative (a `sandbox_default` included).
async fn replace(
    engine: &Engine,
    organization: &str,
    request: SetRepresentative,
) -> ApiResult<Representative> {
    validate(&request)?;
    let now = engine.now_ms();
    let existing = load(engine, organization)?;
    let record = Representative {
        id: existing.as_ref().map(|r| r.id.clone()).unwrap_or_else(|| sika_engine::ids::new_id("rep")),
        full_name: request.full_name,
        phone: request.phone,
        id_type: request.id_type.unwrap_or_else(|| "ghana_card".to_string()),
        id_number: request.id_number,
        country: request.country.to_ascii_uppercase(),
        status: RepresentativeStatus::Active,
        metadata: Value::Object(request.metadata.unwrap_or_default()).to_string(),
        created_at: existing.as_ref().map(|r| r.created_at).unwrap_or(now),
        updated_at: now,
    };
    save(engine, organization, &record).await?;
    Ok(record)
}

/// The sandbox's placeholder representative, filled from the owner's name.
pub(crate) async fn put_default(
    engine: &Engine,
    organization: &str,
    owner_name: &str,
) -> ApiResult<Representative> {
    let now = engine.now_ms();
    let record = Representative {
        id: sika_engine::ids::new_id("rep"),
        full_name: owner_name.to_string(),
        phone: "+233000000000".into(),
        id_type: "ghana_card".into(),
        id_number: "GHA-000000000-0".into(),
        country: "GH".into(),
        status: RepresentativeStatus::SandboxDefault,
        metadata: "{}".into(),
        created_at: now,
        updated_at: now,
    };
    save(engine, organization, &record).await?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> SetRepresentative {
        SetRepresentative {
            full_name: "Ama Mensah".into(),
            phone: "+233241234567".into(),
            id_type: None,
            id_number: "GHA-123456789-0".into(),
            country: "GH".into(),
            metadata: None,
        }
    }

    fn field_of(r: SetRepresentative) -> String {
        validate(&r).unwrap_err().details.unwrap()["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_spec_rules() {
        assert!(validate(&request()).is_ok());
        assert_eq!(field_of(SetRepresentative { full_name: "A".into(), ..request() }), "fullName");
        assert_eq!(field_of(SetRepresentative { full_name: "A".repeat(121), ..request() }), "fullName");
        assert!(validate(&SetRepresentative { full_name: "A".repeat(120), ..request() }).is_ok());
        for phone in ["0241234567", "+2332", "+1234567890123456", "+23324123456a"] {
            assert_eq!(field_of(SetRepresentative { phone: phone.into(), ..request() }), "phone", "{phone}");
        }
        assert_eq!(field_of(SetRepresentative { id_type: Some("passport".into()), ..request() }), "idType");
        for id in ["GHA-12345678-0", "GHA-123456789-01", "gha-123456789-0", "GHA123456789-0"] {
            assert_eq!(field_of(SetRepresentative { id_number: id.into(), ..request() }), "idNumber", "{id}");
        }
        assert_eq!(field_of(SetRepresentative { country: "GHA".into(), ..request() }), "country");
        for country in ["G1", "é", "  ", "G-"] {
            assert_eq!(
                field_of(SetRepresentative { country: country.into(), ..request() }),
                "country",
                "{country}"
            );
        }
        for name in ["    ", "Ama\u{0}Mensah", "Ama\nMensah"] {
            assert_eq!(
                field_of(SetRepresentative { full_name: name.into(), ..request() }),
                "fullName",
                "{name:?}"
            );
        }
    }
}
