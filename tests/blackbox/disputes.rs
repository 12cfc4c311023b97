//! Disputes, their message threads and file uploads, end to end over HTTP:
//! opening a dispute on a completed sandbox collection, its events, the
//! thread with an uploaded attachment, resolution (sandbox and operator),
//! every refusal with its field, files byte for byte, and a message racing
//! a resolution. Each test runs its own node and ends by stopping it and
//! verifying its books.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// A small binary file, with its SHA-256 and base64 worked out by hand
/// (`sha256sum`, `base64`).
const RECEIPT: &[u8] = b"%PDF-1.4 sandbox receipt\n\x00\x01\x02\xff";
const RECEIPT_SHA256: &str = "41b26c328e430bab5359ac29cf6b8d8df78942e7e0fafb6fc92a578f70a8f24c";
const RECEIPT_BASE64: &str = "JVBERi0xLjQgc2FuZGJveCByZWNlaXB0CgABAv8=";
const FILE_SIZE_MAX: usize = 512 * 1024;

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(TABLE[(n >> 18) as usize & 63] as char);
        out.push(TABLE[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 { TABLE[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if chunk.len() > 2 { TABLE[n as usize & 63] as char } else { '=' });
    }
    out
}

/// A sandbox collection of `amount` GHS, polled until it reaches `outcome`; returns its id.
async fn collection(api: &Api, node: &Node, amount: &str, reference: &str, outcome: &str) -> String {
    let (_, settled) = collect_until(api, node, mtn_collection(amount, reference), outcome).await;
    settled["id"].as_str().unwrap().to_string()
}

async fn upload(api: &Api, node: &Node, name: &str, content_type: &str, data: &str) -> Value {
    let body = json!({ "name": name, "contentType": content_type, "data": data });
    let r = api.post(&node.sandbox_url("/v1/files"), &node.creds.sandbox_key, body).await;
    r.expect(201);
    r.body["file"].clone()
}

async fn open_dispute(api: &Api, node: &Node, body: Value) -> Resp {
    api.post(&node.sandbox_url("/v1/simulations/disputes"), &node.creds.sandbox_key, body).await
}

async fn post_message(api: &Api, node: &Node, id: &str, body: Value) -> Resp {
    api.post(&node.sandbox_url(&format!("/v1/disputes/{id}/messages")), &node.creds.sandbox_key, body).await
}

async fn get_dispute(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/disputes/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["dispute"].clone()
}

fn ids(list: &Value) -> Vec<String> {
    list["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_string()).collect()
}

/// The raw bytes of `GET /v1/files/{id}/contents` (not JSON, so not through
/// `Api::check`), after checking the envelope headers by hand.
async fn contents(api: &Api, node: &Node, key: &str, id: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let url = node.sandbox_url(&format!("/v1/files/{id}/contents"));
    let response = api.client.get(&url).bearer_auth(key).send().await.expect("GET contents");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert!(headers["x-request-id"].to_str().unwrap().starts_with("req_"), "{headers:?}");
    assert_eq!(headers["sika-version"], VERSION);
    (status, headers, response.bytes().await.unwrap().to_vec())
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_dispute_from_opening_to_resolution() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;
    let paid = collection(&api, &node, "25.00", "dsp-paid", "completed").await;

    // Opening: the request is checked field by field first.
    let checks = [
        (json!({ "collectionId": paid, "amount": "25.01" }), "amount"),
        (json!({ "collectionId": paid, "amount": "0" }), "amount"),
        (json!({ "collectionId": paid, "amount": "1.001" }), "amount"),
        (json!({ "collectionId": paid, "paymentLinkId": "pl_x" }), "paymentLinkId"),
        (json!({ "amount": "1.00" }), "collectionId"),
        (json!({ "collectionId": paid, "reason": "bored" }), "reason"),
        (json!({ "collectionId": paid, "colour": "red" }), "colour"),
    ];
    for (body, field) in checks {
        open_dispute(&api, &node, body).await.expect_invalid(field);
    }
    open_dispute(&api, &node, json!({ "collectionId": "col_nope" })).await.expect_error(404, "not_found");
    open_dispute(&api, &node, json!({ "paymentLinkId": "pl_nope" })).await.expect_error(404, "not_found");
    let failed = collection(&api, &node, "5.51", "dsp-failed", "failed").await;
    let r = open_dispute(&api, &node, json!({ "collectionId": failed })).await;
    r.expect_refusal(400, "bad_request", "completed");

    // Open it for part of the payment.
    let r = open_dispute(
        &api,
        &node,
        json!({ "collectionId": paid, "amount": "10.00", "reason": "product_not_received" }),
    )
    .await;
    let (opened, id) = r.created("dispute", "dsp_");
    assert_eq!(opened["status"], "open");
    assert_eq!(opened["amount"], "10.00");
    assert_eq!(opened["currency"], "GHS");
    assert_eq!(opened["reason"], "product_not_received");
    assert_eq!(opened["collectionId"], paid.as_str());
    assert_eq!(opened["paymentLinkId"], Value::Null);
    assert_eq!(opened["resolvedAt"], Value::Null);
    assert_eq!(opened["messages"], json!([]));
    assert_eq!(millis(&opened["evidenceDueBy"]) - millis(&opened["createdAt"]), 7 * 24 * 3600 * 1000);
    // The event carries the dispute exactly as its GET shows it.
    assert_eq!(get_dispute(&api, &node, &id).await, opened);
    assert_eq!(wait_for_events(&api, &base, &key, &id, &["dispute.created"]).await, ["dispute.created"]);
    assert_eq!(sink.wait_for("dispute.created", &id).await["data"], opened);

    // One open dispute per payment; the default reason and amount.
    let r = open_dispute(&api, &node, json!({ "collectionId": paid })).await;
    r.expect_error(400, "bad_request");
    assert!(r.body["message"].as_str().unwrap().contains(&id), "names the open dispute: {}", r.text);
    let other = collection(&api, &node, "7.00", "dsp-other", "completed").await;
    let r = open_dispute(&api, &node, json!({ "collectionId": other })).await;
    r.expect(201);
    let defaulted = r.body["dispute"].clone();
    assert_eq!((&defaulted["amount"], &defaulted["reason"]), (&json!("7.00"), &json!("general")));
    let other_id = defaulted["id"].as_str().unwrap().to_string();

    // The thread: checked, then posted with an uploaded attachment.
    let file = upload(&api, &node, "receipt.pdf", "application/pdf", RECEIPT_BASE64).await;
    let file_id = file["id"].as_str().unwrap();
    let refusals = [
        (json!({ "body": "   " }), "body"),
        (json!({ "body": "x".repeat(5001) }), "body"),
        (json!({}), "body"),
        (json!({ "body": "hi", "attachments": [{ "fileId": "file_nope" }] }), "attachments[0].fileId"),
        (
            json!({ "body": "hi", "attachments": [{ "fileId": file_id }, { "name": "x" }] }),
            "attachments[1].fileId",
        ),
        (json!({ "body": "hi", "attachments": vec![json!({ "fileId": file_id }); 11] }), "attachments"),
        (json!({ "body": "hi", "attachments": [{ "fileId": file_id, "name": "" }] }), "attachments[0].name"),
    ];
    for (body, field) in refusals {
        post_message(&api, &node, &id, body).await.expect_invalid(field);
    }
    let r = post_message(
        &api,
        &node,
        &id,
        json!({ "body": "  The parcel was delivered; receipt attached.  ", "attachments": [{ "fileId": file_id }] }),
    )
    .await;
    r.expect(201);
    let first = r.body["message"].clone();
    assert!(first["id"].as_str().unwrap().starts_with("dsm_"), "{first}");
    assert_eq!(first["authorType"], "merchant");
    assert_eq!(first["body"], "The parcel was delivered; receipt attached.");
    assert_eq!(
        first["attachments"],
        json!([{ "name": "receipt.pdf", "url": format!("/v1/files/{file_id}/contents"), "fileId": file_id }])
    );
    let r = post_message(
        &api,
        &node,
        &id,
        json!({ "body": "Courier log too.", "attachments": [{ "fileId": file_id, "name": "courier.pdf", "url": "https://example.com/log" }] }),
    )
    .await;
    r.expect(201);
    let second = r.body["message"].clone();
    assert_eq!(second["attachments"][0]["name"], "courier.pdf");
    assert_eq!(second["attachments"][0]["url"], "https://example.com/log");

    // The single read has the thread oldest first; the list is newest first and pages.
    let thread = get_dispute(&api, &node, &id).await;
    assert_eq!(thread["messages"], json!([first, second]));
    let url = node.sandbox_url(&format!("/v1/disputes/{id}/messages"));
    let r = api.get(&url, &key).await;
    r.expect(200);
    assert_eq!(r.body["data"], json!([second, first]));
    let r = api.get(&format!("{url}?limit=1"), &key).await;
    r.expect(200);
    assert_eq!(
        (ids(&r.body), &r.body["hasMore"]),
        (vec![second["id"].as_str().unwrap().to_string()], &json!(true))
    );
    let cursor = r.body["nextCursor"].as_str().unwrap();
    let r = api.get(&format!("{url}?limit=1&cursor={cursor}"), &key).await;
    r.expect(200);
    assert_eq!(r.body["data"], json!([first]));

    // Lists and filters.
    let r = api.get(&node.sandbox_url("/v1/disputes"), &key).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [other_id.clone(), id.clone()], "newest first");
    assert!(r.body["data"][0].get("messages").is_none(), "lists carry no thread");
    let r = api.get(&node.sandbox_url("/v1/disputes?status=open&limit=1"), &key).await;
    r.expect(200);
    assert_eq!((ids(&r.body), &r.body["hasMore"]), (vec![other_id.clone()], &json!(true)));
    let r = api.get(&node.sandbox_url("/v1/disputes?status=resolved"), &key).await;
    r.expect(200);
    assert!(ids(&r.body).is_empty());
    api.get(&node.sandbox_url("/v1/disputes?status=closed"), &key).await.expect_invalid("status");

    // Unknown disputes.
    api.get(&node.sandbox_url("/v1/disputes/dsp_nope"), &key).await.expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/disputes/dsp_nope/messages"), &key).await.expect_error(404, "not_found");
    post_message(&api, &node, "dsp_nope", json!({ "body": "hello" })).await.expect_error(404, "not_found");
    let resolve_url = |d: &str| node.sandbox_url(&format!("/v1/simulations/disputes/{d}/resolve"));
    api.post(&resolve_url("dsp_nope"), &key, json!({ "outcome": "accepted" }))
        .await
        .expect_error(404, "not_found");

    // Resolution.
    api.post(&resolve_url(&id), &key, json!({ "outcome": "maybe" })).await.expect_invalid("outcome");
    let r = api.post(&resolve_url(&id), &key, json!({ "outcome": "accepted" })).await;
    r.expect(200);
    let resolved = r.body["dispute"].clone();
    assert_eq!(resolved["status"], "accepted");
    assert!(millis(&resolved["resolvedAt"]) >= millis(&resolved["createdAt"]));
    assert_eq!(resolved["messages"], json!([first, second]));
    assert_eq!(get_dispute(&api, &node, &id).await, resolved);
    let names = wait_for_events(&api, &base, &key, &id, &["dispute.closed"]).await;
    assert_eq!(names, ["dispute.created", "dispute.updated", "dispute.closed"]);
    assert_eq!(sink.wait_for("dispute.updated", &id).await["data"], resolved);
    assert_eq!(sink.wait_for("dispute.closed", &id).await["data"], resolved);

    // A resolved dispute's thread is closed, and it cannot be resolved again.
    let r = post_message(&api, &node, &id, json!({ "body": "One more thing" })).await;
    r.expect_error(400, "bad_request");
    api.post(&resolve_url(&id), &key, json!({ "outcome": "declined" }))
        .await
        .expect_error(409, "invalid_state");
    assert_eq!(get_dispute(&api, &node, &id).await["messages"].as_array().unwrap().len(), 2);
    let r = api.get(&node.sandbox_url("/v1/disputes?status=resolved"), &key).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [id.as_str()]);
    let r = api.get(&node.sandbox_url("/v1/disputes?status=accepted"), &key).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [id.as_str()]);
    // Once resolved, the payment can be disputed again.
    let r = open_dispute(&api, &node, json!({ "collectionId": paid, "reason": "duplicate" })).await;
    let (_, again) = r.created("dispute", "dsp_");

    // The operator: every dispute with its organization and thread, and resolution.
    let admin = &node.creds.admin_token;
    let r = api.get(&node.admin_url("/admin/v1/sandbox/disputes"), admin).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [again.clone(), other_id.clone(), id.clone()]);
    let listed = &r.body["data"][2];
    assert_eq!(listed["organizationId"], node.creds.organization_id.as_str());
    assert_eq!(listed["status"], "accepted");
    assert_eq!(listed["amount"], "10.00");
    assert_eq!(listed["messages"], json!([first, second]));
    let r = api.get(&node.admin_url("/admin/v1/sandbox/disputes?status=open"), admin).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [again.clone(), other_id.clone()]);
    let r = api.get(&node.admin_url(&format!("/admin/v1/sandbox/disputes/{other_id}")), admin).await;
    r.expect(200);
    assert_eq!(r.body["dispute"]["organizationId"], node.creds.organization_id.as_str());
    assert_eq!(r.body["dispute"]["messages"], json!([]));
    api.get(&node.admin_url(&format!("/admin/v1/live/disputes/{other_id}")), admin)
        .await
        .expect_error(404, "not_found");
    let admin_resolve = node.admin_url(&format!("/admin/v1/sandbox/disputes/{other_id}/resolve"));
    api.post(&admin_resolve, admin, json!({ "outcome": "lost" })).await.expect_invalid("outcome");
    let r = api.post(&admin_resolve, admin, json!({ "outcome": "declined" })).await;
    r.expect(200);
    assert_eq!(r.body["dispute"]["status"], "declined");
    assert_eq!(r.body["dispute"]["organizationId"], node.creds.organization_id.as_str());
    api.post(&admin_resolve, admin, json!({ "outcome": "declined" }))
        .await
        .expect_error(409, "invalid_state");
    assert_eq!(get_dispute(&api, &node, &other_id).await["status"], "declined");
    // The operator's decisions are in the audit log, refusals included.
    let audit = api.get(&node.admin_url("/admin/v1/audit?limit=3"), admin).await;
    audit.expect(200);
    let decided: Vec<(&str, &str, &str)> = audit.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["action"].as_str().unwrap(), e["target"].as_str().unwrap(), e["outcome"].as_str().unwrap())
        })
        .collect();
    let other = other_id.as_str();
    let want = [
        ("dispute.resolve", other, "failed"),
        ("dispute.resolve", other, "succeeded"),
        ("dispute.resolve", other, "failed"),
    ];
    assert_eq!(decided, want, "{}", audit.text);
    assert_eq!(audit.body["data"][1]["detail"], "outcome: declined");
    assert_eq!(audit.body["data"][1]["stack"], "sandbox");
    let names = wait_for_events(&api, &base, &key, &other_id, &["dispute.closed"]).await;
    assert_eq!(names, ["dispute.created", "dispute.updated", "dispute.closed"]);
    api.get(&node.admin_url("/admin/v1/sandbox/disputes"), "adm_wrong")
        .await
        .expect_error(401, "unauthorized");

    // The simulations are listed, and on live they do not exist.
    let r = api.get(&node.sandbox_url("/v1/simulations"), &key).await;
    r.expect(200);
    let paths: Vec<&str> =
        r.body["data"].as_array().unwrap().iter().filter_map(|s| s["path"].as_str()).collect();
    assert!(paths.contains(&"/v1/simulations/disputes"), "{paths:?}");
    assert!(paths.contains(&"/v1/simulations/disputes/{id}/resolve"), "{paths:?}");
    let live = &node.creds.live_key;
    api.post(&node.live_url("/v1/simulations/disputes"), live, json!({ "collectionId": paid }))
        .await
        .expect_error(404, "not_found");
    api.post(
        &node.live_url(&format!("/v1/simulations/disputes/{again}/resolve")),
        live,
        json!({ "outcome": "accepted" }),
    )
    .await
    .expect_error(404, "not_found");
    // The stacks are separate: live knows none of the sandbox's disputes.
    api.get(&node.live_url(&format!("/v1/disputes/{again}")), live).await.expect_error(404, "not_found");
    let r = api.get(&node.live_url("/v1/disputes"), live).await;
    r.expect(200);
    assert!(ids(&r.body).is_empty());

    // Scopes: reading needs disputes:read, writing disputes:write.
    let session = &node.creds.owner_session;
    let (_, reader) =
        create_key(&api, &base, session, json!({ "name": "reader", "scopes": ["disputes:read"] })).await;
    api.get(&node.sandbox_url("/v1/disputes"), &reader).await.expect(200);
    api.get(&node.sandbox_url(&format!("/v1/disputes/{again}")), &reader).await.expect(200);
    post_message(&api, &node, &again, json!({ "body": "hi" })).await.expect(201);
    api.post(&node.sandbox_url(&format!("/v1/disputes/{again}/messages")), &reader, json!({ "body": "hi" }))
        .await
        .expect_error(403, "forbidden");
    api.post(&node.sandbox_url("/v1/simulations/disputes"), &reader, json!({ "collectionId": other }))
        .await
        .expect_error(403, "forbidden");
    let (_, payer) =
        create_key(&api, &base, session, json!({ "name": "payer", "scopes": ["payouts:write"] })).await;
    api.get(&node.sandbox_url("/v1/disputes"), &payer).await.expect_error(403, "forbidden");

    // Disputes move money: of the 32.00 the two collections paid, the
    // accepted dispute took 10.00 and the open one (25.00) holds the 22.00
    // left (the declined one's 7.00 came back and went to it), so nothing
    // is available and it is 3.00 short.
    assert_eq!(balance(&api, &base, &key, "GHS").await, "0.00");
    assert_eq!(get_dispute(&api, &node, &again).await["heldAmount"], "22.00");
    node.stop_and_verify();
}

