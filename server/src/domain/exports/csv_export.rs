//! The streaming CSV writer every export shares. An export is a sequence
//! of pages that a closure produces on demand, newest first; the writer
//! asks for the next pages only when the connection has taken the bytes of
//! the last ones (the caller pulls chunks one at a time), so a slow reader
//! slows the walk instead of making the node hold the file, and memory is
//! a page and a chunk however many rows there are.

use std::marker::PhantomData;

use serde::Serialize;
use sika_engine::{Engine, Snapshot};
use utoipa::ToSchema;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::exports::columns::{Column, columns};
use crate::domain::exports::range::{CreatedRange, Place, wire_ms};

/// Bytes gathered before a chunk is handed to the connection.
const CHUNK_BYTES_MIN: usize = 64 * 1024;
/// Pages read for one chunk at most, so a filter that matches little still
/// hands back a (short) chunk regularly rather than walking every row in
/// one go.
const PAGES_PER_CHUNK_MAX: usize = 8;
/// Stored list entries read for one page of a stored list.
const STORED_PAGE_ITEMS: usize = 500;
/// How far before `createdFrom` a stored list is still walked. Positions
/// follow the order of creation and `createdAt` the node's wall clock,
/// which a time correction can step back: a row a little older than its
/// neighbour does not end the walk.
const CLOCK_STEP_MS: i64 = 5 * 60 * 1000;

/// One page of an export's rows, newest first, and where the next page
/// starts (`None` after the last).
pub(crate) struct ExportPage<T, C> {
    pub rows: Vec<T>,
    pub next: Option<C>,
}

/// A wire item that knows when it was created (its `createdAt`).
pub(crate) trait Dated {
    fn created_at(&self) -> &str;
}

/// A CSV file being written: its name and the chunks of its bytes, pulled
/// one at a time with [`CsvExport::next_chunk`].
pub(crate) struct CsvExport {
    pub filename: String,
    rows: Box<dyn Chunks>,
}

impl CsvExport {
    /// The next bytes of the file (the header row first), `None` once
    /// it is whole. Reads the store: call it off the async workers.
    pub(crate) fn next_chunk(&mut self) -> ApiResult<Option<Vec<u8>>> {
        self.rows.next_chunk()
    }
}

impl std::fmt::Debug for CsvExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvExport").field("filename", &self.filename).finish_non_exhaustive()
    }
}

trait Chunks: Send {
    fn next_chunk(&mut self) -> ApiResult<Option<Vec<u8>>>;
}

/// The CSV export `<resource>_<period>.csv` of the rows `pages` produces:
/// it is called with `None` for the first page, then with each page's
/// `next` until a page has none. The columns are `T`'s wire fields
/// ([`columns`]), read once from its schema.
pub(crate) fn csv<T, C, F>(resource: &str, range: &CreatedRange, pages: F) -> CsvExport
where
    T: Serialize + ToSchema + 'static,
    C: Send + 'static,
    F: FnMut(Option<C>) -> ApiResult<ExportPage<T, C>> + Send + 'static,
{
    let mut builder = csv::WriterBuilder::new();
    builder.terminator(csv::Terminator::CRLF).has_headers(false);
    let paged = Paged {
        columns: columns::<T>(),
        builder,
        state: State::Header,
        pages,
        rows: PhantomData::<fn() -> T>,
    };
    CsvExport { filename: format!("{resource}_{}.csv", range.label()), rows: Box::new(paged) }
}

enum State<C> {
    Header,
    At(Option<C>),
    Done,
}

struct Paged<T, C, F> {
    columns: Vec<Column>,
    builder: csv::WriterBuilder,
    state: State<C>,
    pages: F,
    rows: PhantomData<fn() -> T>,
}

impl<T, C, F> Chunks for Paged<T, C, F>
where
    T: Serialize,
    C: Send,
    F: FnMut(Option<C>) -> ApiResult<ExportPage<T, C>> + Send,
{
    fn next_chunk(&mut self) -> ApiResult<Option<Vec<u8>>> {
        let mut writer = self.builder.from_writer(Vec::with_capacity(CHUNK_BYTES_MIN * 2));
        let mut pages_read = 0;
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done if pages_read == 0 => return Ok(None),
                State::Done => break,
                State::Header => {
                    writer.write_record(self.columns.iter().map(|c| c.header.as_str())).map_err(failed)?;
                    self.state = State::At(None);
                }
                State::At(cursor) => {
                    let page = (self.pages)(cursor)?;
                    pages_read += 1;
                    for row in &page.rows {
                        let item = serde_json::to_value(row).map_err(ApiError::internal_from)?;
                        writer.write_record(self.columns.iter().map(|c| c.cell(&item))).map_err(failed)?;
                    }
                    self.state = page.next.map_or(State::Done, |next| State::At(Some(next)));
                    if pages_read >= PAGES_PER_CHUNK_MAX || writer.get_ref().len() >= CHUNK_BYTES_MIN {
                        break;
                    }
                }
            }
        }
        writer.into_inner().map(Some).map_err(|e| ApiError::internal_from(e.to_string()))
    }
}

fn failed(error: csv::Error) -> ApiError {
    ApiError::internal_from(error)
}

/// The pages of a stored list (an organization's `list`, newest first, as
/// the list endpoints walk it): each entry found by `find` (`None` skips
/// it), kept when created within `range` and when `keep` (the list's
/// filters) says so. The period is checked on every row found, kept or
/// not, so a filter that matches nothing still ends the walk at
/// `createdFrom` rather than at the list's oldest row. Each page reads a fresh snapshot, so an export
/// read slowly pins no old state of the store; a page starts after the
/// last entry the one before read, so rows are never repeated or skipped.
pub(crate) fn stored_pages<T, F, K>(
    ledger: Engine,
    organization: String,
    list: &'static str,
    range: CreatedRange,
    mut find: F,
    keep: K,
) -> impl FnMut(Option<u64>) -> ApiResult<ExportPage<T, u64>> + Send + 'static
where
    T: Dated,
    F: FnMut(&Snapshot, &str, &str) -> ApiResult<Option<T>> + Send + 'static,
    K: Fn(&T) -> bool + Send + 'static,
{
    move |before| {
        let snapshot = ledger.read()?;
        let entries = snapshot.list(&organization, list, before, STORED_PAGE_ITEMS)?;
        let mut rows = Vec::new();
        for (_, id) in &entries {
            let Some(item) = find(&snapshot, &organization, id)? else { continue };
            let created_ms = wire_ms(item.created_at()).ok_or_else(|| {
                ApiError::internal_from(format!("{list} entry '{id}' has no readable createdAt"))
            })?;
            match range.place(created_ms) {
                Place::Within if keep(&item) => rows.push(item),
                Place::Earlier if created_ms < range.from_ms.saturating_sub(CLOCK_STEP_MS) => {
                    return Ok(ExportPage { rows, next: None });
                }
                Place::Later | Place::Within | Place::Earlier => {}
            }
        }
        let next = match entries.last() {
            Some((position, _)) if entries.len() == STORED_PAGE_ITEMS => Some(*position),
            _ => None,
        };
        Ok(ExportPage { rows, next })
    }
}
