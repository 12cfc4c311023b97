//! The operator's reconciliation with the provider connector: for a period,
//! every live payout and collection on the provider's rail that Sika
//! created, against every transfer and charge the provider lists, paired by
//! Sika's id (which each transfer and charge carries as its reference).
//!
//! Both of the provider's lists are read in full before anything is
//! compared: a page that cannot be read fails the whole reconciliation
//! (`503 unavailable`), never a part presented as the whole. A pair is
//! compared on amount, currency, status (the provider's mapped to Sika's
//! words, as the reconciler maps it) and kind; a pair that agrees is
//! counted, one that differs is listed once per field and not counted.
//!
//! A pair is formed whichever side is in the period: a transfer the
//! provider created just after the period's end for a payout Sika created
//! just before it is one pair, not two halves missing, because each side
//! looks the other up by reference outside the period too. A payout or
//! collection that failed without ever reaching the provider is no
//! discrepancy: nothing moved on either side.

use std::collections::{HashMap, HashSet};

use rust_decimal::Decimal;
use sika_api::ErrorCode;
use sika_api::reconciliation::{
    Mismatch, ReconciledField, ReconciledKind, Reconciliation, ReconciliationItem, ReconciliationQuery,
};
use sika_engine::movements::{CollectionRecord, PayoutRecord, TimelineEntry};
use sika_engine::{CollectionId, Currency, Engine, MovementStatus, PayoutId, Rail, Snapshot};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::rails::{AsyncRail, Kind, Listed, RailError, Status};
use crate::domain::render::{parse_timestamp, timestamp};
use crate::domain::timeline;

/// The longest period one reconciliation covers.
pub(crate) const PERIOD_DAYS_MAX: i64 = 31;
const DAY_MS: i64 = 86_400_000;
/// Payouts or collections read per organization, newest first: past it the
/// reconciliation is refused rather than answered without the older ones.
const SCANNED_PER_ORGANIZATION_MAX: usize = 200_000;
/// Ids read from an organization's list at a time.
const LIST_BATCH: usize = 500;
/// How far past `from` the newest-first read goes before it stops: the
/// order of creation and the clock may disagree by a step of the clock.
const CLOCK_SLACK_MS: i64 = 60_000;

/// What a reconciliation reads: the live ledger, the provider's connector
/// (when one is configured) and the organizations whose movements count.
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    pub rail: Option<&'a dyn AsyncRail>,
    pub organizations: Vec<String>,
}

/// A reconciliation's period, `from` inclusive, `to` exclusive (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Period {
    pub from_ms: i64,
    pub to_ms: i64,
}

impl Period {
    fn holds(&self, at: i64) -> bool {
        self.from_ms <= at && at < self.to_ms
    }
}

/// Reads the period from the query: both date-times required, `to` after
/// `from`, at most [`PERIOD_DAYS_MAX`] days apart.
pub(crate) fn period(query: &ReconciliationQuery) -> ApiResult<Period> {
    let instant = |field: &str, value: &Option<String>| -> ApiResult<i64> {
        let text = value.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let text = text.ok_or_else(|| ApiError::validation(field, "is required (an RFC 3339 date-time)"))?;
        parse_timestamp(text).ok_or_else(|| {
            ApiError::validation(
                field,
                format!("'{text}' is not an RFC 3339 date-time, such as 2026-11-27T00:00:00Z"),
            )
        })
    };
    let from_ms = instant("from", &query.from)?;
    let to_ms = instant("to", &query.to)?;
    if to_ms <= from_ms {
        return Err(ApiError::validation("to", "must be after from"));
    }
    if to_ms - from_ms > PERIOD_DAYS_MAX * DAY_MS {
        return Err(ApiError::validation("to", format!("must be at most {PERIOD_DAYS_MAX} days after from"))
            .with_detail("limitDays", PERIOD_DAYS_MAX));
    }
    Ok(Period { from_ms, to_ms })
}

/// One side's view of a movement, in the terms both are compared in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Side {
    kind: ReconciledKind,
    currency: String,
    /// In major units; `None` when the provider's cannot be read.
    amount: Option<Decimal>,
    status: &'static str,
    /// The provider's id (the provider's side only).
    provider_id: Option<String>,
    /// Whether the provider took it: always on the provider's side; on
    /// Sika's, whether its timeline records the hand-over.
    sent: bool,
    created_at: Option<i64>,
}