#[tokio::test]
async fn files_round_trip_byte_for_byte() {
    let Sandbox { node, api, key, .. } = Sandbox::start();

    assert_eq!(base64(RECEIPT), RECEIPT_BASE64, "the test's own encoder");
    let file = upload(&api, &node, "receipt.pdf", "application/pdf", RECEIPT_BASE64).await;
    let id = file["id"].as_str().unwrap();
    assert!(id.starts_with("file_"), "{id}");
    assert_eq!(file["name"], "receipt.pdf");
    assert_eq!(file["contentType"], "application/pdf");
    assert_eq!(file["size"], RECEIPT.len());
    assert_eq!(file["sha256"], RECEIPT_SHA256);
    assert_eq!(file["url"], format!("/v1/files/{id}/contents"));
    let r = api.get(&node.sandbox_url(&format!("/v1/files/{id}")), &key).await;
    r.expect(200);
    assert_eq!(r.body["file"], file);

    let (status, headers, bytes) = contents(&api, &node, &key, id).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, RECEIPT);
    assert_eq!(headers["content-type"], "application/pdf");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["content-disposition"].to_str().unwrap().starts_with("attachment"), "{headers:?}");
    // The file's url, taken as given, is the same download.
    let url = format!("{}{}", node.sandbox, file["url"].as_str().unwrap());
    let fetched = api.client.get(&url).bearer_auth(&key).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(fetched.as_ref(), RECEIPT);

    // The content type defaults; the largest file is accepted, one byte more is not.
    let exact = vec![0xA5u8; FILE_SIZE_MAX];
    let body = json!({ "name": "big.bin", "data": base64(&exact) });
    let r = api.post(&node.sandbox_url("/v1/files"), &key, body).await;
    r.expect(201);
    let big = r.body["file"].clone();
    assert_eq!(
        (&big["size"], &big["contentType"]),
        (&json!(FILE_SIZE_MAX), &json!("application/octet-stream"))
    );
    let (status, headers, bytes) = contents(&api, &node, &key, big["id"].as_str().unwrap()).await;
    assert_eq!((status, bytes == exact), (200, true));
    assert_eq!(headers["content-type"], "application/octet-stream");

    let refusals = [
        (json!({ "name": "big.bin", "data": base64(&vec![0u8; FILE_SIZE_MAX + 1]) }), "data"),
        (json!({ "name": "empty.bin", "data": "" }), "data"),
        (json!({ "name": "bad.bin", "data": "not base64!" }), "data"),
        (json!({ "name": "", "data": RECEIPT_BASE64 }), "name"),
        (json!({ "name": "n".repeat(256), "data": RECEIPT_BASE64 }), "name"),
        (json!({ "name": "a.pdf", "contentType": "pdf", "data": RECEIPT_BASE64 }), "contentType"),
        (json!({ "name": "a.pdf" }), "data"),
        (json!({ "data": RECEIPT_BASE64 }), "name"),
    ];
    for (body, field) in refusals {
        api.post(&node.sandbox_url("/v1/files"), &key, body).await.expect_invalid(field);
    }

    // Lists, unknown files, other stacks and scopes.
    let r = api.get(&node.sandbox_url("/v1/files"), &key).await;
    r.expect(200);
    assert_eq!(ids(&r.body), [big["id"].as_str().unwrap(), id]);
    api.get(&node.sandbox_url("/v1/files/file_nope"), &key).await.expect_error(404, "not_found");
    let (status, _, bytes) = contents(&api, &node, &key, "file_nope").await;
    assert_eq!(status, 404);
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap()["error"], "not_found");
    let live = &node.creds.live_key;
    api.get(&node.live_url(&format!("/v1/files/{id}")), live).await.expect_error(404, "not_found");
    let (status, _, _) = contents(&api, &node, "sk_test_wrong", id).await;
    assert_eq!(status, 401);
    let reader = scoped_key(&api, &node, "reader", &["disputes:read"]).await;
    api.get(&node.sandbox_url(&format!("/v1/files/{id}")), &reader).await.expect(200);
    let (status, _, bytes) = contents(&api, &node, &reader, id).await;
    assert_eq!((status, bytes.as_slice()), (200, RECEIPT));
    api.post(&node.sandbox_url("/v1/files"), &reader, json!({ "name": "a", "data": RECEIPT_BASE64 }))
        .await
        .expect_error(403, "forbidden");
    node.stop_and_verify();
}

