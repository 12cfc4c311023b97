//! Two nodes on one PostgreSQL database (issue 19): the writer serves,
//! the second node stands by (`/readyz` 503 with `"role":"standby"`, the
//! API 503), and when the writer is killed with SIGKILL under concurrent
//! payouts and deposits the standby takes the leases within the lease's
//! time and serves every acknowledged operation exactly once, to the same
//! keys and operator token (the identity is the database's too), with the
//! writer's request log, every payout's webhook delivered, and books that
//! pass `sika verify --store`.

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

/// `/readyz` as a load balancer sees it; a connection the node closed as
/// it changed roles is status 0 (a balancer asks again).
async fn readyz(api: &Api, base: &str) -> (u16, Value) {
    let Ok(r) = api.client.get(format!("{base}/readyz")).send().await else { return (0, Value::Null) };
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_takes_over_from_a_killed_writer_with_every_acknowledged_operation() {
    let Some(cluster) = crate::support::pg_cluster::Cluster::start() else { return };
    let (writer, options) = leased_writer(&cluster, "failover");
    let api = Api::new();
    let key = writer.creds.sandbox_key.clone();
    assert_eq!(readyz(&api, &writer.sandbox).await.0, 200, "{}", writer.log());
    deposit(&api, &writer, &key, "GHS", "100000.00").await;
    let sink = WebhookSink::registered(&api, &writer.sandbox, &key).await;
    // A request the writer logged, to be found on the standby later.
    let logged = api.get(&writer.sandbox_url("/v1/accounts"), &key).await;
    logged.expect(200);
    let request_id = logged.header("x-request-id").expect("a request id").to_string();

    let standby = Node::standby_of(&writer, &options, &LEASE_ENV);
    let (status, body) = readyz(&api, &standby.sandbox).await;
    assert_eq!((status, body["role"].as_str()), (503, Some("standby")), "{body}");
    assert!(body["reasons"].to_string().contains("holds the writer lease"), "{body}");
    let refused = api.get(&standby.sandbox_url("/v1/payouts"), &key).await;
    refused.expect_error(503, "unavailable");

    // Payouts and deposits pour into the writer; it is killed part-way.
    let (acked, workers) = pay_out_until_refused(&api, &writer, &key);
    let depositors = Depositors::start_in(&api, &writer, &key, "USD");
    eventually("payouts acknowledged", Duration::from_secs(20), || async {
        (acked.payouts.lock().unwrap().len() >= 30).then_some(())
    })
    .await;
    writer.kill9();
    let killed = Instant::now();
    for worker in workers {
        let _ = worker.await;
    }
    let deposits = depositors.deposits();
    let (_, refused) = depositors.stop().await;
    assert!(refused, "the deposits stop when the writer is killed");

    // The standby takes over within the lease (and its polling), then
    // serves every acknowledged payout once.
    eventually("the standby takes over", Duration::from_secs(15), || async {
        (readyz(&api, &standby.sandbox).await.0 == 200).then_some(())
    })
    .await;
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(6), "took over {took:?} after the kill, lease {LEASE}");
    check_exactly_once(&api, &standby, &key, &acked).await;
    check_deposits_once(&api, &standby, &key, &deposits).await;
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
    check_the_database_is_shared(&api, &writer, &standby, &request_id).await;
    let created =
        api.post(&standby.sandbox_url("/v1/payouts"), &key, crate::crash::payout_body("pg-after")).await;
    created.expect(201);
    println!(
        "{} payouts acknowledged before the kill; the standby took over {took:?} after it",
        acked.payouts.lock().unwrap().len()
    );
    standby.stop();
}

/// Starts three payout workers on the writer, each going until a payout
/// is not acknowledged.
fn pay_out_until_refused(
    api: &Api,
    writer: &Node,
    key: &str,
) -> (Arc<Acknowledged>, Vec<tokio::task::JoinHandle<()>>) {
    let acked = Arc::new(Acknowledged::default());
    let workers = (0..3)
        .map(|worker| {
            let (url, prefix) = (writer.sandbox_url("/v1/payouts"), format!("pg-po-{worker}"));
            tokio::spawn(pay_out(api.clone(), url, key.to_string(), prefix, acked.clone()))
        })
        .collect();
    (acked, workers)
}

/// What the standby knows from the database rather than its own (empty)
/// data directory: the operator token and organizations, the request log
/// the writer kept, and books that pass the audit; and it leaves backups
/// to the database's own tools.
async fn check_the_database_is_shared(api: &Api, writer: &Node, standby: &Node, request_id: &str) {
    let token = &writer.creds.admin_token;
    let organizations = api.get(&standby.admin_url("/admin/v1/organizations"), token).await;
    organizations.expect(200);
    assert_eq!(organizations.body["data"][0]["id"], writer.creds.organization_id.as_str());
    let found = api.get(&standby.admin_url(&format!("/admin/v1/requests/{request_id}")), token).await;
    found.expect(200);
    assert_eq!(found.body["request"]["path"], "/v1/accounts", "{}", found.body);
    // The database itself is audited (`--store`), the standby writing.
    let report = standby.verify();
    assert!(report.contains("sandbox: consistent"), "{report}");
    let to = standby.data_dir().with_extension("backup");
    let backup =
        api.post(&standby.admin_url("/admin/v1/backup"), token, serde_json::json!({ "to": to })).await;
    backup.expect_refusal(409, "invalid_state", "pg_dump");
}

/// Every acknowledged deposit (USD, which the payouts do not touch) is
/// there exactly once: sent again it is a replay of the same deposit (200,
/// same id), and the USD balance holds each acknowledged one, plus at most
/// one unanswered in flight per depositor.
async fn check_deposits_once(api: &Api, node: &Node, key: &str, acked: &[(String, String)]) {
    assert!(!acked.is_empty(), "no deposit was acknowledged before the kill");
    for (reference, id) in acked {
        let again = api
            .post(&node.sandbox_url("/v1/simulations/deposits"), key, deposit_body("USD", reference))
            .await;
        again.expect(200);
        assert_eq!(again.body["deposit"]["id"], id.as_str(), "deposit {reference} after the takeover");
    }
    let held: f64 = balance(api, &node.sandbox, key, "USD").await.parse().unwrap();
    let (least, most) = (acked.len() as f64, (acked.len() + DEPOSITOR_TASKS) as f64);
    assert!(
        (least..=most).contains(&held),
        "USD {held}: {} deposits of {DEPOSITED} acknowledged",
        acked.len()
    );
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
