//! The operator's audit log over HTTP: a layer on every admin route that
//! records each action (any method but GET) with its outcome, so no admin
//! action can be added without being audited, and `GET /admin/v1/audit`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use sika_api::admin::{AdminRefusals, AuditEntry};
use sika_api::{ErrorBody, ListPage, ListQuery};

use super::AdminState;
use crate::domain::audit::{self, Action};
use crate::domain::error::{ApiError, ApiResult};

/// Set by a handler whose target is not in its path (a created resource).
#[derive(Debug, Clone)]
pub(crate) struct AuditTarget(pub String);

/// Set by a handler with more to say than its outcome (a settlement's
/// provider reference and note, a dispute's outcome).
#[derive(Debug, Clone)]
pub(crate) struct AuditDetail(pub String);

/// The action's name for the audit log, from its route and the path's
/// values: `payout.complete`, `organization.rename`, `key.revoke`.
fn action_name(method: &Method, template: &[&str], values: &[&str]) -> String {
    let value_of = |name: &str| template.iter().position(|s| *s == name).and_then(|i| values.get(i).copied());
    let literals: Vec<&str> =
        template.iter().copied().filter(|s| !s.starts_with('{') && !["admin", "v1"].contains(s)).collect();
    let noun = |plural: &str| {
        match plural {
            "organizations" => "organization",
            "payouts" => "payout",
            "collections" => "collection",
            "orders" => "order",
            "disputes" => "dispute",
            "members" => "member",
            "keys" => "key",
            "deliveries" => "delivery",
            "endpoints" => "webhook_endpoint",
            other => other,
        }
        .to_string()
    };
    match (method.as_str(), literals.as_slice()) {
        (_, [.., resource]) if template.last() == Some(&"{action}") => {
            format!("{}.{}", noun(resource), value_of("{action}").unwrap_or("settle"))
        }
        (_, [.., "invitations"]) => "member.invite".into(),
        ("DELETE", [.., "keys"]) => "key.revoke".into(),
        ("PUT", ["rates"]) => "rates.replace".into(),
        ("POST", ["verify"]) => "ledger.verify".into(),
        ("POST", [resource]) => format!("{}.create", noun(resource)),
        ("PATCH", ["organizations"]) => "organization.rename".into(),
        (_, [.., resource, verb]) => format!("{}.{verb}", noun(resource)),
        (method, _) => format!("{} {}", method.to_lowercase(), template.join("/")),
    }
}

/// The id the action was done to: the path's last id, if it has one.
fn path_target(template: &[&str], values: &[&str]) -> Option<String> {
    template
        .iter()
        .zip(values)
        .rev()
        .find(|(t, _)| t.starts_with('{') && !["{stack}", "{action}"].contains(t))
        .map(|(_, v)| (*v).to_string())
}

pub(crate) async fn record(State(state): State<Arc<AdminState>>, request: Request, next: Next) -> Response {
    if request.method() == Method::GET || request.method() == Method::HEAD {
        return next.run(request).await;
    }
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let matched = request.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string());
    let response = next.run(request).await;
    let template_text = matched.unwrap_or_else(|| path.clone());
    let template: Vec<&str> = template_text.trim_matches('/').split('/').collect();
    let values: Vec<&str> = path.trim_matches('/').split('/').collect();
    let stack = template
        .iter()
        .position(|s| *s == "{stack}")
        .and_then(|i| values.get(i).copied())
        .filter(|s| ["live", "sandbox"].contains(s));
    let action = action_name(&method, &template, &values);
    let target = response
        .extensions()
        .get::<AuditTarget>()
        .map(|t| t.0.clone())
        .or_else(|| path_target(&template, &values))
        .unwrap_or_else(|| stack.unwrap_or("node").to_string());
    let detail = response.extensions().get::<AuditDetail>().map(|d| d.0.clone());
    let outcome: ApiResult<()> = match response.extensions().get::<ApiError>() {
        Some(error) => Err(error.clone()),
        None if response.status().is_success() => Ok(()),
        None => {
            Err(ApiError::new(sika_api::ErrorCode::InternalError, format!("answered {}", response.status())))
        }
    };
    let now = state.live.now_ms();
    audit::record(&state.identity, now, Action { action: &action, target: &target, stack, detail }, &outcome);
    response
}

/// The operator's audit log
///
/// Every admin action (settlements, suspensions, dispute resolutions, key
/// revocations, rate changes, organizations and invitations, …) with its
/// target, stack, time and outcome, newest first, paginated like the
/// public API's lists.
#[utoipa::path(get, path = "/admin/v1/audit", operation_id = "listAudit",
    security(("operator" = [])), params(ListQuery),
    responses((status = 200, description = "One page of the audit log", body = ListPage<AuditEntry>),
        (status = 400, description = "A bad `limit` or `cursor` (`validation_error`)", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn list(
    State(state): State<Arc<AdminState>>,
    Query(query): Query<ListQuery>,
) -> ApiResult<Json<ListPage<AuditEntry>>> {
    Ok(Json(audit::page(&state.identity, &query)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(method: Method, template: &str, path: &str) -> String {
        let template: Vec<&str> = template.trim_matches('/').split('/').collect();
        let values: Vec<&str> = path.trim_matches('/').split('/').collect();
        action_name(&method, &template, &values)
    }

    #[test]
    fn actions_are_named_after_what_they_do() {
        for (method, template, path, want) in [
            (Method::POST, "/admin/v1/organizations", "/admin/v1/organizations", "organization.create"),
            (
                Method::PATCH,
                "/admin/v1/organizations/{id}",
                "/admin/v1/organizations/org_1",
                "organization.rename",
            ),
            (
                Method::POST,
                "/admin/v1/organizations/{id}/suspend",
                "/admin/v1/organizations/o/suspend",
                "organization.suspend",
            ),
            (
                Method::POST,
                "/admin/v1/organizations/{id}/members/{memberId}/invitations",
                "/admin/v1/organizations/o/members/m/invitations",
                "member.invite",
            ),
            (
                Method::POST,
                "/admin/v1/{stack}/payouts/{id}/{action}",
                "/admin/v1/live/payouts/pay_1/complete",
                "payout.complete",
            ),
            (
                Method::POST,
                "/admin/v1/{stack}/collections/{id}/{action}",
                "/admin/v1/live/collections/c/fail",
                "collection.fail",
            ),
            (
                Method::POST,
                "/admin/v1/{stack}/disputes/{id}/resolve",
                "/admin/v1/live/disputes/d/resolve",
                "dispute.resolve",
            ),
            (Method::PUT, "/admin/v1/{stack}/rates", "/admin/v1/live/rates", "rates.replace"),
            (
                Method::DELETE,
                "/admin/v1/{stack}/organizations/{id}/keys/{keyId}",
                "/admin/v1/live/organizations/o/keys/k",
                "key.revoke",
            ),
            (
                Method::POST,
                "/admin/v1/{stack}/webhooks/deliveries/{id}/retry",
                "/admin/v1/live/webhooks/deliveries/d/retry",
                "delivery.retry",
            ),
        ] {
            assert_eq!(name(method, template, path), want, "{template}");
        }
    }
}
