//! Who is calling: an API key or a team member's session, and what it may do.

use crate::domain::credentials::ApiKeyRecord;
use crate::domain::error::ApiError;
use crate::domain::identity::{Member, Role};

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Principal {
    Key(ApiKeyRecord),
    Session(Member),
}

/// Who made a request, for the request log (set on the response).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub organization: String,
    pub api_key_id: Option<String>,
}

impl Principal {
    pub(crate) fn organization(&self) -> &str {
        match self {
            Principal::Key(k) => &k.organization,
            Principal::Session(m) => &m.organization,
        }
    }

    pub(crate) fn api_key_id(&self) -> Option<&str> {
        match self {
            Principal::Key(k) => Some(&k.id),
            Principal::Session(_) => None,
        }
    }

    pub(crate) fn member(&self) -> Option<&Member> {
        match self {
            Principal::Session(m) => Some(m),
            Principal::Key(_) => None,
        }
    }

    /// `403 forbidden` unless the caller holds `scope`. Sessions act with
    /// their role: viewers read, everyone else reads and writes.
    pub(crate) fn require(&self, scope: &str) -> Result<(), ApiError> {
        let allowed = match self {
            Principal::Key(key) => key.has_scope(scope),
            Principal::Session(member) => member.role != Role::Viewer || scope.ends_with(":read"),
        };
        if allowed { Ok(()) } else { Err(ApiError::forbidden(format!("this key lacks the '{scope}' scope"))) }
    }
}
