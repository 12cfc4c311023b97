//! The model's payouts, collections and orders: the holds they place (the
//! amount and the fee leg), the spend cap they count in, the order's legs,
//! and the jobs they schedule. Checked after every step: each hold is
//! settled (posted or voided) at most once and only by its movement, cap
//! usage equals the sum of the accepted payouts, and every movement's status
//! agrees with the model. A completed payout may be reversed (a rail's
//! `Step::Reverse`, scheduled or sent at any time): its amount comes back to
//! the organization once, its fee stays, and a reversal of a payout that is
//! pending, failed or already reversed changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use sha2::Digest;
use sika_engine::movements::{CapCheck, MovementStatus, NewCollection, NewPayout, ScheduledStep};
use sika_engine::orders::{NewOrder, OrderFunds, OrderStatus};
use sika_engine::{CollectionGroup, Destination, MovementKind, Snapshot, Step};

use super::*;

/// The API key whose spend cap live payouts count in, and its limits in US cents.
const CAP_KEY: &str = "key_model";
const CAP_PER_TRANSACTION: i128 = 300_000;
const CAP_DAILY: i128 = 600_000;
const CAP_MONTHLY: i128 = 1_500_000;
const DAY_MS: i64 = 86_400_000;
const MONTH_MS: i64 = 30 * DAY_MS;

#[derive(Clone, Debug)]
struct PayoutState {
    org: usize,
    cur: usize,
    amount: i128,
    holds: Vec<u64>,
    status: MovementStatus,
    order: Option<String>,
}

#[derive(Clone, Debug)]
struct CollectionState {
    hold: u64,
    status: MovementStatus,
    amount: i128,
    group: Option<CollectionGroup>,
}

/// What a group pays toward when it has a target, in minor units: a few
/// of the usual amounts cover it.
const GROUP_TARGET: i128 = 6_000;

/// A group's tally as the model counts it: by the order completions run.
#[derive(Clone, Debug, Default)]
struct TallyState {
    received: i128,
    count: u64,
    covering: Option<String>,
    latest: Option<String>,
}

#[derive(Clone, Debug)]
struct RefundState {
    collection: String,
    cur: usize,
    amount: i128,
    hold: u64,
    status: MovementStatus,
}

#[derive(Clone, Debug)]
struct OrderState {
    org: usize,
    cur: usize,
    required_confirmations: u32,
    status: OrderStatus,
    payout: Option<String>,
}

#[derive(Clone, Default)]
pub(super) struct Movements {
    payouts: BTreeMap<String, PayoutState>,
    payout_ids: Vec<String>,
    collections: BTreeMap<String, CollectionState>,
    collection_ids: Vec<String>,
    /// Each collection's organization, for refunds of it.
    collection_orgs: BTreeMap<String, usize>,
    /// Each collection's currency, as an index.
    collection_currencies: BTreeMap<String, usize>,
    /// Every group a collection was created in, and its tally.
    tallies: BTreeMap<String, TallyState>,
    orders: BTreeMap<String, OrderState>,
    order_ids: Vec<String>,
    refunds: BTreeMap<String, RefundState>,
    refund_ids: Vec<String>,
    /// Per payment (collection): what its refunds not failed hold back,
    /// and how many refunds were made of it.
    refunded: BTreeMap<String, (i128, u64)>,
    /// Scheduled jobs by due time (each due time is given to one job only,
    /// so the order the engine runs them in is known), as the command each runs.
    jobs: BTreeMap<i64, Command>,
    /// The latest due time given to a job.
    last_due: i64,
    /// Jobs already run, by key: running one again does nothing.
    jobs_run: BTreeSet<Vec<u8>>,
    /// Cap usage per window (`d<day>`, `m<month>`), in US cents.
    cap_usage: BTreeMap<String, i128>,
    /// Per organization: payouts, collections, orders and refunds listed.
    listed: [[usize; 4]; 2],
}

// ---------------------------------------------------------------------------
// Operations.

#[derive(Debug, Clone)]
pub(super) enum MoveOp {
    /// `steps`: (delay in ms, 0 a note, 1 success, 2 failure, 3 a reversal)
    /// the rail reports later.
    Payout {
        org: usize,
        cur: usize,
        amount: i128,
        fee: i128,
        reference: u8,
        capped: bool,
        steps: Vec<(i64, u8)>,
    },
    SettlePayout {
        index: usize,
        step: u8,
    },
    Collection {
        org: usize,
        cur: usize,
        amount: i128,
        reference: u8,
        steps: Vec<(i64, u8)>,
    },
    SettleCollection {
        index: usize,
        step: u8,
    },
    Order {
        org: usize,
        cur: usize,
        amount: i128,
        reference: u8,
        confirmations: u32,
        expires_in_ms: i64,
    },
    /// `payout`: none, a payout of what arrived less this fee, or one larger than the balance.
    Funds {
        index: usize,
        amount: i128,
        confirmations: u32,
        payout: Option<i128>,
        steps: Vec<(i64, u8)>,
    },
    Expire {
        index: usize,
    },
    /// A refund of a collection picked by `index`: `amount` none (all that
    /// is left) or in minor units.
    Refund {
        index: usize,
        amount: Option<i128>,
        reference: u8,
        steps: Vec<(i64, u8)>,
    },
    SettleRefund {
        index: usize,
        step: u8,
    },
    /// Runs every job due now, oldest first, as the scheduler does.
    RunJobs,
}

fn steps() -> impl Strategy<Value = Vec<(i64, u8)>> {
    prop::collection::vec((0i64..60_000, prop_oneof![1 => Just(0u8), 3 => 1u8..3]), 0..3)
}

/// A payout's later reports: a collection's, and reversals.
fn payout_steps() -> impl Strategy<Value = Vec<(i64, u8)>> {
    prop::collection::vec((0i64..60_000, prop_oneof![1 => Just(0u8), 3 => 1u8..3, 2 => Just(3u8)]), 0..4)
}

