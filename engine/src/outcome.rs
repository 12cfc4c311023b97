//! What a command produced. Its own module, below the code that applies
//! commands (payouts, collections, orders, the commands themselves), so
//! each can return one without importing the others.

use crate::records::*;

/// What a command produced: the resource it created or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
///
/// The records are boxed: a result is moved several times on its way to
/// the caller (out of the command, into the batch's results, through the
/// reply), and a payout is ~600 bytes where its box is 8.
pub enum Outcome {
    Transfers(Vec<TransferRecord>),
    Deposit(Box<DepositRecord>),
    Quote(Box<QuoteRecord>),
    Conversion(Box<ConversionRecord>),
    Document {
        collection: String,
        id: String,
    },
    Payout(Box<PayoutRecord>),
    Collection(Box<CollectionRecord>),
    Order(Box<OrderRecord>),
    Refund(Box<RefundRecord>),
    /// A dispute's money, as the command that opened or resolved it left it.
    Dispute(Box<DisputeRecord>),
}

/// A command's result. `replayed` is true when the result is an earlier
/// one returned again (idempotent retry, or a concurrent quote execute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub outcome: Outcome,
    pub replayed: bool,
}
