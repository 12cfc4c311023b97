//! Virtual accounts: account details a customer pays into, one per
//! customer. GHS accounts need the organization representative (live) or
//! get a sandbox default (sandbox). On live each one is a real account
//! from the operator's pool (`[[live.virtual_accounts]]`), given out once;
//! the sandbox generates its numbers.

use serde::{Deserialize, Serialize};
use sika_api::virtual_accounts::CreateVirtualAccount;
use sika_api::{ListPage, ListQuery};
use sika_engine::{Command, Currency, Engine, Snapshot};

use crate::domain::catalog::Catalog;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::pagination::Lists;
use crate::domain::render::timestamp;
use crate::domain::representative::{self, Representative, RepresentativeStatus};
use crate::domain::settings::Receiving;
use crate::domain::stack_kind::StackKind;

/// What opening a virtual account needs.
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    pub stack: StackKind,
    pub identity: &'a Identity,
    /// The stablecoin methods and their chains.
    pub catalog: &'a Catalog,
    /// The operator's account pools and address routes (live).
    pub receiving: &'a Receiving,
}

pub(crate) const COLLECTION: &str = "virtual_accounts";

/// A stored virtual account. A stablecoin one (`USDC`, `USDT`) is a
/// deposit address, kept in the same record so the stored format is
/// unchanged: `account_number` holds the address, `bank_name` the chain and
/// `account_name` nothing; `render` shows them as `address` and `chain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VirtualAccount {
    pub id: String,
    pub organization: String,
    pub currency: String,
    pub account_number: String,
    pub bank_name: String,
    pub account_name: String,
    pub customer_reference: Option<String>,
    pub created_at: i64,
}

impl VirtualAccount {
    /// The account as every response shows it.
    pub(crate) fn render(&self) -> sika_api::virtual_accounts::VirtualAccount {
        use sika_api::virtual_accounts::VirtualAccountType;
        let crypto = is_crypto(&self.currency);
        let bank = |value: &String| (!crypto).then(|| value.clone());
        let wallet = |value: &String| crypto.then(|| value.clone());
        sika_api::virtual_accounts::VirtualAccount {
            id: self.id.clone(),
            kind: if crypto { VirtualAccountType::CryptoAddress } else { VirtualAccountType::BankAccount },
            currency: self.currency.clone(),
            account_number: bank(&self.account_number),
            bank_name: bank(&self.bank_name),
            account_name: bank(&self.account_name),
            address: wallet(&self.account_number),
            chain: wallet(&self.bank_name),
            customer_reference: self.customer_reference.clone(),
            status: sika_api::virtual_accounts::VirtualAccountStatus::Active,
            created_at: timestamp(self.created_at),
        }
    }
}

/// Stablecoin accounts are deposit addresses, not bank accounts.
fn is_crypto(currency: &str) -> bool {
    matches!(currency, "USDC" | "USDT")
}

/// Opens a stablecoin account: a deposit address on the requested chain,
/// from the operator's `[[live.receiving.crypto]]` route on live (an xpub
/// derivation or a pooled address, given to this account only), generated
/// on the sandbox.
async fn create_crypto(
    deps: &Deps<'_>,
    organization: &str,
    request: CreateVirtualAccount,
    currency: &str,
) -> ApiResult<(VirtualAccount, bool)> {
    let chain = request.chain.as_deref().map(str::trim).filter(|c| !c.is_empty()).ok_or_else(|| {
        ApiError::validation(
            "chain",
            format!("is required for a {currency} account: the network payers send on"),
        )
    })?;
    let sandbox = deps.stack == StackKind::Sandbox;
    let mainnet = deps
        .catalog
        .stablecoins()
        .iter()
        .filter(|m| m.currency().code == currency)
        .find(|m| m.chain.as_deref() == Some(chain) || (sandbox && m.chain_for(true) == Some(chain)))
        .and_then(|m| m.chain.clone())
        .ok_or_else(|| ApiError::validation("chain", format!("{currency} is not offered on '{chain}'")))?;
    let id = sika_engine::ids::new_id("va");
    let address = if sandbox {
        crate::domain::receiving::sandbox_address(&mainnet)
    } else {
        crate::domain::receiving::crypto_address(deps.engine, deps.receiving, currency, chain, &id).await?.ok_or_else(|| {
            ApiError::validation(
                "chain",
                format!("{currency} on '{chain}' is not offered on live: the operator has configured no address for it"),
            )
        })?
    };
    let account = VirtualAccount {
        id,
        organization: organization.to_string(),
        currency: currency.to_string(),
        account_number: address,
        bank_name: chain.to_string(),
        account_name: String::new(),
        customer_reference: request.customer_reference,
        created_at: deps.engine.now_ms(),
    };
    save(deps, organization, account, None).await
}

fn account_number() -> String {
    let digits: u64 = rand::random::<u64>() % 10_000_000_000;
    format!("{digits:010}")
}

/// The representative a GHS account needs: live requires one; the sandbox
/// fills a default from the owner's name.
async fn ensure_representative(deps: &Deps<'_>, organization: &str) -> ApiResult<Representative> {
    if let Some(existing) = representative::load(deps.engine, organization)? {
        return Ok(existing);
    }
    if deps.stack == StackKind::Live {
        return Err(ApiError::new(
            sika_api::ErrorCode::RepresentativeRequired,
            "a GHS virtual account needs the organization representative; set it with PUT /v1/organization/representative",
        ));
    }
    let owner = deps
        .identity
        .organization(organization)
        .and_then(|o| deps.identity.member(&o.owner_member_id))
        .map(|m| m.name)
        .unwrap_or_else(|| "Sandbox Owner".into());
    let name = if owner.chars().count() >= 2 { owner } else { "Sandbox Owner".into() };
    representative::put_default(deps.engine, organization, &name).await
}

