//! The writer's account cache: the accounts it has read or written,
//! decoded as the books store them (`AccountEntry`, with their
//! balance-change heads), kept across batches for the writer's lifetime,
//! so a transfer finds and updates its two accounts without a table read,
//! a decode or an encode.
//!
//! An account a batch updates more than once is encoded once, at the end
//! of the batch: an update to an account the layers (or the table) already
//! hold is kept here only, *pending*, and the overlay writes every pending
//! account into the batch's layer when the batch is done
//! (`Overlay::into_layer`). A read of a pending account through the
//! overlay's byte interface is served from here. Only the totals and the
//! balance-change head of an account ever change (`Totals`); its id, owner
//! and currency are fixed when it is opened, so what the layers hold of a
//! pending account differs from it in those alone.
//!
//! Each command's first touch of a slot records what the slot held
//! (`Prior`): a dropped command puts every slot it touched back as it was,
//! and a slot whose account the command took and never gave back is put
//! back from the layers' copy with its totals as they were. Every batch
//! the writer applies is either written or, after a failure, followed by
//! no other batch of this writer; a reopening (the healer, a standby
//! taking over, a restart) starts a new writer with an empty cache.
//!
//! Each key has a slot, kept for the cache's lifetime (an emptied slot is
//! filled again, never removed), so a slot number found once stays the
//! key's (`OrgAccount::slot`).

use hashbrown::HashMap;

use crate::records::{AccountEntry, ChangeHead};

/// What of an account ever changes after it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Totals {
    debits_posted: i128,
    credits_posted: i128,
    debits_pending: i128,
    credits_pending: i128,
    changes: ChangeHead,
}

impl Totals {
    pub(crate) fn of(entry: &AccountEntry) -> Totals {
        let account = &entry.account;
        Totals {
            debits_posted: account.debits_posted,
            credits_posted: account.credits_posted,
            debits_pending: account.debits_pending,
            credits_pending: account.credits_pending,
            changes: entry.changes,
        }
    }

    /// `entry` (the same account, as some layer holds it) with these totals.
    pub(crate) fn applied_to(self, mut entry: AccountEntry) -> AccountEntry {
        let account = &mut entry.account;
        account.debits_posted = self.debits_posted;
        account.credits_posted = self.credits_posted;
        account.debits_pending = self.debits_pending;
        account.credits_pending = self.credits_pending;
        entry.changes = self.changes;
        entry
    }
}

/// An account a command has taken to update (`Overlay::take_account`),
/// with its slot in the cache when it came from one: written back with
/// `Overlay::put_taken_account`, it needs no key and no lookup.
#[derive(Debug)]
pub struct TakenAccount {
    pub entry: AccountEntry,
    pub(crate) slot: Option<u32>,
}

impl TakenAccount {
    /// An account not taken from the cache (read from the layers, or new).
    pub fn uncached(entry: AccountEntry) -> TakenAccount {
        TakenAccount { entry, slot: None }
    }
}

/// What a slot holds.
#[derive(Debug)]
pub(crate) enum Slot {
    /// Nothing: reads go through the layers.
    Empty,
    /// The account as it stands.
    Held(AccountEntry),
    /// Moved out by the current command (`take`), with its totals as they
    /// were: until it is given back, it reads as it was.
    Taken(Totals),
}

/// What a slot held before the current command first touched it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Prior {
    Empty,
    Held { totals: Totals, pending: bool },
}

#[derive(Debug, Default)]
pub struct AccountCache {
    slots: HashMap<Vec<u8>, u32>,
    /// Each slot's key, by slot.
    keys: Vec<Vec<u8>>,
    records: Vec<Slot>,
    /// Whether the slot's account is newer than every layer's copy.
    pending: Vec<bool>,
    /// Every pending slot (pushed when it becomes pending, and kept while
    /// a dropped command makes it pending again).
    pending_slots: Vec<u32>,
    /// The command that last touched each slot (`command`).
    touched_by: Vec<u64>,
    /// The slots the current command touched, and what each held before.
    touches: Vec<(u32, Prior)>,
    /// The current command's number, counted over the cache's lifetime.
    command: u64,
}