/// Compares what the provider reports for the period with Sika's
/// movements: see the module's documentation.
pub(crate) async fn reconcile(deps: Deps<'_>, query: &ReconciliationQuery) -> ApiResult<Reconciliation> {
    let period = period(query)?;
    let rail = deps.rail.ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidState,
            "no provider connector is configured on the live stack ([rails.flutterwave]): there is nothing to reconcile with",
        )
    })?;
    let transfers = listed(rail, Kind::Payout, period).await?;
    let charges = listed(rail, Kind::Collection, period).await?;
    let snapshot = deps.engine.read()?;
    let sika = sika_side(&snapshot, &deps.organizations, period, rail.name())?;
    let provider = provider_side(transfers.into_iter().chain(charges));
    let mut answer = Reconciliation {
        from: timestamp(period.from_ms),
        to: timestamp(period.to_ms),
        matched: 0,
        missing_at_provider: Vec::new(),
        missing_in_sika: Vec::new(),
        mismatched: Vec::new(),
    };
    let mut paired: HashSet<&str> = HashSet::new();
    for (id, ours) in &sika {
        match provider.get(id.as_str()) {
            Some(theirs) => {
                paired.insert(id.as_str());
                compare(&mut answer, id, ours, theirs);
            }
            // Failed before the provider ever took it: nothing moved.
            None if ours.status == MovementStatus::Failed.name() && !ours.sent => {}
            None => answer.missing_at_provider.push(item(id, ours)),
        }
    }
    for (reference, theirs) in &provider {
        if paired.contains(reference.as_str()) || !theirs.created_at.is_none_or(|at| period.holds(at)) {
            continue;
        }
        // Created by Sika outside the period (the provider's clock put it
        // inside): still a pair.
        match sika_movement(&snapshot, reference, rail.name())? {
            Some(ours) => compare(&mut answer, reference, &ours, theirs),
            None => answer.missing_in_sika.push(item(reference, theirs)),
        }
    }
    answer.missing_at_provider.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    answer.missing_in_sika.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    answer.mismatched.sort_by(|a, b| (&a.id, a.field as u8).cmp(&(&b.id, b.field as u8)));
    Ok(answer)
}

/// Every transfer or charge the provider lists, or `503` saying which list
/// could not be read.
async fn listed(rail: &dyn AsyncRail, kind: Kind, period: Period) -> ApiResult<Vec<Listed>> {
    let what = if kind == Kind::Payout { "transfers" } else { "charges" };
    rail.list(kind, period.from_ms, period.to_ms).await.map_err(|error| {
        let why = match error {
            RailError::Transient(why) | RailError::Refused(why) => why,
            RailError::Duplicate => "an unexpected answer".to_string(),
        };
        ApiError::unavailable_because(format!(
            "cannot read {}'s {what}: {why}; nothing was reconciled, try again later",
            rail.name()
        ))
        .with_detail("provider", rail.name())
        .with_detail("reason", why)
    })
}

/// The provider's transfers and charges by reference (its id when it shows
/// none). A reference listed twice keeps its first listing.
fn provider_side(listed: impl Iterator<Item = Listed>) -> HashMap<String, Side> {
    let mut sides = HashMap::new();
    for item in listed {
        let key = if item.reference.is_empty() { item.provider_id.clone() } else { item.reference.clone() };
        let kind =
            if item.kind == Kind::Payout { ReconciledKind::Payout } else { ReconciledKind::Collection };
        sides.entry(key).or_insert(Side {
            kind,
            currency: item.currency,
            amount: item.amount,
            status: status_word(item.status),
            provider_id: Some(item.provider_id),
            sent: true,
            created_at: item.created_at,
        });
    }
    sides
}

/// The provider's status in Sika's words.
fn status_word(status: Status) -> &'static str {
    match status {
        Status::Pending => MovementStatus::Pending.name(),
        Status::Succeeded => MovementStatus::Completed.name(),
        Status::Failed => MovementStatus::Failed.name(),
        Status::Reversed => MovementStatus::Reversed.name(),
    }
}

