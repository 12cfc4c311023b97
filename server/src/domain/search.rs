//! The operator's search: any part of an id, reference, phone number, email
//! or amount, across every organization's payouts, collections, orders,
//! payment pages and payment links on a stack. Nothing is indexed by
//! substring, so the search reads records (each kind newest first) and
//! stops after a bounded number of them, saying so. The console's activity
//! lists (one kind on one stack, filtered by `q` and `status`) match the
//! same way.

use serde::Serialize;
use serde_json::Value;
use sika_api::ListPage;
use sika_api::admin::{ActivityQuery, Owned, SearchHit, SearchKind, SearchResults};
use sika_engine::{Engine, Snapshot};

use crate::domain::checkout::{self, LINKS, PAGES};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::pagination::{Lists, PageQuery, Paging, list_page};
use crate::domain::render::{self, amount, timestamp};
use crate::domain::stack_kind::StackKind;

/// Records one search reads, over every kind, organization and stack.
pub(crate) const SEARCH_SCANNED_MAX: usize = 20_000;
/// Hits one search returns.
pub(crate) const SEARCH_HITS_MAX: usize = 100;
pub(crate) const QUERY_CHARS_MIN: usize = 2;
pub(crate) const QUERY_CHARS_MAX: usize = 128;
/// Ids read from a list per step.
const LIST_BATCH: usize = 500;

const KINDS: [(SearchKind, &str); 5] = [
    (SearchKind::Payout, "payouts"),
    (SearchKind::Collection, "collections"),
    (SearchKind::Order, "orders"),
    (SearchKind::PaymentPage, PAGES),
    (SearchKind::PaymentLink, LINKS),
];

/// The text searched for, checked: `400` naming `q` otherwise.
pub(crate) fn needle(q: Option<&str>) -> ApiResult<String> {
    let q = q.map(str::trim).unwrap_or_default();
    let length = q.chars().count();
    if !(QUERY_CHARS_MIN..=QUERY_CHARS_MAX).contains(&length) || q.chars().any(char::is_control) {
        return Err(ApiError::validation(
            "q",
            format!("must be {QUERY_CHARS_MIN} to {QUERY_CHARS_MAX} characters on one line"),
        ));
    }
    Ok(q.to_lowercase())
}

/// The search across `stacks` (each stack's kind and ledger), for the
/// organizations `organizations`.
pub(crate) fn search(
    stacks: &[(StackKind, &Engine)],
    organizations: &[String],
    needle: &str,
) -> ApiResult<SearchResults> {
    let mut results = SearchResults {
        q: needle.to_string(),
        data: Vec::new(),
        scanned: 0,
        scan_limit_reached: false,
        hits_limit_reached: false,
    };
    'all: for (stack, ledger) in stacks {
        let snapshot = ledger.read()?;
        for (kind, list) in KINDS {
            for organization in organizations {
                let mut before = None;
                loop {
                    let ids = snapshot.list(organization, list, before, LIST_BATCH)?;
                    for (_, id) in &ids {
                        if results.scanned as usize >= SEARCH_SCANNED_MAX {
                            results.scan_limit_reached = true;
                            break 'all;
                        }
                        results.scanned += 1;
                        let Some(view) = view_of(&snapshot, kind, organization, id)? else { continue };
                        let Some((field, value)) = find(&view, needle, "") else { continue };
                        if results.data.len() == SEARCH_HITS_MAX {
                            results.hits_limit_reached = true;
                            break 'all;
                        }
                        results.data.push(SearchHit {
                            kind,
                            id: id.clone(),
                            stack: stack.wire_name(),
                            organization_id: organization.clone(),
                            field,
                            value,
                            created_at: view["createdAt"].as_str().unwrap_or_default().to_string(),
                        });
                    }
                    match ids.last() {
                        Some((position, _)) if ids.len() == LIST_BATCH => before = Some(*position),
                        _ => break,
                    }
                }
            }
        }
    }
    Ok(results)
}

/// Items of one kind read per organization by the operator's activity
/// lists.
const ACTIVITY_SCANNED_PER_ORGANIZATION_MAX: usize = 5_000;

/// Whether a rendered item matches an activity list's `q` and `status`.
fn activity_matches(item: &Value, query: &ActivityQuery) -> bool {
    let matches_q = query
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .is_none_or(|q| contains(item, &q.to_lowercase()));
    matches_q && query.status.as_deref().is_none_or(|s| item["status"].as_str() == Some(s))
}

