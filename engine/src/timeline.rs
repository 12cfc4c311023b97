//! What a payout's, collection's or order's timeline records: typed facts,
//! never their English. The server words each fact when it renders the
//! timeline (`domain::timeline`), so rewording a line changes no stored
//! record. Text a caller wrote (a rail's note, an operator's) is kept as
//! given, and lines stored before format 6 as the `Legacy` text they were.

use serde::{Deserialize, Serialize};

/// One line of a payout's, collection's or order's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// Milliseconds since the epoch (`records::TimestampMs`).
    pub at: i64,
    pub fact: Fact,
}

impl TimelineEntry {
    pub fn new(at: i64, fact: Fact) -> TimelineEntry {
        TimelineEntry { at, fact }
    }
}

/// Which movement a fact is about, where the wording differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Movement {
    Payout,
    Collection,
    /// Last, so stored facts keep their encoding.
    Refund,
}

/// Who settled a movement: a rail (the sandbox's simulator, a provider, the
/// clock) or the operator by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Actor {
    Rail,
    Operator,
}

/// Who a new movement waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Handover {
    /// The operator pays it (or sees it arrive) by hand.
    Operator,
    /// A payout handed to its rail.
    Rail,
    /// A collection whose payer was prompted.
    Prompt,
    /// A collection waiting for the payer's transfer.
    Payment,
}

/// Why an order failed after its funds arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderFailure {
    /// No payout could be made; the funds stay on the balance.
    NoPayout,
    /// The payout failed; the funds stay on the balance.
    PayoutFailed,
}

/// What happened, with what it takes to word it. Amounts are in minor
/// units of their currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fact {
    /// A line as a format before 6 stored it, already worded.
    Legacy {
        kind: String,
        title: String,
        detail: String,
    },
    /// A note a rail or the operator wrote (`Step::Note`), kept as written.
    Note {
        kind: String,
        title: String,
        detail: String,
    },
    /// A movement was handed to a provider (`Step::Sent`).
    Sent {
        provider: String,
        detail: String,
    },
    PayoutCreated {
        amount: i128,
        currency: String,
        destination: String,
    },
    FundsHeld {
        amount: i128,
        currency: String,
        account: String,
    },
    FeeHeld {
        amount: i128,
        currency: String,
    },
    /// Who the new movement waits on, and the rail's note about it.
    HandedOver {
        handover: Handover,
        note: String,
    },
    /// The movement settled, as `actor` reported it.
    Settled {
        movement: Movement,
        actor: Actor,
        success: bool,
        message: String,
    },
    /// A completed payout's amount left the balance, its fee collected.
    FundsDebited {
        amount: i128,
        currency: String,
    },
    /// A failed payout's amount and fee (`amount`, their sum) came back.
    BalanceRefunded {
        amount: i128,
        currency: String,
    },
    CollectionCreated {
        amount: i128,
        currency: String,
        payer: Option<String>,
    },
    PendingCredit {
        amount: i128,
        currency: String,
        account: String,
    },
    BalanceCredited {
        amount: i128,
        currency: String,
        account: String,
    },
    PendingCreditReleased {
        amount: i128,
        currency: String,
    },
    /// The movement left pending: it completed, or (`completed` false) failed.
    StatusChanged {
        movement: Movement,
        completed: bool,
    },
    OrderCreated {
        amount: i128,
        currency: String,
        method: String,
    },
    DepositInstructionsIssued,
    FundsSeen {
        amount: i128,
        currency: String,
        confirmations: u32,
        required: u32,
    },
    FundsReceived {
        amount: i128,
        currency: String,
        account: String,
    },
    /// The funds received were more (`over`) or less than `expected`.
    AmountMismatch {
        over: bool,
        expected: i128,
        currency: String,
    },
    FundsConverted {
        from_amount: i128,
        from_currency: String,
        to_amount: i128,
        to_currency: String,
        rate: String,
    },
    PayoutStarted {
        payout_id: String,
        amount: i128,
        currency: String,
    },
    PayoutNotPossible {
        reason: String,
    },
    OrderFailed {
        cause: OrderFailure,
    },
    OrderCompleted,
    OrderExpired,
    /// A refund of `collection_id` was made (its amount then held, as
    /// `FundsHeld` says).
    RefundCreated {
        amount: i128,
        currency: String,
        collection_id: String,
    },
    /// A completed refund's amount left the balance for the payer.
    RefundDebited {
        amount: i128,
        currency: String,
    },
    /// The rail took a completed payout back (`Step::Reverse`), saying why.
    Reversed {
        message: String,
    },
    /// A reversed payout's `amount` came back to `account`; its `fee` (same
    /// currency) is kept.
    ReversalCredited {
        amount: i128,
        fee: i128,
        currency: String,
        account: String,
    },
    /// The payout left `completed` for `reversed`.
    PayoutReversed,
}
