//! The signed-in pages: home, team, developers and settings. Each reads
//! and acts through the API's own use cases, and asks the API's
//! requirements (`Signed::can`, `Signed::admit`) whether the member may
//! see a part or run a form, by the operation that part stands for: a
//! control the API would refuse is not shown, and a form posted anyway is
//! refused with the API's `403` before anything runs.

use super::views::name;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use sika_api::ListQuery;

use super::session::{Fields, Posted, Signed};
use super::views::{Frame, Notice, frame, money, send, shell, when};
use crate::domain::error::ApiResult;
use crate::domain::principal::Principal;
use crate::domain::webhooks::Endpoint;
use crate::domain::webhooks::Health;
use crate::domain::{accounts, credentials, members, payouts, refunds, representative, totp};
use crate::http::auth::Requirements;
use crate::http::pages::shell::Shell;

/// The roles a form offers, as the API names them.
const ROLES: [&str; 4] = ["owner", "admin", "developer", "viewer"];

fn first(limit: u32) -> ListQuery {
    ListQuery { limit: Some(limit.to_string()), cursor: None }
}

/// Rows per page of the team, keys and endpoints tables, as the API's
/// default.
const PAGE_ROWS: u32 = 20;

/// Where each table of a page stands: the API's cursors.
#[derive(serde::Deserialize, Default)]
pub(super) struct Paging {
    cursor: Option<String>,
    keys: Option<String>,
    endpoints: Option<String>,
}

fn at(cursor: Option<String>) -> ListQuery {
    ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor }
}

/// The address of a table's next page: `path?name=cursor`, when there is one.
fn next_page<T>(page: &sika_api::ListPage<T>, path: &str, name: &str) -> Option<String> {
    page.next_cursor.as_ref().filter(|_| page.has_more).map(|cursor| {
        let query: String =
            form_urlencoded::Serializer::new(String::new()).append_pair(name, cursor).finish();
        format!("{path}?{query}")
    })
}

/// A form's fields as the API's request type: the same parsing and the
/// same refusals as a JSON body (each text field's maximum, then the typed
/// read, `details.field` naming what failed).
pub(super) fn wire<T: DeserializeOwned>(value: Value) -> ApiResult<T> {
    crate::domain::limits::check_text(&value)?;
    crate::http::extract::from_value(value)
}

fn status_of(notice: Option<&Notice>) -> StatusCode {
    notice.map_or(StatusCode::OK, |n| n.status)
}

#[derive(Template)]
#[template(path = "dashboard/logout.html")]
pub(super) struct LogOutPage {
    shell: Shell,
    frame: Frame,
    email: String,
    csrf: String,
}

pub(super) fn confirm_log_out(signed: &Signed) -> LogOutPage {
    LogOutPage {
        shell: shell(&signed.stack, "Log out"),
        frame: frame(signed, "", None),
        email: signed.member().email.clone(),
        csrf: signed.csrf(),
    }
}

// ---- Home -----------------------------------------------------------------

#[derive(Template)]
#[template(path = "dashboard/home.html")]
struct HomePage {
    shell: Shell,
    frame: Frame,
    /// `None` when the role cannot read balances.
    balances: Option<Vec<BalanceRow>>,
    attention: Vec<String>,
    activity: Vec<ActivityRow>,
}

pub(super) struct BalanceRow {
    pub(super) currency: String,
    pub(super) available: String,
    pub(super) pending: String,
    pub(super) total: String,
}

struct ActivityRow {
    kind: &'static str,
    id: String,
    amount: String,
    status: String,
    created: String,
}

pub(super) fn balances(signed: &Signed) -> ApiResult<Option<Vec<BalanceRow>>> {
    if !signed.can(&Method::GET, "/v1/accounts") {
        return Ok(None);
    }
    let accounts = accounts::list(&signed.stack.engine, &signed.member().organization)?;
    Ok(Some(
        accounts
            .iter()
            .map(|a| BalanceRow {
                currency: a.currency.clone(),
                available: money(&a.currency, &a.available_balance),
                pending: money(&a.currency, &a.pending_balance),
                total: money(&a.currency, &a.total_balance),
            })
            .collect(),
    ))
}

