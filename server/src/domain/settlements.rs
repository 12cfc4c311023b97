//! The operator settles a movement on the manual rail: completes or fails
//! a pending payout or collection, with an optional provider reference and
//! note that go on its timeline and into the audit log. The admin API's
//! handlers only translate the input and output.

use sika_api::admin::Settlement;
use sika_api::collections::Collection;
use sika_api::payouts::Payout;
use sika_api::refunds::Refund;
use sika_engine::movements::Step;
use sika_engine::{CollectionId, PayoutId};
use sika_engine::{Command, Engine, Outcome};

use crate::domain::attention::Watch;
use crate::domain::error::{ApiError, ApiResult, unexpected};
use crate::domain::render;

const PROVIDER_REFERENCE_CHARS_MAX: usize = 200;
const NOTE_CHARS_MAX: usize = 500;

/// What a settlement changes: the stack's ledger and the operator's count
/// of what waits for them (the webhooks follow the commit,
/// `runtime::effects`).
pub(crate) struct Deps<'a> {
    pub ledger: &'a Engine,
    pub attention: &'a Watch,
}

/// A settled movement's view and what the audit log adds to the action
/// (the provider reference and note, when given).
#[derive(Debug)]
pub(crate) struct Settled<V> {
    pub view: V,
    pub audit: Option<String>,
}

/// Settles the payout `id` as `action` (`complete` or `fail`) says.
pub(crate) async fn settle_payout(
    deps: &Deps<'_>,
    id: &PayoutId,
    action: &str,
    settlement: Settlement,
) -> ApiResult<Settled<Payout>> {
    let advance = |step| Command::AdvancePayout { payout_id: id.clone(), step };
    let (outcome, audit) = settle_movement(deps, action, settlement, advance).await?;
    let Outcome::Payout(payout) = outcome else { return Err(unexpected(&outcome)) };
    Ok(Settled { view: render::payout(&payout, &[]), audit })
}

/// Settles the collection `id` as `action` (`complete` or `fail`) says.
pub(crate) async fn settle_collection(
    deps: &Deps<'_>,
    id: &CollectionId,
    action: &str,
    settlement: Settlement,
) -> ApiResult<Settled<Collection>> {
    let advance = |step| Command::AdvanceCollection { collection_id: id.clone(), step };
    let (outcome, audit) = settle_movement(deps, action, settlement, advance).await?;
    let Outcome::Collection(collection) = outcome else { return Err(unexpected(&outcome)) };
    Ok(Settled { view: render::collection(&collection, &[], 0), audit })
}

/// Settles the refund `id` as `action` (`complete` or `fail`) says: the
/// hold is taken (the money went back to the payer) or released.
pub(crate) async fn settle_refund(
    deps: &Deps<'_>,
    id: &sika_engine::RefundId,
    action: &str,
    settlement: Settlement,
) -> ApiResult<Settled<Refund>> {
    let advance = |step| Command::AdvanceRefund { refund_id: id.clone(), step };
    let (outcome, audit) = settle_movement(deps, action, settlement, advance).await?;
    let Outcome::Refund(refund) = outcome else { return Err(unexpected(&outcome)) };
    Ok(Settled { view: render::refund(&refund, &[]), audit })
}

/// Settles the movement `advance` names as the operator's `action` says:
/// the settlement's provider reference and note go on its timeline first,
/// then it takes the step. Returns the settled movement and what the audit
/// log adds.
async fn settle_movement(
    deps: &Deps<'_>,
    action: &str,
    settlement: Settlement,
    advance: impl Fn(Step) -> Command,
) -> ApiResult<(Outcome, Option<String>)> {
    let step = settle_step(action, settlement.message.clone())?;
    let detail = operator_note(deps.ledger, &settlement, &advance).await?;
    Ok((settle(deps, advance(step)).await?, detail))
}

fn settle_step(action: &str, message: Option<String>) -> ApiResult<Step> {
    let success = match action {
        "complete" => true,
        "fail" => false,
        other => return Err(ApiError::not_found(format!("unknown action '{other}'; use complete or fail"))),
    };
    let message = message.unwrap_or_else(|| {
        if success { "Confirmed by the operator".to_string() } else { "Failed by the operator".to_string() }
    });
    Ok(Step::Operator { success, message })
}

fn already_final(what: &str, status: &str) -> ApiError {
    ApiError::new(sika_api::ErrorCode::InvalidState, format!("the {what} is already {status}"))
}

/// The settlement's provider reference and note, checked, as one line.
fn settlement_detail(settlement: &Settlement) -> ApiResult<Option<String>> {
    let mut parts = Vec::new();
    for (field, value, max, label) in [
        (
            "providerReference",
            &settlement.provider_reference,
            PROVIDER_REFERENCE_CHARS_MAX,
            "provider reference",
        ),
        ("note", &settlement.note, NOTE_CHARS_MAX, "note"),
    ] {
        let Some(value) = value.as_deref().map(str::trim) else { continue };
        if value.is_empty() || value.chars().count() > max || value.chars().any(char::is_control) {
            return Err(ApiError::validation(field, format!("must be 1 to {max} characters, on one line")));
        }
        parts.push(format!("{label}: {value}"));
    }
    Ok((!parts.is_empty()).then(|| parts.join("; ")))
}

/// Puts the settlement's provider reference and note on the movement's
/// timeline (before the settlement, which refuses a final movement anyway)
/// and returns them for the audit log.
async fn operator_note(
    ledger: &Engine,
    settlement: &Settlement,
    command: impl FnOnce(Step) -> Command,
) -> ApiResult<Option<String>> {
    let Some(detail) = settlement_detail(settlement)? else { return Ok(None) };
    let step =
        Step::Note { kind: "operator".into(), title: "Operator settlement".into(), detail: detail.clone() };
    let applied = ledger.execute(command(step)).await?;
    if applied.replayed {
        let (what, status) = match &applied.outcome {
            Outcome::Payout(p) => ("payout", p.status.name()),
            Outcome::Collection(c) => ("collection", c.status.name()),
            Outcome::Refund(r) => ("refund", r.status.name()),
            other => return Err(unexpected(other)),
        };
        return Err(already_final(what, status));
    }
    Ok(Some(detail))
}

/// Applies a settlement; a movement that was already final is `409 invalid_state`.
async fn settle(deps: &Deps<'_>, command: Command) -> ApiResult<Outcome> {
    let applied = deps.ledger.execute(command).await?;
    let (key, status) = match &applied.outcome {
        Outcome::Payout(p) => ("payout", p.status),
        Outcome::Collection(c) => ("collection", c.status),
        Outcome::Refund(r) => ("refund", r.status),
        other => return Err(unexpected(other)),
    };
    if applied.replayed {
        return Err(already_final(key, status.name()));
    }
    deps.attention.invalidate().await;
    Ok(applied.outcome)
}
