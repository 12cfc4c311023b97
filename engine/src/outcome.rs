//! What a command produced. Its own module, below the code that applies
//! commands (payouts, collections, orders, the commands themselves), so
//! each can return one without importing the others.

use crate::records::*;

/// What a command produced: the resource it created or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Transfers(Vec<TransferRecord>),
    Deposit(DepositRecord),
    Quote(QuoteRecord),
    Conversion(ConversionRecord),
    Document {
        collection: String,
        id: String,
    },
    Payout(PayoutRecord),
    Collection(CollectionRecord),
    Order(OrderRecord),
    Refund(RefundRecord),
    /// A dispute's money, as the command that opened or resolved it left it.
    Dispute(DisputeRecord),
}

/// A command's result. `replayed` is true when the result is an earlier
/// one returned again (idempotent retry, or a concurrent quote execute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub outcome: Outcome,
    pub replayed: bool,
}
