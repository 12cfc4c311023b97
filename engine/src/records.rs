//! The records the engine stores, each encoded with `postcard`. They are
//! the bottom layer: the modules that write them (the books, payouts and
//! collections, orders, the commands) import this one, never the reverse.
//!
//! Timestamps are stored as milliseconds since the Unix epoch; amounts as
//! `i128` minor units of the record's currency.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
pub(crate) use stored_id::StoredId;
pub(crate) use stored_memo::MemoShape;
use stored_memo::StoredMemo;
pub(crate) use stored_text::StoredText;
pub use stored_text::{PHRASES, is_phrase};

use crate::error::EngineError;
use crate::resource_id::{CollectionId, OrderId, PayoutId, RefundId};

mod stored_id;
mod stored_memo;
mod stored_text;

/// How a record spells its texts and ids: compactly where it can (the
/// node's phrases as numbers since format 21, ids as their parts since
/// format 22), or every one whole, as older formats did (for the layouts
/// of older formats in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling {
    Compact,
    Whole,
}

/// Milliseconds since the Unix epoch (UTC).
pub type TimestampMs = i64;

/// The milliseconds from `since` to `at`, which an `i128` always holds: how
/// a stored record keeps a time near another (since format 18).
pub(crate) fn ms_between(since: TimestampMs, at: TimestampMs) -> i128 {
    i128::from(at).checked_sub(i128::from(since)).expect("the difference of two i64s fits an i128")
}

/// The time `ms` milliseconds after `since`, if it is one (what
/// `ms_between` stored).
pub(crate) fn time_after(since: TimestampMs, ms: i128) -> Option<TimestampMs> {
    i128::from(since).checked_add(ms).and_then(|at| TimestampMs::try_from(at).ok())
}

/// A transfer's identifier: a counter per stack, never reused.
pub type TransferId = u64;

/// What an account is for. Organization accounts hold merchants' money and
/// may never go negative; system accounts are the node's own books.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SystemAccount {
    /// The world outside the node: deposits come from here, payouts go here.
    World,
    /// Money in flight to or from a payment rail.
    RailClearing,
    /// Fees the node has earned.
    FeeRevenue,
    /// The foreign-exchange desk, counterparty of every conversion.
    FxDesk,
}

impl SystemAccount {
    pub const ALL: [SystemAccount; 4] =
        [SystemAccount::World, SystemAccount::RailClearing, SystemAccount::FeeRevenue, SystemAccount::FxDesk];

    pub fn name(self) -> &'static str {
        match self {
            SystemAccount::World => "world",
            SystemAccount::RailClearing => "rail_clearing",
            SystemAccount::FeeRevenue => "fee_revenue",
            SystemAccount::FxDesk => "fx_desk",
        }
    }

    /// The id of this system account in `currency`.
    pub fn account_id(self, currency: &str) -> String {
        format!("sys_{}_{}", self.name(), currency)
    }
}

/// Names an account without knowing its id; the engine resolves it (and
/// creates it on first touch) together with the transfer's currency.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AccountRef {
    Organization(String),
    System(SystemAccount),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountOwner {
    Organization(String),
    System(SystemAccount),
}

/// One account's running totals. Balances are derived from these four sums
/// (see `Balances`), never stored separately, so they cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRecord {
    pub id: String,
    pub owner: AccountOwner,
    pub currency: String,
    pub debits_posted: i128,
    pub credits_posted: i128,
    pub debits_pending: i128,
    pub credits_pending: i128,
    pub created_at: TimestampMs,
}

/// An account as the books store it (`keys::account`): the account, and
/// for an organization account its newest balance change and how many it
/// has had (`crate::balance_changes`), written with the totals the change
/// leaves, so a transfer writes each side once. Until format 15 the head
/// was a record of its own (`Space::BalanceHead`). Events carry the
/// account alone (`EventPayload::AccountCredited`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountEntry {
    pub account: AccountRecord,
    pub changes: ChangeHead,
}

impl AccountEntry {
    /// A new account's entry: no change yet.
    pub fn opened(account: AccountRecord) -> AccountEntry {
        AccountEntry { account, changes: ChangeHead::default() }
    }
}

/// How many changes of an account one mark covers: a read of the balances
/// at an instant walks back at most this many.
pub const MARK_EVERY: u64 = 32;

/// An organization account's newest balance change and how many it has
/// had (`AccountEntry::changes`, `crate::balance_changes`): the `count`-th
/// change is marked when `count` is a multiple of `MARK_EVERY`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeHead {
    pub newest: u64,
    pub count: u64,
}

impl ChangeHead {
    /// The head once one more change, at journal entry `journal_seq`, is
    /// added; and whether that change is to be marked.
    pub fn then(self, journal_seq: u64) -> Result<(ChangeHead, bool), EngineError> {
        let count = self.count.checked_add(1).ok_or(EngineError::Overflow("balance changes"))?;
        Ok((ChangeHead { newest: journal_seq, count }, count.is_multiple_of(MARK_EVERY)))
    }

    /// The journal number of the newest change, if there is one.
    pub fn newest(self) -> Option<u64> {
        (self.count > 0).then_some(self.newest)
    }
}

/// Balances of an organization account, derived from its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Balances {
    /// What the organization can spend now: settled credits less settled
    /// debits less outgoing holds.
    pub available: i128,
    /// Incoming money not yet settled (pending credits).
    pub pending: i128,
    /// `available + pending`: what the balance will be once everything in
    /// flight settles as expected.
    pub total: i128,
}

impl AccountRecord {
    /// A new account: nothing posted or pending yet.
    pub fn opened(id: String, owner: AccountOwner, currency: &str, created_at: TimestampMs) -> AccountRecord {
        AccountRecord {
            id,
            owner,
            currency: currency.to_string(),
            debits_posted: 0,
            credits_posted: 0,
            debits_pending: 0,
            credits_pending: 0,
            created_at,
        }
    }

    /// The balances, or `Overflow` if the totals are too far apart for an
    /// `i128` (which the writer never stores: it checks every account it
    /// writes).
    pub fn balances(&self) -> Result<Balances, EngineError> {
        let overflow = || EngineError::Overflow("account balance");
        let available = self
            .credits_posted
            .checked_sub(self.debits_posted)
            .and_then(|settled| settled.checked_sub(self.debits_pending))
            .ok_or_else(overflow)?;
        let pending = self.credits_pending;
        let total = available.checked_add(pending).ok_or_else(overflow)?;
        Ok(Balances { available, pending, total })
    }

    pub fn is_organization(&self) -> bool {
        matches!(self.owner, AccountOwner::Organization(_))
    }
}

/// How a transfer changes the books.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferKind {
    /// Settled at once.
    Posted,
    /// A hold: reserved on both sides, settled later by `PostPending` or
    /// released by `VoidPending`.
    Pending,
    /// Settles the named pending transfer for its full amount.
    PostPending(TransferId),
    /// Releases the named pending transfer.
    VoidPending(TransferId),
}

/// The state of a transfer made with `TransferKind::Pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PendingState {
    Pending,
    Posted,
    Voided,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRecord {
    pub id: TransferId,
    pub kind: TransferKind,
    pub debit_account: String,
    pub credit_account: String,
    pub currency: String,
    pub amount: i128,
    /// What the transfer is for, e.g. `conversion conv_…`.
    pub memo: String,
    pub created_at: TimestampMs,
    /// Only for `TransferKind::Pending`.
    pub pending_state: Option<PendingState>,
    /// The journal entry that recorded this transfer.
    pub journal_seq: u64,
}

/// What is stored under a transfer's id (`keys::transfer`, since format
/// 11): the journal entry that holds the transfer, and a hold's state now
/// (the entry keeps the state it was recorded with, `Pending`). The
/// transfer itself is stored once, in its journal entry. Since format 15
/// only a hold, or a transfer whose id is not its entry's number, has one
/// (`is_stored_for`): any other transfer `id` is journal entry `id`
/// (`TransferRef::find`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRef {
    pub journal_seq: u64,
    pub pending_state: Option<PendingState>,
}

impl TransferRef {
    /// `transfer`, recorded in its journal entry, as it stands now.
    pub fn of(transfer: &TransferRecord) -> TransferRef {
        TransferRef { journal_seq: transfer.journal_seq, pending_state: transfer.pending_state }
    }

    /// Whether `transfer` needs a reference stored under its id: a hold,
    /// whose state changes after its entry is written, or a transfer whose
    /// id is not its entry's number. The books number a transfer and its
    /// entry together, so every other transfer is found at entry `id`.
    pub fn is_stored_for(transfer: &TransferRecord) -> bool {
        transfer.kind == TransferKind::Pending || transfer.id != transfer.journal_seq
    }

