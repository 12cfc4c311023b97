//! The node's email sender: one task (started by `runtime::emails`) that
//! derives emails from each stack's committed events, queues the
//! operator's alerts, and hands due emails to the SMTP server.
//!
//! Derived emails are written with the stack's event cursor in one
//! identity change, so an event is turned into its emails exactly once
//! whatever crashes. An email is marked sent only after the server
//! accepted it: a crash between the two sends it again, with the same
//! `Message-ID` (at least once, never lost).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sika_engine::Engine;

use super::{Attempt, EmailRecord, Message, Queue, messages};
use crate::config::{EmailConfig, NodeConfig};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Change, Identity, decode, encode};
use crate::domain::rails::Rails;
use crate::domain::stack_kind::StackKind;
use crate::domain::webhooks::{DISABLED_NOTICES, DisabledNotice};
use crate::store::disk_reserve::DiskReserve;

/// How often the outbox and the events are looked at.
const POLL: Duration = Duration::from_millis(100);
/// Events read per step.
const EVENTS_PER_STEP_MAX: usize = 256;
/// Emails handed to the server per step.
const SENDS_PER_STEP_MAX: usize = 32;
/// Waits between attempts while the server refuses, before `--time-scale`:
/// then the email is `failed`.
pub(crate) const RETRY_LADDER_MS: [i64; 8] =
    [30_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000];
/// A live movement waiting for the operator longer than this (before
/// `--time-scale`, on the node's clock) is alerted.
const AWAITING_ALERT_MS: i64 = 3_600_000;
/// How often the operator's conditions are checked.
const ALERT_CHECK: Duration = Duration::from_secs(5);

/// One email as the server gets it.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub message_id: String,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// Why the server did not take an email.
#[derive(Debug, Clone)]
pub(crate) struct Refusal(pub String);

pub(crate) type Sending<'a> = Pin<Box<dyn Future<Output = Result<(), Refusal>> + Send + 'a>>;

/// Hands an email to the SMTP server (`crate::adapters::smtp`).
pub(crate) trait Transport: Send + Sync + 'static {
    fn send(&self, envelope: Envelope) -> Sending<'_>;
}

/// A stack whose events and health the sender follows.
pub(crate) struct Source {
    pub kind: StackKind,
    pub engine: Engine,
    pub rails: Arc<Rails>,
    /// The sandbox's disk reserve: below it the stack refuses writes.
    pub disk_reserve: Option<Arc<DiskReserve>>,
}

pub(crate) struct Sender {
    pub identity: Arc<Identity>,
    pub config: Arc<NodeConfig>,
    pub sources: Vec<Source>,
    pub transport: Arc<dyn Transport>,
}

fn cursor_key(kind: StackKind) -> String {
    format!("mail-cursor/{}", kind.name())
}

impl Sender {
    fn email(&self) -> &EmailConfig {
        self.config.email.as_ref().expect("the sender runs only with [email]")
    }

    fn now(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }

