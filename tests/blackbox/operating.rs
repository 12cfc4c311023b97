//! Operating a node, from outside: liveness and readiness on every
//! listener, as pinned in CONTRACT.md ("Operating a node").

use std::time::Duration;

use crate::support::*;

#[tokio::test]
async fn every_listener_answers_health_and_readiness_without_credentials() {
    let node = Node::start(Options::unthrottled());
    let client = reqwest::Client::new();
    for base in [&node.live, &node.sandbox, &node.admin] {
        let r = client.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{base}/healthz");
        assert_eq!(r.headers().get("sika-version").unwrap(), VERSION);
        assert_eq!(r.json::<serde_json::Value>().await.unwrap(), serde_json::json!({ "status": "ok" }));
        let r = client.get(format!("{base}/readyz")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{base}/readyz");
        assert_eq!(r.json::<serde_json::Value>().await.unwrap(), serde_json::json!({ "status": "ready" }));
    }
}

#[tokio::test]
async fn readiness_turns_503_with_a_reason_when_the_data_directory_cannot_be_written() {
    let node = Node::start(Options::unthrottled());
    let client = reqwest::Client::new();
    // Root ignores permissions, so take the directory away instead: the
    // open databases live on, but nothing new can be written there.
    let data = node.data_dir();
    let moved = data.with_extension("moved");
    std::fs::rename(&data, &moved).unwrap();
    let r = client.get(format!("{}/readyz", node.sandbox)).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    let reasons = body["reasons"].as_array().unwrap();
    assert!(reasons.iter().any(|r| r.as_str().unwrap().contains("data directory")), "{body}");
    // Liveness is unaffected: the process still serves.
    let r = client.get(format!("{}/healthz", node.admin)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    std::fs::rename(&moved, &data).unwrap();
    let r = client.get(format!("{}/readyz", node.admin)).send().await.unwrap();
    assert_eq!(r.status(), 200, "ready again once the directory is back");
}

/// `/metrics` on the admin listener, no token, Prometheus text with the
/// pinned names; routes are labelled by template, never a raw path; the
/// rate feed's age is there when a feed is configured.
#[tokio::test]
async fn metrics_are_scraped_from_the_admin_listener() {
    let (node, api, key) = unthrottled_node();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let payout = mtn_payout("10.00", "metrics-1");
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, payout).await;
    let (_, id) = r.created("payout", "pay_");
    api.get(&node.sandbox_url(&format!("/v1/payouts/{id}")), &key).await.expect(200);
    let response = reqwest::get(node.admin_url("/metrics")).await.unwrap();
    assert_eq!(response.status(), 200, "no token needed");
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = response.text().await.unwrap();
    for name in [
        "sika_http_requests_total",
        "sika_http_request_duration_seconds_bucket",
        "sika_engine_commits_total",
        "sika_engine_commands_total",
        "sika_engine_queue_depth",
        "sika_webhook_attempts_total",
        "sika_webhook_backlog",
    ] {
        assert!(text.contains(&format!("# TYPE {}", name.trim_end_matches("_bucket"))), "{name} in:\n{text}");
    }
    let line = "sika_http_requests_total{stack=\"sandbox\",route=\"/v1/payouts/{id}\",status=\"200\"} 1";
    assert!(text.contains(line), "the GET is counted under its template:\n{text}");
    assert!(!text.contains(&id), "no raw path or id in any label");
    let commits =
        text.lines().find(|l| l.starts_with("sika_engine_commits_total{stack=\"sandbox\"}")).unwrap();
    assert!(commits.rsplit(' ').next().unwrap().parse::<u64>().unwrap() >= 2, "{commits}");
    assert!(!text.contains("sika_rates_feed_age_seconds{"), "no feed, no feed age");
}

/// The log's lines when stderr is not a terminal: one JSON object each,
/// with `timestamp`, `level` and `message`, and for every API request one
/// line naming its id, stack, method, route template, status, duration and
/// organization. No key ever appears in it.
#[tokio::test]
async fn requests_are_logged_as_json_lines_without_secrets() {
    let node = Node::start_with_env(Options::unthrottled(), &[("RUST_LOG", "info")]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let missing = api.get(&node.sandbox_url("/v1/payouts/po_missing"), &key).await;
    missing.expect_error(404, "not_found");
    let unauthenticated =
        api.get(&node.live_url("/v1/accounts"), "sk_live_not_a_real_key_000000000000000").await;
    unauthenticated.expect(401);
    let log = eventually("the request lines", Duration::from_secs(5), || async {
        let log = node.log();
        log.contains(&unauthenticated.request_id()).then_some(log)
    })
    .await;
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    for line in &lines {
        for field in ["timestamp", "level", "message"] {
            assert!(line.get(field).is_some(), "no {field}: {line}");
        }
    }
    let of = |id: &str| {
        lines
            .iter()
            .find(|l| l["requestId"] == id)
            .unwrap_or_else(|| panic!("no line for {id}: {log}"))
            .clone()
    };
    let line = of(&missing.request_id());
    assert_eq!(line["stack"], "sandbox");
    assert_eq!(line["method"], "GET");
    assert_eq!(line["route"], "/v1/payouts/{id}", "the template, not the raw path: {line}");
    assert_eq!(line["status"], 404);
    assert!(line["durationMs"].as_f64().is_some(), "{line}");
    assert_eq!(line["organizationId"], node.creds.organization_id.as_str());
    let line = of(&unauthenticated.request_id());
    assert_eq!((line["stack"].as_str(), line["status"].as_u64()), (Some("live"), Some(401)));
    assert!(line.get("organizationId").is_none(), "{line}");
    assert!(!log.contains("\u{1b}["), "no colour codes off a terminal");
    for secret in [&key, &node.creds.live_key, &node.creds.admin_token, &node.creds.owner_session] {
        assert!(!log.contains(secret.as_str()), "a secret reached the log");
    }
    assert!(!log.contains("sk_live_not_a_real_key"), "a presented key reached the log");
}

/// `--log-format text` (here by its environment variable) writes plain
/// text, uncoloured off a terminal.
#[tokio::test]
async fn the_text_log_format_is_plain_text() {
    let node =
        Node::start_with_env(Options::unthrottled(), &[("RUST_LOG", "info"), ("SIKA_LOG_FORMAT", "text")]);
    let api = Api::new();
    let r = api.get(&node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key).await;
    r.expect(200);
    let id = r.request_id();
    let log = eventually("the request line", Duration::from_secs(5), || async {
        let log = node.log();
        log.contains(&id).then_some(log)
    })
    .await;
    let line = log.lines().find(|l| l.contains(&id)).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(line).is_err(), "{line}");
    assert!(line.contains("/v1/accounts") && line.contains("status=200"), "{line}");
    assert!(!log.contains("\u{1b}["), "no colour codes off a terminal");
}

/// `sika verify` straight after a SIGKILL under writes: it replays the log
/// as opening does and passes, and the node then serves every acknowledged
/// deposit.
#[tokio::test]
async fn verify_passes_straight_after_a_crash_under_writes() {
    let mut node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let depositors = Depositors::start(&api, &node, &key);
    tokio::time::sleep(Duration::from_millis(400)).await;
    node.kill9();
    let (acknowledged, _) = depositors.stop().await;
    assert!(acknowledged > 0, "no deposit was acknowledged before the crash");
    let report = verify_dir(&node.data_dir());
    assert!(report.contains("live: consistent") && report.contains("sandbox: consistent"), "{report}");
    node.restart(&Options::unthrottled(), &[]);
    let (available, _) = balances_minor(&api, &node.sandbox, &key, "GHS", 2).await;
    assert!(
        available >= i128::from(acknowledged) * 100,
        "{acknowledged} deposits acknowledged, {available} minor units served"
    );
    node.stop_and_verify();
}

/// Runs `sika backup` on a node's data directory (through its admin
/// listener when it runs).
fn backup(node: &Node, to: &std::path::Path) -> std::process::Output {
    backup_command(node.data_dir(), &node.admin, to).output().unwrap()
}

fn backup_command(data_dir: std::path::PathBuf, admin: &str, to: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sika"));
    command
        .args(["backup", "--data-dir"])
        .arg(data_dir)
        .arg("--to")
        .arg(to)
        .env_remove("SIKA_DATA_DIR")
        .env("SIKA_ADMIN_ADDR", admin.trim_start_matches("http://"));
    command
}

/// A node started on a copy of `dir` (the copy replaces a fresh node's
/// data directory).
fn serve_from(dir: &std::path::Path) -> Node {
    let mut node = Node::start(Options::unthrottled());
    node.stop();
    std::fs::remove_dir_all(node.data_dir()).unwrap();
    std::fs::rename(dir, node.data_dir()).unwrap();
    node.restart(&Options::unthrottled(), &[]);
    node
}

/// `sika backup` while deposits pour in: the copy verifies and serves
/// every deposit acknowledged before the backup began; a stopped node is
/// backed up too; a destination that holds something is refused.
#[tokio::test]
async fn a_backup_taken_under_writes_verifies_and_serves_what_was_acknowledged_before_it() {
    let Some(()) = embedded_store() else { return };
    let (node, api, key) = unthrottled_node();
    let depositors = Depositors::start(&api, &node, &key);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scratch = tempfile::tempdir().unwrap();
    let online = scratch.path().join("online");
    let before = depositors.acknowledged();
    let mut command = backup_command(node.data_dir(), &node.admin, &online);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (total, failed) = depositors.stop().await;
    assert!(!failed, "every deposit during the backup was acknowledged");
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "backup: {line}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(line.lines().count(), 1, "one summary line: {line}");
    assert!(line.contains("(online") && line.contains("live.redb") && line.contains("node.redb"), "{line}");
    assert!(total > before, "writes went on during the backup ({before} then {total})");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&online).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the backup directory is private");
        let mode = std::fs::metadata(online.join("live.redb")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "backup files are private");
    }
    assert!(verify_dir(&online).contains("sandbox: consistent"));
    let refused = backup(&node, &online);
    assert!(!refused.status.success(), "a destination that holds files is refused");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not empty"), "{refused:?}");

    let restored = serve_from(&online);
    let (available, _) = balances_minor(&api, &restored.sandbox, &key, "GHS", 2).await;
    assert!(
        available >= i128::from(before) * 100 && available <= i128::from(total) * 100,
        "{before} deposits acknowledged before the backup, {total} in all; the copy holds {available} minor units"
    );
    restored.stop_and_verify();

    node.stop();
    let offline = scratch.path().join("offline");
    let out = backup(&node, &offline);
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && line.contains("(offline"),
        "{line}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    verify_dir(&offline);
    let restored = serve_from(&offline);
    let (available, _) = balances_minor(&api, &restored.sandbox, &key, "GHS", 2).await;
    assert_eq!(available, i128::from(total) * 100, "a stopped node's backup holds every deposit");
}

/// `sika bench` measures the ledger on this machine: it reports the
/// transfers it made, their throughput and the batch latency percentiles,
/// leaves nothing behind, and refuses a run it cannot make.
#[test]
fn sika_bench_reports_throughput_and_batch_latencies() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["bench", "--transfers", "3000", "--accounts", "50", "--batch", "200", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{printed}{}", String::from_utf8_lossy(&out.stderr));
    assert!(printed.contains("3000 transfers over 50 accounts, in batches of 200"), "{printed}");
    // Each batch is submitted together, so each is one commit.
    assert!(printed.contains(" transfers/s, 15 commits"), "{printed}");
    let rate: f64 =
        printed.split(" transfers/s").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(rate > 0.0, "{printed}");
    assert!(printed.contains("batch latency p50") && printed.contains(" p99 "), "{printed}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the scratch database is removed");

    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["bench", "--accounts", "1", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("at least 2 accounts"));
}