    /// The bytes stored under transfer `id`'s key for this reference.
    /// Since format 24 a hold's reference to the entry numbered as the hold
    /// (every hold the books make) is its state alone, one byte; any other
    /// is stored whole, as formats 11 to 23 stored every reference, in two
    /// bytes or more (the entry's number, then the state).
    pub fn encode(self, id: TransferId) -> Vec<u8> {
        let bytes = match self.pending_state {
            Some(state) if self.journal_seq == id => postcard::to_allocvec(&state),
            _ => postcard::to_allocvec(&self),
        };
        bytes.expect("postcard encodes a reference")
    }

    /// The reference stored as `bytes` under transfer `id`'s key
    /// (`encode`).
    pub fn decode(id: TransferId, bytes: &[u8]) -> Result<TransferRef, EngineError> {
        let corrupt = |e: postcard::Error| EngineError::Corrupt(format!("transfer {id}'s reference: {e}"));
        match bytes {
            [_] => Ok(TransferRef {
                journal_seq: id,
                pending_state: Some(postcard::from_bytes(bytes).map_err(corrupt)?),
            }),
            _ => postcard::from_bytes(bytes).map_err(corrupt),
        }
    }

    /// Transfer `id` as it stands: from its stored reference (`stored`)
    /// when it has one, else from journal entry `id` when that entry holds
    /// it and it needs no reference; `None` when there is no such
    /// transfer. `entry` reads a journal entry. Corrupt when a stored
    /// reference names an entry that does not hold the transfer.
    pub fn find(
        id: TransferId,
        stored: Option<TransferRef>,
        entry: impl FnOnce(u64) -> Result<Option<JournalEntry>, EngineError>,
    ) -> Result<Option<TransferRecord>, EngineError> {
        match stored {
            Some(found) => found.resolve(id, entry(found.journal_seq)?).map(Some),
            None => Ok(entry(id)?
                .filter(|entry| entry.seq == id)
                .map(|entry| entry.transfer)
                .filter(|transfer| transfer.id == id && !TransferRef::is_stored_for(transfer))),
        }
    }

    /// `transfer`, held by journal entry `seq`, as this reference says it
    /// stands now; `None` when the entry is not the one referred to.
    pub fn applied_to(self, seq: u64, mut transfer: TransferRecord) -> Option<TransferRecord> {
        (seq == self.journal_seq && transfer.journal_seq == self.journal_seq).then(|| {
            transfer.pending_state = self.pending_state;
            transfer
        })
    }

    /// Transfer `id`, which this reference names, from `entry` (its journal
    /// entry as read): corrupt when that entry is missing or holds another.
    pub fn resolve(self, id: TransferId, entry: Option<JournalEntry>) -> Result<TransferRecord, EngineError> {
        entry
            .and_then(|entry| self.applied_to(entry.seq, entry.transfer))
            .filter(|transfer| transfer.id == id)
            .ok_or_else(|| {
                EngineError::Corrupt(format!(
                    "transfer {id} names journal entry {}, which does not hold it",
                    self.journal_seq
                ))
            })
    }
}

/// Every journal entry numbered a multiple of this stores its hash
/// (format 17), as does the last entry of each batch; the others store
/// none, their hash being the chain's.
pub const HASH_EVERY: u64 = 64;

/// One entry of the append-only journal: a committed transfer, numbered and
/// chained to the entry before it by `hash = sha256(previous || transfer)`,
/// where `previous` is the entry before's hash (zeros for the first) and
/// `transfer` the transfer's bytes as the entry stores them. Since format
/// 13 that previous hash is not stored again in the entry: `sika verify`
/// walks the chain from the first entry, and the writer keeps the newest
/// hash (`journal_head`). Since format 14 the entry is stored compactly
/// (`StoredEntry`), and the hash covers those stored bytes. Since format
/// 17 an entry stores its own hash only every `HASH_EVERY` entries and
/// at the end of a batch: `sika verify` recomputes every link from the
/// first entry anyway, and holds the chain to each stored hash and the
/// last to the head, so a changed transfer still breaks the chain at the
/// next stored hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub seq: u64,
    /// The entry's hash as stored: at every `HASH_EVERY`th entry, at the
    /// last entry of each batch the books wrote, and at an entry whose
    /// stored hash did not hold when format 17's step ran.
    pub hash: Option<[u8; 32]>,
    pub transfer: TransferRecord,
}

impl JournalEntry {
    /// Whether the books store entry `seq`'s hash in it.
    pub fn stores_hash(seq: u64) -> bool {
        seq.is_multiple_of(HASH_EVERY)
    }

    /// Stores `hash` in `entry`, the bytes of a journal entry as format 17
    /// stores it (`chained`), if it holds none: the books do so for the
    /// last entry of each batch, so the next batch's first entry is
    /// checked against it (`Books::assert_follows_journal`).
    pub fn store_hash_in(entry: &mut Vec<u8>, hash: &[u8; 32]) {
        // The number is a varint: its last byte has the high bit clear.
        // The `Option`'s tag follows it.
        let tag_at = entry.iter().position(|byte| byte & 0x80 == 0).and_then(|last| last.checked_add(1));
        match tag_at.map(|at| (at, entry.get(at).copied())) {
            Some((at, Some(0))) => {
                entry[at] = 1;
                let hash_at = at.saturating_add(1);
                entry.splice(hash_at..hash_at, hash.iter().copied());
            }
            Some((_, Some(1))) => {}
            _ => panic!("a journal entry's bytes hold no hash tag after its number"),
        }
    }

    /// Entry `seq` holding `transfer`, chained to `prev_hash`: its hash and
    /// its stored bytes, `encode(&JournalEntry { seq, hash, transfer })`
    /// with the hash stored where `stores_hash` says, made in one buffer
    /// without cloning the transfer.
    pub fn chained(seq: u64, prev_hash: &[u8; 32], transfer: &TransferRecord) -> ([u8; 32], Vec<u8>) {
        let field = HashField::Optional { stored: JournalEntry::stores_hash(seq) };
        encode_chained(seq, prev_hash, transfer, field)
    }

    /// The hash of entry `seq` holding `transfer` when the entry before's
    /// hash is `prev_hash`: what `chained` stores, for `sika verify`.
    pub fn chain_hash(prev_hash: &[u8; 32], seq: u64, transfer: &TransferRecord) -> [u8; 32] {
        let stored = StoredTransfer::hashed(seq, transfer);
        // Encoded on the stack when it fits (a transfer is ~40 bytes and
        // its memo), so checking a hash allocates nothing.
        let mut buffer = [0u8; 512];
        match postcard::to_slice(&stored, &mut buffer) {
            Ok(bytes) => chain_hash_bytes(prev_hash, bytes),
            Err(_) => chain_hash_bytes(
                prev_hash,
                &postcard::to_allocvec(&stored).expect("postcard encodes a transfer"),
            ),
        }
    }
}

/// How an encoded journal entry holds its hash (and its memo).
#[derive(Debug, Clone, Copy)]
pub(crate) enum HashField {
    /// Formats 14 to 16: 32 bytes in every entry, the memo as text.
    Bare,
    /// Since format 17: an `Option`, the hash in it when `stored`; since
    /// format 19, the memo shaped when it can be (`stored_memo`).
    Optional { stored: bool },
}

