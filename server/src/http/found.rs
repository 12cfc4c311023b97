//! The answer to a read by id that finds nothing the caller may see: one
//! 404, worded `<noun> '<id>' not found`, whether the id was never issued or
//! belongs to another organization, so that an id tells a caller nothing
//! about organizations other than its own.

use sika_engine::records::{
    CollectionRecord, ConversionRecord, EventRecord, OrderRecord, PayoutRecord, QuoteRecord,
};

use crate::domain::checkout::{PaymentLink, PaymentPage};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::principal::Principal;
use crate::domain::recipients::Recipient;
use crate::domain::virtual_accounts::VirtualAccount;
use crate::domain::webhooks::{Delivery, Endpoint, Health};
use crate::store::request_log::RequestLogEntry;

/// `record`, or the 404 for the `noun` named `id`.
pub(crate) fn found<T>(record: Option<T>, noun: &str, id: &str) -> ApiResult<T> {
    record.ok_or_else(|| ApiError::not_found(format!("{noun} '{id}' not found")))
}

/// `record` if it belongs to the caller's organization; else the same 404
/// as for an id never issued.
pub(crate) fn owned<T: OwnedRecord>(
    record: Option<T>,
    principal: &Principal,
    noun: &str,
    id: &str,
) -> ApiResult<T> {
    found(record.filter(|r| r.organization() == principal.organization()), noun, id)
}

/// A record that belongs to one organization.
pub(crate) trait OwnedRecord {
    fn organization(&self) -> &str;
}

/// Implements [`OwnedRecord`] for records that keep their organization's id in
/// an `organization` field.
macro_rules! owned_by_field {
    ($($record:ty),* $(,)?) => {
        $(impl OwnedRecord for $record {
            fn organization(&self) -> &str {
                &self.organization
            }
        })*
    };
}

owned_by_field!(
    CollectionRecord,
    ConversionRecord,
    Delivery,
    EventRecord,
    OrderRecord,
    PaymentLink,
    PaymentPage,
    PayoutRecord,
    QuoteRecord,
    Recipient,
    RequestLogEntry,
    VirtualAccount,
);

/// A webhook endpoint is loaded with its health; the endpoint says whose it is.
impl OwnedRecord for (Endpoint, Health) {
    fn organization(&self) -> &str {
        &self.0.organization
    }
}
