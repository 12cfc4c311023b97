//! Collections: money a payer is charged for, pending on the balance until
//! they approve. Each operation is one function here;
//! `http::routes::collections` only translates its input and output.

use sika_api::collections::{Collection, CreateCollection};
use sika_api::{ListPage, ListQuery, MovementFilter};
use sika_engine::{CollectionId, Command, Outcome};

use crate::domain::error::{ApiResult, unexpected};
use crate::domain::instructions::{self, Deps};
use crate::domain::movements::{self, Created, created_or_replayed};
use crate::domain::pagination::Lists;
use crate::domain::principal::Principal;
use crate::domain::render;

/// Charges the payer `request` names (its body's `fingerprint` tells a
/// retry from a different request under the same reference). A retry of a
/// created collection answers it as it is now, `replayed`.
pub(crate) async fn create(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreateCollection,
    fingerprint: [u8; 32],
) -> ApiResult<Created<Collection>> {
    let new = instructions::new_collection(deps, principal, request, fingerprint)?;
    let applied = deps.ledger.execute(Command::CreateCollection(Box::new(new))).await?;
    let Outcome::Collection(collection) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::collection(&collection, &[], 0);
    let organization = principal.organization();
    created_or_replayed(
        deps.ledger,
        organization,
        applied.replayed,
        &CollectionId::named(&collection.id),
        created,
    )
}

/// One page of the caller's collections, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: MovementFilter,
) -> ApiResult<ListPage<Collection>> {
    movements::page(lists, principal, query, filter)
}