/// Where a GHS customer's one account is found: `{org}/{reference}`.
const BY_CUSTOMER: &str = "virtual_accounts_by_customer";

/// The GHS account already opened for `reference`, if any.
fn customer_account(
    engine: &Engine,
    organization: &str,
    reference: &str,
) -> ApiResult<Option<VirtualAccount>> {
    let snapshot = engine.read()?;
    match snapshot.document(BY_CUSTOMER, &format!("{organization}/{reference}"))? {
        Some(id) => load(&snapshot, &String::from_utf8_lossy(&id)),
        None => Ok(None),
    }
}

/// Opens a virtual account; `false` with the account when a GHS customer
/// already has one (one per customer: the request answers it, 200).
pub(crate) async fn create(
    deps: &Deps<'_>,
    organization: &str,
    request: CreateVirtualAccount,
) -> ApiResult<(VirtualAccount, bool)> {
    let currency = Currency::find(&request.currency.to_ascii_uppercase())
        .map_err(|e| ApiError::validation("currency", e.to_string()))?;
    if let Some(reference) = &request.customer_reference {
        crate::domain::limits::check_visible("customerReference", reference)?;
    }
    if is_crypto(currency.code) {
        return create_crypto(deps, organization, request, currency.code).await;
    }
    if request.chain.is_some() {
        return Err(ApiError::validation("chain", "applies to USDC and USDT accounts only"));
    }
    let customer = request.customer_reference.clone().filter(|_| currency.code == "GHS");
    if let Some(reference) = &customer
        && let Some(existing) = customer_account(deps.engine, organization, reference)?
    {
        return Ok((existing, false));
    }
    let org_name = deps.identity.organization(organization).map(|o| o.name).unwrap_or_default();
    let bank_name = if currency.code == "GHS" {
        let representative = ensure_representative(deps, organization).await?;
        debug_assert!(matches!(
            representative.status,
            RepresentativeStatus::Active | RepresentativeStatus::SandboxDefault
        ));
        "Sika Partner Bank Ghana".to_string()
    } else {
        "Sika Virtual Accounts".to_string()
    };
    let id = sika_engine::ids::new_id("va");
    let (account_number, bank_name, account_name) = if deps.stack == StackKind::Live {
        if !deps.receiving.virtual_accounts.iter().any(|a| a.currency == currency.code) {
            return Err(ApiError::validation(
                "currency",
                format!(
                    "{} virtual accounts are not offered on live: the operator has configured no account pool for them",
                    currency.code
                ),
            ));
        }
        let real = crate::domain::receiving::virtual_account(deps.engine, deps.receiving, currency.code, &id)
            .await?;
        (real.account_number, real.bank_name, real.account_name)
    } else {
        (account_number(), bank_name, request.account_name.unwrap_or(org_name))
    };
    let account = VirtualAccount {
        id,
        organization: organization.to_string(),
        currency: currency.code.to_string(),
        account_number,
        bank_name,
        account_name,
        customer_reference: request.customer_reference,
        created_at: deps.engine.now_ms(),
    };
    save(deps, organization, account, customer).await
}

/// Stores a new account, and for a GHS customer its index entry, written
/// only if absent so two racing requests open one account between them.
async fn save(
    deps: &Deps<'_>,
    organization: &str,
    account: VirtualAccount,
    customer: Option<String>,
) -> ApiResult<(VirtualAccount, bool)> {
    let document = sika_engine::Document {
        collection: COLLECTION.into(),
        id: account.id.clone(),
        body: crate::store::documents::encode(&account),
        list: Some((organization.to_string(), COLLECTION.into())),
    };
    let Some(reference) = customer else {
        deps.engine.execute(Command::PutDocuments { documents: vec![document] }).await?;
        return Ok((account, true));
    };
    let key = format!("{organization}/{reference}");
    let index = sika_engine::Document {
        collection: BY_CUSTOMER.into(),
        id: key.clone(),
        body: account.id.clone().into_bytes(),
        list: None,
    };
    let expect = vec![sika_engine::Expected { collection: BY_CUSTOMER.into(), id: key, digest: None }];
    match deps
        .engine
        .execute(Command::Save { expect, documents: vec![document, index], events: Vec::new() })
        .await
    {
        Ok(_) => Ok((account, true)),
        Err(sika_engine::EngineError::Conflict(_)) => {
            let existing = customer_account(deps.engine, organization, &reference)?.ok_or_else(|| {
                ApiError::internal_from(format!("the account for '{reference}' conflicted but is not there"))
            })?;
            Ok((existing, false))
        }
        Err(e) => Err(e.into()),
    }
}

/// `GET /v1/virtual-accounts`: one page of the organization's, newest first.
pub(crate) fn list(
    lists: &Lists,
    organization: &str,
    query: &ListQuery,
) -> ApiResult<ListPage<sika_api::virtual_accounts::VirtualAccount>> {
    lists.page(organization, COLLECTION, query, |snapshot, id| Ok(load(snapshot, id)?.map(|a| a.render())))
}

pub(crate) fn load(snapshot: &Snapshot, id: &str) -> ApiResult<Option<VirtualAccount>> {
    Ok(crate::store::documents::load(snapshot, COLLECTION, id)?)
}
