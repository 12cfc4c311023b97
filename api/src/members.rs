//! Team members and their sessions: invitations, password log-in and
//! logout, and the members of an organization (managed by its owners and
//! admins). A session (`sess_…`) acts for one member on both stacks.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a member may do. `viewer` reads; `developer` also manages webhooks;
/// `admin` and `owner` also manage keys, members and the representative;
/// only an `owner` makes or removes an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Owner,
    Admin,
    Developer,
    Viewer,
}

/// Whether a member has set a password yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// Invited; no password set yet.
    Invited,
    Active,
}

/// A team member of an organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    #[schema(example = "mem_0VbowfAbCdEf", pattern = "^mem_")]
    pub id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub organization_id: String,
    pub status: MemberStatus,
    pub created_at: String,
}

/// An invitation: its token (`inv_…`, shown once) lets the member set a
/// password with `POST /v1/sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invitation {
    #[schema(pattern = "^inv_")]
    pub token: String,
    pub expires_at: String,
}

/// `POST /v1/sessions`: either `{invitation, password}` (accept an
/// invitation, setting the password) or `{email, password,
/// organizationId?}` (log in).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"email": "owner@shop.example", "password": "correct horse battery staple"})))]
pub struct CreateSession {
    /// An invitation token (`inv_…`).
    #[schema(max_length = 128)]
    pub invitation: Option<String>,
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// 12 to 128 characters.
    #[schema(max_length = 128)]
    pub password: Option<String>,
    /// Needed only when the email belongs to members of several organizations.
    pub organization_id: Option<String>,
    /// A password reset token (`rst_…`, emailed by
    /// `POST /v1/sessions/password-reset`): with `password`, sets the new
    /// password and logs in.
    #[schema(max_length = 128)]
    pub reset: Option<String>,
    /// The 6-digit code of the member's authenticator app, once they have
    /// turned on two-factor sign-in (`POST /v1/members/me/totp`); without
    /// it (or `recoveryCode`) a right password is `401` with
    /// `details.reason` `totp_required`.
    #[schema(max_length = 64, example = "492039")]
    pub code: Option<String>,
    /// One of the ten recovery codes shown when two-factor sign-in was
    /// turned on, instead of `code`; each works once.
    #[schema(max_length = 32)]
    pub recovery_code: Option<String>,
}

/// `POST /v1/sessions/password-reset`: email a reset link to this member.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"email": "owner@shop.example"})))]
pub struct PasswordResetRequest {
    #[schema(max_length = 254)]
    pub email: String,
}

/// The same answer whether or not the email is a member's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordResetAccepted {
    /// Always `accepted`: when the email is a member's and the node sends
    /// email, a link to set a new password is on its way (valid one hour,
    /// once).
    pub status: String,
}

/// The member a session acts for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMember {
    pub id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub organization_id: String,
}

/// A session: send `Authorization: Bearer <token>` on either stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    #[schema(pattern = "^sess_")]
    pub token: String,
    pub expires_at: String,
    pub member: SessionMember,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionEnvelope {
    pub session: Session,
}

/// `POST /v1/members`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"email": "kofi@shop.example", "name": "Kofi Boateng", "role": "developer"})))]
pub struct CreateMember {
    #[schema(max_length = 254)]
    pub email: String,
    /// 1 to 255 characters.
    #[schema(max_length = 255)]
    pub name: String,
    pub role: Role,
}

/// `PATCH /v1/members/{id}`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"role": "admin"})))]
pub struct UpdateMember {
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemberEnvelope {
    pub member: Member,
}

/// A new member and the invitation to pass on to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InvitedMember {
    pub member: Member,
    pub invitation: Invitation,
}

/// A session that has just ended (`DELETE /v1/sessions/current`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndedSession {
    pub ended_at: String,
    pub member: SessionMember,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EndedSessionEnvelope {
    pub session: EndedSession,
}

/// `POST /v1/members/me/totp`: a new authenticator secret, not yet in
/// force. The member adds it to their app (`otpauthUrl` is what its QR
/// code holds) and confirms a code with `POST /v1/members/me/totp/confirm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpEnrolment {
    /// The shared secret in base32 (RFC 4648, no padding), for typing in.
    #[schema(example = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")]
    pub secret: String,
    /// `otpauth://totp/…`: SHA-1, 6 digits, 30 seconds (RFC 6238).
    pub otpauth_url: String,
}

/// `POST /v1/members/me/totp/confirm` and `DELETE /v1/members/me/totp`: a
/// code from the authenticator app.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"code": "492039"})))]
pub struct TotpCode {
    /// 6 digits (a recovery code also turns two-factor sign-in off).
    #[schema(max_length = 64)]
    pub code: String,
}

/// Two-factor sign-in is on: the recovery codes, shown this once (only
/// their hashes are kept). Each logs in once in place of a code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpRecoveryCodes {
    pub recovery_codes: Vec<String>,
}

/// Whether the member logs in with a second factor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpStatus {
    pub enabled: bool,
}
