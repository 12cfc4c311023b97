//! Hosted checkout: payment pages, payment links and checkout sessions.
//!
//! A page is a reusable checkout; each payer who starts paying on it gets a
//! child link. A link is one customer's charge; every attempt to pay it is a
//! checkout session, and every session is a collection on the ledger (the
//! same path and events as `POST /v1/collections`). Each attempt's
//! collection is in the link's group on the ledger, whose tally the engine
//! changes in the same command that completes a collection: a link's
//! totals and state are derived from that tally when read, so they never
//! drift from the ledger and never need the link's sessions.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sika_api::checkout::{self as wire, CryptoAsset, PaymentMethodKind};
use sika_api::payment_links::{self as wire_links, CheckoutSessionStatus, PaymentLinkStatus};
use sika_api::payment_pages::PaymentPageStatus;
use sika_engine::movements::{CollectionRecord, MovementStatus};
use sika_engine::{Arrival, CollectionGroup, Engine, Snapshot};

use crate::config::NodeConfig;
use crate::domain::catalog::Catalog;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::render::{amount, timestamp, wire_enum};
use crate::domain::settings::Receiving;
use crate::domain::simulator;
use crate::domain::stack_kind::StackKind;
use crate::store::documents::{decode, encode, load};

pub(crate) mod links;
pub(crate) mod pages;
pub(crate) mod pay;
pub(crate) mod phone;
pub(crate) mod requests;
pub(crate) mod sessions;

/// What checkout reads and changes: the stack's ledger, its catalog and
/// receiving routes, the organizations (names, suspensions), the node's
/// addresses and limits. A handler fills it from its stack; nothing here
/// sees the whole stack.
#[derive(Clone, Copy)]
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    pub kind: StackKind,
    pub identity: &'a Identity,
    pub config: &'a NodeConfig,
    pub catalog: &'a Catalog,
    pub receiving: &'a Receiving,
}

impl Deps<'_> {
    pub(crate) fn now_ms(&self) -> i64 {
        self.engine.now_ms()
    }

    /// The stored lists this stack pages through.
    pub(crate) fn lists(&self) -> crate::domain::pagination::Lists<'_> {
        crate::domain::pagination::Lists {
            ledger: self.engine,
            stack: self.kind,
            secret: self.identity.secret(),
        }
    }
}

/// Document collections and list kinds.
pub(crate) const PAGES: &str = "payment_pages";
pub(crate) const LINKS: &str = "payment_links";
pub(crate) const SESSIONS: &str = "checkout_sessions";
/// A page's child links are listed under the page id.
pub(crate) const PAGE_LINKS: &str = "page_links";
/// A link's sessions are listed under the link id.
pub(crate) const LINK_SESSIONS: &str = "link_sessions";

