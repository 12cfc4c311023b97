//! API keys: what a key may do (scopes, caller IPs, spend caps, expiry),
//! how it is stored (only a hash), who may manage keys, and the use cases
//! that create, list and revoke them for a member or the operator.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use sika_api::keys::{ApiKey, CreateApiKey, CreatedApiKey, READ_ONLY_SCOPES, SCOPED_RESOURCES, scope_names};
use sika_api::{ErrorCode, ListPage, ListQuery};
use sika_engine::{Command, Engine};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Identity, Member, Role};
use crate::domain::render::timestamp;
use crate::domain::stack_kind::StackKind;

/// The collection API keys are stored in.
pub(crate) const KEYS: &str = "api_keys";

/// Keys an organization may hold on one stack at once, revoked ones not
/// counted: every key is checked on every request from memory, so their
/// number is bounded.
pub(crate) const ACTIVE_KEYS_MAX: usize = 100;

pub(crate) fn is_known_scope(scope: &str) -> bool {
    if scope == "*" || READ_ONLY_SCOPES.contains(&scope) {
        return true;
    }
    match scope.rsplit_once(':') {
        Some((resource, "read" | "write")) => SCOPED_RESOURCES.contains(&resource),
        _ => false,
    }
}

/// At least one scope, each a known one; an unknown one is refused naming
/// it and listing the scopes there are.
fn check_scopes(scopes: &[String]) -> ApiResult<()> {
    if scopes.is_empty() {
        return Err(ApiError::validation("scopes", "at least one scope is required"));
    }
    for (index, scope) in scopes.iter().enumerate() {
        if !is_known_scope(scope) {
            let known = scope_names();
            return Err(ApiError::validation(
                &format!("scopes[{index}]"),
                format!("unknown scope '{scope}'; the scopes are {}", known.join(", ")),
            )
            .with_detail("allowed", known));
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SpendCaps {
    /// Each cap in US cents.
    pub daily_usd_cents: Option<i128>,
    pub per_transaction_usd_cents: Option<i128>,
    pub monthly_usd_cents: Option<i128>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ApiKeyRecord {
    pub id: String,
    pub organization: String,
    pub name: String,
    pub hash: [u8; 32],
    /// The first characters of the key, to recognise it in a list.
    pub hint: String,
    pub scopes: Vec<String>,
    pub allowed_ips: Vec<IpNet>,
    pub caps: SpendCaps,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
}

impl ApiKeyRecord {
    pub(crate) fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == "*" || s == scope)
    }

    pub(crate) fn allows_ip(&self, ip: IpAddr) -> bool {
        self.allowed_ips.is_empty() || self.allowed_ips.iter().any(|net| net.contains(ip))
    }

    /// The key as every response shows it, without the key itself.
    pub(crate) fn render(&self) -> sika_api::keys::ApiKey {
        let cap = |c: Option<i128>| c.map(|v| sika_engine::money::format_minor(v, 2));
        sika_api::keys::ApiKey {
            id: self.id.clone(),
            name: self.name.clone(),
            hint: self.hint.clone(),
            scopes: self.scopes.clone(),
            allowed_ips: self.allowed_ips.iter().map(IpNet::to_string).collect(),
            caps: sika_api::keys::SpendCaps {
                daily_usd: cap(self.caps.daily_usd_cents),
                per_transaction_usd: cap(self.caps.per_transaction_usd_cents),
                monthly_usd: cap(self.caps.monthly_usd_cents),
            },
            expires_at: self.expires_at.map(timestamp),
            revoked_at: self.revoked_at.map(timestamp),
            created_at: timestamp(self.created_at),
        }
    }
}

/// An address or a CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IpNet {
    pub address: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    pub(crate) fn parse(input: &str) -> Option<IpNet> {
        let (address, prefix) = match input.split_once('/') {
            Some((a, p)) => (a.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
            None => (input.parse::<IpAddr>().ok()?, None),
        };
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(IpNet { address, prefix })
    }

    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - self.prefix) };
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - self.prefix) };
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = if self.address.is_ipv4() { 32 } else { 128 };
        if self.prefix == max {
            write!(f, "{}", self.address)
        } else {
            write!(f, "{}/{}", self.address, self.prefix)
        }
    }
}

