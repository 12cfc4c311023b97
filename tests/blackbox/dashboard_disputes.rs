//! Disputes in the dashboard over plain HTTP against the real binary: the
//! list and its status filter, a dispute's thread with its files, a reply
//! that sends a file along (`multipart/form-data`, stored and attached as
//! `POST /v1/files` and `POST /v1/disputes/{id}/messages` do), accepting
//! behind a confirmation page; a viewer reads all of it, sees no write
//! control, and their forged posts, CSRF token and all, are refused `403`
//! and change nothing.

use serde_json::json;

use crate::support::dashboard::Dashboard;
use crate::support::team::{PASSWORD, member_with_role, owned_org};
use crate::support::{Api, Node, Options, create_key, mtn_collection, poll_until};

const RECEIPT: &[u8] = b"Signed receipt: collected in store on 20 Nov.\n";

/// An organization with an owner session, a key, and an open dispute on a
/// completed GHS 100.00 collection: `(owner, key, dispute id)`.
async fn disputed(api: &Api, node: &Node, email: &str) -> (String, String, String) {
    let (_, owner) = owned_org(api, node, email).await;
    let (_, key) = create_key(api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let created =
        api.post(&node.sandbox_url("/v1/collections"), &key, mtn_collection("100.00", "ord-1")).await;
    let (_, collection) = created.created("collection", "col_");
    let url = node.sandbox_url(&format!("/v1/collections/{collection}"));
    poll_until(api, &url, &key, |b| b["collection"]["status"] == "completed").await;
    let opened = api
        .post(
            &node.sandbox_url("/v1/simulations/disputes"),
            &key,
            json!({ "collectionId": collection, "amount": "40.00", "reason": "product_not_received" }),
        )
        .await;
    let (_, dispute) = opened.created("dispute", "dsp_");
    (owner, key, dispute)
}

#[tokio::test]
async fn dashboard_disputes_list_thread_reply_with_a_file_and_accept() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, key, id) = disputed(&api, &node, "disputes@shop.example").await;
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("disputes@shop.example", PASSWORD).await;

    let list = dash.get("/dashboard/disputes").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let table = list.element("disputes").map(|_| list.text.clone()).unwrap_or_default();
    assert!(table.contains(&id) && table.contains("GHS 40.00") && table.contains("open"), "{}", list.text);
    assert!(dash.get("/dashboard/disputes?status=open").await.text.contains(&id));
    assert!(dash.get("/dashboard/disputes?status=accepted").await.has("no-disputes"));
    let bad = dash.get("/dashboard/disputes?status=lost").await;
    assert_eq!(bad.status, 400, "the API's refusal: {}", bad.text);

    let page = format!("/dashboard/disputes/{id}");
    let detail = dash.get(&page).await;
    assert!(
        detail.has("no-messages") && detail.has("reply-form") && detail.has("accept-link"),
        "{}",
        detail.text
    );
    assert!(detail.text.contains("enctype=\"multipart/form-data\""), "{}", detail.text);

    // A reply with a file: both land, through the API's use cases.
    let csrf = detail.csrf();
    let reply = format!("{page}/messages");
    let body = "The payer collected the goods; <b>receipt</b> attached.";
    let fields = [("csrf", csrf.as_str()), ("body", body)];
    let sent = dash.post_multipart(&reply, &fields, ("file", "receipt.txt", "text/plain", RECEIPT)).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert!(sent.element("notice").unwrap_or_default().contains("1 file(s)"), "{}", sent.text);
    assert!(sent.text.contains("&#60;b&#62;receipt") && !sent.text.contains("<b>"), "escaped: {}", sent.text);
    let read = api.get(&node.sandbox_url(&format!("/v1/disputes/{id}")), &key).await;
    let messages = read.body["dispute"]["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 1, "{}", read.text);
    assert_eq!(messages[0]["body"], body);
    let attachment = &messages[0]["attachments"][0];
    assert_eq!(attachment["name"], "receipt.txt", "{}", read.text);
    let file_id = attachment["fileId"].as_str().unwrap().to_string();
    assert!(sent.has(&format!("file-{file_id}")), "the thread links the file: {}", sent.text);
    let download = dash.get(&format!("/dashboard/files/{file_id}")).await;
    assert_eq!(download.status, 200);
    assert_eq!(download.text.as_bytes(), RECEIPT, "the bytes uploaded");
    assert!(download.header("content-disposition").unwrap_or_default().contains("attachment"));

    // A refused reply (no text) keeps nothing: its file is not stored.
    let files_before =
        api.get(&node.sandbox_url("/v1/files"), &key).await.body["data"].as_array().unwrap().len();
    let empty = [("csrf", csrf.as_str()), ("body", "  ")];
    let refused = dash.post_multipart(&reply, &empty, ("file", "other.txt", "text/plain", b"x")).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(refused.element("notice").unwrap_or_default().contains("body"), "{}", refused.text);
    let files = api.get(&node.sandbox_url("/v1/files"), &key).await;
    assert_eq!(files.body["data"].as_array().unwrap().len(), files_before, "{}", files.text);
    // A reply with an empty file input is a message alone.
    let plain = [("csrf", csrf.as_str()), ("body", "Any news?")];
    let alone = dash.post_multipart(&reply, &plain, ("file", "", "application/octet-stream", b"")).await;
    assert!(
        alone.element("notice").unwrap_or_default().contains("Your message is in the thread"),
        "{}",
        alone.text
    );

    owner_accepts(&dash, &api, &node, &key, &id).await;
}