/// Failing or disabled webhook endpoints, open disputes, failed refunds
/// and payouts: what the member can read of them.
fn attention(signed: &Signed) -> ApiResult<Vec<String>> {
    let (stack, organization) = (&signed.stack, signed.member().organization.as_str());
    let mut items = Vec::new();
    if signed.can(&Method::GET, "/v1/webhooks/endpoints") {
        for endpoint in
            crate::domain::webhooks::endpoints::list(&stack.lists(), organization, &first(100))?.data
        {
            match name(&endpoint.status).as_str() {
                "disabled" => items.push(format!("Webhook endpoint {} is disabled", endpoint.url)),
                _ if endpoint.consecutive_failures > 0 => items.push(format!(
                    "Webhook endpoint {} failed its last {} deliveries",
                    endpoint.url, endpoint.consecutive_failures
                )),
                _ => {}
            }
        }
    }
    if signed.can(&Method::GET, "/v1/disputes") {
        let deps = crate::http::routes::disputes::deps(stack);
        for dispute in crate::domain::disputes::page(&deps, organization, &first(20), Some("open"))?.data {
            items.push(format!(
                "Dispute {} is open: {} held, answer by {}",
                dispute.id,
                money(&dispute.currency, &dispute.held_amount),
                when(&dispute.evidence_due_by)
            ));
        }
    }
    if signed.can(&Method::GET, "/v1/refunds") {
        let filter = sika_api::refunds::RefundFilter { status: Some("failed".into()), collection_id: None };
        for refund in refunds::list((&**stack).into(), &signed.principal, first(20), filter)?.data {
            items.push(format!("Refund {} of {} failed", refund.id, money(&refund.currency, &refund.amount)));
        }
    }
    if signed.can(&Method::GET, "/v1/payouts") {
        let filter = sika_api::MovementFilter { status: Some("failed".into()), ..Default::default() };
        for payout in payouts::list((&**stack).into(), &signed.principal, first(20), filter)?.data {
            let amount = money(&payout.from.currency, &payout.from.amount);
            items.push(format!("Payout {} of {amount} failed: {}", payout.id, payout.status_message));
        }
    }
    Ok(items)
}

/// The latest payouts and collections, newest first.
fn activity(signed: &Signed) -> ApiResult<Vec<ActivityRow>> {
    let stack = &signed.stack;
    let mut rows = Vec::new();
    if signed.can(&Method::GET, "/v1/payouts") {
        let page = payouts::list((&**stack).into(), &signed.principal, first(5), Default::default())?;
        rows.extend(page.data.into_iter().map(|p| ActivityRow {
            kind: "Payout",
            amount: money(&p.from.currency, &p.from.amount),
            status: name(&p.status),
            created: p.created_at,
            id: p.id,
        }));
    }
    if signed.can(&Method::GET, "/v1/collections") {
        let page = crate::domain::collections::list(
            (&**stack).into(),
            &signed.principal,
            first(5),
            Default::default(),
        )?;
        rows.extend(page.data.into_iter().map(|c| ActivityRow {
            kind: "Collection",
            amount: money(&c.currency, &c.amount),
            status: name(&c.status),
            created: c.created_at,
            id: c.id,
        }));
    }
    rows.sort_by(|a, b| b.created.cmp(&a.created));
    rows.iter_mut().for_each(|row| row.created = when(&row.created));
    Ok(rows)
}

fn home_page(signed: &Signed) -> ApiResult<HomePage> {
    Ok(HomePage {
        shell: shell(&signed.stack, "Home"),
        frame: frame(signed, "home", None),
        balances: balances(signed)?,
        attention: attention(signed)?,
        activity: activity(signed)?,
    })
}

pub(super) async fn home(signed: Signed) -> Response {
    match home_page(&signed) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => super::views::refusal_page(&signed.stack, &e),
    }
}

// ---- Team -----------------------------------------------------------------

#[derive(Template)]
#[template(path = "dashboard/team.html")]
struct TeamPage {
    shell: Shell,
    frame: Frame,
    csrf: String,
    members: Option<Vec<MemberRow>>,
    members_next: Option<String>,
    invitation: Option<InvitationShown>,
    roles: Vec<&'static str>,
    can_invite: bool,
    can_change: bool,
    can_remove: bool,
}

