//! `/v1/collections`: operations generated from the handlers and the wire
//! types (`sika_api::collections`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::collections::{Collection, CollectionEnvelope, CreateCollection};
use sika_api::{FieldRefusals, Id, ListPage, ListQuery, MovementFilter, PageRefusals, ReadRefusals, Replays};
use sika_engine::{Command, Outcome};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiResult, unexpected};
use crate::domain::instructions::{fingerprint, new_collection};
use crate::domain::render;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, from_value};
use crate::http::found::Loaded;
use crate::http::routes::movements::{self, created_or_replayed};

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read))
}

/// Charge a payer
///
/// Prompts the payer (mobile money) or debits their account; the amount is a
/// pending credit on the balance until they approve. The same
/// `externalReference` with the same body answers the original collection
/// (200) instead of charging twice.
#[utoipa::path(post, path = "/v1/collections", operation_id = "createCollection",
    request_body = CreateCollection, security(("bearer" = ["collections:write"])),
    responses(
        (status = 201, description = "The collection, pending until the payer answers", body = CollectionEnvelope),
        Replays<CollectionEnvelope>, FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<CollectionEnvelope>)> {
    let print = fingerprint(&raw);
    let request: CreateCollection = from_value(raw)?;
    let new = new_collection(&stack, &principal, request, print)?;
    let applied = stack.engine.execute(Command::CreateCollection(new)).await?;
    let Outcome::Collection(collection) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::collection(&collection, &[]);
    let (status, collection) =
        created_or_replayed(&stack, &principal, applied.replayed, &collection.id, created)?;
    Ok((status, Json(CollectionEnvelope { collection })))
}

/// One collection with its full timeline
#[utoipa::path(get, path = "/v1/collections/{id}", operation_id = "getCollection",
    params(Id<CollectionEnvelope>), security(("bearer" = ["collections:read"])),
    responses((status = 200, description = "The collection", body = CollectionEnvelope),
        ReadRefusals<CollectionEnvelope>),
)]
async fn read(Loaded { record: collection, .. }: Loaded<Collection>) -> ApiResult<Json<CollectionEnvelope>> {
    Ok(Json(CollectionEnvelope { collection }))
}

/// Collections, newest first
#[utoipa::path(get, path = "/v1/collections", operation_id = "listCollections",
    params(ListQuery, MovementFilter), security(("bearer" = ["collections:read"])),
    responses((status = 200, description = "One page of collections", body = ListPage<Collection>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, MovementFilter>,
) -> ApiResult<Json<ListPage<Collection>>> {
    movements::page(&stack, &principal, query, filter)
}
