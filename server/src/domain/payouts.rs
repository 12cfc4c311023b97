//! Payouts: money sent from a balance to an account, a wallet or an
//! address. Each operation is one function here; `http::routes::payouts`
//! and the operator's console only translate their input and output.

use sika_api::payouts::{CreatePayout, Payout};
use sika_api::{ListPage, ListQuery, MovementFilter};
use sika_engine::{Command, Outcome, PayoutId};

use crate::domain::error::{ApiResult, unexpected};
use crate::domain::instructions::{self, Deps};
use crate::domain::movements::{self, Created, created_or_replayed};
use crate::domain::pagination::Lists;
use crate::domain::principal::Principal;
use crate::domain::rails::lookup::{self, Lookup};
use crate::domain::render;

/// Creates the payout `request` asks for (its body's `fingerprint` tells a
/// retry from a different request under the same reference): checked
/// against the catalog and the balance, the destination looked up at its
/// provider first where the provider offers a lookup (an account it says
/// does not exist is refused before any money is held). A retry of a
/// created payout answers it as it is now, `replayed`.
pub(crate) async fn create(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreatePayout,
    fingerprint: [u8; 32],
) -> ApiResult<Created<Payout>> {
    let mut new = instructions::new_payout(deps, principal, request, fingerprint)?;
    let organization = principal.organization();
    let found = lookup::confirm_destination(
        deps.ledger,
        deps.rails,
        organization,
        "payout",
        &new.external_reference,
        &new.to,
    )
    .await?;
    match found {
        Some(Lookup::Found(Some(name))) => {
            new.rail_note = format!("{}; the account holder is {name}", new.rail_note)
        }
        Some(Lookup::Unavailable) => {
            new.rail_note = format!("{}; the account could not be looked up yet", new.rail_note);
        }
        _ => {}
    }
    let applied = deps.ledger.execute(Command::CreatePayout(Box::new(new))).await?;
    let Outcome::Payout(payout) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::payout(&payout, &[]);
    created_or_replayed(deps.ledger, organization, applied.replayed, &PayoutId::named(&payout.id), created)
}

/// One page of the caller's payouts, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: MovementFilter,
) -> ApiResult<ListPage<Payout>> {
    movements::page(lists, principal, query, filter)
}