/// Which of the team page's controls a member gets: exactly the team
/// operations the API's requirements admit them to.
#[derive(Debug, PartialEq, Eq)]
struct TeamControls {
    list: bool,
    invite: bool,
    change: bool,
    remove: bool,
}

impl TeamControls {
    fn of(access: &Requirements, principal: &Principal) -> TeamControls {
        let can = |method: Method, template: &str| access.admits(principal, &method, template).is_ok();
        TeamControls {
            list: can(Method::GET, "/v1/members"),
            invite: can(Method::POST, "/v1/members"),
            change: can(Method::PATCH, "/v1/members/{id}"),
            remove: can(Method::DELETE, "/v1/members/{id}"),
        }
    }
}

struct MemberRow {
    id: String,
    name: String,
    email: String,
    role: &'static str,
    status: String,
}

/// A new member's invitation link, shown once.
struct InvitationShown {
    email: String,
    link: String,
    expires: String,
    sent: &'static str,
}

fn team_page(signed: &Signed, notice: Option<Notice>, invitation: Option<InvitationShown>) -> Response {
    team_page_at(signed, notice, invitation, None)
}

fn team_page_at(
    signed: &Signed,
    notice: Option<Notice>,
    invitation: Option<InvitationShown>,
    cursor: Option<String>,
) -> Response {
    let identity = &signed.stack.identity;
    let controls = TeamControls::of(signed.access(), &signed.principal);
    let (members, members_next) = if controls.list {
        match members::list_members(identity, Some(signed.member()), &at(cursor)) {
            Ok(page) => (
                Some(page.data.iter().map(member_row).collect()),
                next_page(&page, "/dashboard/team", "cursor"),
            ),
            Err(e) => return super::views::refusal_page(&signed.stack, &e),
        }
    } else {
        (None, None)
    };
    let status = status_of(notice.as_ref());
    let page = TeamPage {
        shell: shell(&signed.stack, "Team"),
        frame: frame(signed, "team", notice),
        csrf: signed.csrf(),
        members,
        members_next,
        invitation,
        roles: ROLES.to_vec(),
        can_invite: controls.invite,
        can_change: controls.change,
        can_remove: controls.remove,
    };
    send(status, &page, Vec::new())
}

fn member_row(member: &sika_api::members::Member) -> MemberRow {
    let role = ROLES.into_iter().find(|r| *r == name(&member.role)).unwrap_or("viewer");
    MemberRow {
        id: member.id.clone(),
        name: member.name.clone(),
        email: member.email.clone(),
        role,
        status: name(&member.status),
    }
}

pub(super) async fn team(signed: Signed, Query(paging): Query<Paging>) -> Response {
    team_page_at(&signed, None, None, paging.cursor)
}

fn invite_member(signed: &Signed, fields: &Fields) -> ApiResult<sika_api::members::InvitedMember> {
    signed.admit(&Method::POST, "/v1/members")?;
    let body = wire(
        json!({ "email": fields.text("email"), "name": fields.text("name"), "role": fields.text("role") }),
    )?;
    let stack = &signed.stack;
    members::add_member(
        &stack.identity,
        Some(signed.member()),
        &body,
        stack.now_ms(),
        stack.mailer().as_ref(),
    )
}

/// `POST /v1/members` from the invite form; the link is shown once.
pub(super) async fn invite(Posted { signed, fields }: Posted) -> Response {
    match invite_member(&signed, &fields) {
        Ok(invited) => {
            let base = super::session::public_base(&signed.stack, signed.stack.kind);
            let sent = if signed.stack.mailer().is_some() { "We emailed them an invitation." } else { "" };
            let shown = InvitationShown {
                email: invited.member.email.clone(),
                link: format!("{base}/dashboard/invitations/{}", invited.invitation.token),
                expires: when(&invited.invitation.expires_at),
                sent,
            };
            let notice = Notice::done(format!("Invited {}", invited.member.email));
            team_page(&signed, Some(notice), Some(shown))
        }
        Err(e) => team_page(&signed, Some(Notice::refused(&e)), None),
    }
}

