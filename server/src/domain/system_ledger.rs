//! The node's own books for the operator: the system accounts of a stack
//! (fee revenue, the FX desk, rail clearing, the outside world) and the
//! journal entries of any one account, a bounded read at a time; every
//! organization's accounts with their totals; and an audit of the running
//! ledger.

use std::collections::BTreeMap;

use sika_api::admin::{
    CurrencyTotal, EntrySide, LedgerAccount, LedgerEntries, LedgerEntry, LedgerEntryKind, LedgerFigures,
    Owned, StackAccounts, SystemAccount, SystemAccountKind, VerifyResult,
};
use sika_engine::{AccountOwner, AccountRecord, Engine, EngineError, TransferKind, TransferRecord};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::pagination::{PageQuery, Paging, encode_cursor};
use crate::domain::render::{amount, timestamp};
use crate::domain::stack_kind::StackKind;

/// Journal entries one page may read. The journal is not indexed by
/// account, so a page of a quiet account in a busy journal stops here
/// (and says so) rather than reading the whole journal in one request.
pub(crate) const ENTRIES_SCANNED_MAX: usize = 10_000;

fn kind_of(kind: sika_engine::SystemAccount) -> SystemAccountKind {
    match kind {
        sika_engine::SystemAccount::World => SystemAccountKind::World,
        sika_engine::SystemAccount::RailClearing => SystemAccountKind::RailClearing,
        sika_engine::SystemAccount::FeeRevenue => SystemAccountKind::FeeRevenue,
        sika_engine::SystemAccount::FxDesk => SystemAccountKind::FxDesk,
    }
}

fn render_system_account(account: &AccountRecord) -> Option<SystemAccount> {
    let AccountOwner::System(kind) = account.owner else { return None };
    let currency = account.currency.as_str();
    Some(SystemAccount {
        id: account.id.clone(),
        kind: kind_of(kind),
        currency: account.currency.clone(),
        balance: amount(currency, account.credits_posted.saturating_sub(account.debits_posted)),
        debits_posted: amount(currency, account.debits_posted),
        credits_posted: amount(currency, account.credits_posted),
        debits_pending: amount(currency, account.debits_pending),
        credits_pending: amount(currency, account.credits_pending),
        created_at: timestamp(account.created_at),
    })
}

/// Every system account of the stack, by kind and then currency.
pub(crate) fn system_accounts(ledger: &Engine) -> ApiResult<Vec<SystemAccount>> {
    let accounts = ledger.read()?.system_accounts()?;
    let mut rendered: Vec<SystemAccount> = accounts.iter().filter_map(render_system_account).collect();
    rendered.sort_by(|a, b| (a.kind as u8, &a.currency).cmp(&(b.kind as u8, &b.currency)));
    Ok(rendered)
}

fn render_entry(account: &str, seq: u64, transfer: &TransferRecord) -> LedgerEntry {
    let (side, counterparty) = if transfer.debit_account == account {
        (EntrySide::Debit, transfer.credit_account.clone())
    } else {
        (EntrySide::Credit, transfer.debit_account.clone())
    };
    let kind = match transfer.kind {
        TransferKind::Posted => LedgerEntryKind::Posted,
        TransferKind::Pending => LedgerEntryKind::Pending,
        TransferKind::PostPending(_) => LedgerEntryKind::PostPending,
        TransferKind::VoidPending(_) => LedgerEntryKind::VoidPending,
    };
    LedgerEntry {
        seq,
        transfer_id: transfer.id,
        kind,
        side,
        counterparty,
        amount: amount(&transfer.currency, transfer.amount),
        currency: transfer.currency.clone(),
        memo: transfer.memo.clone(),
        created_at: timestamp(transfer.created_at),
    }
}

