//! API keys: what a key may do (scopes, caller IPs, spend caps, expiry),
//! how it is stored (only a hash), and who may manage keys.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use sika_api::keys::{CreateApiKey, READ_ONLY_SCOPES, SCOPED_RESOURCES, scope_names};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Member, Role};
use crate::domain::render::timestamp;
use crate::domain::stack::StackKind;

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
