//! Storage on redb: one table of byte keys to postcard-encoded records, a
//! key layout with one prefix byte per kind of record, and the layered
//! overlay the writer applies commands through.
//!
//! Keys sort the way they are scanned: numbers big-endian, strings followed
//! by a zero byte, so a prefix scan lists one organization's records in
//! creation order.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use hashbrown::HashMap;
use indexmap::IndexMap;
use redb::{ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::account_cache::{AccountCache, TakenAccount};
use crate::account_cache::{Slot, Totals};
use crate::error::EngineError;
use crate::records::{AccountEntry, TransferId, TransferRecord, TransferRef};

/// The single table every record lives in.
pub const RECORDS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("records");

/// The prefix byte of each kind of record. `Space::VARIANTS` lists them
/// all, in prefix order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::VariantArray)]
#[repr(u8)]
pub enum Space {
    Meta = 0,
    Account = 1,
    OrgAccount = 2,
    Transfer = 3,
    Journal = 4,
    /// Formats 1 to 25: idempotency entries keyed by their organization's
    /// and operation's numbers and their reference's text
    /// (`keys::idempotency_by_reference`). Since format 26 they are in
    /// `IdempotencyDigest` and this space is empty.
    Idempotency = 5,
    Quote = 6,
    Conversion = 7,
    Event = 8,
    ListIndex = 9,
    Deposit = 10,
    Document = 11,
    Job = 12,
    /// The records only the engine writes, each in a space of its own
    /// (since format 6; they were documents before): the server's document
    /// writes cannot reach them.
    Payout = 13,
    Collection = 14,
    Order = 15,
    CollectionGroup = 16,
    CollectionTally = 17,
    /// A live key's spend so far in one window (`i128` US cents).
    CapUsage = 18,
    /// An event's sequence number, by the event's id.
    EventId = 19,
    /// The payouts and collections still pending, by rail: kept in the
    /// command that creates or settles each (`keys::open_movement`).
    OpenMovement = 20,
    /// Refunds of completed collections (`RefundRecord`), by id.
    Refund = 21,
    /// What the refunds of one payment hold back (`RefundTally`), by the
    /// collection's id: kept in the command that creates or settles each
    /// refund, beside the collection rather than in it.
    RefundTally = 22,
    /// The money side of each dispute (`DisputeRecord`), by its id.
    /// Numbered apart from the spaces other changes add beside it.
    Dispute = 40,
    /// Per organization and currency, the disputes whose amount the
    /// balance could not hold yet, oldest first (`Vec<String>`): every
    /// command crediting that balance reads it.
    DisputeShortfalls = 41,
    /// Formats 10 to 29 only (format 30 stores each change in its journal
    /// entry, `balance_changes::EntryChanges`): per organization account,
    /// one entry for each journal entry that changed its balances
    /// (`balance_changes::StoredChange`: the time, the
    /// account's change before it and the balances after it), keyed by the
    /// journal number, then the account's number: a batch's entries sort
    /// after every stored one, so they are appended rather than spread
    /// over the whole index (since format 10; formats 7 to 9 keyed them by
    /// account first, in space 50, and every batch rewrote nearly every
    /// page of that index). Numbered apart from the spaces other changes add.
    BalanceChange = 51,
    /// Every `balance_changes::MARK_EVERY`-th balance change of each
    /// account, keyed by the account's number, the change's time and its
    /// journal number: where a read of the balances at an instant starts
    /// walking back, so the walk is short whatever the account's history.
    BalanceMark = 52,
    /// Formats 10 to 15: each organization account's newest balance change
    /// and how many it has had (`balance_changes::ChangeHead`), by the
    /// account's number. Since format 16 the account record holds it
    /// (`AccountEntry::changes`), and the space is empty.
    BalanceHead = 53,
    /// The number each name that keys hold as a number has (an
    /// organization, a list's kind, an idempotency operation), by the
    /// name's text (`NameNumber`, since format 20): list entries and
    /// idempotency entries spelled their organization and kind in text,
    /// 29 and 8 bytes, in every key.
    Name = 54,
    /// What a create with an `externalReference` made
    /// (`records::IdempotencyRecord`), by a digest of its organization's
    /// and operation's numbers and the reference (`keys::idempotency`,
    /// since format 26). References arrive in whatever order callers
    /// give them, so their entries are inserted all over the space: keyed
    /// by the reference's text, a counting reference (`order-9`,
    /// `order-10`) split the leaves behind its insertion points half full
    /// and a long one made every key long. A digest is 16 bytes whatever
    /// the reference, and digests fall evenly over the space.
    IdempotencyDigest = 55,
}

impl Space {
    /// The space a key's first byte names, if any.
    pub fn of_key(key: &[u8]) -> Option<Space> {
        let first = *key.first()?;
        <Space as strum::VariantArray>::VARIANTS.iter().copied().find(|space| *space as u8 == first)
    }
}

/// The document collections each engine-owned space replaced (format 5
/// kept these records as documents under these names). A document write
/// naming one is refused (`EngineError::EngineOwned`), and no document key
/// is ever built for one (`keys::document` asserts it).
pub const ENGINE_OWNED: [(&str, Space); 7] = [
    ("payouts", Space::Payout),
    ("collections", Space::Collection),
    ("orders", Space::Order),
    ("collection_groups", Space::CollectionGroup),
    ("collection_tallies", Space::CollectionTally),
    ("cap_usage", Space::CapUsage),
    ("event_seq", Space::EventId),
];

/// Whether documents of `collection` would be records the engine owns.
pub fn is_engine_owned(collection: &str) -> bool {
    ENGINE_OWNED.iter().any(|(name, _)| *name == collection)
}

/// Which kind of movement an open-movement entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MovementKind {
    Payout = 0,
    Collection = 1,
    Refund = 2,
}

/// The number a key holds in place of a name's text (an organization, a
/// list's kind, an idempotency operation), since format 20. The
/// `Space::Name` record under the text holds it (`keys::name`); numbers
/// start at 1, are never reused, and a name keeps its number for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NameNumber(pub u32);

impl NameNumber {
    /// The two numbers a list or idempotency key holds after its space
    /// byte (`keys::list_entry`, `keys::idempotency`: four bytes each,
    /// big-endian), and the bytes after them; `None` for a shorter key.
    pub fn pair_in(key: &[u8]) -> Option<(NameNumber, NameNumber, &[u8])> {
        let (first, rest) = key.get(1..)?.split_first_chunk::<4>()?;
        let (second, rest) = rest.split_first_chunk::<4>()?;
        Some((NameNumber(u32::from_be_bytes(*first)), NameNumber(u32::from_be_bytes(*second)), rest))
    }
}

/// Builds keys: a prefix byte then parts.
pub struct Key(Vec<u8>);

impl Key {
    pub fn new(space: Space) -> Key {
        let mut bytes = Vec::with_capacity(32);
        bytes.push(space as u8);
        Key(bytes)
    }
    pub fn str(mut self, part: &str) -> Key {
        self.0.extend_from_slice(part.as_bytes());
        self.0.push(0);
        self
    }
    pub fn u64(mut self, part: u64) -> Key {
        self.0.extend_from_slice(&part.to_be_bytes());
        self
    }
    pub fn name(mut self, part: NameNumber) -> Key {
        self.0.extend_from_slice(&part.0.to_be_bytes());
        self
    }
    pub fn bytes(self) -> Vec<u8> {
        self.0
    }
}

pub mod keys {
    use super::{Key, MovementKind, NameNumber, Space};

