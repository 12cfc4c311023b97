//! Lists: `limit` 1 to 100 (default 20), newest first, and opaque cursors
//! signed with the node's secret so a forged or altered one is refused.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sika_api::ListPage;
use subtle::ConstantTimeEq;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::stack_kind::StackKind;

pub(crate) const PAGE_SIZE_DEFAULT: usize = 20;
pub(crate) const PAGE_SIZE_MAX: usize = 100;
const TAG_BYTES: usize = 12;

/// The `limit` and `cursor` query parameters (the wire type).
pub(crate) use sika_api::ListQuery as PageQuery;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page {
    pub limit: usize,
    /// List only items before this position.
    pub before: Option<u64>,
}

fn tag(secret: &[u8], scope: &str, position: u64) -> [u8; TAG_BYTES] {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(scope.as_bytes());
    mac.update(&position.to_be_bytes());
    let full = mac.finalize().into_bytes();
    let mut out = [0; TAG_BYTES];
    out.copy_from_slice(&full[..TAG_BYTES]);
    out
}

/// A cursor for `scope` (which list, for whom) continuing after `position`.
pub(crate) fn encode_cursor(secret: &[u8], scope: &str, position: u64) -> String {
    let mut bytes = position.to_be_bytes().to_vec();
    bytes.extend_from_slice(&tag(secret, scope, position));
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn decode_cursor(secret: &[u8], scope: &str, cursor: &str) -> Option<u64> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).ok()?;
    if bytes.len() != 8 + TAG_BYTES {
        return None;
    }
    let position = u64::from_be_bytes(bytes[..8].try_into().ok()?);
    bool::from(bytes[8..].ct_eq(&tag(secret, scope, position))).then_some(position)
}

/// Reading a list's paging parameters.
pub(crate) trait Paging {
    /// The page asked for, with a cursor checked against `scope`'s secret.
    fn page(&self, secret: &[u8], scope: &str) -> ApiResult<Page>;
}

impl Paging for PageQuery {
    fn page(&self, secret: &[u8], scope: &str) -> ApiResult<Page> {
        let limit = match &self.limit {
            None => PAGE_SIZE_DEFAULT,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=PAGE_SIZE_MAX).contains(&n) => n,
                _ => {
                    return Err(ApiError::validation(
                        "limit",
                        format!("must be an integer from 1 to {PAGE_SIZE_MAX}"),
                    ));
                }
            },
        };
        let before = match &self.cursor {
            None => None,
            Some(c) if c.is_empty() => None,
            Some(c) => Some(decode_cursor(secret, scope, c).ok_or_else(|| {
                ApiError::validation(
                    "cursor",
                    "is not a cursor this list returned; pass nextCursor unchanged",
                )
            })?),
        };
        Ok(Page { limit, before })
    }
}

/// `{data, hasMore, nextCursor}` from the items of one page.
pub(crate) fn list_page<T>(
    data: Vec<T>,
    last_position: Option<u64>,
    has_more: bool,
    secret: &[u8],
    scope: &str,
) -> ListPage<T> {
    let next_cursor = match (has_more, last_position) {
        (true, Some(position)) => Some(encode_cursor(secret, scope, position)),
        _ => None,
    };
    ListPage { data, has_more, next_cursor }
}

/// A list's `status` and `externalReference` filters, checked.
pub(crate) struct Filter {
    status: Option<String>,
    reference: Option<String>,
}

impl Filter {
    /// Refuses a status the resource never has, naming the field.
    pub(crate) fn new(query: sika_api::MovementFilter, statuses: &[&str]) -> ApiResult<Filter> {
        if let Some(status) = &query.status
            && !statuses.contains(&status.as_str())
        {
            return Err(crate::domain::error::ApiError::validation(
                "status",
                format!("must be one of {}", statuses.join(", ")),
            ));
        }
        Ok(Filter { status: query.status, reference: query.external_reference })
    }

    /// Whether an item with this status (as serde writes it) and reference passes.
    pub(crate) fn keeps(&self, status: &impl serde::Serialize, reference: &str) -> bool {
        let written = serde_json::to_value(status).ok();
        let status_ok =
            self.status.as_deref().is_none_or(|s| written.as_ref().and_then(|w| w.as_str()) == Some(s));
        status_ok && self.reference.as_deref().is_none_or(|r| r == reference)
    }
}

/// The most stored items one list request looks at. A filter that matches
/// few of them answers a short page, even an empty one, with `hasMore` and
/// a cursor past what it looked at, rather than walking the whole index in
/// one request; the client pages on as it would anyway.
pub(crate) const SCAN_MAX: usize = 1_000;

/// What a stored list is paged with: the stack's ledger, the stack's kind
/// (part of every cursor's scope, so a sandbox cursor is refused on live)
/// and the node's cursor secret. A `&Stack` turns into one (`domain::stack`).
pub(crate) struct Lists<'a> {
    pub ledger: &'a sika_engine::Engine,
    pub stack: StackKind,
    pub secret: Vec<u8>,
}

