//! The operator's audit log: every admin action (what, target, stack,
//! when, outcome), newest first, paged like the public API's lists.

use sika_api::ListPage;
use sika_api::admin::{AuditEntry, AuditOutcome, StackName};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{AuditRecord, Identity};
use crate::domain::pagination::{PageQuery, Paging, list_page};
use crate::domain::render::timestamp;

/// What an operator did, before it is written.
pub(crate) struct Action<'a> {
    pub action: &'a str,
    pub target: &'a str,
    pub stack: Option<&'a str>,
    pub detail: Option<String>,
}

/// Writes `action` with the outcome of `result` (the error's message when
/// it failed). An audit entry that cannot be written is logged, never
/// turned into the action's failure: the action already happened.
pub(crate) fn record<T>(identity: &Identity, now: i64, action: Action<'_>, result: &ApiResult<T>) {
    let (succeeded, detail) = match result {
        Ok(_) => (true, action.detail),
        Err(e) => {
            let reason = e.message.clone();
            (false, Some(action.detail.map_or(reason.clone(), |d| format!("{d}; {reason}"))))
        }
    };
    let entry = AuditRecord {
        id: sika_engine::ids::new_id("aud"),
        action: action.action.to_string(),
        target: action.target.to_string(),
        stack: action.stack.map(str::to_string),
        succeeded,
        detail,
        created_at: now,
    };
    if let Err(e) = identity.append_audit(&entry) {
        tracing::error!(error = %e, action = %entry.action, "cannot write the audit log");
    }
}

fn render(record: AuditRecord) -> AuditEntry {
    AuditEntry {
        id: record.id,
        action: record.action,
        target: record.target,
        stack: match record.stack.as_deref() {
            Some("live") => Some(StackName::Live),
            Some("sandbox") => Some(StackName::Sandbox),
            _ => None,
        },
        outcome: if record.succeeded { AuditOutcome::Succeeded } else { AuditOutcome::Failed },
        detail: record.detail,
        created_at: timestamp(record.created_at),
    }
}

/// One page of the audit log, newest first.
pub(crate) fn page(identity: &Identity, query: &PageQuery) -> ApiResult<ListPage<AuditEntry>> {
    const SCOPE: &str = "admin/audit";
    let secret = identity.secret();
    let page = query.page(&secret, SCOPE)?;
    let mut found = identity.audit_page(page.before, page.limit.saturating_add(1)).map_err(|e| {
        tracing::error!(error = %e, "cannot read the audit log");
        ApiError::internal_from(e)
    })?;
    let has_more = found.len() > page.limit;
    found.truncate(page.limit);
    let last = found.last().map(|(position, _)| *position);
    let data = found.into_iter().map(|(_, record)| render(record)).collect();
    Ok(list_page(data, last, has_more, &secret, SCOPE))
}