    pub fn meta(name: &str) -> Vec<u8> {
        Key::new(Space::Meta).str(name).bytes()
    }
    pub fn account(id: &str) -> Vec<u8> {
        Key::new(Space::Account).str(id).bytes()
    }
    pub fn org_account(organization: &str, currency: &str) -> Vec<u8> {
        Key::new(Space::OrgAccount).str(organization).str(currency).bytes()
    }
    pub fn org_accounts_prefix(organization: &str) -> Vec<u8> {
        Key::new(Space::OrgAccount).str(organization).bytes()
    }
    pub fn transfer(id: u64) -> Vec<u8> {
        Key::new(Space::Transfer).u64(id).bytes()
    }
    /// The number a key of one number holds (`transfer`, `journal`,
    /// `balance_head`): its space byte then eight bytes big-endian.
    pub fn number_of(key: &[u8]) -> Option<u64> {
        key.get(1..).and_then(|n| <[u8; 8]>::try_from(n).ok()).map(u64::from_be_bytes)
    }
    pub fn journal(seq: u64) -> Vec<u8> {
        Key::new(Space::Journal).u64(seq).bytes()
    }
    /// What a create with this reference made (since format 26): the first
    /// `IDEMPOTENCY_DIGEST` bytes of SHA-256 over the organization's and
    /// the operation's numbers (`NameNumber`, four bytes each) and the
    /// reference's text. Two references share a key by chance with a
    /// probability of 2^-128, the same odds on which a retry's fingerprint
    /// is compared (`records::FINGERPRINT_KEPT`).
    pub fn idempotency(organization: NameNumber, operation: NameNumber, reference: &str) -> Vec<u8> {
        let digest = crate::digest::sha256(&[
            &organization.0.to_be_bytes(),
            &operation.0.to_be_bytes(),
            reference.as_bytes(),
        ]);
        let (kept, _) = digest.split_first_chunk::<IDEMPOTENCY_DIGEST>().expect("16 of 32 bytes");
        let mut key = Key::new(Space::IdempotencyDigest);
        key.0.extend_from_slice(kept);
        key.bytes()
    }
    /// How many bytes of the digest an idempotency key keeps.
    pub const IDEMPOTENCY_DIGEST: usize = 16;
    /// Where formats 1 to 25 kept an idempotency entry: by the
    /// organization's and the operation's numbers and the reference's
    /// text (since format 20; the names' texts before it).
    pub fn idempotency_by_reference(
        organization: NameNumber,
        operation: NameNumber,
        reference: &str,
    ) -> Vec<u8> {
        Key::new(Space::Idempotency).name(organization).name(operation).str(reference).bytes()
    }
    /// A name's number (`NameNumber`), by the name's text.
    pub fn name(text: &str) -> Vec<u8> {
        Key::new(Space::Name).str(text).bytes()
    }
    pub fn quote(id: &str) -> Vec<u8> {
        Key::new(Space::Quote).str(id).bytes()
    }
    pub fn conversion(id: &str) -> Vec<u8> {
        Key::new(Space::Conversion).str(id).bytes()
    }
    pub fn deposit(id: &str) -> Vec<u8> {
        Key::new(Space::Deposit).str(id).bytes()
    }
    pub fn event(seq: u64) -> Vec<u8> {
        Key::new(Space::Event).u64(seq).bytes()
    }
    /// Per organization and kind of resource (their numbers,
    /// `NameNumber`), in creation order.
    pub fn list_entry(organization: NameNumber, kind: NameNumber, seq: u64) -> Vec<u8> {
        Key::new(Space::ListIndex).name(organization).name(kind).u64(seq).bytes()
    }
    pub fn list_prefix(organization: NameNumber, kind: NameNumber) -> Vec<u8> {
        Key::new(Space::ListIndex).name(organization).name(kind).bytes()
    }
    /// A record the API layer owns (keys, representatives…), by collection
    /// and id. Never one of the engine's own records (`ENGINE_OWNED`),
    /// which live in spaces of their own.
    pub fn document(collection: &str, id: &str) -> Vec<u8> {
        documents_prefix(collection).into_iter().chain(id.bytes()).chain([0]).collect()
    }
    pub fn documents_prefix(collection: &str) -> Vec<u8> {
        assert!(
            !super::is_engine_owned(collection),
            "'{collection}' is the engine's, not a document collection"
        );
        Key::new(Space::Document).str(collection).bytes()
    }
    pub fn payout(id: &str) -> Vec<u8> {
        Key::new(Space::Payout).str(id).bytes()
    }
    /// The id a payout's key (`payout`) holds.
    pub fn payout_id(key: &[u8]) -> Option<&str> {
        let id = key.strip_prefix(&[Space::Payout as u8])?.strip_suffix(&[0])?;
        std::str::from_utf8(id).ok().filter(|id| !id.contains('\0'))
    }
    pub fn collection(id: &str) -> Vec<u8> {
        Key::new(Space::Collection).str(id).bytes()
    }
    pub fn order(id: &str) -> Vec<u8> {
        Key::new(Space::Order).str(id).bytes()
    }
    /// A collection's group (`CollectionGroup`), by the collection's id.
    pub fn collection_group(collection_id: &str) -> Vec<u8> {
        Key::new(Space::CollectionGroup).str(collection_id).bytes()
    }
    /// A group's `TallyRecord`, by the group's id.
    pub fn collection_tally(group: &str) -> Vec<u8> {
        Key::new(Space::CollectionTally).str(group).bytes()
    }
    /// A live key's spend in one window, by `<key id>/<window>`.
    pub fn cap_usage(key_window: &str) -> Vec<u8> {
        Key::new(Space::CapUsage).str(key_window).bytes()
    }
    /// An event's sequence number, by the event's id: since format 22 an
    /// id of the node's shape (`evt_` and 24 base-62 characters) by its
    /// parts (`0xFF`, the time in 6 bytes and the random part in 12: 20
    /// bytes where its text took 30), any other by its text.
    pub fn event_id(id: &str) -> Vec<u8> {
        match crate::id_parts::parts(id).filter(|parts| parts.prefix == "evt") {
            Some(parts) => {
                let mut key = Vec::with_capacity(20);
                key.push(Space::EventId as u8);
                // No id's text starts with 0xFF (no UTF-8 text holds it):
                // the two kinds of key never meet, and these sort after
                // every key of text, so an upgraded ledger's new ones are
                // appended too (`is_appended`).
                key.push(0xFF);
                key.extend_from_slice(&parts.time_ms.to_be_bytes()[2..]);
                key.extend_from_slice(&parts.random.to_be_bytes()[4..]);
                key
            }
            None => event_id_as_text(id),
        }
    }
    /// An event's sequence number, by the event's id as formats 6 to 21
    /// keyed every one: its text.
    pub fn event_id_as_text(id: &str) -> Vec<u8> {
        Key::new(Space::EventId).str(id).bytes()
    }
    pub fn refund(id: &str) -> Vec<u8> {
        Key::new(Space::Refund).str(id).bytes()
    }
    /// A payment's `RefundTally`, by the collection's id.
    pub fn refund_tally(collection_id: &str) -> Vec<u8> {
        Key::new(Space::RefundTally).str(collection_id).bytes()
    }
    /// A pending movement on `rail` (its value: when it was created).
    pub fn open_movement(rail: &str, kind: MovementKind, id: &str) -> Vec<u8> {
        let mut key = open_movements_prefix(rail);
        key.push(kind as u8);
        key.extend_from_slice(id.as_bytes());
        key.push(0);
        key
    }
    pub fn open_movements_prefix(rail: &str) -> Vec<u8> {
        Key::new(Space::OpenMovement).str(rail).bytes()
    }
    /// A dispute's money (`DisputeRecord`), by the dispute's id.
    pub fn dispute(id: &str) -> Vec<u8> {
        Key::new(Space::Dispute).str(id).bytes()
    }
    /// The disputes still short on an organization's balance of `currency`.
    pub fn dispute_shortfalls(organization: &str, currency: &str) -> Vec<u8> {
        Key::new(Space::DisputeShortfalls).str(organization).str(currency).bytes()
    }
    /// The balance change journal entry `journal_seq` made to the
    /// organization account numbered `number`, as formats 10 to 29
    /// stored it apart (`balance_changes::StoredChange`).
    pub fn balance_change(journal_seq: u64, number: u64) -> Vec<u8> {
        Key::new(Space::BalanceChange).u64(journal_seq).u64(number).bytes()
    }
    /// A mark on account `number`'s balance change at journal entry
    /// `journal_seq`, made at `at` (`balance_changes::MARK_EVERY`).
    pub fn balance_mark(number: u64, at: i64, journal_seq: u64) -> Vec<u8> {
        Key::new(Space::BalanceMark).u64(number).u64(at.max(0) as u64).u64(journal_seq).bytes()
    }
    /// Where account `number`'s marks start.
    pub fn balance_marks_prefix(number: u64) -> Vec<u8> {
        Key::new(Space::BalanceMark).u64(number).bytes()
    }
    /// Account `number`'s newest balance change as formats 10 to 15
    /// stored it (`Space::BalanceHead`).
    pub fn balance_head(number: u64) -> Vec<u8> {
        Key::new(Space::BalanceHead).u64(number).bytes()
    }
    /// A scheduled job, ordered by when it is due.
    pub fn job(due_at: i64, id: &str) -> Vec<u8> {
        Key::new(Space::Job).u64(due_at.max(0) as u64).str(id).bytes()
    }
    pub fn space(space: Space) -> Vec<u8> {
        vec![space as u8]
    }
}

/// Postcard bytes of an engine record. Encodes into a buffer sized for a
/// typical record, so most records are written without regrowing it.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_extend(value, Vec::with_capacity(ENCODE_CAPACITY))
        .expect("postcard encodes every engine record")
}

/// Enough for an account, a transfer or a journal entry with short ids and memo.
const ENCODE_CAPACITY: usize = 192;

/// In debug builds, asserts that `bytes` (the encoding of `value` about to
/// be written) decode back to `value`: a field that is not stored, or that
/// reads back differently, fails here rather than in a later read. Skipped
/// in release builds, where it would cost a decode per write.
pub fn debug_assert_decodes_to<T: DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T, bytes: &[u8]) {
    if cfg!(debug_assertions) {
        let decoded = decode::<T>(bytes);
        assert!(
            decoded.as_ref() == Ok(value),
            "a record does not decode back to what was written: {value:?} became {decoded:?}"
        );
    }
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, EngineError> {
    postcard::from_bytes(bytes).map_err(|e| EngineError::Corrupt(format!("undecodable record: {e}")))
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if let Some(next) = last.checked_add(1) {
            end.push(next);
            return end;
        }
    }
    vec![u8::MAX; prefix.len().saturating_add(1)]
}

/// A batch's changes by key: `None` deletes the key. In the order the keys
/// were first written, so the overlay drops a command's new keys by
/// truncating it (`Overlay::drop_command`).
pub type Layer = IndexMap<Vec<u8>, Option<Vec<u8>>, foldhash::fast::RandomState>;

/// One applied batch: its commit epoch and its changes, which never
/// change once it is made (its filter and flag are worked out from them).
#[derive(Debug)]
pub struct Batch {
    pub epoch: u64,
    changes: Layer,
    /// The changed keys' places in `changes`, in key order, once the
    /// logger has sorted them (`set_order`): range reads over a pending
    /// batch then look at the keys in range only, and the checkpointer
    /// merges batches without sorting or hashing their keys again.
    order: std::sync::OnceLock<Vec<u32>>,
    /// Which keys the batch may change: a read asks the batch's map only
    /// when the filter says it may hold the key.
    filter: KeyFilter,
    /// Whether the batch writes a key of `Space::DisputeShortfalls`.
    writes_shortfalls: bool,
}

impl Batch {
    pub fn new(epoch: u64, changes: Layer) -> Batch {
        let filter = KeyFilter::of(&changes);
        let space = Space::DisputeShortfalls as u8;
        let writes_shortfalls = changes.keys().any(|key| key.first() == Some(&space));
        Batch { epoch, changes, order: std::sync::OnceLock::new(), filter, writes_shortfalls }
    }

    /// The batch's changes by key.
    pub fn changes(&self) -> &Layer {
        &self.changes
    }

    /// Records the order of the batch's keys (`key_order` of its changes),
    /// once; a second order is ignored.
    pub fn set_order(&self, order: Vec<u32>) {
        debug_assert_eq!(order.len(), self.changes.len());
        let _ = self.order.set(order);
    }

