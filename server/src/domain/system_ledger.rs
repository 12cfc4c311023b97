//! The node's own books for the operator: the system accounts of a stack
//! (fee revenue, the FX desk, rail clearing, the outside world) and the
//! journal entries of any one account, a bounded read at a time.

use sika_api::admin::{
    EntrySide, LedgerAccount, LedgerEntries, LedgerEntry, LedgerEntryKind, SystemAccount, SystemAccountKind,
};
use sika_engine::{AccountOwner, AccountRecord, Engine, TransferKind, TransferRecord};

use crate::domain::error::{ApiError, ApiResult};
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
