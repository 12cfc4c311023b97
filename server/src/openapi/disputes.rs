//! The disputes part of the OpenAPI document: disputes, their threads, the
//! files attached to messages, and the sandbox simulations.

use serde_json::{Value, json};

#[allow(unused_imports)]
use super::{
    BINARY, Operation, amount, amount_input, envelope, list, nullable_string, object, reference, string,
};

pub(super) const OPERATIONS: &[Operation] = &[
    Operation {
        method: "get",
        path: "/v1/disputes",
        id: "listDisputes",
        summary: "Disputes, newest first; status filters (resolved matches accepted and declined)",
        scope: "disputes:read",
        body: None,
        responses: &[(200, "DisputeList")],
    },
    Operation {
        method: "get",
        path: "/v1/disputes/{id}",
        id: "getDispute",
        summary: "One dispute with its message thread, oldest first",
        scope: "disputes:read",
        body: None,
        responses: &[(200, "DisputeEnvelope"), (404, "Error")],
    },
    Operation {
        method: "post",
        path: "/v1/disputes/{id}/messages",
        id: "createDisputeMessage",
        summary: "Post to an open dispute's thread (400 bad_request once accepted or declined)",
        scope: "disputes:write",
        body: Some("DisputeMessageRequest"),
        responses: &[(201, "DisputeMessageEnvelope"), (404, "Error"), (409, "Error")],
    },
    Operation {
        method: "get",
        path: "/v1/disputes/{id}/messages",
        id: "listDisputeMessages",
        summary: "A dispute's messages, newest first",
        scope: "disputes:read",
        body: None,
        responses: &[(200, "DisputeMessageList"), (404, "Error")],
    },
    Operation {
        method: "post",
        path: "/v1/simulations/disputes",
        id: "simulateDispute",
        summary: "Sandbox: the payer disputes a completed collection or payment-link payment",
        scope: "disputes:write",
        body: Some("DisputeSimulationRequest"),
        responses: &[(201, "DisputeEnvelope"), (404, "Error"), (409, "Error")],
    },
    Operation {
        method: "post",
        path: "/v1/simulations/disputes/{id}/resolve",
        id: "simulateDisputeResolution",
        summary: "Sandbox: resolve an open dispute as accepted or declined",
        scope: "disputes:write",
        body: Some("DisputeResolution"),
        responses: &[(200, "DisputeEnvelope"), (404, "Error"), (409, "Error")],
    },
];

pub(super) fn schemas(add: &mut impl FnMut(&str, Value)) {
    let attachment =
        object(&["name", "url", "fileId"], json!({ "name": string(), "url": string(), "fileId": string() }));
    add(
        "DisputeMessage",
        object(
            &["id", "authorType", "body", "attachments", "createdAt"],
            json!({ "id": { "type": "string", "pattern": "^dsm_" }, "disputeId": string(), "authorType": { "enum": ["merchant"] }, "body": string(), "attachments": { "type": "array", "items": attachment }, "createdAt": string() }),
        ),
    );
    add("DisputeMessageEnvelope", envelope("message", "DisputeMessage"));
    add("DisputeMessageList", list("DisputeMessage"));
    add(
        "DisputeMessageRequest",
        object(
            &["body"],
            json!({ "body": { "type": "string", "minLength": 1, "maxLength": 5000 }, "attachments": { "type": "array", "maxItems": 10, "items": object(&["fileId"], json!({ "fileId": string(), "name": string(), "url": string() })) } }),
        ),
    );
    let required = [
        "id",
        "status",
        "amount",
        "currency",
        "reason",
        "collectionId",
        "paymentLinkId",
        "statusMessage",
        "evidenceDueBy",
        "resolvedAt",
        "createdAt",
        "updatedAt",
    ];
    let properties = json!({
        "id": { "type": "string", "pattern": "^dsp_" },
        "status": { "enum": ["open", "accepted", "declined", "resolved"] },
        "amount": amount(),
        "currency": string(),
        "reason": { "enum": crate::disputes::REASONS },
        "collectionId": string(),
        "paymentLinkId": nullable_string(),
        "statusMessage": string(),
        "evidenceDueBy": string(),
        "resolvedAt": nullable_string(),
        "createdAt": string(),
        "updatedAt": string(),
        "messages": { "type": "array", "items": reference("DisputeMessage") },
    });
    add("Dispute", object(&required, properties.clone()));
    // The single read and every dispute event carry the thread.
    let with_thread: Vec<&str> = required.iter().copied().chain(["messages"]).collect();
    add("DisputeWithThread", object(&with_thread, properties));
    add("DisputeEnvelope", envelope("dispute", "DisputeWithThread"));
    add("DisputeList", list("Dispute"));
    add(
        "DisputeSimulationRequest",
        object(
            &[],
            json!({ "collectionId": string(), "paymentLinkId": string(), "amount": amount_input(), "reason": { "enum": crate::disputes::REASONS } }),
        ),
    );
    add(
        "DisputeResolution",
        object(&["outcome"], json!({ "outcome": { "enum": crate::disputes::OUTCOMES } })),
    );
}