    /// The batch's changes in key order, once `set_order` has recorded it.
    pub fn in_order(&self) -> Option<impl Iterator<Item = Change<'_>>> {
        let order = self.order.get()?;
        Some(order.iter().map(|&place| self.entry(place)))
    }

    /// The change at `place` in the change map (a place `in_order` gave).
    pub fn entry(&self, place: u32) -> Change<'_> {
        change_at(&self.changes, place)
    }

    /// Whether the batch writes a key of `Space::DisputeShortfalls`.
    pub fn writes_shortfalls(&self) -> bool {
        self.writes_shortfalls
    }

    /// The batch's change to `key`, if it changes it (`Some(None)`: it
    /// deletes it). `hash` is the key's (`KeyHash::of`).
    fn change(&self, key: &[u8], hash: KeyHash) -> Option<&Option<Vec<u8>>> {
        if self.filter.may_hold(hash) { self.changes.get(key) } else { None }
    }

    /// The changes to keys in `start..end`, in key order.
    pub fn range<'b>(&'b self, start: &[u8], end: &[u8]) -> Changes<'b> {
        match self.order.get() {
            Some(order) => {
                let first = order.partition_point(|&place| self.entry(place).0 < start);
                order[first..]
                    .iter()
                    .map(|&place| self.entry(place))
                    .take_while(|(key, _)| *key < end)
                    .collect()
            }
            None => {
                let mut changes: Changes = self
                    .changes
                    .iter()
                    .filter(|(key, _)| key.as_slice() >= start && key.as_slice() < end)
                    .map(|(key, value)| (key.as_slice(), value.as_deref()))
                    .collect();
                changes.sort_unstable_by(|a, b| a.0.cmp(b.0));
                changes
            }
        }
    }
}

/// Looks `key` up in `batches`, newest (last) first: `Some(None)` is a
/// deletion, `None` means no batch touched the key. Under load a read goes
/// through dozens of batches the table does not hold yet; the key is
/// hashed once for all their filters, and a batch's map is asked only
/// when its filter says it may hold the key.
pub fn find_in<'b>(batches: &'b [Arc<Batch>], key: &[u8]) -> Option<Option<&'b [u8]>> {
    let hash = KeyHash::of(key);
    batches.iter().rev().find_map(|batch| batch.change(key, hash)).map(|value| value.as_deref())
}

/// A key's hash for the batches' filters (`KeyFilter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyHash(u64);

impl KeyHash {
    fn of(key: &[u8]) -> KeyHash {
        use std::hash::BuildHasher;
        const SEED: u64 = 0x51ca_0f11_7e25_eed5;
        KeyHash(foldhash::fast::FixedState::with_seed(SEED).hash_one(key))
    }
}

/// A Bloom filter over a batch's keys: about eight bits per key, two set
/// per key, so a key the batch does not change is told apart after two
/// bit tests but for about one read in twenty. Never wrong about a key the
/// batch does change.
#[derive(Debug)]
struct KeyFilter {
    bits: Vec<u64>,
    /// The number of bits less one (a power of two less one).
    mask: u64,
}

impl KeyFilter {
    /// At most 2^23 bits (1 MiB), whatever the batch's size.
    const BITS_MAX: usize = 1 << 23;

    fn of(changes: &Layer) -> KeyFilter {
        let bits = changes.len().saturating_mul(8).next_power_of_two().clamp(64, Self::BITS_MAX);
        let mut filter = KeyFilter { bits: vec![0; bits / 64], mask: (bits as u64).saturating_sub(1) };
        for key in changes.keys() {
            let [first, second] = filter.positions(KeyHash::of(key));
            for bit in [first, second] {
                filter.bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        filter
    }

    /// The two bits a key sets: from the hash's low and high halves.
    fn positions(&self, hash: KeyHash) -> [usize; 2] {
        [(hash.0 & self.mask) as usize, ((hash.0 >> 32) & self.mask) as usize]
    }

    fn may_hold(&self, hash: KeyHash) -> bool {
        self.positions(hash).iter().all(|bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }
}

/// One key's change: its new value, or `None` for a deletion.
pub type Change<'a> = (&'a [u8], Option<&'a [u8]>);

/// A layer's changes in key order, for writing.
pub type Changes<'a> = Vec<Change<'a>>;

/// Point reads from any redb table of records: the writer's read snapshot,
/// or a write transaction's table.
pub trait Lookup {
    fn lookup(&self, key: &[u8]) -> Result<Option<redb::AccessGuard<'_, &'static [u8]>>, redb::StorageError>;
    /// Whether any key starts with `prefix`.
    fn holds_prefix(&self, prefix: &[u8]) -> Result<bool, redb::StorageError>;
}

impl<T: ReadableTable<&'static [u8], &'static [u8]>> Lookup for T {
    fn lookup(&self, key: &[u8]) -> Result<Option<redb::AccessGuard<'_, &'static [u8]>>, redb::StorageError> {
        self.get(key)
    }

    fn holds_prefix(&self, prefix: &[u8]) -> Result<bool, redb::StorageError> {
        let end = prefix_end(prefix);
        Ok(self.range::<&[u8]>(prefix..end.as_slice())?.next().is_some())
    }
}

/// The counters the books keep under `Space::Meta`, each a `u64` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    TransferId,
    JournalSeq,
    EventSeq,
    ListSeq,
    AccountNumber,
    /// The last `NameNumber` given (since format 20).
    NameNumber,
}

impl Counter {
    const ALL: [Counter; 6] = [
        Counter::TransferId,
        Counter::JournalSeq,
        Counter::EventSeq,
        Counter::ListSeq,
        Counter::AccountNumber,
        Counter::NameNumber,
    ];

    /// The name of its `keys::meta` record.
    pub fn name(self) -> &'static str {
        match self {
            Counter::TransferId => "transfer_id",
            Counter::JournalSeq => "journal_seq",
            Counter::EventSeq => "event_seq",
            Counter::ListSeq => "list_seq",
            Counter::AccountNumber => "account_number",
            Counter::NameNumber => "name_number",
        }
    }
}

/// The name of the journal head's `keys::meta` record (the last entry's hash).
const JOURNAL_HEAD: &str = "journal_head";

/// A typed copy of one `Space::Meta` record, kept for the whole batch so the
/// counters are not decoded, re-encoded and re-inserted for every transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cached<T> {
    /// Not read yet in this batch (or written through the byte interface
    /// since): the layered changes and the table hold its value.
    Unloaded,
    /// Its current value (`None`: the record does not exist); `dirty` when
    /// it differs from what the layered changes and the table hold.
    Loaded { value: Option<T>, dirty: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counters {
    counters: [Cached<u64>; Counter::ALL.len()],
    journal_head: Cached<[u8; 32]>,
    /// The number and hash of the last journal entry this batch wrote, for
    /// the books' assertion that the next one follows it. Kept only in
    /// memory, and undone with the command that wrote the entry.
    journal_last: Option<(u64, [u8; 32])>,
}

impl Counters {
    const UNLOADED: Counters = Counters {
        counters: [Cached::Unloaded; Counter::ALL.len()],
        journal_head: Cached::Unloaded,
        journal_last: None,
    };
}

/// Which typed meta record, if any, `key` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetaSlot {
    Counter(usize),
    JournalHead,
}

fn meta_slot(key: &[u8]) -> Option<MetaSlot> {
    // Keys of `Space::Meta` are the prefix byte, a name and a zero byte.
    let name = key.strip_prefix(&[Space::Meta as u8])?.strip_suffix(&[0])?;
    if name == JOURNAL_HEAD.as_bytes() {
        return Some(MetaSlot::JournalHead);
    }
    Counter::ALL.iter().position(|c| c.name().as_bytes() == name).map(MetaSlot::Counter)
}

/// Committed name numbers (`Space::Name`), kept by the writer across
/// batches: a name's number never changes once given, so after the first
/// read the table need not be asked again (a payout asks for its
/// organization's, its list's and its operation's). Only numbers read
/// from the committed table go in.
#[derive(Debug, Default)]
pub struct NameNumbers {
    numbers: HashMap<String, NameNumber>,
}

impl NameNumbers {
    /// Past this many names no more are added: the cache only saves reads.
    const ENTRIES_MAX: usize = 1 << 16;
}

/// Committed organization-account index entries (`keys::org_account` →
/// account id, and the account's `keys::account` key), kept by the writer
/// across batches: an entry never changes once created, so after the first
/// read the table need not be asked again. Only entries read from the
/// committed table go in.
#[derive(Debug, Default)]
pub struct AccountIds {
    ids: HashMap<IndexKey, OrgAccount>,
}

/// An organization account's index key (`keys::org_account`) as the
/// `AccountIds` map holds it: in the map's own slot when it is short, as
/// almost all are (a space, an organization's id and a currency), so a
/// lookup compares it without following a pointer. On the memory bench a
/// key on the heap cost a cache miss per side of each transfer, 3 % of the
/// writer's time in `memcmp` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IndexKey {
    /// The first `len` bytes of `bytes`; the rest are zero.
    Inline {
        len: u8,
        bytes: [u8; IndexKey::INLINE_MAX],
    },
    Long(Box<[u8]>),
}

impl IndexKey {
    const INLINE_MAX: usize = 46;

    fn of(key: &[u8]) -> IndexKey {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= Self::INLINE_MAX => {
                let mut bytes = [0; Self::INLINE_MAX];
                bytes[..key.len()].copy_from_slice(key);
                IndexKey::Inline { len, bytes }
            }
            _ => IndexKey::Long(key.into()),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            IndexKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            IndexKey::Long(bytes) => bytes,
        }
    }
}

/// Hashes as the key's bytes do, so the map is asked with a `&[u8]`.
impl std::hash::Hash for IndexKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl hashbrown::Equivalent<IndexKey> for [u8] {
    fn equivalent(&self, key: &IndexKey) -> bool {
        self == key.as_slice()
    }
}

