//! Organizations' team members and their sessions: who may do what to
//! whom. Invitations and passwords (argon2id), log-in with one answer for
//! every wrong credential, brute-force throttling, and the rule that an
//! organization always keeps an owner. Stored by `domain::identity`.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use sika_api::admin::{CreateOrganization, RenameOrganization};
use sika_api::members::{self as wire, CreateMember, CreateSession, MemberStatus};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{
    Change, INVITATION_TTL_MS, Identity, Invitation, Member, Organization, Role, Session, new_organization,
    secret_token,
};
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

fn internal(e: String) -> ApiError {
    tracing::error!(error = %e, "cannot write the identity database");
    ApiError::internal()
}

impl From<String> for ApiError {
    fn from(e: String) -> ApiError {
        internal(e)
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

/// An argon2id hash (the crate's defaults: 19 MiB, 2 passes) in PHC form.
fn hash_password(password: &str) -> ApiResult<String> {
    let salt_bytes: [u8; 16] = rand::random();
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| internal(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| internal(e.to_string()))
}

fn verify_password(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash)
        .is_ok_and(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
}

/// A hash nobody's password matches, checked when no member has the email
/// so that an unknown email costs as long as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_password(&secret_token("decoy_")).unwrap_or_default())
}

/// A fresh invitation for `member`; earlier ones are deleted.
fn invite(identity: &Identity, member: &Member, now: i64) -> (Vec<Change>, String, Invitation) {
    let (token, invitation) = Invitation::issue(&member.id, now, INVITATION_TTL_MS);
    let mut changes: Vec<Change> =
        identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation).collect();
    changes.push(Change::PutInvitation(invitation.clone()));
    (changes, token, invitation)
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
) -> ApiResult<(Organization, wire::Invitation)> {
    let name = check_name("name", &body.name)?;
    let owner_name = check_name("owner.name", &body.owner.name)?;
    let owner_email = normalise_email("owner.email", &body.owner.email)?;
    identity.change(|identity| {
        let (organization, member) = new_organization(&name, &owner_name, &owner_email, now);
        let (mut changes, token, invitation) = invite(identity, &member, now);
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
) -> ApiResult<(Member, wire::Invitation)> {
    identity.change(|identity| {
        identity
            .organization(organization)
            .ok_or_else(|| ApiError::not_found(format!("organization '{organization}' not found")))?;
        let member = identity
            .member(member_id)
            .filter(|m| m.organization == organization)
            .ok_or_else(|| ApiError::not_found(format!("member '{member_id}' not found")))?;
        let (changes, token, invitation) = invite(identity, &member, now);
        Ok((changes, (member, render_invitation(token, &invitation))))
    })
}

/// What `POST /v1/sessions` was asked to do.
enum Credentials {
    Invitation { token: String, password: String },
    Password { email: String, password: String, organization: Option<String> },
}

fn credentials(body: CreateSession) -> ApiResult<Credentials> {
    let password = body.password.ok_or_else(|| ApiError::validation("password", "is required"))?;
    match (body.invitation, body.email) {
        (Some(token), None) => {
            if body.organization_id.is_some() {
                return Err(ApiError::validation("organizationId", "goes with email, not invitation"));
            }
            check_password(&password)?;
            Ok(Credentials::Invitation { token, password })
        }
        (None, Some(email)) => Ok(Credentials::Password {
            email: email.trim().to_lowercase(),
            password,
            organization: body.organization_id,
        }),
        (Some(_), Some(_)) => Err(ApiError::validation("email", "send either invitation or email, not both")),
        (None, None) => Err(ApiError::validation("email", "is required (or an invitation to accept)")),
    }
}

/// The email a session request names, for the throttle.
pub(crate) fn attempted_email(body: &CreateSession) -> Option<String> {
    body.email.as_ref().map(|e| e.trim().to_lowercase())
}

/// `POST /v1/sessions`: accepts an invitation or checks a password, and
/// opens a session. Any wrong credential is the same `401`. Slow on
/// purpose (argon2id): run it off the async workers.
pub(crate) fn create_session(
    identity: &Identity,
    body: CreateSession,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    match credentials(body)? {
        Credentials::Invitation { token, password } => {
            accept_invitation(identity, &token, &password, now, ttl_ms)
        }
        Credentials::Password { email, password, organization } => {
            log_in(identity, &email, &password, organization.as_deref(), now, ttl_ms)
        }
    }
}

fn accept_invitation(
    identity: &Identity,
    token: &str,
    password: &str,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let wrong = || ApiError::unauthorized(WRONG_CREDENTIALS);
    if !token.starts_with("inv_") {
        return Err(wrong());
    }
    let hash = hash_password(password)?;
    identity.change(|identity| {
        let invitation = identity.invitation(token, now).ok_or_else(wrong)?;
        let mut member = identity.member(&invitation.member_id).ok_or_else(wrong)?;
        member.password_hash = Some(hash);
        let (mut changes, token, session) = open_session(identity, &member, now, ttl_ms);
        // Setting a password ends every session opened with the old one.
        changes.extend(identity.sessions_of(&member.id).into_iter().map(Change::DeleteSession));
        changes.extend(identity.invitations_of(&member.id).into_iter().map(Change::DeleteInvitation));
        changes.push(Change::PutMember(member.clone()));
        Ok((changes, render_session(&member, token, &session)))
    })
}

fn log_in(
    identity: &Identity,
    email: &str,
    password: &str,
    organization: Option<&str>,
    now: i64,
    ttl_ms: i64,
) -> ApiResult<wire::Session> {
    let candidates: Vec<Member> = identity
        .members_by_email(email)
        .into_iter()
        .filter(|m| organization.is_none_or(|o| m.organization == o) && m.password_hash.is_some())
        .collect();
    if candidates.is_empty() {
        verify_password(decoy_hash(), password);
        return Err(ApiError::unauthorized(WRONG_CREDENTIALS));
    }
    let matched: Vec<Member> = candidates
        .into_iter()
        .filter(|m| m.password_hash.as_deref().is_some_and(|h| verify_password(h, password)))
        .collect();
    let member = match matched.as_slice() {
        [] => return Err(ApiError::unauthorized(WRONG_CREDENTIALS)),
        [one] => one.clone(),
        _ => {
            return Err(ApiError::validation(
                "organizationId",
                "this email is a member of several organizations; name the one to log in to",
            ));
        }
    };
    identity.change(|identity| {
        // The member may have been removed while the password was checked.
        let member = identity.member(&member.id).ok_or_else(|| ApiError::unauthorized(WRONG_CREDENTIALS))?;
        let (changes, token, session) = open_session(identity, &member, now, ttl_ms);
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

pub(crate) fn list_members(identity: &Identity, actor: Option<&Member>) -> ApiResult<Vec<wire::Member>> {
    let actor = manager(actor)?;
    Ok(identity.members_of(&actor.organization).iter().map(render_member).collect())
}

/// `POST /v1/members`: the member and their invitation.
pub(crate) fn add_member(
    identity: &Identity,
    actor: Option<&Member>,
    body: &CreateMember,
    now: i64,
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
        let (mut changes, token, invitation) = invite(identity, &member, now);
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
        changes.push(Change::DeleteMember(member.id.clone()));
        Ok((changes, render_member(&member)))
    })
}
