//! The email outbox: every email the node sends is first a record here,
//! written in the same transaction as what caused it (an invitation with
//! its token, a password reset with its token, or the event cursor of the
//! stack whose committed events it was derived from), then sent by the
//! node's one sender (`sender`), which marks it sent only after the SMTP
//! server accepted it.
//!
//! Records live in the identity store's `emails` table (`Change::Mail`):
//! `mail/<seq>` the email, `mail-open/<seq>` while it still has to go,
//! `mail-seq` the last sequence number, `mail-count/<org>/<hour>` the
//! emails queued for an organization in an hour (the bound), and
//! `mail-cursor/<stack>` how far each stack's events were read.

pub(crate) mod messages;
pub(crate) mod sender;

use std::collections::HashMap;

use askama::Template;
use serde::{Deserialize, Serialize};
use sika_api::ListPage;
use sika_api::admin::{EmailFilter, EmailItem, EmailStatus as WireStatus};

use crate::config::EmailConfig;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Change, Identity, decode, encode};
use crate::domain::pagination::{PageQuery, Paging, list_page};
use crate::domain::render::timestamp;

const SEQ: &str = "mail-seq";
const ONE_HOUR_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Status {
    /// Waiting for its first attempt.
    Queued,
    Sent,
    /// The server refused or could not be reached; tried again later.
    Retrying,
    /// Refused on every attempt of the ladder.
    Failed,
    /// Over the organization's hourly bound: recorded, never sent.
    Suppressed,
}

/// One email of the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EmailRecord {
    pub seq: u64,
    pub id: String,
    /// `<eml_…@domain>`: the same on every attempt, so a receiver (and a
    /// test) tells a resend after a crash from a new email.
    pub message_id: String,
    /// What it is: `invitation`, `password_reset`, `receipt`,
    /// `payout_failed`, `payout_reversed`, `dispute_opened`,
    /// `webhook_endpoint_disabled`, `operator_alert`.
    pub kind: String,
    pub organization: Option<String>,
    pub to: String,
    pub subject: String,
    /// Emptied once sent when the email delivered a token, so the outbox
    /// keeps no usable secret.
    pub text: String,
    pub html: String,
    pub status: Status,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub sent_at: Option<i64>,
}

impl EmailRecord {
    fn carries_token(&self) -> bool {
        matches!(self.kind.as_str(), "invitation" | "password_reset")
    }
}

/// What the message says, laid out by `templates/email/message.{txt,html}`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Body {
    pub subject: String,
    pub title: String,
    pub paragraphs: Vec<String>,
    pub rows: Vec<(String, String)>,
    pub action: Option<Action>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Action {
    pub label: String,
    pub url: String,
}

#[derive(Template)]
#[template(path = "email/message.html")]
struct Html<'a> {
    body: &'a Body,
}

#[derive(Template)]
#[template(path = "email/message.txt")]
struct Text<'a> {
    body: &'a Body,
}

/// An email to queue.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub kind: &'static str,
    /// The organization it counts against (`None`: the operator's).
    pub organization: Option<String>,
    pub to: String,
    pub body: Body,
}

pub(crate) fn key(seq: u64) -> String {
    format!("mail/{seq:020}")
}

pub(crate) fn open_key(seq: u64) -> String {
    format!("mail-open/{seq:020}")
}

/// The domain of the sender's address, for Message-IDs.
fn message_domain(config: &EmailConfig) -> String {
    let from = config.from.trim_end_matches('>');
    from.rsplit_once('@').map_or_else(|| "sika.invalid".to_string(), |(_, d)| d.to_string())
}

/// Emails queued in one identity change: call `push` for each and write
/// `into_changes` in the same `Identity::change` (its lock is held, so the
/// sequence and the hourly counts read here stay true).
pub(crate) struct Queue<'a> {
    identity: &'a Identity,
    config: &'a EmailConfig,
    now: i64,
    seq: u64,
    counts: HashMap<String, u32>,
    changes: Vec<Change>,
}