impl AccountCache {
    /// Past this many accounts no more are added (about 40 MiB): the cache
    /// only saves reads.
    const ENTRIES_MAX: usize = 1 << 18;

    /// `key`'s slot, if it has one.
    pub(crate) fn slot(&self, key: &[u8]) -> Option<u32> {
        self.slots.get(key).copied()
    }

    /// The slot numbered `slot`, as it stands.
    pub(crate) fn at(&self, slot: u32) -> &Slot {
        &self.records[slot as usize]
    }

    pub(crate) fn key_of(&self, slot: u32) -> &[u8] {
        &self.keys[slot as usize]
    }

    pub(crate) fn is_pending(&self, slot: u32) -> bool {
        self.pending[slot as usize]
    }

    /// `key`'s slot, added (empty) while there is room.
    fn slot_or_new(&mut self, key: &[u8]) -> Option<u32> {
        if let Some(slot) = self.slot(key) {
            return Some(slot);
        }
        if self.records.len() >= Self::ENTRIES_MAX {
            return None;
        }
        let slot = u32::try_from(self.records.len()).expect("ENTRIES_MAX is below 2^32");
        self.slots.insert(key.to_vec(), slot);
        self.keys.push(key.to_vec());
        self.records.push(Slot::Empty);
        self.pending.push(false);
        self.touched_by.push(0);
        Some(slot)
    }

    /// Records what `slot` held, on the current command's first touch.
    fn touch(&mut self, slot: u32) {
        let i = slot as usize;
        if self.touched_by[i] == self.command.wrapping_add(1) {
            return;
        }
        self.touched_by[i] = self.command.wrapping_add(1);
        let prior = match &self.records[i] {
            Slot::Empty => Prior::Empty,
            Slot::Held(entry) => Prior::Held { totals: Totals::of(entry), pending: self.pending[i] },
            Slot::Taken(_) => unreachable!("a slot is taken only by the command that touched it"),
        };
        self.touches.push((slot, prior));
    }

    /// What the current command first found in `slot`, if it touched it.
    fn prior(&self, slot: u32) -> Option<Prior> {
        if self.touched_by[slot as usize] != self.command.wrapping_add(1) {
            return None;
        }
        self.touches.iter().rev().find(|(s, _)| *s == slot).map(|(_, prior)| *prior)
    }

    /// Fills `key`'s slot with what the layers hold (a read), unless the
    /// slot holds or has lent an account already. The fill counts as a
    /// touch of an empty slot: what the layers hold may be this command's
    /// own write, so a dropped command empties the slot again, and an
    /// update in the same command is written through.
    pub(crate) fn fill(&mut self, key: &[u8], entry: AccountEntry) {
        if let Some(slot) = self.slot_or_new(key)
            && matches!(self.records[slot as usize], Slot::Empty)
        {
            self.touch(slot);
            self.records[slot as usize] = Slot::Held(entry);
        }
    }

    /// Moves the account in `slot` out for the current command to update,
    /// leaving its totals. `None` when the slot holds none.
    pub(crate) fn take_at(&mut self, slot: u32) -> Option<AccountEntry> {
        if !matches!(self.records[slot as usize], Slot::Held(_)) {
            return None;
        }
        self.touch(slot);
        let i = slot as usize;
        let Slot::Held(entry) = std::mem::replace(&mut self.records[i], Slot::Empty) else { unreachable!() };
        self.records[i] = Slot::Taken(Totals::of(&entry));
        Some(entry)
    }

