//! Organizations' team members and their sessions: who may do what to
//! whom. Invitations and passwords (argon2id), log-in with one answer for
//! every wrong credential, brute-force throttling, and the rule that an
//! organization always keeps an owner. Stored by `domain::identity`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use sika_api::admin::{CreateOrganization, RenameOrganization};
use sika_api::members::{
    self as wire, CreateMember, CreateSession, MemberStatus, PasswordResetAccepted, PasswordResetRequest,
};

use crate::domain::emails::{self, Mailer, Queue};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{
    Change, INVITATION_TTL_MS, Identity, Invitation, Member, Organization, PasswordReset, Role, Session,
    hash_secret, new_organization, secret_token,
};
use crate::domain::passwords::{Permit, decoy_hash};
use crate::domain::ratelimit::FailureThrottle;
use crate::domain::render::timestamp;

pub(crate) const PASSWORD_CHARS_MIN: usize = 12;
pub(crate) const PASSWORD_CHARS_MAX: usize = 128;
const NAME_CHARS_MAX: usize = 255;
const EMAIL_CHARS_MAX: usize = 254;
/// A team is listed in one page, so it has a bound.
pub(crate) const MEMBERS_PER_ORGANIZATION_MAX: usize = 1000;

/// The one answer to any wrong credential, so a caller learns nothing of
/// which part was wrong.
const WRONG_CREDENTIALS: &str = "wrong email, password or invitation";

impl From<String> for ApiError {
    /// A failure of the identity database, located where `?` met it.
    #[track_caller]
    fn from(e: String) -> ApiError {
        tracing::error!(error = %e, "cannot write the identity database");
        ApiError::internal_from(e)
    }
}

pub(crate) fn role_from_wire(role: wire::Role) -> Role {
    match role {
        wire::Role::Owner => Role::Owner,
        wire::Role::Admin => Role::Admin,
        wire::Role::Developer => Role::Developer,
        wire::Role::Viewer => Role::Viewer,
    }
}

fn role_to_wire(role: Role) -> wire::Role {
    match role {
        Role::Owner => wire::Role::Owner,
        Role::Admin => wire::Role::Admin,
        Role::Developer => wire::Role::Developer,
        Role::Viewer => wire::Role::Viewer,
    }
}

pub(crate) fn render_member(member: &Member) -> wire::Member {
    wire::Member {
        id: member.id.clone(),
        email: member.email.clone(),
        name: member.name.clone(),
        role: role_to_wire(member.role),
        organization_id: member.organization.clone(),
        status: if member.password_hash.is_some() { MemberStatus::Active } else { MemberStatus::Invited },
        created_at: timestamp(member.created_at),
    }
}

pub(crate) fn render_session(member: &Member, token: String, session: &Session) -> wire::Session {
    wire::Session {
        token,
        expires_at: timestamp(session.expires_at),
        member: wire::SessionMember {
            id: member.id.clone(),
            email: member.email.clone(),
            name: member.name.clone(),
            role: role_to_wire(member.role),
            organization_id: member.organization.clone(),
        },
    }
}

fn render_invitation(token: String, invitation: &Invitation) -> wire::Invitation {
    wire::Invitation { token, expires_at: timestamp(invitation.expires_at) }
}

/// An email trimmed and in lower case, or `400` naming `field`.
pub(crate) fn normalise_email(field: &str, email: &str) -> ApiResult<String> {
    let email = email.trim().to_lowercase();
    let valid = email.chars().count() <= EMAIL_CHARS_MAX
        && !email.chars().any(char::is_whitespace)
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty() && !domain.contains('@'));
    if valid {
        Ok(email)
    } else {
        Err(ApiError::validation(field, "must be an email address like ada@example.com"))
    }
}

/// A name of 1 to 255 characters, trimmed, or `400` naming `field`.
pub(crate) fn check_name(field: &str, name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > NAME_CHARS_MAX || name.chars().any(char::is_control) {
        return Err(ApiError::validation(field, format!("must be 1 to {NAME_CHARS_MAX} characters")));
    }
    Ok(name.to_string())
}

