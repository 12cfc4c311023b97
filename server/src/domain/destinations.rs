//! Destination validation (`POST /v1/validate/bulk`). Each item is first
//! checked by the stack's rule (the sandbox's suffixes; on live, the
//! format a payout would need), then its bank code (`routingNumber`, one of
//! the method's `bankCode` options), and last, on live, looked up at the
//! provider the method is routed through when that provider offers an
//! account lookup (`rails::lookup`). Lookups run at most
//! `LOOKUPS_IN_FLIGHT_MAX` at a time, and an account named twice in one
//! call is looked up once.

use std::collections::HashMap;
use std::sync::Arc;

use sika_api::validation::{DestinationCheck, DestinationItem, DestinationResult, ValidationDepth};

use crate::domain::catalog::{self, Catalog, ValidationResult};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::rails::Rails;
use crate::domain::rails::lookup::{Lookup, lookup};
use crate::domain::stack_kind::StackKind;

/// The most destinations one call validates.
pub(crate) const BULK_ITEMS_MAX: usize = 100;
/// The most provider lookups one call has in flight at once.
const LOOKUPS_IN_FLIGHT_MAX: usize = 8;

/// A lookup to make: method code, bank code, account number.
type Key = (String, String, String);

/// What an item needs after the checks that need no provider.
enum Plan {
    Done(DestinationCheck),
    Lookup(Key),
}

/// A result per item, in the items' order, checked by the rules of the
/// stack `stack` with its catalog, looked up through its `rails`.
pub(crate) async fn validate(
    stack: StackKind,
    catalog: &Catalog,
    rails: &Arc<Rails>,
    items: Vec<DestinationItem>,
) -> ApiResult<Vec<DestinationResult>> {
    if items.is_empty() || items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let mut plans = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if item.code.trim().is_empty() {
            return Err(ApiError::validation(&format!("items[{index}].code"), "must not be empty"));
        }
        plans.push(plan(stack, catalog, rails, item));
    }
    let mut keys: Vec<Key> = plans
        .iter()
        .filter_map(|p| match p {
            Plan::Lookup(key) => Some(key.clone()),
            Plan::Done(_) => None,
        })
        .collect();
    keys.sort();
    keys.dedup();
    let found = lookups(rails, keys).await;
    Ok(items
        .into_iter()
        .zip(plans)
        .map(|(item, plan)| {
            let result = match plan {
                Plan::Done(check) => check,
                Plan::Lookup(key) => looked_up(found.get(&key).unwrap_or(&Lookup::Unavailable)),
            };
            DestinationResult { code: item.code, result }
        })
        .collect())
}

fn blank_to_none(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|s| !s.is_empty())
}

fn plan(stack: StackKind, catalog: &Catalog, rails: &Rails, item: &DestinationItem) -> Plan {
    let account_number = blank_to_none(item.account_number.as_deref());
    let address = item.address.as_deref();
    let (result, checked) = match stack {
        StackKind::Sandbox => {
            (catalog::sandbox_validate(&item.code, account_number, address), ValidationDepth::Rail)
        }
        StackKind::Live => {
            (catalog::live_validate(catalog, &item.code, account_number, address), ValidationDepth::Format)
        }
    };
    let method = catalog.find_method(&item.code);
    let (Some(method), Some(number), true) = (method, account_number, result.valid) else {
        return Plan::Done(result.render(checked));
    };
    let routing = blank_to_none(item.routing_number.as_deref()).filter(|_| method.takes_bank_code());
    let bank_code = match routing.map(|r| method.bank_code(r)) {
        Some(None) => return Plan::Done(ValidationResult::invalid("invalid_bank_code").render(checked)),
        Some(Some(code)) => Some(code),
        None => None,
    };
    if stack == StackKind::Live && rails.resolves(&method.code) {
        return match bank_code {
            Some(bank) => Plan::Lookup((method.code.clone(), bank.to_string(), number.to_string())),
            None => Plan::Done(ValidationResult::invalid("missing_bank_code").render(checked)),
        };
    }
    Plan::Done(result.render(checked))
}

/// Runs the lookups, at most `LOOKUPS_IN_FLIGHT_MAX` at a time.
async fn lookups(rails: &Arc<Rails>, keys: Vec<Key>) -> HashMap<Key, Lookup> {
    let mut found = HashMap::with_capacity(keys.len());
    let mut waiting = keys.into_iter();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < LOOKUPS_IN_FLIGHT_MAX {
            let Some(key) = waiting.next() else { break };
            let rails = rails.clone();
            running.spawn(async move {
                let (code, bank, number) = &key;
                let answer = lookup(&rails, code, bank, number).await.unwrap_or(Lookup::Unavailable);
                (key, answer)
            });
        }
        match running.join_next().await {
            Some(Ok((key, answer))) => {
                found.insert(key, answer);
            }
            // A lookup that panicked answers `provider_unavailable`.
            Some(Err(_)) => {}
            None => return found,
        }
    }
}

fn looked_up(answer: &Lookup) -> DestinationCheck {
    let (valid, account_name, reason, checked) = match answer {
        Lookup::Found(name) => (true, name.clone(), None, ValidationDepth::Rail),
        Lookup::NotFound => (false, None, Some("account_not_found"), ValidationDepth::Rail),
        Lookup::Unavailable => (false, None, Some("provider_unavailable"), ValidationDepth::Format),
    };
    DestinationCheck { valid, account_name, reason: reason.map(str::to_string), checked }
}