/// Checks a key request and builds the record and its one-time secret.
pub(crate) fn new_key(
    request: CreateApiKey,
    organization: &str,
    stack: StackKind,
    now: i64,
) -> ApiResult<(ApiKeyRecord, String)> {
    let name = request.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::validation("name", "must be 1 to 100 characters"));
    }
    check_scopes(&request.scopes)?;
    let mut allowed_ips = Vec::new();
    for (index, ip) in request.allowed_ips.iter().enumerate() {
        let net = IpNet::parse(ip).ok_or_else(|| {
            ApiError::validation(
                &format!("allowedIps[{index}]"),
                format!("'{ip}' is not an IP address or CIDR block"),
            )
        })?;
        allowed_ips.push(net);
    }
    let usd = sika_engine::Currency::find("USD").expect("USD is a known currency");
    let cap = |field: &str, input: &Option<sika_api::AmountInput>| -> ApiResult<Option<i128>> {
        match input {
            None => Ok(None),
            Some(amount) => usd
                .parse(amount.as_str(), false)
                .map(Some)
                .map_err(|e| crate::domain::error::money_error(&format!("caps.{field}"), e)),
        }
    };
    let caps = match &request.caps {
        None => SpendCaps::default(),
        Some(c) => SpendCaps {
            daily_usd_cents: cap("dailyUsd", &c.daily_usd)?,
            per_transaction_usd_cents: cap("perTransactionUsd", &c.per_transaction_usd)?,
            monthly_usd_cents: cap("monthlyUsd", &c.monthly_usd)?,
        },
    };
    let expires_at = match &request.expires_at {
        None => None,
        Some(text) => {
            let at = crate::domain::render::parse_timestamp(text)
                .ok_or_else(|| ApiError::validation("expiresAt", "must be an ISO 8601 date-time"))?;
            if at <= now {
                return Err(ApiError::validation("expiresAt", "must be in the future"));
            }
            Some(at)
        }
    };
    let secret = crate::domain::identity::secret_token(stack.key_prefix());
    let record = ApiKeyRecord {
        id: sika_engine::ids::new_id("key"),
        organization: organization.to_string(),
        name: name.to_string(),
        hash: crate::domain::identity::hash_secret(&secret),
        hint: secret.chars().take(12).collect(),
        scopes: request.scopes,
        allowed_ips,
        caps,
        expires_at,
        revoked_at: None,
        created_at: now,
    };
    Ok((record, secret))
}

/// One stack's keys in memory, by the SHA-256 of the secret: every request's
/// key is checked here, so a key is usable once it is in this cache and no
/// longer once the revoked record replaces it. The stored records are the
/// truth; the cache is loaded from them on start and written after them.
#[derive(Default)]
pub(crate) struct KeyCache {
    /// Shared with the requests that present them, so none copies a record.
    keys: RwLock<HashMap<[u8; 32], Arc<ApiKeyRecord>>>,
    /// Held from counting an organization's active keys to storing a new
    /// one, so concurrent creations cannot pass the cap together.
    creation: tokio::sync::Mutex<()>,
}

impl KeyCache {
    /// The cache of every key `engine` holds.
    pub(crate) fn load(engine: &Engine) -> ApiResult<KeyCache> {
        let snapshot = engine.read()?;
        let mut keys = HashMap::new();
        for (_, body) in snapshot.documents(KEYS)? {
            let record: ApiKeyRecord = crate::store::documents::decode(&body)?;
            keys.insert(record.hash, Arc::new(record));
        }
        Ok(KeyCache { keys: RwLock::new(keys), creation: tokio::sync::Mutex::new(()) })
    }

    /// The key whose SHA-256 is `hash`.
    pub(crate) fn by_hash(&self, hash: &[u8; 32]) -> Option<Arc<ApiKeyRecord>> {
        self.keys.read().ok()?.get(hash).cloned()
    }

    /// An organization's keys, revoked ones included, newest first.
    pub(crate) fn of(&self, organization: &str) -> Vec<ApiKeyRecord> {
        let mut keys: Vec<_> = self
            .keys
            .read()
            .map(|k| {
                k.values()
                    .filter(|k| k.organization == organization)
                    .map(|k| ApiKeyRecord::clone(k))
                    .collect()
            })
            .unwrap_or_default();
        keys.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        keys
    }

    fn find(&self, organization: &str, id: &str) -> Option<ApiKeyRecord> {
        self.of(organization).into_iter().find(|k| k.id == id)
    }

    fn insert(&self, record: ApiKeyRecord) -> ApiResult<()> {
        self.keys
            .write()
            .map_err(|e| ApiError::internal_from(e.to_string()))?
            .insert(record.hash, Arc::new(record));
        Ok(())
    }
}

/// Stores a key durably, then makes it usable (or, revoked, unusable).
async fn save(engine: &Engine, cache: &KeyCache, record: ApiKeyRecord) -> ApiResult<()> {
    let body = crate::store::documents::encode(&record);
    engine
        .execute(Command::PutDocument {
            collection: KEYS.to_string(),
            id: record.id.clone(),
            body,
            list: Some((record.organization.clone(), KEYS.to_string())),
        })
        .await?;
    cache.insert(record)
}