fn check_password(password: &str) -> ApiResult<()> {
    let chars = password.chars().count();
    if (PASSWORD_CHARS_MIN..=PASSWORD_CHARS_MAX).contains(&chars) {
        Ok(())
    } else {
        Err(ApiError::validation(
            "password",
            format!("must be {PASSWORD_CHARS_MIN} to {PASSWORD_CHARS_MAX} characters"),
        ))
    }
}

/// A fresh invitation for `member`; earlier ones are deleted. With
/// `mailer`, its email is queued in the same change as the token.
fn invite(
    identity: &Identity,
    member: &Member,
    organization_name: &str,
    now: i64,
    mailer: Option<&Mailer<'_>>,
) -> ApiResult<(Vec<Change>, String, Invitation)> {
    let (token, invitation) = Invitation::issue(&member.id, now, INVITATION_TTL_MS);
    let mut changes: Vec<Change> =
        identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation).collect();
    changes.push(Change::PutInvitation(invitation.clone()));
    if let Some(mailer) = mailer {
        let mut queue = Queue::new(identity, mailer.config, now)?;
        queue.push(emails::messages::invitation(
            organization_name,
            &mailer.base,
            member,
            &token,
            invitation.expires_at,
        ))?;
        changes.extend(queue.into_changes());
    }
    Ok((changes, token, invitation))
}

/// A new session for `member`; sessions that have ended are deleted.
fn open_session(
    identity: &Identity,
    member: &Member,
    now: i64,
    ttl_ms: i64,
) -> (Vec<Change>, String, Session) {
    let (token, session) = Session::issue(&member.id, now, ttl_ms);
    let mut changes: Vec<Change> =
        identity.expired_sessions(now).into_iter().map(Change::DeleteSession).collect();
    changes.push(Change::PutSession(session.clone()));
    (changes, token, session)
}

/// `POST /admin/v1/organizations`: the organization, its owner and the
/// owner's invitation.
pub(crate) fn create_organization(
    identity: &Identity,
    body: &CreateOrganization,
    now: i64,
    mailer: Option<&Mailer<'_>>,
) -> ApiResult<(Organization, wire::Invitation)> {
    let name = check_name("name", &body.name)?;
    let owner_name = check_name("owner.name", &body.owner.name)?;
    let owner_email = normalise_email("owner.email", &body.owner.email)?;
    identity.change(|identity| {
        let (organization, member) = new_organization(&name, &owner_name, &owner_email, now);
        let (mut changes, token, invitation) = invite(identity, &member, &organization.name, now, mailer)?;
        changes.insert(0, Change::PutOrganization(organization.clone()));
        changes.insert(1, Change::PutMember(member));
        Ok((changes, (organization, render_invitation(token, &invitation))))
    })
}

pub(crate) fn rename_organization(
    identity: &Identity,
    id: &str,
    body: &RenameOrganization,
) -> ApiResult<Organization> {
    let name = check_name("name", &body.name)?;
    identity.change(|identity| {
        let mut organization = identity
            .organization(id)
            .ok_or_else(|| ApiError::not_found(format!("organization '{id}' not found")))?;
        organization.name = name;
        Ok((vec![Change::PutOrganization(organization.clone())], organization))
    })
}

/// A fresh invitation for a member of `organization` (account recovery).
pub(crate) fn reissue_invitation(
    identity: &Identity,
    organization: &str,
    member_id: &str,
    now: i64,
    mailer: Option<&Mailer<'_>>,
) -> ApiResult<(Member, wire::Invitation)> {
    identity.change(|identity| {
        let found = identity
            .organization(organization)
            .ok_or_else(|| ApiError::not_found(format!("organization '{organization}' not found")))?;
        let member = identity
            .member(member_id)
            .filter(|m| m.organization == organization)
            .ok_or_else(|| ApiError::not_found(format!("member '{member_id}' not found")))?;
        let (changes, token, invitation) = invite(identity, &member, &found.name, now, mailer)?;
        Ok((changes, (member, render_invitation(token, &invitation))))
    })
}