pub(crate) const METHODS: [&str; 3] = ["mobile_money", "bank_transfer", "crypto"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CustomField {
    pub name: String,
    pub kind: String,
    pub required: bool,
    pub label: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Branding {
    pub logo_url: String,
    pub accent_color: String,
    pub business_name: String,
}

/// What a page and its links share: how the checkout looks and what it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Settings {
    pub currency: String,
    pub title: String,
    pub description: String,
    pub allowed_methods: Vec<String>,
    pub allowed_crypto_assets: Option<Vec<String>>,
    pub custom_fields: Vec<CustomField>,
    pub branding: Branding,
    pub redirect_url: String,
    /// JSON object text.
    pub metadata: String,
    pub expires_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PaymentPage {
    pub id: String,
    pub organization: String,
    /// `None`: each payer chooses the amount.
    pub amount: Option<i128>,
    pub settings: Settings,
    pub closed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PaymentLink {
    pub id: String,
    pub organization: String,
    /// The page this link was spawned from.
    pub page: Option<String>,
    pub email: Option<String>,
    pub customer_reference: Option<String>,
    /// `None`: the payer chooses the amount when paying.
    pub amount: Option<i128>,
    pub settings: Settings,
    /// Values the payer entered for the custom fields.
    pub custom_values: Vec<(String, String)>,
    pub closed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What the payer pays into, shown on the hosted page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Instructions {
    pub kind: String,
    pub fields: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Session {
    pub id: String,
    pub organization: String,
    pub link: String,
    pub method: String,
    /// The catalog method code (`mtn_gh`, `bank_ng`, `usdc_base`).
    pub code: String,
    pub chain: Option<String>,
    pub payer: String,
    pub origin_amount: i128,
    pub origin_currency: String,
    pub destination_amount: i128,
    pub destination_currency: String,
    pub rate: String,
    pub collection: String,
    pub instructions: Option<Instructions>,
    pub expires_at: i64,
    pub created_at: i64,
}

/// The failure message of a session's collection when the payer did not
/// finish in time; such a session reads as `expired`.
pub(crate) const SESSION_EXPIRED: &str = "The checkout session expired before the payer paid";

/// A session with its collection's state, as of one read.
pub(crate) struct SessionView {
    pub session: Session,
    pub status: CheckoutSessionStatus,
    pub status_message: String,
    /// What refunds of the session's payment give back (completed or
    /// pending), in minor units of its destination currency.
    pub refunded_minor: i128,
}

/// A link's state: its money from its tally on the ledger, which the
/// engine keeps current as each attempt settles, so reading a link costs
/// the same however many attempts it took.
pub(crate) struct LinkState {
    pub status: PaymentLinkStatus,
    pub status_message: String,
    pub amount: Option<i128>,
    pub total_received: i128,
    pub remaining: Option<i128>,
    pub overpayment: Option<i128>,
    /// When the link last changed, its status included: the stored
    /// `updated_at`, or later the money that arrived or the expiry that
    /// passed. A derived status moves `updatedAt` as a stored one does.
    pub updated_at: i64,
    /// Attempts whose money arrived.
    pub payments: u64,
    /// The attempt whose money paid the link (its collection), once paid:
    /// the one session that reads `complete`.
    pub covering: Option<Arrival>,
}

pub(crate) fn load_page(snapshot: &Snapshot, id: &str) -> ApiResult<Option<PaymentPage>> {
    Ok(load(snapshot, PAGES, id)?)
}

pub(crate) fn load_link(snapshot: &Snapshot, id: &str) -> ApiResult<Option<PaymentLink>> {
    Ok(load(snapshot, LINKS, id)?)
}

/// Whom the payer pays, by the name they should recognise: the page's
/// business name, else the organization's own name (never nothing).
pub(crate) fn payee(deps: &Deps<'_>, settings: &Settings, organization: &str) -> String {
    if !settings.branding.business_name.is_empty() {
        return settings.branding.business_name.clone();
    }
    deps.identity.organization(organization).map_or_else(|| settings.title.clone(), |o| o.name)
}

/// The group a link's attempts count in on the ledger: the link's id,
/// toward its amount (none: the first payment sets it).
pub(crate) fn link_group(link: &PaymentLink) -> CollectionGroup {
    CollectionGroup { id: link.id.clone(), target_minor: link.amount }
}

/// Every id listed under `owner` as `kind`, newest first.
fn all_listed(snapshot: &Snapshot, owner: &str, kind: &str) -> ApiResult<Vec<String>> {
    let mut out = Vec::new();
    let mut before = None;
    loop {
        let entries = snapshot.list(owner, kind, before, 500)?;
        out.extend(entries.iter().map(|(_, id)| id.clone()));
        match entries.last() {
            Some((position, _)) if entries.len() == 500 => before = Some(*position),
            _ => return Ok(out),
        }
    }
}

/// A session as of `snapshot`: its collection's state, and `complete` for
/// the one payment that paid the link, `partial` for any other that arrived.
fn session_view(snapshot: &Snapshot, session: Session, state: &LinkState) -> ApiResult<SessionView> {
    let collection = snapshot.collection(&sika_engine::CollectionId::named(&session.collection))?;
    let covering = state.covering.as_ref().map(|a| a.collection_id.as_str());
    let (status, message) = match &collection {
        Some(c) if c.status == MovementStatus::Completed && covering == Some(c.id.as_str()) => {
            (CheckoutSessionStatus::Complete, c.status_message.clone())
        }
        Some(c) if c.status == MovementStatus::Completed => {
            (CheckoutSessionStatus::Partial, c.status_message.clone())
        }
        Some(c) if c.status == MovementStatus::Failed && c.status_message == SESSION_EXPIRED => {
            (CheckoutSessionStatus::Expired, c.status_message.clone())
        }
        Some(c) if c.status == MovementStatus::Failed => {
            (CheckoutSessionStatus::Failed, c.status_message.clone())
        }
        Some(c) => (CheckoutSessionStatus::Pending, c.status_message.clone()),
        None => (CheckoutSessionStatus::Failed, "The attempt was not recorded".to_string()),
    };
    let refunded_minor = snapshot.refund_tally(&session.collection)?.map_or(0, |t| t.refunded_minor);
    Ok(SessionView { session, status, status_message: message, refunded_minor })
}

impl SessionView {
    /// What the payer reads about their own attempt. `status_message` is
    /// the merchant's ("The payer declined the charge"); the payer's page
    /// says it to the payer, and promises a prompt only where one comes:
    /// the sandbox simulates it, a live session gives the merchant number.
    pub(crate) fn payer_message(&self) -> &'static str {
        let session = &self.session;
        match self.status {
            CheckoutSessionStatus::Pending => match session.method.as_str() {
                "mobile_money" if session.instructions.is_none() => {
                    "Approve the prompt on your phone. Waiting for confirmation\u{2026}"
                }
                "mobile_money" => "Waiting for your mobile money payment to arrive\u{2026}",
                "bank_transfer" => "Waiting for your transfer to arrive\u{2026}",
                _ => "Waiting for your coins to arrive\u{2026}",
            },
            CheckoutSessionStatus::Complete | CheckoutSessionStatus::Partial => "Payment received.",
            CheckoutSessionStatus::Expired => "The time to pay ran out before your payment arrived.",
            CheckoutSessionStatus::Failed => match self.status_message.as_str() {
                simulator::COLLECTION_DECLINED => "You declined the charge on your phone.",
                simulator::COLLECTION_NOT_APPROVED => "The charge was not approved on your phone in time.",
                _ => "Your payment did not go through.",
            },
        }
    }
}

/// Every session of a link, newest first (at most
/// `checkout_attempts_per_link`): only the merchant's single read lists them.
pub(crate) fn link_sessions(
    snapshot: &Snapshot,
    link_id: &str,
    state: &LinkState,
) -> ApiResult<Vec<SessionView>> {
    let mut out = Vec::new();
    for id in all_listed(snapshot, link_id, LINK_SESSIONS)? {
        let Some(session) = load::<Session>(snapshot, SESSIONS, &id)? else { continue };
        out.push(session_view(snapshot, session, state)?);
    }
    Ok(out)
}

/// The address a crypto session of link `link_id` gives its payer (what
/// the page's QR code holds); `404` for any other session.
pub(crate) fn deposit_address(snapshot: &Snapshot, link_id: &str, session_id: &str) -> ApiResult<String> {
    let session = load::<Session>(snapshot, SESSIONS, session_id)?.filter(|s| s.link == link_id);
    session
        .and_then(|s| s.instructions)
        .filter(|i| i.kind == "crypto")
        .and_then(|i| i.fields.into_iter().find(|(key, _)| key == "address").map(|(_, address)| address))
        .filter(|address| !address.is_empty())
        .ok_or_else(|| ApiError::not_found(format!("checkout session '{session_id}' has no deposit address")))
}

/// One session of link `link_id`, as the payer's page follows it.
pub(crate) fn link_session(
    snapshot: &Snapshot,
    link_id: &str,
    session_id: &str,
    state: &LinkState,
) -> ApiResult<Option<SessionView>> {
    let Some(session) = load::<Session>(snapshot, SESSIONS, session_id)?.filter(|s| s.link == link_id) else {
        return Ok(None);
    };
    Ok(Some(session_view(snapshot, session, state)?))
}

/// What the payer of an open amount last tried to pay, before any money
/// arrived: the newest session's amount (one list entry, one read).
fn last_tried(snapshot: &Snapshot, link_id: &str) -> ApiResult<Option<i128>> {
    let Some((_, id)) = snapshot.list(link_id, LINK_SESSIONS, None, 1)?.into_iter().next() else {
        return Ok(None);
    };
    Ok(load::<Session>(snapshot, SESSIONS, &id)?.map(|s| s.destination_amount))
}

/// A link's state as of `now`, from the link and its tally: a read or two
/// whatever the number of its attempts.
pub(crate) fn link_state(snapshot: &Snapshot, link: &PaymentLink, now: i64) -> ApiResult<LinkState> {
    let tally = snapshot.collection_tally(&link.id)?;
    let total_received = tally.as_ref().map_or(0, |t| t.received_minor);
    let payments = tally.as_ref().map_or(0, |t| t.completed_count);
    let covering = tally.as_ref().and_then(|t| t.covering.clone());
    let last_arrival = tally.and_then(|t| t.latest).map(|a| a.completed_at);
    // An open amount is the payer's: their first payment (which is what
    // covers a link with no amount), or else what they last tried.
    let amount = match (link.amount, &covering) {
        (Some(amount), _) => Some(amount),
        (None, Some(first)) => Some(first.amount_minor),
        (None, None) => last_tried(snapshot, &link.id)?,
    };
    let remaining = amount.map(|a| a.saturating_sub(total_received).max(0));
    let overpayment = amount.filter(|a| total_received > *a).map(|a| total_received.saturating_sub(a));
    let (status, status_message) = status_of(link, now, total_received, amount, remaining);
    let expired_at = link.settings.expires_at.filter(|_| status == PaymentLinkStatus::Expired);
    let updated_at = [Some(link.updated_at), last_arrival, expired_at]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(link.updated_at);
    Ok(LinkState {
        status,
        status_message,
        amount,
        total_received,
        remaining,
        overpayment,
        updated_at,
        payments,
        covering,
    })
}

/// A link's status and its message, from what it received.
fn status_of(
    link: &PaymentLink,
    now: i64,
    total_received: i128,
    due: Option<i128>,
    remaining: Option<i128>,
) -> (PaymentLinkStatus, String) {
    let currency = &link.settings.currency;
    if total_received > 0 && remaining == Some(0) {
        (PaymentLinkStatus::Paid, format!("Paid: {} {currency} received", amount(currency, total_received)))
    } else if link.closed_at.is_some() {
        (PaymentLinkStatus::Closed, "Closed by the merchant".to_string())
    } else if link.settings.expires_at.is_some_and(|at| now > at) {
        (PaymentLinkStatus::Expired, "The payment window has ended".to_string())
    } else if total_received > 0 {
        let due = amount(currency, due.unwrap_or(0));
        let received = amount(currency, total_received);
        (PaymentLinkStatus::Active, format!("Partially paid: {received} of {due} {currency} received"))
    } else {
        (PaymentLinkStatus::Active, "Awaiting payment".to_string())
    }
}

/// A page's state: (status, paymentCount, totalCollected).
pub(crate) fn page_state(
    snapshot: &Snapshot,
    page: &PaymentPage,
    now: i64,
) -> ApiResult<(PaymentPageStatus, u64, i128)> {
    let mut count: u64 = 0;
    let mut total: i128 = 0;
    for id in all_listed(snapshot, &page.id, PAGE_LINKS)? {
        if let Some(link) = load_link(snapshot, &id)? {
            let state = link_state(snapshot, &link, now)?;
            count = count.saturating_add(state.payments);
            total = total
                .checked_add(state.total_received)
                .ok_or_else(|| ApiError::internal_from("the total received overflowed"))?;
        }
    }
    Ok((page_status(page, now), count, total))
}

/// A page past its `expiresAt` takes no new payers, like a closed one.
pub(crate) fn page_status(page: &PaymentPage, now: i64) -> PaymentPageStatus {
    if page.closed_at.is_some() || page.settings.expires_at.is_some_and(|at| now > at) {
        PaymentPageStatus::Closed
    } else {
        PaymentPageStatus::Active
    }
}

/// The latest payment that arrived through payment link `link_id` of
/// `organization` (`Some(None)`: none yet); `None` when the organization
/// has no such link.
pub(crate) fn latest_link_payment(
    snapshot: &Snapshot,
    organization: &str,
    link_id: &str,
) -> ApiResult<Option<Option<CollectionRecord>>> {
    let Some(link) = load_link(snapshot, link_id)?.filter(|l| l.organization == organization) else {
        return Ok(None);
    };
    let Some(latest) = snapshot.collection_tally(&link.id)?.and_then(|t| t.latest) else {
        return Ok(Some(None));
    };
    Ok(Some(snapshot.collection(&sika_engine::CollectionId::named(&latest.collection_id))?))
}

/// The hosted checkout address of a page or link on this stack's listener.
pub(crate) fn hosted_url(deps: &Deps<'_>, id: &str) -> String {
    let config = &deps.config;
    let (public, addr) = match deps.kind {
        StackKind::Live => (&config.live_public_url, config.live_addr),
        StackKind::Sandbox => (&config.sandbox_public_url, config.sandbox_addr),
    };
    match public {
        Some(base) => format!("{base}/pay/{id}"),
        None => format!("http://{addr}/pay/{id}"),
    }
}

/// The settings a page and its links show, as their views write them.
struct SettingsView {
    currency: String,
    title: String,
    description: String,
    allowed_methods: Vec<PaymentMethodKind>,
    allowed_crypto_assets: Option<Vec<CryptoAsset>>,
    custom_fields: Vec<wire::CustomField>,
    branding: wire::Branding,
    redirect_url: String,
    metadata: sika_api::Metadata,
    expires_at: Option<String>,
}

fn settings_view(s: &Settings) -> ApiResult<SettingsView> {
    let custom_fields = s
        .custom_fields
        .iter()
        .map(|f| {
            Ok(wire::CustomField {
                name: f.name.clone(),
                kind: wire_enum(&f.kind)?,
                required: f.required,
                label: f.label.clone(),
            })
        })
        .collect::<ApiResult<_>>()?;
    Ok(SettingsView {
        currency: s.currency.clone(),
        title: s.title.clone(),
        description: s.description.clone(),
        allowed_methods: s.allowed_methods.iter().map(|m| wire_enum(m)).collect::<ApiResult<_>>()?,
        allowed_crypto_assets: s
            .allowed_crypto_assets
            .as_ref()
            .map(|assets| assets.iter().map(|a| wire_enum(a)).collect::<ApiResult<_>>())
            .transpose()?,
        custom_fields,
        branding: wire::Branding {
            logo_url: s.branding.logo_url.clone(),
            accent_color: s.branding.accent_color.clone(),
            business_name: s.branding.business_name.clone(),
        },
        redirect_url: s.redirect_url.clone(),
        metadata: serde_json::from_str(&s.metadata).unwrap_or_default(),
        expires_at: s.expires_at.map(timestamp),
    })
}

/// A page as every response shows it, with its payments so far.
pub(crate) fn render_page(
    deps: &Deps<'_>,
    snapshot: &Snapshot,
    page: &PaymentPage,
    now: i64,
) -> ApiResult<sika_api::payment_pages::PaymentPage> {
    let (status, count, total) = page_state(snapshot, page, now)?;
    let currency = &page.settings.currency;
    let s = settings_view(&page.settings)?;
    Ok(sika_api::payment_pages::PaymentPage {
        id: page.id.clone(),
        url: hosted_url(deps, &page.id),
        amount: page.amount.map(|a| amount(currency, a)),
        currency: s.currency,
        title: s.title,
        description: s.description,
        status,
        allowed_methods: s.allowed_methods,
        allowed_crypto_assets: s.allowed_crypto_assets,
        custom_fields: s.custom_fields,
        branding: s.branding,
        redirect_url: s.redirect_url,
        metadata: s.metadata,
        expires_at: s.expires_at,
        payment_count: count,
        total_collected: amount(currency, total),
        closed_at: page.closed_at.map(timestamp),
        created_at: timestamp(page.created_at),
        // A page closes by itself at its expiry; that change moves `updatedAt` too.
        updated_at: timestamp(
            page.settings
                .expires_at
                .filter(|at| now > *at)
                .map_or(page.updated_at, |at| at.max(page.updated_at)),
        ),
    })
}

/// A session as a link's `sessions` and the hosted page's script show it.
pub(crate) fn render_session(view: &SessionView) -> ApiResult<wire_links::CheckoutSession> {
    let s = &view.session;
    let instructions = s
        .instructions
        .as_ref()
        .map(|i| {
            let mut map = serde_json::Map::new();
            map.insert("type".into(), json!(i.kind));
            for (k, v) in &i.fields {
                map.insert(k.clone(), json!(v));
            }
            serde_json::from_value(Value::Object(map)).map_err(|e| ApiError::internal_from(e))
        })
        .transpose()?;
    Ok(wire_links::CheckoutSession {
        id: s.id.clone(),
        payment_link_id: s.link.clone(),
        status: view.status,
        status_message: view.status_message.clone(),
        method: wire_enum(&s.method)?,
        code: s.code.clone(),
        chain: s.chain.clone(),
        origin_amount: amount(&s.origin_currency, s.origin_amount),
        origin_currency: s.origin_currency.clone(),
        destination_amount: amount(&s.destination_currency, s.destination_amount),
        destination_currency: s.destination_currency.clone(),
        refunded_amount: amount(&s.destination_currency, view.refunded_minor),
        rate: s.rate.clone(),
        collection_id: s.collection.clone(),
        instructions,
        expires_at: timestamp(s.expires_at),
        created_at: timestamp(s.created_at),
    })
}

/// A link as every response shows it; `sessions` are given to a single
/// link's answer (list items go without).
pub(crate) fn render_link(
    deps: &Deps<'_>,
    link: &PaymentLink,
    state: &LinkState,
    sessions: Option<&[SessionView]>,
) -> ApiResult<wire_links::PaymentLink> {
    let currency = &link.settings.currency;
    let s = settings_view(&link.settings)?;
    let sessions = sessions.map(|all| all.iter().map(render_session).collect()).transpose()?;
    Ok(wire_links::PaymentLink {
        id: link.id.clone(),
        url: hosted_url(deps, &link.id),
        parent_type: link.page.as_ref().map(|_| wire_links::PaymentLinkParentType::PaymentPage),
        parent_id: link.page.clone(),
        email: link.email.clone(),
        amount: state.amount.map(|a| amount(currency, a)),
        currency: s.currency,
        title: s.title,
        description: s.description,
        status: state.status,
        status_message: state.status_message.clone(),
        total_received: amount(currency, state.total_received),
        remaining: state.remaining.map(|a| amount(currency, a)),
        overpayment_amount: state.overpayment.map(|a| amount(currency, a)),
        allowed_methods: s.allowed_methods,
        allowed_crypto_assets: s.allowed_crypto_assets,
        custom_fields: s.custom_fields,
        branding: s.branding,
        redirect_url: s.redirect_url,
        metadata: s.metadata,
        expires_at: s.expires_at,
        customer_reference: link.customer_reference.clone(),
        custom_field_values: link.custom_values.iter().cloned().collect(),
        closed_at: link.closed_at.map(timestamp),
        created_at: timestamp(link.created_at),
        updated_at: timestamp(state.updated_at),
        sessions,
    })
}

/// What the hosted page's script sees of a link: no merchant metadata.
pub(crate) fn render_public_link(link: &PaymentLink, state: &LinkState) -> Value {
    let currency = &link.settings.currency;
    json!({
        "id": link.id,
        "status": state.status,
        "statusMessage": state.status_message,
        "amount": state.amount.map(|a| amount(currency, a)),
        "currency": currency,
        "totalReceived": amount(currency, state.total_received),
        "remaining": state.remaining.map(|a| amount(currency, a)),
        "redirectUrl": link.settings.redirect_url,
    })
}

/// Stores a new page or link, listed under its organization.
pub(crate) async fn store_new<T: Serialize>(
    deps: &Deps<'_>,
    collection: &str,
    id: &str,
    organization: &str,
    value: &T,
) -> ApiResult<()> {
    let documents =
        vec![crate::store::documents::document(collection, id, value, Some((organization, collection)))];
    deps.engine.execute(sika_engine::Command::PutDocuments { documents }).await?;
    Ok(())
}

/// Closes a page (`collection` `PAGES`) or a link (`LINKS`), idempotently.
/// A paid link cannot be closed. An id of the other kind is not found: the
/// pages path never closes a link, nor the links path a page.
pub(crate) async fn close(deps: &Deps<'_>, collection: &str, organization: &str, id: &str) -> ApiResult<()> {
    let what = if collection == PAGES { "payment page" } else { "payment link" };
    let missing = || ApiError::not_found(format!("{what} '{id}' not found"));
    for _ in 0..5 {
        let snapshot = deps.engine.read()?;
        let now = deps.now_ms();
        let Some(bytes) = snapshot.document(collection, id)? else { return Err(missing()) };
        let body = if collection == PAGES {
            let mut page: PaymentPage = decode(&bytes)?;
            if page.organization != organization {
                return Err(missing());
            }
            if page.closed_at.is_some() {
                return Ok(());
            }
            page.closed_at = Some(now);
            page.updated_at = now;
            encode(&page)
        } else {
            let mut link: PaymentLink = decode(&bytes)?;
            if link.organization != organization {
                return Err(missing());
            }
            if link.closed_at.is_some() {
                return Ok(());
            }
            if link_state(&snapshot, &link, now)?.status == PaymentLinkStatus::Paid {
                return Err(ApiError::bad_request(format!(
                    "payment link '{id}' is paid and cannot be closed"
                )));
            }
            link.closed_at = Some(now);
            link.updated_at = now;
            encode(&link)
        };
        let command = sika_engine::Command::Save {
            expect: vec![sika_engine::Expected::unchanged(collection, id, &bytes)],
            documents: vec![sika_engine::Document {
                collection: collection.into(),
                id: id.into(),
                body,
                list: None,
            }],
            events: Vec::new(),
        };
        match deps.engine.execute(command).await {
            Ok(_) => return Ok(()),
            Err(sika_engine::EngineError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    // Five writers in a row changed it under us.
    Err(sika_engine::EngineError::Conflict(format!("{what} '{id}'")).into())
}

/// The session `id` of `organization` and how it reads now (`complete`
/// for the payment that paid its link), for a refund by session; `None`
/// for an id it does not own.
pub(crate) fn owned_session(
    snapshot: &Snapshot,
    organization: &str,
    id: &str,
    now: i64,
) -> ApiResult<Option<(Session, CheckoutSessionStatus)>> {
    let Some(session) = load::<Session>(snapshot, SESSIONS, id)?.filter(|s| s.organization == organization)
    else {
        return Ok(None);
    };
    let Some(link) = load_link(snapshot, &session.link)? else {
        return Err(ApiError::internal_from(format!("session {id} names a missing link")));
    };
    let state = link_state(snapshot, &link, now)?;
    let view = session_view(snapshot, session, &state)?;
    Ok(Some((view.session, view.status)))
}

/// The checkout session a payment came through, if any: a session's
/// collection quotes the session's id as its reference, and the session
/// names the collection back (a merchant's own collection may quote
/// anything, so both must agree).
pub(crate) fn session_of_payment(
    snapshot: &Snapshot,
    collection: &CollectionRecord,
) -> ApiResult<Option<String>> {
    if !collection.external_reference.starts_with("cs_") {
        return Ok(None);
    }
    let session = load::<Session>(snapshot, SESSIONS, &collection.external_reference)?;
    Ok(session
        .filter(|s| s.collection == collection.id && s.organization == collection.organization)
        .map(|s| s.id))
}