pub(super) fn movement_op() -> impl Strategy<Value = MoveOp> {
    let fee = prop_oneof![1 => Just(0i128), 2 => 1i128..=50];
    prop_oneof![
        4 => (0..2usize, 0..3usize, transfer_amount(), fee.clone(), 0u8..3, prop::bool::weighted(0.6), payout_steps())
            .prop_map(|(org, cur, amount, fee, reference, capped, steps)| MoveOp::Payout { org, cur, amount, fee, reference, capped, steps }),
        3 => (any::<usize>(), 0u8..4).prop_map(|(index, step)| MoveOp::SettlePayout { index, step }),
        3 => (0..2usize, 0..3usize, transfer_amount(), 0u8..3, steps())
            .prop_map(|(org, cur, amount, reference, steps)| MoveOp::Collection { org, cur, amount, reference, steps }),
        2 => (any::<usize>(), 0u8..3).prop_map(|(index, step)| MoveOp::SettleCollection { index, step }),
        2 => (0..2usize, 0..3usize, 1i128..=100_000, 0u8..3, 0u32..3, 0i64..120_000)
            .prop_map(|(org, cur, amount, reference, confirmations, expires_in_ms)| MoveOp::Order { org, cur, amount, reference, confirmations, expires_in_ms }),
        3 => (any::<usize>(), transfer_amount(), 0u32..4, prop_oneof![1 => Just(None), 3 => fee.prop_map(Some), 1 => Just(Some(-1))], payout_steps())
            .prop_map(|(index, amount, confirmations, payout, steps)| MoveOp::Funds { index, amount, confirmations, payout, steps }),
        1 => any::<usize>().prop_map(|index| MoveOp::Expire { index }),
        3 => (any::<usize>(), prop_oneof![1 => Just(None), 3 => (-1i128..=4_000).prop_map(Some)], 0u8..3, steps())
            .prop_map(|(index, amount, reference, steps)| MoveOp::Refund { index, amount, reference, steps }),
        2 => (any::<usize>(), 0u8..3).prop_map(|(index, step)| MoveOp::SettleRefund { index, step }),
        3 => Just(MoveOp::RunJobs),
    ]
}

fn destination() -> Destination {
    Destination {
        code: "model_rail".into(),
        account_number: Some("0241234567".into()),
        address: None,
        tag: None,
        recipient_id: None,
        bank_code: None,
    }
}

fn fingerprint(request: &str) -> [u8; 32] {
    sha2::Sha256::digest(request.as_bytes()).into()
}

fn step_of(code: u8) -> Step {
    match code {
        0 => Step::Note { kind: "provider".into(), title: "Attempt".into(), detail: "retrying".into() },
        1 => Step::Settle { success: true, message: "delivered".into() },
        2 => Step::Settle { success: false, message: "rejected".into() },
        _ => Step::Reverse { message: "returned by the recipient's bank".into() },
    }
}

/// The rail's later reports, each due at a time no other job has.
fn schedule(model: &Model, steps: &[(i64, u8)]) -> Vec<ScheduledStep> {
    let mut last = model.movements.last_due;
    steps
        .iter()
        .map(|&(delay, code)| {
            let due = (model.now + delay).max(last + 1);
            last = due;
            ScheduledStep { after_ms: due - model.now, step: step_of(code) }
        })
        .collect()
}

fn new_payout(
    model: &Model,
    org: usize,
    cur: usize,
    amount: i128,
    fee: i128,
    steps: &[(i64, u8)],
) -> NewPayout {
    NewPayout {
        organization: ORGS[org].into(),
        from_currency: CURRENCIES[cur].into(),
        from_amount: amount,
        to: destination(),
        to_currency: CURRENCIES[cur].into(),
        to_amount: amount,
        fee_amount: fee,
        rate: "1".into(),
        narration: String::new(),
        metadata: "{}".into(),
        external_reference: String::new(),
        api_key_id: None,
        cap: None,
        rail: "model".into(),
        rail_note: "sent".into(),
        schedule: schedule(model, steps),
        request_fingerprint: [0; 32],
        order_id: None,
    }
}

fn new_collection(
    model: &Model,
    (org, cur): (usize, usize),
    amount: i128,
    reference: u8,
    steps: &[(i64, u8)],
) -> NewCollection {
    NewCollection {
        organization: ORGS[org].into(),
        currency: CURRENCIES[cur].into(),
        amount,
        code: "model_rail".into(),
        account_number: "0241234567".into(),
        metadata: "{}".into(),
        external_reference: format!("col-{reference}"),
        rail: "model".into(),
        rail_note: "prompt sent".into(),
        payer: None,
        schedule: schedule(model, steps),
        request_fingerprint: fingerprint(&format!("{org}/{cur}/{amount}")),
        id: None,
        attach: Vec::new(),
        group: Some(group_of(org, cur, reference)),
    }
}

/// The group a model collection counts in: references 0 and 1 of an
/// organization and currency share one with a target; reference 2 has an
/// open amount of its own.
fn group_of(org: usize, cur: usize, reference: u8) -> CollectionGroup {
    if reference < 2 {
        CollectionGroup { id: format!("grp-{org}-{cur}"), target_minor: Some(GROUP_TARGET) }
    } else {
        CollectionGroup { id: format!("grp-open-{org}-{cur}"), target_minor: None }
    }
}

fn new_order(
    model: &Model,
    (org, cur): (usize, usize),
    amount: i128,
    reference: u8,
    confirmations: u32,
    expires_in_ms: i64,
) -> NewOrder {
    NewOrder {
        organization: ORGS[org].into(),
        from_method: "mobile_money".into(),
        from_currency: CURRENCIES[cur].into(),
        from_amount: amount,
        from_chain: None,
        to: destination(),
        to_currency: CURRENCIES[cur].into(),
        deposit_instructions: "send it".into(),
        required_confirmations: confirmations,
        external_reference: format!("ord-{reference}"),
        metadata: "{}".into(),
        expires_at: (model.now + expires_in_ms).max(model.movements.last_due + 1),
        request_fingerprint: fingerprint(&format!("{org}/{cur}/{amount}/{confirmations}")),
    }
}

