//! Events as the API and webhook bodies show them: the resource an event
//! carries is rendered through `domain::views`, exactly as its GET showed it
//! when the event was committed; and the use cases that read events.

use serde_json::{Value, json};
use sika_api::webhooks::WebhookEvent;
use sika_api::{ListPage, ListQuery};
use sika_engine::{Engine, EventPayload, EventRecord};

use crate::domain::error::ApiResult;
use crate::domain::pagination::Lists;
use crate::domain::render::{self, timestamp};
use crate::domain::views;

/// The list an organization's events are indexed under.
const EVENTS: &str = "events";

/// The resource an event carries, rendered exactly as its GET rendered it
/// when the event was committed (see `views`).
pub(crate) fn event_data(engine: &Engine, event: &EventRecord) -> ApiResult<Value> {
    let at = views::AsOf::At(event.created_at);
    Ok(match &event.payload {
        EventPayload::Conversion(c) => render::to_json(&render::conversion(c)),
        EventPayload::AccountCredited { account, .. } => {
            render::to_json(&render::account(account, engine.mid_rate(&account.currency, "USD"))?)
        }
        EventPayload::WebhookTest { endpoint_id } => {
            json!({ "endpointId": endpoint_id, "message": "webhook.test" })
        }
        EventPayload::Payout(p) => render::to_json(&views::payout(&engine.read()?, p, at)?),
        EventPayload::Collection(c) => render::to_json(&views::collection(&engine.read()?, c, at)?),
        EventPayload::Order(o) => render::to_json(&views::order(&engine.read()?, o, None, at)?),
        EventPayload::OrderWithPayout(o, p) => {
            render::to_json(&views::order(&engine.read()?, o, Some(p), at)?)
        }
        EventPayload::Rendered { json, .. } => serde_json::from_str(json).unwrap_or(Value::Null),
        EventPayload::Refund(r) => render::to_json(&views::refund(&engine.read()?, r, at)?),
        EventPayload::Dispute(money) => {
            match crate::domain::disputes::event_view(&engine.read()?, money, event)? {
                Some(view) => render::to_json(&view),
                None => Value::Null,
            }
        }
    })
}

/// The webhook body: `{id, event, data, createdAt}`.
pub(crate) fn event_body(
    engine: &Engine,
    event: &EventRecord,
) -> ApiResult<sika_api::webhooks::WebhookEvent> {
    Ok(sika_api::webhooks::WebhookEvent {
        id: event.id.clone(),
        event: event.kind.clone(),
        data: event_data(engine, event)?,
        created_at: timestamp(event.created_at),
    })
}

/// `GET /v1/webhooks/events`: one page of the organization's events,
/// newest first.
pub(crate) fn list(
    lists: &Lists,
    organization: &str,
    query: &ListQuery,
) -> ApiResult<ListPage<WebhookEvent>> {
    lists.page(organization, EVENTS, query, |snapshot, id| {
        snapshot.event(id)?.map(|event| event_body(lists.ledger, &event)).transpose()
    })
}
