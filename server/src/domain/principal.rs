//! Who is calling: an API key or a team member's session, and what it may do.

use crate::domain::credentials::ApiKeyRecord;
use crate::domain::error::ApiError;
use crate::domain::identity::{Member, Role};

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Principal {
    /// Shared with the key cache: a request copies no key record.
    Key(std::sync::Arc<ApiKeyRecord>),
    Session(Member),
}

/// Who made a request, for the request log (set on the response).
/// The session a request came with (its token's hash), so that it can be ended.
#[derive(Debug, Clone)]
pub(crate) struct CurrentSession(pub crate::domain::identity::Session);

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
    /// their role: a viewer reads, a developer reads and manages webhooks,
    /// an admin or owner does everything.
    pub(crate) fn require(&self, scope: &str) -> Result<(), ApiError> {
        match self {
            Principal::Key(key) if key.has_scope(scope) => Ok(()),
            Principal::Key(_) => Err(ApiError::forbidden(format!("this key lacks the '{scope}' scope"))),
            Principal::Session(member) if role_allows(member.role, scope) => Ok(()),
            Principal::Session(member) => Err(ApiError::forbidden(format!(
                "a member with the {} role cannot use '{scope}'",
                role_name(member.role)
            ))),
        }
    }
}

/// What each role may do, as scopes.
fn role_allows(role: Role, scope: &str) -> bool {
    match role {
        Role::Owner | Role::Admin => true,
        Role::Developer => scope.ends_with(":read") || scope == "webhooks:write",
        Role::Viewer => scope.ends_with(":read"),
    }
}

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::Owner => "owner",
        Role::Admin => "admin",
        Role::Developer => "developer",
        Role::Viewer => "viewer",
    }
}
