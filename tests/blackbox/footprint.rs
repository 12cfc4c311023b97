//! `sika footprint` over the real binary: after a clean stop the ledger's
//! log files are their headers alone, and the command counts the records
//! a payout left, by kind, with the payout's event a mark of it (format 9)
//! rather than a copy.

use crate::support::*;

/// The record count and value bytes `sika footprint` prints for `space`
/// in the sandbox ledger.
fn row(output: &str, space: &str) -> Option<(u64, u64)> {
    output.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["sandbox:", name, records, _keys, values] if *name == space => {
                Some((records.parse().ok()?, values.parse().ok()?))
            }
            _ => None,
        }
    })
}

#[tokio::test]
async fn a_stopped_node_keeps_no_log_and_footprint_counts_what_a_payout_left() {
    let Some(()) = embedded_store() else { return };
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "0.001")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("10.00", "footprint-1")).await;
    r.expect(201);
    let url = node.sandbox_url(&format!("/v1/payouts/{}", r.body["payout"]["id"].as_str().unwrap()));
    eventually("the payout to complete", std::time::Duration::from_secs(30), || async {
        (api.get(&url, &key).await.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    node.stop();

    let data = node.data_dir();
    for name in ["sandbox.wal", "sandbox.1.wal", "live.wal", "live.1.wal"] {
        let len = std::fs::metadata(data.join(name)).unwrap().len();
        assert_eq!(len, 16, "{name} is its header alone after a clean stop");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .arg("footprint")
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("sandbox: files (bytes, before the log was replayed) sandbox.redb "), "{text}");
    assert!(text.contains("sandbox: redb pages: "), "{text}");
    let (payouts, payout_bytes) = row(&text, "Payout").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(payouts, 1, "{text}");
    assert_eq!(row(&text, "ListIndex/payouts").map(|(n, _)| n), Some(1), "{text}");
    assert_eq!(
        row(&text, "Journal").map(|(n, _)| n),
        Some(1 + 5),
        "the deposit and the payout's five: {text}"
    );
    assert_eq!(
        row(&text, "Transfer").map(|(n, _)| n),
        Some(2),
        "references for the payout's two holds alone (any other transfer is its entry's number): {text}"
    );
    assert_eq!(row(&text, "BalanceHead"), None, "each account holds its balance-change head: {text}");
    assert_eq!(row(&text, "BalanceChange"), None, "each journal entry holds its balance changes: {text}");
    let (events, event_bytes) = row(&text, "Event").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(events, 2, "account.credited and payout.completed: {text}");
    // The deposit's event holds its account (under 200 bytes); the
    // payout's, a mark of the payout (about 110), not a copy of it (the
    // payout's bytes and more).
    assert!(event_bytes < payout_bytes + 200, "the payout's event does not copy the payout: {text}");
    // The books verify on what the stop left.
    node.stop_and_verify();
}

/// `sika compact` on a stopped node's data directory: each ledger file
/// shrinks to the pages it uses (a burst of payouts leaves freed pages
/// behind), the node opens it and serves what it held, and the books
/// verify; while a node holds the files, it refuses and changes nothing.
#[tokio::test]
async fn compact_gives_a_stopped_ledgers_free_pages_back_and_keeps_every_record() {
    let Some(()) = embedded_store() else { return };
    let mut node = Node::start_with_env(Options::unthrottled(), &[("SIKA_TIME_SCALE", "0.001")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let mut urls = Vec::new();
    for n in 0..40 {
        let r = api
            .post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("1.00", &format!("compact-{n}")))
            .await;
        r.expect(201);
        urls.push(node.sandbox_url(&format!("/v1/payouts/{}", r.body["payout"]["id"].as_str().unwrap())));
    }
    let compact = |data: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
            .arg("compact")
            .arg("--data-dir")
            .arg(data)
            .output()
            .unwrap()
    };
    let data = node.data_dir().to_path_buf();
    let sandbox = data.join("sandbox.redb");
    let running = std::fs::metadata(&sandbox).unwrap().len();
    let refused = compact(&data);
    assert!(!refused.status.success(), "a running node's ledger is left alone");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is the node stopped?"));
    // The node may still grow it (its payouts settle), never shrink it.
    assert!(
        std::fs::metadata(&sandbox).unwrap().len() >= running,
        "the running node's file is not compacted"
    );
    let before = every_item(&api, &node.sandbox_url("/v1/payouts"), &key).await;
    assert_eq!(before.len(), 40);
    node.stop();

    let stopped = std::fs::metadata(&sandbox).unwrap().len();
    let out = compact(&data);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let after = std::fs::metadata(&sandbox).unwrap().len();
    assert!(text.contains(&format!("sandbox: {after} bytes, {stopped} before compacting")), "{text}");
    assert!(after < stopped, "the file gave pages back: {stopped} -> {after}");

    node.restart(&Options::unthrottled(), &[("SIKA_TIME_SCALE", "0.001")]);
    let api = Api::new();
    let listed = every_item(&api, &node.sandbox_url("/v1/payouts"), &key).await;
    let ids = |items: &[serde_json::Value]| items.iter().map(|p| p["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&listed), ids(&before), "every payout is still there, in order");
    let replay = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("1.00", "compact-7")).await;
    replay.expect(200);
    assert_eq!(replay.body["payout"]["id"], before[40 - 1 - 7]["id"], "a reference still replays its payout");
    node.stop_and_verify();
}
