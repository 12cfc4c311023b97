//! The identity database's steps in the storage format's upgrade path
//! (`sika_engine::format`): the records are the server's, so their steps
//! live beside them.

use redb::{ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use sika_engine::EngineError;

/// The identity table as every format so far names it.
const IDENTITY: TableDefinition<&str, &[u8]> = TableDefinition::new("identity");

/// A role as formats 2 and 3 store it (by variant index).
#[derive(Deserialize, Serialize)]
enum Role {
    Owner,
    Admin,
    Developer,
    Viewer,
}

/// A member as format 3 stores it. A step writes the shape of its own
/// format, not today's `identity::Member`: a later step upgrades from here,
/// so a field added to the record later cannot change what this step wrote.
#[derive(Serialize)]
struct Member {
    id: String,
    organization: String,
    name: String,
    email: String,
    role: Role,
    created_at: i64,
    password_hash: Option<String>,
}

/// A session as format 3 stores it.
#[derive(Serialize)]
struct Session {
    token_hash: [u8; 32],
    member_id: String,
    created_at: i64,
    expires_at: i64,
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("identity records encode")
}

/// How long a session carried over from format 2 lasts after the upgrade:
/// the default `--session-ttl`, counted from the upgrade, since format 2
/// kept no expiry.
const CARRIED_SESSION_TTL_MS: i64 = 12 * 3600 * 1000;

/// Format 2 to 3 of `node.redb`: a member gains a password hash (none: the
/// member accepts an invitation to set one) and a session an expiry. Both
/// new fields come last, so each record is decoded as format 2 wrote it and
/// written again with them.
pub(crate) fn members_and_sessions(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    #[derive(Deserialize)]
    struct MemberV2 {
        id: String,
        organization: String,
        name: String,
        email: String,
        role: Role,
        created_at: i64,
    }
    #[derive(Deserialize)]
    struct SessionV2 {
        token_hash: [u8; 32],
        member_id: String,
        created_at: i64,
    }
    let corrupt = |key: &str, e: postcard::Error| {
        EngineError::Corrupt(format!("node.redb: record {key} cannot be read: {e}"))
    };
    let now = chrono::Utc::now().timestamp_millis();
    let mut table = match txn.open_table(IDENTITY) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut rewritten = Vec::new();
    for entry in table.iter()? {
        let (key, value) = entry?;
        let key = key.value().to_string();
        if key.starts_with("member/") {
            let old: MemberV2 = postcard::from_bytes(value.value()).map_err(|e| corrupt(&key, e))?;
            let member = Member {
                id: old.id,
                organization: old.organization,
                name: old.name,
                email: old.email.trim().to_lowercase(),
                role: old.role,
                created_at: old.created_at,
                password_hash: None,
            };
            rewritten.push((key, encode(&member)));
        } else if key.starts_with("session/") {
            let old: SessionV2 = postcard::from_bytes(value.value()).map_err(|e| corrupt(&key, e))?;
            let session = Session {
                token_hash: old.token_hash,
                member_id: old.member_id,
                created_at: old.created_at,
                expires_at: now.saturating_add(CARRIED_SESSION_TTL_MS),
            };
            rewritten.push((key, encode(&session)));
        }
    }
    for (key, value) in rewritten {
        table.insert(key.as_str(), value.as_slice())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What this step writes is what the identity store reads today; when
    /// a record changes shape, this fails until a new step upgrades it.
    #[test]
    fn format_3_records_read_as_todays() {
        let member = Member {
            id: "mem_1".into(),
            organization: "org_1".into(),
            name: "Ama".into(),
            email: "ama@example.com".into(),
            role: Role::Developer,
            created_at: 7,
            password_hash: Some("$argon2id$…".into()),
        };
        let read: crate::domain::identity::Member =
            crate::domain::identity::decode(&encode(&member)).expect("a format 3 member reads");
        assert_eq!(read.email, "ama@example.com");
        assert_eq!(read.role, crate::domain::identity::Role::Developer);
        assert_eq!(read.password_hash.as_deref(), Some("$argon2id$…"));
        let session =
            Session { token_hash: [3; 32], member_id: "mem_1".into(), created_at: 1, expires_at: 2 };
        let read: crate::domain::identity::Session =
            crate::domain::identity::decode(&encode(&session)).expect("a format 3 session reads");
        assert_eq!((read.token_hash, read.expires_at), ([3; 32], 2));
    }
}
