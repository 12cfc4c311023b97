//! Two-factor sign-in with an authenticator app (TOTP, RFC 6238: SHA-1,
//! 6 digits, 30-second steps, one step of drift either way). A member
//! enrols (a secret, pending), confirms it with a first code (it is in
//! force, and ten recovery codes are shown once), and may turn it off with
//! a code. Once in force, `domain::members`' log-in and password reset ask
//! for a code or a recovery code after the password.
//!
//! The record is `identity::Totp`, a record of its own under
//! `totp/{member}`: no stored member changes shape. A code is accepted once
//! (`last_step`), a recovery code once (its hash is removed).

use sika_api::members::{TotpEnrolment, TotpRecoveryCodes, TotpStatus};
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, TOTP};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Change, Identity, Member, Totp, hash_secret};

/// The digits of a code.
const CODE_DIGITS: usize = 6;
/// How long one code lasts.
const STEP_SECONDS: u64 = 30;
/// Steps of clock drift accepted either way.
const SKEW_STEPS: u8 = 1;
/// The secret's length: RFC 4226's recommended 160 bits.
const SECRET_BYTES: usize = 20;
/// How many recovery codes are shown when two-factor sign-in is turned on.
pub(crate) const RECOVERY_CODES_COUNT: usize = 10;
/// The name an authenticator app shows beside the member's email.
const ISSUER: &str = "Sika";

/// Why a log-in's second factor was refused, as `details.reason`.
pub(crate) const REASON_REQUIRED: &str = "totp_required";
const REASON_INVALID: &str = "totp_invalid";

fn generator(secret: &[u8]) -> TOTP {
    TOTP::new_unchecked(Algorithm::SHA1, CODE_DIGITS, SKEW_STEPS, STEP_SECONDS, secret.to_vec())
}

fn seconds(now_ms: i64) -> u64 {
    u64::try_from(now_ms.max(0) / 1000).unwrap_or(0)
}

/// The step of `code` if it is the code of a step within the drift
/// around `now_ms` and later than `after`.
fn matching_step(secret: &[u8], code: &str, now_ms: i64, after: u64) -> Option<u64> {
    let code = code.trim();
    if code.len() != CODE_DIGITS || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let totp = generator(secret);
    let current = seconds(now_ms) / STEP_SECONDS;
    let first = current.saturating_sub(u64::from(SKEW_STEPS));
    let last = current.saturating_add(u64::from(SKEW_STEPS));
    (first..=last).filter(|step| *step > after).find(|step| {
        let expected = totp.generate(step.saturating_mul(STEP_SECONDS));
        bool::from(expected.as_bytes().ct_eq(code.as_bytes()))
    })
}

/// A recovery code as people read it: `abcde-fghij`, from an alphabet
/// without look-alikes.
fn recovery_code() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut code = String::with_capacity(11);
    for i in 0..10 {
        if i == 5 {
            code.push('-');
        }
        let pick = usize::from(rand::random::<u8>()) % ALPHABET.len();
        code.push(char::from(ALPHABET[pick]));
    }
    code
}

fn normalised_recovery(code: &str) -> String {
    code.trim().to_ascii_lowercase()
}

/// `otpauth://totp/Sika:ama%40shop.example?secret=…&issuer=Sika&…`, what
/// the enrolment's QR code holds.
fn otpauth_url(email: &str, secret_base32: &str) -> String {
    let label: String = form_urlencoded::byte_serialize(format!("{ISSUER}:{email}").as_bytes()).collect();
    let label = label.replace('+', "%20");
    format!(
        "otpauth://totp/{label}?secret={secret_base32}&issuer={ISSUER}&algorithm=SHA1&digits={CODE_DIGITS}&period={STEP_SECONDS}"
    )
}

fn already_on() -> ApiError {
    ApiError::new(
        sika_api::ErrorCode::InvalidState,
        "two-factor sign-in is already on; turn it off first to enrol a new authenticator",
    )
}

fn wrong_code() -> ApiError {
    ApiError::validation("code", "is not the current code of your authenticator app")
}

/// `POST /v1/members/me/totp`: a new secret, pending until confirmed (a
/// pending one is replaced).
pub(crate) fn enrol(identity: &Identity, member: &Member, now: i64) -> ApiResult<TotpEnrolment> {
    identity.change(|identity| {
        if identity.totp(&member.id).is_some_and(|t| t.enabled_at.is_some()) {
            return Err(already_on());
        }
        let secret: [u8; SECRET_BYTES] = rand::random();
        let record = Totp {
            member_id: member.id.clone(),
            secret: secret.to_vec(),
            created_at: now,
            enabled_at: None,
            recovery_hashes: Vec::new(),
            last_step: 0,
        };
        let base32 = generator(&secret).get_secret_base32();
        let enrolment = TotpEnrolment { otpauth_url: otpauth_url(&member.email, &base32), secret: base32 };
        Ok((vec![Change::PutTotp(record)], enrolment))
    })
}

