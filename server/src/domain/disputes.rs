//! Disputes opened on paid collections and payment-link payments, with
//! their message threads.
//!
//! A dispute is a document (`disputes`, listed under its organization); each
//! message is its own document, listed under `dispute_messages:{disputeId}`.
//! While a dispute is open its collection carries a marker (`dispute_open`,
//! keyed by collection id) so a payment has at most one open dispute.
//!
//! Every write is a `Command::Save` that expects the dispute document to be
//! exactly what the caller read. A message does not change the dispute, so
//! concurrent messages never conflict with each other. A resolution takes
//! two saves: the first only marks the dispute `closing`, which freezes the
//! thread (every message that has not committed yet now conflicts, reads
//! the dispute again and is refused); the second reads the frozen thread,
//! sets the outcome and records `dispute.updated` and `dispute.closed` with
//! it. So a message racing a resolution either commits before it and is in
//! the thread (and in the events), or is refused; and a stream of messages
//! cannot starve a resolution. A resolution interrupted between the two
//! saves is finished by the next one.
//!
//! Disputes move money. The engine keeps each dispute's money
//! (`sika_engine::DisputeRecord`: what it holds or took, and whether it is
//! open, lost or won) beside the document, and opening and resolution are
//! each one engine command (`OpenDispute`, `ResolveDispute`) carrying the
//! document writes, so the document and the ledger move together. Opening
//! holds the amount on the merchant's balance (what is available, when
//! that is less; the next inflows fill the rest, each firing
//! `dispute.updated`); `accepted` takes it, `declined` releases it. The
//! events carry the dispute's money as it stood (`EventPayload::Dispute`),
//! rendered with the document and the thread as of the event.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sika_api::ListPage;
use sika_api::disputes::{self as wire, CreateDisputeMessage, DisputeAttachmentInput, SimulateDispute};
use sika_engine::disputes::NewDispute;
use sika_engine::movements::{CollectionRecord, MovementStatus};
use sika_engine::{
    Command, Currency, DisputeRecord, DisputeState, Document, Engine, EngineError, EventKind, EventPayload,
    EventRecord, Expected, NewEvent, Outcome, Snapshot,
};

use crate::domain::error::{ApiError, ApiResult, money_error};
use crate::domain::files;
use crate::domain::identity::Identity;
use crate::domain::pagination::{Lists, PageQuery};
use crate::domain::render::{self, timestamp, wire_enum};
use crate::domain::stack_kind::StackKind;
use crate::store::documents::{decode, document};

/// What disputes read and change: the stack's ledger, its files, what its
/// lists' cursors are signed with. A handler fills it from its stack.
#[derive(Clone, Copy)]
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    pub kind: StackKind,
    pub identity: &'a Identity,
    pub files: files::Store<'a>,
}

impl Deps<'_> {
    fn now_ms(&self) -> i64 {
        self.engine.now_ms()
    }

    fn lists(&self) -> Lists<'_> {
        Lists { ledger: self.engine, stack: self.kind, secret: self.identity.secret() }
    }
}

pub(crate) const COLLECTION: &str = "disputes";
pub(crate) const MESSAGES: &str = "dispute_messages";
/// Collection id → the id of its open dispute.
const OPEN_BY_COLLECTION: &str = "dispute_open";
/// How long the merchant has to answer: seven days from opening.
pub(crate) const EVIDENCE_WINDOW_MS: i64 = 7 * 24 * 60 * 60 * 1000;
pub(crate) const BODY_CHARS_MAX: usize = 5000;
pub(crate) const ATTACHMENTS_MAX: usize = 10;
pub(crate) const URL_CHARS_MAX: usize = 2048;
/// Messages one thread holds. Checked before each post, so concurrent posts
/// can pass it by at most their number.
pub(crate) const THREAD_MESSAGES_MAX: usize = 500;
/// Attempts of one write that keeps meeting concurrent changes.
const SAVE_ATTEMPTS_MAX: usize = 10;

pub(crate) const STATUSES: &[&str] = &["open", "accepted", "declined", "resolved"];
pub(crate) const REASONS: &[&str] =
    &["fraudulent", "duplicate", "product_not_received", "product_unacceptable", "unrecognized", "general"];
