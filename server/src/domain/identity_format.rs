//! The identity database's steps in the storage format's upgrade path
//! (`sika_engine::format`): the records are the server's, so their steps
//! live beside them.

use redb::ReadableTable;
use serde::Deserialize;
use sika_engine::EngineError;

use crate::domain::identity::{IDENTITY, Member, Role, Session, encode};

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
    let corrupt = |key: &str| EngineError::Corrupt(format!("node.redb: record {key} cannot be read"));
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
            let old: MemberV2 = postcard::from_bytes(value.value()).map_err(|_| corrupt(&key))?;
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
            let old: SessionV2 = postcard::from_bytes(value.value()).map_err(|_| corrupt(&key))?;
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
