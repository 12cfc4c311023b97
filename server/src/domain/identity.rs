//! What both stacks share: organizations, team members, their sessions, the
//! operator token and the node's own secret. Kept in `node.redb` in the data
//! directory, cached in memory for authentication.

use std::collections::HashMap;
use std::path::Path;
use std::sync::RwLock;

use base64::Engine as _;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const IDENTITY: TableDefinition<&str, &[u8]> = TableDefinition::new("identity");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Role {
    Owner,
    Admin,
    Developer,
    Viewer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Organization {
    pub id: String,
    pub name: String,
    pub owner_member_id: String,
    pub suspended: bool,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Member {
    pub id: String,
    pub organization: String,
    pub name: String,
    pub email: String,
    pub role: Role,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Session {
    pub token_hash: [u8; 32],
    pub member_id: String,
    pub created_at: i64,
}

#[derive(Default)]
struct Cache {
    organizations: HashMap<String, Organization>,
    members: HashMap<String, Member>,
    sessions: HashMap<[u8; 32], Session>,
    admin_token_hash: [u8; 32],
    secret: Vec<u8>,
}

/// The node-wide records, loaded once and kept in step with the file.
pub(crate) struct Identity {
    db: Database,
    cache: RwLock<Cache>,
}

/// The secrets `sika init` prints once.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapCredentials {
    pub organization_id: String,
    pub sandbox_key: String,
    pub live_key: String,
    pub owner_session_token: String,
    pub admin_token: String,
}

/// `prefix` followed by 32 random bytes, base64url without padding.
pub(crate) fn secret_token(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

pub(crate) fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl Identity {
    pub(crate) fn path(data_dir: &Path) -> std::path::PathBuf {
        data_dir.join("node.redb")
    }

    /// The database, for a backup's read transaction.
    pub(crate) fn database(&self) -> &Database {
        &self.db
    }

    /// Opens the identity store of an initialised data directory.
    pub(crate) fn open(data_dir: &Path) -> Result<Identity, String> {
        let path = Identity::path(data_dir);
        let db = Database::builder()
            .set_cache_size(8 * 1024 * 1024)
            .create(&path)
            .map_err(|e| crate::store::describe_open_error(&path, e))?;
        sika_engine::format::open(&db, &path, &sika_engine::format::IDENTITY_STEPS)
            .map_err(|e| e.to_string())?;
        let identity = Identity { db, cache: RwLock::new(Cache::default()) };
        identity.reload().map_err(|e| format!("cannot read {}: {e}", Identity::path(data_dir).display()))?;
        Ok(identity)
    }

    /// Creates the first organization, its owner and the operator token.
    /// Returns the owner's session token and the operator token.
    pub(crate) fn bootstrap(&self, now: i64) -> Result<(Organization, String, String), String> {
        let organization_id = sika_engine::ids::new_id("org");
        let member = Member {
            id: sika_engine::ids::new_id("mem"),
            organization: organization_id.clone(),
            name: "Owner".into(),
            email: "owner@localhost".into(),
            role: Role::Owner,
            created_at: now,
        };
        let organization = Organization {
            id: organization_id,
            name: "My organization".into(),
            owner_member_id: member.id.clone(),
            suspended: false,
            created_at: now,
        };
        let session_token = secret_token("sess_");
        let admin_token = secret_token("adm_");
        let session = Session {
            token_hash: hash_secret(&session_token),
            member_id: member.id.clone(),
            created_at: now,
        };
        let secret: [u8; 32] = rand::random();
        self.write(|table| {
            table.insert(format!("org/{}", organization.id).as_str(), encode(&organization).as_slice())?;
            table.insert(format!("member/{}", member.id).as_str(), encode(&member).as_slice())?;
            table.insert(
                format!("session/{}", hex(&session.token_hash)).as_str(),
                encode(&session).as_slice(),
            )?;
            table.insert("admin_token_hash", hash_secret(&admin_token).as_slice())?;
            table.insert("secret", secret.as_slice())?;
            Ok(())
        })?;
        Ok((organization, session_token, admin_token))
    }

    fn write(
        &self,
        f: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::StorageError>,
    ) -> Result<(), String> {
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut table = txn.open_table(IDENTITY).map_err(|e| e.to_string())?;
            f(&mut table).map_err(|e| e.to_string())?;
        }
        txn.commit().map_err(|e| e.to_string())?;
        self.reload().map_err(|e| e.to_string())
    }

    fn reload(&self) -> Result<(), redb::Error> {
        {
            let txn = self.db.begin_write()?;
            txn.open_table(IDENTITY)?;
            txn.commit()?;
        }
        let txn = self.db.begin_read()?;
        let table = txn.open_table(IDENTITY)?;
        let mut cache = Cache::default();
        for entry in table.iter()? {
            let (key, value) = entry?;
            let (key, value) = (key.value(), value.value());
            if let Some(id) = key.strip_prefix("org/") {
                if let Some(org) = decode::<Organization>(value) {
                    cache.organizations.insert(id.to_string(), org);
                }
            } else if let Some(id) = key.strip_prefix("member/") {
                if let Some(member) = decode::<Member>(value) {
                    cache.members.insert(id.to_string(), member);
                }
            } else if key.starts_with("session/") {
                if let Some(session) = decode::<Session>(value) {
                    cache.sessions.insert(session.token_hash, session);
                }
            } else if key == "admin_token_hash" {
                cache.admin_token_hash.copy_from_slice(&value[..32.min(value.len())]);
            } else if key == "secret" {
                cache.secret = value.to_vec();
            }
        }
        if let Ok(mut current) = self.cache.write() {
            *current = cache;
        }
        Ok(())
    }

    pub(crate) fn organization(&self, id: &str) -> Option<Organization> {
        self.cache.read().ok()?.organizations.get(id).cloned()
    }

    pub(crate) fn organizations(&self) -> Vec<Organization> {
        let mut all: Vec<_> =
            self.cache.read().map(|c| c.organizations.values().cloned().collect()).unwrap_or_default();
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        all
    }

    pub(crate) fn member(&self, id: &str) -> Option<Member> {
        self.cache.read().ok()?.members.get(id).cloned()
    }

    /// The member a session token acts for.
    pub(crate) fn session(&self, token: &str) -> Option<Member> {
        let hash = hash_secret(token);
        let cache = self.cache.read().ok()?;
        let session = cache.sessions.get(&hash)?;
        if !bool::from(session.token_hash.ct_eq(&hash)) {
            return None;
        }
        cache.members.get(&session.member_id).cloned()
    }

    pub(crate) fn is_admin_token(&self, token: &str) -> bool {
        let hash = hash_secret(token);
        self.cache.read().map(|c| c.admin_token_hash.ct_eq(&hash).into()).unwrap_or(false)
    }

    /// The node's secret, used to sign pagination cursors.
    pub(crate) fn secret(&self) -> Vec<u8> {
        self.cache.read().map(|c| c.secret.clone()).unwrap_or_default()
    }

    pub(crate) fn set_suspended(
        &self,
        organization_id: &str,
        suspended: bool,
    ) -> Result<Option<Organization>, String> {
        let Some(mut org) = self.organization(organization_id) else { return Ok(None) };
        org.suspended = suspended;
        self.write(|table| {
            table.insert(format!("org/{}", org.id).as_str(), encode(&org).as_slice())?;
            Ok(())
        })?;
        Ok(Some(org))
    }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("identity records encode")
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    postcard::from_bytes(bytes).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