/// Sika's live payouts and collections on the provider's rail created in
/// the period, by id, read newest first per organization.
fn sika_side(
    snapshot: &Snapshot,
    organizations: &[String],
    period: Period,
    provider: &str,
) -> ApiResult<HashMap<String, Side>> {
    let mut sides = HashMap::new();
    for organization in organizations {
        for list in ["payouts", "collections"] {
            let mut before = None;
            let mut scanned = 0usize;
            'list: loop {
                let batch = snapshot.list(organization, list, before, LIST_BATCH)?;
                for (position, id) in &batch {
                    before = Some(*position);
                    scanned += 1;
                    let Some((created_at, side)) = movement(snapshot, id, provider)? else { continue };
                    // Every rail's movements count here, so that a long
                    // history of the operator's stops the read as soon.
                    if created_at < period.from_ms.saturating_sub(CLOCK_SLACK_MS) {
                        break 'list;
                    }
                    if let Some(side) = side.filter(|_| period.holds(created_at)) {
                        sides.insert(id.clone(), side);
                    }
                }
                if batch.len() < LIST_BATCH {
                    break;
                }
                if scanned >= SCANNED_PER_ORGANIZATION_MAX {
                    return Err(ApiError::validation(
                        "from",
                        format!(
                            "organization {organization} has more than {SCANNED_PER_ORGANIZATION_MAX} {list} since from; choose a shorter period"
                        ),
                    ));
                }
            }
        }
    }
    Ok(sides)
}

/// Sika's live payout or collection `id` on the provider's rail, in the
/// terms it is compared in; `None` for any other id.
fn sika_movement(snapshot: &Snapshot, id: &str, provider: &str) -> ApiResult<Option<Side>> {
    Ok(movement(snapshot, id, provider)?.and_then(|(_, side)| side))
}

/// Payout or collection `id`: when it was created, and its side when it is
/// on the provider's rail.
fn movement(snapshot: &Snapshot, id: &str, provider: &str) -> ApiResult<Option<(i64, Option<Side>)>> {
    let sent = |timeline: &[TimelineEntry]| timeline.iter().any(|t| timeline::sent_to(&t.fact, provider));
    if let Some(payout) = snapshot.payout(&PayoutId::named(id))? {
        let side = on_rail(&payout.rail).then(|| payout_side(&payout, sent(&payout.timeline))).transpose()?;
        return Ok(Some((payout.created_at, side)));
    }
    if let Some(collection) = snapshot.collection(&CollectionId::named(id))? {
        let side = on_rail(&collection.rail)
            .then(|| collection_side(&collection, sent(&collection.timeline)))
            .transpose()?;
        return Ok(Some((collection.created_at, side)));
    }
    Ok(None)
}

fn on_rail(rail: &str) -> bool {
    Rail::from_name(rail) == Some(Rail::Flutterwave)
}

fn payout_side(payout: &PayoutRecord, sent: bool) -> ApiResult<Side> {
    Ok(Side {
        kind: ReconciledKind::Payout,
        currency: payout.to_currency.clone(),
        amount: Some(major(&payout.to_currency, payout.to_amount)?),
        status: payout.status.name(),
        provider_id: None,
        sent,
        created_at: Some(payout.created_at),
    })
}

fn collection_side(collection: &CollectionRecord, sent: bool) -> ApiResult<Side> {
    Ok(Side {
        kind: ReconciledKind::Collection,
        currency: collection.currency.clone(),
        amount: Some(major(&collection.currency, collection.amount)?),
        status: collection.status.name(),
        provider_id: None,
        sent,
        created_at: Some(collection.created_at),
    })
}

fn major(currency: &str, minor: i128) -> ApiResult<Decimal> {
    Currency::find(currency).and_then(|c| c.to_decimal(minor)).map_err(|e| ApiError::internal_from(e))
}

/// Adds a pair to the answer: counted when every field agrees, otherwise
/// one mismatch per differing field.
fn compare(answer: &mut Reconciliation, id: &str, ours: &Side, theirs: &Side) {
    let mut differences = Vec::new();
    if ours.kind != theirs.kind {
        differences.push((ReconciledField::Kind, kind_word(ours.kind), kind_word(theirs.kind)));
    }
    if !ours.currency.eq_ignore_ascii_case(&theirs.currency) {
        differences.push((ReconciledField::Currency, ours.currency.clone(), theirs.currency.clone()));
    }
    if ours.amount != theirs.amount {
        differences.push((
            ReconciledField::Amount,
            amount_text(&ours.currency, ours.amount),
            amount_text(&theirs.currency, theirs.amount),
        ));
    }
    if ours.status != theirs.status {
        differences.push((ReconciledField::Status, ours.status.to_string(), theirs.status.to_string()));
    }
    if differences.is_empty() {
        answer.matched = answer.matched.saturating_add(1);
    }
    answer.mismatched.extend(differences.into_iter().map(|(field, sika, provider)| Mismatch {
        id: id.to_string(),
        field,
        sika,
        provider,
    }));
}

