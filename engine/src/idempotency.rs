//! What an idempotency entry names, read from a ledger's table: the
//! resources the lists hold by position (`ResourceRef::Listed`, format 29)
//! and the organization, operation and `externalReference` a resource was
//! made with, whose digest keys its entry (`keys::idempotency`, format
//! 26). `sika verify` checks every entry with them; the layouts of older
//! formats in tests key the entries again with them.

use std::collections::{BTreeMap, HashMap};

use redb::ReadableTable;

use crate::error::EngineError;
use crate::records::*;
use crate::storage::{NameNumber, Space, keys, read, scan, stored_transfer};

/// Each resource a list holds by id, by its position (one count over
/// every list), with the organization whose list it is: what an
/// idempotency entry that names its resource by position
/// (`ResourceRef::Listed`) names. `names` gives each name's number.
pub(crate) fn list_positions(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    names: &BTreeMap<NameNumber, String>,
) -> Result<HashMap<u64, (NameNumber, ResourceRef)>, EngineError> {
    let mut positions = HashMap::new();
    for (key, value) in scan(table, Space::ListIndex)? {
        let listed = NameNumber::pair_in(&key).and_then(|(organization, kind, rest)| {
            let position = u64::from_be_bytes(<[u8; 8]>::try_from(rest).ok()?);
            Some((position, organization, names.get(&kind)?))
        });
        if let (Some((position, organization, kind)), Ok(Listed::Id(id))) = (listed, Listed::decode(&value))
            && let Some(resource) = ResourceRef::in_list(kind, id)
        {
            positions.insert(position, (organization, resource));
        }
    }
    Ok(positions)
}

/// Whether an idempotency entry's resource exists (`None` if not) and,
/// if it records one, the organization, operation and reference it was
/// made with (a ledger transfer records none).
pub(crate) type Origin = Option<(String, &'static str, String)>;
pub(crate) fn origin_of(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    resource: &ResourceRef,
) -> Result<Option<Origin>, EngineError> {
    fn with<T: serde::de::DeserializeOwned>(
        table: &impl ReadableTable<&'static [u8], &'static [u8]>,
        key: Vec<u8>,
        origin: impl FnOnce(T) -> Origin,
    ) -> Result<Option<Origin>, EngineError> {
        Ok(read::<T>(table, &key)?.map(origin))
    }
    Ok(match resource {
        ResourceRef::Conversion(id) => with(table, keys::conversion(id), |c: ConversionRecord| {
            c.external_reference.map(|r| (c.organization, "conversion", r))
        })?,
        ResourceRef::Deposit(id) => with(table, keys::deposit(id), |d: DepositRecord| {
            d.external_reference.map(|r| (d.organization, "deposit", r))
        })?,
        ResourceRef::Payout(id) => {
            let key = keys::payout(id);
            match table.get(key.as_slice())? {
                Some(bytes) => {
                    let payout = crate::stored_payout::decode(&key, bytes.value())?;
                    Some(Some((payout.organization, "payout", payout.external_reference)))
                }
                None => None,
            }
        }
        ResourceRef::Collection(id) => with(table, keys::collection(id), |c: CollectionRecord| {
            Some((c.organization, "collection", c.external_reference))
        })?,
        ResourceRef::Order(id) => with(table, keys::order(id), |o: OrderRecord| {
            Some((o.organization, "order", o.external_reference))
        })?,
        ResourceRef::Refund(id) => with(table, keys::refund(id), |r: RefundRecord| {
            Some((r.organization, "refund", r.external_reference))
        })?,
        ResourceRef::Transfers(ids) => {
            let mut all = true;
            for id in ids {
                all &= stored_transfer(table, *id)?.is_some();
            }
            all.then_some(None)
        }
        // A position no list entry holds.
        ResourceRef::Listed(_) => None,
    })
}