/// `PATCH /v1/members/{id}` from a member's role form.
pub(super) async fn change_role(Path(id): Path<String>, Posted { signed, fields }: Posted) -> Response {
    let result = signed.admit(&Method::PATCH, "/v1/members/{id}").and_then(|()| {
        let role: sika_api::members::Role = wire(json!(fields.text("role")))?;
        members::change_role(&signed.stack.identity, Some(signed.member()), &id, role)
    });
    let notice = Notice::of(&result, |m| format!("{} is now {}", m.email, name(&m.role)));
    team_page(&signed, Some(notice), None)
}

/// `DELETE /v1/members/{id}` from a member's remove button.
pub(super) async fn remove(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let result = signed
        .admit(&Method::DELETE, "/v1/members/{id}")
        .and_then(|()| members::remove_member(&signed.stack.identity, Some(signed.member()), &id));
    let notice = Notice::of(&result, |m| format!("{} was removed", m.email));
    team_page(&signed, Some(notice), None)
}

// ---- Developers -------------------------------------------------------------

#[derive(Template)]
#[template(path = "dashboard/developers.html")]
struct DevelopersPage {
    shell: Shell,
    frame: Frame,
    csrf: String,
    keys: Option<Vec<KeyRow>>,
    keys_next: Option<String>,
    created: Option<CreatedKey>,
    scopes: Vec<String>,
    endpoints: Option<Vec<EndpointRow>>,
    endpoints_next: Option<String>,
    can_create: bool,
    can_revoke: bool,
    /// Test events and re-enabling (`webhooks:write`).
    can_manage_endpoints: bool,
    /// The request log (`GET /v1/requests/{id}`).
    can_look_up_requests: bool,
}

struct KeyRow {
    id: String,
    name: String,
    hint: String,
    scopes: String,
    caps: String,
    addresses: String,
    status: &'static str,
    active: bool,
}

struct CreatedKey {
    name: String,
    secret: String,
}

struct EndpointRow {
    id: String,
    disabled: bool,
    url: String,
    events: String,
    status: String,
}

fn key_row(key: sika_api::keys::ApiKey) -> KeyRow {
    let caps = [
        ("per transaction", &key.caps.per_transaction_usd),
        ("daily", &key.caps.daily_usd),
        ("monthly", &key.caps.monthly_usd),
    ]
    .iter()
    .filter_map(|(label, cap)| cap.as_ref().map(|cap| format!("{label} {}", money("USD", cap))))
    .collect::<Vec<_>>();
    let active = key.revoked_at.is_none();
    KeyRow {
        hint: key.hint,
        scopes: key.scopes.join(", "),
        caps: if caps.is_empty() { "none".into() } else { caps.join("; ") },
        addresses: if key.allowed_ips.is_empty() { "any".into() } else { key.allowed_ips.join(", ") },
        status: if active { "active" } else { "revoked" },
        active,
        id: key.id,
        name: key.name,
    }
}

/// A page of the organization's keys, when the member may list them, and
/// the address of the next.
fn key_rows(signed: &Signed, cursor: Option<String>) -> ApiResult<(Option<Vec<KeyRow>>, Option<String>)> {
    if !signed.can(&Method::GET, "/v1/keys") {
        return Ok((None, None));
    }
    let stack = &signed.stack;
    let page =
        credentials::list(stack.keys(), &stack.identity, stack.kind, Some(signed.member()), &at(cursor))?;
    let next = next_page(&page, "/dashboard/developers", "keys");
    Ok((Some(page.data.into_iter().map(key_row).collect()), next))
}

/// A page of the organization's webhook endpoints, when the member may
/// list them, and the address of the next.
fn endpoint_rows(
    signed: &Signed,
    cursor: Option<String>,
) -> ApiResult<(Option<Vec<EndpointRow>>, Option<String>)> {
    if !signed.can(&Method::GET, "/v1/webhooks/endpoints") {
        return Ok((None, None));
    }
    let organization = &signed.member().organization;
    let page = crate::domain::webhooks::endpoints::list(&signed.stack.lists(), organization, &at(cursor))?;
    let next = next_page(&page, "/dashboard/developers", "endpoints");
    Ok((
        Some(
            page.data
                .into_iter()
                .map(|e| EndpointRow {
                    id: e.id,
                    disabled: name(&e.status) == "disabled",
                    events: e.events.join(", "),
                    status: name(&e.status),
                    url: e.url,
                })
                .collect(),
        ),
        next,
    ))
}

