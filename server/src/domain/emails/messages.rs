//! What each email says. Every message is laid out by the same two
//! templates (`templates/email/message.{txt,html}`, escaped by askama);
//! none carries a secret but the one token it exists to deliver.

use sika_engine::Snapshot;
use sika_engine::records::{CollectionRecord, EventPayload, EventRecord, PayoutRecord};

use super::{Action, Body, Message};
use crate::config::NodeConfig;
use crate::domain::checkout;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::{Identity, Member, Role};
use crate::domain::render::money;
use crate::domain::stack_kind::StackKind;

/// The base address of a stack's listener, where the dashboard and the
/// hosted pages are served: the configured public URL, or the listener.
pub(crate) fn public_base(config: &NodeConfig, kind: StackKind) -> String {
    let (public, addr) = match kind {
        StackKind::Live => (&config.live_public_url, config.live_addr),
        StackKind::Sandbox => (&config.sandbox_public_url, config.sandbox_addr),
    };
    public.clone().unwrap_or_else(|| format!("http://{addr}"))
}

fn date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|at| at.format("%-d %b %Y, %H:%M UTC").to_string())
        .unwrap_or_default()
}

fn organization_name(identity: &Identity, organization: &str) -> String {
    identity.organization(organization).map_or_else(|| organization.to_string(), |o| o.name)
}

/// An invitation to set a password, with the dashboard's link.
pub(crate) fn invitation(
    organization: &str,
    base: &str,
    member: &Member,
    token: &str,
    expires_at: i64,
) -> Message {
    Message {
        kind: "invitation",
        organization: Some(member.organization.clone()),
        to: member.email.clone(),
        body: Body {
            subject: format!("You are invited to {organization} on Sika"),
            title: format!("Join {organization} on Sika"),
            paragraphs: vec![
                format!("Hello {},", member.name),
                format!(
                    "You have been invited to {organization}. Choose a password to accept the invitation."
                ),
            ],
            rows: Vec::new(),
            action: Some(Action {
                label: "Accept the invitation".into(),
                url: format!("{base}/dashboard/invitations/{token}"),
            }),
            notes: vec![format!(
                "The link works until {} and only once. If you did not expect it, ignore this email.",
                date(expires_at)
            )],
        },
    }
}

/// A link to set a new password.
pub(crate) fn password_reset(base: &str, member: &Member, token: &str, expires_at: i64) -> Message {
    Message {
        kind: "password_reset",
        organization: Some(member.organization.clone()),
        to: member.email.clone(),
        body: Body {
            subject: "Reset your Sika password".into(),
            title: "Reset your password".into(),
            paragraphs: vec![
                format!("Hello {},", member.name),
                "Someone asked to reset the password of your Sika account. Choose a new one here:".into(),
            ],
            rows: Vec::new(),
            action: Some(Action {
                label: "Choose a new password".into(),
                url: format!("{base}/dashboard/reset/{token}"),
            }),
            notes: vec![format!(
                "The link works until {} and only once. If you did not ask for it, ignore this email: your password stays as it is.",
                date(expires_at)
            )],
        },
    }
}

/// The owners and admins of an organization, who get its notices.
fn managers(identity: &Identity, organization: &str) -> Vec<Member> {
    identity
        .members_of(organization)
        .into_iter()
        .filter(|m| matches!(m.role, Role::Owner | Role::Admin))
        .collect()
}

fn notice_to(identity: &Identity, organization: &str, kind: &'static str, body: &Body) -> Vec<Message> {
    managers(identity, organization)
        .into_iter()
        .map(|member| Message {
            kind,
            organization: Some(organization.to_string()),
            to: member.email,
            body: body.clone(),
        })
        .collect()
}

fn payout_body(base: &str, payout: &PayoutRecord, failed: bool, stack: StackKind) -> Body {
    let (word, what) = if failed {
        ("failed", "The amount and its fee are back on your balance.")
    } else {
        (
            "was reversed",
            "The rail reversed it after it completed; the amount is back on your balance (the fee is kept).",
        )
    };
    let mut rows = vec![
        ("Payout".to_string(), payout.id.clone()),
        ("Amount".to_string(), money(&payout.from_currency, payout.from_amount)),
        ("Reference".to_string(), payout.external_reference.clone()),
        ("Date".to_string(), date(payout.updated_at)),
    ];
    if !payout.status_message.is_empty() {
        rows.push(("Reason".to_string(), payout.status_message.clone()));
    }
    Body {
        subject: format!(
            "{}A payout {word}: {}",
            test_mode(stack),
            money(&payout.from_currency, payout.from_amount)
        ),
        title: format!("A payout {word}"),
        paragraphs: vec![what.to_string()],
        rows,
        action: Some(Action {
            label: "See the payout".into(),
            url: format!("{base}/dashboard/payouts/{}", payout.id),
        }),
        notes: Vec::new(),
    }
}

fn test_mode(stack: StackKind) -> &'static str {
    match stack {
        StackKind::Sandbox => "[Test mode] ",
        StackKind::Live => "",
    }
}