/// `POST /v1/keys`: an owner or admin creates a key for their organization
/// on `stack`, refused when the organization already has `ACTIVE_KEYS_MAX`
/// keys that are not revoked. The secret is in the answer only.
pub(crate) async fn create(
    engine: &Engine,
    cache: &KeyCache,
    stack: StackKind,
    member: Option<&Member>,
    request: CreateApiKey,
) -> ApiResult<CreatedApiKey> {
    let member = require_owner_or_admin(member)?;
    let (record, secret) = new_key(request, &member.organization, stack, engine.now_ms())?;
    let _one_at_a_time = cache.creation.lock().await;
    let active = cache.of(&record.organization).iter().filter(|k| k.revoked_at.is_none()).count();
    if active >= ACTIVE_KEYS_MAX {
        return Err(ApiError::new(
            ErrorCode::InvalidState,
            format!("this organization already has {ACTIVE_KEYS_MAX} active keys; revoke one first"),
        )
        .with_detail("limit", ACTIVE_KEYS_MAX));
    }
    let key = record.render();
    save(engine, cache, record).await?;
    Ok(CreatedApiKey { key, secret })
}

/// `GET /v1/keys`: one page of the organization's keys on `stack`, for an
/// owner or admin.
pub(crate) fn list(
    cache: &KeyCache,
    identity: &Identity,
    stack: StackKind,
    member: Option<&Member>,
    query: &ListQuery,
) -> ApiResult<ListPage<ApiKey>> {
    let member = require_owner_or_admin(member)?;
    let data = cache.of(&member.organization).iter().map(ApiKeyRecord::render).collect();
    let scope = format!("{}/{}/keys", stack.name(), member.organization);
    crate::domain::pagination::page_of_items(data, query, &identity.secret(), &scope)
}

/// `DELETE /v1/keys/{id}`: an owner or admin revokes one of the
/// organization's keys; revoking it again changes nothing.
pub(crate) async fn revoke(
    engine: &Engine,
    cache: &KeyCache,
    member: Option<&Member>,
    id: &str,
) -> ApiResult<ApiKey> {
    let member = require_owner_or_admin(member)?;
    let key = cache.find(&member.organization, id).ok_or_else(|| not_found(id))?;
    revoked(engine, cache, key).await
}

/// The operator's list of any organization's keys.
pub(crate) fn list_of_organization(
    cache: &KeyCache,
    identity: &Identity,
    organization: &str,
) -> ApiResult<Vec<ApiKey>> {
    if identity.organization(organization).is_none() {
        return Err(ApiError::not_found(format!("organization '{organization}' not found")));
    }
    Ok(cache.of(organization).iter().map(ApiKeyRecord::render).collect())
}

/// The operator revokes a key of any organization (a leaked key is stopped
/// without the merchant).
pub(crate) async fn revoke_of_organization(
    engine: &Engine,
    cache: &KeyCache,
    organization: &str,
    id: &str,
) -> ApiResult<ApiKey> {
    let key = cache.find(organization, id).ok_or_else(|| {
        ApiError::not_found(format!("API key '{id}' not found in organization '{organization}'"))
    })?;
    revoked(engine, cache, key).await
}

async fn revoked(engine: &Engine, cache: &KeyCache, mut key: ApiKeyRecord) -> ApiResult<ApiKey> {
    if key.revoked_at.is_none() {
        key.revoked_at = Some(engine.now_ms());
        save(engine, cache, key.clone()).await?;
    }
    Ok(key.render())
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("API key '{id}' not found"))
}

/// Owner- and admin-only actions accept only such a member's session.
pub(crate) fn require_owner_or_admin(member: Option<&Member>) -> ApiResult<&Member> {
    match member {
        Some(m) if matches!(m.role, Role::Owner | Role::Admin) => Ok(m),
        Some(_) => Err(ApiError::forbidden("only an owner or admin may do this")),
        None => Err(ApiError::forbidden("this action needs an owner's or admin's session, not an API key")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_matching() {
        let net = IpNet::parse("10.1.0.0/16").unwrap();
        assert!(net.contains("10.1.2.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        let one = IpNet::parse("127.0.0.1").unwrap();
        assert!(one.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(IpNet::parse("10.0.0.0/33").is_none());
        assert!(IpNet::parse("nonsense").is_none());
    }

    #[test]
    fn scopes() {
        assert!(is_known_scope("payouts:write"));
        assert!(is_known_scope("requests:read"));
        assert!(!is_known_scope("requests:write"));
        assert!(!is_known_scope("payouts:delete"));
        assert!(is_known_scope("*"));
    }
}
