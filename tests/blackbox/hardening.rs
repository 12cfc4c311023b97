//! Hostile clients (issue 16): connections held open or fed a byte at a
//! time, slow bodies, floods without credentials, a world-readable data
//! directory and secrets in the request log.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::support::disk::SmallFilesystem;
use crate::support::*;

/// The address the flooding client uses; the clients that must still be
/// answered come from 127.0.0.1.
const FLOOD_FROM: &str = "127.0.0.2:0";

fn socket_addr(base: &str) -> SocketAddr {
    base.trim_start_matches("http://").parse().expect("a listener address")
}

async fn connect_from(from: &str, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(from.parse().expect("a source address"))?;
    socket.connect(to).await
}

/// Whether the node has closed `stream` (end of file or reset).
fn closed(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 64];
    match stream.try_read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(_) => true,
    }
}

/// How long a new client (its own connection, from 127.0.0.1) waits for
/// `GET /healthz`: the median of five tries.
async fn new_client_wait(base: &str) -> Duration {
    let mut waits = Vec::new();
    for _ in 0..5 {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap();
        let started = Instant::now();
        let r = client.get(format!("{base}/healthz")).send().await;
        let waited = started.elapsed();
        assert!(r.is_ok_and(|r| r.status() == 200), "{base}/healthz did not answer within 5 s");
        waits.push(waited);
    }
    waits.sort();
    waits[2]
}

/// Issue 16.1's bar: one address holds 2,000 connections to each listener,
/// half idle and half sending a header byte at a time, against a node
/// started with a 1,024 open-file soft limit (a default install's). Every
/// listener still answers a new client in under 100 ms, the flooding
/// address holds no more than its share, and once it lets go the node
/// answers it again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_held_connections_leave_every_listener_answering() {
    raise_descriptor_limit();
    let node = Node::start(Options { descriptors_soft: Some(1024), ..Options::unthrottled() });
    let bases = [node.live.clone(), node.sandbox.clone(), node.admin.clone()];
    let mut held: Vec<Vec<TcpStream>> = Vec::new();
    for base in &bases {
        let mut streams = Vec::new();
        for _ in 0..2000 {
            match tokio::time::timeout(Duration::from_secs(2), connect_from(FLOOD_FROM, socket_addr(base)))
                .await
            {
                Ok(Ok(stream)) => streams.push(stream),
                // A full backlog on an unprotected node: the flood is what it is.
                _ => break,
            }
        }
        held.push(streams);
    }
    let trickle = |held: &Vec<Vec<TcpStream>>, line: &[u8]| {
        for stream in held.iter().flat_map(|s| s.iter().skip(1000)) {
            let _ = stream.try_write(line);
        }
    };
    trickle(&held, b"GET /healthz HTTP/1.1\r\n");
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trickle(&held, b"X");
    }
    let mut figures = Vec::new();
    for base in &bases {
        let wait = new_client_wait(base).await;
        figures.push(format!("{base}: {} ms", wait.as_secs_f64() * 1000.0));
        assert!(wait < Duration::from_millis(100), "a new client waited {wait:?} at {base}");
    }
    for (base, streams) in bases.iter().zip(&held) {
        let open = streams.iter().filter(|s| !closed(s)).count();
        // The default share: an eighth of the 4,096 connections a listener takes.
        assert!(open <= 512, "{base}: one address holds {open} connections");
        figures.push(format!("{base}: {open} of {} held", streams.len()));
    }
    eprintln!("new client waits and connections held: {figures:?}");
    drop(held);
    // Recovered by itself: the address that flooded is answered again.
    for base in &bases {
        let mut stream =
            eventually("the flooding address to be admitted again", Duration::from_secs(10), || async {
                let mut stream = connect_from(FLOOD_FROM, socket_addr(base)).await.ok()?;
                stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .await
                    .ok()?;
                let mut answer = Vec::new();
                tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer))
                    .await
                    .ok()?
                    .ok()?;
                answer.starts_with(b"HTTP/1.1 200").then_some(stream)
            })
            .await;
        let _ = stream.shutdown().await;
    }
}