impl<'a> Queue<'a> {
    pub(crate) fn new(identity: &'a Identity, config: &'a EmailConfig, now: i64) -> ApiResult<Queue<'a>> {
        let seq = match identity.mail(SEQ)? {
            Some(bytes) => decode::<u64>(&bytes)
                .ok_or_else(|| ApiError::internal_from("the outbox sequence does not decode"))?,
            None => 0,
        };
        Ok(Queue { identity, config, now, seq, counts: HashMap::new(), changes: Vec::new() })
    }

    fn count_key(&self, organization: &str) -> String {
        format!("mail-count/{organization}/{}", self.now.div_euclid(ONE_HOUR_MS))
    }

    /// Queues `message`, or records it `suppressed` when its organization
    /// already had `max_per_org_per_hour` emails this hour.
    pub(crate) fn push(&mut self, message: Message) -> ApiResult<EmailRecord> {
        let mut status = Status::Queued;
        if let Some(organization) = &message.organization {
            let count_key = self.count_key(organization);
            let count = match self.counts.get(&count_key) {
                Some(count) => *count,
                None => self.identity.mail(&count_key)?.and_then(|b| decode::<u32>(&b)).unwrap_or(0),
            };
            if count >= self.config.max_per_org_per_hour {
                status = Status::Suppressed;
            } else {
                self.counts.insert(count_key, count.saturating_add(1));
            }
        }
        self.seq = self
            .seq
            .checked_add(1)
            .ok_or_else(|| ApiError::internal_from("the outbox sequence is exhausted"))?;
        let id = sika_engine::ids::new_id_at("eml", self.now);
        let suppressed = status == Status::Suppressed;
        let html = Html { body: &message.body }.render().map_err(ApiError::internal_from)?;
        let text = Text { body: &message.body }.render().map_err(ApiError::internal_from)?;
        let record = EmailRecord {
            seq: self.seq,
            message_id: format!("<{id}@{}>", message_domain(self.config)),
            id,
            kind: message.kind.to_string(),
            organization: message.organization,
            to: message.to,
            subject: message.body.subject.clone(),
            // A suppressed email is never sent: it keeps no body.
            text: if suppressed { String::new() } else { text },
            html: if suppressed { String::new() } else { html },
            status,
            attempts: 0,
            last_error: None,
            next_attempt_at: (!suppressed).then_some(self.now),
            created_at: self.now,
            updated_at: self.now,
            sent_at: None,
        };
        if suppressed {
            tracing::warn!(email = %record.id, organization = ?record.organization, kind = %record.kind,
                "an organization's hourly email bound is reached: the email is recorded, not sent");
        } else {
            self.changes.push(Change::Mail(open_key(record.seq), Some(Vec::new())));
        }
        self.changes.push(Change::Mail(key(record.seq), Some(encode(&record))));
        Ok(record)
    }

    /// The changes that store what was pushed.
    pub(crate) fn into_changes(mut self) -> Vec<Change> {
        if self.changes.is_empty() {
            return self.changes;
        }
        for (key, count) in std::mem::take(&mut self.counts) {
            self.changes.push(Change::Mail(key, Some(encode(&count))));
        }
        self.changes.push(Change::Mail(SEQ.into(), Some(encode(&self.seq))));
        self.changes
    }
}

/// Queues messages on their own (no other change rides with them).
pub(crate) fn queue(
    identity: &Identity,
    config: &EmailConfig,
    now: i64,
    messages: Vec<Message>,
) -> ApiResult<()> {
    if messages.is_empty() {
        return Ok(());
    }
    identity.change(|identity| {
        let mut queue = Queue::new(identity, config, now)?;
        for message in messages {
            queue.push(message)?;
        }
        Ok::<_, ApiError>((queue.into_changes(), ()))
    })
}

pub(crate) fn load(identity: &Identity, seq: u64) -> ApiResult<Option<EmailRecord>> {
    Ok(identity.mail(&key(seq))?.and_then(|bytes| decode(&bytes)))
}

/// The emails that still have to go, oldest first.
pub(crate) fn open(identity: &Identity, limit: usize) -> ApiResult<Vec<EmailRecord>> {
    let mut found = Vec::new();
    for (key, _) in identity.mail_range("mail-open/", None, false, limit)? {
        let Some(seq) = key.strip_prefix("mail-open/").and_then(|s| s.parse().ok()) else { continue };
        if let Some(record) = load(identity, seq)? {
            found.push(record);
        }
    }
    Ok(found)
}

/// The outcome of one attempt to hand an email to the server.
pub(crate) enum Attempt {
    Accepted,
    Refused { error: String, retry_at: Option<i64> },
}