/// An organization account's id and the key it is stored under.
#[derive(Debug)]
struct OrgAccount {
    id: String,
    key: Vec<u8>,
    /// The account's slot in the writer's `AccountCache`, once found:
    /// the transfer's hot path then takes the account without hashing
    /// and comparing its key a second time.
    slot: Option<u32>,
}

impl AccountIds {
    /// Past this many entries no more are added: the cache only saves reads.
    const ENTRIES_MAX: usize = 1 << 20;

    fn insert(&mut self, key: &[u8], id: String) {
        if self.ids.len() < Self::ENTRIES_MAX || self.ids.contains_key(key) {
            let account = OrgAccount { key: keys::account(&id), id, slot: None };
            self.ids.insert(IndexKey::of(key), account);
        }
    }
}

/// Layers over the committed table: the current command's changes, then
/// the batch's kept-so-far changes, then the batches applied before it that
/// the table does not hold yet (acknowledged or still being logged), then
/// the table.
/// A command that fails drops its layer and leaves no trace; one that
/// succeeds folds its layer into the batch. At the end of a batch the
/// batch layer goes to the committer, which writes it in key order.
///
/// The two upper layers share one map, in the order keys were first
/// written: the keys the current command adds come after the batch's
/// kept ones, and dropping it truncates them; a write that replaces a
/// kept key's value records it in an undo log, which `drop_command`
/// replays backwards and `keep_command` forgets. The meta counters and
/// the journal head are kept typed (see `counter_next`, `journal_head`)
/// and snapshotted per command the same way.
/// A kept key's place in the change map and the value it held.
type Undo = (usize, Option<Vec<u8>>);

pub struct Overlay<'t> {
    table: &'t dyn Lookup,
    /// Earlier batches the table does not hold yet, oldest first.
    below: &'t [Arc<Batch>],
    changes: Layer,
    /// How many keys the kept commands wrote: the current command's new
    /// keys are the ones after.
    kept_keys: usize,
    /// For each write of the current command to a kept key: its place and
    /// what it held before.
    undo: Vec<Undo>,
    counters: Counters,
    /// `counters` as the last kept command left them.
    kept_counters: Counters,
    account_ids: Option<&'t mut AccountIds>,
    accounts: Option<&'t mut AccountCache>,
    names: Option<&'t mut NameNumbers>,
    /// Whether any balance may owe disputes (`Space::DisputeShortfalls`)
    /// in this batch's view: worked out on first asking, and set once a
    /// command writes such a list. Never set back within the batch (a
    /// dropped command's list, or one emptied, only costs lookups).
    shortfalls: Option<bool>,
}

impl<'t> Overlay<'t> {
    /// An overlay over `table`, with `below` (earlier batches the table
    /// does not hold yet, oldest first) between the two.
    pub fn new(table: &'t dyn Lookup, below: &'t [Arc<Batch>]) -> Self {
        Overlay {
            table,
            below,
            changes: Layer::default(),
            kept_keys: 0,
            undo: Vec::new(),
            counters: Counters::UNLOADED,
            kept_counters: Counters::UNLOADED,
            account_ids: None,
            names: None,
            accounts: None,
            shortfalls: None,
        }
    }

    /// Whether any list of disputes a balance owes may exist: false only
    /// when no layer and not the table holds a key of
    /// `Space::DisputeShortfalls`. Every inflow to a balance looks for its
    /// list; this spares those lookups while no dispute is short anywhere.
    pub fn may_hold_dispute_shortfalls(&mut self) -> Result<bool, EngineError> {
        if let Some(known) = self.shortfalls {
            return Ok(known);
        }
        let space = Space::DisputeShortfalls as u8;
        let in_space = |key: &Vec<u8>| key.first() == Some(&space);
        let found = self.changes.keys().any(in_space)
            || self.below.iter().any(|batch| batch.writes_shortfalls())
            || self.table.holds_prefix(&keys::space(Space::DisputeShortfalls))?;
        self.shortfalls = Some(found);
        Ok(found)
    }

    /// Reads and writes accounts through `accounts` (`AccountCache`).
    pub fn with_accounts(mut self, accounts: &'t mut AccountCache) -> Self {
        self.accounts = Some(accounts);
        self
    }

    /// The account stored at `key` (a `keys::account`), from the account
    /// cache when it holds it, else read through the layers (and cached).
    pub fn get_account(&mut self, key: &[u8]) -> Result<Option<AccountEntry>, EngineError> {
        if let Some(accounts) = self.accounts.as_deref()
            && let Some(slot) = accounts.slot(key)
        {
            match accounts.at(slot) {
                Slot::Held(entry) => return Ok(Some(entry.clone())),
                Slot::Taken(totals) if accounts.is_pending(slot) => {
                    return self.pending_from_layers(key, *totals).map(Some);
                }
                Slot::Taken(_) | Slot::Empty => {}
            }
        }
        let record = self.get_from_layers::<AccountEntry>(key)?;
        if let Some(record) = &record
            && let Some(accounts) = self.accounts.as_deref_mut()
        {
            // What the layers hold, so right whether the command is kept
            // or dropped.
            accounts.fill(key, record.clone());
        }
        Ok(record)
    }

    /// A pending account whose slot does not hold it (`Slot::Taken`): the
    /// layers' copy of it with `totals`.
    fn pending_from_layers(&self, key: &[u8], totals: Totals) -> Result<AccountEntry, EngineError> {
        let entry = self
            .get_from_layers::<AccountEntry>(key)?
            .ok_or_else(|| EngineError::Corrupt("a pending account has no copy in the layers".to_string()))?;
        Ok(totals.applied_to(entry))
    }

    /// `get_account` for a command that writes the account back with
    /// `put_taken_account`: the cached entry is moved out rather than
    /// copied, and until then it reads as it was.
    pub fn take_account(&mut self, key: &[u8]) -> Result<Option<TakenAccount>, EngineError> {
        if let Some(accounts) = self.accounts.as_deref_mut()
            && let Some(slot) = accounts.slot(key)
        {
            if let Some(entry) = accounts.take_at(slot) {
                return Ok(Some(TakenAccount { entry, slot: Some(slot) }));
            }
            if let Slot::Taken(totals) = accounts.at(slot)
                && accounts.is_pending(slot)
            {
                let totals = *totals;
                return self
                    .pending_from_layers(key, totals)
                    .map(|entry| Some(TakenAccount::uncached(entry)));
            }
        }
        Ok(self.get_from_layers::<AccountEntry>(key)?.map(TakenAccount::uncached))
    }

    /// Writes back an account `take_account` gave (its `keys::account` key
    /// is built only when it came from no slot).
    pub fn put_taken_account(&mut self, taken: TakenAccount) {
        let TakenAccount { entry, slot } = taken;
        let (Some(slot), Some(accounts)) = (slot, self.accounts.as_deref_mut()) else {
            return self.put_account(keys::account(&entry.account.id), entry);
        };
        if let Some(record) = accounts.put_at(slot, entry) {
            let key = accounts.key_of(slot).to_vec();
            self.set_layered(key, Some(encode_account(&record)));
        }
    }

    /// Writes an account at `key` (a `keys::account`), through the cache:
    /// an account the layers already hold is encoded once, at the end of
    /// the batch (`crate::account_cache`). Should the command be dropped,
    /// its slot is put back (`drop_command`).
    pub fn put_account(&mut self, key: Vec<u8>, record: AccountEntry) {
        let record = match self.accounts.as_deref_mut() {
            Some(accounts) => match accounts.put(&key, record) {
                Some(record) => record,
                None => return,
            },
            None => record,
        };
        self.set_layered(key, Some(encode_account(&record)));
    }

    /// Makes room for `keys` changes at once, so a large batch's change map
    /// is not grown (and rehashed) step by step.
    pub fn with_room_for(mut self, keys: usize) -> Self {
        self.changes.reserve(keys);
        self
    }

    /// Finds names' numbers through `names` (and adds to it what it reads
    /// from the table).
    pub fn with_names(mut self, names: &'t mut NameNumbers) -> Self {
        self.names = Some(names);
        self
    }

    /// Resolves organization accounts through `account_ids` (and adds to it
    /// what it reads from the table).
    pub fn with_account_ids(mut self, account_ids: &'t mut AccountIds) -> Self {
        self.account_ids = Some(account_ids);
        self
    }

    /// Calls `f` with the bytes stored at `key` (looking through the layers),
    /// without copying them.
    fn with_raw<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, EngineError> {
        if key.first() == Some(&(Space::Account as u8))
            && let Some(slot) = self.accounts.as_deref().and_then(|accounts| accounts.slot(key))
            && let Some(bytes) = self.pending_bytes(slot, key)
        {
            return Ok(f(Some(&bytes?)));
        }
        self.with_layers(key, f)
    }

    /// `with_raw` from the layers alone, past the account cache.
    fn with_layers<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, EngineError> {
        if key.first() == Some(&(Space::Meta as u8))
            && let Some(slot) = meta_slot(key)
            && let Some(bytes) = self.cached_meta(slot)
        {
            return Ok(f(bytes.as_deref()));
        }
        if let Some(value) = self.changes.get(key) {
            return Ok(f(value.as_deref()));
        }
        if let Some(value) = find_in(self.below, key) {
            return Ok(f(value));
        }
        match self.table.lookup(key)? {
            Some(guard) => Ok(f(Some(guard.value()))),
            None => Ok(f(None)),
        }
    }

    /// The encoded value of a typed meta record, when it is loaded.
    fn cached_meta(&self, slot: MetaSlot) -> Option<Option<Vec<u8>>> {
        match slot {
            MetaSlot::Counter(i) => match self.counters.counters[i] {
                Cached::Loaded { value, .. } => Some(value.map(|v| encode(&v))),
                Cached::Unloaded => None,
            },
            MetaSlot::JournalHead => match self.counters.journal_head {
                Cached::Loaded { value, .. } => Some(value.map(|v| encode(&v))),
                Cached::Unloaded => None,
            },
        }
    }