/// One page of the operator's activity list of `kind` on a stack: every
/// organization's items (each rendered by `render`, which may skip one),
/// those `query` matches, newest first, each with its owner.
pub(crate) fn activity<T: Serialize>(
    lists: Lists<'_>,
    identity: &Identity,
    kind: &str,
    query: &ActivityQuery,
    render: impl Fn(&Snapshot, &str) -> ApiResult<Option<T>>,
) -> ApiResult<ListPage<Owned<T>>> {
    let Lists { ledger, stack, secret } = lists;
    let scope = format!("admin/{}/{kind}", stack.name());
    let page =
        PageQuery { limit: query.limit.clone(), cursor: query.cursor.clone() }.page(&secret, &scope)?;
    let snapshot = ledger.read()?;
    let mut rows: Vec<(String, Owned<T>)> = Vec::new();
    for org in identity.organizations() {
        for (_, id) in snapshot.list(&org.id, kind, None, ACTIVITY_SCANNED_PER_ORGANIZATION_MAX)? {
            let Some(item) = render(&snapshot, &id)? else { continue };
            let json = render::to_json(&item);
            if activity_matches(&json, query) {
                let created_at = json["createdAt"].as_str().unwrap_or_default().to_string();
                rows.push((created_at, Owned { organization_id: org.id.clone(), item }));
            }
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0));
    // The cursor is the offset into this newest-first result.
    let start = page.before.unwrap_or(0) as usize;
    let end = (start + page.limit).min(rows.len());
    let has_more = end < rows.len();
    let data = rows.into_iter().skip(start).take(page.limit).map(|(_, v)| v).collect();
    Ok(list_page(data, Some(end as u64), has_more, &secret, &scope))
}

/// A record as JSON: payouts, collections and orders as the API shows them
/// (decimal amounts), pages and links as stored, with their amount in
/// decimal beside the minor units.
fn view_of(snapshot: &Snapshot, kind: SearchKind, organization: &str, id: &str) -> ApiResult<Option<Value>> {
    Ok(match kind {
        SearchKind::Payout => snapshot
            .payout(&sika_engine::PayoutId::named(id))?
            .map(|p| render::to_json(&render::payout(&p, &[]))),
        SearchKind::Collection => match snapshot.collection(&sika_engine::CollectionId::named(id))? {
            Some(c) => {
                let refunded = crate::domain::views::refunded_minor(snapshot, &c.id)?;
                Some(render::to_json(&render::collection(&c, &[], refunded)))
            }
            None => None,
        },
        SearchKind::Order => {
            crate::domain::views::find_order(snapshot, organization, &sika_engine::OrderId::named(id))?
                .map(|o| render::to_json(&o))
        }
        SearchKind::PaymentPage => checkout::load_page(snapshot, id)?.map(|page| {
            stored(render::to_json(&page), page.amount, &page.settings.currency, page.created_at)
        }),
        SearchKind::PaymentLink => checkout::load_link(snapshot, id)?.map(|link| {
            stored(render::to_json(&link), link.amount, &link.settings.currency, link.created_at)
        }),
    })
}

fn stored(mut json: Value, minor: Option<i128>, currency: &str, created_at: i64) -> Value {
    if let Some(minor) = minor {
        json["amount"] = Value::String(amount(currency, minor));
    }
    json["createdAt"] = Value::String(timestamp(created_at));
    json
}

/// Whether any text or number under `value` (but its timeline) contains
/// `needle` (in lower case): the one substring match the search and the
/// admin lists share.
pub(crate) fn contains(value: &Value, needle: &str) -> bool {
    find(value, needle, "").is_some()
}

/// The first text or number under `value` containing `needle` (in lower
/// case), with its path. A timeline repeats the fields it describes, so it
/// is not searched.
fn find(value: &Value, needle: &str, path: &str) -> Option<(String, String)> {
    let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    match value {
        Value::String(text) if text.to_lowercase().contains(needle) => Some((path.to_string(), text.clone())),
        Value::Number(number) if number.to_string().contains(needle) => {
            Some((path.to_string(), number.to_string()))
        }
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| find(item, needle, &join(&index.to_string())))
        }
        Value::Object(fields) => fields
            .iter()
            .filter(|(key, _)| key.as_str() != "timeline")
            .find_map(|(key, item)| find(item, needle, &join(key))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_any_part_of_any_field_with_its_path() {
        let view = json!({
            "id": "pay_abc",
            "to": { "accountNumber": "+233241234567" },
            "customer": { "email": "Ada@Example.com" },
            "amount": "1250.00",
            "timeline": [{ "detail": "+233241234567 zzz" }],
        });
        assert_eq!(find(&view, "241234", ""), Some(("to.accountNumber".into(), "+233241234567".into())));
        assert_eq!(find(&view, "ada@ex", ""), Some(("customer.email".into(), "Ada@Example.com".into())));
        assert_eq!(find(&view, "1250", ""), Some(("amount".into(), "1250.00".into())));
        assert_eq!(find(&view, "zzz", ""), None, "the timeline is not searched");
    }

    #[test]
    fn the_query_is_checked() {
        assert!(needle(None).is_err());
        assert!(needle(Some(" a ")).is_err());
        assert!(needle(Some(&"x".repeat(QUERY_CHARS_MAX + 1))).is_err());
        assert_eq!(needle(Some(" INV-20 ")).unwrap(), "inv-20");
    }
}