fn pick(ids: &[String], index: usize) -> Option<&String> {
    ids.get(index.checked_rem(ids.len())?)
}

/// The command a movement operation stands for now (`None` when there is
/// nothing to act on; `RunJobs` is run by `run_jobs`).
pub(super) fn resolve_movement(op: &MoveOp, model: &Model) -> Option<Command> {
    let m = &model.movements;
    Some(match op {
        &MoveOp::Payout { org, cur, amount, fee, reference, capped, ref steps } => {
            let mut new = new_payout(model, org, cur, amount, fee, steps);
            new.external_reference = format!("pay-{reference}");
            new.request_fingerprint = fingerprint(&format!("{org}/{cur}/{amount}/{fee}/{capped}"));
            if capped {
                new.api_key_id = Some(CAP_KEY.into());
                new.cap = Some(CapCheck {
                    key_id: CAP_KEY.into(),
                    amount_usd_cents: amount,
                    per_transaction_usd_cents: Some(CAP_PER_TRANSACTION),
                    daily_usd_cents: Some(CAP_DAILY),
                    monthly_usd_cents: Some(CAP_MONTHLY),
                    day: format!("d{}", model.now / DAY_MS),
                    month: format!("m{}", model.now / MONTH_MS),
                });
            }
            Command::CreatePayout(Box::new(new))
        }
        MoveOp::SettlePayout { index, step } => Command::AdvancePayout {
            payout_id: sika_engine::PayoutId::from(pick(&m.payout_ids, *index)?.clone()),
            step: step_of(*step),
        },
        &MoveOp::Collection { org, cur, amount, reference, ref steps } => {
            Command::CreateCollection(Box::new(new_collection(model, (org, cur), amount, reference, steps)))
        }
        MoveOp::SettleCollection { index, step } => Command::AdvanceCollection {
            collection_id: sika_engine::CollectionId::from(pick(&m.collection_ids, *index)?.clone()),
            step: step_of(*step),
        },
        &MoveOp::Order { org, cur, amount, reference, confirmations, expires_in_ms } => Command::CreateOrder(
            Box::new(new_order(model, (org, cur), amount, reference, confirmations, expires_in_ms)),
        ),
        MoveOp::Funds { index, amount, confirmations, payout, steps } => {
            let order_id = pick(&m.order_ids, *index)?;
            let order = &m.orders[order_id];
            let payout = match *payout {
                None => None,
                // More than the balance holds: the order fails, the funds stay.
                Some(-1) => Some(new_payout(model, order.org, order.cur, amount + 10_000_000, 0, steps)),
                Some(fee) if *amount - fee > 0 => {
                    Some(new_payout(model, order.org, order.cur, amount - fee, fee, steps))
                }
                Some(_) => None,
            };
            let payout_refusal = payout.is_none().then(|| "below the method's minimum".to_string());
            Command::OrderFunds(Box::new(OrderFunds {
                order_id: order_id.clone(),
                amount: *amount,
                confirmations: *confirmations,
                payout,
                payout_refusal,
            }))
        }
        MoveOp::Expire { index } => {
            Command::ExpireOrder { order_id: sika_engine::OrderId::from(pick(&m.order_ids, *index)?.clone()) }
        }
        MoveOp::Refund { index, amount, reference, steps } => {
            new_refund(model, pick(&m.collection_ids, *index)?, *amount, *reference, steps)?
        }
        MoveOp::SettleRefund { index, step } => Command::AdvanceRefund {
            refund_id: sika_engine::RefundId::from(pick(&m.refund_ids, *index)?.clone()),
            step: step_of(*step),
        },
        MoveOp::RunJobs => return None,
    })
}

/// A refund of `collection_id` as its organization asks for it.
fn new_refund(
    model: &Model,
    collection_id: &str,
    amount: Option<i128>,
    reference: u8,
    steps: &[(i64, u8)],
) -> Option<Command> {
    let org = model.movements.collection_orgs.get(collection_id).copied()?;
    Some(Command::CreateRefund(Box::new(sika_engine::refunds::NewRefund {
        organization: ORGS[org].into(),
        request_fingerprint: fingerprint(&format!("{collection_id}/{amount:?}")),
        collection_id: collection_id.to_string(),
        session_id: None,
        amount,
        reason: None,
        metadata: "{}".into(),
        external_reference: format!("rf-{reference}"),
        rail: "model".into(),
        rail_note: "sent".into(),
        schedule: sika_engine::refunds::RefundSchedule {
            minor_per_cent: 1,
            by_digits: Vec::new(),
            otherwise: schedule(model, steps),
        },
    })))
}

/// Whether sending `command` again could schedule jobs the model cannot
/// order (a create that was refused the first time may now succeed, with
/// due times given out long ago).
pub(super) fn unsafe_to_resubmit(command: &Command, model: &Model) -> bool {
    matches!(
        command,
        Command::CreatePayout(_)
            | Command::CreateCollection(_)
            | Command::CreateOrder(_)
            | Command::CreateRefund(_)
    ) && idempotency_key(command).is_none_or(|key| !model.idempotency.contains_key(&key))
}

// ---------------------------------------------------------------------------
// The model's rules.

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

fn waiting(status: OrderStatus) -> bool {
    matches!(status, OrderStatus::AwaitingFunds | OrderStatus::AwaitingConfirmations)
}