/// Twenty messages race one resolution, several times over. Whatever the
/// interleaving, a message answered `201` is in the thread (and in the
/// resolved dispute's events), every other one got `400 bad_request`, and
/// nothing was stored after the resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[expect(clippy::too_many_lines)]
async fn messages_racing_a_resolution_never_outlive_it() {
    const MESSAGES: usize = 20;
    const ROUNDS: usize = 4;
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let paid = collection(&api, &node, "40.00", "dsp-race", "completed").await;
    let (mut before, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let r = open_dispute(&api, &node, json!({ "collectionId": paid })).await;
        let (_, id) = r.created("dispute", "dsp_");
        let mut tasks = Vec::new();
        for n in 0..MESSAGES {
            let (task_api, url, task_key) =
                (api.clone(), node.sandbox_url(&format!("/v1/disputes/{id}/messages")), key.clone());
            tasks.push(tokio::spawn(async move {
                let r = task_api
                    .post(&url, &task_key, json!({ "body": format!("round {round} message {n}") }))
                    .await;
                (r.status, r.error().to_string(), r.body["message"]["id"].as_str().map(str::to_string))
            }));
            // The resolution starts somewhere among the messages, differently each round.
            if n == round * MESSAGES / ROUNDS {
                let (api, url, key) = (
                    api.clone(),
                    node.sandbox_url(&format!("/v1/simulations/disputes/{id}/resolve")),
                    key.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    let r = api.post(&url, &key, json!({ "outcome": "declined" })).await;
                    (r.status, "resolve".to_string(), None)
                }));
            }
        }
        let mut accepted = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                (200, what, None) if what == "resolve" => {}
                (201, _, Some(message)) => accepted.push(message),
                (400, code, None) if code == "bad_request" => refused += 1,
                other => panic!("unexpected answer in the race: {other:?}"),
            }
        }
        before += accepted.len();
        let dispute = get_dispute(&api, &node, &id).await;
        assert_eq!(dispute["status"], "declined");
        let thread: Vec<String> = dispute["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect();
        let mut sorted = thread.clone();
        sorted.sort();
        accepted.sort();
        assert_eq!(sorted, accepted, "the thread is exactly the messages answered 201");
        let resolved_at = millis(&dispute["resolvedAt"]);
        for message in dispute["messages"].as_array().unwrap() {
            assert!(
                millis(&message["createdAt"]) <= resolved_at,
                "a message after the resolution: {dispute}"
            );
        }
        // The resolution's events show the whole thread.
        wait_for_events(&api, &node.sandbox, &key, &id, &["dispute.closed"]).await;
        let closed = all_events(&api, &node.sandbox, &key)
            .await
            .into_iter()
            .find(|e| e["event"] == "dispute.closed" && e["data"]["id"] == id.as_str())
            .unwrap();
        assert_eq!(closed["data"], dispute, "dispute.closed carries the final thread");
        let r = post_message(&api, &node, &id, json!({ "body": "too late" })).await;
        r.expect_error(400, "bad_request");
    }
    assert_eq!(before + refused, MESSAGES * ROUNDS);
    eprintln!("race: {before} messages before the resolutions, {refused} refused after");
    node.stop_and_verify();
}

