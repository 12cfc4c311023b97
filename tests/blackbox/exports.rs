//! CSV exports over HTTP against the real binary: RFC 4180 files with a
//! header row and CRLF line ends, streamed (chunked) as attachments, the
//! lists' rows newest first with the lists' filters, a period of at most
//! 366 days, the lists' read scopes, and thousands of rows that read back
//! equal to the list API's items.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// An export's answer, read whole and parsed with an RFC 4180 reader.
struct Export {
    headers: reqwest::header::HeaderMap,
    text: String,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Export {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Each row's `column` cell, in file order.
    fn column(&self, column: &str) -> Vec<&str> {
        let at =
            self.columns.iter().position(|c| c == column).unwrap_or_else(|| panic!("no column {column}"));
        self.rows.iter().map(|row| row[at].as_str()).collect()
    }
}

/// `GET url` with `key`, expecting a `200` CSV file.
async fn export(api: &Api, url: &str, key: &str) -> Export {
    read_export(api, url, key, Duration::ZERO).await
}

/// [`export`], by a reader that stops for `pause` after the first piece of
/// the body before it reads on.
async fn read_export(api: &Api, url: &str, key: &str, pause: Duration) -> Export {
    let mut response = api.client.get(url).bearer_auth(key).send().await.expect("export request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut bytes = Vec::new();
    while let Some(piece) = response.chunk().await.expect("the export's next piece") {
        if bytes.is_empty() {
            tokio::time::sleep(pause).await;
        }
        bytes.extend_from_slice(&piece);
    }
    let text = String::from_utf8(bytes).expect("UTF-8");
    assert_eq!(status, 200, "{url}: {text}");
    assert!(headers["x-request-id"].to_str().unwrap().starts_with("req_"));
    assert!(headers.contains_key("sika-version"));
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let columns = reader.headers().expect("a header row").iter().map(str::to_string).collect();
    let rows = reader
        .records()
        .map(|record| record.expect("an RFC 4180 record").iter().map(str::to_string).collect())
        .collect();
    Export { headers, text, columns, rows }
}

/// What a list item's `column` (`from.amount`) holds, as an export writes
/// it: text as it is, absent or null empty, anything else as JSON.
fn expected_cell(item: &Value, column: &str) -> Value {
    match item.pointer(&format!("/{}", column.replace('.', "/"))) {
        None | Some(Value::Null) => json!(""),
        Some(Value::String(text)) => json!(text),
        Some(other) => other.clone(),
    }
}

/// Asserts the export's rows are the list's `items`, in order, cell by cell.
#[track_caller]
fn assert_rows_are(export: &Export, items: &[Value]) {
    assert_eq!(export.rows.len(), items.len(), "one row per list item");
    for (row, item) in export.rows.iter().zip(items) {
        for (column, cell) in export.columns.iter().zip(row) {
            let expected = expected_cell(item, column);
            let written = match &expected {
                Value::String(_) => json!(cell),
                _ => serde_json::from_str(cell).unwrap_or_else(|_| panic!("{column}: {cell} is not JSON")),
            };
            assert_eq!(written, expected, "column {column} of {}", item["id"]);
        }
    }
}

/// A node whose simulated rails take ~a thousand times longer than real
/// ones: what it holds stays pending while a test compares it.
fn still_node() -> Sandbox {
    let node = Node::start(Options { time_scale: Some(1000.0), ..Options::unthrottled() });
    let (key, base) = (node.creds.sandbox_key.clone(), node.sandbox.clone());
    Sandbox { node, api: Api::new(), key, base }
}

/// Three payouts, a few milliseconds apart; the second's reference holds
/// a comma and quotes and its narration a line break. Returns them as
/// created, oldest first.
async fn three_payouts(api: &Api, node: &Node, key: &str) -> Vec<Value> {
    deposit(api, node, key, "GHS", "1000.00").await;
    let mut created = Vec::new();
    for (reference, narration) in
        [("exp-1", "first"), ("exp-2, \"quoted\"", "two lines,\nand \"quotes\""), ("exp-3", "third")]
    {
        let mut body = mtn_payout("10.00", reference);
        body["narration"] = json!(narration);
        let r = api.post(&node.sandbox_url("/v1/payouts"), key, body).await;
        created.push(r.created("payout", "pay_").0);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    created
}

#[tokio::test]
async fn a_payouts_export_is_an_rfc_4180_attachment_streamed_newest_first_with_the_lists_rows() {
    let Sandbox { node, api, key, base } = still_node();
    let created = three_payouts(&api, &node, &key).await;
    let file = export(&api, &format!("{base}/v1/exports/payouts.csv"), &key).await;

    assert_eq!(file.header("content-type"), Some("text/csv; charset=utf-8"));
    let disposition = file.header("content-disposition").unwrap();
    assert!(
        disposition.starts_with("attachment; filename=\"payouts_") && disposition.ends_with(".csv\""),
        "{disposition}"
    );
    assert_eq!(file.header("content-length"), None, "streamed: no Content-Length");
    assert_eq!(file.header("transfer-encoding"), Some("chunked"));

    // A header row, CRLF after every record, and the one line break inside
    // the quoted narration left as it was written.
    assert!(file.text.starts_with("id,"), "{}", file.text);
    assert!(file.text.ends_with("\r\n"));
    assert_eq!(
        file.text.replace("\r\n", "").matches('\n').count(),
        1,
        "only the narration's own line break is bare"
    );
    assert_eq!(file.text.matches("\r\n").count(), 1 + 3, "the header and three rows");
    assert!(
        file.text.contains(",\"exp-2, \"\"quoted\"\"\","),
        "a field with a comma and quotes is quoted, quotes doubled"
    );
    assert!(file.text.contains("\"two lines,\nand \"\"quotes\"\"\""));

    // The columns are the item's fields, nested ones with dots, optional
    // ones present although no payout has them.
    for column in [
        "id",
        "status",
        "from.amount",
        "from.currency",
        "to.code",
        "to.bankCode",
        "fee.amount",
        "externalReference",
        "metadata",
        "timeline",
        "createdAt",
    ] {
        assert!(file.columns.iter().any(|c| c == column), "{column} in {:?}", file.columns);
    }
    let ids: Vec<&str> = created.iter().rev().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(file.column("id"), ids, "newest first");
    assert_eq!(file.column("externalReference")[1], "exp-2, \"quoted\"");
    assert_eq!(file.column("narration")[1], "two lines,\nand \"quotes\"");
    assert_eq!(file.column("from.amount"), ["10.00", "10.00", "10.00"], "amounts as decimal strings");
    let listed = every_item(&api, &format!("{base}/v1/payouts"), &key).await;
    assert_rows_are(&file, &listed);
}

#[tokio::test]
async fn exports_take_the_lists_filters_and_a_period() {
    let Sandbox { node, api, key, base } = still_node();
    let created = three_payouts(&api, &node, &key).await;
    let url = |query: &str| format!("{base}/v1/exports/payouts.csv?{query}");

    let one = export(&api, &url("externalReference=exp-3"), &key).await;
    assert_eq!(one.column("id"), [created[2]["id"].as_str().unwrap()]);
    assert_eq!(export(&api, &url("status=pending"), &key).await.rows.len(), 3);
    let none = export(&api, &url("status=completed"), &key).await;
    assert!(none.rows.is_empty() && none.text.starts_with("id,"), "a header row even without rows");

    // createdFrom inclusive, createdTo exclusive.
    let (second, third) =
        (created[1]["createdAt"].as_str().unwrap(), created[2]["createdAt"].as_str().unwrap());
    let query = format!("createdFrom={second}&createdTo={third}");
    let period = export(&api, &url(&query), &key).await;
    assert_eq!(period.column("id"), [created[1]["id"].as_str().unwrap()]);
    let future = export(&api, &url("createdFrom=2999-01-01T00:00:00Z&createdTo=2999-02-01"), &key).await;
    assert!(future.rows.is_empty());
    let long_ago = export(&api, &url("createdTo=2020-01-01"), &key).await;
    assert!(long_ago.rows.is_empty(), "createdTo alone covers the 366 days before it");
    let year = export(&api, &url("createdFrom=2025-01-01&createdTo=2026-01-02"), &key).await;
    assert!(year.rows.is_empty(), "366 days exactly are allowed");
}

#[tokio::test]
async fn a_period_longer_than_366_days_or_a_bad_bound_is_refused_naming_the_field() {
    let Sandbox { node: _node, api, key, base } = Sandbox::start();
    let url = |path: &str, query: &str| format!("{base}/v1/exports/{path}?{query}");
    for path in ["payouts.csv", "collections.csv", "refunds.csv"] {
        let r = api.get(&url(path, "createdFrom=2025-01-01&createdTo=2026-01-02T00:00:00.001Z"), &key).await;
        r.expect_invalid("createdTo");
        assert_eq!(r.body["details"]["maxDays"], 366, "{}", r.text);
        api.get(&url(path, "createdFrom=2020-01-01T00:00:00Z"), &key).await.expect_invalid("createdFrom");
        api.get(&url(path, "createdFrom=last-tuesday"), &key).await.expect_invalid("createdFrom");
        api.get(&url(path, "createdTo=2026-02-30"), &key).await.expect_invalid("createdTo");
        api.get(&url(path, "createdFrom=2026-02-01&createdTo=2026-01-01"), &key)
            .await
            .expect_invalid("createdTo");
        api.get(&url(path, "status=lost"), &key).await.expect_invalid("status");
        api.get(&url(path, "limit=10"), &key).await.expect_invalid("limit");
    }
}

#[tokio::test]
async fn an_export_needs_its_lists_read_scope() {
    let Sandbox { node, api, key: _, base } = Sandbox::start();
    let writer = scoped_key(&api, &node, "writes only", &["payouts:write", "collections:write"]).await;
    let payouts_reader = scoped_key(&api, &node, "payouts reader", &["payouts:read"]).await;
    for path in ["payouts.csv", "collections.csv", "refunds.csv"] {
        api.get(&format!("{base}/v1/exports/{path}"), &writer).await.expect_error(403, "forbidden");
    }
    let file = export(&api, &format!("{base}/v1/exports/payouts.csv"), &payouts_reader).await;
    assert!(file.rows.is_empty());
    for path in ["collections.csv", "refunds.csv"] {
        api.get(&format!("{base}/v1/exports/{path}"), &payouts_reader).await.expect_error(403, "forbidden");
    }
    let r = api.call("GET", &format!("{base}/v1/exports/payouts.csv"), None, None).await;
    r.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn refunds_and_collections_export_their_lists_rows_with_their_filters() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let mut payments = Vec::new();
    for reference in ["rx-1", "rx-2"] {
        let (_, paid) = collect_until(&api, &node, mtn_collection("40.00", reference), "completed").await;
        payments.push(paid["id"].as_str().unwrap().to_string());
    }
    let mut refunds = Vec::new();
    for (payment, amount) in [(&payments[0], "5.00"), (&payments[1], "6.00"), (&payments[0], "7.00")] {
        let body =
            json!({ "collectionId": payment, "amount": amount, "externalReference": format!("rf-{amount}") });
        let r = api.post(&node.sandbox_url("/v1/refunds"), &key, body).await;
        let (_, id) = r.created("refund", "rf_");
        poll_until(&api, &node.sandbox_url(&format!("/v1/refunds/{id}")), &key, |b| {
            b["refund"]["status"] == "completed"
        })
        .await;
        refunds.push(id);
    }
    let file = export(&api, &format!("{base}/v1/exports/refunds.csv"), &key).await;
    assert_rows_are(&file, &every_item(&api, &format!("{base}/v1/refunds"), &key).await);
    assert_eq!(file.column("amount"), ["7.00", "6.00", "5.00"]);
    let of_first =
        export(&api, &format!("{base}/v1/exports/refunds.csv?collectionId={}", payments[0]), &key).await;
    assert_eq!(of_first.column("id"), [refunds[2].as_str(), refunds[0].as_str()]);

    let collections = export(&api, &format!("{base}/v1/exports/collections.csv"), &key).await;
    assert_rows_are(&collections, &every_item(&api, &format!("{base}/v1/collections"), &key).await);
    assert_eq!(collections.column("refundedAmount"), ["6.00", "12.00"]);
    let completed = export(
        &api,
        &format!("{base}/v1/exports/collections.csv?status=completed&externalReference=rx-2"),
        &key,
    )
    .await;
    assert_eq!(completed.column("id"), [payments[1].as_str()]);
}

#[tokio::test]
async fn thousands_of_rows_read_slowly_back_equal_the_lists_items() {
    const COUNT: usize = 3_000;
    let Sandbox { node, api, key, base } = still_node();
    let url = node.sandbox_url("/v1/collections");
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..16 {
        let (api, url, key) = (api.clone(), url.clone(), key.clone());
        tasks.spawn(async move {
            for index in (worker..COUNT).step_by(16) {
                let r = api.post(&url, &key, mtn_collection("12.34", &format!("many-{index}"))).await;
                r.expect(201);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a creating task");
    }
    // Read by a client that stops for two seconds after the first bytes:
    // the node waits for it and then writes the rest, whole and in order.
    let url = format!("{base}/v1/exports/collections.csv");
    let file = read_export(&api, &url, &key, Duration::from_secs(2)).await;
    assert_eq!(file.header("transfer-encoding"), Some("chunked"));
    assert_eq!(file.rows.len(), COUNT);
    assert_rows_are(&file, &every_item(&api, &format!("{base}/v1/collections"), &key).await);
}
