//! What a live payer is told to pay into. It comes only from the operator's
//! configuration (`[live.receiving]`, `[[live.virtual_accounts]]`), never
//! from a generator: a bank account per currency, a merchant number per
//! mobile-money method, and per payment a stablecoin address derived from
//! an extended public key (`hd`) or taken from a pool. Each derived index
//! and each pooled address or account is given to exactly one payment: the
//! claim is a create-if-absent write, so two requests racing for the same
//! one cannot both win.

pub(crate) mod address;
pub(crate) mod hd;

pub(crate) use address::{address_problem, sandbox_address};

use sika_engine::{Command, Document, Engine, EngineError, Expected};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::settings::{AddressSource, BankAccount, Receiving};

/// Claims: `index:<asset>:<chain>:<n>`, `address:<address>` and
/// `account:<number>`, each holding the payment it was given to, and
/// `owner:<payment>` holding what that payment was given (so a replayed
/// request gets the same address, not another one).
const CLAIMS: &str = "receiving_claims";
/// The next derivation index to try per asset and chain (a hint: the
/// claims decide).
const NEXT_INDEX: &str = "receiving_next_index";

/// A deposit address on `chain` for the payment `owner`, or `None` when
/// the operator configured no route for the asset on that chain.
pub(crate) async fn crypto_address(
    engine: &Engine,
    receiving: &Receiving,
    asset: &str,
    chain: &str,
    owner: &str,
) -> ApiResult<Option<String>> {
    let Some(route) = receiving.crypto(asset, chain) else { return Ok(None) };
    let counter = format!("{asset}:{chain}");
    let mut index: u32 = crate::store::documents::load(&engine.read()?, NEXT_INDEX, &counter)?.unwrap_or(0);
    let mut pool = match &route.addresses {
        AddressSource::Pool(pool) => pool.iter(),
        AddressSource::Xpub(_) => [].iter(),
    };
    loop {
        if let Some(given) = given_to(engine, owner)? {
            return Ok(Some(given));
        }
        let (address, claimed, hint) = match &route.addresses {
            AddressSource::Xpub(key) => {
                let address = hd::derive_address(chain, key, index).map_err(|e| {
                    tracing::error!(error = %e, asset, chain, index, "cannot derive a deposit address");
                    ApiError::unavailable_because(format!(
                        "no more {asset} addresses can be derived on {chain}"
                    ))
                })?;
                let claimed = vec![format!("index:{counter}:{index}"), format!("address:{address}")];
                index = index
                    .checked_add(1)
                    .ok_or_else(|| ApiError::internal_from("the address index overflowed"))?;
                let hint = crate::store::documents::document(NEXT_INDEX, &counter, &index, None);
                (address, claimed, vec![hint])
            }
            AddressSource::Pool(_) => {
                let address = pool.next().ok_or_else(|| {
                    ApiError::unavailable_because(format!(
                        "every configured {asset} address on {chain} has been given out; the operator must add more"
                    ))
                })?;
                (address.clone(), vec![format!("address:{address}")], Vec::new())
            }
        };
        if claim(engine, &claimed, owner, &address, hint).await? {
            return Ok(Some(address));
        }
    }
}

/// What the payment `owner` was given already, if anything.
fn given_to(engine: &Engine, owner: &str) -> ApiResult<Option<String>> {
    let given = engine.read()?.document(CLAIMS, &format!("owner:{owner}"))?;
    Ok(given.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// A real account from the operator's pool for the virtual account
/// `owner`; `503` when every one in `currency` is taken.
pub(crate) async fn virtual_account(
    engine: &Engine,
    receiving: &Receiving,
    currency: &str,
    owner: &str,
) -> ApiResult<BankAccount> {
    let pool = receiving.virtual_accounts.iter().filter(|a| a.currency == currency);
    for account in pool {
        let claimed = [format!("account:{}", account.account_number)];
        if claim(engine, &claimed, owner, &account.account_number, Vec::new()).await? {
            return Ok(account.clone());
        }
    }
    Err(ApiError::unavailable_because(format!(
        "no {currency} account is left in the operator's pool for virtual accounts; the operator must add more"
    )))
}

/// Claims every id for `owner`, and records `given` as what `owner` got,
/// in one write; or nothing when any of them is taken.
async fn claim(
    engine: &Engine,
    ids: &[String],
    owner: &str,
    given: &str,
    mut documents: Vec<Document>,
) -> ApiResult<bool> {
    let owner_id = format!("owner:{owner}");
    // Read first: a claim already taken costs a lookup, not a write through
    // the ledger's writer. The write's expectation still settles races.
    let snapshot = engine.read()?;
    for id in ids.iter().chain([&owner_id]) {
        if snapshot.document(CLAIMS, id)?.is_some() {
            return Ok(false);
        }
    }
    drop(snapshot);
    let expect = ids
        .iter()
        .chain([&owner_id])
        .map(|id| Expected { collection: CLAIMS.into(), id: id.clone(), digest: None })
        .collect();
    documents.extend(ids.iter().map(|id| Document {
        collection: CLAIMS.into(),
        id: id.clone(),
        body: owner.as_bytes().to_vec(),
        list: None,
    }));
    documents.push(Document {
        collection: CLAIMS.into(),
        id: owner_id,
        body: given.as_bytes().to_vec(),
        list: None,
    });
    match engine.execute(Command::Save { expect, documents, events: Vec::new() }).await {
        Ok(_) => Ok(true),
        Err(EngineError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