fn developers_page(signed: &Signed, notice: Option<Notice>, created: Option<CreatedKey>) -> Response {
    developers_page_at(signed, notice, created, Paging::default())
}

fn developers_page_at(
    signed: &Signed,
    notice: Option<Notice>,
    created: Option<CreatedKey>,
    paging: Paging,
) -> Response {
    let stack = &signed.stack;
    let read =
        key_rows(signed, paging.keys).and_then(|keys| Ok((keys, endpoint_rows(signed, paging.endpoints)?)));
    let ((keys, keys_next), (endpoints, endpoints_next)) = match read {
        Ok(read) => read,
        Err(e) => return super::views::refusal_page(stack, &e),
    };
    let status = status_of(notice.as_ref());
    let page = DevelopersPage {
        shell: shell(stack, "Developers"),
        frame: frame(signed, "developers", notice),
        csrf: signed.csrf(),
        keys,
        keys_next,
        created,
        scopes: sika_api::keys::scope_names(),
        endpoints,
        endpoints_next,
        can_create: signed.can(&Method::POST, "/v1/keys"),
        can_revoke: signed.can(&Method::DELETE, "/v1/keys/{id}"),
        can_manage_endpoints: signed.can(&Method::POST, "/v1/webhooks/endpoints/{id}/test"),
        can_look_up_requests: signed.can(&Method::GET, "/v1/requests/{id}"),
    };
    send(status, &page, Vec::new())
}

pub(super) async fn developers(signed: Signed, Query(paging): Query<Paging>) -> Response {
    developers_page_at(&signed, None, None, paging)
}

/// The create-key form as the API's `CreateApiKey`.
fn key_request(fields: &Fields) -> Value {
    let allowed: Vec<String> = fields
        .text("allowedIps")
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut caps = Map::new();
    for cap in ["perTransactionUsd", "dailyUsd", "monthlyUsd"] {
        let value = fields.text(cap);
        if !value.is_empty() {
            caps.insert(cap.to_string(), Value::String(value));
        }
    }
    let mut body =
        json!({ "name": fields.text("name"), "scopes": fields.all("scopes"), "allowedIps": allowed });
    if !caps.is_empty() {
        body["caps"] = Value::Object(caps);
    }
    body
}

/// `POST /v1/keys` from the form; the secret is shown this once.
pub(super) async fn create_key(Posted { signed, fields }: Posted) -> Response {
    let stack = &signed.stack;
    let created = match signed.admit(&Method::POST, "/v1/keys").and_then(|()| wire(key_request(&fields))) {
        Ok(request) => {
            credentials::create(&stack.engine, stack.keys(), stack.kind, Some(signed.member()), request).await
        }
        Err(e) => Err(e),
    };
    match created {
        Ok(created) => {
            let notice = Notice::done(format!("Created the key {}", created.key.name));
            let shown = CreatedKey { name: created.key.name, secret: created.secret };
            developers_page(&signed, Some(notice), Some(shown))
        }
        Err(e) => developers_page(&signed, Some(Notice::refused(&e)), None),
    }
}

/// `DELETE /v1/keys/{id}` from a key's revoke button.
pub(super) async fn revoke_key(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let stack = &signed.stack;
    let result = match signed.admit(&Method::DELETE, "/v1/keys/{id}") {
        Ok(()) => credentials::revoke(&stack.engine, stack.keys(), Some(signed.member()), &id).await,
        Err(e) => Err(e),
    };
    let notice = Notice::of(&result, |key| format!("Revoked the key {}", key.name));
    developers_page(&signed, Some(notice), None)
}

/// The caller's endpoint `id`, or the API's 404.
fn endpoint(signed: &Signed, id: &str) -> ApiResult<(Endpoint, Health)> {
    let snapshot = signed.stack.engine.read()?;
    crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, id)
}

