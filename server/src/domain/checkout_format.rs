//! The ledgers' steps in the storage format's upgrade path
//! (`sika_engine::format`) that need the node's checkout records: which
//! collection is an attempt on which payment link only the checkout
//! sessions say, so the step that groups collections by link lives here.

use redb::{ReadableTable, WriteTransaction};
use sika_engine::EngineError;
use sika_engine::format::{
    Steps, accounts_hold_their_balance_heads, balance_changes_link_back,
    balance_changes_move_into_their_entries, balances_index_their_changes, collections_join_groups,
    destinations_hold_bank_codes, idempotency_entries_are_keyed_by_digests,
    idempotency_entries_keep_half_their_fingerprints, jobs_hold_kinds, journal_entries_hash_at_marks,
    journal_entries_leave_the_previous_hash, journal_entries_name_accounts_by_number, keys_hold_name_numbers,
    payout_events_hold_marks, payouts_store_their_own_lines, records_leave_documents, stamp_only,
    transfers_are_found_by_their_numbers, transfers_name_their_entries,
};
use sika_engine::storage::{RECORDS, keys, prefix_end};

use crate::domain::checkout::{LINKS, PaymentLink, SESSIONS, Session, link_group};
use crate::store::documents::decode;

/// The upgrade path of a node's ledgers (`live.redb`, `sandbox.redb`): the
/// engine's, with format 4's groups read from the checkout sessions.
pub const LEDGER_STEPS: Steps = [
    stamp_only,
    jobs_hold_kinds,
    stamp_only,
    links_tally_their_attempts,
    destinations_hold_bank_codes,
    records_leave_documents,
    balances_index_their_changes,
    stamp_only,
    payout_events_hold_marks,
    balance_changes_link_back,
    transfers_name_their_entries,
    stamp_only,
    journal_entries_leave_the_previous_hash,
    journal_entries_name_accounts_by_number,
    transfers_are_found_by_their_numbers,
    accounts_hold_their_balance_heads,
    journal_entries_hash_at_marks,
    payouts_store_their_own_lines,
    stamp_only,
    keys_hold_name_numbers,
    stamp_only,
    stamp_only,
    idempotency_entries_keep_half_their_fingerprints,
    stamp_only,
    stamp_only,
    idempotency_entries_are_keyed_by_digests,
    stamp_only,
    stamp_only,
    stamp_only,
    balance_changes_move_into_their_entries,
];

/// Format 3 to 4 of a ledger: each checkout session's collection joins its
/// link's group (toward the link's amount), and each link's tally counts
/// the attempts that completed before the upgrade, so an upgraded node
/// shows the totals it derived from the sessions before.
pub(crate) fn links_tally_their_attempts(txn: &WriteTransaction) -> Result<(), EngineError> {
    let members = {
        let table = txn.open_table(RECORDS)?;
        let start = keys::documents_prefix(SESSIONS);
        let mut members = Vec::new();
        for entry in table.range(start.as_slice()..prefix_end(&start).as_slice())? {
            let session: Session = decode(entry?.1.value())?;
            let link = table.get(keys::document(LINKS, &session.link).as_slice())?;
            let link: PaymentLink = match link {
                Some(bytes) => decode(bytes.value())?,
                None => {
                    return Err(EngineError::Corrupt(format!(
                        "checkout session {} is on payment link {}, which is not stored",
                        session.id, session.link
                    )));
                }
            };
            members.push((session.collection, link_group(&link)));
        }
        members
    };
    collections_join_groups(txn, &members)
}
