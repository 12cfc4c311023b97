//! Operating a node, from outside: liveness and readiness on every
//! listener, as pinned in CONTRACT.md ("Operating a node").

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