/// Reads what the node sends until it closes the connection, for at most
/// `within`; `None` if it was still open then.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut answer = Vec::new();
    match tokio::time::timeout(within, stream.read_to_end(&mut answer)).await {
        Ok(_) => Some(answer),
        Err(_) => None,
    }
}

/// Issue 16.1: a connection that sends nothing, one whose head arrives a
/// byte at a time and one kept alive after its request are each closed once
/// their timeout passes; a body that stops arriving is answered `400`
/// naming `body` once the body timeout passes.
#[tokio::test]
async fn idle_connections_slow_heads_and_slow_bodies_are_cut_off() {
    let node = Node::start_with_env(
        Options::unthrottled(),
        &[("SIKA_HEADER_TIMEOUT", "1s"), ("SIKA_IDLE_TIMEOUT", "1s"), ("SIKA_BODY_TIMEOUT", "1s")],
    );
    let sandbox = socket_addr(&node.sandbox);
    let started = Instant::now();
    let mut idle = TcpStream::connect(sandbox).await.unwrap();
    assert!(
        read_until_closed(&mut idle, Duration::from_secs(5)).await.is_some(),
        "an idle connection stays open"
    );
    let idle_closed = started.elapsed();

    let started = Instant::now();
    let mut slow = TcpStream::connect(sandbox).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let mut head_closed = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if slow.write_all(b"X").await.is_err() || closed(&slow) {
            head_closed = Some(started.elapsed());
            break;
        }
    }
    let head_closed = head_closed.expect("a head sent a byte every 100 ms for 5 s was never cut off");

    let mut kept = TcpStream::connect(sandbox).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let started = Instant::now();
    let answer =
        read_until_closed(&mut kept, Duration::from_secs(5)).await.expect("kept alive past its idle timeout");
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    let kept_closed = started.elapsed();

    let mut body = TcpStream::connect(sandbox).await.unwrap();
    let head = format!(
        "POST /v1/payouts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"from\":",
        node.creds.sandbox_key
    );
    body.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut body, Duration::from_secs(5))
        .await
        .expect("a stalled body was never answered");
    let body_answered = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("\"field\":\"body\"") && answer.contains("did not arrive"), "{answer}");
    eprintln!(
        "closed after: idle {idle_closed:?}, slow head {head_closed:?}, kept alive {kept_closed:?}; stalled body answered after {body_answered:?}"
    );
    for (what, took) in [
        ("idle", idle_closed),
        ("slow head", head_closed),
        ("kept alive", kept_closed),
        ("body", body_answered),
    ] {
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(3), "{what}: {took:?}");
    }
}

/// The node's resident memory, from /proc.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the node's /proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number");
    kib * 1024
}

/// Issue 16.2's bar: 2,000 connections without credentials each start a
/// 1 MB body, send 256 KiB of it and stop. The node answers each from its
/// headers (401) without reading the body, and stays under 256 MiB
/// resident. (Each address may hold 4,000 connections here, so the cap of
/// 16.1 does not do the work.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_slow_anonymous_bodies_keep_the_node_small() {
    raise_descriptor_limit();
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_CONNECTIONS_PER_ADDRESS_MAX", "4000")]);
    let sandbox = socket_addr(&node.sandbox);
    let before = resident_bytes(node.pid());
    let head = b"POST /v1/payouts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    let chunk = vec![b' '; 256 * 1024];
    let mut held = Vec::new();
    for _ in 0..2000 {
        let Ok(mut stream) = connect_from(FLOOD_FROM, sandbox).await else { break };
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            stream.write_all(head).await?;
            stream.write_all(&chunk).await
        })
        .await;
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = resident_bytes(node.pid());
    eprintln!(
        "resident: {} MiB before, {} MiB with {} slow bodies held",
        before / (1 << 20),
        during / (1 << 20),
        held.len()
    );
    assert!(during < 256 << 20, "the node holds {} MiB", during / (1 << 20));
    // The node still serves.
    let api = Api::new();
    api.get(&node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key).await.expect(200);
}

