//! Disputes: the list (status filter, paged by the API's cursor), one
//! dispute with its thread and each message's files, a reply that sends
//! files along (a `multipart/form-data` form, through the same use cases
//! as `POST /v1/files` and `POST /v1/disputes/{id}/messages`), and
//! accepting, behind a confirmation page of its own (no script). Each asks
//! the API's requirements first, by the operation it stands for.

use super::views::name;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use sika_api::ListQuery;
use sika_api::disputes::Dispute;

use super::session::{Posted, Signed, Uploaded};
use super::views::{Frame, Notice, frame, money, refusal_page, send, shell, when};
use crate::domain::disputes;
use crate::domain::error::ApiResult;
use crate::domain::files::StoredFile;
use crate::http::pages::shell::Shell;
use crate::http::routes::disputes::deps;

/// Rows per page, as the API's default.
const PAGE_ROWS: u32 = 20;

#[derive(Template)]
#[template(path = "dashboard/disputes.html")]
struct ListView {
    shell: Shell,
    frame: Frame,
    statuses: &'static [&'static str],
    filter_status: String,
    rows: Vec<Row>,
    next: Option<String>,
}

struct Row {
    id: String,
    amount: String,
    held: String,
    status: String,
    reason: String,
    due: String,
}

fn row(dispute: &Dispute) -> Row {
    Row {
        id: dispute.id.clone(),
        amount: money(&dispute.currency, &dispute.amount),
        held: money(&dispute.currency, &dispute.held_amount),
        status: name(&dispute.status),
        reason: name(&dispute.reason).replace('_', " "),
        due: when(&dispute.evidence_due_by),
    }
}

/// What the list's address says: the status and the cursor.
#[derive(Deserialize, Default)]
pub(super) struct ListAsked {
    status: Option<String>,
    cursor: Option<String>,
}

fn list_page(signed: &Signed, asked: &ListAsked) -> ApiResult<ListView> {
    signed.admit(&Method::GET, "/v1/disputes")?;
    let query = ListQuery { limit: Some(PAGE_ROWS.to_string()), cursor: asked.cursor.clone() };
    let status = asked.status.as_deref().filter(|s| !s.is_empty());
    let page = disputes::page(&deps(&signed.stack), &signed.member().organization, &query, status)?;
    let next = page.next_cursor.filter(|_| page.has_more).map(|cursor| {
        let pairs = [("status", status.unwrap_or_default()), ("cursor", cursor.as_str())];
        let query: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        format!("/dashboard/disputes?{query}")
    });
    Ok(ListView {
        shell: shell(&signed.stack, "Disputes"),
        frame: frame(signed, "disputes", None),
        statuses: disputes::STATUSES,
        filter_status: status.unwrap_or_default().to_string(),
        rows: page.data.iter().map(row).collect(),
        next,
    })
}

/// `GET /dashboard/disputes?status=…&cursor=…`.
pub(super) async fn list(signed: Signed, Query(asked): Query<ListAsked>) -> Response {
    match list_page(&signed, &asked) {
        Ok(page) => send(StatusCode::OK, &page, Vec::new()),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/dispute.html")]
struct DetailView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    id: String,
    facts: Vec<(&'static str, String)>,
    thread: Vec<MessageView>,
    can_reply: bool,
    can_accept: bool,
    can_download: bool,
}

struct MessageView {
    id: String,
    at: String,
    body: String,
    files: Vec<(String, String)>,
}

/// The dispute `id` as `GET /v1/disputes/{id}` answers it, or its 404.
fn dispute(signed: &Signed, id: &str) -> ApiResult<Dispute> {
    signed.admit(&Method::GET, "/v1/disputes/{id}")?;
    let snapshot = signed.stack.engine.read()?;
    let record: disputes::Dispute =
        crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, id)?;
    disputes::render(&snapshot, &record)
}

fn detail_page(signed: &Signed, id: &str, notice: Option<Notice>) -> Response {
    let dispute = match dispute(signed, id) {
        Ok(dispute) => dispute,
        Err(e) => return refusal_page(&signed.stack, &e),
    };
    let summary = row(&dispute);
    let mut facts = vec![
        ("Status", summary.status),
        ("Amount", summary.amount),
        ("Held", summary.held),
        ("Reason", summary.reason),
        ("Payment", dispute.collection_id.clone()),
        ("Opened", when(&dispute.created_at)),
        ("Answer by", summary.due),
        ("Where it stands", dispute.status_message.clone()),
    ];
    if let Some(outcome) = &dispute.outcome {
        facts.push(("Outcome", name(outcome)));
    }
    let thread = dispute
        .messages
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m| MessageView {
            at: when(&m.created_at),
            body: m.body,
            files: m.attachments.into_iter().map(|a| (a.file_id, a.name)).collect(),
            id: m.id,
        })
        .collect();
    let open = name(&dispute.status) == "open";
    let status = notice.as_ref().map_or(StatusCode::OK, |n| n.status);
    let page = DetailView {
        shell: shell(&signed.stack, "Dispute"),
        frame: frame(signed, "disputes", notice),
        csrf: signed.csrf(),
        id: dispute.id,
        facts,
        thread,
        can_reply: open
            && signed.can(&Method::POST, "/v1/disputes/{id}/messages")
            && signed.can(&Method::POST, "/v1/files"),
        can_accept: open && signed.can(&Method::POST, "/v1/disputes/{id}/accept"),
        can_download: signed.can(&Method::GET, "/v1/files/{id}/contents"),
    };
    send(status, &page, Vec::new())
}