/// A page of the entries of the account `id` (any account of the stack
/// `stack`, whose ledger is `ledger`), newest first.
pub(crate) fn entries(
    ledger: &Engine,
    stack: StackKind,
    secret: &[u8],
    id: &str,
    query: &PageQuery,
) -> ApiResult<LedgerEntries> {
    let scope = format!("admin/ledger/{}/{id}", stack.wire_name().as_str());
    let page = query.page(secret, &scope)?;
    let snapshot = ledger.read()?;
    let account = snapshot
        .account(id)?
        .ok_or_else(|| ApiError::not_found(format!("ledger account '{id}' not found")))?;
    let found = snapshot.account_entries(id, page.before, page.limit, ENTRIES_SCANNED_MAX)?;
    let data = found.entries.iter().map(|t| render_entry(id, t.journal_seq, t)).collect();
    let has_more = found.stopped;
    let next_cursor = match (has_more, found.last_seq) {
        (true, Some(seq)) => Some(encode_cursor(secret, &scope, seq)),
        _ => None,
    };
    let kind = match account.owner {
        AccountOwner::System(kind) => Some(kind_of(kind)),
        AccountOwner::Organization(_) => None,
    };
    Ok(LedgerEntries {
        account: LedgerAccount { id: account.id, currency: account.currency, kind },
        data,
        has_more,
        next_cursor,
        scanned: found.scanned as u64,
        scan_limit_reached: found.stopped && found.scanned == ENTRIES_SCANNED_MAX,
    })
}

/// Every organization's balance accounts on the stack whose ledger is
/// `ledger`, with the totals per currency and the ledger's own figures
/// (`last_verify`: the stack's last audit).
pub(crate) fn accounts(
    ledger: &Engine,
    identity: &Identity,
    last_verify: Option<VerifyResult>,
) -> ApiResult<StackAccounts> {
    let mut data = Vec::new();
    for org in identity.organizations() {
        for item in crate::domain::accounts::list(ledger, &org.id)? {
            data.push(Owned { organization_id: org.id.clone(), item });
        }
    }
    let totals = totals(ledger, identity)?;
    let journal_length = ledger.read()?.journal_length()?;
    Ok(StackAccounts {
        data,
        has_more: false,
        next_cursor: None,
        totals,
        ledger: LedgerFigures { journal_length, last_verify },
    })
}

/// Sums of every organization's balances, per currency.
fn totals(ledger: &Engine, identity: &Identity) -> ApiResult<Vec<CurrencyTotal>> {
    let snapshot = ledger.read()?;
    let mut sums: BTreeMap<String, (i128, i128, i128, usize)> = BTreeMap::new();
    for org in identity.organizations() {
        for account in snapshot.organization_accounts(&org.id)? {
            let b = account.balances()?;
            let entry = sums.entry(account.currency.clone()).or_default();
            let overflow = || EngineError::Overflow("balance totals");
            entry.0 = entry.0.checked_add(b.available).ok_or_else(overflow)?;
            entry.1 = entry.1.checked_add(b.pending).ok_or_else(overflow)?;
            entry.2 = entry.2.checked_add(b.total).ok_or_else(overflow)?;
            entry.3 += 1;
        }
    }
    Ok(sums
        .into_iter()
        .map(|(currency, (available, pending, total, accounts))| CurrencyTotal {
            available_balance: amount(&currency, available),
            pending_balance: amount(&currency, pending),
            total_balance: amount(&currency, total),
            accounts: accounts as u64,
            currency,
        })
        .collect())
}

/// Audits the ledger `ledger` while it runs: the audit reads a snapshot
/// on a blocking thread (the writer keeps going meanwhile).
pub(crate) async fn verify(ledger: &Engine) -> ApiResult<VerifyResult> {
    let engine = ledger.clone();
    let report = tokio::task::spawn_blocking(move || {
        engine.database().and_then(|db| sika_engine::verify::verify(&*db))
    })
    .await
    .map_err(|e| ApiError::internal_from(e))??;
    Ok(VerifyResult {
        at: timestamp(ledger.now_ms()),
        consistent: report.is_consistent(),
        summary: report.summary(),
        problems: report.problems,
    })
}