/// What `POST /v1/sessions` was asked to do.
enum Credentials {
    Invitation { token: String, password: String },
    Reset { token: String, password: String, second: SecondFactor },
    Password { email: String, password: String, organization: Option<String>, second: SecondFactor },
}

/// The code or recovery code a log-in or reset brings for two-factor
/// sign-in (`domain::totp`).
#[derive(Default)]
struct SecondFactor {
    code: Option<String>,
    recovery_code: Option<String>,
}

fn credentials(body: CreateSession) -> ApiResult<Credentials> {
    let password = body.password.ok_or_else(|| ApiError::validation("password", "is required"))?;
    let second = SecondFactor { code: body.code, recovery_code: body.recovery_code };
    if second.code.is_some() && second.recovery_code.is_some() {
        return Err(ApiError::validation("recoveryCode", "send either code or recoveryCode, not both"));
    }
    if let Some(token) = body.reset {
        if body.invitation.is_some() || body.email.is_some() || body.organization_id.is_some() {
            return Err(ApiError::validation("reset", "goes with password alone"));
        }
        check_password(&password)?;
        return Ok(Credentials::Reset { token, password, second });
    }
    match (body.invitation, body.email) {
        (Some(token), None) => {
            if body.organization_id.is_some() {
                return Err(ApiError::validation("organizationId", "goes with email, not invitation"));
            }
            if second.code.is_some() || second.recovery_code.is_some() {
                return Err(ApiError::validation("code", "goes with email or reset, not invitation"));
            }
            check_password(&password)?;
            Ok(Credentials::Invitation { token, password })
        }
        (None, Some(email)) => Ok(Credentials::Password {
            email: email.trim().to_lowercase(),
            password,
            organization: body.organization_id,
            second,
        }),
        (Some(_), Some(_)) => Err(ApiError::validation("email", "send either invitation or email, not both")),
        (None, None) => Err(ApiError::validation("email", "is required (or an invitation to accept)")),
    }
}

/// The email a session request names, for the throttle.
fn attempted_email(body: &CreateSession) -> Option<String> {
    body.email.as_ref().map(|e| e.trim().to_lowercase())
}

/// `POST /v1/sessions` from the address `ip`: accepts an invitation or
/// checks a password, and opens a session. Any wrong credential is the same
/// `401`. The attempt is counted against the address and the email before
/// any password is hashed (`429` with `retryAfter` once either has had its
/// failures), and the hashing waits for nothing: when the node's password
/// checks are all busy, the attempt is `429` at once and does not count.
/// The hashing (argon2id, slow on purpose) runs off the async workers, and
/// runs to its end even if the caller goes away, so its outcome is counted.
pub(crate) async fn create_session(
    identity: Arc<Identity>,
    ip: Option<IpAddr>,
    body: CreateSession,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let keys = FailureThrottle::login_keys(ip, attempted_email(&body).as_deref());
    let attempt = identity.logins.begin(keys, Instant::now()).map_err(|wait| {
        ApiError::new(sika_api::ErrorCode::RateLimited, "too many failed attempts; wait before trying again")
            .with_detail("retryAfter", wait)
    })?;
    let Some(mut permit) = identity.passwords.try_permit() else {
        identity.logins.forgive(attempt);
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            "the node is checking as many passwords as it can at once; retry in a moment",
        )
        .with_detail("retryAfter", 1));
    };
    let checking = identity.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let result = check_and_open(&checking, &mut permit, body, now, ttl_ms);
        // A right password that still needs its code is not a failure.
        let failed = matches!(&result, Err(e) if e.code == sika_api::ErrorCode::Unauthorized
            && e.details.as_ref().is_none_or(|d| d["reason"] != crate::domain::totp::REASON_REQUIRED));
        if !failed {
            checking.logins.forgive(attempt);
        }
        result
    });
    checked.await.unwrap_or_else(|e| Err(ApiError::internal_from(e)))
}

