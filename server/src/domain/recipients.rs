//! Saved payout destinations. A payout may name a `recipientId` instead of
//! inline destination fields.

use serde::{Deserialize, Serialize};
use sika_api::recipients::{CreateRecipient, RecipientResult, RecipientResults};
use sika_api::{ListPage, ListQuery};
use sika_engine::{Command, Engine, Snapshot};

use crate::domain::catalog;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::Lists;
use crate::domain::render::timestamp;

pub(crate) const COLLECTION: &str = "recipients";
/// The most recipients one bulk call creates.
pub(crate) const BULK_ITEMS_MAX: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Recipient {
    pub id: String,
    pub organization: String,
    pub name: String,
    pub email: Option<String>,
    pub code: String,
    pub currency: String,
    pub account_number: Option<String>,
    pub address: Option<String>,
    pub tag: Option<String>,
    pub created_at: i64,
}

impl Recipient {
    /// The recipient as every response shows it.
    pub(crate) fn render(&self) -> sika_api::recipients::Recipient {
        sika_api::recipients::Recipient {
            id: self.id.clone(),
            name: self.name.clone(),
            email: self.email.clone(),
            code: self.code.clone(),
            currency: self.currency.clone(),
            account_number: self.account_number.clone(),
            address: self.address.clone(),
            tag: self.tag.clone(),
            created_at: timestamp(self.created_at),
        }
    }
}

/// Checks a request; `prefix` names its place in a bulk body (`items[3].`).
pub(crate) fn build(
    request: CreateRecipient,
    organization: &str,
    now: i64,
    prefix: &str,
) -> ApiResult<Recipient> {
    let field = |name: &str| format!("{prefix}{name}");
    let name = request.name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::validation(&field("name"), "must be 1 to 200 characters"));
    }
    if let Some(email) = &request.email
        && (!email.contains('@') || email.len() > 254)
    {
        return Err(ApiError::validation(&field("email"), "must be an email address"));
    }
    let method = catalog::shipped().find_method(&request.code).ok_or_else(|| {
        ApiError::validation(&field("code"), format!("unknown payment method '{}'", request.code))
    })?;
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    if method.is_crypto() && blank(&request.address) {
        return Err(ApiError::validation(&field("address"), "a wallet address is required for this method"));
    }
    if !method.is_crypto() && blank(&request.account_number) {
        return Err(ApiError::validation(
            &field("accountNumber"),
            "an account number is required for this method",
        ));
    }
    // The same format rules a payout to it would meet.
    if method.is_crypto() {
        let chain = method.chain.as_deref().unwrap_or_default();
        if let Some(problem) =
            crate::domain::receiving::address_problem(chain, request.address.as_deref().unwrap_or_default())
        {
            return Err(ApiError::validation(&field("address"), problem));
        }
    } else if let Some(problem) = catalog::shipped()
        .account_problem(&method.code, request.account_number.as_deref().unwrap_or_default())
    {
        return Err(ApiError::validation(&field("accountNumber"), problem));
    }
    Ok(Recipient {
        id: sika_engine::ids::new_id("rcp"),
        organization: organization.to_string(),
        name: name.to_string(),
        email: request.email,
        code: method.code.clone(),
        currency: method.currency().to_string(),
        account_number: request.account_number,
        address: request.address,
        tag: request.tag,
        created_at: now,
    })
}

/// `POST /v1/recipients`: one saved destination.
pub(crate) async fn create(
    engine: &Engine,
    organization: &str,
    request: CreateRecipient,
) -> ApiResult<sika_api::recipients::Recipient> {
    let recipient = build(request, organization, engine.now_ms(), "")?;
    save_all(engine, std::slice::from_ref(&recipient)).await?;
    Ok(recipient.render())
}

/// `POST /v1/recipients/bulk`: each item parsed by the caller (or refused
/// there, its error reported at its index) is checked and saved on its own;
/// those that pass are stored together.
pub(crate) async fn create_many(
    engine: &Engine,
    organization: &str,
    items: Vec<ApiResult<CreateRecipient>>,
) -> ApiResult<RecipientResults> {
    if items.is_empty() || items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let now = engine.now_ms();
    let mut created = Vec::new();
    let mut results = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let prefix = format!("items[{index}].");
        match item.and_then(|request| build(request, organization, now, &prefix)) {
            Ok(recipient) => {
                results.push(RecipientResult::Created { index, recipient: recipient.render() });
                created.push(recipient);
            }
            Err(error) => results.push(RecipientResult::Failed { index, error: error.item_error() }),
        }
    }
    save_all(engine, &created).await?;
    Ok(RecipientResults { results })
}

/// `GET /v1/recipients`: one page of the organization's, newest first.
pub(crate) fn list(
    lists: &Lists,
    organization: &str,
    query: &ListQuery,
) -> ApiResult<ListPage<sika_api::recipients::Recipient>> {
    lists.page(organization, COLLECTION, query, |snapshot, id| Ok(load(snapshot, id)?.map(|r| r.render())))
}

async fn save_all(engine: &Engine, recipients: &[Recipient]) -> ApiResult<()> {
    if recipients.is_empty() {
        return Ok(());
    }
    let documents = recipients
        .iter()
        .map(|r| crate::store::documents::document(COLLECTION, &r.id, r, Some((&r.organization, COLLECTION))))
        .collect();
    engine.execute(Command::PutDocuments { documents }).await?;
    Ok(())
}

pub(crate) fn load(snapshot: &Snapshot, id: &str) -> ApiResult<Option<Recipient>> {
    Ok(crate::store::documents::load(snapshot, COLLECTION, id)?)
}