    pub fn get_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        self.with_raw(key, |bytes| bytes.map(<[u8]>::to_vec))
    }

    pub fn get<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, EngineError> {
        self.get_with(key, decode)
    }

    /// The record under `key`, decoded by `decode` (a space stored in its
    /// own encoding).
    /// `get` from the layers alone, past the account cache.
    fn get_from_layers<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, EngineError> {
        self.with_layers(key, |bytes| bytes.map(decode).transpose())?
    }

    pub fn get_with<T>(
        &self,
        key: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, EngineError>,
    ) -> Result<Option<T>, EngineError> {
        self.with_raw(key, |bytes| bytes.map(decode).transpose())?
    }

    fn set(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        if key.first() == Some(&(Space::Meta as u8))
            && let Some(slot) = meta_slot(&key)
        {
            // Written as bytes: the layered value is the truth again.
            match slot {
                MetaSlot::Counter(i) => self.counters.counters[i] = Cached::Unloaded,
                MetaSlot::JournalHead => self.counters.journal_head = Cached::Unloaded,
            }
        }
        if key.first() == Some(&(Space::DisputeShortfalls as u8)) && self.shortfalls.is_some() {
            self.shortfalls = Some(true);
        }
        if key.first() == Some(&(Space::Account as u8))
            && let Some(slot) = self.accounts.as_deref().and_then(|accounts| accounts.slot(&key))
        {
            // Written as bytes: the layered value is the truth again. A
            // pending account goes into the layer first, so that dropping
            // this command puts the layer back to it.
            if let Some(pending) = self.pending_bytes(slot, &key) {
                let pending = pending.unwrap_or_else(|error| panic!("a pending account: {error}"));
                self.set_layered(key.clone(), Some(pending));
            }
            if let Some(accounts) = self.accounts.as_deref_mut() {
                accounts.forget(slot);
            }
        }
        self.set_layered(key, value);
    }

    /// The encoded account of `slot` (at `key`) when it is pending.
    fn pending_bytes(&self, slot: u32, key: &[u8]) -> Option<Result<Vec<u8>, EngineError>> {
        let accounts = self.accounts.as_deref()?;
        if !accounts.is_pending(slot) {
            return None;
        }
        Some(match accounts.at(slot) {
            Slot::Held(entry) => Ok(encode_account(entry)),
            Slot::Taken(totals) => self.pending_from_layers(key, *totals).map(|entry| encode_account(&entry)),
            Slot::Empty => Err(EngineError::Corrupt("a pending account's slot is empty".to_string())),
        })
    }

    /// Writes `key` in the command's layer, noting what it replaced.
    fn set_layered(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        match self.changes.entry(key) {
            indexmap::map::Entry::Occupied(mut slot) => {
                let place = slot.index();
                let previous = slot.insert(value);
                if place < self.kept_keys {
                    self.undo.push((place, previous));
                }
            }
            indexmap::map::Entry::Vacant(slot) => {
                slot.insert(value);
            }
        }
    }

    pub fn put<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
        &mut self,
        key: Vec<u8>,
        value: &T,
    ) {
        let bytes = encode(value);
        debug_assert_decodes_to(value, &bytes);
        self.set(key, Some(bytes));
    }

    pub fn put_raw(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.set(key, Some(value));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.set(key, None);
    }

    /// The number keys hold for the name `text`, if it has one.
    pub fn name_number(&mut self, text: &str) -> Result<Option<NameNumber>, EngineError> {
        // A number is given once and never changed or removed: one the
        // cache holds (read from the committed table) is every layer's.
        if let Some(names) = &self.names
            && let Some(number) = names.numbers.get(text)
        {
            return Ok(Some(*number));
        }
        let key = keys::name(text);
        if let Some(value) = self.changes.get(&key) {
            return value.as_deref().map(decode).transpose();
        }
        if let Some(value) = find_in(self.below, &key) {
            return value.map(decode).transpose();
        }
        let number = match self.table.lookup(&key)? {
            Some(guard) => decode::<NameNumber>(guard.value())?,
            None => return Ok(None),
        };
        // Read from the table, so committed: safe to remember.
        if let Some(names) = &mut self.names
            && names.numbers.len() < NameNumbers::ENTRIES_MAX
        {
            names.numbers.insert(text.to_string(), number);
        }
        Ok(Some(number))
    }

    /// The number keys hold for the name `text`, given now (the next
    /// `Counter::NameNumber`) if it had none.
    pub fn name_number_or_new(&mut self, text: &str) -> Result<NameNumber, EngineError> {
        if let Some(number) = self.name_number(text)? {
            return Ok(number);
        }
        let next = self.counter_next(Counter::NameNumber, 1)?;
        let number =
            NameNumber(u32::try_from(next).map_err(|_| EngineError::Overflow(Counter::NameNumber.name()))?);
        self.put(keys::name(text), &number);
        Ok(number)
    }

    /// The next value of `counter`: one more than the last, or `first` for
    /// the first. Stored at the end of the batch unless the command is dropped.
    pub fn counter_next(&mut self, counter: Counter, first: u64) -> Result<u64, EngineError> {
        let i = counter as usize;
        let last = match self.counters.counters[i] {
            Cached::Loaded { value, .. } => value,
            Cached::Unloaded => self.get::<u64>(&keys::meta(counter.name()))?,
        };
        let next = match last {
            Some(last) => last.checked_add(1).ok_or(EngineError::Overflow(counter.name()))?,
            None => first,
        };
        self.counters.counters[i] = Cached::Loaded { value: Some(next), dirty: true };
        Ok(next)
    }

    /// The hash of the last journal entry, if there is one.
    pub fn journal_head(&mut self) -> Result<Option<[u8; 32]>, EngineError> {
        match self.counters.journal_head {
            Cached::Loaded { value, .. } => Ok(value),
            Cached::Unloaded => {
                let value = self.get::<[u8; 32]>(&keys::meta(JOURNAL_HEAD))?;
                self.counters.journal_head = Cached::Loaded { value, dirty: false };
                Ok(value)
            }
        }
    }

    pub fn set_journal_head(&mut self, hash: [u8; 32]) {
        self.counters.journal_head = Cached::Loaded { value: Some(hash), dirty: true };
    }

    /// The number and hash of the last journal entry written in this batch.
    pub fn journal_last(&self) -> Option<(u64, [u8; 32])> {
        self.counters.journal_last
    }

    pub fn set_journal_last(&mut self, seq: u64, hash: [u8; 32]) {
        self.counters.journal_last = Some((seq, hash));
    }

    /// The account id the organization-account index entry `key` holds.
    pub fn org_account_id(&mut self, key: &[u8]) -> Result<Option<String>, EngineError> {
        // An entry is written once, when its account is created, and never
        // changed or removed: one the cache holds (read from the committed
        // table) is what every layer above the table holds too.
        if let Some(ids) = &self.account_ids
            && let Some(account) = ids.ids.get(key)
        {
            return Ok(Some(account.id.clone()));
        }
        if let Some(value) = self.changes.get(key) {
            return value.as_deref().map(decode).transpose();
        }
        if let Some(value) = find_in(self.below, key) {
            return value.map(decode).transpose();
        }
        let id = match self.table.lookup(key)? {
            Some(guard) => decode::<String>(guard.value())?,
            None => return Ok(None),
        };
        // Read from the table, so committed: safe to remember.
        if let Some(ids) = &mut self.account_ids {
            ids.insert(key, id.clone());
        }
        Ok(Some(id))
    }

    /// `take_account` of the organization account the index entry
    /// `index_key` names, when both caches hold it (`AccountIds`,
    /// `AccountCache`): no key is built and no id copied. `None` says only
    /// that they do not; `org_account_id` then resolves it.
    pub fn take_cached_org_account(&mut self, index_key: &[u8]) -> Option<TakenAccount> {
        let account = self.account_ids.as_deref_mut()?.ids.get_mut(index_key)?;
        let accounts = self.accounts.as_deref_mut()?;
        let slot = match account.slot {
            Some(slot) => slot,
            None => *account.slot.insert(accounts.slot(&account.key)?),
        };
        let entry = accounts.take_at(slot)?;
        // Both caches live as long as the writer, and a slot is never
        // given to another key; a slot that held another account would
        // move the wrong money.
        assert_eq!(
            entry.account.id, account.id,
            "organization account {} cached in another's slot",
            account.id
        );
        Some(TakenAccount { entry, slot: Some(slot) })
    }

    /// Keeps the current command's changes as part of the batch.
    pub fn keep_command(&mut self) {
        self.undo.clear();
        self.kept_keys = self.changes.len();
        self.kept_counters = self.counters;
        self.end_accounts_command(true);
    }

    /// Forgets the current command's changes, and puts back every account
    /// slot it touched (`AccountCache`).
    pub fn drop_command(&mut self) {
        let mut accounts = self.accounts.as_deref_mut();
        let mut empty = |key: &[u8]| {
            if key.first() == Some(&(Space::Account as u8))
                && let Some(accounts) = accounts.as_deref_mut()
            {
                accounts.empty(key);
            }
        };
        while let Some((place, previous)) = self.undo.pop() {
            if let Some((key, value)) = self.changes.get_index_mut(place) {
                empty(key);
                *value = previous;
            }
        }
        for key in self.changes.keys().skip(self.kept_keys) {
            empty(key);
        }
        self.changes.truncate(self.kept_keys);
        self.counters = self.kept_counters;
        self.end_accounts_command(false);
    }

    /// Ends the command in the account cache, which reads an account it
    /// puts back from the layers as they now stand.
    fn end_accounts_command(&mut self, kept: bool) {
        let Some(accounts) = self.accounts.take() else { return };
        accounts.end_command(kept, |key| {
            self.get_from_layers::<AccountEntry>(key)
                .unwrap_or_else(|error| panic!("reading an account back: {error}"))
        });
        self.accounts = Some(accounts);
    }

    /// The batch's changes, once the last command is applied. A command not
    /// kept is dropped.
    pub fn into_layer(mut self) -> Layer {
        self.drop_command();
        // The accounts the batch updated, each once, as it left them.
        if let Some(accounts) = self.accounts.take() {
            for (key, entry) in accounts.take_pending() {
                self.changes.insert(key, Some(encode_account(entry)));
            }
        }
        for (i, counter) in Counter::ALL.iter().enumerate() {
            if let Cached::Loaded { value: Some(value), dirty: true } = self.counters.counters[i] {
                self.changes.insert(keys::meta(counter.name()), Some(encode(&value)));
            }
        }
        if let Cached::Loaded { value: Some(hash), dirty: true } = self.counters.journal_head {
            self.changes.insert(keys::meta(JOURNAL_HEAD), Some(encode(&hash)));
        }
        // The batch's last journal entry stores its hash, for the next
        // batch's first to be checked against (`JournalEntry::store_hash_in`).
        if let Some((seq, hash)) = self.counters.journal_last
            && let Some(Some(entry)) = self.changes.get_mut(keys::journal(seq).as_slice())
        {
            crate::records::JournalEntry::store_hash_in(entry, &hash);
        }
        self.changes
    }
}