    /// Stores `entry` as `key`'s account. It is kept pending when the
    /// layers already hold a copy of the account (the slot held it when
    /// the command first touched it); otherwise, and when the cache is
    /// full, it is given back for the caller to write through.
    pub(crate) fn put(&mut self, key: &[u8], entry: AccountEntry) -> Option<AccountEntry> {
        match self.slot_or_new(key) {
            Some(slot) => self.put_at(slot, entry),
            None => Some(entry),
        }
    }

    /// `put` into `slot`.
    pub(crate) fn put_at(&mut self, slot: u32, entry: AccountEntry) -> Option<AccountEntry> {
        self.touch(slot);
        let i = slot as usize;
        if matches!(self.prior(slot), Some(Prior::Held { .. })) {
            self.records[i] = Slot::Held(entry);
            if !self.pending[i] {
                self.pending[i] = true;
                self.pending_slots.push(slot);
            }
            None
        } else {
            self.records[i] = Slot::Held(entry.clone());
            Some(entry)
        }
    }

    /// Empties `slot` because its key is written as bytes (the layers'
    /// value is the truth again). The caller has written a pending account
    /// into the layers first.
    pub(crate) fn forget(&mut self, slot: u32) {
        self.touch(slot);
        let i = slot as usize;
        self.records[i] = Slot::Empty;
        self.pending[i] = false;
    }

    /// Empties `key`'s slot without recording it: for a dropped command's
    /// byte writes, before `end_command` puts back what it touched.
    pub(crate) fn empty(&mut self, key: &[u8]) {
        if let Some(slot) = self.slot(key) {
            let i = slot as usize;
            if !self.pending[i] {
                self.records[i] = Slot::Empty;
            }
        }
    }

    /// Ends the current command. Dropped (`kept == false`), each slot it
    /// touched is put back as it was; kept, each account it took and never
    /// gave back is put back. `from_layers` reads a slot's key through the
    /// layers, for an account that was pending when it was taken.
    pub(crate) fn end_command(
        &mut self,
        kept: bool,
        mut from_layers: impl FnMut(&[u8]) -> Option<AccountEntry>,
    ) {
        for (slot, prior) in std::mem::take(&mut self.touches) {
            let i = slot as usize;
            let (totals, pending) = match (kept, prior, &self.records[i]) {
                (true, _, Slot::Held(_) | Slot::Empty) => continue,
                (true, _, Slot::Taken(totals)) => (*totals, self.pending[i]),
                (false, Prior::Empty, _) => {
                    self.records[i] = Slot::Empty;
                    self.pending[i] = false;
                    continue;
                }
                (false, Prior::Held { totals, pending }, _) => (totals, pending),
            };
            self.pending[i] = pending;
            self.records[i] = match std::mem::replace(&mut self.records[i], Slot::Empty) {
                Slot::Held(entry) => Slot::Held(totals.applied_to(entry)),
                Slot::Empty | Slot::Taken(_) if pending => {
                    let entry = from_layers(&self.keys[i])
                        .unwrap_or_else(|| panic!("a pending account has no copy in the layers"));
                    Slot::Held(totals.applied_to(entry))
                }
                Slot::Empty | Slot::Taken(_) => Slot::Empty,
            };
        }
        self.command = self.command.wrapping_add(1);
    }

    /// The pending accounts, each once with its key, for the batch's
    /// layer; none is pending after. (`pending_slots` may name a slot more
    /// than once, or one no longer pending: its flag decides.)
    pub(crate) fn take_pending(&mut self) -> Vec<(Vec<u8>, &AccountEntry)> {
        let slots = std::mem::take(&mut self.pending_slots);
        let mut flushed = Vec::with_capacity(slots.len());
        for slot in slots {
            let i = slot as usize;
            if std::mem::replace(&mut self.pending[i], false) {
                flushed.push(slot);
            }
        }
        flushed
            .into_iter()
            .map(|slot| {
                let i = slot as usize;
                let Slot::Held(entry) = &self.records[i] else {
                    unreachable!("a pending account is held between commands")
                };
                (self.keys[i].clone(), entry)
            })
            .collect()
    }
}