/// `POST /v1/webhooks/endpoints/{id}/test` from an endpoint's button.
pub(super) async fn test_endpoint(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let result = match signed
        .admit(&Method::POST, "/v1/webhooks/endpoints/{id}/test")
        .and_then(|()| endpoint(&signed, &id))
    {
        Ok(record) => {
            crate::domain::webhooks::endpoints::send_test(&signed.stack.webhook_deps(), record).await
        }
        Err(e) => Err(e),
    };
    let notice = Notice::of(&result, |_| "A test event is on its way".into());
    developers_page(&signed, Some(notice), None)
}

/// `PATCH /v1/webhooks/endpoints/{id}` `{status: active}` from a disabled
/// endpoint's button.
pub(super) async fn enable_endpoint(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let loaded = signed
        .admit(&Method::PATCH, "/v1/webhooks/endpoints/{id}")
        .and_then(|()| Ok((endpoint(&signed, &id)?, wire(json!({ "status": "active" }))?)));
    let result = match loaded {
        Ok((record, request)) => {
            crate::domain::webhooks::endpoints::update(&signed.stack.webhook_deps(), record, request).await
        }
        Err(e) => Err(e),
    };
    let notice = Notice::of(&result, |e| format!("{} is active again", e.url));
    developers_page(&signed, Some(notice), None)
}

// ---- Settings ---------------------------------------------------------------

#[derive(Template)]
#[template(path = "dashboard/settings.html")]
struct SettingsPage {
    shell: Shell,
    frame: Frame,
    csrf: String,
    totp_enabled: bool,
    enrolment: Option<Enrolment>,
    recovery_codes: Option<Vec<String>>,
    representative: Option<sika_api::representative::Representative>,
    can_set_representative: bool,
    form: RepresentativeForm,
}

struct Enrolment {
    secret: String,
    qr_data_url: String,
}

#[derive(Default)]
struct RepresentativeForm {
    full_name: String,
    phone: String,
    id_number: String,
    country: String,
}

/// What the settings page shows beside its usual content: an enrolment
/// under way or the recovery codes just made.
#[derive(Default)]
struct Shown {
    enrolment: Option<Enrolment>,
    recovery_codes: Option<Vec<String>>,
}

fn settings_page(signed: &Signed, notice: Option<Notice>, shown: Shown) -> Response {
    let stack = &signed.stack;
    let representative = if signed.can(&Method::GET, "/v1/organization/representative") {
        representative::get(&stack.engine, &signed.member().organization).ok()
    } else {
        None
    };
    let form = representative.as_ref().map_or_else(RepresentativeForm::default, |r| RepresentativeForm {
        full_name: r.full_name.clone(),
        phone: r.phone.clone(),
        id_number: r.id_number.clone(),
        country: r.country.clone(),
    });
    let status = status_of(notice.as_ref());
    let page = SettingsPage {
        shell: shell(stack, "Settings"),
        frame: frame(signed, "settings", notice),
        csrf: signed.csrf(),
        totp_enabled: totp::status(&stack.identity, signed.member()).enabled,
        enrolment: shown.enrolment,
        recovery_codes: shown.recovery_codes,
        representative,
        can_set_representative: signed.can(&Method::PUT, "/v1/organization/representative"),
        form,
    };
    send(status, &page, Vec::new())
}

pub(super) async fn settings(signed: Signed) -> Response {
    settings_page(&signed, None, Shown::default())
}

/// `POST /v1/members/me/totp`: the secret, as a QR code and as text.
pub(super) async fn totp_start(Posted { signed, .. }: Posted) -> Response {
    let stack = &signed.stack;
    let result = signed
        .admit(&Method::POST, "/v1/members/me/totp")
        .and_then(|()| totp::enrol(&stack.identity, signed.member(), stack.now_ms()));
    match result {
        Ok(enrolment) => {
            let qr = crate::http::pages::qr_svg(&enrolment.otpauth_url).unwrap_or_default();
            let qr_data_url = format!(
                "data:image/svg+xml;base64,{}",
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, qr)
            );
            let shown = Shown {
                enrolment: Some(Enrolment { secret: enrolment.secret, qr_data_url }),
                ..Shown::default()
            };
            settings_page(&signed, None, shown)
        }
        Err(e) => settings_page(&signed, Some(Notice::refused(&e)), Shown::default()),
    }
}