/// A layer's changes in key order.
pub fn sorted(layer: &Layer) -> Changes<'_> {
    key_order(layer).into_iter().map(|place| change_at(layer, place)).collect()
}

/// The places of a layer's keys (in its map), in key order.
pub fn key_order(layer: &Layer) -> Vec<u32> {
    // Sorted on the keys' first 16 bytes as a number (which orders like the
    // bytes), falling back to the whole keys only on a tie.
    let mut keyed: Vec<(u128, &[u8], u32)> =
        layer.keys().zip(0..).map(|(key, place)| (key_prefix(key), key.as_slice(), place)).collect();
    assert_eq!(keyed.len(), layer.len(), "a layer holds fewer than 2^32 keys");
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    keyed.into_iter().map(|(_, _, place)| place).collect()
}

/// The change at `place` in `layer`'s map.
pub fn change_at(layer: &Layer, place: u32) -> Change<'_> {
    let (key, value) = layer.get_index(place as usize).expect("a place within the layer");
    (key.as_slice(), value.as_deref())
}

/// Whether new keys of this space mostly sort after every stored one, so
/// a batch's new keys of the space form runs: sequence numbers (transfers,
/// journal, events), ids that start with their creation time (payouts,
/// collections, refunds, orders, event ids), and keys whose last part is
/// a sequence number or a time (list entries), and balance changes (by
/// journal number first). Writing them as runs fills leaves whole;
/// inserted one by one, each full leaf splits in two halves and the left
/// one is never filled again, which left these spaces' pages about half
/// empty. A key that does not sort
/// after the stored ones is inserted as any other.
fn is_appended(key: &[u8]) -> bool {
    const APPENDED: [Space; 10] = [
        Space::Transfer,
        Space::Journal,
        Space::Event,
        Space::ListIndex,
        Space::Payout,
        Space::Collection,
        Space::Order,
        Space::EventId,
        Space::Refund,
        Space::BalanceChange,
    ];
    matches!(key.first(), Some(&b) if APPENDED.iter().any(|space| *space as u8 == b))
}

