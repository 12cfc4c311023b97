//! Hosted checkout: payment pages, payment links and checkout sessions.
//!
//! A page is a reusable checkout; each payer who starts paying on it gets a
//! child link. A link is one customer's charge; every attempt to pay it is a
//! checkout session, and every session is a collection on the ledger (the
//! same path and events as `POST /v1/collections`). A link's totals and
//! state are derived from its sessions' collections when read, so they can
//! never drift from the ledger.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sika_api::checkout::{self as wire, CryptoAsset, PaymentMethodKind};
use sika_api::payment_links::{self as links, CheckoutSessionStatus, PaymentLinkStatus};
use sika_api::payment_pages::PaymentPageStatus;
use sika_engine::Snapshot;
use sika_engine::movements::{CollectionRecord, MovementStatus};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::{amount, timestamp, wire_enum};
use crate::domain::stack::Stack;
use crate::store::documents::{decode, encode, load};

pub(crate) mod pay;
pub(crate) mod requests;

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

/// A session with its collection, as of one read.
pub(crate) struct SessionView {
    pub session: Session,
    pub collection: Option<CollectionRecord>,
    pub status: CheckoutSessionStatus,
    pub status_message: String,
}

impl SessionView {
    /// Whether this attempt's money arrived (`complete` or `partial`).
    pub(crate) fn received(&self) -> bool {
        self.collection.as_ref().is_some_and(|c| c.status == MovementStatus::Completed)
    }
}

/// A link's derived state.
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
    /// Newest first.
    pub sessions: Vec<SessionView>,
}

impl LinkState {
    /// Payments received: sessions whose money arrived.
    pub(crate) fn payments(&self) -> usize {
        self.sessions.iter().filter(|s| s.received()).count()
    }
}

pub(crate) fn load_page(snapshot: &Snapshot, id: &str) -> ApiResult<Option<PaymentPage>> {
    Ok(load(snapshot, PAGES, id)?)
}