/// Issue 16.3: callers without valid credentials are limited per address
/// (a bad key, no key, the hosted pages), and behind a trusted proxy the
/// address is the right-most hop the proxy did not add itself: a client
/// writing a new left-most hop each time is still one caller.
#[tokio::test]
async fn callers_without_credentials_are_limited_per_address() {
    let node = Node::start(Options {
        rate_limit: Some(5),
        trusted_proxies: Some("127.0.0.1".into()),
        ..Options::default()
    });
    let api = Api::new();
    let url = node.sandbox_url("/v1/accounts");
    let statuses = |kind: &'static str| {
        let (api, url) = (api.clone(), url.clone());
        async move {
            let mut statuses = Vec::new();
            for i in 0..8 {
                let r = api
                    .send("GET", &url, |rb| {
                        let rb =
                            rb.header("x-forwarded-for", format!("10.0.0.{i}, 203.0.113.{}", kind.len()));
                        match kind {
                            "bad key" => rb.bearer_auth("sk_test_not_a_key"),
                            _ => rb,
                        }
                    })
                    .await;
                if r.status == 429 {
                    r.expect_error(429, "rate_limited");
                    assert!(r.header("retry-after").is_some(), "{}", r.text);
                }
                statuses.push(r.status);
            }
            statuses
        }
    };
    for kind in ["bad key", "no credentials"] {
        let seen = statuses(kind).await;
        assert_eq!(seen.iter().filter(|s| **s == 401).count(), 5, "{kind}: {seen:?}");
        assert_eq!(seen.iter().filter(|s| **s == 429).count(), 3, "{kind}: {seen:?}");
    }
    // A valid key is limited per key, not by the address's failures.
    api.get(&url, &node.creds.sandbox_key).await.expect(200);
    // The hosted pages, their polls included.
    let mut seen = Vec::new();
    for _ in 0..8 {
        let r = reqwest::Client::new().get(node.sandbox_url("/pay/pl_missing")).send().await.unwrap();
        seen.push(r.status().as_u16());
    }
    assert_eq!(seen.iter().filter(|s| **s == 404).count(), 5, "{seen:?}");
    assert_eq!(seen.iter().filter(|s| **s == 429).count(), 3, "{seen:?}");
}

/// Issue 16.12: the data directory is 0700 and every file in it 0600, when
/// created and again on every start (a file loosened by hand is set back).
#[tokio::test]
async fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut node = Node::start(Options::unthrottled());
    let dir = node.data_dir();
    let modes = |dir: &std::path::Path| {
        let mut found =
            vec![(dir.to_path_buf(), std::fs::metadata(dir).unwrap().permissions().mode() & 0o777)];
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            found.push((path.clone(), std::fs::metadata(&path).unwrap().permissions().mode() & 0o777));
        }
        found
    };
    let check = |found: Vec<(std::path::PathBuf, u32)>| {
        assert!(found.len() > 4, "{found:?}");
        for (path, mode) in found {
            let wanted = if path.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode, wanted, "{} is {mode:o}", path.display());
        }
    };
    check(modes(&dir));
    node.stop();
    let database = dir.join("sandbox.redb");
    std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    node.restart(&Options::unthrottled(), &[]);
    check(modes(&dir));
}

/// Issue 16.13: the request log redacts a secret anywhere in a string
/// (`"Bearer sk_live_…"`) and secret field names in any case.
#[tokio::test]
async fn the_request_log_redacts_secrets_inside_strings_and_names_in_any_case() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let secret = "sk_live_0123456789abcdefghijklmnopqrstuvwxyzABCD";
    let r = api
        .post(
            &format!("{base}/v1/payouts"),
            &key,
            json!({
                "from": { "currency": "GHS", "amount": "10.00" },
                "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
                "externalReference": "redaction-1",
                "narration": format!("Bearer {secret}"),
                "metadata": { "Authorization": "hunter2-password", "IdNumber": "GHA-123456789-0" },
            }),
        )
        .await;
    let request_id = r.request_id();
    let logged = eventually("the request in the log", Duration::from_secs(10), || async {
        let r = api.get(&format!("{base}/v1/requests/{request_id}"), &key).await;
        (r.status == 200).then_some(r)
    })
    .await;
    for leaked in [secret, "hunter2-password", "GHA-123456789-0"] {
        assert!(!logged.text.contains(leaked), "{leaked} is in the log: {}", logged.text);
    }
    assert!(logged.text.contains("Bearer [REDACTED]"), "{}", logged.text);
    drop(node);
}