/// Accepts an invitation or checks a password, with `permit`'s memory.
fn check_and_open(
    identity: &Identity,
    permit: &mut Permit,
    body: CreateSession,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    match credentials(body)? {
        Credentials::Invitation { token, password } => {
            accept_invitation(identity, permit, &token, &password, now, ttl_ms)
        }
        Credentials::Reset { token, password, second } => {
            use_reset(identity, permit, &token, &password, &second, now, ttl_ms)
        }
        Credentials::Password { email, password, organization, second } => {
            let found = LogIn { email: &email, password: &password, organization: organization.as_deref() };
            log_in(identity, permit, found, &second, now, ttl_ms)
        }
    }
}

fn accept_invitation(
    identity: &Identity,
    permit: &mut Permit,
    token: &str,
    password: &str,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let wrong = || ApiError::unauthorized(WRONG_CREDENTIALS);
    if !token.starts_with("inv_") {
        return Err(wrong());
    }
    let hash = permit.hash(password)?;
    identity.change(|identity| {
        let invitation = identity.invitation(token, now).ok_or_else(wrong)?;
        let mut member = identity.member(&invitation.member_id).ok_or_else(wrong)?;
        member.password_hash = Some(hash);
        let (mut changes, token, session) = open_session(identity, &member, now, ttl_ms);
        // Setting a password ends every session opened with the old one.
        changes.extend(identity.sessions_of(&member.id).into_iter().map(Change::DeleteSession));
        changes.extend(identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation));
        // An invitation to an existing member is the operator's account
        // recovery: it also clears a lost authenticator.
        if identity.totp(&member.id).is_some() {
            changes.push(Change::DeleteTotp(member.id.clone()));
        }
        changes.push(Change::PutMember(member.clone()));
        Ok((changes, render_session(&member, token, &session)))
    })
}

/// Sets a new password with a reset token (`rst_…`), once: the token,
/// the member's other resets, invitations and sessions all end.
fn use_reset(
    identity: &Identity,
    permit: &mut Permit,
    token: &str,
    password: &str,
    second: &SecondFactor,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let wrong = || ApiError::unauthorized(WRONG_CREDENTIALS);
    if !token.starts_with("rst_") {
        return Err(wrong());
    }
    let hash = permit.hash(password)?;
    identity.change(|identity| {
        let reset = identity.reset(token, now).ok_or_else(wrong)?;
        let mut member = identity.member(&reset.member_id).ok_or_else(wrong)?;
        // An emailed link alone does not get past two-factor sign-in.
        let spent = crate::domain::totp::second_factor(
            identity,
            &member.id,
            second.code.as_deref(),
            second.recovery_code.as_deref(),
            now,
        )?;
        member.password_hash = Some(hash);
        let (mut changes, token, session) = open_session(identity, &member, now, ttl_ms);
        changes.extend(spent);
        changes.extend(identity.sessions_of(&member.id).into_iter().map(Change::DeleteSession));
        changes.extend(identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation));
        changes.extend(identity.resets_of(&member.id, now).into_iter().map(Change::DeleteReset));
        changes.push(Change::PutMember(member.clone()));
        Ok((changes, render_session(&member, token, &session)))
    })
}

/// How long a password reset works, before `--time-scale`.
pub(crate) const RESET_TTL_MS: i64 = 3_600_000;

/// A reset's lifetime on a node running at `time_scale`, like every
/// deadline.
pub(crate) fn reset_ttl_ms(time_scale: f64) -> i64 {
    #[expect(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let scaled = (RESET_TTL_MS as f64 * time_scale).round() as i64;
    scaled.max(1)
}