pub(crate) fn load_link(snapshot: &Snapshot, id: &str) -> ApiResult<Option<PaymentLink>> {
    Ok(load(snapshot, LINKS, id)?)
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

pub(crate) fn sessions_of(snapshot: &Snapshot, link_id: &str) -> ApiResult<Vec<SessionView>> {
    let mut out = Vec::new();
    for id in all_listed(snapshot, link_id, LINK_SESSIONS)? {
        let Some(session) = load::<Session>(snapshot, SESSIONS, &id)? else { continue };
        let collection = snapshot.collection(&session.collection)?;
        let (status, message) = match &collection {
            Some(c) if c.status == MovementStatus::Completed => {
                (CheckoutSessionStatus::Complete, c.status_message.clone())
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
        out.push(SessionView { session, collection, status, status_message: message });
    }
    Ok(out)
}

pub(crate) fn link_state(snapshot: &Snapshot, link: &PaymentLink, now: i64) -> ApiResult<LinkState> {
    let mut sessions = sessions_of(snapshot, &link.id)?;
    // Money that arrived, in the order it arrived.
    let mut arrivals: Vec<(i64, i64, usize)> = sessions
        .iter()
        .enumerate()
        .filter(|(_, s)| s.received())
        .map(|(i, s)| {
            let at = s.collection.as_ref().and_then(|c| c.completed_at).unwrap_or(s.session.created_at);
            (at, s.session.created_at, i)
        })
        .collect();
    arrivals.sort();
    let total_received: i128 = arrivals.iter().map(|(_, _, i)| sessions[*i].session.destination_amount).sum();
    // An open amount is the payer's: their first payment, or else what they last tried.
    let amount = link
        .amount
        .or_else(|| arrivals.first().map(|(_, _, i)| sessions[*i].session.destination_amount))
        .or_else(|| sessions.first().map(|s| s.session.destination_amount));
    // Exactly one session completes a paid link: the one whose money
    // brought `remaining` to zero. Other payments are `partial`.
    let mut running = 0;
    let mut completer = None;
    for (_, _, i) in &arrivals {
        running += sessions[*i].session.destination_amount;
        if completer.is_none() && amount.is_some_and(|a| running >= a) {
            completer = Some(*i);
        }
    }
    for (_, _, i) in &arrivals {
        if Some(*i) != completer {
            sessions[*i].status = CheckoutSessionStatus::Partial;
        }
    }
    let remaining = amount.map(|a| (a - total_received).max(0));
    let overpayment = amount.filter(|a| total_received > *a).map(|a| total_received - a);
    let currency = &link.settings.currency;
    let (status, status_message) = if total_received > 0 && remaining == Some(0) {
        (
            PaymentLinkStatus::Paid,
            format!("Paid: {} {currency} received", crate::domain::render::amount(currency, total_received)),
        )
    } else if link.closed_at.is_some() {
        (PaymentLinkStatus::Closed, "Closed by the merchant".to_string())
    } else if link.settings.expires_at.is_some_and(|at| now > at) {
        (PaymentLinkStatus::Expired, "The payment window has ended".to_string())
    } else if total_received > 0 {
        (
            PaymentLinkStatus::Active,
            format!(
                "Partially paid: {} of {} {currency} received",
                crate::domain::render::amount(currency, total_received),
                crate::domain::render::amount(currency, amount.unwrap_or(0)),
            ),
        )
    } else {
        (PaymentLinkStatus::Active, "Awaiting payment".to_string())
    };
    let last_arrival = arrivals.last().map(|(at, _, _)| *at);
    let expired_at = link.settings.expires_at.filter(|_| status == PaymentLinkStatus::Expired);
    let updated_at =
        [Some(link.updated_at), last_arrival, expired_at].into_iter().flatten().max().unwrap_or(0);
    Ok(LinkState {
        status,
        status_message,
        amount,
        total_received,
        remaining,
        overpayment,
        updated_at,
        sessions,
    })
}

/// A page's state: (status, paymentCount, totalCollected).
pub(crate) fn page_state(
    snapshot: &Snapshot,
    page: &PaymentPage,
    now: i64,
) -> ApiResult<(PaymentPageStatus, usize, i128)> {
    let mut count = 0;
    let mut total = 0;
    for id in all_listed(snapshot, &page.id, PAGE_LINKS)? {
        if let Some(link) = load_link(snapshot, &id)? {
            let state = link_state(snapshot, &link, now)?;
            count += state.payments();
            total += state.total_received;
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

/// The completed collections paid through payment link `link_id` of
/// `organization`, oldest first; `None` when the organization has no such link.
pub(crate) fn link_payments(
    snapshot: &Snapshot,
    organization: &str,
    link_id: &str,
) -> ApiResult<Option<Vec<CollectionRecord>>> {
    let Some(link) = load_link(snapshot, link_id)?.filter(|l| l.organization == organization) else {
        return Ok(None);
    };
    let mut paid: Vec<CollectionRecord> = sessions_of(snapshot, &link.id)?
        .into_iter()
        .filter(|s| s.received())
        .filter_map(|s| s.collection)
        .collect();
    paid.sort_by_key(|c| (c.completed_at, c.created_at));
    Ok(Some(paid))
}

/// The hosted checkout address of a page or link on this stack's listener.
pub(crate) fn hosted_url(stack: &Stack, id: &str) -> String {
    let config = &stack.config;
    let (public, addr) = match stack.kind {
        crate::domain::stack::StackKind::Live => (&config.live_public_url, config.live_addr),
        crate::domain::stack::StackKind::Sandbox => (&config.sandbox_public_url, config.sandbox_addr),
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
    stack: &Stack,
    snapshot: &Snapshot,
    page: &PaymentPage,
    now: i64,
) -> ApiResult<sika_api::payment_pages::PaymentPage> {
    let (status, count, total) = page_state(snapshot, page, now)?;
    let currency = &page.settings.currency;
    let s = settings_view(&page.settings)?;
    Ok(sika_api::payment_pages::PaymentPage {
        id: page.id.clone(),
        url: hosted_url(stack, &page.id),
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
        payment_count: count as u64,
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
pub(crate) fn render_session(view: &SessionView) -> ApiResult<links::CheckoutSession> {
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
            serde_json::from_value(Value::Object(map)).map_err(|_| ApiError::internal())
        })
        .transpose()?;
    Ok(links::CheckoutSession {
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
        rate: s.rate.clone(),
        collection_id: s.collection.clone(),
        instructions,
        expires_at: timestamp(s.expires_at),
        created_at: timestamp(s.created_at),
    })
}

/// A link as every response shows it; `with_sessions` adds its sessions,
/// as a single link's answer does (list items go without).
pub(crate) fn render_link(
    stack: &Stack,
    link: &PaymentLink,
    state: &LinkState,
    with_sessions: bool,
) -> ApiResult<links::PaymentLink> {
    let currency = &link.settings.currency;
    let s = settings_view(&link.settings)?;
    let sessions = with_sessions.then(|| state.sessions.iter().map(render_session).collect()).transpose()?;
    Ok(links::PaymentLink {
        id: link.id.clone(),
        url: hosted_url(stack, &link.id),
        parent_type: link.page.as_ref().map(|_| links::PaymentLinkParentType::PaymentPage),
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
    stack: &Stack,
    collection: &str,
    id: &str,
    organization: &str,
    value: &T,
) -> ApiResult<()> {
    let documents =
        vec![crate::store::documents::document(collection, id, value, Some((organization, collection)))];
    stack.engine.execute(sika_engine::Command::PutDocuments { documents }).await?;
    Ok(())
}

/// Closes a page (`collection` `PAGES`) or a link (`LINKS`), idempotently.
/// A paid link cannot be closed. An id of the other kind is not found: the
/// pages path never closes a link, nor the links path a page.
pub(crate) async fn close(stack: &Stack, collection: &str, organization: &str, id: &str) -> ApiResult<()> {
    let what = if collection == PAGES { "payment page" } else { "payment link" };
    let missing = || ApiError::not_found(format!("{what} '{id}' not found"));
    for _ in 0..5 {
        let snapshot = stack.engine.read()?;
        let now = stack.now_ms();
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
        match stack.engine.execute(command).await {
            Ok(_) => return Ok(()),
            Err(sika_engine::EngineError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    // Five writers in a row changed it under us.
    Err(sika_engine::EngineError::Conflict(format!("{what} '{id}'")).into())
}