impl Model {
    /// Checks the engine's answer to a movement command, then applies it.
    /// Returns the resource an idempotent create made.
    pub(super) fn movement_step(
        &mut self,
        command: &Command,
        actual: &Result<Applied, EngineError>,
        engine: &Engine,
    ) -> Result<Option<Resource>, TestCaseError> {
        match command {
            Command::CreatePayout(new) => self.create_payout(new, actual),
            Command::AdvancePayout { payout_id, step } => {
                self.advance_payout(payout_id.as_str(), step, actual).map(|()| None)
            }
            Command::CreateCollection(new) => self.create_collection(new, actual),
            Command::AdvanceCollection { collection_id, step } => {
                self.advance_collection(collection_id.as_str(), step, actual).map(|()| None)
            }
            Command::CreateOrder(new) => self.create_order(new, actual).map(Some),
            Command::OrderFunds(funds) => self.order_funds(funds, actual, engine).map(|()| None),
            Command::ExpireOrder { order_id } => self.expire_order(order_id.as_str(), actual).map(|()| None),
            Command::CreateRefund(new) => self.create_refund(new, actual),
            Command::AdvanceRefund { refund_id, step } => {
                self.advance_refund(refund_id.as_str(), step, actual).map(|()| None)
            }
            Command::RunJob { key } => {
                prop_assert!(self.movements.jobs_run.contains(key), "the model runs new jobs in run_jobs");
                let applied = actual.as_ref().map_err(|e| fail(format!("a job run again failed: {e:?}")))?;
                prop_assert!(applied.replayed, "a job runs once");
                Ok(None)
            }
            other => Err(fail(format!("the model does not know {other:?}"))),
        }
    }

    /// The payout rules on the model: funds for amount and fee, the cap,
    /// then the two holds. Changes only `self` (pass a copy).
    fn plan_payout(&mut self, new: &NewPayout) -> Result<(), Refusal> {
        let (org, cur) = (org_index(&new.organization), cur_index(&new.from_currency));
        let required = new.from_amount + new.fee_amount;
        let available = self.available((Who::Org(org), cur));
        if available < required {
            return Err(insufficient(cur, available, required));
        }
        if let Some(cap) = &new.cap {
            if cap.amount_usd_cents > CAP_PER_TRANSACTION {
                return Err(Refusal::SpendCap("perTransactionUsd".into()));
            }
            for (window, limit, name) in
                [(&cap.day, CAP_DAILY, "dailyUsd"), (&cap.month, CAP_MONTHLY, "monthlyUsd")]
            {
                let used = self.movements.cap_usage.get(window).copied().unwrap_or(0) + cap.amount_usd_cents;
                if used > limit {
                    return Err(Refusal::SpendCap(name.into()));
                }
                self.movements.cap_usage.insert(window.clone(), used);
            }
        }
        self.move_funds((Who::Org(org), cur), (Who::RailClearing, cur), new.from_amount, true)?;
        if new.fee_amount > 0 {
            self.move_funds((Who::Org(org), cur), (Who::FeeRevenue, cur), new.fee_amount, true)?;
        }
        Ok(())
    }

    /// Takes in a payout the engine made as `new` planned: its holds and its jobs.
    fn record_payout(
        &mut self,
        new: &NewPayout,
        payout: &sika_engine::PayoutRecord,
    ) -> Result<(), TestCaseError> {
        let (org, cur) = (org_index(&new.organization), cur_index(&new.from_currency));
        let legs = [(Who::RailClearing, new.from_amount), (Who::FeeRevenue, new.fee_amount)];
        let legs: Vec<_> = legs.into_iter().filter(|(_, amount)| *amount > 0).collect();
        prop_assert_eq!(payout.hold_ids.len(), legs.len(), "the amount and the fee are held apart");
        prop_assert_eq!(payout.status, MovementStatus::Pending);
        prop_assert_eq!((payout.from_amount, payout.fee_amount), (new.from_amount, new.fee_amount));
        prop_assert_eq!(&payout.api_key_id, &new.api_key_id);
        for (&id, &(who, amount)) in payout.hold_ids.iter().zip(&legs) {
            self.take_transfer_id(id)?;
            let hold = Hold {
                debit: (Who::Org(org), cur),
                credit: (who, cur),
                amount,
                state: PendingState::Pending,
            };
            self.holds.insert(id, hold);
        }
        self.schedule_jobs(&new.schedule, |step| Command::AdvancePayout {
            payout_id: sika_engine::PayoutId::from(payout.id.clone()),
            step,
        })?;
        let state = PayoutState {
            org,
            cur,
            amount: new.from_amount,
            holds: payout.hold_ids.clone(),
            status: MovementStatus::Pending,
            order: payout.order_id.clone(),
        };
        self.movements.payouts.insert(payout.id.clone(), state);
        self.movements.payout_ids.push(payout.id.clone());
        self.movements.listed[org][0] += 1;
        Ok(())
    }

    fn schedule_jobs(
        &mut self,
        schedule: &[ScheduledStep],
        command: impl Fn(Step) -> Command,
    ) -> Result<(), TestCaseError> {
        for step in schedule {
            let due = self.now + step.after_ms;
            prop_assert!(!self.movements.jobs.contains_key(&due), "two jobs due at {}", due);
            self.movements.jobs.insert(due, command(step.step.clone()));
            self.movements.last_due = self.movements.last_due.max(due);
        }
        Ok(())
    }

    fn create_payout(
        &mut self,
        new: &NewPayout,
        actual: &Result<Applied, EngineError>,
    ) -> Result<Option<Resource>, TestCaseError> {
        let mut next = self.clone();
        if let Err(refusal) = next.plan_payout(new) {
            return expect_refusal(actual, refusal).map(|()| None);
        }
        let applied = expect_fresh(actual)?;
        let Outcome::Payout(payout) = &applied.outcome else {
            return Err(fail(format!("a payout returned {applied:?}")));
        };
        *self = next;
        self.record_payout(new, payout)?;
        Ok(Some(Resource::Payout(payout.id.clone())))
    }