/// `POST /v1/sessions/password-reset`: the same answer, and the same
/// work, whether or not the email is a member's. Each membership of a
/// known email gets a reset token (`rst_…`, good for `ttl_ms`, once) by
/// email, written with its email in one change; for an unknown email a
/// reset that has already expired is written the same way, so both take
/// one identity write and one rendering. Without `[email]` nothing is
/// issued (no one could receive it).
pub(crate) fn request_password_reset(
    identity: &Identity,
    mailer: Option<&Mailer<'_>>,
    body: &PasswordResetRequest,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<PasswordResetAccepted> {
    let email = normalise_email("email", &body.email)?;
    let accepted = || PasswordResetAccepted { status: "accepted".into() };
    let Some(mailer) = mailer else { return Ok(accepted()) };
    identity.change(|identity| {
        let members = identity.members_by_email(&email);
        let mut changes: Vec<Change> = Vec::new();
        let mut queue = Queue::new(identity, mailer.config, now)?;
        let mut expired: Vec<[u8; 32]> = Vec::new();
        if members.is_empty() {
            let token = secret_token("rst_");
            let decoy = Member { id: String::new(), email: email.clone(), ..decoy_member(now) };
            // Rendered and dropped: the same work as a known email's.
            let _ = emails::messages::password_reset(&mailer.base, &decoy, &token, now);
            expired.extend(identity.resets_of("", now));
            changes.push(Change::PutReset(PasswordReset {
                token_hash: hash_secret(&token),
                member_id: String::new(),
                created_at: now,
                expires_at: now,
            }));
        }
        for member in members {
            let token = secret_token("rst_");
            let reset = PasswordReset {
                token_hash: hash_secret(&token),
                member_id: member.id.clone(),
                created_at: now,
                expires_at: now.saturating_add(ttl_ms),
            };
            expired.extend(identity.resets_of(&member.id, now));
            queue.push(emails::messages::password_reset(&mailer.base, &member, &token, reset.expires_at))?;
            changes.push(Change::PutReset(reset));
        }
        expired.sort_unstable();
        expired.dedup();
        let mut all: Vec<Change> = expired.into_iter().map(Change::DeleteReset).collect();
        all.extend(changes);
        all.extend(queue.into_changes());
        Ok((all, accepted()))
    })
}

fn decoy_member(now: i64) -> Member {
    Member {
        id: String::new(),
        organization: String::new(),
        name: "there".into(),
        email: String::new(),
        role: Role::Viewer,
        created_at: now,
        password_hash: None,
    }
}

/// Checks `password` exactly once, whatever the email, so the time a wrong
/// password takes says nothing of the email: against the member of
/// `organization` with this email; without `organization`, against the
/// email's first membership that has a password (each membership keeps its
/// own password, and an email in several organizations must name the one
/// it logs in to); and against a decoy when there is no such member.
/// The password half of a log-in.
struct LogIn<'a> {
    email: &'a str,
    password: &'a str,
    organization: Option<&'a str>,
}

fn log_in(
    identity: &Identity,
    permit: &mut Permit,
    LogIn { email, password, organization }: LogIn<'_>,
    second: &SecondFactor,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let memberships: Vec<Member> = identity
        .members_by_email(email)
        .into_iter()
        .filter(|m| organization.is_none_or(|o| m.organization == o) && m.password_hash.is_some())
        .collect();
    // Oldest first: the first membership is the one checked.
    let candidate = memberships.first();
    let hash = candidate.and_then(|m| m.password_hash.as_deref()).unwrap_or(decoy_hash());
    let matched = permit.verify(hash, password);
    let Some(member) = candidate.filter(|_| matched) else {
        return Err(ApiError::unauthorized(WRONG_CREDENTIALS));
    };
    if memberships.len() > 1 {
        return Err(ApiError::validation(
            "organizationId",
            "this email is a member of several organizations; name the one to log in to",
        ));
    }
    identity.change(|identity| {
        // The member may have been removed while the password was checked.
        let member = identity.member(&member.id).ok_or_else(|| ApiError::unauthorized(WRONG_CREDENTIALS))?;
        let spent = crate::domain::totp::second_factor(
            identity,
            &member.id,
            second.code.as_deref(),
            second.recovery_code.as_deref(),
            now,
        )?;
        let (mut changes, token, session) = open_session(identity, &member, now, ttl_ms);
        changes.extend(spent);
        Ok((changes, render_session(&member, token, &session)))
    })
}

/// `DELETE /v1/sessions/current`.
pub(crate) fn end_session(
    identity: &Identity,
    member: &Member,
    session: &Session,
    now: i64,
) -> ApiResult<wire::EndedSession> {
    identity.change(|_| Ok::<_, ApiError>((vec![Change::DeleteSession(session.token_hash)], ())))?;
    let member = render_session(member, String::new(), session).member;
    Ok(wire::EndedSession { ended_at: timestamp(now), member })
}