pub(crate) const OUTCOMES: &[&str] = &["accepted", "declined"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Status {
    Open,
    Accepted,
    Declined,
    /// Named by the spec; resolution writes `Accepted` or `Declined`, and
    /// the `status=resolved` filter matches every dispute no longer open.
    Resolved,
}

impl Status {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Accepted => "accepted",
            Status::Declined => "declined",
            Status::Resolved => "resolved",
        }
    }

    pub(crate) fn is_open(self) -> bool {
        self == Status::Open
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Dispute {
    pub id: String,
    pub organization: String,
    pub status: Status,
    pub amount: i128,
    pub currency: String,
    pub reason: String,
    pub collection_id: String,
    pub payment_link_id: Option<String>,
    pub status_message: String,
    pub evidence_due_by: i64,
    pub resolved_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Being resolved: the thread takes no more messages (not shown; the
    /// status stays `open` until the resolution commits).
    pub closing: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attachment {
    pub name: String,
    pub url: String,
    pub file_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Message {
    pub id: String,
    pub dispute_id: String,
    pub organization: String,
    pub author_type: String,
    pub body: String,
    pub attachments: Vec<Attachment>,
    pub created_at: i64,
}

impl Message {
    /// The message as every response and dispute event shows it.
    pub(crate) fn render(&self) -> ApiResult<wire::DisputeMessage> {
        Ok(wire::DisputeMessage {
            attachments: self
                .attachments
                .iter()
                .map(|a| wire::DisputeAttachment {
                    file_id: a.file_id.clone(),
                    name: a.name.clone(),
                    url: a.url.clone(),
                })
                .collect(),
            author_type: wire_enum(&self.author_type)?,
            body: self.body.clone(),
            created_at: timestamp(self.created_at),
            dispute_id: self.dispute_id.clone(),
            id: self.id.clone(),
        })
    }
}

/// The list a dispute's messages are indexed under.
pub(crate) fn thread_list(dispute_id: &str) -> String {
    format!("{MESSAGES}:{dispute_id}")
}

/// The file `file_id` when a message of `dispute`'s thread attaches it:
/// the operator reads a dispute's evidence, not any file of the
/// organization. `None` for any other file.
pub(crate) fn attached_file(
    snapshot: &Snapshot,
    dispute: &Dispute,
    file_id: &str,
) -> ApiResult<Option<crate::domain::files::StoredFile>> {
    let attached =
        messages(snapshot, dispute)?.iter().any(|m| m.attachments.iter().any(|a| a.file_id == file_id));
    if !attached {
        return Ok(None);
    }
    crate::domain::files::load_for(snapshot, &dispute.organization, file_id)
}

/// A dispute and its stored bytes (what `Expected::unchanged` compares).
pub(crate) fn load(snapshot: &Snapshot, id: &str) -> ApiResult<Option<(Dispute, Vec<u8>)>> {
    match snapshot.document(COLLECTION, id)? {
        Some(bytes) => Ok(Some((decode(&bytes)?, bytes))),
        None => Ok(None),
    }
}

/// The dispute `id`; `organization` `None` is the operator, who sees all.
/// Unknown, or another organization's: `404 not_found`.
pub(crate) fn load_for(
    snapshot: &Snapshot,
    organization: Option<&str>,
    id: &str,
) -> ApiResult<(Dispute, Vec<u8>)> {
    load(snapshot, id)?
        .filter(|(d, _)| organization.is_none_or(|o| d.organization == o))
        .ok_or_else(|| ApiError::not_found(format!("dispute '{id}' not found")))
}

pub(crate) fn load_message(snapshot: &Snapshot, id: &str) -> ApiResult<Option<Message>> {
    Ok(snapshot.document(MESSAGES, id)?.map(|b| decode(&b)).transpose()?)
}

/// The ids of a dispute's messages, oldest first.
fn message_ids(snapshot: &Snapshot, dispute: &Dispute) -> ApiResult<Vec<String>> {
    const CHUNK: usize = 100;
    let list = thread_list(&dispute.id);
    let mut ids = Vec::new();
    let mut before = None;
    loop {
        let entries = snapshot.list(&dispute.organization, &list, before, CHUNK)?;
        let full = entries.len() == CHUNK;
        before = entries.last().map(|(position, _)| *position);
        ids.extend(entries.into_iter().map(|(_, id)| id));
        if !full {
            break;
        }
    }
    ids.reverse();
    Ok(ids)
}

/// The thread, oldest first.
pub(crate) fn messages(snapshot: &Snapshot, dispute: &Dispute) -> ApiResult<Vec<Message>> {
    let mut out = Vec::new();
    for id in message_ids(snapshot, dispute)? {
        if let Some(message) = load_message(snapshot, &id)? {
            out.push(message);
        }
    }
    Ok(out)
}

/// The dispute as every response and dispute event shows it, with its
/// money as `money` says (`None`: a dispute opened before disputes moved
/// money, which holds nothing); `thread` (oldest first) is the single
/// dispute's, and lists go without. Where the dispute stands (status,
/// outcome, when resolved and last changed) is the money's, so an event
/// shows the dispute as that change left it.
pub(crate) fn view(
    dispute: &Dispute,
    money: Option<&DisputeRecord>,
    thread: Option<&[Message]>,
) -> ApiResult<wire::Dispute> {
    let (status, resolved_at, updated_at, held) = match money {
        None => (dispute.status, dispute.resolved_at, dispute.updated_at, 0),
        Some(m) => {
            let status = match m.state {
                DisputeState::Open => Status::Open,
                DisputeState::Lost => Status::Accepted,
                DisputeState::Won => Status::Declined,
            };
            (status, m.resolved_at, m.updated_at, m.held_amount().map_err(ApiError::internal_from)?)
        }
    };
    Ok(wire::Dispute {
        amount: render::amount(&dispute.currency, dispute.amount),
        collection_id: dispute.collection_id.clone(),
        created_at: timestamp(dispute.created_at),
        currency: dispute.currency.clone(),
        evidence_due_by: timestamp(dispute.evidence_due_by),
        held_amount: render::amount(&dispute.currency, held),
        id: dispute.id.clone(),
        messages: thread.map(|t| t.iter().map(Message::render).collect()).transpose()?,
        outcome: match status {
            Status::Open | Status::Resolved => None,
            Status::Accepted => Some(wire::DisputeResult::Lost),
            Status::Declined => Some(wire::DisputeResult::Won),
        },
        payment_link_id: dispute.payment_link_id.clone(),
        reason: wire_enum(&dispute.reason)?,
        resolved_at: resolved_at.map(timestamp),
        status: match status {
            Status::Open => wire::DisputeStatus::Open,
            Status::Accepted => wire::DisputeStatus::Accepted,
            Status::Declined => wire::DisputeStatus::Declined,
            Status::Resolved => wire::DisputeStatus::Resolved,
        },
        status_message: status_message(status).to_string(),
        updated_at: timestamp(updated_at),
    })
}

/// The sentence on where a dispute stands.
fn status_message(status: Status) -> &'static str {
    match status {
        Status::Open => "The payer disputed this payment; answer in the thread before evidenceDueBy",
        Status::Accepted => "Resolved: the dispute was accepted",
        Status::Declined => "Resolved: the dispute was declined",
        Status::Resolved => "Resolved",
    }
}

/// The dispute as `GET /v1/disputes/{id}` shows it: with its money and
/// its thread, oldest first.
pub(crate) fn render(snapshot: &Snapshot, dispute: &Dispute) -> ApiResult<wire::Dispute> {
    let money = snapshot.dispute(&dispute.id)?;
    view(dispute, money.as_ref(), Some(&messages(snapshot, dispute)?))
}

/// A dispute event's `data`: the dispute as the event's change left it,
/// with the money the event carries and the thread as it stood then.
pub(crate) fn event_view(
    snapshot: &Snapshot,
    money: &DisputeRecord,
    event: &EventRecord,
) -> ApiResult<Option<wire::Dispute>> {
    let Some((dispute, _)) = load(snapshot, &money.id)? else { return Ok(None) };
    let mut thread = messages(snapshot, &dispute)?;
    thread.retain(|m| m.created_at <= event.created_at);
    view(&dispute, Some(money), Some(&thread)).map(Some)
}

fn dispute_document(dispute: &Dispute) -> Document {
    document(COLLECTION, &dispute.id, dispute, Some((&dispute.organization, COLLECTION)))
}

/// The money a dispute command returns.
fn money_of(outcome: Outcome) -> ApiResult<DisputeRecord> {
    match outcome {
        Outcome::Dispute(money) => Ok(*money),
        other => Err(crate::domain::error::unexpected(&other)),
    }
}

// ---------------------------------------------------------------------------
// Opening (the sandbox simulation)

fn one_of(field: &str, value: &str, allowed: &[&str]) -> ApiResult<String> {
    if allowed.contains(&value) {
        Ok(value.to_string())
    } else {
        Err(ApiError::validation(field, format!("must be one of {}", allowed.join(", "))))
    }
}

/// The payment a request disputes, and the payment link it came through.
fn disputed_payment(
    snapshot: &Snapshot,
    organization: &str,
    request: &SimulateDispute,
) -> ApiResult<(CollectionRecord, Option<String>)> {
    match (&request.collection_id, &request.payment_link_id) {
        (Some(_), Some(_)) => {
            Err(ApiError::validation("paymentLinkId", "give collectionId or paymentLinkId, not both"))
        }
        (None, None) => {
            Err(ApiError::validation("collectionId", "collectionId or paymentLinkId is required"))
        }
        (Some(id), None) => {
            let collection = snapshot
                .collection(&sika_engine::CollectionId::named(id))?
                .filter(|c| c.organization == organization)
                .ok_or_else(|| ApiError::not_found(format!("collection '{id}' not found")))?;
            if collection.status != MovementStatus::Completed {
                return Err(ApiError::bad_request(format!(
                    "collection '{id}' is {}; only a completed payment can be disputed",
                    collection.status.name()
                )));
            }
            // A checkout payment names its link in the collection's metadata.
            let link = serde_json::from_str::<Value>(&collection.metadata)
                .ok()
                .and_then(|m| m["paymentLinkId"].as_str().map(str::to_string));
            Ok((collection, link))
        }
        (None, Some(link)) => {
            let latest = crate::domain::checkout::latest_link_payment(snapshot, organization, link)?
                .ok_or_else(|| ApiError::not_found(format!("payment link '{link}' not found")))?;
            let newest = latest.ok_or_else(|| {
                ApiError::bad_request(format!(
                    "payment link '{link}' is not paid; only a completed payment can be disputed"
                ))
            })?;
            Ok((newest, Some(link.clone())))
        }
    }
}

/// Opens a dispute on a completed payment; fires `dispute.created`.
#[expect(clippy::too_many_lines)]
pub(crate) async fn open(
    deps: &Deps<'_>,
    organization: &str,
    request: SimulateDispute,
) -> ApiResult<wire::Dispute> {
    let reason = match &request.reason {
        None => "general".to_string(),
        Some(r) => one_of("reason", r, REASONS)?,
    };
    let snapshot = deps.engine.read()?;
    let (collection, payment_link_id) = disputed_payment(&snapshot, organization, &request)?;
    let currency = Currency::find(&collection.currency).map_err(|e| ApiError::internal_from(e))?;
    let amount = match &request.amount {
        None => collection.amount,
        Some(text) => currency.parse(text.as_str(), false).map_err(|e| money_error("amount", e))?,
    };
    if amount > collection.amount {
        return Err(ApiError::validation(
            "amount",
            format!(
                "must not exceed the paid amount {} {}",
                currency.format(collection.amount),
                currency.code
            ),
        ));
    }
    let open_dispute = |snapshot: &Snapshot| -> ApiResult<ApiError> {
        let id = snapshot.document(OPEN_BY_COLLECTION, &collection.id)?.unwrap_or_default();
        Ok(ApiError::bad_request(format!(
            "collection '{}' already has an open dispute ('{}'); resolve it first",
            collection.id,
            String::from_utf8_lossy(&id)
        )))
    };
    if snapshot.document(OPEN_BY_COLLECTION, &collection.id)?.is_some() {
        return Err(open_dispute(&snapshot)?);
    }
    let now = deps.now_ms();
    let dispute = Dispute {
        id: sika_engine::ids::new_id("dsp"),
        organization: organization.to_string(),
        status: Status::Open,
        amount,
        currency: currency.code.to_string(),
        reason,
        collection_id: collection.id.clone(),
        payment_link_id,
        status_message: "The payer disputed this payment; answer in the thread before evidenceDueBy".into(),
        evidence_due_by: now + EVIDENCE_WINDOW_MS,
        resolved_at: None,
        created_at: now,
        updated_at: now,
        closing: false,
    };
    let saved = deps
        .engine
        .execute(Command::OpenDispute {
            dispute: Box::new(NewDispute {
                id: dispute.id.clone(),
                organization: dispute.organization.clone(),
                currency: dispute.currency.clone(),
                amount,
            }),
            expect: vec![Expected {
                collection: OPEN_BY_COLLECTION.into(),
                id: collection.id.clone(),
                digest: None,
            }],
            documents: vec![
                dispute_document(&dispute),
                Document {
                    collection: OPEN_BY_COLLECTION.into(),
                    id: collection.id.clone(),
                    body: dispute.id.clone().into_bytes(),
                    list: None,
                },
            ],
        })
        .await;
    let money = match saved {
        Ok(applied) => money_of(applied.outcome)?,
        // Another dispute on this payment was opened meanwhile.
        Err(EngineError::Conflict(_)) => return Err(open_dispute(&deps.engine.read()?)?),
        Err(e) => return Err(e.into()),
    };
    // A new dispute has no thread yet.
    view(&dispute, Some(&money), Some(&[]))
}

// ---------------------------------------------------------------------------
// Resolution (sandbox simulation and the operator)

/// Resolves an open dispute as `accepted` or `declined`; fires
/// `dispute.updated` then `dispute.closed`, in the same transaction.
/// `organization` `None` is the operator.
pub(crate) async fn resolve(
    deps: &Deps<'_>,
    organization: Option<&str>,
    id: &str,
    outcome: &str,
) -> ApiResult<wire::Dispute> {
    let status = match one_of("outcome", outcome, OUTCOMES)?.as_str() {
        "accepted" => Status::Accepted,
        _ => Status::Declined,
    };
    for _ in 0..SAVE_ATTEMPTS_MAX {
        let snapshot = deps.engine.read()?;
        let (mut dispute, bytes) = load_for(&snapshot, organization, id)?;
        if !dispute.status.is_open() {
            return Err(ApiError::new(
                sika_api::ErrorCode::InvalidState,
                format!("dispute '{id}' is already resolved ({})", dispute.status.name()),
            ));
        }
        if !dispute.closing {
            // First save: freeze the thread, then read it again.
            dispute.closing = true;
            let saved = deps
                .engine
                .execute(Command::Save {
                    expect: vec![Expected::unchanged(COLLECTION, id, &bytes)],
                    documents: vec![dispute_document(&dispute)],
                    events: Vec::new(),
                })
                .await;
            match saved {
                Ok(_) | Err(EngineError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        // Second save: the thread is final; resolve with it.
        let now = deps.now_ms();
        dispute.closing = false;
        dispute.status = status;
        dispute.resolved_at = Some(now);
        dispute.updated_at = now;
        dispute.status_message = status_message(status).into();
        let thread = messages(&snapshot, &dispute)?;
        let mut documents = vec![dispute_document(&dispute)];
        let marker = snapshot.document(OPEN_BY_COLLECTION, &dispute.collection_id)?;
        if marker.as_deref() == Some(dispute.id.as_bytes()) {
            // An empty body deletes the marker: the payment may be disputed again.
            documents.push(Document {
                collection: OPEN_BY_COLLECTION.into(),
                id: dispute.collection_id.clone(),
                body: Vec::new(),
                list: None,
            });
        }
        let expect = vec![Expected::unchanged(COLLECTION, id, &bytes)];
        if snapshot.dispute(id)?.is_none() {
            match resolve_without_money(deps, &dispute, &thread, expect, documents).await? {
                Some(resolved) => return Ok(resolved),
                None => continue,
            }
        }
        let saved = deps
            .engine
            .execute(Command::ResolveDispute {
                dispute_id: dispute.id.clone(),
                accepted: status == Status::Accepted,
                expect,
                documents,
            })
            .await;
        match saved {
            Ok(applied) => return view(&dispute, Some(&money_of(applied.outcome)?), Some(&thread)),
            // Another resolution won; the next read says so.
            Err(EngineError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(busy(id))
}

/// Resolves a dispute opened before disputes moved money: it holds
/// nothing, so its resolution is its documents and events alone. `None`
/// when the dispute changed meanwhile (read it again).
async fn resolve_without_money(
    deps: &Deps<'_>,
    dispute: &Dispute,
    thread: &[Message],
    expect: Vec<Expected>,
    documents: Vec<Document>,
) -> ApiResult<Option<wire::Dispute>> {
    let rendered = view(dispute, None, Some(thread))?;
    let json = render::to_json(&rendered).to_string();
    let event = |kind| NewEvent {
        organization: dispute.organization.clone(),
        kind,
        payload: EventPayload::Rendered { id: dispute.id.clone(), json: json.clone() },
    };
    let events = vec![event(EventKind::DisputeUpdated), event(EventKind::DisputeClosed)];
    match deps.engine.execute(Command::Save { expect, documents, events }).await {
        Ok(_) => Ok(Some(rendered)),
        Err(EngineError::Conflict(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `POST /v1/disputes/{id}/accept`: the merchant gives in; the dispute
/// is resolved `accepted` as `resolve` does it.
pub(crate) async fn accept(deps: &Deps<'_>, organization: &str, id: &str) -> ApiResult<wire::Dispute> {
    resolve(deps, Some(organization), id, "accepted").await
}

fn busy(id: &str) -> ApiError {
    ApiError::from(EngineError::Conflict(format!("dispute '{id}' kept changing; retry the request")))
}

// ---------------------------------------------------------------------------
// The thread

fn attachments(
    snapshot: &Snapshot,
    organization: &str,
    requests: Vec<DisputeAttachmentInput>,
) -> ApiResult<Vec<Attachment>> {
    if requests.len() > ATTACHMENTS_MAX {
        return Err(ApiError::validation(
            "attachments",
            format!("must hold at most {ATTACHMENTS_MAX} items"),
        ));
    }
    let mut out = Vec::with_capacity(requests.len());
    for (index, request) in requests.into_iter().enumerate() {
        let field = |name: &str| format!("attachments[{index}].{name}");
        let file = files::load_for(snapshot, organization, &request.file_id)?.ok_or_else(|| {
            ApiError::validation(
                &field("fileId"),
                format!("no file '{}'; upload it with POST /v1/files", request.file_id),
            )
        })?;
        let name = match &request.name {
            None => file.name.clone(),
            Some(name) => files::check_name(&field("name"), name)?,
        };
        let url = match &request.url {
            None => file.url(),
            Some(url) => {
                let url = url.trim();
                if url.is_empty() || url.chars().count() > URL_CHARS_MAX {
                    return Err(ApiError::validation(
                        &field("url"),
                        format!("must be 1 to {URL_CHARS_MAX} characters"),
                    ));
                }
                crate::domain::limits::check_visible(&field("url"), url)?;
                url.to_string()
            }
        };
        out.push(Attachment { name, url, file_id: file.id });
    }
    Ok(out)
}

/// Adds a merchant message to an open dispute's thread. Refused with `400
/// bad_request` once the dispute is resolved, also when the resolution
/// commits while this request is in flight.
pub(crate) async fn post_message(
    deps: &Deps<'_>,
    organization: &str,
    dispute_id: &str,
    request: CreateDisputeMessage,
) -> ApiResult<wire::DisputeMessage> {
    let snapshot = deps.engine.read()?;
    load_for(&snapshot, Some(organization), dispute_id)?;
    let body = request.body.trim();
    if body.is_empty() || body.chars().count() > BODY_CHARS_MAX {
        return Err(ApiError::validation("body", format!("must be 1 to {BODY_CHARS_MAX} characters")));
    }
    let attachments = attachments(&snapshot, organization, request.attachments)?;
    let message = Message {
        id: sika_engine::ids::new_id("dsm"),
        dispute_id: dispute_id.to_string(),
        organization: organization.to_string(),
        author_type: "merchant".into(),
        body: body.to_string(),
        attachments,
        created_at: deps.now_ms(),
    };
    // Rendered before it is saved, so an answer cannot fail after the write.
    let rendered = message.render()?;
    let message_document =
        document(MESSAGES, &message.id, &message, Some((organization, &thread_list(dispute_id))));
    let mut snapshot = snapshot;
    for _ in 0..SAVE_ATTEMPTS_MAX {
        let (dispute, bytes) = load_for(&snapshot, Some(organization), dispute_id)?;
        if !dispute.status.is_open() || dispute.closing {
            let state = if dispute.closing { "being resolved" } else { dispute.status.name() };
            return Err(ApiError::bad_request(format!(
                "dispute '{dispute_id}' is {state}; its thread takes no more messages"
            )));
        }
        if message_ids(&snapshot, &dispute)?.len() >= THREAD_MESSAGES_MAX {
            return Err(ApiError::bad_request(format!(
                "dispute '{dispute_id}' already holds {THREAD_MESSAGES_MAX} messages"
            )));
        }
        let mut expect = vec![Expected::unchanged(COLLECTION, dispute_id, &bytes)];
        let mut documents = vec![message_document.clone()];
        // Each attached file as it is now, and its marker: a delete racing
        // this message either commits first (the file is gone) or is refused.
        for (index, attachment) in message.attachments.iter().enumerate() {
            let (file, marker) =
                files::attach(&snapshot, &attachment.file_id, &message.id)?.ok_or_else(|| {
                    ApiError::validation(
                        &format!("attachments[{index}].fileId"),
                        format!("no file '{}'; it was deleted", attachment.file_id),
                    )
                })?;
            expect.push(file);
            documents.push(marker);
        }
        let saved = deps.engine.execute(Command::Save { expect, documents, events: Vec::new() }).await;
        match saved {
            Ok(_) => return Ok(rendered),
            // The dispute changed (it was resolved): read it again.
            Err(EngineError::Conflict(_)) => snapshot = deps.engine.read()?,
            Err(e) => return Err(e.into()),
        }
    }
    Err(busy(dispute_id))
}

/// `DELETE /v1/files/{id}`: deletes a file no dispute message attaches,
/// `409 invalid_state` naming the message when one does. A message
/// posted since files carried markers is found by its marker, atomically
/// with the delete (`files::delete`); one from before them is found here,
/// by reading the organization's threads (such messages never change, so
/// reading them before the delete is enough).
pub(crate) async fn delete_file(deps: &Deps<'_>, file: &files::StoredFile) -> ApiResult<()> {
    let snapshot = deps.engine.read()?;
    if files::attached_by(&snapshot, &file.id)?.is_none()
        && let Some(message) = attaching_message(&snapshot, &file.organization, &file.id)?
    {
        return Err(files::attached(&file.id, &message));
    }
    files::delete(deps.files, file).await
}

/// A message that brings its files along (the dashboard's reply form):
/// each file is stored as `POST /v1/files` stores it, then the message is
/// posted as `POST /v1/disputes/{id}/messages` posts it, with them
/// attached. When a file or the message is refused, the files stored for
/// it are deleted again, so a refused reply leaves nothing behind.
pub(crate) async fn post_message_with_files(
    deps: &Deps<'_>,
    organization: &str,
    dispute_id: &str,
    body: String,
    uploads: Vec<sika_api::files::CreateFile>,
) -> ApiResult<wire::DisputeMessage> {
    load_for(&deps.engine.read()?, Some(organization), dispute_id)?;
    let mut stored = Vec::new();
    let mut posted = Ok(());
    for upload in uploads {
        let saved = match files::build(upload, organization, deps.engine.now_ms()) {
            Ok((file, bytes)) => files::save(deps.files, &file, bytes).await.map(|()| file),
            Err(e) => Err(e),
        };
        match saved {
            Ok(file) => stored.push(file),
            Err(e) => {
                posted = Err(e);
                break;
            }
        }
    }
    let result = match posted {
        Ok(()) => {
            let attachments = stored
                .iter()
                .map(|f| DisputeAttachmentInput { file_id: f.id.clone(), name: None, url: None })
                .collect();
            post_message(deps, organization, dispute_id, CreateDisputeMessage { body, attachments }).await
        }
        Err(e) => Err(e),
    };
    if result.is_err() {
        for file in &stored {
            if let Err(e) = files::delete(deps.files, file).await {
                tracing::warn!(file = %file.id, error = %e.message, "cannot delete a refused reply's file");
            }
        }
    }
    result
}

/// The first of an organization's dispute messages that attaches `file_id`.
fn attaching_message(snapshot: &Snapshot, organization: &str, file_id: &str) -> ApiResult<Option<String>> {
    const CHUNK: usize = 100;
    let mut before = None;
    loop {
        let disputes = snapshot.list(organization, COLLECTION, before, CHUNK)?;
        for (_, id) in &disputes {
            let Some((dispute, _)) = load(snapshot, id)? else { continue };
            for message_id in message_ids(snapshot, &dispute)? {
                let attaches = load_message(snapshot, &message_id)?
                    .is_some_and(|m| m.attachments.iter().any(|a| a.file_id == file_id));
                if attaches {
                    return Ok(Some(message_id));
                }
            }
        }
        match disputes.last() {
            Some((position, _)) if disputes.len() == CHUNK => before = Some(*position),
            _ => return Ok(None),
        }
    }
}

/// One page of a dispute's messages, newest first like every list.
pub(crate) fn message_page(
    deps: &Deps<'_>,
    organization: &str,
    dispute_id: &str,
    query: &PageQuery,
) -> ApiResult<ListPage<wire::DisputeMessage>> {
    load_for(&deps.engine.read()?, Some(organization), dispute_id)?;
    deps.lists().page_of_views(organization, &thread_list(dispute_id), query, |snapshot, id| {
        load_message(snapshot, id)?.map(|m| m.render()).transpose()
    })
}

// ---------------------------------------------------------------------------
// Lists

/// Whether a dispute passes the `status` filter; `resolved` matches every
/// dispute that is no longer open.
pub(crate) fn status_matches(dispute: &Dispute, filter: Option<&str>) -> bool {
    match filter {
        None => true,
        Some("resolved") => !dispute.status.is_open(),
        Some(status) => dispute.status.name() == status,
    }
}

/// Checks a `status` filter value.
pub(crate) fn check_status_filter(status: Option<&str>) -> ApiResult<()> {
    match status {
        Some(s) => one_of("status", s, STATUSES).map(|_| ()),
        None => Ok(()),
    }
}

/// One page of an organization's disputes, newest first.
pub(crate) fn page(
    deps: &Deps<'_>,
    organization: &str,
    query: &PageQuery,
    status: Option<&str>,
) -> ApiResult<ListPage<wire::Dispute>> {
    check_status_filter(status)?;
    deps.lists().page_of_views(organization, COLLECTION, query, |snapshot, id| {
        load(snapshot, id)?
            .filter(|(d, _)| status_matches(d, status))
            .map(|(d, _)| view(&d, snapshot.dispute(&d.id)?.as_ref(), None))
            .transpose()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resolved_filter_matches_every_closed_dispute() {
        let mut d = Dispute {
            id: "dsp_1".into(),
            organization: "org".into(),
            status: Status::Open,
            amount: 100,
            currency: "GHS".into(),
            reason: "general".into(),
            collection_id: "col_1".into(),
            payment_link_id: None,
            status_message: String::new(),
            evidence_due_by: 0,
            resolved_at: None,
            created_at: 0,
            updated_at: 0,
            closing: false,
        };
        assert!(status_matches(&d, Some("open")) && !status_matches(&d, Some("resolved")));
        d.status = Status::Declined;
        assert!(status_matches(&d, Some("resolved")) && status_matches(&d, Some("declined")));
        assert!(!status_matches(&d, Some("accepted")) && status_matches(&d, None));
        assert!(check_status_filter(Some("nope")).is_err());
        assert!(check_status_filter(Some("resolved")).is_ok());
        let shown = view(&d, None, None).unwrap();
        assert_eq!((shown.amount.as_str(), shown.held_amount.as_str()), ("1.00", "0.00"));
        assert_eq!(shown.outcome, Some(wire::DisputeResult::Won));
    }
}
