//! Balance transactions and statements (issue 33): every change to an
//! organization's balances, read from the ledger's index of balance changes
//! (`sika_engine::balance_changes`) and the journal entries it points at.
//! Nothing here is stored: each entry is the ledger's own posting, typed by
//! its memo, so the list and the statements cannot drift from the balances.

use chrono::{DateTime, NaiveDate, NaiveTime};
use sika_api::statements::{
    BalanceTransaction, BalanceTransactionFilter, Statement, StatementBalances, StatementQuery,
    StatementTotal,
};
use sika_api::{ListPage, ListQuery};
use sika_engine::balance_changes::{BalanceAfter, ChangeType, ChangeWithTransfer, change_of, classify};
use sika_engine::{AccountRecord, Currency, Engine, Snapshot, TimestampMs, TransferKind, TransferRecord};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::{Lists, Paging, SCAN_MAX, list_page};
use crate::domain::principal::Principal;
use crate::domain::render::{amount, timestamp};

/// The latest instant a filter or a period may name: the year 9999.
const INSTANT_MAX_MS: TimestampMs = 253_402_300_799_999;

/// A checked filter of balance transactions: what the list, and the
/// exports of the same list, keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BalanceFilter {
    /// Only this currency's balance.
    pub currency: Option<&'static str>,
    pub kind: Option<ChangeType>,
    pub source_id: Option<String>,
    /// Made at or after (ms since the epoch).
    pub from_ms: TimestampMs,
    /// Made before.
    pub to_ms: TimestampMs,
}

impl BalanceFilter {
    /// Checks the wire filter, naming the field it refuses.
    pub(crate) fn parse(filter: BalanceTransactionFilter) -> ApiResult<BalanceFilter> {
        let currency = filter.currency.as_deref().map(known_currency).transpose()?;
        let kind = filter.kind.as_deref().map(change_type).transpose()?;
        let from_ms = filter.created_from.as_deref().map(|t| instant("createdFrom", t)).transpose()?;
        let to_ms = filter.created_to.as_deref().map(|t| instant("createdTo", t)).transpose()?;
        let (from_ms, to_ms) = (from_ms.unwrap_or(0), to_ms.unwrap_or(INSTANT_MAX_MS));
        if to_ms < from_ms {
            return Err(ApiError::validation("createdTo", "must not be before createdFrom"));
        }
        Ok(BalanceFilter { currency, kind, source_id: filter.source_id, from_ms, to_ms })
    }
}

/// Balance transactions newest first, as `newest_first` returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// At most the `limit` asked for, newest first.
    pub items: Vec<BalanceTransaction>,
    /// Where to go on from (pass it as `before`); `None` once nothing older
    /// matches. A chunk may be short, even empty, and still have one: it
    /// stops after reading `SCAN_MAX` entries the filter did not keep.
    pub next: Option<u64>,
}

/// The organization's balance transactions that `filter` keeps, newest
/// first, from strictly before position `before` (a `Chunk::next`; `None`
/// starts at the newest), at most `limit` of them. Each call reads its own
/// snapshot, and positions only grow as entries are added, so walking the
/// chunks of a growing ledger neither skips nor repeats an entry: this is
/// what a streamed export calls, chunk after chunk, holding nothing else.
pub(crate) fn newest_first(
    ledger: &Engine,
    organization: &str,
    filter: &BalanceFilter,
    before: Option<u64>,
    limit: usize,
) -> ApiResult<Chunk> {
    let snapshot = ledger.read()?;
    let accounts: Vec<AccountRecord> = snapshot
        .organization_accounts(organization)?
        .into_iter()
        .filter(|a| filter.currency.is_none_or(|c| c == a.currency))
        .collect();
    let found = walk(&snapshot, &accounts, filter, before, limit.saturating_add(1))?;
    let mut items = found.items;
    let next = if items.len() > limit {
        items.truncate(limit);
        items.last().map(|(position, _)| *position)
    } else {
        found.stopped_at
    };
    Ok(Chunk { items: items.into_iter().map(|(_, item)| item).collect(), next })
}

/// `GET /v1/balance-transactions`: one page, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: BalanceTransactionFilter,
) -> ApiResult<ListPage<BalanceTransaction>> {
    let filter = BalanceFilter::parse(filter)?;
    let organization = principal.organization();
    let scope = format!("{}/{organization}/balance-transactions", lists.stack.name());
    let page = query.page(&lists.secret, &scope)?;
    let chunk = newest_first(lists.ledger, organization, &filter, page.before, page.limit)?;
    Ok(list_page(chunk.items, chunk.next, chunk.next.is_some(), &lists.secret, &scope))
}

/// What a walk found: (position, item) pairs and, when it stopped at the
/// scan bound, the position it stopped at.
struct Found {
    items: Vec<(u64, BalanceTransaction)>,
    stopped_at: Option<u64>,
}

