//! What kinds of event the engine records.
//!
//! Each kind is one variant of [`EventKind`]; everything that lists, checks
//! or stores kinds (the webhook subscription list, the event a command
//! records, the `kind` an [`EventRecord`](crate::EventRecord) stores)
//! derives from these variants, so a new kind is one new variant.
//!
//! A kind's name is its variant's words in snake case with the first
//! separator a dot: the first word names the resource, the rest what
//! happened to it (`OrderAwaitingFunds` is `order.awaiting_funds`). That
//! name is what events store, byte for byte as before the enum existed.

use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strum::{IntoStaticStr, VariantArray};

/// One kind of event. Not `non_exhaustive`: code that maps kinds to
/// behaviour matches on every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum EventKind {
    PayoutCompleted,
    PayoutFailed,
    PayoutReversed,
    CollectionPending,
    CollectionCompleted,
    CollectionFailed,
    AccountCredited,
    ConversionCompleted,
    OrderAwaitingFunds,
    OrderAwaitingConfirmations,
    OrderFundsReceived,
    OrderOverpaid,
    OrderUnderpaid,
    OrderProcessingPayout,
    OrderCompleted,
    OrderFailed,
    OrderExpired,
    DisputeCreated,
    DisputeUpdated,
    DisputeClosed,
    WebhookTest,
    RefundPending,
    RefundCompleted,
    RefundFailed,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [EventKind] = Self::VARIANTS;

    /// The kind's name, e.g. `payout.completed` (see the module's docs).
    pub fn name(self) -> &'static str {
        static NAMES: OnceLock<Vec<String>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            Self::VARIANTS
                .iter()
                .map(|kind| {
                    let snake: &'static str = kind.into();
                    snake.replacen('_', ".", 1)
                })
                .collect()
        });
        // `self as usize` is the variant's index in `VARIANTS`: the enum has
        // no explicit discriminants and `VARIANTS` lists it in order.
        names.get(self as usize).map_or("", String::as_str)
    }

    /// The kind `name` names, if any.
    pub fn from_name(name: &str) -> Option<EventKind> {
        Self::VARIANTS.iter().copied().find(|kind| kind.name() == name)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        EventKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event kind '{name}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    /// The names events have always stored: changing one would change
    /// stored records and every webhook body, so each is pinned here.
    #[test]
    fn names_are_the_stored_ones() {
        let expected = [
            "payout.completed",
            "payout.failed",
            "payout.reversed",
            "collection.pending",
            "collection.completed",
            "collection.failed",
            "account.credited",
            "conversion.completed",
            "order.awaiting_funds",
            "order.awaiting_confirmations",
            "order.funds_received",
            "order.overpaid",
            "order.underpaid",
            "order.processing_payout",
            "order.completed",
            "order.failed",
            "order.expired",
            "dispute.created",
            "dispute.updated",
            "dispute.closed",
            "webhook.test",
            "refund.pending",
            "refund.completed",
            "refund.failed",
        ];
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, expected);
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.name()), Some(*kind));
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!(EventKind::from_name("payout_completed"), None);
        assert_eq!(EventKind::from_name("payout.done"), None);
    }

    /// A kind inside a command encodes as its name, as the `String` it
    /// replaced did.
    #[test]
    fn encodes_as_its_name() {
        let kind = EventKind::OrderAwaitingFunds;
        let as_kind = postcard::to_allocvec(&kind).unwrap();
        let as_string = postcard::to_allocvec(&"order.awaiting_funds".to_string()).unwrap();
        assert_eq!(as_kind, as_string);
        assert_eq!(postcard::from_bytes::<EventKind>(&as_kind).unwrap(), kind);
        let unknown = postcard::to_allocvec(&"order.vanished".to_string()).unwrap();
        assert!(postcard::from_bytes::<EventKind>(&unknown).is_err());
    }
}