fn dispute_body(base: &str, id: &str, json: &str, stack: StackKind) -> Body {
    let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str).unwrap_or("").to_string();
    let amount = format!("{} {}", text("currency"), text("amount"));
    let mut rows = vec![("Dispute".to_string(), id.to_string()), ("Amount".to_string(), amount.clone())];
    for (label, key) in [("Payment", "collectionId"), ("Payment link", "paymentLinkId"), ("Reason", "reason")]
    {
        let value = text(key);
        if !value.is_empty() {
            rows.push((label.to_string(), value));
        }
    }
    Body {
        subject: format!("{}A dispute was opened: {amount}", test_mode(stack)),
        title: "A payer disputes a payment".into(),
        paragraphs: vec!["A dispute was opened on one of your payments. Its amount is held on your balance until it is resolved.".into()],
        rows,
        action: Some(Action { label: "See the dispute".into(), url: format!("{base}/dashboard/disputes/{id}") }),
        notes: Vec::new(),
    }
}

/// A webhook endpoint the node stopped sending to.
pub(crate) fn endpoint_disabled(
    identity: &Identity,
    base: &str,
    stack: StackKind,
    notice: &crate::domain::webhooks::DisabledNotice,
) -> Vec<Message> {
    let endpoint_id = &notice.endpoint_id;
    let body = Body {
        subject: format!("{}A webhook endpoint was disabled", test_mode(stack)),
        title: "A webhook endpoint was disabled".into(),
        paragraphs: vec![
            "Deliveries to this endpoint failed too many times in a row, so the node stopped sending to it. Events are kept; re-enable the endpoint once it answers.".into(),
        ],
        rows: vec![("Endpoint".into(), endpoint_id.clone()), ("URL".into(), notice.url.clone())],
        action: Some(Action {
            label: "See the endpoint".into(),
            url: format!("{base}/dashboard/webhooks/{endpoint_id}"),
        }),
        notes: Vec::new(),
    };
    notice_to(identity, &notice.organization, "webhook_endpoint_disabled", &body)
}

/// A receipt to the payer of a checkout payment who gave an email.
fn receipt(
    identity: &Identity,
    snapshot: &Snapshot,
    base: &str,
    stack: StackKind,
    collection: &CollectionRecord,
) -> ApiResult<Vec<Message>> {
    let Some(group) = snapshot.collection_group(&collection.id)? else { return Ok(Vec::new()) };
    let Some(link) = checkout::load_link(snapshot, &group.id)? else { return Ok(Vec::new()) };
    let Some(email) = link.email.clone() else { return Ok(Vec::new()) };
    let merchant = if link.settings.branding.business_name.is_empty() {
        organization_name(identity, &link.organization)
    } else {
        link.settings.branding.business_name.clone()
    };
    let amount = money(&collection.currency, collection.amount);
    let body = Body {
        subject: format!("{}Your receipt from {merchant}: {amount}", test_mode(stack)),
        title: format!("You paid {merchant}"),
        paragraphs: vec!["Thank you. Your payment is complete.".into()],
        rows: vec![
            ("Amount paid".into(), amount),
            ("Paid to".into(), merchant),
            ("Date".into(), date(collection.completed_at.unwrap_or(collection.updated_at))),
            ("Reference".into(), collection.external_reference.clone()),
        ],
        action: Some(Action { label: "See the receipt".into(), url: format!("{base}/pay/{}", link.id) }),
        notes: vec!["Keep this email as your record of the payment.".into()],
    };
    Ok(vec![Message { kind: "receipt", organization: Some(link.organization.clone()), to: email, body }])
}

/// The emails one committed event causes. Keyed on the event's name, so a
/// kind added later (`payout.reversed`) is noticed as soon as the engine
/// records it with a payout.
pub(crate) fn for_event(
    identity: &Identity,
    snapshot: &Snapshot,
    base: &str,
    stack: StackKind,
    event: &EventRecord,
) -> ApiResult<Vec<Message>> {
    let organization = event.organization.as_str();
    Ok(match (event.kind.as_str(), &event.payload) {
        ("payout.failed", EventPayload::Payout(payout)) => {
            notice_to(identity, organization, "payout_failed", &payout_body(base, payout, true, stack))
        }
        ("payout.reversed", EventPayload::Payout(payout)) => {
            notice_to(identity, organization, "payout_reversed", &payout_body(base, payout, false, stack))
        }
        ("dispute.created", EventPayload::Rendered { id, json }) => {
            notice_to(identity, organization, "dispute_opened", &dispute_body(base, id, json, stack))
        }
        // A dispute that moves money carries its hold; its document says the rest.
        ("dispute.created", EventPayload::Dispute(money)) => {
            match crate::domain::disputes::event_view(snapshot, money, event)? {
                Some(view) => {
                    let json = serde_json::to_string(&view).map_err(ApiError::internal_from)?;
                    notice_to(
                        identity,
                        organization,
                        "dispute_opened",
                        &dispute_body(base, &money.id, &json, stack),
                    )
                }
                None => Vec::new(),
            }
        }
        ("collection.completed", EventPayload::Collection(collection)) => {
            receipt(identity, snapshot, base, stack, collection)?
        }
        _ => Vec::new(),
    })
}

/// An alert to the operator's address.
pub(crate) fn operator_alert(to: &str, title: &str, paragraphs: Vec<String>) -> Message {
    Message {
        kind: "operator_alert",
        organization: None,
        to: to.to_string(),
        body: Body {
            subject: format!("Sika alert: {title}"),
            title: title.to_string(),
            paragraphs,
            rows: Vec::new(),
            action: None,
            notes: vec![
                "You get this because your address is [email].operator in the node's configuration.".into(),
            ],
        },
    }
}