/// Merges the accounts' balance changes newest first (by journal number,
/// which orders them as their times do: the ledger's times never go back),
/// keeping what `filter` keeps, until `wanted` are kept or `SCAN_MAX`
/// entries are read.
fn walk(
    snapshot: &Snapshot,
    accounts: &[AccountRecord],
    filter: &BalanceFilter,
    before: Option<u64>,
    wanted: usize,
) -> ApiResult<Found> {
    // The range ends at the time of the entry `before`; entries of that
    // same millisecond at or after it are skipped by number.
    let to_ms = match before {
        Some(seq) => match snapshot.journal_entry(seq)? {
            Some(entry) => entry.transfer.created_at.saturating_add(1).min(filter.to_ms),
            None => return Err(ApiError::validation("cursor", "names no entry of this ledger")),
        },
        None => filter.to_ms,
    };
    let mut streams = Vec::with_capacity(accounts.len());
    for account in accounts {
        let changes = snapshot.balance_changes(account, filter.from_ms, to_ms)?;
        streams.push((account, changes.peekable()));
    }
    let mut found = Found { items: Vec::new(), stopped_at: None };
    let mut scanned = 0usize;
    loop {
        let mut newest: Option<(usize, u64)> = None;
        for (index, (_, stream)) in streams.iter_mut().enumerate() {
            loop {
                match stream.peek() {
                    Some(Ok(peeked)) if before.is_some_and(|b| peeked.change.journal_seq >= b) => {
                        stream.next();
                    }
                    Some(Ok(peeked)) => {
                        if newest.is_none_or(|(_, seq)| peeked.change.journal_seq > seq) {
                            newest = Some((index, peeked.change.journal_seq));
                        }
                        break;
                    }
                    Some(Err(_)) => {
                        if let Some(Err(error)) = stream.next() {
                            return Err(error.into());
                        }
                    }
                    None => break,
                }
            }
        }
        let Some((index, _)) = newest else { return Ok(found) };
        let (account, stream) = &mut streams[index];
        let Some(Ok(next)) = stream.next() else { return Ok(found) };
        scanned = scanned.saturating_add(1);
        if let Some(item) = render_if_kept(account, &next, filter)? {
            found.items.push((next.change.journal_seq, item));
            if found.items.len() >= wanted {
                return Ok(found);
            }
        }
        if scanned >= SCAN_MAX {
            found.stopped_at = Some(next.change.journal_seq);
            return Ok(found);
        }
    }
}

/// The balance transaction of one change, unless `filter` leaves it out.
fn render_if_kept(
    account: &AccountRecord,
    ChangeWithTransfer { change, transfer }: &ChangeWithTransfer,
    filter: &BalanceFilter,
) -> ApiResult<Option<BalanceTransaction>> {
    let posting = classify(transfer);
    let kept = filter.kind.is_none_or(|k| k == posting.change_type)
        && filter.source_id.as_deref().is_none_or(|s| s == posting.source_id);
    if !kept {
        return Ok(None);
    }
    let moved = change_of(transfer, &account.id)?;
    let currency = account.currency.as_str();
    // A transfer between two organization accounts (only the ledger's own
    // adjustments make one) is two balance transactions of one entry.
    let both_sides = transfer.debit_account.starts_with(|c: char| c.is_ascii_uppercase())
        && transfer.credit_account.starts_with(|c: char| c.is_ascii_uppercase());
    let side = if both_sides && transfer.credit_account == account.id { "_2" } else { "" };
    Ok(Some(BalanceTransaction {
        id: format!("btx_{:015}{side}", change.journal_seq),
        account_number: account.id.clone(),
        currency: currency.to_string(),
        kind: posting.change_type.name().to_string(),
        available_change: amount(currency, moved.available),
        total_change: amount(currency, moved.total),
        available_after: amount(currency, change.after.available),
        total_after: amount(currency, change.after.total),
        source_type: posting.source_type.to_string(),
        description: describe(posting.change_type, &posting.source_id, transfer),
        source_id: posting.source_id,
        created_at: timestamp(change.at),
    }))
}