/// `POST /v1/members/me/totp/confirm`: the pending secret is in force once
/// a code of it is given; the ten recovery codes are returned this once.
pub(crate) fn confirm(
    identity: &Identity,
    member: &Member,
    code: &str,
    now: i64,
) -> ApiResult<TotpRecoveryCodes> {
    identity.change(|identity| {
        let mut record = identity.totp(&member.id).ok_or_else(|| {
            ApiError::new(
                sika_api::ErrorCode::InvalidState,
                "no authenticator is being enrolled; start with POST /v1/members/me/totp",
            )
        })?;
        if record.enabled_at.is_some() {
            return Err(already_on());
        }
        let step = matching_step(&record.secret, code, now, 0).ok_or_else(wrong_code)?;
        let codes: Vec<String> = (0..RECOVERY_CODES_COUNT).map(|_| recovery_code()).collect();
        record.recovery_hashes = codes.iter().map(|c| hash_secret(c)).collect();
        record.enabled_at = Some(now);
        record.last_step = step;
        Ok((vec![Change::PutTotp(record)], TotpRecoveryCodes { recovery_codes: codes }))
    })
}

/// `DELETE /v1/members/me/totp`: off, with a current code or a recovery code.
pub(crate) fn disable(identity: &Identity, member: &Member, code: &str, now: i64) -> ApiResult<TotpStatus> {
    identity.change(|identity| {
        let record = identity.totp(&member.id).filter(|t| t.enabled_at.is_some()).ok_or_else(|| {
            ApiError::new(sika_api::ErrorCode::InvalidState, "two-factor sign-in is not on")
        })?;
        let by_code = matching_step(&record.secret, code, now, record.last_step).is_some();
        let by_recovery = record.recovery_hashes.contains(&hash_secret(&normalised_recovery(code)));
        if !by_code && !by_recovery {
            return Err(wrong_code());
        }
        Ok((vec![Change::DeleteTotp(member.id.clone())], TotpStatus { enabled: false }))
    })
}

/// Whether `member` has two-factor sign-in in force.
pub(crate) fn status(identity: &Identity, member: &Member) -> TotpStatus {
    TotpStatus { enabled: identity.totp(&member.id).is_some_and(|t| t.enabled_at.is_some()) }
}

/// The second factor of a log-in, inside the log-in's identity change:
/// nothing when two-factor sign-in is off; else the change that spends the
/// code or recovery code given, or `401` with `details.reason`
/// `totp_required` (neither given) or `totp_invalid`.
pub(crate) fn second_factor(
    identity: &Identity,
    member_id: &str,
    code: Option<&str>,
    recovery_code: Option<&str>,
    now: i64,
) -> ApiResult<Vec<Change>> {
    let Some(mut record) = identity.totp(member_id).filter(|t| t.enabled_at.is_some()) else {
        return Ok(Vec::new());
    };
    let refused = |reason: &str, message: &str| ApiError::unauthorized(message).with_detail("reason", reason);
    match (code, recovery_code) {
        (None, None) => Err(refused(
            REASON_REQUIRED,
            "two-factor sign-in is on: send the 6-digit code of your authenticator app as code, or a recovery code",
        )),
        (Some(code), _) => {
            let step = matching_step(&record.secret, code, now, record.last_step)
                .ok_or_else(|| refused(REASON_INVALID, "wrong or already used two-factor code"))?;
            record.last_step = step;
            Ok(vec![Change::PutTotp(record)])
        }
        (None, Some(recovery)) => {
            let hash = hash_secret(&normalised_recovery(recovery));
            let before = record.recovery_hashes.len();
            record.recovery_hashes.retain(|h| !bool::from(h.ct_eq(&hash)));
            if record.recovery_hashes.len() == before {
                return Err(refused(REASON_INVALID, "wrong or already used recovery code"));
            }
            Ok(vec![Change::PutTotp(record)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's appendix B vectors for SHA-1 (its 20-byte secret), cut
    /// to six digits.
    #[test]
    fn codes_follow_rfc_6238() {
        let totp = generator(b"12345678901234567890");
        for (time, code) in [(59, "287082"), (1_111_111_109, "081804"), (2_000_000_000, "279037")] {
            assert_eq!(totp.generate(time), code, "at {time}");
        }
        let now_ms = 59_000;
        assert_eq!(matching_step(b"12345678901234567890", "287082", now_ms, 0), Some(1));
        assert_eq!(matching_step(b"12345678901234567890", "287082", now_ms, 1), None, "used once");
        assert_eq!(matching_step(b"12345678901234567890", "28708", now_ms, 0), None);
        assert_eq!(matching_step(b"12345678901234567890", "287082", 10_000_000, 0), None, "too late");
    }

    #[test]
    fn the_otpauth_url_names_the_member_and_issuer() {
        let url = otpauth_url("ama+1@shop.example", "JBSWY3DP");
        assert_eq!(
            url,
            "otpauth://totp/Sika%3Aama%2B1%40shop.example?secret=JBSWY3DP&issuer=Sika&algorithm=SHA1&digits=6&period=30"
        );
    }

    #[test]
    fn recovery_codes_are_distinct_and_readable() {
        let codes: std::collections::BTreeSet<String> = (0..50).map(|_| recovery_code()).collect();
        assert_eq!(codes.len(), 50);
        assert!(codes.iter().all(|c| c.len() == 11 && c.as_bytes()[5] == b'-'));
    }
}