/// One page of an organization's `kind` list, newest first: each id is
/// loaded and rendered by `render`, which may filter it out by returning
/// `None`. Filtered pages hold `limit` items when that many match within
/// `SCAN_MAX` items: the walk goes on past skipped ones up to that bound.
pub(crate) fn page_of_views<'a, T>(
    lists: impl Into<Lists<'a>>,
    organization: &str,
    kind: &str,
    query: &PageQuery,
    render: impl FnMut(&sika_engine::Snapshot, &str) -> ApiResult<Option<T>>,
) -> ApiResult<ListPage<T>> {
    lists.into().page(organization, kind, query, render)
}

impl Lists<'_> {
    /// One page of an organization's `kind` list, as [`page_of_views`].
    pub(crate) fn page_of_views<T>(
        &self,
        organization: &str,
        kind: &str,
        query: &PageQuery,
        render: impl FnMut(&sika_engine::Snapshot, &str) -> ApiResult<Option<T>>,
    ) -> ApiResult<ListPage<T>> {
        self.page(organization, kind, query, render)
    }

    /// One page of an organization's `kind` list, as `page_of_views`.
    pub(crate) fn page<T>(
        &self,
        organization: &str,
        kind: &str,
        query: &PageQuery,
        mut render: impl FnMut(&sika_engine::Snapshot, &str) -> ApiResult<Option<T>>,
    ) -> ApiResult<ListPage<T>> {
        let scope = format!("{}/{organization}/{kind}", self.stack.name());
        let page = query.page(&self.secret, &scope)?;
        let snapshot = self.ledger.read()?;
        let mut found: Vec<(u64, T)> = Vec::with_capacity(page.limit + 1);
        let mut before = page.before;
        let mut scanned = 0;
        // Where the walk stopped at the bound, with the page not yet full.
        let mut stopped_at = None;
        'walk: loop {
            let chunk = (page.limit + 1).min(SCAN_MAX - scanned);
            let entries = snapshot.list(organization, kind, before, chunk)?;
            for (position, id) in &entries {
                scanned += 1;
                if let Some(item) = render(&snapshot, id)? {
                    found.push((*position, item));
                    if found.len() > page.limit {
                        break 'walk;
                    }
                }
                if scanned == SCAN_MAX {
                    stopped_at = Some(*position);
                    break 'walk;
                }
            }
            match entries.last() {
                Some((position, _)) if entries.len() == chunk => before = Some(*position),
                _ => break,
            }
        }
        let (has_more, last) = if found.len() > page.limit {
            found.truncate(page.limit);
            (true, found.last().map(|(position, _)| *position))
        } else {
            (stopped_at.is_some(), stopped_at)
        };
        let data = found.into_iter().map(|(_, item)| item).collect();
        Ok(list_page(data, last, has_more, &self.secret, &scope))
    }
}

/// One page of a list held whole in memory (keys, a country's methods, the
/// simulations), in the order given: the cursor is the offset of the next
/// item, signed for `scope` like every other cursor, so these lists take
/// `limit` and `cursor` and refuse bad ones exactly as the stored lists do.
pub(crate) fn page_of_items<T>(
    items: Vec<T>,
    query: &PageQuery,
    secret: &[u8],
    scope: &str,
) -> ApiResult<ListPage<T>> {
    let page = query.page(secret, scope)?;
    let start = usize::try_from(page.before.unwrap_or(0)).unwrap_or(usize::MAX).min(items.len());
    let end = start.saturating_add(page.limit).min(items.len());
    let has_more = end < items.len();
    let data = items.into_iter().skip(start).take(end - start).collect();
    Ok(list_page(data, Some(end as u64), has_more, secret, scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_forgeries() {
        let secret = b"secret";
        let cursor = encode_cursor(secret, "org/conversions", 42);
        let query = PageQuery { limit: None, cursor: Some(cursor.clone()) };
        assert_eq!(query.page(secret, "org/conversions").unwrap().before, Some(42));
        assert!(query.page(secret, "other/conversions").is_err(), "a cursor is bound to its list");
        let mut forged = cursor.into_bytes();
        forged[2] = if forged[2] == b'A' { b'B' } else { b'A' };
        let query = PageQuery { limit: None, cursor: Some(String::from_utf8(forged).unwrap()) };
        assert!(query.page(secret, "org/conversions").is_err());
    }

    #[test]
    fn in_memory_lists_page_by_offset() {
        let secret = b"s";
        let first = page_of_items(
            (0..5).collect(),
            &PageQuery { limit: Some("2".into()), cursor: None },
            secret,
            "k",
        )
        .unwrap();
        assert_eq!((first.data, first.has_more), (vec![0, 1], true));
        let query = PageQuery { limit: Some("4".into()), cursor: first.next_cursor };
        let rest = page_of_items((0..5).collect(), &query, secret, "k").unwrap();
        assert_eq!((rest.data, rest.has_more, rest.next_cursor), (vec![2, 3, 4], false, None));
    }

    #[test]
    fn limits() {
        let secret = b"s";
        for (limit, ok) in
            [("1", true), ("100", true), ("0", false), ("101", false), ("x", false), ("-1", false)]
        {
            let query = PageQuery { limit: Some(limit.into()), cursor: None };
            assert_eq!(query.page(secret, "s").is_ok(), ok, "{limit}");
        }
    }
}
