//! `/v1/exports/{resource}.csv`: a list's rows over a period as a CSV file,
//! streamed. Each handler parses, calls one use case of `domain::exports`
//! and hands its [`CsvExport`] to [`csv_response`], which streams it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use sika_api::MovementFilter;
use sika_api::exports::{CsvDocument, ExportRange, ExportRefusals};
use sika_api::refunds::RefundFilter;
use sika_api::statements::BalanceTransactionFilter;
use tokio::task::JoinHandle;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::exports::{self, CsvExport};
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::envelope::Streamed;
use crate::http::extract::{ApiQueries, ApiQuery};

pub(crate) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .routes(routes!(balance_transactions))
        .routes(routes!(payouts))
        .routes(routes!(collections))
        .routes(routes!(refunds))
}

/// Balance transactions as a CSV file
///
/// The balance transactions list's rows made within the period
/// (`createdFrom` inclusive, `createdTo` exclusive, at most 366 days apart;
/// by default the 366 days ending now), newest first, as RFC 4180 CSV with
/// a header row, streamed (chunked, no `Content-Length`).
#[utoipa::path(get, path = "/v1/exports/balance-transactions.csv", operation_id = "exportBalanceTransactions",
    params(BalanceTransactionFilter), security(("bearer" = ["accounts:read"])),
    responses((status = 200, description = "The balance transactions, one row each", content_type = "text/csv",
        body = CsvDocument), ExportRefusals),
)]
async fn balance_transactions(
    Call { stack, principal }: Call,
    ApiQuery(filter): ApiQuery<BalanceTransactionFilter>,
) -> ApiResult<Response> {
    Ok(csv_response(exports::balance_transactions((&stack).into(), &principal, filter)?))
}

/// Payouts as a CSV file
///
/// The payouts list's rows created within the period (`createdFrom`
/// inclusive, `createdTo` exclusive, at most 366 days apart; by default
/// the 366 days ending now), newest first, as RFC 4180 CSV with a header
/// row, streamed (chunked, no `Content-Length`).
#[utoipa::path(get, path = "/v1/exports/payouts.csv", operation_id = "exportPayouts",
    params(ExportRange, MovementFilter), security(("bearer" = ["payouts:read"])),
    responses((status = 200, description = "The payouts, one row each", content_type = "text/csv", body = CsvDocument),
        ExportRefusals),
)]
async fn payouts(
    Call { stack, principal }: Call,
    ApiQueries(range, filter): ApiQueries<ExportRange, MovementFilter>,
) -> ApiResult<Response> {
    Ok(csv_response(exports::payouts((&stack).into(), &principal, &range, filter)?))
}

/// Collections as a CSV file
///
/// The collections list's rows created within the period, as the payouts
/// export writes them.
#[utoipa::path(get, path = "/v1/exports/collections.csv", operation_id = "exportCollections",
    params(ExportRange, MovementFilter), security(("bearer" = ["collections:read"])),
    responses((status = 200, description = "The collections, one row each", content_type = "text/csv", body = CsvDocument),
        ExportRefusals),
)]
async fn collections(
    Call { stack, principal }: Call,
    ApiQueries(range, filter): ApiQueries<ExportRange, MovementFilter>,
) -> ApiResult<Response> {
    Ok(csv_response(exports::collections((&stack).into(), &principal, &range, filter)?))
}

/// Refunds as a CSV file
///
/// The refunds list's rows created within the period, as the payouts
/// export writes them.
#[utoipa::path(get, path = "/v1/exports/refunds.csv", operation_id = "exportRefunds",
    params(ExportRange, RefundFilter), security(("bearer" = ["refunds:read"])),
    responses((status = 200, description = "The refunds, one row each", content_type = "text/csv", body = CsvDocument),
        ExportRefusals),
)]
async fn refunds(
    Call { stack, principal }: Call,
    ApiQueries(range, filter): ApiQueries<ExportRange, RefundFilter>,
) -> ApiResult<Response> {
    Ok(csv_response(exports::refunds((&stack).into(), &principal, &range, filter)?))
}

/// A 200 streaming `export` as an attachment: `text/csv; charset=utf-8`,
/// chunked, never cached or sniffed. The envelope passes its body through
/// unread ([`Streamed`]).
pub(crate) fn csv_response(export: CsvExport) -> Response {
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", export.filename))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8")),
        (header::CONTENT_DISPOSITION, disposition),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::CACHE_CONTROL, HeaderValue::from_static("private, no-store")),
    ];
    let mut response = (headers, Body::new(CsvBody { idle: Some(export), running: None })).into_response();
    response.extensions_mut().insert(Streamed);
    response
}

type Chunk = (CsvExport, ApiResult<Option<Vec<u8>>>);

/// The body of an export: each chunk is written on a blocking thread (it
/// reads the store) when the connection asks for it, and not before, so at
/// most one chunk is in flight however slowly the client reads.
struct CsvBody {
    idle: Option<CsvExport>,
    running: Option<JoinHandle<Chunk>>,
}

impl http_body::Body for CsvBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(running) = this.running.as_mut() {
                let joined = ready!(Pin::new(running).poll(cx));
                this.running = None;
                match joined {
                    Ok((export, Ok(Some(bytes)))) => {
                        this.idle = Some(export);
                        if !bytes.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(bytes)))));
                        }
                    }
                    Ok((_, Ok(None))) => return Poll::Ready(None),
                    Ok((export, Err(error))) => return Poll::Ready(Some(Err(cut(&export.filename, &error)))),
                    Err(joined) => return Poll::Ready(Some(Err(cut("an export", &joined)))),
                }
            }
            let Some(mut export) = this.idle.take() else { return Poll::Ready(None) };
            this.running = Some(tokio::task::spawn_blocking(move || {
                let chunk = export.next_chunk();
                (export, chunk)
            }));
        }
    }
}

/// An export that failed after its first bytes: the connection is cut (the
/// client sees a truncated chunked body, never a file that looks whole),
/// and the cause is logged.
fn cut(what: &str, cause: &dyn std::fmt::Debug) -> std::io::Error {
    tracing::error!(export = what, cause = ?cause, "an export failed while it was streamed");
    std::io::Error::other("the export could not be completed")
}