    fn advance_payout(
        &mut self,
        id: &str,
        step: &Step,
        actual: &Result<Applied, EngineError>,
    ) -> Result<(), TestCaseError> {
        let Some(state) = self.movements.payouts.get(id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound);
        };
        let applied = actual.as_ref().map_err(|e| fail(format!("advancing a payout failed: {e:?}")))?;
        let Outcome::Payout(payout) = &applied.outcome else {
            return Err(fail(format!("advancing a payout returned {applied:?}")));
        };
        if let Step::Reverse { .. } = step {
            return self.reverse_payout(id, &state, applied, payout);
        }
        if state.status != MovementStatus::Pending {
            prop_assert!(applied.replayed, "a settled payout ignores later reports");
            prop_assert_eq!(payout.status, state.status);
            return Ok(());
        }
        prop_assert!(!applied.replayed);
        let Step::Settle { success, .. } = step else {
            prop_assert_eq!(payout.status, MovementStatus::Pending);
            return Ok(());
        };
        for hold in &state.holds {
            self.settle(*hold, *success).map_err(|r| fail(format!("the payout's hold {hold}: {r:?}")))?;
            self.journal += 1;
        }
        if *success {
            self.move_funds((Who::RailClearing, state.cur), (Who::World, state.cur), state.amount, false)
                .map_err(|r| fail(format!("delivering the payout: {r:?}")))?;
            self.journal += 1;
        }
        let status = if *success { MovementStatus::Completed } else { MovementStatus::Failed };
        prop_assert_eq!(payout.status, status);
        self.movements.payouts.get_mut(id).expect("the payout").status = status;
        if let Some(order) = state.order.and_then(|o| self.movements.orders.get_mut(&o))
            && order.status == OrderStatus::ProcessingPayout
        {
            order.status = if *success { OrderStatus::Completed } else { OrderStatus::Failed };
        }
        Ok(())
    }

    /// A reversal: only a completed payout takes it, once; its amount comes
    /// back to the organization from the world, its fee stays earned, and
    /// the order it is a leg of stays `completed`.
    fn reverse_payout(
        &mut self,
        id: &str,
        state: &PayoutState,
        applied: &Applied,
        payout: &sika_engine::PayoutRecord,
    ) -> Result<(), TestCaseError> {
        if state.status != MovementStatus::Completed {
            prop_assert!(applied.replayed, "only a completed payout is reversed, and once");
            prop_assert_eq!(payout.status, state.status);
            return Ok(());
        }
        prop_assert!(!applied.replayed);
        self.move_funds((Who::World, state.cur), (Who::Org(state.org), state.cur), state.amount, false)
            .map_err(|r| fail(format!("reversing the payout: {r:?}")))?;
        self.journal += 1;
        prop_assert_eq!(payout.status, MovementStatus::Reversed);
        prop_assert!(payout.completed_at.is_some(), "a reversed payout keeps its completion time");
        self.movements.payouts.get_mut(id).expect("the payout").status = MovementStatus::Reversed;
        Ok(())
    }

    fn create_collection(
        &mut self,
        new: &NewCollection,
        actual: &Result<Applied, EngineError>,
    ) -> Result<Option<Resource>, TestCaseError> {
        let (org, cur) = (org_index(&new.organization), cur_index(&new.currency));
        let mut next = self.clone();
        if let Err(refusal) = next.move_funds((Who::World, cur), (Who::Org(org), cur), new.amount, true) {
            return expect_refusal(actual, refusal).map(|()| None);
        }
        let applied = expect_fresh(actual)?;
        let Outcome::Collection(collection) = &applied.outcome else {
            return Err(fail(format!("a collection returned {applied:?}")));
        };
        prop_assert_eq!((collection.amount, collection.status), (new.amount, MovementStatus::Pending));
        *self = next;
        self.take_transfer_id(collection.hold_id)?;
        let hold = Hold {
            debit: (Who::World, cur),
            credit: (Who::Org(org), cur),
            amount: new.amount,
            state: PendingState::Pending,
        };
        self.holds.insert(collection.hold_id, hold);
        let id = collection.id.clone();
        self.schedule_jobs(&new.schedule, |step| Command::AdvanceCollection {
            collection_id: sika_engine::CollectionId::from(id.clone()),
            step,
        })?;
        let state = CollectionState {
            hold: collection.hold_id,
            status: MovementStatus::Pending,
            amount: new.amount,
            group: new.group.clone(),
        };
        if let Some(group) = &new.group {
            self.movements.tallies.entry(group.id.clone()).or_default();
        }
        self.movements.collections.insert(id.clone(), state);
        self.movements.collection_ids.push(id.clone());
        self.movements.collection_orgs.insert(id.clone(), org);
        self.movements.collection_currencies.insert(id.clone(), cur);
        self.movements.listed[org][1] += 1;
        Ok(Some(Resource::Collection(id)))
    }

    fn advance_collection(
        &mut self,
        id: &str,
        step: &Step,
        actual: &Result<Applied, EngineError>,
    ) -> Result<(), TestCaseError> {
        let Some(state) = self.movements.collections.get(id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound);
        };
        let applied = actual.as_ref().map_err(|e| fail(format!("advancing a collection failed: {e:?}")))?;
        let Outcome::Collection(collection) = &applied.outcome else {
            return Err(fail(format!("advancing a collection returned {applied:?}")));
        };
        if state.status != MovementStatus::Pending {
            prop_assert!(applied.replayed, "a settled collection ignores later reports");
            prop_assert_eq!(collection.status, state.status);
            return Ok(());
        }
        prop_assert!(!applied.replayed);
        let Step::Settle { success, .. } = step else {
            prop_assert_eq!(collection.status, MovementStatus::Pending);
            return Ok(());
        };
        self.settle(state.hold, *success).map_err(|r| fail(format!("the collection's hold: {r:?}")))?;
        self.journal += 1;
        let status = if *success { MovementStatus::Completed } else { MovementStatus::Failed };
        prop_assert_eq!(collection.status, status);
        self.movements.collections.get_mut(id).expect("the collection").status = status;
        if let Some(group) = state.group.as_ref().filter(|_| *success) {
            let tally = self.movements.tallies.get_mut(&group.id).expect("the group's tally");
            tally.received += state.amount;
            tally.count += 1;
            if tally.covering.is_none() && group.target_minor.is_none_or(|t| tally.received >= t) {
                tally.covering = Some(id.to_string());
            }
            tally.latest = Some(id.to_string());
        }
        Ok(())
    }

    fn create_order(
        &mut self,
        new: &NewOrder,
        actual: &Result<Applied, EngineError>,
    ) -> Result<Resource, TestCaseError> {
        let applied = expect_fresh(actual)?;
        let Outcome::Order(order) = &applied.outcome else {
            return Err(fail(format!("an order returned {applied:?}")));
        };
        prop_assert_eq!((order.status, order.expires_at), (OrderStatus::AwaitingFunds, new.expires_at));
        let (org, cur) = (org_index(&new.organization), cur_index(&new.from_currency));
        let step = ScheduledStep { after_ms: new.expires_at - self.now, step: step_of(0) };
        let id = order.id.clone();
        self.schedule_jobs(&[step], |_| Command::ExpireOrder {
            order_id: sika_engine::OrderId::from(id.clone()),
        })?;
        let state = OrderState {
            org,
            cur,
            required_confirmations: new.required_confirmations,
            status: OrderStatus::AwaitingFunds,
            payout: None,
        };
        self.movements.orders.insert(id.clone(), state);
        self.movements.order_ids.push(id.clone());
        self.movements.listed[org][2] += 1;
        Ok(Resource::Order(id))
    }

    fn order_funds(
        &mut self,
        funds: &OrderFunds,
        actual: &Result<Applied, EngineError>,
        engine: &Engine,
    ) -> Result<(), TestCaseError> {
        let Some(order) = self.movements.orders.get(&funds.order_id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound);
        };
        if !waiting(order.status) {
            return expect_refusal(actual, Refusal::InvalidState);
        }
        let mut next = self.clone();
        let status = if funds.confirmations < order.required_confirmations {
            OrderStatus::AwaitingConfirmations
        } else {
            let credit = next.move_funds(
                (Who::World, order.cur),
                (Who::Org(order.org), order.cur),
                funds.amount,
                false,
            );
            if let Err(refusal) = credit {
                return expect_refusal(actual, refusal);
            }
            next.journal += 1;
            match &funds.payout {
                None => OrderStatus::Failed,
                Some(new) => {
                    let mut paid = next.clone();
                    match paid.plan_payout(new) {
                        Ok(()) => {
                            next = paid;
                            OrderStatus::ProcessingPayout
                        }
                        Err(Refusal::Insufficient { .. }) => OrderStatus::Failed,
                        Err(refusal) => return expect_refusal(actual, refusal),
                    }
                }
            }
        };
        let applied = expect_fresh(actual)?;
        let Outcome::Order(record) = &applied.outcome else {
            return Err(fail(format!("order funds returned {applied:?}")));
        };
        prop_assert_eq!(record.status, status);
        *self = next;
        if status == OrderStatus::ProcessingPayout {
            let payout_id = record.payout_id.clone().ok_or_else(|| fail("no payout on the order".into()))?;
            let payout = engine
                .read()
                .expect("snapshot")
                .payout(&sika_engine::PayoutId::named(&payout_id))
                .expect("read");
            let payout = payout.ok_or_else(|| fail(format!("the order's payout {payout_id} is missing")))?;
            prop_assert_eq!(payout.order_id.as_deref(), Some(record.id.as_str()));
            self.record_payout(funds.payout.as_ref().expect("a payout"), &payout)?;
        }
        let state = self.movements.orders.get_mut(&funds.order_id).expect("the order");
        state.status = status;
        state.payout = record.payout_id.clone();
        Ok(())
    }

    fn expire_order(&mut self, id: &str, actual: &Result<Applied, EngineError>) -> Result<(), TestCaseError> {
        let Some(order) = self.movements.orders.get(id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound);
        };
        let applied = actual.as_ref().map_err(|e| fail(format!("expiring an order failed: {e:?}")))?;
        let Outcome::Order(record) = &applied.outcome else {
            return Err(fail(format!("expiring an order returned {applied:?}")));
        };
        // Only an order that saw no inflow expires: one whose funds were
        // seen on-chain waits for their confirmations past its deadline.
        if order.status != OrderStatus::AwaitingFunds {
            prop_assert!(
                applied.replayed,
                "an order whose inflow was seen, or past waiting, does not expire"
            );
            prop_assert_eq!(record.status, order.status);
            return Ok(());
        }
        prop_assert_eq!((applied.replayed, record.status), (false, OrderStatus::Expired));
        self.movements.orders.get_mut(id).expect("the order").status = OrderStatus::Expired;
        Ok(())
    }
}