/// `GET /dashboard/disputes/{id}`: the dispute and its thread.
pub(super) async fn detail(signed: Signed, Path(id): Path<String>) -> Response {
    detail_page(&signed, &id, None)
}

/// `POST /v1/files` for each file sent, then `POST
/// /v1/disputes/{id}/messages` with them attached, from the reply form.
pub(super) async fn reply(Path(id): Path<String>, Uploaded { signed, fields, files }: Uploaded) -> Response {
    let uploads = files
        .into_iter()
        .map(|f| sika_api::files::CreateFile {
            name: f.name,
            content_type: f.content_type,
            data: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, f.bytes),
        })
        .collect::<Vec<_>>();
    let admitted = signed
        .admit(&Method::POST, "/v1/disputes/{id}/messages")
        .and_then(|()| if uploads.is_empty() { Ok(()) } else { signed.admit(&Method::POST, "/v1/files") });
    let posted = match admitted {
        Ok(()) => {
            let organization = &signed.member().organization;
            let deps = deps(&signed.stack);
            disputes::post_message_with_files(&deps, organization, &id, fields.text("body"), uploads).await
        }
        Err(e) => Err(e),
    };
    let notice = Notice::of(&posted, |m| match m.attachments.len() {
        0 => "Your message is in the thread".to_string(),
        n => format!("Your message and {n} file(s) are in the thread"),
    });
    detail_page(&signed, &id, Some(notice))
}

#[derive(Template)]
#[template(path = "dashboard/dispute_accept.html")]
struct ConfirmView {
    shell: Shell,
    frame: Frame,
    csrf: String,
    id: String,
    amount: String,
}

/// `GET /dashboard/disputes/{id}/accept`: what accepting does, and the
/// button that does it.
pub(super) async fn confirm_accept(signed: Signed, Path(id): Path<String>) -> Response {
    let shown = signed.admit(&Method::POST, "/v1/disputes/{id}/accept").and_then(|()| dispute(&signed, &id));
    match shown {
        Ok(dispute) => {
            let page = ConfirmView {
                shell: shell(&signed.stack, "Accept the dispute"),
                frame: frame(&signed, "disputes", None),
                csrf: signed.csrf(),
                amount: money(&dispute.currency, &dispute.amount),
                id: dispute.id,
            };
            send(StatusCode::OK, &page, Vec::new())
        }
        Err(e) => refusal_page(&signed.stack, &e),
    }
}

/// `POST /v1/disputes/{id}/accept` from the confirmation page.
pub(super) async fn accept(Path(id): Path<String>, Posted { signed, .. }: Posted) -> Response {
    let accepted = match signed.admit(&Method::POST, "/v1/disputes/{id}/accept") {
        Ok(()) => disputes::accept(&deps(&signed.stack), &signed.member().organization, &id).await,
        Err(e) => Err(e),
    };
    let notice = Notice::of(&accepted, |d| {
        format!("You accepted dispute {}: {} is taken", d.id, money(&d.currency, &d.amount))
    });
    detail_page(&signed, &id, Some(notice))
}

/// `GET /v1/files/{id}/contents`: a message's file, as a download.
pub(super) async fn file(signed: Signed, Path(id): Path<String>) -> Response {
    let read = signed.admit(&Method::GET, "/v1/files/{id}/contents").and_then(|()| {
        let snapshot = signed.stack.engine.read()?;
        let file: StoredFile = crate::http::found::owned(&signed.stack, &snapshot, &signed.principal, &id)?;
        let bytes = crate::domain::files::download(&snapshot, &file)?;
        Ok((file, bytes))
    });
    match read {
        Ok((file, bytes)) => crate::http::routes::files::download(&file, bytes),
        Err(e) => refusal_page(&signed.stack, &e),
    }
}