/// `403` unless `actor` may manage members (an owner or an admin).
fn manager(actor: Option<&Member>) -> ApiResult<&Member> {
    crate::domain::credentials::require_owner_or_admin(actor)
}

fn owners_left(identity: &Identity, organization: &str, without: &str) -> usize {
    identity.members_of(organization).iter().filter(|m| m.role == Role::Owner && m.id != without).count()
}

fn member_of(identity: &Identity, organization: &str, id: &str) -> ApiResult<Member> {
    identity
        .member(id)
        .filter(|m| m.organization == organization)
        .ok_or_else(|| ApiError::not_found(format!("member '{id}' not found")))
}

fn only_owners_touch_owners(actor: &Member, what: &str) -> ApiResult<()> {
    if actor.role == Role::Owner {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("only an owner may {what}")))
    }
}

fn keep_an_owner() -> ApiError {
    ApiError::new(sika_api::ErrorCode::InvalidState, "an organization keeps at least one owner")
}

pub(crate) fn list_members(
    identity: &Identity,
    actor: Option<&Member>,
    query: &sika_api::ListQuery,
) -> ApiResult<sika_api::ListPage<wire::Member>> {
    let actor = manager(actor)?;
    let data = identity.members_of(&actor.organization).iter().map(render_member).collect();
    let scope = format!("{}/members", actor.organization);
    crate::domain::pagination::page_of_items(data, query, &identity.secret(), &scope)
}

/// The operator's list of any organization's members.
pub(crate) fn members_of_organization(
    identity: &Identity,
    organization: &str,
) -> ApiResult<Vec<wire::Member>> {
    if identity.organization(organization).is_none() {
        return Err(ApiError::not_found(format!("organization '{organization}' not found")));
    }
    Ok(identity.members_of(organization).iter().map(render_member).collect())
}

/// `POST /v1/members`: the member and their invitation.
pub(crate) fn add_member(
    identity: &Identity,
    actor: Option<&Member>,
    body: &CreateMember,
    now: i64,
    mailer: Option<&Mailer<'_>>,
) -> ApiResult<wire::InvitedMember> {
    let actor = manager(actor)?;
    let email = normalise_email("email", &body.email)?;
    let name = check_name("name", &body.name)?;
    let role = role_from_wire(body.role);
    if role == Role::Owner {
        only_owners_touch_owners(actor, "make an owner")?;
    }
    identity.change(|identity| {
        let team = identity.members_of(&actor.organization);
        if team.len() >= MEMBERS_PER_ORGANIZATION_MAX {
            return Err(ApiError::new(
                sika_api::ErrorCode::InvalidState,
                format!("an organization has at most {MEMBERS_PER_ORGANIZATION_MAX} members"),
            ));
        }
        if team.iter().any(|m| m.email == email) {
            return Err(ApiError::new(
                sika_api::ErrorCode::Conflict,
                "a member of this organization has this email",
            )
            .with_detail("field", "email"));
        }
        let member = Member {
            id: sika_engine::ids::new_id("mem"),
            organization: actor.organization.clone(),
            name,
            email,
            role,
            created_at: now,
            password_hash: None,
        };
        let organization_name =
            identity.organization(&member.organization).map(|o| o.name).unwrap_or_default();
        let (mut changes, token, invitation) = invite(identity, &member, &organization_name, now, mailer)?;
        changes.insert(0, Change::PutMember(member.clone()));
        let invited = wire::InvitedMember {
            member: render_member(&member),
            invitation: render_invitation(token, &invitation),
        };
        Ok((changes, invited))
    })
}

/// `PATCH /v1/members/{id}`: a new role.
pub(crate) fn change_role(
    identity: &Identity,
    actor: Option<&Member>,
    id: &str,
    role: wire::Role,
) -> ApiResult<wire::Member> {
    let actor = manager(actor)?;
    let role = role_from_wire(role);
    identity.change(|identity| {
        let mut member = member_of(identity, &actor.organization, id)?;
        if member.role == Role::Owner || role == Role::Owner {
            only_owners_touch_owners(actor, "make or change an owner")?;
        }
        if member.role == Role::Owner
            && role != Role::Owner
            && owners_left(identity, &member.organization, &member.id) == 0
        {
            return Err(keep_an_owner());
        }
        member.role = role;
        Ok((vec![Change::PutMember(member.clone())], render_member(&member)))
    })
}