impl Model {
    /// The refund rules on the model: only a completed collection of the
    /// organization, at most what its refunds not failed leave (all of it
    /// by default), held on the balance like a payout's amount.
    fn create_refund(
        &mut self,
        new: &sika_engine::refunds::NewRefund,
        actual: &Result<Applied, EngineError>,
    ) -> Result<Option<Resource>, TestCaseError> {
        let Some(payment) = self.movements.collections.get(&new.collection_id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound).map(|()| None);
        };
        let org = self.movements.collection_orgs[&new.collection_id];
        if ORGS[org] != new.organization {
            return expect_refusal(actual, Refusal::NotFound).map(|()| None);
        }
        if payment.status != MovementStatus::Completed {
            let refusal = Refusal::NotRefundable { completed: false, refundable: 0 };
            return expect_refusal(actual, refusal).map(|()| None);
        }
        let (refunded, count) = self.movements.refunded.get(&new.collection_id).copied().unwrap_or((0, 0));
        let refundable = payment.amount - refunded;
        let amount = new.amount.unwrap_or(refundable);
        if amount <= 0 || amount > refundable {
            let refusal = Refusal::NotRefundable { completed: true, refundable };
            return expect_refusal(actual, refusal).map(|()| None);
        }
        let cur = self.movements.collection_currencies[&new.collection_id];
        let mut next = self.clone();
        if let Err(refusal) = next.move_funds((Who::Org(org), cur), (Who::RailClearing, cur), amount, true) {
            return expect_refusal(actual, refusal).map(|()| None);
        }
        let applied = expect_fresh(actual)?;
        let Outcome::Refund(refund) = &applied.outcome else {
            return Err(fail(format!("a refund returned {applied:?}")));
        };
        prop_assert_eq!((refund.amount, refund.status), (amount, MovementStatus::Pending));
        *self = next;
        self.take_transfer_id(refund.hold_id)?;
        let hold = Hold {
            debit: (Who::Org(org), cur),
            credit: (Who::RailClearing, cur),
            amount,
            state: PendingState::Pending,
        };
        self.holds.insert(refund.hold_id, hold);
        let id = refund.id.clone();
        self.schedule_jobs(&new.schedule.otherwise, |step| Command::AdvanceRefund {
            refund_id: sika_engine::RefundId::from(id.clone()),
            step,
        })?;
        self.movements.refunded.insert(new.collection_id.clone(), (refunded + amount, count + 1));
        let state = RefundState {
            collection: new.collection_id.clone(),
            cur,
            amount,
            hold: refund.hold_id,
            status: MovementStatus::Pending,
        };
        self.movements.refunds.insert(id.clone(), state);
        self.movements.refund_ids.push(id.clone());
        self.movements.listed[org][3] += 1;
        Ok(Some(Resource::Refund(id)))
    }

    fn advance_refund(
        &mut self,
        id: &str,
        step: &Step,
        actual: &Result<Applied, EngineError>,
    ) -> Result<(), TestCaseError> {
        let Some(state) = self.movements.refunds.get(id).cloned() else {
            return expect_refusal(actual, Refusal::NotFound);
        };
        let applied = actual.as_ref().map_err(|e| fail(format!("advancing a refund failed: {e:?}")))?;
        let Outcome::Refund(refund) = &applied.outcome else {
            return Err(fail(format!("advancing a refund returned {applied:?}")));
        };
        if state.status != MovementStatus::Pending {
            prop_assert!(applied.replayed, "a settled refund ignores later reports");
            prop_assert_eq!(refund.status, state.status);
            return Ok(());
        }
        prop_assert!(!applied.replayed);
        let Step::Settle { success, .. } = step else {
            prop_assert_eq!(refund.status, MovementStatus::Pending);
            return Ok(());
        };
        self.settle(state.hold, *success).map_err(|r| fail(format!("the refund's hold: {r:?}")))?;
        self.journal += 1;
        if *success {
            self.move_funds((Who::RailClearing, state.cur), (Who::World, state.cur), state.amount, false)
                .map_err(|r| fail(format!("delivering the refund: {r:?}")))?;
            self.journal += 1;
        } else {
            let tally = self.movements.refunded.get_mut(&state.collection).expect("the payment's tally");
            tally.0 -= state.amount;
        }
        let status = if *success { MovementStatus::Completed } else { MovementStatus::Failed };
        prop_assert_eq!(refund.status, status);
        self.movements.refunds.get_mut(id).expect("the refund").status = status;
        Ok(())
    }
}