fn kind_word(kind: ReconciledKind) -> String {
    match kind {
        ReconciledKind::Payout => "payout",
        ReconciledKind::Collection => "collection",
    }
    .to_string()
}

/// An amount with its currency's digits (`"10.50"`), as it stands when the
/// currency is not one Sika knows, `"unreadable"` when there is none.
fn amount_text(currency: &str, amount: Option<Decimal>) -> String {
    let Some(amount) = amount else { return "unreadable".to_string() };
    match Currency::find(&currency.to_ascii_uppercase()) {
        Ok(currency) => match currency.from_decimal(amount, true) {
            Ok(minor) => currency.format(minor),
            Err(_) => amount.normalize().to_string(),
        },
        Err(_) => amount.normalize().to_string(),
    }
}

/// A movement only one side shows.
fn item(id: &str, side: &Side) -> ReconciliationItem {
    ReconciliationItem {
        id: id.to_string(),
        kind: side.kind,
        amount: amount_text(&side.currency, side.amount),
        currency: side.currency.clone(),
        status: side.status.to_string(),
        provider_id: side.provider_id.clone().filter(|p| !p.is_empty()),
        created_at: side.created_at.map(timestamp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(from: Option<&str>, to: Option<&str>) -> ReconciliationQuery {
        ReconciliationQuery { from: from.map(str::to_string), to: to.map(str::to_string) }
    }

    fn field_of(error: ApiError) -> String {
        error
            .details
            .and_then(|d| d.get("field").and_then(|f| f.as_str().map(str::to_string)))
            .unwrap_or_default()
    }

    #[test]
    fn a_period_needs_two_date_times_in_order_and_at_most_31_days() {
        let ok = period(&query(Some("2026-11-01T00:00:00Z"), Some("2026-11-02T00:00:00Z"))).unwrap();
        assert_eq!(ok.to_ms - ok.from_ms, DAY_MS);
        assert_eq!(field_of(period(&query(None, Some("2026-11-02T00:00:00Z"))).unwrap_err()), "from");
        assert_eq!(
            field_of(period(&query(Some("2026-11-01"), Some("2026-11-02T00:00:00Z"))).unwrap_err()),
            "from"
        );
        assert_eq!(field_of(period(&query(Some("2026-11-01T00:00:00Z"), None)).unwrap_err()), "to");
        let backwards = query(Some("2026-11-02T00:00:00Z"), Some("2026-11-01T00:00:00Z"));
        assert_eq!(field_of(period(&backwards).unwrap_err()), "to");
        let long = query(Some("2026-10-01T00:00:00Z"), Some("2026-11-02T00:00:00Z"));
        assert_eq!(field_of(period(&long).unwrap_err()), "to");
        assert!(
            period(&query(Some("2026-10-01T00:00:00Z"), Some("2026-11-01T00:00:00Z"))).is_ok(),
            "31 days"
        );
    }

    fn side(amount: &str, status: &'static str) -> Side {
        Side {
            kind: ReconciledKind::Payout,
            currency: "GHS".into(),
            amount: Some(amount.parse().unwrap()),
            status,
            provider_id: Some("400001".into()),
            sent: true,
            created_at: Some(0),
        }
    }

    #[test]
    fn a_pair_that_differs_is_listed_per_field_and_not_counted() {
        let mut answer = Reconciliation {
            from: String::new(),
            to: String::new(),
            matched: 0,
            missing_at_provider: vec![],
            missing_in_sika: vec![],
            mismatched: vec![],
        };
        compare(&mut answer, "pay_1", &side("10.5", "completed"), &side("10.50", "completed"));
        assert_eq!(answer.matched, 1, "10.5 and 10.50 are one amount");
        compare(&mut answer, "pay_2", &side("10.00", "completed"), &side("12", "pending"));
        assert_eq!(answer.matched, 1);
        let fields: Vec<_> =
            answer.mismatched.iter().map(|m| (m.field, m.sika.as_str(), m.provider.as_str())).collect();
        assert_eq!(
            fields,
            [(ReconciledField::Amount, "10.00", "12.00"), (ReconciledField::Status, "completed", "pending")]
        );
    }
}