    /// Runs until the process ends.
    pub(crate) async fn run(self) {
        let mut alerted: HashSet<String> = HashSet::new();
        let mut last_alert_check: Option<tokio::time::Instant> = None;
        loop {
            for source in &self.sources {
                if let Err(e) = self.derive(source) {
                    tracing::warn!(stack = source.kind.name(), error = %e.message, "cannot derive emails from events");
                }
                if let Err(e) = self.disabled_endpoints(source).await {
                    tracing::warn!(stack = source.kind.name(), error = %e.message, "cannot queue disabled endpoints' notices");
                }
            }
            if last_alert_check.is_none_or(|at| at.elapsed() >= ALERT_CHECK) {
                last_alert_check = Some(tokio::time::Instant::now());
                if let Err(e) = self.alert(&mut alerted) {
                    tracing::warn!(error = %e.message, "cannot queue the operator's alerts");
                }
            }
            match self.send_due().await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e.message, "cannot read the email outbox"),
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Turns the stack's new events into emails, written with the cursor.
    /// The first time, the cursor starts at the newest event: emails are
    /// for what happens from now on.
    fn derive(&self, source: &Source) -> ApiResult<()> {
        let key = cursor_key(source.kind);
        let snapshot = source.engine.read()?;
        let cursor = match self.identity.mail(&key)? {
            Some(bytes) => decode::<u64>(&bytes)
                .ok_or_else(|| ApiError::internal_from("an email cursor does not decode"))?,
            None => {
                let newest = newest_event(&snapshot)?;
                self.identity.change(|_| {
                    Ok::<_, ApiError>((vec![Change::Mail(key.clone(), Some(encode(&newest)))], ()))
                })?;
                return Ok(());
            }
        };
        let events = snapshot.events_after(cursor, EVENTS_PER_STEP_MAX)?;
        let Some(last) = events.last().map(|e| e.seq) else { return Ok(()) };
        let base = messages::public_base(&self.config, source.kind);
        let mut out: Vec<Message> = Vec::new();
        for event in &events {
            out.extend(messages::for_event(&self.identity, &snapshot, &base, source.kind, event)?);
        }
        let now = self.now();
        let email = self.email();
        self.identity.change(|identity| {
            // Another writer of the cursor would be a second node: the
            // change lock and this check keep one event's emails single.
            let stored = identity.mail(&key)?.and_then(|b| decode::<u64>(&b));
            if stored != Some(cursor) {
                return Ok::<_, ApiError>((Vec::new(), ()));
            }
            let mut queue = Queue::new(identity, email, now)?;
            for message in out {
                queue.push(message)?;
            }
            let mut changes = queue.into_changes();
            changes.push(Change::Mail(key.clone(), Some(encode(&last))));
            Ok((changes, ()))
        })
    }

    /// Queues the notices of endpoints the dispatcher disabled: each once,
    /// marked in the same identity change (`mail-done/…`), then its
    /// engine document is deleted.
    async fn disabled_endpoints(&self, source: &Source) -> ApiResult<()> {
        let snapshot = source.engine.read()?;
        let pending = snapshot.documents(DISABLED_NOTICES)?;
        if pending.is_empty() {
            return Ok(());
        }
        let base = messages::public_base(&self.config, source.kind);
        let now = self.now();
        let email = self.email();
        let mut done = Vec::new();
        for (id, bytes) in pending {
            let Some(notice) = crate::store::documents::decode::<DisabledNotice>(&bytes).ok() else {
                continue;
            };
            let marker = format!("mail-done/{}/{id}", source.kind.name());
            let messages = messages::endpoint_disabled(&self.identity, &base, source.kind, &notice);
            self.identity.change(|identity| {
                if identity.mail(&marker)?.is_some() {
                    return Ok::<_, ApiError>((Vec::new(), ()));
                }
                let mut queue = Queue::new(identity, email, now)?;
                for message in messages {
                    queue.push(message)?;
                }
                let mut changes = queue.into_changes();
                changes.push(Change::Mail(marker.clone(), Some(Vec::new())));
                Ok((changes, ()))
            })?;
            done.push(sika_engine::Document {
                collection: DISABLED_NOTICES.into(),
                id,
                body: Vec::new(),
                list: None,
            });
        }
        source.engine.execute(sika_engine::Command::PutDocuments { documents: done }).await?;
        Ok(())
    }

    /// Queues an alert for each condition that began since the last check.
    fn alert(&self, alerted: &mut HashSet<String>) -> ApiResult<()> {
        let Some(operator) = self.email().operator.clone() else { return Ok(()) };
        let now = self.now();
        let mut current: Vec<(String, String, Vec<String>)> = Vec::new();
        for source in &self.sources {
            let stack = source.kind.name();
            let unavailable = source
                .engine
                .unavailable_reason()
                .or_else(|| source.disk_reserve.as_ref().and_then(|reserve| reserve.shortfall()));
            if let Some(reason) = unavailable {
                current.push((
                    format!("storage/{stack}"),
                    format!("the {stack} stack's storage is unavailable"),
                    vec![
                        format!("The {stack} writer refuses commands: {reason}."),
                        "Check the disk and the node's logs; /readyz names the reason.".into(),
                    ],
                ));
            }
            if source.rails.flutterwave.is_some()
                && source.rails.health.status() == sika_api::capabilities::MethodStatus::Down
            {
                current.push((
                    format!("provider/{stack}"),
                    "the payment provider is down".into(),
                    vec!["Exchanges with Flutterwave keep failing; the methods routed through it show as down.".into()],
                ));
            }
            if source.kind == StackKind::Live
                && let Ok(counts) = crate::domain::attention::count(&source.engine, source.kind)
                && let Some(oldest) = counts.oldest_awaiting_at
                && source.engine.now_ms().saturating_sub(oldest)
                    > scaled(AWAITING_ALERT_MS, self.config.time_scale)
            {
                current.push((
                    format!("awaiting/{stack}"),
                    "live movements await the operator".into(),
                    vec![format!(
                        "{} live payout(s) or collection(s) have waited for the operator for over an hour. Settle them in the console or the admin API.",
                        counts.awaiting_settlement
                    )],
                ));
            }
        }
        let keys: HashSet<String> = current.iter().map(|(k, _, _)| k.clone()).collect();
        let fresh: Vec<Message> = current
            .into_iter()
            .filter(|(key, _, _)| !alerted.contains(key))
            .map(|(_, title, paragraphs)| messages::operator_alert(&operator, &title, paragraphs))
            .collect();
        super::queue(&self.identity, self.email(), now, fresh)?;
        // A condition that cleared is alerted again if it comes back.
        *alerted = keys;
        Ok(())
    }

    /// Sends the emails due now, one at a time; whether it sent a full step.
    async fn send_due(&self) -> ApiResult<bool> {
        let now = self.now();
        let due: Vec<EmailRecord> = super::open(&self.identity, 1024)?
            .into_iter()
            .filter(|r| r.next_attempt_at.is_none_or(|at| at <= now))
            .take(SENDS_PER_STEP_MAX)
            .collect();
        let full = due.len() == SENDS_PER_STEP_MAX;
        for record in due {
            let envelope = Envelope {
                message_id: record.message_id.clone(),
                to: record.to.clone(),
                subject: record.subject.clone(),
                text: record.text.clone(),
                html: record.html.clone(),
            };
            let attempt = match self.transport.send(envelope).await {
                Ok(()) => Attempt::Accepted,
                Err(Refusal(error)) => {
                    let made = usize::try_from(record.attempts).unwrap_or(usize::MAX);
                    let retry_at = RETRY_LADDER_MS
                        .get(made)
                        .map(|wait| self.now().saturating_add(scaled(*wait, self.config.time_scale)));
                    tracing::warn!(email = %record.id, attempt = made + 1, error = %error, "the SMTP server did not take an email");
                    Attempt::Refused { error, retry_at }
                }
            };
            super::record_attempt(&self.identity, record.seq, attempt, self.now())?;
        }
        Ok(full)
    }
}

/// The newest event's sequence number (0 without any).
fn newest_event(snapshot: &sika_engine::Snapshot) -> ApiResult<u64> {
    let mut cursor = 0;
    loop {
        let events = snapshot.events_after(cursor, 4096)?;
        match events.last() {
            Some(last) => cursor = last.seq,
            None => return Ok(cursor),
        }
    }
}

fn scaled(ms: i64, time_scale: f64) -> i64 {
    #[expect(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let scaled = (ms as f64 * time_scale).round() as i64;
    scaled.max(1)
}