/// A payer's attempt on a hosted payment link (the hosted page's own call),
/// waited for until it settles; returns the session.
async fn pay_link(api: &Api, node: &Node, link: &str, amount: &str) -> Value {
    let body = json!({ "amount": amount, "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    let r = api.post_anonymous(&node.sandbox_url(&format!("/pay/{link}/sessions")), body).await;
    r.expect(201);
    let session = r.body["session"]["id"].as_str().unwrap().to_string();
    let url = node.sandbox_url(&format!("/pay/{link}/sessions/{session}"));
    eventually("the session to settle", Duration::from_secs(10), || async {
        let r = api.call("GET", &url, None, None).await;
        r.expect(200);
        (r.body["session"]["status"] != "pending").then(|| r.body["session"].clone())
    })
    .await
}

/// `paymentLinkId` disputes the link's newest completed payment.
#[tokio::test]
async fn a_payment_link_payment_can_be_disputed() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let body = json!({ "currency": "GHS", "title": "Invoice 17", "allowedMethods": ["mobile_money"], "amount": "100.00" });
    let r = api.post(&node.sandbox_url("/v1/payment-links"), &key, body).await;
    let (_, link) = r.created("paymentLink", "pl_");
    let r = open_dispute(&api, &node, json!({ "paymentLinkId": link })).await;
    r.expect_refusal(400, "bad_request", "not paid");

    // Two partial payments; the dispute is on the newer one.
    let first = pay_link(&api, &node, &link, "40.00").await;
    let second = pay_link(&api, &node, &link, "60.00").await;
    let (first_collection, second_collection) =
        (first["collectionId"].as_str().unwrap(), second["collectionId"].as_str().unwrap());
    let r = open_dispute(&api, &node, json!({ "paymentLinkId": link, "reason": "unrecognized" })).await;
    r.expect(201);
    let dispute = r.body["dispute"].clone();
    assert_eq!(dispute["paymentLinkId"], link.as_str());
    assert_eq!(dispute["collectionId"], second_collection);
    assert_eq!(dispute["amount"], "60.00");
    assert_eq!(dispute["reason"], "unrecognized");
    let id = dispute["id"].as_str().unwrap();
    wait_for_events(&api, &node.sandbox, &key, id, &["dispute.created"]).await;
    // The newest payment already has an open dispute; the older one can still be disputed.
    open_dispute(&api, &node, json!({ "paymentLinkId": link })).await.expect_error(400, "bad_request");
    open_dispute(&api, &node, json!({ "collectionId": second_collection }))
        .await
        .expect_error(400, "bad_request");
    let r = open_dispute(&api, &node, json!({ "collectionId": first_collection, "amount": "40.01" })).await;
    r.expect_invalid("amount");
    let r = open_dispute(&api, &node, json!({ "collectionId": first_collection })).await;
    r.expect(201);
    // Opened by its collection, a checkout payment still names its link.
    assert_eq!(
        (&r.body["dispute"]["amount"], &r.body["dispute"]["paymentLinkId"]),
        (&json!("40.00"), &json!(link))
    );
    node.stop_and_verify();
}

/// A payment still in flight cannot be disputed. Runs at real time, where
/// the `50` trigger keeps a collection pending for a minute.
#[tokio::test]
async fn pending_payments_cannot_be_disputed() {
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "1")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let body = mtn_collection("12.50", "dsp-pending");
    let r = api.post(&node.sandbox_url("/v1/collections"), &key, body).await;
    let (_, id) = r.created("collection", "col_");
    let r = open_dispute(&api, &node, json!({ "collectionId": id })).await;
    r.expect_refusal(400, "bad_request", "pending");
    let r = api.get(&node.sandbox_url(&format!("/v1/collections/{id}")), &key).await;
    r.expect(200);
    assert_eq!(r.body["collection"]["status"], "pending", "still in flight after the refusal");
    let r = api.get(&node.sandbox_url("/v1/disputes"), &key).await;
    r.expect(200);
    assert!(ids(&r.body).is_empty());
    assert!(
        all_events(&api, &node.sandbox, &key)
            .await
            .iter()
            .all(|e| !e["event"].as_str().unwrap().starts_with("dispute."))
    );
    node.stop_and_verify();
}

