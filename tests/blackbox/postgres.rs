//! Two nodes on one PostgreSQL database (issue 19): the writer serves,
//! the second node stands by (`/readyz` 503 with `"role":"standby"`, the
//! API 503), and when the writer is killed with SIGKILL under concurrent
//! payouts the standby takes the leases within the lease's time and
//! serves every acknowledged payout exactly once, to the same keys and
//! operator token (the identity is the database's too), and every payout's
//! webhook is delivered.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::crash::{Acknowledged, check_exactly_once, pay_out};
use crate::support::*;

/// The lease both nodes run with: the bound on a takeover.
const LEASE: &str = "2s";
/// The environment both nodes start with.
const LEASE_ENV: [(&str, &str); 1] = [("SIKA_LEASE_TTL", LEASE)];

/// A writer on the cluster's database `name`, with the test's lease, and
/// the options a standby of it starts with.
fn leased_writer(cluster: &crate::support::pg_cluster::Cluster, name: &str) -> (Node, Options) {
    let options = Options { store: Some(cluster.database(name)), ..Options::unthrottled() };
    (Node::start_with_env(options.clone(), &LEASE_ENV), options)
}

async fn readyz(api: &Api, base: &str) -> (u16, Value) {
    let r = api.client.get(format!("{base}/readyz")).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_takes_over_from_a_killed_writer_with_every_acknowledged_payout() {
    let Some(cluster) = crate::support::pg_cluster::Cluster::start() else { return };
    let (writer, options) = leased_writer(&cluster, "failover");
    let api = Api::new();
    let key = writer.creds.sandbox_key.clone();
    assert_eq!(readyz(&api, &writer.sandbox).await.0, 200, "{}", writer.log());
    deposit(&api, &writer, &key, "GHS", "100000.00").await;
    let sink = WebhookSink::registered(&api, &writer.sandbox, &key).await;

    let standby = Node::standby_of(&writer, &options, &LEASE_ENV);
    let (status, body) = readyz(&api, &standby.sandbox).await;
    assert_eq!((status, body["role"].as_str()), (503, Some("standby")), "{body}");
    assert!(body["reasons"].to_string().contains("holds the writer lease"), "{body}");
    let refused = api.get(&standby.sandbox_url("/v1/payouts"), &key).await;
    refused.expect_error(503, "unavailable");

    // Payouts pour into the writer; it is killed part-way.
    let acked = Arc::new(Acknowledged::default());
    let mut workers = Vec::new();
    for worker in 0..3 {
        let (url, prefix) = (writer.sandbox_url("/v1/payouts"), format!("pg-po-{worker}"));
        workers.push(tokio::spawn(pay_out(api.clone(), url, key.clone(), prefix, acked.clone())));
    }
    eventually("payouts acknowledged", Duration::from_secs(20), || async {
        (acked.payouts.lock().unwrap().len() >= 30).then_some(())
    })
    .await;
    writer.kill9();
    let killed = Instant::now();
    for worker in workers {
        let _ = worker.await;
    }

    // The standby takes over within the lease (and its polling), then
    // serves every acknowledged payout once.
    eventually("the standby takes over", Duration::from_secs(15), || async {
        (readyz(&api, &standby.sandbox).await.0 == 200).then_some(())
    })
    .await;
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(6), "took over {took:?} after the kill, lease {LEASE}");
    check_exactly_once(&api, &standby, &key, &acked).await;
    // Webhooks resume without loss: every acknowledged payout's outcome is
    // delivered, by the writer before the kill or by the standby after.
    let ids: Vec<String> = acked.payouts.lock().unwrap().iter().map(|(_, id, _)| id.clone()).collect();
    eventually("every payout's outcome delivered", Duration::from_secs(30), || async {
        let received = sink.received();
        let delivered = |id: &str| {
            received.iter().any(|b| {
                b["data"]["id"] == id && (b["event"] == "payout.completed" || b["event"] == "payout.failed")
            })
        };
        ids.iter().all(|id| delivered(id)).then_some(())
    })
    .await;
    // The standby started from an empty data directory: the operator token
    // and the organizations it knows are the database's.
    let organizations =
        api.get(&standby.admin_url("/admin/v1/organizations"), &writer.creds.admin_token).await;
    organizations.expect(200);
    assert_eq!(organizations.body["data"][0]["id"], writer.creds.organization_id.as_str());
    // A backup is the database's own tools' job: the node says so.
    let to = standby.data_dir().with_extension("backup");
    let backup = api
        .post(
            &standby.admin_url("/admin/v1/backup"),
            &writer.creds.admin_token,
            serde_json::json!({ "to": to }),
        )
        .await;
    backup.expect_refusal(409, "invalid_state", "pg_dump");
    let created =
        api.post(&standby.sandbox_url("/v1/payouts"), &key, crate::crash::payout_body("pg-after")).await;
    created.expect(201);
    println!(
        "{} payouts acknowledged before the kill; the standby took over {took:?} after it",
        acked.payouts.lock().unwrap().len()
    );
    standby.stop();
}

/// Sends `signal` to a node's process.
fn signal(node: &Node, signal: libc::c_int) {
    // SAFETY: plain syscall on a process this test started.
    unsafe {
        libc::kill(node.pid() as libc::pid_t, signal);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_writer_paused_past_its_lease_commits_nothing_once_it_resumes() {
    let Some(cluster) = crate::support::pg_cluster::Cluster::start() else { return };
    let (writer, options) = leased_writer(&cluster, "fencing");
    let api = Api::new();
    let key = writer.creds.sandbox_key.clone();
    deposit(&api, &writer, &key, "GHS", "1000.00").await;
    let standby = Node::standby_of(&writer, &options, &LEASE_ENV);

    // The writer is paused (as a stalled VM or a long GC pause would) past
    // its lease; the standby takes over and writes.
    signal(&writer, libc::SIGSTOP);
    eventually("the standby takes over", Duration::from_secs(15), || async {
        (readyz(&api, &standby.sandbox).await.0 == 200).then_some(())
    })
    .await;
    let url = standby.sandbox_url("/v1/payouts");
    let created = api.post(&url, &key, crate::crash::payout_body("pg-new-writer")).await;
    created.expect(201);
    let fee = minor(created.body["payout"]["fee"]["amount"].as_str().unwrap_or("0"), 2);

    // The old writer resumes believing it still writes: whatever it is
    // sent, nothing of it reaches the database.
    signal(&writer, libc::SIGCONT);
    for n in 0..5 {
        let body = crate::crash::payout_body(&format!("pg-fenced-{n}"));
        let sent =
            api.client.post(writer.sandbox_url("/v1/payouts")).bearer_auth(&key).json(&body).send().await;
        if let Ok(r) = sent {
            assert_ne!(
                r.status().as_u16(),
                201,
                "the old writer acknowledged a payout after losing its lease"
            );
        }
    }
    let listed = every_item(&api, &url, &key).await;
    let references: Vec<&str> = listed.iter().filter_map(|p| p["externalReference"].as_str()).collect();
    assert_eq!(references, ["pg-new-writer"], "only the lease holder's payout exists");
    let available = minor(&balance(&api, &standby.sandbox, &key, "GHS").await, 2);
    assert_eq!(available, 100_000 - 100 - fee, "the deposit less the new writer's payout only");
    writer.kill9();
    standby.stop();
}