/// Records an attempt; `Accepted` is the sent mark, written only once the
/// server accepted the email.
pub(crate) fn record_attempt(identity: &Identity, seq: u64, attempt: Attempt, now: i64) -> ApiResult<()> {
    identity.change(|identity| {
        let Some(mut record) = load(identity, seq)? else { return Ok::<_, ApiError>((Vec::new(), ())) };
        record.attempts = record.attempts.saturating_add(1);
        record.updated_at = now;
        let mut changes = Vec::new();
        match attempt {
            Attempt::Accepted => {
                record.status = Status::Sent;
                record.sent_at = Some(now);
                record.next_attempt_at = None;
                record.last_error = None;
                if record.carries_token() {
                    record.text.clear();
                    record.html.clear();
                }
                changes.push(Change::Mail(open_key(seq), None));
            }
            Attempt::Refused { error, retry_at } => {
                record.last_error = Some(error);
                record.next_attempt_at = retry_at;
                if retry_at.is_some() {
                    record.status = Status::Retrying;
                } else {
                    record.status = Status::Failed;
                    if record.carries_token() {
                        record.text.clear();
                        record.html.clear();
                    }
                    changes.push(Change::Mail(open_key(seq), None));
                }
            }
        }
        changes.push(Change::Mail(key(seq), Some(encode(&record))));
        Ok((changes, ()))
    })
}

fn wire_status(status: Status) -> WireStatus {
    match status {
        Status::Queued => WireStatus::Queued,
        Status::Sent => WireStatus::Sent,
        Status::Retrying => WireStatus::Retrying,
        Status::Failed => WireStatus::Failed,
        Status::Suppressed => WireStatus::Suppressed,
    }
}

fn render(record: EmailRecord) -> EmailItem {
    EmailItem {
        id: record.id,
        message_id: record.message_id,
        kind: record.kind,
        organization_id: record.organization,
        to: record.to,
        subject: record.subject,
        status: wire_status(record.status),
        attempts: record.attempts,
        last_error: record.last_error,
        next_attempt_at: record.next_attempt_at.map(timestamp),
        created_at: timestamp(record.created_at),
        sent_at: record.sent_at.map(timestamp),
    }
}

/// Entries read per page at most while filtering, so a filter that
/// matches little cannot make one request read the whole outbox.
const SCANNED_PER_PAGE_MAX: usize = 10_000;

/// `GET /admin/v1/emails`: newest first, filtered by status, kind and
/// organization, paginated like every list.
pub(crate) fn page(
    identity: &Identity,
    query: &PageQuery,
    filter: &EmailFilter,
) -> ApiResult<ListPage<EmailItem>> {
    const SCOPE: &str = "admin/emails";
    let status = match filter.status.as_deref() {
        None => None,
        Some(text) => Some(match text {
            "queued" => Status::Queued,
            "sent" => Status::Sent,
            "retrying" => Status::Retrying,
            "failed" => Status::Failed,
            "suppressed" => Status::Suppressed,
            _ => {
                return Err(ApiError::validation(
                    "status",
                    "must be one of queued, sent, retrying, failed, suppressed",
                ));
            }
        }),
    };
    let secret = identity.secret();
    let paging = query.page(&secret, SCOPE)?;
    let mut from = paging.before.map(key);
    let mut found: Vec<EmailRecord> = Vec::new();
    let mut scanned = 0;
    let mut has_more = false;
    'scan: while scanned < SCANNED_PER_PAGE_MAX {
        let batch = identity.mail_range("mail/", from.as_deref(), true, 256)?;
        if batch.is_empty() {
            break;
        }
        for (entry_key, bytes) in batch {
            scanned += 1;
            from = Some(entry_key);
            let Some(record) = decode::<EmailRecord>(&bytes) else { continue };
            let matches = status.is_none_or(|s| s == record.status)
                && filter.kind.as_deref().is_none_or(|k| k == record.kind)
                && filter
                    .organization_id
                    .as_deref()
                    .is_none_or(|o| record.organization.as_deref() == Some(o));
            if matches {
                if found.len() == paging.limit {
                    has_more = true;
                    break 'scan;
                }
                found.push(record);
            }
        }
    }
    let last = found.last().map(|r| r.seq);
    Ok(list_page(found.into_iter().map(render).collect(), last, has_more, &secret, SCOPE))
}

/// What a use case that queues an email needs: `[email]` and the address
/// of the listener whose dashboard the links open. `None` without
/// `[email]`: nothing is queued.
pub(crate) struct Mailer<'a> {
    pub config: &'a EmailConfig,
    pub base: String,
}

impl<'a> Mailer<'a> {
    pub(crate) fn of(
        config: &'a crate::config::NodeConfig,
        kind: crate::domain::stack_kind::StackKind,
    ) -> Option<Mailer<'a>> {
        config.email.as_ref().map(|email| Mailer { config: email, base: messages::public_base(config, kind) })
    }
}