/// Issue 16.10 (in part): requests refused with 429 are counted in the
/// metrics, not stored in the request log, so a flood cannot push other
/// entries out of it.
#[tokio::test]
async fn refused_floods_are_counted_not_logged() {
    let node = Node::start(Options { rate_limit: Some(2), ..Options::default() });
    let api = Api::new();
    let mut answered = Vec::new();
    for _ in 0..6 {
        let r = api.get(&node.sandbox_url("/v1/accounts"), &node.creds.sandbox_key).await;
        answered.push((r.status, r.request_id()));
    }
    assert!(answered.iter().any(|(s, _)| *s == 429), "{answered:?}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let stored = answered.iter().find(|(s, _)| *s == 200).map(|(_, id)| id.clone()).unwrap();
    let url = |id: &str| node.sandbox_url(&format!("/v1/requests/{id}"));
    eventually("the accepted request in the log", Duration::from_secs(10), || async {
        let r = api.get(&url(&stored), &node.creds.sandbox_key).await;
        (r.status == 200).then_some(())
    })
    .await;
    for (_, id) in answered.iter().filter(|(s, _)| *s == 429) {
        tokio::time::sleep(Duration::from_millis(600)).await;
        api.get(&url(id), &node.creds.sandbox_key).await.expect_error(404, "not_found");
    }
    let metrics = reqwest::get(node.admin_url("/metrics")).await.unwrap().text().await.unwrap();
    assert!(
        metrics.lines().any(|l| l.starts_with("sika_http_requests_total{") && l.contains("status=\"429\"")),
        "{metrics}"
    );
}

/// Creates `count` sandbox collections with references `{prefix}-{n}`,
/// eight at a time.
async fn create_collections(sandbox: &Sandbox, prefix: &str, count: usize) {
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (api, url, key, prefix) = (
            sandbox.api.clone(),
            sandbox.node.sandbox_url("/v1/collections"),
            sandbox.key.clone(),
            prefix.to_string(),
        );
        workers.spawn(async move {
            for n in (worker..count).step_by(8) {
                let body = json!({
                    "amount": "10.00", "currency": "GHS", "code": "mtn_gh",
                    "accountNumber": "+233241234567", "externalReference": format!("{prefix}-{n}"),
                });
                api.post(&url, &key, body).await.expect(201);
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.expect("a creating worker");
    }
}

/// Walks a filtered list by `nextCursor`, returning each page's size.
async fn page_sizes(sandbox: &Sandbox, query: &str) -> (Vec<usize>, Vec<Value>) {
    let (mut sizes, mut items, mut cursor) = (Vec::new(), Vec::new(), None::<String>);
    loop {
        let url = match &cursor {
            None => sandbox.node.sandbox_url(&format!("/v1/collections?{query}")),
            Some(c) => sandbox.node.sandbox_url(&format!("/v1/collections?{query}&cursor={c}")),
        };
        let r = sandbox.api.get(&url, &sandbox.key).await;
        r.expect(200);
        let data = r.body["data"].as_array().unwrap().clone();
        sizes.push(data.len());
        items.extend(data);
        match r.body["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(r.body["hasMore"], true, "{}", r.text);
                cursor = Some(next.to_string());
            }
            None => {
                assert_eq!(r.body["hasMore"], false, "{}", r.text);
                return (sizes, items);
            }
        }
    }
}

/// Issue 16.14: a filter that matches nothing no longer walks the whole
/// index in one request. A request looks at no more than 1,000 stored
/// items and answers what it found with a cursor past them, so the oldest
/// match is still reached, one bounded page at a time.
#[tokio::test]
async fn filtered_lists_scan_a_bounded_number_of_items_per_request() {
    let sandbox = Sandbox::start();
    create_collections(&sandbox, "oldest", 1).await;
    create_collections(&sandbox, "bulk", 1_050).await;

    let (sizes, items) = page_sizes(&sandbox, "externalReference=nothing-like-it").await;
    assert_eq!(sizes, vec![0, 0], "1,051 items: one full scan of 1,000, then the rest");
    assert!(items.is_empty());

    let (sizes, items) = page_sizes(&sandbox, "externalReference=oldest-0").await;
    assert_eq!(sizes, vec![0, 1], "the oldest match is on the page after the bound");
    assert_eq!(items[0]["externalReference"], "oldest-0");

    // Unfiltered pages are full as before.
    let r = sandbox.api.get(&sandbox.node.sandbox_url("/v1/collections?limit=100"), &sandbox.key).await;
    assert_eq!((r.body["data"].as_array().unwrap().len(), &r.body["hasMore"]), (100, &json!(true)));
    sandbox.node.stop_and_verify();
}

/// Issue 16.14: an organization holds at most 100 keys that are not
/// revoked on a stack. 120 creations race; exactly enough succeed to reach
/// 100 (the bootstrap key is one), the rest get `409 invalid_state` with
/// the limit, and revoking one key makes room for exactly one more.
#[tokio::test]
async fn active_keys_per_organization_are_capped_under_racing_creation() {
    let sandbox = Sandbox::start();
    let session = sandbox.node.creds.owner_session.clone();
    let mut racing = tokio::task::JoinSet::new();
    for n in 0..120 {
        let (api, url, session) =
            (sandbox.api.clone(), sandbox.node.sandbox_url("/v1/keys"), session.clone());
        racing.spawn(async move {
            api.post(&url, &session, json!({ "name": format!("k{n}"), "scopes": ["*"] })).await
        });
    }
    let (mut created, mut refused) = (Vec::new(), 0);
    while let Some(r) = racing.join_next().await {
        let r = r.expect("a creation");
        match r.status {
            201 => created.push(r.body["apiKey"]["id"].as_str().unwrap().to_string()),
            _ => {
                r.expect_error(409, "invalid_state");
                assert_eq!(r.body["details"]["limit"], 100, "{}", r.text);
                refused += 1;
            }
        }
    }
    assert_eq!((created.len(), refused), (99, 21));
    let key = |name: &str| json!({ "name": name, "scopes": ["*"] });
    let keys_url = sandbox.node.sandbox_url("/v1/keys");
    sandbox.api.post(&keys_url, &session, key("over")).await.expect_error(409, "invalid_state");
    let revoke = sandbox.node.sandbox_url(&format!("/v1/keys/{}", created[0]));
    sandbox.api.call("DELETE", &revoke, Some(&session), None).await.expect(200);
    sandbox.api.post(&keys_url, &session, key("room for one")).await.expect(201);
    sandbox.api.post(&keys_url, &session, key("no more")).await.expect_error(409, "invalid_state");
    sandbox.node.stop_and_verify();
}

/// Fills the filesystem holding `dir` with one file, to its last byte.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("the filler file");
    let chunk = vec![0u8; 64 << 10];
    while file.write_all(&chunk).is_ok() {}
    while file.write_all(&[0]).is_ok() {}
    path
}

/// Issue 16.11 on a small real filesystem: the node's data directory fills
/// up under racing deposits. Writes answer `503 storage_unavailable`,
/// readiness turns 503 naming the ledger, the log says so once per
/// interval rather than once per request, and once space is freed writing
/// resumes by itself: no restart, every acknowledged deposit kept, and
/// `sika verify` clean.
#[tokio::test]
async fn a_full_disk_answers_503_and_writing_resumes_once_space_returns() {
    let Some(small) = SmallFilesystem::mount(96) else {
        return cannot_run(
            "a_full_disk_answers_503_and_writing_resumes_once_space_returns",
            "this machine does not let the test mount a tmpfs (it needs root)",
        );
    };
    let options = Options::unthrottled();
    let mut node = Node::start(options.clone());
    node.stop();
    let data = small.path().join("data");
    let copied = std::process::Command::new("cp").arg("-a").arg(node.data_dir()).arg(&data).status().unwrap();
    assert!(copied.success());
    // No disk reserve: this is the disk itself filling (the reserve's own
    // test is `limits`), and a 96 MiB disk is below the default 1 GiB.
    let env = [("SIKA_DATA_DIR", data.to_str().unwrap()), ("SIKA_DISK_RESERVE", "0")];
    node.restart(&options, &env);
    let (api, key) = (Api::new(), node.creds.sandbox_key.clone());
    let ready = |node: &Node| reqwest::get(node.admin_url("/readyz"));

    let depositors = Depositors::start(&api, &node, &key);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let filler = fill(small.path());
    let refused_at = Instant::now();
    let deposits = node.sandbox_url("/v1/simulations/deposits");
    let probed = std::sync::atomic::AtomicU64::new(0);
    let refusal = eventually("a deposit refused for lack of space", Duration::from_secs(30), || async {
        let r = api.post(&deposits, &key, json!({ "currency": "GHS", "amount": "1.00" })).await;
        if r.status == 201 {
            probed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        (r.status != 201).then_some(r)
    })
    .await;
    refusal.expect_error(503, "storage_unavailable");
    let (by_depositors, interrupted) = depositors.stop().await;
    let acknowledged = by_depositors + probed.load(std::sync::atomic::Ordering::SeqCst);
    assert!(interrupted && acknowledged > 0, "{acknowledged} acknowledged");
    let readiness = ready(&node).await.unwrap();
    assert_eq!(readiness.status(), 503);
    let reasons = readiness.text().await.unwrap();
    assert!(reasons.contains("sandbox writer"), "{reasons}");

    std::fs::remove_file(filler).unwrap();
    eventually("ready again", Duration::from_secs(30), || async {
        (ready(&node).await.ok()?.status() == 200).then_some(())
    })
    .await;
    let resumed_after = refused_at.elapsed();
    let after = api.post(&deposits, &key, json!({ "currency": "GHS", "amount": "1.00" })).await;
    after.expect(201);
    // The request log writes again too.
    let logged = node.admin_url(&format!("/admin/v1/requests/{}", after.request_id()));
    eventually("the request log writing again", Duration::from_secs(15), || async {
        (api.get(&logged, &node.creds.admin_token).await.status == 200).then_some(())
    })
    .await;
    let expected = format!("{}.00", acknowledged + 1);
    assert_eq!(balance(&api, &node.sandbox, &key, "GHS").await, expected);

    node.stop();
    let log = node.log();
    let storage_lines =
        log.lines().filter(|l| l.contains("cannot write") || l.contains("storage error")).count();
    assert!(
        storage_lines <= 1 + (resumed_after.as_secs() as usize / 10) * 4,
        "{storage_lines} lines:\n{log}"
    );
    verify_dir(&data);
}

/// Issue 16.10: the request log keeps a count per organization and an age.
/// With 5 entries kept per organization, A's 40 requests leave B's three in
/// the log and keep A's newest five; and past the maximum age, entries go
/// whoever made them.
#[tokio::test]
async fn request_log_retention_is_per_organization_by_count_and_age() {
    let node = Node::start_with_env(
        Options::unthrottled(),
        &[("SIKA_REQUEST_LOG_RETENTION", "5"), ("SIKA_REQUEST_LOG_MAX_AGE", "4s")],
    );
    let api = Api::new();
    let (_, b_key) = organization_b(&api, &node).await;

    let b_reads = logged_reads(&api, &node, &b_key, 3).await;
    let a_reads = logged_reads(&api, &node, &node.creds.sandbox_key, 40).await;
    let newest = a_reads.last().unwrap().clone();
    eventually("A's newest read written and A trimmed", Duration::from_secs(10), || async {
        (in_log(&api, &node, &newest).await && !in_log(&api, &node, &a_reads[0]).await).then_some(())
    })
    .await;
    for id in &b_reads {
        assert!(in_log(&api, &node, id).await, "B's {id} was pushed out by A's traffic");
    }
    let mut kept = Vec::new();
    for id in &a_reads {
        kept.push(in_log(&api, &node, id).await);
    }
    assert_eq!(kept.iter().filter(|k| **k).count(), 5, "{kept:?}");
    assert!(kept[35..].iter().all(|k| *k), "A's newest five stay: {kept:?}");

    // Past the maximum age every entry goes, with the next write.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let fresh = logged_reads(&api, &node, &b_key, 1).await.remove(0);
    eventually("the old entries aged out", Duration::from_secs(10), || async {
        (in_log(&api, &node, &fresh).await && !in_log(&api, &node, &b_reads[0]).await).then_some(())
    })
    .await;
    assert!(!in_log(&api, &node, &newest).await, "A's entries aged out too");
    node.stop_and_verify();
}