/// `DELETE /v1/members/{id}`: the member goes, with their sessions and invitations.
pub(crate) fn remove_member(
    identity: &Identity,
    actor: Option<&Member>,
    id: &str,
) -> ApiResult<wire::Member> {
    let actor = manager(actor)?;
    identity.change(|identity| {
        let member = member_of(identity, &actor.organization, id)?;
        if member.role == Role::Owner {
            only_owners_touch_owners(actor, "remove an owner")?;
            if owners_left(identity, &member.organization, &member.id) == 0 {
                return Err(keep_an_owner());
            }
        }
        let mut changes: Vec<Change> =
            identity.sessions_of(&member.id).into_iter().map(Change::DeleteSession).collect();
        changes.extend(identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation));
        if identity.totp(&member.id).is_some() {
            changes.push(Change::DeleteTotp(member.id.clone()));
        }
        changes.push(Change::DeleteMember(member.id.clone()));
        Ok((changes, render_member(&member)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sika_api::admin::NewOwner;

    const PASSWORD: &str = "correct horse battery";
    const NOW: i64 = 1_700_000_000_000;
    const TTL_MS: i64 = 3_600_000;

    fn identity() -> (tempfile::TempDir, Identity) {
        let dir = tempfile::tempdir().unwrap();
        let identity = Identity::open(dir.path(), None).unwrap();
        (dir, identity)
    }

    /// A new organization whose owner, `email`, sets `password`; its id.
    fn organization(identity: &Identity, email: &str, password: &str) -> String {
        let body = CreateOrganization {
            name: format!("Org of {email}"),
            owner: NewOwner { email: email.to_string(), name: "Ama".to_string() },
        };
        let (organization, invitation) = create_organization(identity, &body, NOW, None).unwrap();
        let mut permit = identity.passwords.try_permit().unwrap();
        let accept = CreateSession {
            invitation: Some(invitation.token),
            password: Some(password.to_string()),
            ..CreateSession::default()
        };
        check_and_open(identity, &mut permit, accept, NOW, TTL_MS).unwrap();
        organization.id
    }

    fn log_in_as(
        identity: &Identity,
        email: &str,
        password: &str,
        org: Option<&str>,
    ) -> ApiResult<wire::Session> {
        let body = CreateSession {
            email: Some(email.to_string()),
            password: Some(password.to_string()),
            organization_id: org.map(str::to_string),
            ..CreateSession::default()
        };
        check_and_open(identity, &mut identity.passwords.try_permit().unwrap(), body, NOW, TTL_MS)
    }

    /// Issue 29.3: a wrong password took one argon2 check for an unknown
    /// email or one membership and one per membership for an email in
    /// several organizations, so its time told which. Now every attempt
    /// computes exactly one hash, whatever the email.
    #[test]
    fn a_wrong_password_costs_one_check_whatever_the_email() {
        let (_dir, identity) = identity();
        organization(&identity, "one@example.com", PASSWORD);
        let orgs: Vec<String> = ["first pass phrase", PASSWORD, "third pass phrase"]
            .iter()
            .map(|password| organization(&identity, "many@example.com", password))
            .collect();
        // Invited, never accepted: no password yet.
        let body = CreateOrganization {
            name: "Invited".into(),
            owner: NewOwner { email: "invited@example.com".into(), name: "Ama".into() },
        };
        create_organization(&identity, &body, NOW, None).unwrap();
        let cases = [
            ("nobody@example.com", None),
            ("invited@example.com", None),
            ("one@example.com", None),
            ("many@example.com", None),
            ("many@example.com", Some(orgs[1].as_str())),
            ("many@example.com", Some("org_unknown")),
        ];
        for (email, org) in cases {
            let before = identity.passwords.computed();
            let refused = log_in_as(&identity, email, "wrong password", org).unwrap_err();
            assert_eq!(refused.code, sika_api::ErrorCode::Unauthorized, "{email} {org:?}");
            assert_eq!(refused.message, WRONG_CREDENTIALS);
            assert_eq!(identity.passwords.computed() - before, 1, "hashes computed for {email} in {org:?}");
        }
        // The right passwords still work, each with one check.
        let before = identity.passwords.computed();
        let session = log_in_as(&identity, "many@example.com", PASSWORD, Some(&orgs[1])).unwrap();
        assert_eq!(session.member.organization_id, orgs[1]);
        assert!(log_in_as(&identity, "one@example.com", PASSWORD, None).is_ok());
        // Without organizationId, an email in several organizations is
        // asked to name one once its first membership's password is given.
        let ambiguous = log_in_as(&identity, "many@example.com", "first pass phrase", None).unwrap_err();
        assert_eq!(ambiguous.details.unwrap()["field"], "organizationId");
        assert_eq!(identity.passwords.computed() - before, 3);
    }

    /// Issue 29.1: attempts are counted before the check, and the checks
    /// running at once are bounded: racing log-ins for one email from one
    /// address get at most the throttle's 10 `401`s, every other answer is
    /// `429`, and the right password still works from elsewhere afterwards.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_wrong_passwords_are_checked_at_most_ten_times() {
        let (_dir, identity) = identity();
        organization(&identity, "target@example.com", PASSWORD);
        organization(&identity, "other@example.com", PASSWORD);
        let identity = Arc::new(identity);
        let address: IpAddr = [10, 0, 0, 1].into();
        let before = identity.passwords.computed();
        let attempts = (0..100).map(|i| {
            let body = CreateSession {
                email: Some("target@example.com".into()),
                password: Some(format!("wrong password {i}")),
                ..CreateSession::default()
            };
            tokio::spawn(create_session(identity.clone(), Some(address), body, NOW, TTL_MS))
        });
        let mut unauthorized = 0;
        for attempt in attempts.collect::<Vec<_>>() {
            let refused = attempt.await.unwrap().unwrap_err();
            match refused.code {
                sika_api::ErrorCode::Unauthorized => unauthorized += 1,
                sika_api::ErrorCode::RateLimited => {
                    assert!(refused.details.unwrap()["retryAfter"].as_u64() > Some(0))
                }
                other => panic!("{other}: {}", refused.message),
            }
        }
        assert!((1..=10).contains(&unauthorized), "{unauthorized} wrong passwords were checked");
        // One at a time (never beyond the bound), the rest up to ten are
        // checked, and then nothing is.
        let wrong = || CreateSession {
            email: Some("target@example.com".into()),
            password: Some("wrong, one at a time".into()),
            ..CreateSession::default()
        };
        for _ in 0..20 {
            match create_session(identity.clone(), Some(address), wrong(), NOW, TTL_MS).await {
                Err(e) if e.code == sika_api::ErrorCode::Unauthorized => unauthorized += 1,
                Err(e) => assert!(e.message.contains("too many failed attempts"), "{}", e.message),
                Ok(_) => panic!("a wrong password opened a session"),
            }
        }
        assert_eq!(unauthorized, 10);
        assert_eq!(identity.passwords.computed() - before, 10);
        let right = |email: &str, ip: IpAddr| {
            let body = CreateSession {
                email: Some(email.into()),
                password: Some(PASSWORD.into()),
                ..CreateSession::default()
            };
            create_session(identity.clone(), Some(ip), body, NOW, TTL_MS)
        };
        let elsewhere: IpAddr = [10, 0, 0, 2].into();
        assert_eq!(
            right("target@example.com", elsewhere).await.unwrap_err().code,
            sika_api::ErrorCode::RateLimited
        );
        assert_eq!(
            right("other@example.com", address).await.unwrap_err().code,
            sika_api::ErrorCode::RateLimited
        );
        assert!(right("other@example.com", elsewhere).await.is_ok());
        // A right password gives its count back: it never throttles.
        for _ in 0..15 {
            assert!(right("other@example.com", elsewhere).await.is_ok());
        }
    }
}
