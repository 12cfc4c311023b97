//! Typed resource ids: a payout's id, a collection's, an order's and an
//! organization's are different types, so a call that takes one cannot be
//! handed another. Made by `ids::new_id_at` like every id; this module only
//! names them.

/// The id of one kind of resource, so a call that takes a payout's id
/// cannot be handed a collection's. Stored and sent as the plain text
/// (`#[serde(transparent)]`: postcard writes exactly the string's bytes, so
/// records and jobs holding one keep their format).
macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id `text` names, as a caller or a stored record wrote
            /// it. Any text is a well-formed question: an id that was never
            /// issued is simply not found.
            pub fn named(text: impl Into<String>) -> $name {
                $name(text.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                $name(text)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> $name {
                $name(text.to_string())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
    };
}

typed_id!(
    /// A payout's id, `pay_<currency>_…`.
    PayoutId
);
typed_id!(
    /// A collection's id, `col_…`.
    CollectionId
);
typed_id!(
    /// An order's id, `ord_…`.
    OrderId
);
typed_id!(
    /// A refund's id, `rf_…`.
    RefundId
);