/// A line an accountant reads, from the change's type, its source and
/// what the transfer did (a hold made, settled or released).
fn describe(kind: ChangeType, source: &str, transfer: &TransferRecord) -> String {
    let settled = matches!(transfer.kind, TransferKind::PostPending(_));
    let released = matches!(transfer.kind, TransferKind::VoidPending(_));
    match kind {
        ChangeType::Deposit => format!("Deposit {source}"),
        ChangeType::Collection if source.starts_with("ord_") => format!("Order {source}: funds received"),
        ChangeType::Collection if settled => format!("Collection {source} completed"),
        ChangeType::Collection if released => format!("Collection {source} failed"),
        ChangeType::Collection => format!("Collection {source} pending"),
        ChangeType::Payout => format!("Payout {source}: amount held"),
        ChangeType::Fee => format!("Payout {source}: fee held"),
        ChangeType::PayoutRelease if transfer.memo.starts_with("fee") => {
            format!("Payout {source} failed: fee released")
        }
        ChangeType::PayoutRelease => format!("Payout {source} failed: amount released"),
        ChangeType::Conversion => format!("Conversion {source}"),
        ChangeType::Refund => format!("Refund {source}: amount held"),
        ChangeType::RefundRelease => format!("Refund {source} failed: amount released"),
        ChangeType::DisputeHold => format!("Dispute {source}: amount held"),
        ChangeType::DisputeRelease => format!("Dispute {source} won: hold released"),
        ChangeType::DisputeLoss => format!("Dispute {source} lost: amount taken"),
        ChangeType::Reversal => format!("Payout {source} reversed by the rail: amount returned"),
        ChangeType::Adjustment => format!("Ledger adjustment: {}", transfer.memo),
    }
}

/// `GET /v1/statements`: a currency's opening and closing balances and its
/// changes by type, from `from` (included) to `to` (excluded).
pub(crate) fn statement(
    ledger: &Engine,
    principal: &Principal,
    query: StatementQuery,
) -> ApiResult<Statement> {
    let currency = known_currency(query.currency.as_deref().ok_or_else(|| required("currency"))?)?;
    let from_ms = instant("from", query.from.as_deref().ok_or_else(|| required("from"))?)?;
    let to_ms = instant("to", query.to.as_deref().ok_or_else(|| required("to"))?)?;
    if to_ms <= from_ms {
        return Err(ApiError::validation("to", "must be after from"));
    }
    let snapshot = ledger.read()?;
    let account = snapshot.organization_account(principal.organization(), currency)?;
    let found = match &account {
        Some(account) => snapshot.statement(account, from_ms, to_ms)?,
        None => sika_engine::balance_changes::Statement::default(),
    };
    let balances = |b: BalanceAfter| StatementBalances {
        available: amount(currency, b.available),
        total: amount(currency, b.total),
    };
    let totals = found
        .totals
        .iter()
        .map(|(kind, sum)| StatementTotal {
            kind: kind.name().to_string(),
            count: sum.count,
            available_change: amount(currency, sum.available),
            total_change: amount(currency, sum.total),
        })
        .collect();
    Ok(Statement {
        currency: currency.to_string(),
        account_number: account.map(|a| a.id),
        from: timestamp(from_ms),
        to: timestamp(to_ms),
        opening: balances(found.opening),
        closing: balances(found.closing),
        totals,
        transaction_count: found.count,
    })
}

fn required(field: &str) -> ApiError {
    ApiError::validation(field, "is required")
}

fn known_currency(code: &str) -> ApiResult<&'static str> {
    Currency::find(&code.to_ascii_uppercase())
        .map(|c| c.code)
        .map_err(|_| ApiError::validation("currency", format!("'{code}' is not a currency this node knows")))
}

fn change_type(name: &str) -> ApiResult<ChangeType> {
    ChangeType::parse(name).ok_or_else(|| {
        let names: Vec<&str> = ChangeType::ALL.iter().map(|t| t.name()).collect();
        ApiError::validation("type", format!("must be one of {}", names.join(", ")))
    })
}

/// A date (`2026-11-01`, 00:00 UTC) or an RFC 3339 date-time, as ms since
/// the epoch, between 1970 and the year 9999; otherwise a refusal naming
/// `field`.
pub(crate) fn instant(field: &str, text: &str) -> ApiResult<TimestampMs> {
    let parsed = match NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        Ok(date) => Some(date.and_time(NaiveTime::MIN).and_utc().timestamp_millis()),
        Err(_) => DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis()),
    };
    parsed.filter(|ms| (0..=INSTANT_MAX_MS).contains(ms)).ok_or_else(|| {
        ApiError::validation(
            field,
            "must be a date (2026-11-01, meaning 00:00 UTC) or an RFC 3339 date-time (2026-11-01T09:30:00Z) from 1970 on",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_is_midnight_utc_and_a_date_time_its_instant() {
        assert_eq!(instant("from", "1970-01-02").ok(), Some(86_400_000));
        assert_eq!(instant("from", "1970-01-01T00:00:01.5Z").ok(), Some(1_500));
        assert_eq!(instant("from", "1970-01-01T01:00:00+01:00").ok(), Some(0));
        for bad in ["2026-13-01", "yesterday", "1969-12-31", "2026-11-01T25:00:00Z", ""] {
            assert!(instant("from", bad).is_err(), "{bad}");
        }
    }
}