/// Entry `seq` holding `transfer`, chained to `prev_hash`: its hash and its
/// bytes, the number, then the hash as `field` says, then the transfer as
/// stored (`StoredTransfer`). The hash covers the transfer with its memo
/// as text and its id whole (`StoredTransfer::hashed`): the stored bytes
/// when the memo is text (with the whole id in place of a stored 0), else
/// the transfer encoded so on the stack.
pub(crate) fn encode_chained(
    seq: u64,
    prev_hash: &[u8; 32],
    transfer: &TransferRecord,
    field: HashField,
) -> ([u8; 32], Vec<u8>) {
    // Room for the number, the hash, the fixed fields (at most 66
    // bytes with the accounts as numbers and kinds) and the text.
    let room = 128usize.saturating_add(transfer.memo.len()).saturating_add(transfer.currency.len());
    let mut entry = postcard::to_extend(&seq, Vec::with_capacity(room)).expect("postcard encodes a u64");
    // postcard writes `Some` as 1 before the value and `None` as 0.
    let stored = match field {
        HashField::Bare => true,
        HashField::Optional { stored } => {
            entry.push(u8::from(stored));
            stored
        }
    };
    let hash_at = entry.len();
    if stored {
        entry.extend_from_slice(&[0; 32]);
    }
    let transfer_at = entry.len();
    let stored_transfer = match field {
        HashField::Bare => StoredTransfer::hashed(seq, transfer),
        HashField::Optional { .. } => StoredTransfer::compact(seq, transfer),
    };
    // The stored bytes are the hashed form, but for the id, only when the
    // memo is text and no account is counted.
    let as_hashed = stored_transfer.memo.is_text() && !stored_transfer.counts_accounts();
    let id_as_zero = stored_transfer.id != transfer.id;
    let mut entry = postcard::to_extend(&stored_transfer, entry).expect("postcard encodes a journal entry");
    let hash = match (as_hashed, id_as_zero) {
        (true, false) => chain_hash_bytes(prev_hash, &entry[transfer_at..]),
        // The id is the transfer's first field: the hashed form is the
        // stored bytes with the whole id where the stored 0 (one byte) is.
        (true, true) => {
            let mut id = [0u8; 10];
            let id = postcard::to_slice(&transfer.id, &mut id).expect("a u64 fits ten bytes");
            let rest = entry.get(transfer_at.saturating_add(1)..).unwrap_or_default();
            crate::digest::sha256(&[prev_hash, id, rest])
        }
        (false, _) => JournalEntry::chain_hash(prev_hash, seq, transfer),
    };
    if stored {
        entry[hash_at..transfer_at].copy_from_slice(&hash);
    }
    (hash, entry)
}

/// `sha256(prev_hash || transfer)`.
fn chain_hash_bytes(prev_hash: &[u8; 32], transfer: &[u8]) -> [u8; 32] {
    crate::digest::sha256(&[prev_hash, transfer])
}

impl Serialize for JournalEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let transfer = StoredTransfer::compact(self.seq, &self.transfer);
        StoredEntry { seq: self.seq, hash: self.hash, transfer }.serialize(serializer)
    }
}

impl JournalEntry {
    /// The entry's bytes as formats 19 to 23 stored it: its transfer's id
    /// whole (`StoredTransfer::compact`), for the layouts of older formats
    /// in tests.
    pub fn encode_as_format_23(&self) -> Vec<u8> {
        let mut transfer = StoredTransfer::compact(self.seq, &self.transfer).numbered();
        transfer.id = self.transfer.id;
        postcard::to_allocvec(&StoredEntry { seq: self.seq, hash: self.hash, transfer })
            .expect("postcard encodes a journal entry")
    }
}

impl JournalEntry {
    /// The entry's bytes as formats 24 to 27 stored it: its transfer's
    /// accounts numbered, not counted, for the layouts of older formats
    /// in tests.
    pub fn encode_as_format_27(&self) -> Vec<u8> {
        let transfer = StoredTransfer::compact(self.seq, &self.transfer).numbered();
        postcard::to_allocvec(&StoredEntry { seq: self.seq, hash: self.hash, transfer })
            .expect("postcard encodes a journal entry")
    }
}

impl JournalEntry {
    /// An entry from its stored bytes, with what it did to its
    /// organization accounts' balances, stored after its transfer since
    /// format 30 (`EntryChanges`; `decode` alone reads the entry and
    /// leaves them).
    pub fn decode_with_changes(bytes: &[u8]) -> Result<(JournalEntry, EntryChanges), EngineError> {
        let corrupt =
            |e: &dyn std::fmt::Display| EngineError::Corrupt(format!("undecodable journal entry: {e}"));
        let (stored, rest) =
            postcard::take_from_bytes::<StoredEntry<Option<[u8; 32]>>>(bytes).map_err(|e| corrupt(&e))?;
        let StoredEntry { seq, hash, transfer } = stored;
        let transfer = transfer.into_transfer(seq).map_err(|e| corrupt(&e))?;
        Ok((JournalEntry { seq, hash, transfer }, EntryChanges::decode(rest)?))
    }

    /// `entry`, the bytes of an entry that stores no balance changes, with
    /// `changes` after its transfer (format 30's step).
    pub fn with_changes(entry: &[u8], changes: &EntryChanges) -> Result<Vec<u8>, EngineError> {
        let bare = JournalEntry::without_changes(entry)?;
        if bare.len() != entry.len() {
            return Err(EngineError::Corrupt(format!(
                "journal entry {} already stores balance changes",
                JournalEntry::decode_with_changes(entry)?.0.seq
            )));
        }
        let mut bytes = entry.to_vec();
        changes.append_to(&mut bytes);
        Ok(bytes)
    }

    /// An entry's stored bytes without the balance changes after its
    /// transfer, as formats up to 29 stored it.
    pub fn without_changes(entry: &[u8]) -> Result<&[u8], EngineError> {
        let (_, rest) = postcard::take_from_bytes::<StoredEntry<Option<[u8; 32]>>>(entry)
            .map_err(|e| EngineError::Corrupt(format!("undecodable journal entry: {e}")))?;
        Ok(entry.get(..entry.len().saturating_sub(rest.len())).unwrap_or(entry))
    }
}

impl<'de> Deserialize<'de> for JournalEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let StoredEntry::<Option<[u8; 32]>> { seq, hash, transfer } = StoredEntry::deserialize(deserializer)?;
        let transfer = transfer.into_transfer(seq).map_err(serde::de::Error::custom)?;
        Ok(JournalEntry { seq, hash, transfer })
    }
}

/// A journal entry as stored: the number, the hash (`H`: an `Option` in
/// format 17, 32 bytes in every entry in formats 14 to 16,
/// `format::format16`), then the transfer (postcard writes a struct as its
/// fields in order, so the transfer's bytes are the entry's last).
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredEntry<'a, H> {
    pub(crate) seq: u64,
    pub(crate) hash: H,
    #[serde(borrow)]
    pub(crate) transfer: StoredTransfer<'a>,
}

/// The balances of an organization account after one change: the value of
/// its index entry. Both are varints in postcard, a few bytes each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceAfter {
    pub available: i128,
    pub total: i128,
}

/// One side's balance change as its journal entry stores it since format
/// 30 (`EntryChanges`): the account's change before it and the balances
/// after it. Its time is the entry's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryChange {
    /// The journal number of the account's change before this one.
    pub previous: Option<u64>,
    pub after: BalanceAfter,
}

/// What a journal entry did to the balances of its organization accounts,
/// stored after its transfer since format 30 (formats 10 to 29 stored each
/// side apart, `StoredChange` under `keys::balance_change`). An entry that
/// changed no organization account's balances stores none: no bytes at
/// all, so entries written before format 30 read as such. The chain hash
/// does not cover it; `sika verify` recomputes it from the journal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryChanges {
    pub debit: Option<EntryChange>,
    pub credit: Option<EntryChange>,
    /// The changes' time when it is not the entry's: entries made before
    /// the writer kept batch times from going back were indexed at the
    /// latest time so far (`format::balances_index_their_changes`), and
    /// format 30's step keeps that time. The books store `None`.
    pub at: Option<TimestampMs>,
}

impl EntryChanges {
    pub fn is_empty(&self) -> bool {
        self.debit.is_none() && self.credit.is_none()
    }

    /// Appends the changes to `entry`'s bytes (nothing when there are none).
    pub fn append_to(&self, entry: &mut Vec<u8>) {
        if !self.is_empty() {
            *entry =
                postcard::to_extend(self, std::mem::take(entry)).expect("postcard encodes balance changes");
        }
    }

    /// The changes stored after an entry's transfer: `rest`, the bytes
    /// after it.
    pub fn decode(rest: &[u8]) -> Result<EntryChanges, EngineError> {
        if rest.is_empty() {
            return Ok(EntryChanges::default());
        }
        match postcard::take_from_bytes::<EntryChanges>(rest) {
            Ok((changes, [])) if !changes.is_empty() => Ok(changes),
            _ => Err(EngineError::Corrupt("a journal entry's balance changes are malformed".into())),
        }
    }

    /// The changes' time, `transfer` being the entry's.
    pub fn at(&self, transfer: &TransferRecord) -> TimestampMs {
        self.at.unwrap_or(transfer.created_at)
    }

    /// Each side's change with its account's id, debit first.
    pub fn sides<'t>(&self, transfer: &'t TransferRecord) -> impl Iterator<Item = (&'t str, EntryChange)> {
        let debit = self.debit.map(|change| (transfer.debit_account.as_str(), change));
        let credit = self.credit.map(|change| (transfer.credit_account.as_str(), change));
        debit.into_iter().chain(credit)
    }
}