/// Runs every job due now through the engine (`RunJob`, as the scheduler
/// does), oldest first, checking each against the command the model
/// expects it to run. Returns the commands sent.
pub(super) fn run_jobs(engine: &Engine, model: &mut Model) -> Result<Vec<Command>, TestCaseError> {
    let keys = engine.read().expect("snapshot").due_jobs(model.now, 1_000).expect("due jobs");
    let due: Vec<(i64, Command)> =
        model.movements.jobs.range(..=model.now).map(|(due, command)| (*due, command.clone())).collect();
    prop_assert_eq!(keys.len(), due.len(), "jobs due at {}", model.now);
    let mut sent = Vec::new();
    for (key, (due, expected)) in keys.into_iter().zip(due) {
        let command = Command::RunJob { key: key.clone() };
        let actual = engine.execute_blocking(command.clone());
        model.movements.jobs.remove(&due);
        model.movements.jobs_run.insert(key);
        model
            .step(&expected, &actual, engine)
            .map_err(|e| fail(format!("the job due at {due} ({expected:?}): {actual:?}\n  {e}")))?;
        sent.push(command);
    }
    Ok(sent)
}

// ---------------------------------------------------------------------------
// Comparing.

pub(super) fn compare_movements(snapshot: &Snapshot, model: &Model) -> Result<(), TestCaseError> {
    let m = &model.movements;
    for (id, state) in &m.payouts {
        let payout = snapshot
            .payout(&sika_engine::PayoutId::named(id))
            .expect("read")
            .ok_or_else(|| fail(format!("payout {id} is missing")))?;
        prop_assert_eq!(payout.status, state.status, "status of payout {}", id);
        prop_assert_eq!(&payout.hold_ids, &state.holds);
    }
    for (id, state) in &m.collections {
        let collection = snapshot
            .collection(&sika_engine::CollectionId::named(id))
            .expect("read")
            .ok_or_else(|| fail(format!("collection {id} is missing")))?;
        prop_assert_eq!(collection.status, state.status, "status of collection {}", id);
    }
    compare_refunds(snapshot, m)?;
    for (id, state) in &m.orders {
        let order = snapshot
            .order(&sika_engine::OrderId::named(id))
            .expect("read")
            .ok_or_else(|| fail(format!("order {id} is missing")))?;
        prop_assert_eq!(order.status, state.status, "status of order {}", id);
        prop_assert_eq!(&order.payout_id, &state.payout);
    }
    for (group, expected) in &m.tallies {
        let tally = snapshot.collection_tally(group).expect("read");
        let arrival_id = |a: &Option<sika_engine::Arrival>| a.as_ref().map(|a| a.collection_id.clone());
        let actual = tally
            .map(|t| (t.received_minor, t.completed_count, arrival_id(&t.covering), arrival_id(&t.latest)));
        let model = (expected.count > 0)
            .then(|| (expected.received, expected.count, expected.covering.clone(), expected.latest.clone()));
        prop_assert_eq!(actual, model, "tally of group {}", group);
    }
    // The current windows too, so usage the model does not expect is caught.
    let mut windows: BTreeSet<String> = m.cap_usage.keys().cloned().collect();
    windows.extend([format!("d{}", model.now / DAY_MS), format!("m{}", model.now / MONTH_MS)]);
    for window in &windows {
        let used = m.cap_usage.get(window).copied().unwrap_or(0);
        prop_assert_eq!(cap_usage(snapshot, window), used, "cap usage of {}", window);
    }
    prop_assert_eq!(snapshot.due_jobs(i64::MAX, 10_000).expect("jobs").len(), m.jobs.len(), "scheduled jobs");
    // The index of open movements, which the engine keeps as it creates and
    // settles them, names exactly the pending ones: what a scan of every
    // payout and collection would select.
    let pending = |status: &MovementStatus| *status == MovementStatus::Pending;
    let mut scanned: Vec<(MovementKind, String)> = m
        .payouts
        .iter()
        .filter(|(_, s)| pending(&s.status))
        .map(|(id, _)| (MovementKind::Payout, id.clone()))
        .chain(
            m.collections
                .iter()
                .filter(|(_, s)| pending(&s.status))
                .map(|(id, _)| (MovementKind::Collection, id.clone())),
        )
        .chain(
            m.refunds
                .iter()
                .filter(|(_, s)| pending(&s.status))
                .map(|(id, _)| (MovementKind::Refund, id.clone())),
        )
        .collect();
    scanned.sort();
    let indexed: Vec<(MovementKind, String)> =
        snapshot.open_movements("model").expect("read").into_iter().map(|o| (o.kind, o.id)).collect();
    prop_assert_eq!(indexed, scanned, "the index of open movements");
    check_caps(snapshot)?;
    check_settlements(snapshot)
}