/// The console against the real node: a dispute's evidence due date and
/// attachments are on screen, and `d` then `y` declines it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_a_disputes_evidence_and_resolves_it() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let paid = collection(&api, &node, "12.00", "dsp-console", "completed").await;
    let r = open_dispute(&api, &node, json!({ "collectionId": paid, "reason": "duplicate" })).await;
    let (_, id) = r.created("dispute", "dsp_");
    let due = r.body["dispute"]["evidenceDueBy"].as_str().unwrap().to_string();
    let file = upload(&api, &node, "receipt.pdf", "application/pdf", RECEIPT_BASE64).await;
    let body = json!({ "body": "Our receipt.", "attachments": [{ "fileId": file["id"] }] });
    post_message(&api, &node, &id, body).await.expect(201);

    let (url, token, dispute) = (node.admin.clone(), node.creds.admin_token.clone(), id.clone());
    let screen = tokio::task::spawn_blocking(move || console_resolve(&url, &token, &dispute)).await.unwrap();
    // Times are shown without the `T` and milliseconds.
    let due_shown = due.replace('T', " ");
    assert!(screen.contains(&due_shown[..19]), "the evidence due date {due}:\n{screen}");
    assert!(screen.contains("attachment receipt.pdf"), "{screen}");
    let download = format!("GET /admin/v1/sandbox/disputes/{id}/files/file_");
    assert!(
        screen.contains(&download),
        "where the operator reads it:
{screen}"
    );
    let admin = node.creds.admin_token.clone();
    let r = api.get(&node.admin_url(&format!("/admin/v1/sandbox/disputes/{id}")), &admin).await;
    r.expect(200);
    assert_eq!(r.body["dispute"]["status"], "declined");
    let audit = api.get(&node.admin_url("/admin/v1/audit?limit=1"), &admin).await;
    assert_eq!(audit.body["data"][0]["action"], "dispute.resolve");
    assert_eq!(audit.body["data"][0]["target"], id.as_str());
}

/// Opens the dispute on the console's Disputes tab (sandbox), selects the
/// message with the attachment, draws it, then declines the dispute.
fn console_resolve(url: &str, token: &str, id: &str) -> String {
    use crossterm::event::KeyCode;
    use sika_tui::Detail;

    use crate::support::console::Console;
    let mut console = Console::new(url, token);
    console.press(KeyCode::Char('5'));
    console.press(KeyCode::Char('s'));
    assert_eq!(
        console.app.dispute_rows().first().map(|d| d.item.id.as_str()),
        Some(id),
        "{:?}",
        console.app.disputes
    );
    console.press(KeyCode::Enter);
    let screen = console.screen();
    console.press(KeyCode::Char('d'));
    assert!(console.app.confirm.is_some(), "asks before declining");
    console.press(KeyCode::Char('y'));
    let Some(Detail::Dispute { data, .. }) = &console.app.detail else { panic!("the dispute stays open") };
    assert_eq!(data.data.as_ref().map(|d| sika_tui::wire_name(&d.item.status)).as_deref(), Some("declined"));
    screen
}