/// A transfer as its journal entry stores it: its two accounts by number
/// or system kind (their ids are spelled from those and the currency,
/// `StoredAccount`), its memo as text or, since format 19, shaped
/// (`StoredMemo`), and its `journal_seq` only in the entry's `seq`.
/// Every transfer reads back exactly as written: an id of another shape is
/// kept as text, and a `journal_seq` other than the entry's beside it.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredTransfer<'a> {
    id: TransferId,
    kind: TransferKind,
    #[serde(borrow)]
    debit: StoredAccount<'a>,
    #[serde(borrow)]
    credit: StoredAccount<'a>,
    #[serde(borrow)]
    currency: Cow<'a, str>,
    amount: i128,
    #[serde(borrow)]
    memo: StoredMemo<'a>,
    created_at: TimestampMs,
    pending_state: Option<PendingState>,
    /// The transfer's `journal_seq` when it is not its entry's number (the
    /// books never write such an entry).
    other_journal_seq: Option<u64>,
}

impl<'a> StoredTransfer<'a> {
    /// `transfer` in entry `seq` as the hash chain covers it, and as formats
    /// 14 to 18 stored it: its memo as text.
    pub(crate) fn hashed(seq: u64, transfer: &'a TransferRecord) -> StoredTransfer<'a> {
        StoredTransfer::with_memo(seq, transfer, StoredMemo::Text(Cow::Borrowed(&transfer.memo)))
    }

    /// `transfer` in entry `seq` as the books store it since format 19:
    /// its memo shaped when it can be; since format 24 its id as 0 when it
    /// is the entry's number, as the books number every transfer (three
    /// bytes at half a million entries, one byte now). The books number
    /// transfers from 1, so no id 0 was ever stored for another reason.
    pub(crate) fn compact(seq: u64, transfer: &'a TransferRecord) -> StoredTransfer<'a> {
        assert!(transfer.id != 0 || seq == 0, "transfer ids start at 1");
        let memo = StoredMemo::of(&transfer.memo, &transfer.currency, transfer.created_at);
        let mut stored = StoredTransfer::with_memo(seq, transfer, memo);
        if transfer.id == seq {
            stored.id = 0;
        }
        stored.debit = stored.debit.counted();
        stored.credit = stored.credit.counted();
        stored
    }

    /// The transfer with its accounts numbered, as formats 14 to 27
    /// stored them, for the layouts of older formats in tests.
    pub(crate) fn numbered(mut self) -> StoredTransfer<'a> {
        self.debit = self.debit.numbered();
        self.credit = self.credit.numbered();
        self
    }

    /// Whether the transfer stores an account as `Counted`, which the
    /// hashed form does not.
    pub(crate) fn counts_accounts(&self) -> bool {
        self.debit.is_counted() || self.credit.is_counted()
    }

    fn with_memo(seq: u64, transfer: &'a TransferRecord, memo: StoredMemo<'a>) -> StoredTransfer<'a> {
        let currency = transfer.currency.as_str();
        StoredTransfer {
            id: transfer.id,
            kind: transfer.kind.clone(),
            debit: StoredAccount::of(&transfer.debit_account, currency),
            credit: StoredAccount::of(&transfer.credit_account, currency),
            currency: Cow::Borrowed(currency),
            amount: transfer.amount,
            memo,
            created_at: transfer.created_at,
            pending_state: transfer.pending_state,
            other_journal_seq: (transfer.journal_seq != seq).then_some(transfer.journal_seq),
        }
    }

    /// The transfer entry `seq` holds; an error when a shaped memo's id is
    /// out of range.
    pub(crate) fn into_transfer(self, seq: u64) -> Result<TransferRecord, String> {
        let currency = self.currency.into_owned();
        Ok(TransferRecord {
            // 0 is the entry's number (`compact`).
            id: if self.id == 0 { seq } else { self.id },
            kind: self.kind,
            debit_account: self.debit.id(&currency).ok_or("the debit account's count is out of range")?,
            credit_account: self.credit.id(&currency).ok_or("the credit account's count is out of range")?,
            amount: self.amount,
            memo: self.memo.into_text(&currency, self.created_at)?,
            created_at: self.created_at,
            pending_state: self.pending_state,
            journal_seq: self.other_journal_seq.unwrap_or(seq),
            currency,
        })
    }
}

/// The books number organization accounts from one past this
/// (1,000,000,001, ten digits in every id).
pub(crate) const ACCOUNT_NUMBERS_AFTER: u64 = 1_000_000_000;

/// An account as a stored journal entry names it.
#[derive(Serialize, Deserialize)]
enum StoredAccount<'a> {
    /// An organization account: its id is the currency and this number
    /// (`organization_account_id`).
    Numbered(u64),
    /// A system account: its id is `SystemAccount::account_id`.
    System(SystemAccount),
    /// An id of any other shape, as it is.
    Named(#[serde(borrow)] Cow<'a, str>),
    /// Since format 28, an organization account numbered past
    /// `ACCOUNT_NUMBERS_AFTER`, as its count past it: the first 127
    /// accounts in one byte, where their numbers took five. Last, so the
    /// other variants keep their encoding; only stored entries use it, the
    /// hash covers the account as `Numbered` (`StoredTransfer::hashed`).
    Counted(u64),
}

impl<'a> StoredAccount<'a> {
    /// The account as format 28 stores it: counted when it can be.
    fn counted(self) -> StoredAccount<'a> {
        match self {
            StoredAccount::Numbered(number) => match number.checked_sub(ACCOUNT_NUMBERS_AFTER) {
                Some(count) if count > 0 => StoredAccount::Counted(count),
                _ => StoredAccount::Numbered(number),
            },
            other => other,
        }
    }

    /// The account as formats 14 to 27 stored it: numbered.
    fn numbered(self) -> StoredAccount<'a> {
        match self {
            StoredAccount::Counted(count) => {
                StoredAccount::Numbered(count.saturating_add(ACCOUNT_NUMBERS_AFTER))
            }
            other => other,
        }
    }

    fn is_counted(&self) -> bool {
        matches!(self, StoredAccount::Counted(_))
    }

    fn of(id: &'a str, currency: &str) -> StoredAccount<'a> {
        if let Some(number) = id.strip_prefix(currency).and_then(canonical_number) {
            return StoredAccount::Numbered(number);
        }
        let kind = id.strip_prefix("sys_").and_then(|rest| rest.strip_suffix(currency)).and_then(|rest| {
            let name = rest.strip_suffix('_')?;
            SystemAccount::ALL.into_iter().find(|kind| kind.name() == name)
        });
        match kind {
            Some(kind) => StoredAccount::System(kind),
            None => StoredAccount::Named(Cow::Borrowed(id)),
        }
    }

    /// The account's id; `None` for a count past the last number.
    fn id(self, currency: &str) -> Option<String> {
        Some(match self {
            StoredAccount::Numbered(number) => organization_account_id(currency, number),
            StoredAccount::System(kind) => kind.account_id(currency),
            StoredAccount::Named(id) => id.into_owned(),
            StoredAccount::Counted(count) => {
                organization_account_id(currency, count.checked_add(ACCOUNT_NUMBERS_AFTER)?)
            }
        })
    }
}