/// The first 16 bytes of `key` (zero-padded) as a big-endian number: if two
/// keys' prefixes differ, they compare like the keys.
fn key_prefix(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

/// Writes a batch's changes (in key order) into the table. Runs of new keys
/// in the spaces numbered by sequence go through one cursor, which packs
/// them into full leaves at once instead of descending the tree per key;
/// every other change (and a run's key that is not new) is a plain insert
/// or remove. Either way the table ends up with exactly `changes` applied.
pub fn write_changes(
    table: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    changes: &[(&[u8], Option<&[u8]>)],
) -> Result<(), EngineError> {
    let mut changes = changes.iter().copied().peekable();
    while let Some((key, value)) = changes.next() {
        let Some(bytes) = value else {
            table.remove(key)?;
            continue;
        };
        if !is_appended(key) {
            table.insert(key, bytes)?;
            continue;
        }
        // A run: this key, then the following keys of the appended spaces
        // for as long as the cursor accepts them (each sorts between the
        // last one and the next stored key).
        let mut refused = None;
        {
            let mut cursor = table.lower_bound_mut(Bound::Included(key))?;
            match cursor.insert_before(key, bytes) {
                Ok(()) => {
                    while let Some((next, Some(_))) = changes.peek()
                        && is_appended(next)
                    {
                        let Some((next, Some(bytes))) = changes.next() else { unreachable!() };
                        match cursor.insert_before(next, bytes) {
                            Ok(()) => {}
                            Err(redb::CursorError::UnorderedKey) => {
                                refused = Some((next, bytes));
                                break;
                            }
                            Err(e) => return Err(redb::Error::from(e).into()),
                        }
                    }
                }
                // The first key is already stored: replace it.
                Err(redb::CursorError::UnorderedKey) => refused = Some((key, bytes)),
                Err(e) => return Err(redb::Error::from(e).into()),
            }
            cursor.close()?;
        }
        if let Some((key, bytes)) = refused {
            // Stored already, or past the next stored key: a plain insert
            // places it either way, and the run resumes after it.
            table.insert(key, bytes)?;
        }
    }
    Ok(())
}

/// An account's stored bytes (`keys::account`).
fn encode_account(entry: &AccountEntry) -> Vec<u8> {
    let bytes = encode(entry);
    debug_assert_decodes_to(entry, &bytes);
    bytes
}

/// Reads a typed record from any readable table.
/// Records as (key, value) pairs, in key order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Each name's text by its number (`Space::Name`), for what shows keys to
/// people (`sika verify`, `sika footprint`). A record that is not a name's
/// is `Corrupt`.
pub fn names_by_number(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
) -> Result<BTreeMap<NameNumber, String>, EngineError> {
    names_in(scan(table, Space::Name)?)
}

/// `names_by_number` of a ledger's `Space::Name` records.
pub fn names_in(records: Entries) -> Result<BTreeMap<NameNumber, String>, EngineError> {
    let mut names = BTreeMap::new();
    for (key, value) in records {
        let text = key
            .get(1..)
            .and_then(|k| k.strip_suffix(&[0]))
            .and_then(|k| std::str::from_utf8(k).ok())
            .ok_or_else(|| EngineError::Corrupt("a name's key is not its text".into()))?;
        let number: NameNumber = decode(&value)?;
        if let Some(other) = names.insert(number, text.to_string()) {
            return Err(EngineError::Corrupt(format!(
                "names '{other}' and '{text}' have one number, {}",
                number.0
            )));
        }
    }
    Ok(names)
}

/// Every record of `space` in `table`, in key order.
pub fn scan(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    space: Space,
) -> Result<Entries, EngineError> {
    let start = keys::space(space);
    let mut out = Vec::new();
    for entry in table.range(start.as_slice()..prefix_end(&start).as_slice())? {
        let (key, value) = entry?;
        out.push((key.value().to_vec(), value.value().to_vec()));
    }
    Ok(out)
}

/// The reference stored under transfer `id`, if any (`TransferRef::decode`).
pub fn transfer_ref(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    id: TransferId,
) -> Result<Option<TransferRef>, EngineError> {
    table.get(keys::transfer(id).as_slice())?.map(|bytes| TransferRef::decode(id, bytes.value())).transpose()
}

/// The transfer `id` as it stands: its journal entry's, with the state its
/// reference gives a hold; `None` when either is missing or they disagree.
pub fn stored_transfer(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    id: TransferId,
) -> Result<Option<TransferRecord>, EngineError> {
    let stored = transfer_ref(table, id)?;
    Ok(TransferRef::find(id, stored, |seq| read(table, &keys::journal(seq))).ok().flatten())
}

pub fn read<T: DeserializeOwned>(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    key: &[u8],
) -> Result<Option<T>, EngineError> {
    match table.get(key)? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use redb::{Database, ReadableDatabase};

    use super::*;

    fn database() -> Database {
        Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap()
    }

    fn contents(db: &Database) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        table
            .iter()
            .unwrap()
            .map(|e| e.unwrap())
            .map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
            .collect()
    }

    /// Writes `changes` with `write_changes` and returns the table's contents.
    fn write(db: &Database, changes: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            let changes: Changes = changes.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            write_changes(&mut table, &changes).unwrap();
        }
        txn.commit().unwrap();
        contents(db)
    }

    fn key(space: u8, n: u64) -> Vec<u8> {
        let mut key = vec![space];
        key.extend_from_slice(&n.to_be_bytes());
        key
    }

    fn change() -> impl Strategy<Value = (Vec<u8>, Option<Vec<u8>>)> {
        // Spaces around and including the appended ones, few enough numbers
        // that batches overwrite, delete and append next to stored keys.
        let key = (1u8..10, 0u64..40).prop_map(|(space, n)| key(space, n));
        let value = prop::option::weighted(0.85, prop::collection::vec(any::<u8>(), 0..300));
        (key, value)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the mix of new, replaced and deleted keys, the table ends
        /// up as if every change were a plain insert or remove.
        #[test]
        fn write_changes_applies_every_change(batches in prop::collection::vec(prop::collection::vec(change(), 0..120), 1..5)) {
            let db = database();
            let mut expected = BTreeMap::new();
            for batch in batches {
                let batch: BTreeMap<Vec<u8>, Option<Vec<u8>>> = batch.into_iter().collect();
                for (key, value) in &batch {
                    match value {
                        Some(value) => expected.insert(key.clone(), value.clone()),
                        None => expected.remove(key),
                    };
                }
                let found = write(&db, batch.into_iter().collect());
                prop_assert_eq!(&found, &expected);
            }
        }
    }

    /// A key and what is written to it (`None` deletes it).
    type Write = (Vec<u8>, Option<Vec<u8>>);

    /// One command of an overlay test: its writes, then whether it is kept
    /// or dropped.
    fn command() -> impl Strategy<Value = (Vec<Write>, bool)> {
        let key = (0u64..12).prop_map(|n| key(Space::Journal as u8, n));
        let value = prop::option::weighted(0.8, prop::collection::vec(any::<u8>(), 0..4));
        (prop::collection::vec((key, value), 0..8), prop::bool::weighted(0.6))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the mix of new keys, rewritten ones and deletions, a
        /// batch's layer holds exactly what its kept commands wrote, last
        /// write winning, and a dropped command leaves nothing, read back
        /// or in the layer.
        #[test]
        fn a_layer_holds_exactly_what_its_kept_commands_wrote(commands in prop::collection::vec(command(), 0..24)) {
            let db = database();
            let txn = db.begin_write().unwrap();
            let table = txn.open_table(RECORDS).unwrap();
            let mut overlay = Overlay::new(&table, &[]);
            let mut kept = BTreeMap::new();
            for (writes, keep) in commands {
                let mut current = kept.clone();
                for (key, value) in writes {
                    current.insert(key.clone(), value.clone());
                    match value {
                        Some(value) => overlay.put_raw(key, value),
                        None => overlay.delete(key),
                    }
                }
                for (key, value) in &current {
                    prop_assert_eq!(&overlay.get_raw(key).unwrap(), value);
                }
                if keep {
                    overlay.keep_command();
                    kept = current;
                } else {
                    overlay.drop_command();
                    for n in 0..12 {
                        let key = key(Space::Journal as u8, n);
                        prop_assert_eq!(overlay.get_raw(&key).unwrap(), kept.get(&key).cloned().flatten());
                    }
                }
            }
            let layer: BTreeMap<Vec<u8>, Option<Vec<u8>>> = overlay.into_layer().into_iter().collect();
            prop_assert_eq!(layer, kept);
        }
    }

    #[test]
    fn long_runs_of_new_keys_are_appended_in_order() {
        let db = database();
        let first: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            (0..5000).map(|n| (key(Space::Journal as u8, n), Some(vec![n as u8; 150]))).collect();
        write(&db, first);
        // Existing keys on both sides, new ones after, and a later space.
        let mut second: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![(key(Space::Account as u8, 1), Some(vec![1]))];
        second.push((key(Space::Journal as u8, 17), Some(vec![2; 10])));
        second.extend((5000..12000).map(|n| (key(Space::Journal as u8, n), Some(vec![n as u8; 150]))));
        second.push((key(Space::Idempotency as u8, 3), None));
        second.push((key(Space::Event as u8, 0), Some(vec![3])));
        let found = write(&db, second);
        assert_eq!(found.len(), 12002);
        assert_eq!(found[&key(Space::Journal as u8, 17)], vec![2; 10]);
        assert_eq!(found[&key(Space::Journal as u8, 11999)], vec![11999u64 as u8; 150]);
    }

    /// A change to one of many keys (a few overlap across batches).
    fn sparse_change() -> impl Strategy<Value = (Vec<u8>, Option<Vec<u8>>)> {
        let key = (1u8..10, 0u64..20_000).prop_map(|(space, n)| key(space, n));
        (key, prop::option::weighted(0.85, prop::collection::vec(any::<u8>(), 0..4)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the batches (from no key to thousands), a lookup
        /// through their filters finds what a scan of their maps finds:
        /// the newest batch's change to the key, a deletion, or nothing.
        #[test]
        fn a_lookup_through_the_filters_finds_what_a_scan_finds(
            batches in prop::collection::vec(prop::collection::vec(sparse_change(), 0..3000), 1..6),
            absent in prop::collection::vec(sparse_change(), 0..300),
        ) {
            let batches: Vec<Arc<Batch>> = batches
                .into_iter()
                .enumerate()
                .map(|(epoch, changes)| Arc::new(Batch::new(epoch as u64, changes.into_iter().collect())))
                .collect();
            let scan = |key: &[u8]| {
                batches.iter().rev().find_map(|batch| batch.changes().get(key)).map(|v| v.as_deref())
            };
            let keys = batches.iter().flat_map(|batch| batch.changes().keys().cloned());
            for key in keys.chain(absent.into_iter().map(|(key, _)| key)) {
                prop_assert_eq!(find_in(&batches, &key), scan(&key), "{:?}", key);
            }
        }
    }

    #[test]
    fn a_filter_tells_most_absent_keys_apart() {
        let changes: Layer = (0..1000u64).map(|n| (key(Space::Journal as u8, n), None)).collect();
        let filter = KeyFilter::of(&changes);
        let held = (0..1000u64).filter(|n| filter.may_hold(KeyHash::of(&key(Space::Journal as u8, *n))));
        assert_eq!(held.count(), 1000, "every key the batch changes");
        let absent =
            (1000..11_000u64).filter(|n| filter.may_hold(KeyHash::of(&key(Space::Journal as u8, *n))));
        let false_positives = absent.count();
        assert!(false_positives < 1_000, "{false_positives} of 10,000 absent keys pass the filter");
    }

    #[test]
    fn account_ids_find_short_and_long_index_keys_by_their_bytes() {
        let mut ids = AccountIds::default();
        let short = keys::org_account("org_1", "USD");
        // A key that differs from `short` only by a trailing zero, which an
        // inline key pads with.
        let padded = [short.as_slice(), &[0]].concat();
        let long = keys::org_account(&"o".repeat(60), "USD");
        assert!(long.len() > IndexKey::INLINE_MAX);
        ids.insert(&short, "acc_short".into());
        ids.insert(&long, "acc_long".into());
        assert_eq!(ids.ids.get(short.as_slice()).map(|a| a.id.as_str()), Some("acc_short"));
        assert_eq!(ids.ids.get(long.as_slice()).map(|a| a.id.as_str()), Some("acc_long"));
        assert!(ids.ids.get(padded.as_slice()).is_none(), "a zero past the key's end is another key");
        assert!(ids.ids.get(&long[..long.len() - 1]).is_none());
        ids.insert(&padded, "acc_padded".into());
        assert_eq!(ids.ids.len(), 3);
        assert_eq!(ids.ids.get(short.as_slice()).map(|a| a.id.as_str()), Some("acc_short"));
    }

    #[test]
    fn key_prefixes_order_like_keys() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 0],
            vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            vec![1, 2],
            vec![255; 20],
        ];
        for a in &keys {
            for b in &keys {
                let (pa, pb) = (key_prefix(a), key_prefix(b));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    #[cfg_attr(debug_assertions, should_panic(expected = "does not decode back to what was written"))]
    fn a_record_that_does_not_decode_to_itself_is_caught_in_debug_builds() {
        /// A record with a field that is never stored: a bug `put` catches.
        #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
        struct Lossy {
            kept: u32,
            #[serde(skip)]
            lost: u32,
        }
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut overlay = Overlay::new(&table, &[]);
        overlay.put(keys::meta("lossless"), &Lossy { kept: 1, lost: 0 });
        overlay.put(keys::meta("lossy"), &Lossy { kept: 1, lost: 2 });
    }

    #[test]
    fn a_counter_at_its_end_is_an_overflow_not_a_wrap() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut overlay = Overlay::new(&table, &[]);
        overlay.put(keys::meta("journal_seq"), &(u64::MAX - 1));
        assert_eq!(overlay.counter_next(Counter::JournalSeq, 1), Ok(u64::MAX));
        assert_eq!(overlay.counter_next(Counter::JournalSeq, 1), Err(EngineError::Overflow("journal_seq")));
        assert_eq!(overlay.get::<u64>(&keys::meta("journal_seq")).unwrap(), Some(u64::MAX), "left as it was");
    }

    #[test]
    fn a_names_number_is_given_once_and_a_dropped_command_gives_none() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let mut names = NameNumbers::default();
        let first = {
            let table = txn.open_table(RECORDS).unwrap();
            let mut overlay = Overlay::new(&table, &[]).with_names(&mut names);
            assert_eq!(overlay.name_number("org_a").unwrap(), None);
            // A failed command's number is not given.
            assert_eq!(overlay.name_number_or_new("org_a").unwrap(), NameNumber(1));
            overlay.drop_command();
            assert_eq!(overlay.name_number("org_a").unwrap(), None);
            assert_eq!(overlay.name_number_or_new("org_b").unwrap(), NameNumber(1));
            assert_eq!(overlay.name_number_or_new("org_a").unwrap(), NameNumber(2));
            assert_eq!(overlay.name_number_or_new("org_b").unwrap(), NameNumber(1), "once given, kept");
            overlay.keep_command();
            overlay.into_layer()
        };
        assert!(names.numbers.is_empty(), "nothing committed yet, nothing remembered");
        // The next batch reads them from the batch below, then the table.
        let batch = [Arc::new(Batch::new(1, first.clone()))];
        {
            let table = txn.open_table(RECORDS).unwrap();
            let mut overlay = Overlay::new(&table, &batch).with_names(&mut names);
            assert_eq!(overlay.name_number("org_a").unwrap(), Some(NameNumber(2)));
            assert_eq!(overlay.name_number_or_new("org_c").unwrap(), NameNumber(3));
        }
        assert!(names.numbers.is_empty(), "read from a batch the table does not hold yet");
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            for (key, value) in &first {
                table.insert(key.as_slice(), value.as_deref().unwrap()).unwrap();
            }
        }
        let table = txn.open_table(RECORDS).unwrap();
        let mut overlay = Overlay::new(&table, &[]).with_names(&mut names);
        assert_eq!(overlay.name_number("org_b").unwrap(), Some(NameNumber(1)));
        drop(overlay);
        assert_eq!(names.numbers.get("org_b"), Some(&NameNumber(1)), "read from the table, so remembered");
    }

    fn account(id: &str, credits: i128) -> AccountEntry {
        let mut record = crate::records::AccountRecord::opened(
            id.into(),
            crate::records::AccountOwner::Organization("org_1".into()),
            "USD",
            1,
        );
        record.credits_posted = credits;
        AccountEntry::opened(record)
    }

    #[test]
    fn the_account_cache_follows_kept_and_dropped_commands_across_batches() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut cache = AccountCache::default();
        let key = keys::account("USD1");
        let first = {
            let mut overlay = Overlay::new(&table, &[]).with_accounts(&mut cache);
            assert_eq!(overlay.get_account(&key).unwrap(), None);
            overlay.put_account(key.clone(), account("USD1", 5));
            overlay.keep_command();
            // A failed command's write, and its raw write, are both undone.
            overlay.put_account(key.clone(), account("USD1", 9));
            assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 9)));
            overlay.drop_command();
            assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
            overlay.put_raw(key.clone(), encode(&account("USD1", 7)));
            assert_eq!(
                overlay.get_account(&key).unwrap(),
                Some(account("USD1", 7)),
                "a raw write is read back"
            );
            overlay.drop_command();
            assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
            overlay.keep_command();
            overlay.into_layer()
        };
        assert_eq!(decode::<AccountEntry>(first[&key].as_deref().unwrap()).unwrap(), account("USD1", 5));
        // The next batch (nothing in its layers or the table) reads the
        // account as the kept commands left it, from the cache.
        let batch = [Arc::new(Batch::new(1, first))];
        let mut overlay = Overlay::new(&table, &batch).with_accounts(&mut cache);
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
        overlay.delete(key.clone());
        assert_eq!(overlay.get_account(&key).unwrap(), None, "a deletion goes through the cache");
        overlay.drop_command();
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
    }

    #[test]
    fn an_account_taken_to_update_reads_through_the_layers_until_it_is_written_back() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut cache = AccountCache::default();
        let key = keys::account("USD1");
        let mut overlay = Overlay::new(&table, &[]).with_accounts(&mut cache);
        overlay.put_account(key.clone(), account("USD1", 5));
        overlay.keep_command();

        // Taken and changed, not yet written back: the layers still say 5.
        let mut taken = overlay.take_account(&key).unwrap().unwrap().entry;
        assert_eq!(taken, account("USD1", 5));
        taken.account.credits_posted = 8;
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
        assert_eq!(
            overlay.take_account(&key).unwrap().map(|t| t.entry),
            Some(account("USD1", 5)),
            "taken twice, read twice"
        );
        overlay.put_account(key.clone(), taken);
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 8)));
        overlay.drop_command();
        assert_eq!(
            overlay.get_account(&key).unwrap(),
            Some(account("USD1", 5)),
            "the dropped update is gone"
        );

        // Taken by a command that fails before writing it back.
        let _ = overlay.take_account(&key).unwrap().map(|t| t.entry);
        overlay.drop_command();
        assert_eq!(overlay.take_account(&key).unwrap().map(|t| t.entry), Some(account("USD1", 5)));
        overlay.put_account(key.clone(), account("USD1", 6));
        overlay.keep_command();
        let layer = overlay.into_layer();
        assert_eq!(decode::<AccountEntry>(layer[&key].as_deref().unwrap()).unwrap(), account("USD1", 6));
        // The next batch reads it from the cache: nothing below holds it.
        let mut overlay = Overlay::new(&table, &[]).with_accounts(&mut cache);
        assert_eq!(overlay.take_account(&key).unwrap().map(|t| t.entry), Some(account("USD1", 6)));
    }

    #[test]
    fn an_organization_account_is_taken_through_both_caches_once_they_hold_it() {
        let db = database();
        let index_key = keys::org_account("org_1", "USD");
        let key = keys::account("USD1");
        {
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(RECORDS).unwrap();
                table.insert(index_key.as_slice(), encode(&"USD1".to_string()).as_slice()).unwrap();
                table.insert(key.as_slice(), encode(&account("USD1", 5)).as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let (mut ids, mut cache) = (AccountIds::default(), AccountCache::default());
        let mut overlay = Overlay::new(&table, &[]).with_account_ids(&mut ids).with_accounts(&mut cache);
        let take = |overlay: &mut Overlay| overlay.take_cached_org_account(&index_key);
        let entry = |taken: Option<TakenAccount>| taken.map(|t| t.entry);
        assert_eq!(entry(take(&mut overlay)), None, "neither cache holds it yet");
        assert_eq!(overlay.org_account_id(&index_key).unwrap(), Some("USD1".to_string()));
        assert_eq!(entry(take(&mut overlay)), None, "the account is not cached yet");
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
        // Read in a command of its own, so later updates stay pending.
        overlay.keep_command();
        let mut taken = take(&mut overlay).expect("both caches hold it");
        assert_eq!(taken.entry, account("USD1", 5));
        assert_eq!(entry(take(&mut overlay)), None, "taken: the slot is empty");
        taken.entry.account.credits_posted = 6;
        overlay.put_taken_account(taken);
        let taken = take(&mut overlay).expect("the slot is filled again");
        assert_eq!(taken.entry, account("USD1", 6));
        let mut again = taken.entry.clone();
        overlay.put_taken_account(taken);
        overlay.keep_command();
        again.account.credits_posted = 7;
        overlay.put_account(key.clone(), again);
        overlay.drop_command();
        let mut taken = take(&mut overlay).expect("a dropped write is put back");
        assert_eq!(taken.entry, account("USD1", 6));
        // Taken and dropped without being given back: read back from the
        // layers' copy (5) with the totals it had (6).
        taken.entry.account.credits_posted = 8;
        drop(taken);
        assert_eq!(
            overlay.get_account(&key).unwrap(),
            Some(account("USD1", 6)),
            "reads as it was while taken"
        );
        overlay.drop_command();
        assert_eq!(entry(take(&mut overlay)), Some(account("USD1", 6)), "and held again");
        overlay.drop_command();
        let layer = overlay.into_layer();
        assert_eq!(
            decode::<AccountEntry>(layer[&key].as_deref().unwrap()).unwrap(),
            account("USD1", 6),
            "the batch's layer gets the account once, as the kept commands left it"
        );
    }

    #[test]
    fn a_pending_account_written_as_bytes_is_put_back_when_the_command_is_dropped() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut cache = AccountCache::default();
        let key = keys::account("USD1");
        let mut overlay = Overlay::new(&table, &[]).with_accounts(&mut cache);
        overlay.put_account(key.clone(), account("USD1", 5));
        overlay.keep_command();
        // Pending: the layer still holds 5, the cache 6.
        overlay.put_account(key.clone(), account("USD1", 6));
        overlay.keep_command();
        assert_eq!(
            decode::<AccountEntry>(&overlay.get_raw(&key).unwrap().unwrap()).unwrap(),
            account("USD1", 6)
        );
        overlay.put_raw(key.clone(), encode(&account("USD1", 7)));
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 7)));
        overlay.drop_command();
        assert_eq!(
            overlay.get_account(&key).unwrap(),
            Some(account("USD1", 6)),
            "the pending account is back"
        );
        overlay.delete(key.clone());
        overlay.keep_command();
        assert_eq!(overlay.get_account(&key).unwrap(), None, "a kept deletion ends it");
        let layer = overlay.into_layer();
        assert_eq!(layer[&key], None);
    }

    #[test]
    fn an_account_a_dropped_command_wrote_as_bytes_is_not_kept_by_the_cache() {
        let db = database();
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut cache = AccountCache::default();
        let key = keys::account("USD1");
        let mut overlay = Overlay::new(&table, &[]).with_accounts(&mut cache);
        // Written as bytes, read (and cached), then updated, all in one
        // command that is dropped: nothing of it stays.
        overlay.put_raw(key.clone(), encode(&account("USD1", 5)));
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 5)));
        let mut taken = overlay.take_account(&key).unwrap().unwrap();
        taken.entry.account.credits_posted = 6;
        overlay.put_taken_account(taken);
        assert_eq!(overlay.get_account(&key).unwrap(), Some(account("USD1", 6)));
        overlay.drop_command();
        assert_eq!(overlay.get_account(&key).unwrap(), None);
        assert_eq!(overlay.get_raw(&key).unwrap(), None);
        let layer = overlay.into_layer();
        assert!(!layer.contains_key(&key), "{layer:?}");
    }

    #[test]
    fn a_dropped_command_leaves_no_trace() {
        let db = database();
        {
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(RECORDS).unwrap();
                table.insert(keys::meta("transfer_id").as_slice(), encode(&7u64).as_slice()).unwrap();
                table.insert(keys::account("a").as_slice(), [1u8].as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let txn = db.begin_write().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let mut overlay = Overlay::new(&table, &[]);
        assert_eq!(overlay.counter_next(Counter::TransferId, 1).unwrap(), 8);
        assert_eq!(overlay.counter_next(Counter::JournalSeq, 1).unwrap(), 1);
        overlay.set_journal_head([5; 32]);
        overlay.put_raw(keys::account("a"), vec![2]);
        overlay.keep_command();

        // A failed command: counters, head and records all come back.
        assert_eq!(overlay.counter_next(Counter::TransferId, 1).unwrap(), 9);
        overlay.set_journal_head([6; 32]);
        overlay.put_raw(keys::account("a"), vec![3]);
        overlay.put_raw(keys::account("b"), vec![4]);
        overlay.delete(keys::account("a"));
        overlay.drop_command();
        assert_eq!(overlay.get::<u64>(&keys::meta("transfer_id")).unwrap(), Some(8));
        assert_eq!(overlay.journal_head().unwrap(), Some([5; 32]));
        assert_eq!(overlay.get_raw(&keys::account("a")).unwrap(), Some(vec![2]));
        assert_eq!(overlay.get_raw(&keys::account("b")).unwrap(), None);

        // A counter written as bytes is read back through the typed path.
        overlay.put(keys::meta("transfer_id"), &100u64);
        assert_eq!(overlay.counter_next(Counter::TransferId, 1).unwrap(), 101);
        overlay.keep_command();
        let changes: BTreeMap<_, _> = overlay.into_layer().into_iter().collect();
        assert_eq!(changes[&keys::meta("transfer_id")], Some(encode(&101u64)));
        assert_eq!(changes[&keys::meta("journal_seq")], Some(encode(&1u64)));
        assert_eq!(changes[&keys::meta("journal_head")], Some(encode(&[5u8; 32])));
        assert_eq!(changes[&keys::account("a")], Some(vec![2]));
        assert_eq!(changes.len(), 4);
    }
}