/// `POST /v1/members/me/totp/confirm`: on, and the recovery codes once.
pub(super) async fn totp_confirm(Posted { signed, fields }: Posted) -> Response {
    let stack = &signed.stack;
    let result = signed
        .admit(&Method::POST, "/v1/members/me/totp/confirm")
        .and_then(|()| totp::confirm(&stack.identity, signed.member(), &fields.text("code"), stack.now_ms()));
    match result {
        Ok(codes) => {
            let shown = Shown { recovery_codes: Some(codes.recovery_codes), ..Shown::default() };
            settings_page(&signed, Some(Notice::done("Two-factor sign-in is on")), shown)
        }
        Err(e) => settings_page(&signed, Some(Notice::refused(&e)), Shown::default()),
    }
}

/// `DELETE /v1/members/me/totp`.
pub(super) async fn totp_disable(Posted { signed, fields }: Posted) -> Response {
    let stack = &signed.stack;
    let result = signed
        .admit(&Method::DELETE, "/v1/members/me/totp")
        .and_then(|()| totp::disable(&stack.identity, signed.member(), &fields.text("code"), stack.now_ms()));
    let notice = Notice::of(&result, |_| "Two-factor sign-in is off".into());
    settings_page(&signed, Some(notice), Shown::default())
}

/// `PUT /v1/organization/representative` from the form.
pub(super) async fn set_representative(Posted { signed, fields }: Posted) -> Response {
    let stack = &signed.stack;
    let body = json!({
        "fullName": fields.text("fullName"),
        "phone": fields.text("phone"),
        "idNumber": fields.text("idNumber"),
        "country": fields.text("country"),
    });
    let result = match signed.admit(&Method::PUT, "/v1/organization/representative").and_then(|()| wire(body))
    {
        Ok(request) => {
            representative::set(&stack.engine, Some(signed.member()), &signed.member().organization, request)
                .await
        }
        Err(e) => Err(e),
    };
    let notice = Notice::of(&result, |r| format!("The representative is now {}", r.full_name));
    settings_page(&signed, Some(notice), Shown::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::identity::{Member, Role};

    fn session(role: Role) -> Principal {
        Principal::Session(Member {
            id: "mem_1".into(),
            organization: "org_1".into(),
            name: "Ama".into(),
            email: "ama@example.com".into(),
            role,
            created_at: 0,
            password_hash: None,
        })
    }

    /// Who may invite is stated once, in `POST /v1/members`'s `security`
    /// (the generated OpenAPI document). Changing it there, and nowhere
    /// else, changes both the API's answer and the dashboard's controls:
    /// taking the permission from admins refuses an admin's call and hides
    /// the admin's invite form, while owners keep both.
    #[test]
    fn a_permission_changed_in_one_place_changes_the_api_and_the_dashboard() {
        let (_, document) = crate::http::routes::authenticated().split_for_parts();
        let mut json = serde_json::to_value(&document).unwrap();
        let standard = Requirements::from_document(&document).unwrap();
        let (admin, owner, viewer) = (session(Role::Admin), session(Role::Owner), session(Role::Viewer));
        assert!(standard.admits(&admin, &Method::POST, "/v1/members").is_ok());
        assert!(TeamControls::of(&standard, &admin).invite);
        let nothing = TeamControls { list: false, invite: false, change: false, remove: false };
        assert_eq!(TeamControls::of(&standard, &viewer), nothing);

        json["paths"]["/v1/members"]["post"]["security"] = json!([{ "bearer": ["session:owner"] }]);
        let changed = Requirements::from_json(&json).unwrap();
        let refused = changed.admits(&admin, &Method::POST, "/v1/members").unwrap_err();
        assert_eq!(refused.code, sika_api::ErrorCode::Forbidden);
        let controls = TeamControls::of(&changed, &admin);
        assert!(!controls.invite, "the admin's invite form goes with the API's permission");
        assert!(controls.list && controls.change && controls.remove, "the rest is unchanged: {controls:?}");
        assert!(changed.admits(&owner, &Method::POST, "/v1/members").is_ok());
        assert!(TeamControls::of(&changed, &owner).invite);
    }
}