/// Accepting asks first, on a page of its own, then resolves the dispute
/// through the API's use case; a second accept is the API's `409`.
async fn owner_accepts(dash: &Dashboard, api: &Api, node: &Node, key: &str, id: &str) {
    let page = format!("/dashboard/disputes/{id}");
    let confirm = dash.get(&format!("{page}/accept")).await;
    assert_eq!(confirm.status, 200, "{}", confirm.text);
    assert!(confirm.has("accept-form") && confirm.element("consequence").unwrap().contains("GHS 40.00"));
    let accepted = dash.submit(&format!("{page}/accept"), &format!("{page}/accept"), &[]).await;
    assert!(
        accepted.element("notice").unwrap_or_default().contains("You accepted dispute"),
        "{}",
        accepted.text
    );
    assert!(!accepted.has("reply-form") && !accepted.has("accept-link"), "resolved: {}", accepted.text);
    let read = api.get(&node.sandbox_url(&format!("/v1/disputes/{id}")), key).await;
    assert_eq!(read.body["dispute"]["status"], "accepted", "{}", read.text);
    let again = dash.post(&format!("{page}/accept"), &[("csrf", confirm.csrf().as_str())]).await;
    assert_eq!(again.status, 409, "the API's refusal: {}", again.text);
    assert!(dash.get("/dashboard/disputes?status=accepted").await.text.contains(id));
}

#[tokio::test]
async fn a_viewer_reads_disputes_and_their_forged_posts_change_nothing() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (owner, key, id) = disputed(&api, &node, "owner@disputes.example").await;
    member_with_role(&api, &node, &owner, "viewer@disputes.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@disputes.example", PASSWORD).await;

    assert!(viewer.get("/dashboard/disputes").await.text.contains(&id));
    let page = format!("/dashboard/disputes/{id}");
    let detail = viewer.get(&page).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert!(
        detail.has("summary") && !detail.has("reply-form") && !detail.has("accept-link"),
        "{}",
        detail.text
    );
    let confirm = viewer.get(&format!("{page}/accept")).await;
    assert_eq!(confirm.status, 403, "{}", confirm.text);

    // Forged with a valid CSRF token (the log-out form's): refused, nothing changes.
    let csrf = detail.csrf();
    let forged = viewer.post(&format!("{page}/accept"), &[("csrf", csrf.as_str())]).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let fields = [("csrf", csrf.as_str()), ("body", "forged")];
    let reply = viewer
        .post_multipart(&format!("{page}/messages"), &fields, ("file", "f.txt", "text/plain", b"f"))
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    let read = api.get(&node.sandbox_url(&format!("/v1/disputes/{id}")), &key).await;
    assert_eq!(read.body["dispute"]["status"], "open", "{}", read.text);
    assert!(read.body["dispute"]["messages"].as_array().unwrap().is_empty(), "{}", read.text);
    let files = api.get(&node.sandbox_url("/v1/files"), &key).await;
    assert!(files.body["data"].as_array().unwrap().is_empty(), "{}", files.text);
    // And without a token at all, the form is refused before the role is asked.
    let tokenless = viewer
        .post_multipart(&format!("{page}/messages"), &[("body", "x")], ("file", "", "text/plain", b""))
        .await;
    assert_eq!(tokenless.status, 403, "{}", tokenless.text);
}