/// Each refund's status, hold and payment, and each payment's refund
/// tally: what its refunds not failed hold back, never more than it brought.
fn compare_refunds(snapshot: &Snapshot, m: &Movements) -> Result<(), TestCaseError> {
    for (id, state) in &m.refunds {
        let refund = snapshot
            .refund(&sika_engine::RefundId::named(id))
            .expect("read")
            .ok_or_else(|| fail(format!("refund {id} is missing")))?;
        prop_assert_eq!(refund.status, state.status, "status of refund {}", id);
        prop_assert_eq!(refund.hold_id, state.hold);
        prop_assert_eq!((&refund.collection_id, refund.amount), (&state.collection, state.amount));
    }
    for (collection, &(refunded, count)) in &m.refunded {
        let tally = snapshot.refund_tally(collection).expect("read");
        let actual = tally.map(|t| (t.refunded_minor, t.refund_count));
        prop_assert_eq!(actual, Some((refunded, count)), "refund tally of payment {}", collection);
        let collected = m.collections[collection].amount;
        prop_assert!(refunded <= collected, "payment {} refunded {} of {}", collection, refunded, collected);
    }
    Ok(())
}

/// The cap usage stored for `CAP_KEY` in `window`.
fn cap_usage(snapshot: &Snapshot, window: &str) -> i128 {
    snapshot.cap_usage(&format!("{CAP_KEY}/{window}")).expect("read").unwrap_or(0)
}

/// The engine's own state agrees with itself: each window's cap usage is
/// the sum of the capped payouts made in it (US cents are the payout's
/// amount in these tests).
pub(super) fn check_caps(snapshot: &Snapshot) -> Result<(), TestCaseError> {
    let mut sums: BTreeMap<String, i128> = BTreeMap::new();
    for org in ORGS {
        for (_, id) in snapshot.list(org, "payouts", None, 1_000).expect("list") {
            let payout =
                snapshot.payout(&sika_engine::PayoutId::named(&id)).expect("read").expect("a listed payout");
            if payout.api_key_id.as_deref() == Some(CAP_KEY) {
                *sums.entry(format!("d{}", payout.created_at / DAY_MS)).or_default() += payout.from_amount;
                *sums.entry(format!("m{}", payout.created_at / MONTH_MS)).or_default() += payout.from_amount;
            }
        }
    }
    for (window, sum) in sums {
        prop_assert_eq!(cap_usage(snapshot, &window), sum, "cap usage of {} against its payouts", window);
    }
    Ok(())
}

/// Every transfer of the journal, each hold settled at most once, and a
/// hold that is no longer pending settled exactly once, the way it says.
pub(super) fn check_settlements(snapshot: &Snapshot) -> Result<(), TestCaseError> {
    let journal = snapshot.journal_length().expect("journal");
    let mut holds: BTreeMap<u64, PendingState> = BTreeMap::new();
    let mut settled: BTreeMap<u64, Vec<PendingState>> = BTreeMap::new();
    for id in 1..=journal {
        let transfer =
            snapshot.transfer(id).expect("read").ok_or_else(|| fail(format!("transfer {id} is missing")))?;
        match transfer.kind {
            TransferKind::Pending => {
                holds.insert(id, transfer.pending_state.unwrap_or(PendingState::Pending));
            }
            TransferKind::PostPending(hold) => settled.entry(hold).or_default().push(PendingState::Posted),
            TransferKind::VoidPending(hold) => settled.entry(hold).or_default().push(PendingState::Voided),
            _ => {}
        }
    }
    for (hold, settlements) in &settled {
        prop_assert!(holds.contains_key(hold), "transfer {} settles what is not a hold", hold);
        prop_assert_eq!(settlements.len(), 1, "hold {} settled {:?}", hold, settlements);
    }
    for (hold, state) in holds {
        let expected = settled.get(&hold).map_or(PendingState::Pending, |s| s[0]);
        prop_assert_eq!(state, expected, "state of hold {}", hold);
    }
    Ok(())
}

/// The lists an organization's movements appear in.
pub(super) fn check_lists(snapshot: &Snapshot, model: &Model) -> Result<(), TestCaseError> {
    for (o, org) in ORGS.iter().enumerate() {
        for (k, kind) in ["payouts", "collections", "orders", "refunds"].iter().enumerate() {
            let listed = snapshot.list(org, kind, None, 1_000).expect("list").len();
            prop_assert_eq!(listed, model.movements.listed[o][k], "{} listed for {}", kind, org);
        }
    }
    Ok(())
}