/// The number `digits` spell when they are exactly how `u64` prints it
/// (so spelling it again gives the same text).
fn canonical_number(digits: &str) -> Option<u64> {
    let leading_zero = digits.len() > 1 && digits.starts_with('0');
    if digits.is_empty() || leading_zero || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The id of an organization's account numbered `number` in `currency`.
pub fn organization_account_id(currency: &str, number: u64) -> String {
    format!("{currency}{number}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuoteStatus {
    Pending,
    Executed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteRecord {
    pub id: String,
    pub organization: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub to_currency: String,
    pub to_amount: i128,
    /// The all-in rate as a decimal string: units of `to` per unit of `from`.
    pub rate: String,
    pub status: QuoteStatus,
    pub conversion_id: Option<String>,
    /// The commit epoch of the batch that executed the quote (see
    /// `Engine::commit_epoch`): executes received before that commit was
    /// acknowledged were concurrent with it and get its conversion.
    pub executed_epoch: Option<u64>,
    pub expires_at: TimestampMs,
    pub created_at: TimestampMs,
}

impl QuoteRecord {
    pub fn is_expired(&self, now: TimestampMs) -> bool {
        self.status == QuoteStatus::Pending && now >= self.expires_at
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversionRecord {
    pub id: String,
    pub organization: String,
    pub quote_id: String,
    pub from_account: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub to_account: String,
    pub to_currency: String,
    pub to_amount: i128,
    pub rate: String,
    pub external_reference: Option<String>,
    pub transfer_ids: Vec<TransferId>,
    pub created_at: TimestampMs,
    pub completed_at: TimestampMs,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositRecord {
    pub id: String,
    pub organization: String,
    pub account: String,
    pub currency: String,
    pub amount: i128,
    pub external_reference: Option<String>,
    pub transfer_id: TransferId,
    pub created_at: TimestampMs,
}

/// What an event carries: a snapshot of the resource at the moment of the
/// change, rendered by the API exactly as its GET renders it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum EventPayload {
    Conversion(ConversionRecord),
    AccountCredited {
        account: AccountRecord,
        amount: i128,
        source: String,
    },
    /// A `webhook.test` event for one endpoint.
    WebhookTest {
        endpoint_id: String,
    },
    Payout(PayoutRecord),
    Collection(CollectionRecord),
    Order(OrderRecord),
    /// An order that has a payout leg, with that payout as it stood at the
    /// change: the order's GET merges both legs, so its events must too.
    OrderWithPayout(OrderRecord, PayoutRecord),
    /// A resource the API layer owns (a dispute), as its GET rendered it.
    Rendered {
        id: String,
        json: String,
    },
    /// A refund as it stood at the change. Last, so stored events keep
    /// their encoding.
    Refund(RefundRecord),
    /// A dispute's money as it stood at the change (opening, an inflow
    /// filling its shortfall, resolution): the API renders the dispute's
    /// document with it. Last, so stored events keep their shape.
    Dispute(DisputeRecord),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    pub seq: u64,
    pub id: String,
    pub organization: String,
    /// The spec's event name, e.g. `conversion.completed`.
    pub kind: String,
    pub payload: EventPayload,
    pub created_at: TimestampMs,
}

/// What a list entry (`keys::list_entry`) stores: the listed resource's
/// id (`StoredId`), or, since format 27, for an organization's events, a
/// zero byte and the event's number: the event's record holds its id, and
/// the number takes 3 or 4 bytes where the id took 23. A stored id begins
/// with its length, and no listed id is empty, so the two never meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    Id(String),
    Event(u64),
}

impl Listed {
    /// The byte an event's entry begins with.
    const EVENT: u8 = 0;

    /// The bytes of an events list entry for event `seq`.
    pub fn event_bytes(seq: u64) -> Vec<u8> {
        postcard::to_extend(&seq, vec![Listed::EVENT]).expect("postcard encodes a number")
    }

    /// The entry stored as `bytes`; anything after an event's number is
    /// refused.
    pub fn decode(bytes: &[u8]) -> Result<Listed, EngineError> {
        match bytes.split_first() {
            Some((&Listed::EVENT, number)) if !number.is_empty() => {
                match postcard::take_from_bytes::<u64>(number) {
                    Ok((seq, [])) => Ok(Listed::Event(seq)),
                    _ => Err(EngineError::Corrupt(format!("a list entry names no event: {bytes:?}"))),
                }
            }
            _ => StoredId::read(bytes).map(Listed::Id),
        }
    }
}

/// Which resource an idempotency entry produced. Since format 22 each id
/// is stored as its parts (`StoredId`; `stored_id::as_parts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceRef {
    Conversion(#[serde(with = "stored_id::as_parts")] String),
    Deposit(#[serde(with = "stored_id::as_parts")] String),
    Transfers(Vec<TransferId>),
    Payout(#[serde(with = "stored_id::as_parts")] String),
    Collection(#[serde(with = "stored_id::as_parts")] String),
    Order(#[serde(with = "stored_id::as_parts")] String),
    /// Last, so stored entries keep their encoding.
    Refund(#[serde(with = "stored_id::as_parts")] String),
    /// Since format 29: the resource at this position of the list its
    /// operation fills (`ResourceRef::list_of`), in the organization's
    /// list (positions are one count over every list, `Counter::ListSeq`).
    /// Three or four bytes where the id took 28; a replay knows the
    /// organization and the operation, so it reads the list entry there.
    Listed(u64),
}

/// The list each create that takes a reference fills, by its idempotency
/// operation (`Command::idempotency_key`).
const LISTS: [(&str, &str); 6] = [
    ("payout", "payouts"),
    ("collection", "collections"),
    ("order", "orders"),
    ("refund", "refunds"),
    ("deposit", "deposits"),
    ("conversion", "conversions"),
];

impl ResourceRef {
    /// The list a create of `operation` adds its resource to.
    pub fn list_of(operation: &str) -> Option<&'static str> {
        LISTS.iter().find(|(op, _)| *op == operation).map(|(_, kind)| *kind)
    }

    /// The resource `id` listed in the list of `kind`, by id.
    pub fn in_list(kind: &str, id: String) -> Option<ResourceRef> {
        Some(match kind {
            "payouts" => ResourceRef::Payout(id),
            "collections" => ResourceRef::Collection(id),
            "orders" => ResourceRef::Order(id),
            "refunds" => ResourceRef::Refund(id),
            "deposits" => ResourceRef::Deposit(id),
            "conversions" => ResourceRef::Conversion(id),
            _ => return None,
        })
    }

    /// The id of a resource named by id.
    pub fn id(&self) -> Option<&str> {
        match self {
            ResourceRef::Conversion(id)
            | ResourceRef::Deposit(id)
            | ResourceRef::Payout(id)
            | ResourceRef::Collection(id)
            | ResourceRef::Order(id)
            | ResourceRef::Refund(id) => Some(id),
            ResourceRef::Transfers(_) | ResourceRef::Listed(_) => None,
        }
    }
}

/// (organization, operation, externalReference) → what the first request was
/// and what it produced. Since format 23 the request's fingerprint is kept
/// as its first `FINGERPRINT_KEPT` bytes (`IdempotencyRecord::kept`); since
/// format 25 the entry is these two fields alone (`IdempotencyRecord::decode`
/// reads the time formats 1 to 24 stored after them, which nothing read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub fingerprint: [u8; FINGERPRINT_KEPT],
    pub resource: ResourceRef,
}

/// How many bytes of a request's 32-byte fingerprint (SHA-256) an
/// idempotency entry keeps: 128 bits, so two different bodies sent under
/// one reference match by chance with a probability of 2^-128; the other
/// 16 bytes were a sixth of the entry.
pub const FINGERPRINT_KEPT: usize = 16;

impl IdempotencyRecord {
    /// The entry stored as `bytes`: the fingerprint and the resource, then,
    /// as formats 23 and 24 stored it, the time it was made (a time and
    /// nothing after it). The resource's encoding ends where it ends, so
    /// the two shapes never meet.
    pub fn decode(bytes: &[u8]) -> Result<IdempotencyRecord, EngineError> {
        let corrupt = |e: postcard::Error| EngineError::Corrupt(format!("an idempotency entry: {e}"));
        let (entry, rest) = postcard::take_from_bytes::<IdempotencyRecord>(bytes).map_err(corrupt)?;
        if !rest.is_empty() {
            let (_made_at, left) = postcard::take_from_bytes::<TimestampMs>(rest).map_err(corrupt)?;
            if !left.is_empty() {
                return Err(EngineError::Corrupt("an idempotency entry has bytes after its time".into()));
            }
        }
        Ok(entry)
    }

    /// The part of a request's fingerprint an entry keeps and compares.
    pub fn kept(fingerprint: &[u8; 32]) -> [u8; FINGERPRINT_KEPT] {
        let (kept, _) = fingerprint.split_first_chunk::<FINGERPRINT_KEPT>().expect("16 of 32 bytes");
        *kept
    }
}

// One line of a timeline: a typed fact and when (format 6).
pub use crate::timeline::TimelineEntry;

/// A payout's or collection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MovementStatus {
    Pending,
    Completed,
    Failed,
    /// A completed payout the rail took back (a mobile-money reversal, a
    /// bank return): its amount is back on the balance, its fee kept.
    /// Last, so records stored before it decode unchanged; only a payout
    /// reaches it (`movements::reverse_payout`).
    Reversed,
}

impl MovementStatus {
    pub fn name(self) -> &'static str {
        match self {
            MovementStatus::Pending => "pending",
            MovementStatus::Completed => "completed",
            MovementStatus::Failed => "failed",
            MovementStatus::Reversed => "reversed",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    pub code: String,
    pub account_number: Option<String>,
    pub address: Option<String>,
    pub tag: Option<String>,
    pub recipient_id: Option<String>,
    /// The destination bank's code, one of the bank method's `bankCode`
    /// options; last, since format 5 (`format::destinations_hold_bank_codes`).
    pub bank_code: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutRecord {
    pub id: String,
    pub organization: String,
    pub status: MovementStatus,
    pub from_account: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub to: Destination,
    pub to_currency: String,
    pub to_amount: i128,
    pub fee_amount: i128,
    pub rate: String,
    pub narration: String,
    pub external_reference: String,
    /// The caller's metadata object as JSON text.
    pub metadata: String,
    pub status_message: String,
    pub hold_ids: Vec<TransferId>,
    pub timeline: Vec<TimelineEntry>,
    pub rail: String,
    pub api_key_id: Option<String>,
    /// The order this payout is the second leg of.
    pub order_id: Option<String>,
    pub created_at: TimestampMs,
    pub updated_at: TimestampMs,
    pub completed_at: Option<TimestampMs>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionRecord {
    pub id: String,
    pub organization: String,
    pub status: MovementStatus,
    pub account: String,
    pub currency: String,
    pub amount: i128,
    pub code: String,
    pub account_number: String,
    pub external_reference: String,
    pub metadata: String,
    pub status_message: String,
    pub hold_id: TransferId,
    pub timeline: Vec<TimelineEntry>,
    pub rail: String,
    pub created_at: TimestampMs,
    pub updated_at: TimestampMs,
    pub completed_at: Option<TimestampMs>,
}

/// The group a collection counts in, named by whoever creates it (a
/// checkout's payment link): opaque to the engine, which keeps one
/// [`TallyRecord`] per group. Stored beside the collection, by its id
/// (`keys::collection_group`), so `CollectionRecord` and the events that
/// carry one keep their shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionGroup {
    pub id: String,
    /// What the group's collections pay toward, in minor units of their
    /// currency; `None`: the first to complete covers it (an amount the
    /// payer chose).
    pub target_minor: Option<i128>,
}

/// One completed collection, as a tally remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    pub collection_id: String,
    pub amount_minor: i128,
    pub completed_at: TimestampMs,
}

/// What the completed collections of one group add up to, changed in the
/// command that completes each of them, so a reader of the group never
/// loads its collections. `sika verify` recomputes it from them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TallyRecord {
    pub group: String,
    pub organization: String,
    pub currency: String,
    pub target_minor: Option<i128>,
    pub received_minor: i128,
    pub completed_count: u64,
    /// The completion that brought `received_minor` to the target (with no
    /// target, the first completion).
    pub covering: Option<Arrival>,
    /// The completion with the latest `completed_at` (of equal ones, the
    /// last counted).
    pub latest: Option<Arrival>,
}

impl TallyRecord {
    /// A group's tally before any of its collections completed.
    pub fn empty(group: &CollectionGroup, organization: &str, currency: &str) -> TallyRecord {
        TallyRecord {
            group: group.id.clone(),
            organization: organization.to_string(),
            currency: currency.to_string(),
            target_minor: group.target_minor,
            received_minor: 0,
            completed_count: 0,
            covering: None,
            latest: None,
        }
    }

    /// The tally with one more completed collection. A collection counts
    /// once: only its move from pending to completed counts it, and it
    /// makes that move once.
    pub fn counted(mut self, arrival: Arrival) -> Result<TallyRecord, EngineError> {
        assert!(arrival.amount_minor > 0, "collection {} brings no money", arrival.collection_id);
        assert!(
            self.latest.as_ref().is_none_or(|latest| latest.collection_id != arrival.collection_id),
            "collection {} counted twice in group {}",
            arrival.collection_id,
            self.group
        );
        let overflow = || EngineError::Overflow("collection tally");
        self.received_minor = self.received_minor.checked_add(arrival.amount_minor).ok_or_else(overflow)?;
        self.completed_count = self.completed_count.checked_add(1).ok_or_else(overflow)?;
        assert!(self.received_minor > 0, "the tally of group {} is not positive", self.group);
        if self.covering.is_none() && self.target_minor.is_none_or(|target| self.received_minor >= target) {
            self.covering = Some(arrival.clone());
        }
        if self.latest.as_ref().is_none_or(|latest| arrival.completed_at >= latest.completed_at) {
            self.latest = Some(arrival);
        }
        Ok(self)
    }
}

/// Money given back to the payer of a completed collection (directly, or
/// through a checkout session). The amount is held on the organization's
/// balance of the payment's currency when the refund is created, as a
/// payout's is, then posted (completed) or released (failed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRecord {
    pub id: String,
    pub organization: String,
    pub status: MovementStatus,
    /// The payment refunded.
    pub collection_id: String,
    /// The checkout session the payment came through, if any.
    pub session_id: Option<String>,
    /// The balance account the amount is held on.
    pub account: String,
    pub currency: String,
    pub amount: i128,
    pub reason: Option<String>,
    pub external_reference: String,
    /// The caller's metadata object as JSON text.
    pub metadata: String,
    pub status_message: String,
    pub hold_id: TransferId,
    pub timeline: Vec<TimelineEntry>,
    pub rail: String,
    pub created_at: TimestampMs,
    pub updated_at: TimestampMs,
    pub completed_at: Option<TimestampMs>,
}

/// What the refunds of one payment (a completed collection) hold back:
/// the sum of every refund of it that has not failed, changed in the
/// command that creates or fails each refund, so the refundable amount is
/// one read and two refunds racing for the same money cannot both pass.
/// Stored beside the collection (`keys::refund_tally`), so
/// `CollectionRecord` keeps its shape. `sika verify` recounts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundTally {
    pub collection_id: String,
    pub organization: String,
    pub currency: String,
    /// The payment's amount: what can be refunded at most.
    pub collected_minor: i128,
    /// The refunds pending or completed.
    pub refunded_minor: i128,
    /// How many refunds were made of the payment (failed ones included).
    pub refund_count: u64,
}

impl RefundTally {
    /// A payment's tally before its first refund.
    pub fn empty(collection: &CollectionRecord) -> RefundTally {
        RefundTally {
            collection_id: collection.id.clone(),
            organization: collection.organization.clone(),
            currency: collection.currency.clone(),
            collected_minor: collection.amount,
            refunded_minor: 0,
            refund_count: 0,
        }
    }

    /// What may still be refunded.
    pub fn refundable_minor(&self) -> Result<i128, EngineError> {
        self.collected_minor
            .checked_sub(self.refunded_minor)
            .ok_or(EngineError::Overflow("refundable amount"))
    }

    /// The tally with one more refund of `amount_minor`. The caller has
    /// checked it against what is refundable; exceeding the payment here
    /// is a bug, and the command that would write it fails.
    pub fn refunded(mut self, amount_minor: i128) -> Result<RefundTally, EngineError> {
        assert!(amount_minor > 0, "a refund of payment {} gives nothing back", self.collection_id);
        let overflow = || EngineError::Overflow("refund tally");
        self.refunded_minor = self.refunded_minor.checked_add(amount_minor).ok_or_else(overflow)?;
        self.refund_count = self.refund_count.checked_add(1).ok_or_else(overflow)?;
        self.assert_within_payment();
        Ok(self)
    }

    /// The tally once a refund of `amount_minor` failed: its money counts
    /// as refundable again.
    pub fn released(mut self, amount_minor: i128) -> Result<RefundTally, EngineError> {
        assert!(amount_minor > 0, "a failed refund of payment {} held nothing", self.collection_id);
        self.refunded_minor =
            self.refunded_minor.checked_sub(amount_minor).ok_or(EngineError::Overflow("refund tally"))?;
        self.assert_within_payment();
        Ok(self)
    }

    /// Refunds never exceed what was collected, and never go below zero.
    fn assert_within_payment(&self) {
        assert!(
            self.refunded_minor >= 0 && self.refunded_minor <= self.collected_minor,
            "the refunds of payment {} would come to {} of {} collected",
            self.collection_id,
            self.refunded_minor,
            self.collected_minor
        );
    }
}

/// What a rail reports about a payout or collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// A note on the timeline (a provider attempt, a transient error).
    Note { kind: String, title: String, detail: String },
    /// The final outcome, as a rail reports it (the sandbox's simulator, a
    /// provider, or the clock ending a checkout attempt).
    Settle { success: bool, message: String },
    /// The final outcome, as the operator settles a movement by hand: the
    /// timeline says the operator did it. Last, and never scheduled (a job
    /// holds only the steps above, which `movements::schedule` asserts),
    /// so no stored record carries it and the stored shapes are format 5's.
    Operator { success: bool, message: String },
    /// The movement was handed to `provider` (a connector's first look).
    /// Never scheduled, like `Operator`.
    Sent { provider: String, detail: String },
    /// The rail took a completed payout back, saying why. Last, so jobs
    /// stored before it decode unchanged; the sandbox schedules it (trigger
    /// `05`) after the payout's completion, and a provider's re-read
    /// reports it. A payout that is not completed ignores it; a collection
    /// is never reversed.
    Reverse { message: String },
}

impl Step {
    /// Whether a settling step succeeds, and its message; `None` for a note.
    pub fn outcome(&self) -> Option<(bool, &str)> {
        match self {
            Step::Note { .. } | Step::Sent { .. } | Step::Reverse { .. } => None,
            Step::Settle { success, message } | Step::Operator { success, message } => {
                Some((*success, message))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderStatus {
    AwaitingFunds,
    AwaitingConfirmations,
    FundsReceived,
    ProcessingPayout,
    Completed,
    Failed,
    Expired,
}

impl OrderStatus {
    pub fn name(self) -> &'static str {
        match self {
            OrderStatus::AwaitingFunds => "awaiting_funds",
            OrderStatus::AwaitingConfirmations => "awaiting_confirmations",
            OrderStatus::FundsReceived => "funds_received",
            OrderStatus::ProcessingPayout => "processing_payout",
            OrderStatus::Completed => "completed",
            OrderStatus::Failed => "failed",
            OrderStatus::Expired => "expired",
        }
    }

    pub(crate) fn is_waiting(self) -> bool {
        matches!(self, OrderStatus::AwaitingFunds | OrderStatus::AwaitingConfirmations)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub id: String,
    pub organization: String,
    pub status: OrderStatus,
    pub from_method: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub from_chain: Option<String>,
    pub to: Destination,
    pub to_currency: String,
    /// How to pay in, as JSON text rendered by the API.
    pub deposit_instructions: String,
    pub required_confirmations: u32,
    pub received_amount: i128,
    pub payout_id: Option<String>,
    pub external_reference: String,
    pub metadata: String,
    pub status_message: String,
    pub timeline: Vec<TimelineEntry>,
    pub expires_at: TimestampMs,
    pub created_at: TimestampMs,
    pub updated_at: TimestampMs,
}

/// Where the money of a dispute stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DisputeState {
    /// Its amount is held (or, in its shortfall, waits for inflows).
    Open,
    /// Resolved `accepted`: the payer's claim stands and the amount is
    /// taken (what the balance lacked, from the next inflows).
    Lost,
    /// Resolved `declined`: the hold is released.
    Won,
}

/// The money side of a dispute (the API layer's dispute document holds the
/// rest), stored by the dispute's id in the engine's own space
/// (`Space::Dispute`), out of the documents' reach. It is written only by
/// the commands that open and resolve the dispute and by the inflows that
/// fill its shortfall, each in the same transaction as the ledger entries
/// it records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisputeRecord {
    pub id: String,
    pub organization: String,
    pub currency: String,
    /// What is disputed, in minor units.
    pub amount: i128,
    pub state: DisputeState,
    /// Held now: the sum of its pending holds not yet taken or released.
    pub held: i128,
    /// Taken from the balance (only once `Lost`).
    pub taken: i128,
    /// Its ledger entries, oldest first: pending holds (at opening and from
    /// inflows) and, once lost, the takings from inflows.
    pub transfer_ids: Vec<TransferId>,
    pub created_at: TimestampMs,
    pub updated_at: TimestampMs,
    pub resolved_at: Option<TimestampMs>,
}

impl DisputeRecord {
    /// What the balance still owes it: held from (or, once lost, taken
    /// from) the next inflows of its currency. Nothing once won.
    pub fn shortfall(&self) -> Result<i128, EngineError> {
        if self.state == DisputeState::Won {
            return Ok(0);
        }
        self.amount
            .checked_sub(self.held)
            .and_then(|rest| rest.checked_sub(self.taken))
            .ok_or(EngineError::Overflow("dispute shortfall"))
    }

    /// What the dispute has on the balance, as `heldAmount` shows it: held
    /// while open, taken once lost, nothing once won (released).
    pub fn held_amount(&self) -> Result<i128, EngineError> {
        self.held.checked_add(self.taken).ok_or(EngineError::Overflow("dispute held amount"))
    }

    /// Asserts the record's invariants where it is written: nothing
    /// negative, never more held and taken than the amount, nothing held
    /// once resolved, nothing taken unless lost, nothing at all once won.
    pub fn assert_consistent(&self) {
        assert!(self.amount > 0, "dispute {} disputes no money", self.id);
        assert!(self.held >= 0 && self.taken >= 0, "dispute {} has a negative hold: {self:?}", self.id);
        assert!(
            self.held.checked_add(self.taken).is_some_and(|covered| covered <= self.amount),
            "dispute {} holds more than its amount: {self:?}",
            self.id
        );
        match self.state {
            DisputeState::Open => assert!(self.taken == 0, "open dispute {} has money taken", self.id),
            DisputeState::Lost => assert!(self.held == 0, "lost dispute {} still holds money", self.id),
            DisputeState::Won => assert!(
                self.held == 0 && self.taken == 0,
                "won dispute {} still holds or took money",
                self.id
            ),
        }
    }
}

/// One record for `Command::PutDocuments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub collection: String,
    pub id: String,
    pub body: Vec<u8>,
    /// (organization, kind): also list it under the organization when new.
    pub list: Option<(String, String)>,
}

/// What a scheduled job does when it is due: exactly the steps the engine
/// schedules, each carried out by the command of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobKind {
    /// A rail's report about a payout (the sandbox simulator's).
    AdvancePayout { payout_id: PayoutId, step: Step },
    /// A rail's report about a collection.
    AdvanceCollection { collection_id: CollectionId, step: Step },
    /// An order's deadline.
    ExpireOrder { order_id: OrderId },
    /// A rail's report about a refund (the sandbox simulator's). Last, so
    /// stored jobs keep their encoding.
    AdvanceRefund { refund_id: RefundId, step: Step },
}

/// Work kept for later, under `Space::Job` by due time: the scheduler
/// submits it (`Command::RunJob`) when due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub due_at: TimestampMs,
    pub kind: JobKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An events list entry is a zero byte and the event's number; an id
    /// reads as before; bytes after the number, or a zero byte alone
    /// followed by nothing that is a number, are refused.
    #[test]
    fn a_list_entry_is_an_id_or_an_events_number_and_never_both() {
        for seq in [1, 127, 128, 500_000, u64::MAX] {
            let bytes = Listed::event_bytes(seq);
            assert!(bytes.len() <= 11 && bytes[0] == 0, "{bytes:?}");
            assert_eq!(Listed::decode(&bytes).unwrap(), Listed::Event(seq));
        }
        assert_eq!(Listed::event_bytes(500_000).len(), 4, "3 bytes of number at half a million events");
        let id = "evt_0VcKbj4mZDr14lPyD2rK6aDr";
        let stored = postcard::to_allocvec(&StoredId::of(id, Spelling::Compact)).unwrap();
        assert_eq!(stored.len(), 23);
        assert_eq!(Listed::decode(&stored).unwrap(), Listed::Id(id.into()));
        let whole = postcard::to_allocvec(&StoredId::of("rcp_1", Spelling::Whole)).unwrap();
        assert_eq!(Listed::decode(&whole).unwrap(), Listed::Id("rcp_1".into()));
        let mut trailing = Listed::event_bytes(9);
        trailing.push(1);
        assert!(Listed::decode(&trailing).is_err(), "bytes after the number");
        assert!(Listed::decode(&[0, 0x80]).is_err(), "a number cut short");
    }

    /// Since format 30 an entry stores its balance changes after its
    /// transfer: they read back exactly, the entry alone reads the same
    /// with or without them, an entry without them reads as having none,
    /// they are added only once, and changes cut short are refused.
    #[test]
    fn an_entry_stores_its_balance_changes_after_its_transfer() {
        let entry = journal_entry("GHS1000000004", "sys_settlement_GHS", "GHS", 3);
        let (_, bare) = JournalEntry::chained(3, &[7; 32], &entry.transfer);
        let changes = EntryChanges {
            debit: Some(EntryChange { previous: Some(1), after: BalanceAfter { available: -5, total: 12 } }),
            credit: None,
            at: None,
        };
        let mut bytes = bare.clone();
        changes.append_to(&mut bytes);
        assert!(
            bytes.len() > bare.len() && bytes.len() <= bare.len() + 8,
            "{} bytes",
            bytes.len() - bare.len()
        );
        let (read, stored) = JournalEntry::decode_with_changes(&bytes).unwrap();
        assert_eq!(stored, changes);
        assert_eq!(read, JournalEntry::decode_with_changes(&bare).unwrap().0, "the same entry");
        assert_eq!(crate::storage::decode::<JournalEntry>(&bytes).unwrap(), read, "decode leaves them");
        assert_eq!(JournalEntry::without_changes(&bytes).unwrap(), bare.as_slice());
        assert_eq!(JournalEntry::decode_with_changes(&bare).unwrap().1, EntryChanges::default());
        assert_eq!(JournalEntry::with_changes(&bare, &changes).unwrap(), bytes);
        assert!(JournalEntry::with_changes(&bytes, &changes).is_err(), "changes stored twice");
        let mut none = bare.clone();
        EntryChanges::default().append_to(&mut none);
        assert_eq!(none, bare, "no changes, no bytes");
        for cut in bare.len() + 1..bytes.len() {
            let error = JournalEntry::decode_with_changes(&bytes[..cut]).unwrap_err();
            assert!(error.to_string().contains("balance changes are malformed"), "{error}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(JournalEntry::decode_with_changes(&trailing).is_err(), "bytes after the changes");
    }

    fn journal_entry(debit: &str, credit: &str, currency: &str, journal_seq: u64) -> JournalEntry {
        let transfer = TransferRecord {
            id: 41,
            kind: TransferKind::PostPending(40),
            debit_account: debit.into(),
            credit_account: credit.into(),
            currency: currency.into(),
            amount: 12_345,
            memo: "payout po_1 delivered".into(),
            created_at: 1_700_000_000_000,
            pending_state: None,
            journal_seq,
        };
        JournalEntry { seq: 77, hash: Some([9; 32]), transfer }
    }

    /// The books store an entry's hash at every `HASH_EVERY`th entry, and
    /// in the last entry of a batch, spliced into the bytes `chained`
    /// made: the same bytes as the entry encoded with its hash.
    #[test]
    fn an_entry_stores_its_hash_at_the_marks_and_as_the_last_of_a_batch() {
        let numbers = [1, 63, 64, 127, 128, 200, 16_383, 16_384, 1 << 40, u64::MAX - 63, u64::MAX];
        for seq in numbers {
            let mut transfer = journal_entry("NGN1000000001", "sys_world_NGN", "NGN", seq).transfer;
            transfer.journal_seq = seq;
            let (hash, mut bytes) = JournalEntry::chained(seq, &[1; 32], &transfer);
            let read: JournalEntry = crate::storage::decode(&bytes).unwrap();
            let at_mark = seq % HASH_EVERY == 0;
            assert_eq!(read.hash, at_mark.then_some(hash), "entry {seq}");
            assert_eq!(read.transfer, transfer, "entry {seq}");
            assert_eq!(JournalEntry::chain_hash(&[1; 32], seq, &transfer), hash, "entry {seq}");
            let before = bytes.len();
            JournalEntry::store_hash_in(&mut bytes, &hash);
            let whole = JournalEntry { seq, hash: Some(hash), transfer };
            assert_eq!(bytes, crate::storage::encode(&whole), "entry {seq}");
            assert_eq!(bytes.len(), if at_mark { before } else { before + 32 }, "entry {seq}");
            assert_eq!(crate::storage::decode::<JournalEntry>(&bytes).unwrap(), whole, "entry {seq}");
        }
    }

    fn stored_account(id: &str, currency: &str) -> String {
        match StoredAccount::of(id, currency).counted() {
            StoredAccount::Numbered(n) => format!("number {n}"),
            StoredAccount::System(kind) => format!("system {}", kind.name()),
            StoredAccount::Named(id) => format!("text {id}"),
            StoredAccount::Counted(n) => format!("count {n}"),
        }
    }

    /// The books' ids are stored as numbers and kinds; an id of any other
    /// shape (which no format wrote, but a hand-edited or future ledger
    /// could hold) is kept as text, so every entry reads back exactly.
    #[test]
    fn journal_entries_store_account_ids_compactly_and_read_back_exactly() {
        assert_eq!(stored_account("NGN1000000001", "NGN"), "count 1");
        assert_eq!(stored_account("NGN1000000200", "NGN"), "count 200");
        assert_eq!(stored_account("NGN1000000000", "NGN"), "number 1000000000");
        assert_eq!(stored_account("NGN7", "NGN"), "number 7");
        assert_eq!(stored_account("sys_rail_clearing_NGN", "NGN"), "system rail_clearing");
        assert_eq!(stored_account("sys_world_GHS", "GHS"), "system world");
        for (id, currency) in [
            ("NGN01000000001", "NGN"),
            ("NGN+1", "NGN"),
            ("NGN", "NGN"),
            ("GHS1000000001", "NGN"),
            ("NGN99999999999999999999999", "NGN"),
            ("sys_world_GHS", "NGN"),
            ("sys_worldNGN", "NGN"),
            ("sys_moon_NGN", "NGN"),
            ("acc_7", "NGN"),
        ] {
            assert_eq!(stored_account(id, currency), format!("text {id}"), "{id} in {currency}");
        }
        let cases = [
            journal_entry("NGN1000000001", "sys_world_NGN", "NGN", 77),
            journal_entry("sys_fx_desk_USDC", "USDC1000000002", "USDC", 77),
            journal_entry("NGN01", "acc_7", "NGN", 77),
            journal_entry("GHS1000000001", "sys_world_GHS", "NGN", 76),
            journal_entry("", "1", "", 0),
        ];
        for entry in cases {
            let bytes = crate::storage::encode(&entry);
            assert_eq!(crate::storage::decode::<JournalEntry>(&bytes).unwrap(), entry);
            let (_, chained) = JournalEntry::chained(entry.seq, &[1; 32], &entry.transfer);
            let stored: JournalEntry = crate::storage::decode(&chained).unwrap();
            // Entry 77 is not a mark: it stores no hash.
            assert_eq!(stored, JournalEntry { hash: None, ..entry });
        }
        let books = journal_entry("NGN1000000001", "sys_rail_clearing_NGN", "NGN", 77);
        let whole = postcard::to_allocvec(&(77u64, [9u8; 32], &books.transfer)).unwrap();
        let compact = crate::storage::encode(&books);
        assert!(compact.len() + 25 <= whole.len(), "{} against {}", compact.len(), whole.len());
    }

    fn dispute(held: i128, taken: i128, state: DisputeState) -> DisputeRecord {
        DisputeRecord {
            id: "dsp_1".into(),
            organization: "org".into(),
            currency: "GHS".into(),
            amount: 1_000,
            state,
            held,
            taken,
            transfer_ids: Vec::new(),
            created_at: 0,
            updated_at: 0,
            resolved_at: None,
        }
    }

    #[test]
    fn a_dispute_owes_what_it_has_not_covered_until_it_is_won() {
        assert_eq!(dispute(400, 0, DisputeState::Open).shortfall(), Ok(600));
        assert_eq!(dispute(0, 700, DisputeState::Lost).shortfall(), Ok(300));
        assert_eq!(dispute(0, 0, DisputeState::Won).shortfall(), Ok(0));
        assert_eq!(dispute(0, 700, DisputeState::Lost).held_amount(), Ok(700));
        dispute(1_000, 0, DisputeState::Open).assert_consistent();
    }

    #[test]
    #[should_panic(expected = "holds more than its amount")]
    fn a_dispute_never_holds_more_than_its_amount() {
        dispute(1_001, 0, DisputeState::Open).assert_consistent();
    }

    #[test]
    #[should_panic(expected = "still holds money")]
    fn a_lost_dispute_holds_nothing() {
        dispute(10, 990, DisputeState::Lost).assert_consistent();
    }

    #[test]
    #[should_panic(expected = "still holds or took money")]
    fn a_won_dispute_keeps_nothing() {
        dispute(0, 10, DisputeState::Won).assert_consistent();
    }

    #[test]
    fn balances_that_would_overflow_are_an_error() {
        let owner = AccountOwner::System(SystemAccount::World);
        let mut account = AccountRecord::opened("sys_world_USD".into(), owner, "USD", 0);
        account.debits_posted = i128::MAX;
        account.debits_pending = 2;
        assert_eq!(account.balances(), Err(EngineError::Overflow("account balance")));
        account.debits_pending = 0;
        assert_eq!(account.balances().map(|b| b.available), Ok(-i128::MAX));
        account.credits_pending = -2;
        assert_eq!(account.balances(), Err(EngineError::Overflow("account balance")), "the total too");
    }
}
