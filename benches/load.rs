//! HTTP load generator: starts a release `sika serve` on a fresh data
//! directory (real disk, loopback ports, rate limit raised) and drives the
//! sandbox stack with 64 keep-alive connections, one task per connection,
//! each looping requests until the time or count bound. Every scenario gets
//! its own node, so background work of one (payouts settling, deliveries
//! draining) never leaks into the next.
//!
//! ```sh
//! cargo build --release --bin sika -j 2
//! cargo bench -p sika-benches --bench load -j 2             # every scenario
//! cargo bench -p sika-benches --bench load -j 2 -- payouts  # one scenario
//! ```
//!
//! Scenarios: `accounts` (GET /v1/accounts), `conversions` (quote then
//! execute), `payouts` (POST /v1/payouts), `webhooks` (dispatcher throughput
//! as seen by a receiver in this process), and, only when named,
//! `payout_bytes` (the ledger files' growth per payout: `SIKA_LOAD_PAYOUTS`
//! sandbox payouts, default 100,000, settled at once with
//! `SIKA_TIME_SCALE=0.001`, then a SIGTERM, the sizes of `sandbox.redb` and
//! its logs divided by the payouts acknowledged, `sika footprint`'s
//! records per space, and the files again after `sika compact`; `SIKA_LOAD_PAD` adds that many characters to each
//! payout's reference, since payouts of one size fill redb's leaves to a
//! margin that decides whether they split when the payouts settle). Each prints `SUMMARY <name>:
//! <figure>` lines, the node's CPU (total and per thread name) and this
//! process's CPU over the measured window.
//!
//! Environment: `SIKA_BIN` (default `<workspace>/target/release/sika`),
//! `SIKA_LOAD_SECONDS` (measured seconds per scenario, default 10),
//! `SIKA_LOAD_CONNECTIONS` (default 64), `SIKA_LOAD_MAX_REQUESTS` (bound on
//! operations per scenario, default 20,000,000), `SIKA_BENCH_DIR` (where the
//! data directory goes; default cargo's scratch directory under `target/`),
//! `SIKA_LOAD_PERF` (a directory: run `perf record` on the node over each
//! measured window, `<scenario>.perf.data`), `SIKA_LOAD_PERF_ARGS` (default
//! `--call-graph dwarf,32768 -F 250`), `SIKA_LOAD_WEBHOOK_BACKLOG=1` (the
//! webhook receiver holds every request until generation has ended, so the
//! node builds a backlog and the drain phase measures the dispatcher alone,
//! without deposits competing; keep `SIKA_LOAD_SECONDS` at 20 or less, as a
//! held attempt times out after 15 s), `SIKA_LOAD_STORE=postgres` (the
//! node's stacks on PostgreSQL instead of the embedded store: this process
//! starts a throwaway cluster with `initdb`, as the black-box tests do, and
//! gives each scenario's node a new database; the cluster's CPU is printed
//! beside the node's).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream as StdTcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sika_benches::{bench_dir, filesystem_of};
use tempfile::TempDir;

#[path = "../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

const SCENARIOS: [&str; 4] = ["accounts", "conversions", "payouts", "webhooks"];
/// Scenarios run only when a filter names them whole.
const OPT_IN: [&str; 1] = ["payout_bytes"];

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<&str> = SCENARIOS
        .iter()
        .copied()
        .filter(|name| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .chain(OPT_IN.iter().copied().filter(|name| filters.iter().any(|f| f == name)))
        .collect();
    if selected.is_empty() {
        eprintln!("no scenario matches {filters:?}; scenarios: {}", SCENARIOS.join(", "));
        std::process::exit(2);
    }
    let settings = Settings::from_env();
    println!(
        "load: {} connections, {:.1} s per scenario (+{:.1} s warm-up), node {}, nproc {}, loadavg {}",
        settings.connections,
        settings.seconds.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        settings.bin.display(),
        nproc(),
        loadavg()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    // On PostgreSQL, one cluster for the whole run (stopped and removed
    // when it is dropped at the end), a database per scenario.
    let cluster = settings.postgres.then(|| {
        let cluster =
            pg_cluster::Cluster::start().expect("SIKA_LOAD_STORE=postgres needs PostgreSQL installed");
        println!("store: PostgreSQL, a throwaway cluster in {}", cluster.dir().display());
        let pid = std::fs::read_to_string(cluster.dir().join("data/postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse().ok())
            .expect("the cluster's postmaster.pid names its process");
        let _ = POSTMASTER.set(pid);
        cluster
    });
    for name in selected {
        let store = cluster.as_ref().map(|c| c.database(&format!("load_{name}")));
        // The node is spawned from the main thread: its parent-death signal
        // is tied to this thread, which lives until the end.
        let mut node = Node::start(&settings.bin, name, store.as_deref());
        let data_dir = node.dir.path().join("data");
        println!(
            "\n== {name}: node pid {} on {} (data dir {}, {}), loadavg {}",
            node.pid,
            node.sandbox,
            node.dir.path().display(),
            filesystem_of(node.dir.path()),
            loadavg()
        );
        let acknowledged = runtime.block_on(async {
            let ctx = Ctx::new(&node, &settings);
            match name {
                "accounts" => accounts(&ctx).await,
                "conversions" => conversions(&ctx).await,
                "payouts" => payouts(&ctx).await,
                "webhooks" => webhooks(&ctx).await,
                "payout_bytes" => return Some(payout_bytes(&ctx).await),
                _ => unreachable!(),
            }
            None
        });
        match node.stop() {
            Some(status) if status.success() => println!("{name}: node stopped cleanly on SIGTERM"),
            Some(status) => println!("{name}: node exited with {status} after SIGTERM"),
            None => println!("{name}: node did not stop on SIGTERM within 30 s; killed"),
        }
        if let Some(payouts) = acknowledged {
            ledger_bytes_per_payout(&settings.bin, &data_dir, payouts);
        }
        println!("{name}: loadavg {}", loadavg());
    }
}

// ---------------------------------------------------------------------------
// Settings and the node process

#[derive(Clone)]
struct Settings {
    bin: PathBuf,
    seconds: Duration,
    warmup: Duration,
    connections: usize,
    max_operations: u64,
    perf_dir: Option<PathBuf>,
    /// `SIKA_LOAD_STORE=postgres`: the stacks on PostgreSQL.
    postgres: bool,
}

impl Settings {
    fn from_env() -> Settings {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
        let bin = std::env::var_os("SIKA_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("target/release/sika"));
        assert!(
            bin.exists(),
            "{} does not exist: build it first with `cargo build --release --bin sika -j 2` or set SIKA_BIN",
            bin.display()
        );
        let seconds: f64 = env_parse("SIKA_LOAD_SECONDS", 10.0);
        assert!(seconds > 0.0, "SIKA_LOAD_SECONDS must be positive");
        let connections: usize = env_parse("SIKA_LOAD_CONNECTIONS", 64);
        assert!(connections > 0, "SIKA_LOAD_CONNECTIONS must be at least 1");
        Settings {
            bin,
            seconds: Duration::from_secs_f64(seconds),
            warmup: Duration::from_secs_f64((seconds / 10.0).min(1.0)),
            connections,
            max_operations: env_parse("SIKA_LOAD_MAX_REQUESTS", 20_000_000),
            perf_dir: std::env::var_os("SIKA_LOAD_PERF").map(PathBuf::from),
            postgres: match std::env::var("SIKA_LOAD_STORE").as_deref() {
                Err(_) | Ok("" | "embedded") => false,
                Ok("postgres") => true,
                Ok(other) => panic!("SIKA_LOAD_STORE={other:?}: use embedded (the default) or postgres"),
            },
        }
    }
}

fn env_parse<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text.trim().parse().unwrap_or_else(|_| panic!("{name}={text:?} is not valid")),
        Err(_) => default,
    }
}

/// A running `sika serve`. Dropping it (also while unwinding from a panic)
/// sends SIGTERM and waits; the child also gets SIGTERM if this process dies
/// (PR_SET_PDEATHSIG).
struct Node {
    child: Option<Child>,
    pid: i32,
    sandbox: SocketAddr,
    admin: SocketAddr,
    key: String,
    admin_token: String,
    log: PathBuf,
    dir: TempDir,
}

impl Node {
    /// A node on a fresh data directory; with `store` (a PostgreSQL
    /// connection string) its stacks live in that database.
    fn start(bin: &Path, scenario: &str, store: Option<&str>) -> Node {
        let dir = bench_dir(env!("CARGO_TARGET_TMPDIR"));
        let data = dir.path().join("data");
        let mut init = Process::new(bin);
        if let Some(store) = store {
            init.env("SIKA_STORE", store);
        }
        let init = init
            .args(["init", "--json"])
            .env("SIKA_DATA_DIR", &data)
            .stderr(Stdio::inherit())
            .output()
            .expect("run sika init");
        assert!(init.status.success(), "sika init --json failed: {}", init.status);
        let credentials: Value = serde_json::from_slice(&init.stdout).expect("sika init prints JSON");
        let key = credentials["sandboxKey"].as_str().expect("sandboxKey").to_string();
        let admin_token = credentials["adminToken"].as_str().expect("adminToken").to_string();
        let [live, sandbox, admin] = free_ports();
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sika-load-{scenario}.log"));
        let log_file = std::fs::File::create(&log).expect("create the node log");
        let mut command = Process::new(bin);
        if scenario == "payout_bytes" {
            // Payouts settle 2 ms after they are made instead of 2 s.
            command.env("SIKA_TIME_SCALE", "0.001");
        }
        if let Some(store) = store {
            command.env("SIKA_STORE", store);
        }
        command
            .arg("serve")
            .env("SIKA_DATA_DIR", &data)
            .env("SIKA_LIVE_ADDR", live.to_string())
            .env("SIKA_SANDBOX_ADDR", sandbox.to_string())
            .env("SIKA_ADMIN_ADDR", admin.to_string())
            .env("SIKA_RATE_LIMIT", "1000000000")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone the log file"))
            .stderr(log_file);
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn sika serve");
        let pid = child.id() as i32;
        let mut node = Node { child: Some(child), pid, sandbox, admin, key, admin_token, log, dir };
        node.wait_listening([live, sandbox, admin]);
        node
    }

    fn wait_listening(&mut self, addrs: [SocketAddr; 3]) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for addr in addrs {
            loop {
                if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                    panic!("sika serve exited with {status} before listening; log:\n{}", self.log_tail());
                }
                if StdTcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break;
                }
                assert!(Instant::now() < deadline, "sika serve is not listening on {addr} after 60 s");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, then up to 30 s for a clean stop, then SIGKILL. `None`
    /// when it had to be killed.
    fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        // SAFETY: plain kill(2) on our own child, which has not been reaped.
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Three distinct free loopback ports (bound, read, released).
fn free_ports() -> [SocketAddr; 3] {
    let listeners: Vec<TcpListener> =
        (0..3).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port")).collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().expect("local address")).collect();
    [addrs[0], addrs[1], addrs[2]]
}

// ---------------------------------------------------------------------------
// HTTP client: one hyper HTTP/1.1 connection per task

type Sender = SendRequest<Full<Bytes>>;

#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    host: HeaderValue,
    auth: HeaderValue,
}

struct Conn {
    target: Target,
    sender: Option<Sender>,
    connects: u64,
}

struct Response {
    status: u16,
    body: Bytes,
}

impl Conn {
    fn new(target: &Target) -> Conn {
        Conn { target: target.clone(), sender: None, connects: 0 }
    }

    async fn connect(&mut self) -> Result<(), String> {
        let stream = tokio::net::TcpStream::connect(self.target.addr).await.map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        self.sender = Some(sender);
        self.connects += 1;
        Ok(())
    }

    /// One request. A request that was sent is never retried: a lost answer
    /// is an error, not a second attempt.
    async fn call(&mut self, method: Method, path: &str, body: Option<Bytes>) -> Result<Response, String> {
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            self.connect().await?;
        }
        let sender = self.sender.as_mut().expect("connected above");
        if sender.ready().await.is_err() {
            self.connect().await?;
        }
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.target.host.clone())
            .header(AUTHORIZATION, self.target.auth.clone());
        if body.is_some() {
            request = request.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let request = request.body(Full::new(body.unwrap_or_default())).expect("a valid request");
        let sender = self.sender.as_mut().expect("connected above");
        let result = async {
            let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok(Response { status, body })
        }
        .await;
        if result.is_err() {
            self.sender = None;
        }
        result
    }

    async fn get(&mut self, path: &str) -> Result<Response, String> {
        self.call(Method::GET, path, None).await
    }

    async fn post(&mut self, path: &str, body: impl Into<Bytes>) -> Result<Response, String> {
        self.call(Method::POST, path, Some(body.into())).await
    }

    /// A set-up call that must answer `want`; its JSON body.
    async fn expect(&mut self, method: Method, path: &str, body: Option<Value>, want: u16) -> Value {
        let body = body.map(|b| Bytes::from(b.to_string()));
        let response =
            self.call(method.clone(), path, body).await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let text = String::from_utf8_lossy(&response.body);
        assert_eq!(response.status, want, "{method} {path} answered {}: {text}", response.status);
        serde_json::from_slice(&response.body).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }

    /// Every item of a paginated list (`limit=100`, following `nextCursor`).
    async fn list_all(&mut self, path: &str) -> Vec<Value> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page_path = match &cursor {
                Some(c) => format!("{path}{separator}limit=100&cursor={c}"),
                None => format!("{path}{separator}limit=100"),
            };
            let page = self.expect(Method::GET, &page_path, None, 200).await;
            items.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["nextCursor"].as_str() {
                Some(next) if page["hasMore"] == json!(true) => cursor = Some(next.to_string()),
                _ => return items,
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Running a workload and tallying it

struct Ctx {
    target: Target,
    admin: Target,
    pid: i32,
    settings: Settings,
}

impl Ctx {
    fn new(node: &Node, settings: &Settings) -> Ctx {
        let target = Target {
            addr: node.sandbox,
            host: HeaderValue::from_str(&node.sandbox.to_string()).expect("host header"),
            auth: HeaderValue::from_str(&format!("Bearer {}", node.key)).expect("authorization header"),
        };
        let admin = Target {
            addr: node.admin,
            host: HeaderValue::from_str(&node.admin.to_string()).expect("host header"),
            auth: HeaderValue::from_str(&format!("Bearer {}", node.admin_token))
                .expect("authorization header"),
        };
        Ctx { target, admin, pid: node.pid, settings: settings.clone() }
    }

    fn conn(&self) -> Conn {
        Conn::new(&self.target)
    }
}

/// What one task saw, counting only operations that started inside the
/// measured window (after the warm-up) in `ops` and `latencies`.
#[derive(Default)]
struct Tally {
    ops: u64,
    latencies: Vec<u32>,
    /// Per (label, status): over the whole run, warm-up included.
    statuses: HashMap<(&'static str, u16), u64>,
    errors: Vec<String>,
    error_count: u64,
    connects: u64,
    extra: Vec<u32>,
}

impl Tally {
    fn status(&mut self, label: &'static str, status: u16) {
        *self.statuses.entry((label, status)).or_default() += 1;
    }

    fn error(&mut self, label: &'static str, error: String) {
        self.error_count += 1;
        if self.errors.len() < 3 {
            self.errors.push(format!("{label}: {error}"));
        }
    }

    /// Counts an answer to `label`: its status, and, when that is `expected`
    /// for a request started inside the measured `window`, one operation and
    /// its latency. Returns whether it counted as an operation.
    fn answer(
        &mut self,
        label: &'static str,
        answer: Result<Response, String>,
        expected: u16,
        started: Instant,
        window: &Window,
    ) -> bool {
        match answer {
            Ok(r) => {
                self.status(label, r.status);
                let counted = r.status == expected && window.measured(started);
                if counted {
                    self.ops += 1;
                    self.latencies.push(started.elapsed().as_micros() as u32);
                }
                counted
            }
            Err(e) => {
                self.error(label, e);
                false
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.ops += other.ops;
        self.latencies.extend(other.latencies);
        self.extra.extend(other.extra);
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        self.error_count += other.error_count;
        for e in other.errors {
            if self.errors.len() < 5 {
                self.errors.push(e);
            }
        }
        self.connects += other.connects;
    }

    fn count(&self, label: &str, status: u16) -> u64 {
        self.statuses.iter().filter(|((l, s), _)| *l == label && *s == status).map(|(_, n)| n).sum()
    }
}

/// The window of one run, shared by its tasks.
#[derive(Clone, Copy)]
struct Window {
    measure_from: Instant,
    until: Instant,
    max_per_task: u64,
}

impl Window {
    fn running(&self, done: u64) -> bool {
        Instant::now() < self.until && done < self.max_per_task
    }

    fn measured(&self, started: Instant) -> bool {
        started >= self.measure_from
    }
}

struct RunResult {
    tally: Tally,
    measured: Duration,
    cpu: CpuReport,
    writer: WriterDelta,
}

/// The sandbox engine's writer counters (GET /admin/v1/status).
struct WriterSample {
    commits: u64,
    commands: u64,
}

impl WriterSample {
    async fn take(ctx: &Ctx) -> WriterSample {
        let status = Conn::new(&ctx.admin).expect(Method::GET, "/admin/v1/status", None, 200).await;
        let sandbox = &status["status"]["sandbox"];
        WriterSample {
            commits: sandbox["commits"].as_u64().unwrap_or(0),
            commands: sandbox["commands"].as_u64().unwrap_or(0),
        }
    }
}

struct WriterDelta {
    commits: u64,
    commands: u64,
}

impl WriterDelta {
    fn between(start: &WriterSample, end: &WriterSample) -> WriterDelta {
        WriterDelta {
            commits: end.commits.saturating_sub(start.commits),
            commands: end.commands.saturating_sub(start.commands),
        }
    }

    fn print(&self, name: &str, cpu: &CpuReport) {
        let wall = cpu.wall.as_secs_f64().max(1e-9);
        let applier = cpu.thread("sika-writer");
        let logger = cpu.thread("sika-log");
        let checkpointer = cpu.thread("sika-checkpoint");
        let per_command = |cpu: Duration| cpu.as_secs_f64() * 1e6 / (self.commands.max(1)) as f64;
        let cores = |cpu: Duration| cpu.as_secs_f64() / wall;
        println!(
            "SUMMARY {name} writer: {:.0} batches/s, {:.1} commands/batch, {:.0} commands/s, {:.0} µs writer CPU per command ({:.0} applying + {:.0} logging + {:.0} checkpointing; {:.2} + {:.2} + {:.2} cores)",
            self.commits as f64 / wall,
            self.commands as f64 / (self.commits.max(1)) as f64,
            self.commands as f64 / wall,
            per_command(applier + logger + checkpointer),
            per_command(applier),
            per_command(logger),
            per_command(checkpointer),
            cores(applier),
            cores(logger),
            cores(checkpointer)
        );
    }
}

/// Runs `connections` copies of `work` (each owns one connection and loops
/// until the window closes) and returns the merged tally with the node's
/// and this process's CPU over the measured window.
async fn run<F, Fut>(ctx: &Ctx, label: &str, seconds: Duration, work: F) -> RunResult
where
    F: Fn(usize, Conn, Window) -> Fut,
    Fut: std::future::Future<Output = (Tally, Conn)> + Send + 'static,
{
    let settings = &ctx.settings;
    let start = Instant::now();
    let window = Window {
        measure_from: start + settings.warmup,
        until: start + settings.warmup + seconds,
        max_per_task: settings.max_operations.div_ceil(settings.connections as u64),
    };
    let handles: Vec<_> =
        (0..settings.connections).map(|task| tokio::spawn(work(task, ctx.conn(), window))).collect();
    tokio::time::sleep_until(window.measure_from.into()).await;
    let writer_start = WriterSample::take(ctx).await;
    let cpu_start = CpuSample::take(ctx.pid);
    let perf = settings.perf_dir.as_ref().map(|path| Perf::start(ctx.pid, path, label));
    let mut tally = Tally::default();
    for handle in handles {
        let (t, conn) = handle.await.expect("a load task panicked");
        tally.merge(t);
        tally.connects += conn.connects;
    }
    let measured = window.measure_from.elapsed();
    let cpu = CpuSample::take(ctx.pid).since(&cpu_start);
    drop(perf);
    let writer = WriterDelta::between(&writer_start, &WriterSample::take(ctx).await);
    RunResult { tally, measured, cpu, writer }
}

fn summarize(name: &str, what: &str, result: &RunResult) -> f64 {
    let t = &result.tally;
    let rate = t.ops as f64 / result.measured.as_secs_f64();
    let mut sorted = t.latencies.clone();
    sorted.sort_unstable();
    println!(
        "{name}: {} {what} in {:.2} s measured, {} connections opened, {} errors",
        t.ops,
        result.measured.as_secs_f64(),
        t.connects,
        t.error_count
    );
    let mut statuses: Vec<_> = t.statuses.iter().collect();
    statuses.sort();
    for ((label, status), count) in statuses {
        println!("{name}:   {label} -> {status}: {count}");
    }
    for e in &t.errors {
        println!("{name}:   error: {e}");
    }
    println!("SUMMARY {name} {what}/s: {rate:.0}");
    if !sorted.is_empty() {
        println!(
            "SUMMARY {name} latency: p50 {} p90 {} p99 {} p99.9 {} max {}",
            ms(pct(&sorted, 0.50)),
            ms(pct(&sorted, 0.90)),
            ms(pct(&sorted, 0.99)),
            ms(pct(&sorted, 0.999)),
            ms(*sorted.last().unwrap())
        );
    }
    result.cpu.print(name);
    result.writer.print(name, &result.cpu);
    let node_cpu = result.cpu.node.as_secs_f64();
    if t.ops > 0 {
        println!(
            "SUMMARY {name} node CPU per {}: {:.0} µs",
            what.trim_end_matches('s'),
            node_cpu * 1e6 * (result.measured.as_secs_f64() / result.cpu.wall.as_secs_f64().max(1e-9))
                / t.ops as f64
        );
        if let Some(store) = result.cpu.store {
            println!(
                "SUMMARY {name} PostgreSQL CPU per {}: {:.0} µs",
                what.trim_end_matches('s'),
                store.as_secs_f64()
                    * 1e6
                    * (result.measured.as_secs_f64() / result.cpu.wall.as_secs_f64().max(1e-9))
                    / t.ops as f64
            );
        }
        let per_commit = match result.writer.commits {
            0 => "no ledger commits: all of it is the request log".to_string(),
            commits => format!(
                "{:.1} KiB per ledger commit",
                result.cpu.node_written as f64 / 1024.0 / commits as f64
            ),
        };
        println!(
            "{name}: node wrote {:.1} KiB per {} ({per_commit})",
            result.cpu.node_written as f64 / 1024.0 / t.ops as f64,
            what.trim_end_matches('s'),
        );
    }
    rate
}

fn pct(sorted: &[u32], p: f64) -> u32 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(micros: u32) -> String {
    format!("{:.2} ms", micros as f64 / 1000.0)
}

fn verdict(name: &str, what: &str, ok: bool, target: &str) {
    println!("SUMMARY {name} target {what}: {} ({target})", if ok { "met" } else { "MISSED" });
}

// ---------------------------------------------------------------------------
// Scenarios

async fn deposit(conn: &mut Conn, currency: &str, amount: &str) {
    conn.expect(
        Method::POST,
        "/v1/simulations/deposits",
        Some(json!({ "currency": currency, "amount": amount })),
        201,
    )
    .await;
}

/// Scenario 1: GET /v1/accounts with the sandbox key.
async fn accounts(ctx: &Ctx) {
    let name = "accounts";
    let mut setup = ctx.conn();
    deposit(&mut setup, "USD", "100.00").await;
    let listed = setup.expect(Method::GET, "/v1/accounts", None, 200).await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "one USD account: {listed}");
    let result = run(ctx, name, ctx.settings.seconds, |_, mut conn, window| async move {
        let mut tally = Tally::default();
        let mut done = 0;
        while window.running(done) {
            done += 1;
            let started = Instant::now();
            tally.answer("GET /v1/accounts", conn.get("/v1/accounts").await, 200, started, &window);
        }
        (tally, conn)
    })
    .await;
    judge(name, "requests", &result, (15_000.0, "≥15,000 req/s"), (10_000, "p99 ≤10 ms"));
}

/// Summarizes a run of `what` and says whether it met its throughput
/// target (per second) and its p99 target (microseconds), each with the
/// target's wording.
fn judge(name: &str, what: &str, result: &RunResult, rate: (f64, &str), p99: (u32, &str)) {
    let measured = summarize(name, what, result);
    verdict(name, "throughput", measured >= rate.0, rate.1);
    verdict(name, "p99", pct_of(&result.tally.latencies, 0.99) <= p99.0, p99.1);
}

fn pct_of(latencies: &[u32], p: f64) -> u32 {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() { u32::MAX } else { pct(&sorted, p) }
}

/// Scenario 2: quote then execute, each durable.
async fn conversions(ctx: &Ctx) {
    let name = "conversions";
    let mut setup = ctx.conn();
    deposit(&mut setup, "USD", "1000000000.00").await;
    let quote_body = Bytes::from(
        json!({ "from": { "currency": "USD", "amount": "1.00" }, "to": { "currency": "GHS" } }).to_string(),
    );
    let result = run(ctx, name, ctx.settings.seconds, |_, mut conn, window| {
        let quote_body = quote_body.clone();
        async move {
            let mut tally = Tally::default();
            let mut done = 0;
            while window.running(done) {
                done += 1;
                let started = Instant::now();
                let quote = match conn.post("/v1/conversions/quotes", quote_body.clone()).await {
                    Ok(r) => {
                        tally.status("POST /v1/conversions/quotes", r.status);
                        if r.status != 201 {
                            continue;
                        }
                        let v: Value = serde_json::from_slice(&r.body).unwrap_or_default();
                        match v["quote"]["id"].as_str() {
                            Some(id) => id.to_string(),
                            None => {
                                tally.error("quote", format!("no quote id in {v}"));
                                continue;
                            }
                        }
                    }
                    Err(e) => {
                        tally.error("POST /v1/conversions/quotes", e);
                        continue;
                    }
                };
                let quoted = Instant::now();
                let body = format!(r#"{{"quoteId":"{quote}"}}"#);
                if tally.answer(
                    "POST /v1/conversions",
                    conn.post("/v1/conversions", body).await,
                    201,
                    started,
                    &window,
                ) {
                    tally.extra.push(quoted.elapsed().as_micros() as u32);
                }
            }
            (tally, conn)
        }
    })
    .await;
    println!("{name}: latency below is quote + execute; execute alone:");
    let execute_p99 = pct_of(&result.tally.extra, 0.99);
    let execute_p50 = pct_of(&result.tally.extra, 0.50);
    println!("SUMMARY {name} execute latency: p50 {} p99 {}", ms(execute_p50), ms(execute_p99));
    let rate = summarize(name, "conversions", &result);
    verdict(name, "throughput", rate >= 3_000.0, "≥3,000 conversions/s");
    let listed = setup.expect(Method::GET, "/v1/accounts", None, 200).await;
    for account in listed["data"].as_array().cloned().unwrap_or_default() {
        println!(
            "{name}: account {} {} available {}",
            account["id"], account["currency"], account["availableBalance"]
        );
    }
}

/// Scenario 3: POST /v1/payouts with a unique externalReference each.
async fn payouts(ctx: &Ctx) {
    let name = "payouts";
    let mut setup = ctx.conn();
    deposit(&mut setup, "GHS", "1000000000.00").await;
    let result = run(ctx, name, ctx.settings.seconds, |task, mut conn, window| async move {
        let mut tally = Tally::default();
        let mut done = 0;
        while window.running(done) {
            done += 1;
            let body = format!(
                r#"{{"from":{{"currency":"GHS","amount":"10.00"}},"to":{{"code":"mtn_gh","accountNumber":"+233241234567"}},"externalReference":"load-{task}-{done}"}}"#
            );
            let started = Instant::now();
            tally.answer("POST /v1/payouts", conn.post("/v1/payouts", body).await, 201, started, &window);
        }
        (tally, conn)
    })
    .await;
    judge(name, "payouts", &result, (5_000.0, "≥5,000 payouts/s"), (25_000, "p99 ≤25 ms"));
    let created_201 = result.tally.count("POST /v1/payouts", 201);
    let counting = Instant::now();
    let listed = setup.list_all("/v1/payouts").await;
    let unique: HashSet<&str> = listed.iter().filter_map(|p| p["id"].as_str()).collect();
    println!(
        "{name}: listed {} payouts ({} distinct ids) in {:.1} s; {} answers were 201",
        listed.len(),
        unique.len(),
        counting.elapsed().as_secs_f64(),
        created_201
    );
    println!(
        "SUMMARY {name} created == 201s: {} ({} created, {} 201s)",
        if unique.len() as u64 == created_201 && listed.len() == unique.len() { "yes" } else { "NO" },
        unique.len(),
        created_201
    );
}

/// Scenario `payout_bytes`: `SIKA_LOAD_PAYOUTS` payouts (default
/// 100,000) over the connections, each with its own reference, then waits
/// until none is pending. Returns the payouts acknowledged (201).
async fn payout_bytes(ctx: &Ctx) -> u64 {
    let name = "payout_bytes";
    let total: u64 = env_parse("SIKA_LOAD_PAYOUTS", 100_000);
    let pad: String = "x".repeat(env_parse("SIKA_LOAD_PAD", 0usize));
    let mut setup = ctx.conn();
    deposit(&mut setup, "GHS", "1000000000.00").await;
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..ctx.settings.connections)
        .map(|_| {
            let (next, mut conn, pad) = (next.clone(), ctx.conn(), pad.clone());
            tokio::spawn(async move {
                let (mut created, mut other) = (0u64, Vec::new());
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return (created, other);
                    }
                    let body = format!(
                        r#"{{"from":{{"currency":"GHS","amount":"10.00"}},"to":{{"code":"mtn_gh","accountNumber":"+233241234567"}},"externalReference":"bytes-{n}{pad}"}}"#
                    );
                    match conn.post("/v1/payouts", body).await {
                        Ok(r) if r.status == 201 => created += 1,
                        Ok(r) => other.push(format!("{}: {}", r.status, String::from_utf8_lossy(&r.body))),
                        Err(e) => other.push(e),
                    }
                }
            })
        })
        .collect();
    let mut created = 0;
    for task in tasks {
        let (count, other) = task.await.expect("a payout task panicked");
        created += count;
        for answer in other.iter().take(3) {
            println!("{name}: not created: {answer}");
        }
    }
    println!(
        "{name}: {created} of {total} payouts acknowledged (201) in {:.1} s, loadavg {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    let waiting = Instant::now();
    loop {
        let page = setup.expect(Method::GET, "/v1/payouts?status=pending&limit=1", None, 200).await;
        if page["data"].as_array().is_some_and(|items| items.is_empty()) {
            break;
        }
        assert!(waiting.elapsed() < Duration::from_secs(600), "payouts still pending after 10 minutes");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("{name}: none pending {:.1} s later", waiting.elapsed().as_secs_f64());
    created
}

/// After `payout_bytes` and a clean stop: the sandbox ledger's files
/// (`sandbox.redb` and its two logs) per payout acknowledged, and `sika
/// footprint`'s table of records per space.
fn ledger_bytes_per_payout(bin: &Path, data_dir: &Path, payouts: u64) {
    let name = "payout_bytes";
    let files = ["sandbox.redb", "sandbox.wal", "sandbox.1.wal"];
    let mut total = 0u64;
    for file in files {
        let bytes = std::fs::metadata(data_dir.join(file)).map(|m| m.len()).unwrap_or(0);
        println!("{name}: {file} {bytes} bytes");
        total += bytes;
    }
    println!(
        "SUMMARY {name}: ledger files {total} bytes ({:.1} MiB) for {payouts} payouts: {:.0} bytes per payout",
        total as f64 / (1024.0 * 1024.0),
        total as f64 / payouts.max(1) as f64
    );
    let output = Process::new(bin)
        .arg("footprint")
        .env("SIKA_DATA_DIR", data_dir)
        .output()
        .expect("run sika footprint");
    for line in String::from_utf8_lossy(&output.stdout).lines().filter(|l| l.starts_with("sandbox:")) {
        println!("{name}: {line}");
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["sandbox:", "redb", "pages:", leaves, "leaf,", branches, "branch;", ..] = words.as_slice() {
            // redb grows a file by doubling it (up to 4 GiB), so the file's
            // size moves in steps; the pages in use do not.
            let pages = leaves.parse::<u64>().unwrap_or(0) + branches.parse::<u64>().unwrap_or(0);
            println!(
                "SUMMARY {name}: redb pages in use {pages} ({:.1} MiB): {:.0} bytes per payout",
                (pages * 4096) as f64 / (1024.0 * 1024.0),
                (pages * 4096) as f64 / payouts.max(1) as f64
            );
        }
        if let ["sandbox:", "total", records, keys, values] = words.as_slice() {
            let per_payout = |text: &str| text.parse::<f64>().unwrap_or(0.0) / payouts.max(1) as f64;
            println!(
                "SUMMARY {name}: {:.1} records per payout, {:.0} key and {:.0} value bytes per payout",
                per_payout(records),
                per_payout(keys),
                per_payout(values)
            );
        }
    }
    if !output.status.success() {
        println!("{name}: sika footprint failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    // `sika compact` gives the file's free pages back: what the ledger
    // needs on disk, where the file above is what redb grew it to.
    let compacted =
        Process::new(bin).arg("compact").env("SIKA_DATA_DIR", data_dir).output().expect("run sika compact");
    if compacted.status.success() {
        let total: u64 = files
            .iter()
            .map(|file| std::fs::metadata(data_dir.join(file)).map(|m| m.len()).unwrap_or(0))
            .sum();
        println!(
            "SUMMARY {name}: ledger files after sika compact {total} bytes ({:.1} MiB): {:.0} bytes per payout",
            total as f64 / (1024.0 * 1024.0),
            total as f64 / payouts.max(1) as f64
        );
    } else {
        println!("{name}: sika compact failed: {}", String::from_utf8_lossy(&compacted.stderr));
    }
}

/// The webhook receiver's view: deliveries counted by arrival.
#[derive(Default)]
struct Received {
    count: AtomicU64,
    /// Nanoseconds after `Receiver::base` of the latest arrival.
    last_nanos: AtomicU64,
    ids: Mutex<HashSet<String>>,
    duplicates: AtomicU64,
}

/// The receiver answers once `gate` reads true (at once without a gate).
async fn start_receiver(
    gate: Option<tokio::sync::watch::Receiver<bool>>,
) -> (SocketAddr, Arc<Received>, Instant) {
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    let base = Instant::now();
    let received = Arc::new(Received::default());
    let app = axum::Router::new()
        .route(
            "/hook",
            axum::routing::post(move |State(r): State<Arc<Received>>, headers: HeaderMap| async move {
                if let Some(mut gate) = gate.clone() {
                    let _ = gate.wait_for(|open| *open).await;
                }
                r.count.fetch_add(1, Ordering::Relaxed);
                r.last_nanos.fetch_max(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
                if let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok())
                    && !r.ids.lock().unwrap().insert(id.to_string())
                {
                    r.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                StatusCode::OK
            }),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
    let addr = listener.local_addr().expect("receiver address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, received, base)
}

/// Scenario 4: webhook dispatcher throughput: deposits in a tight loop, deliveries
/// counted by a receiver in this process until every event arrived.
#[expect(clippy::too_many_lines)]
async fn webhooks(ctx: &Ctx) {
    let name = "webhooks";
    let backlog = std::env::var("SIKA_LOAD_WEBHOOK_BACKLOG").is_ok_and(|v| v == "1");
    let (gate, gate_receiver) = tokio::sync::watch::channel(!backlog);
    let (receiver, received, base) = start_receiver(backlog.then_some(gate_receiver)).await;
    let mut setup = ctx.conn();
    let endpoint = setup
        .expect(
            Method::POST,
            "/v1/webhooks/endpoints",
            Some(json!({ "url": format!("http://{receiver}/hook"), "events": ["*"] })),
            201,
        )
        .await;
    println!("{name}: endpoint {} -> http://{receiver}/hook", endpoint["webhookEndpoint"]["id"]);
    let generation = Duration::from_secs_f64((ctx.settings.seconds.as_secs_f64() / 2.0).max(1.0));
    let deposit_body = Bytes::from(json!({ "currency": "USD", "amount": "1.00" }).to_string());
    let generation_start = Instant::now();
    let result = run(ctx, name, generation, |_, mut conn, window| {
        let body = deposit_body.clone();
        async move {
            let mut tally = Tally::default();
            let mut done = 0;
            while window.running(done) {
                done += 1;
                let started = Instant::now();
                tally.answer(
                    "POST /v1/simulations/deposits",
                    conn.post("/v1/simulations/deposits", body.clone()).await,
                    201,
                    started,
                    &window,
                );
            }
            (tally, conn)
        }
    })
    .await;
    let generated_in = generation_start.elapsed();
    let received_by_end = received.count.load(Ordering::Relaxed);
    summarize(&format!("{name}-deposits"), "deposits", &result);
    let deposits = result.tally.count("POST /v1/simulations/deposits", 201);
    let events = setup.list_all("/v1/webhooks/events").await.len() as u64;
    println!(
        "{name}: {deposits} deposits made {events} events in {:.2} s; {received_by_end} deliveries had arrived by then",
        generated_in.as_secs_f64()
    );
    if backlog {
        println!("{name}: backlog mode: the receiver held every request until now; releasing it");
    }
    let released = base.elapsed();
    let held = received.count.load(Ordering::Relaxed);
    let _ = gate.send(true);
    // Wait for every event to arrive; give up after 30 s without progress.
    let drain_writer_start = WriterSample::take(ctx).await;
    let drain_from = received.count.load(Ordering::Relaxed);
    let drain_cpu_start = CpuSample::take(ctx.pid);
    let drain_perf = ctx.settings.perf_dir.as_ref().map(|path| Perf::start(ctx.pid, path, "webhooks-drain"));
    let mut last_seen = received.count.load(Ordering::Relaxed);
    let mut last_progress = Instant::now();
    while received.count.load(Ordering::Relaxed) < events {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = received.count.load(Ordering::Relaxed);
        if now != last_seen {
            last_seen = now;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > Duration::from_secs(30) {
            println!("{name}: no delivery for 30 s; stopping at {now} of {events}");
            break;
        }
    }
    let drain_cpu = CpuSample::take(ctx.pid).since(&drain_cpu_start);
    drop(drain_perf);
    let drain_writer = WriterDelta::between(&drain_writer_start, &WriterSample::take(ctx).await);
    let total = received.count.load(Ordering::Relaxed);
    let last_arrival = base + Duration::from_nanos(received.last_nanos.load(Ordering::Relaxed));
    let span = last_arrival.saturating_duration_since(generation_start);
    let rate = total as f64 / span.as_secs_f64();
    println!(
        "{name}: {total} deliveries ({} duplicate ids) of {events} events; last arrived {:.2} s after generation started ({:.2} s after it ended)",
        received.duplicates.load(Ordering::Relaxed),
        span.as_secs_f64(),
        last_arrival.saturating_duration_since(generation_start + generated_in).as_secs_f64()
    );
    println!(
        "SUMMARY {name} deliveries/s while generating: {:.0}",
        received_by_end as f64 / generated_in.as_secs_f64()
    );
    println!(
        "SUMMARY {name} deliveries/s: {rate:.0} ({total} in {:.2} s from generation start)",
        span.as_secs_f64()
    );
    println!("{name}: drain phase (after generation):");
    drain_cpu.print(&format!("{name}-drain"));
    drain_writer.print(&format!("{name}-drain"), &drain_cpu);
    let drained = total.saturating_sub(drain_from);
    if drained > 0 {
        println!(
            "SUMMARY {name}-drain node CPU per delivery: {:.0} µs ({drained} deliveries)",
            drain_cpu.node.as_secs_f64() * 1e6 / drained as f64
        );
    }
    if backlog {
        let drain_span =
            Duration::from_nanos(received.last_nanos.load(Ordering::Relaxed)).saturating_sub(released);
        let released_count = total.saturating_sub(held);
        let drain_rate = released_count as f64 / drain_span.as_secs_f64();
        println!(
            "SUMMARY {name} backlog drain deliveries/s: {drain_rate:.0} ({released_count} in {:.2} s after release)",
            drain_span.as_secs_f64()
        );
        verdict(
            name,
            "backlog drain",
            drain_rate >= 2_000.0 && total >= events,
            "≥2,000 deliveries/s, all delivered",
        );
    } else {
        verdict(name, "throughput", rate >= 2_000.0 && total >= events, "≥2,000 deliveries/s, all delivered");
    }
    // The attempts are recorded durably in batches after the answers:
    // wait until the succeeded list holds every delivery.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let succeeded = setup.list_all("/v1/webhooks/deliveries?status=succeeded").await;
        let with_attempt = succeeded
            .iter()
            .filter(|d| {
                d["attempts"].as_array().is_some_and(|a| a.iter().any(|a| a["succeeded"] == json!(true)))
            })
            .count();
        if succeeded.len() as u64 >= events || Instant::now() >= deadline {
            println!(
                "SUMMARY {name} recorded succeeded deliveries: {} of {events} ({with_attempt} with a succeeded attempt): {}",
                succeeded.len(),
                if succeeded.len() as u64 == events && with_attempt == succeeded.len() {
                    "ok"
                } else {
                    "MISMATCH"
                }
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

// ---------------------------------------------------------------------------
// CPU accounting from /proc

/// With `SIKA_LOAD_STORE=postgres`, the cluster's postmaster: its CPU and
/// its backends' is counted beside the node's.
static POSTMASTER: std::sync::OnceLock<i32> = std::sync::OnceLock::new();

/// CPU of the PostgreSQL cluster so far: the postmaster and every process it
/// started (backends, the WAL writer, the checkpointer). `None` on the
/// embedded store.
fn store_cpu() -> Option<Duration> {
    let postmaster = *POSTMASTER.get()?;
    let mut total = process_cpu(&format!("/proc/{postmaster}/stat"));
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = entry.path().join("stat");
        let text = std::fs::read_to_string(&stat).unwrap_or_default();
        // The parent's pid is the second field after the command.
        let parent =
            text.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if parent == Some(postmaster) {
            total += process_cpu(&stat.display().to_string());
        }
    }
    Some(total)
}

struct CpuSample {
    at: Instant,
    node: Duration,
    node_threads: HashMap<String, Duration>,
    own: Duration,
    machine_busy: u64,
    machine_steal: u64,
    machine_total: u64,
    node_written: u64,
    store: Option<Duration>,
}

struct CpuReport {
    wall: Duration,
    node: Duration,
    node_threads: Vec<(String, Duration)>,
    own: Duration,
    machine_busy_share: f64,
    /// Time the hypervisor ran something else while this machine wanted a CPU.
    machine_steal_share: f64,
    /// Bytes the node caused to be written to storage (/proc/<pid>/io).
    node_written: u64,
    /// The PostgreSQL cluster's CPU, when the stacks are on it.
    store: Option<Duration>,
}

impl CpuSample {
    fn take(pid: i32) -> CpuSample {
        let (machine_busy, machine_steal, machine_total) = machine_jiffies();
        let mut node_threads: HashMap<String, Duration> = HashMap::new();
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for task in tasks.flatten() {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                // Group numbered threads (tokio-runtime-w, …) by name.
                let name = comm.trim_end().trim_end_matches(|c: char| c.is_ascii_digit()).to_string();
                if let Some(cpu) = schedstat(&task.path().join("schedstat")) {
                    *node_threads.entry(name).or_default() += cpu;
                }
            }
        }
        CpuSample {
            at: Instant::now(),
            node: process_cpu(&format!("/proc/{pid}/stat")),
            node_threads,
            own: process_cpu("/proc/self/stat"),
            machine_busy,
            machine_steal,
            machine_total,
            node_written: written_bytes(pid),
            store: store_cpu(),
        }
    }

    fn since(&self, start: &CpuSample) -> CpuReport {
        let mut node_threads: Vec<(String, Duration)> = self
            .node_threads
            .iter()
            .map(|(name, cpu)| {
                (name.clone(), cpu.saturating_sub(start.node_threads.get(name).copied().unwrap_or_default()))
            })
            .filter(|(_, cpu)| !cpu.is_zero())
            .collect();
        node_threads.sort_by_key(|(_, cpu)| std::cmp::Reverse(*cpu));
        let total = self.machine_total.saturating_sub(start.machine_total).max(1);
        CpuReport {
            wall: self.at - start.at,
            node: self.node.saturating_sub(start.node),
            node_threads,
            own: self.own.saturating_sub(start.own),
            machine_busy_share: self.machine_busy.saturating_sub(start.machine_busy) as f64 / total as f64,
            machine_steal_share: self.machine_steal.saturating_sub(start.machine_steal) as f64 / total as f64,
            node_written: self.node_written.saturating_sub(start.node_written),
            store: self.store.zip(start.store).map(|(now, then)| now.saturating_sub(then)),
        }
    }
}

impl CpuReport {
    fn thread(&self, name: &str) -> Duration {
        self.node_threads.iter().filter(|(t, _)| t == name).map(|(_, cpu)| *cpu).sum()
    }

    fn print(&self, name: &str) {
        let wall = self.wall.as_secs_f64().max(1e-9);
        let cores = nproc() as f64;
        println!(
            "SUMMARY {name} cpu: node {:.2} cores ({:.0}% of {} cores), load generator {:.2} cores, machine busy {:.0}% (of which stolen by the hypervisor {:.0}%)",
            self.node.as_secs_f64() / wall,
            100.0 * self.node.as_secs_f64() / wall / cores,
            nproc(),
            self.own.as_secs_f64() / wall,
            100.0 * self.machine_busy_share,
            100.0 * self.machine_steal_share
        );
        let threads: Vec<String> = self
            .node_threads
            .iter()
            .map(|(thread, cpu)| format!("{thread} {:.2}", cpu.as_secs_f64() / wall))
            .collect();
        println!("{name}: node cores by thread: {}", threads.join(", "));
        if let Some(store) = self.store {
            println!("SUMMARY {name} cpu: PostgreSQL {:.2} cores", store.as_secs_f64() / wall);
        }
        println!(
            "{name}: node wrote {:.1} MiB/s to storage",
            self.node_written as f64 / wall / (1024.0 * 1024.0)
        );
    }
}

fn process_cpu(stat_path: &str) -> Duration {
    let text = std::fs::read_to_string(stat_path).unwrap_or_default();
    // Fields after the parenthesised command: utime is 14th, stime 15th overall.
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// `write_bytes` of /proc/<pid>/io: what the process sent to storage.
fn written_bytes(pid: i32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn schedstat(path: &Path) -> Option<Duration> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
}

/// (busy, stolen, total) jiffies of the whole machine from /proc/stat;
/// busy includes stolen.
fn machine_jiffies() -> (u64, u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = text.lines().next() else { return (0, 0, 0) };
    let values: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    let steal = values.get(7).copied().unwrap_or(0);
    (total - idle, steal, total)
}

fn nproc() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------
// Optional profiling of the node

/// `perf record` attached to the node for the measured window.
struct Perf {
    child: Option<Child>,
}

impl Perf {
    fn start(pid: i32, dir: &Path, label: &str) -> Perf {
        std::fs::create_dir_all(dir).expect("create the perf directory");
        let output = dir.join(format!("{label}.perf.data"));
        let args = std::env::var("SIKA_LOAD_PERF_ARGS")
            .unwrap_or_else(|_| "--call-graph dwarf,32768 -F 250".to_string());
        let child = Process::new("perf")
            .arg("record")
            .args(args.split_whitespace())
            .arg("-p")
            .arg(pid.to_string())
            .arg("-o")
            .arg(&output)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match child {
            Ok(child) => {
                println!("{label}: perf recording the node into {}", output.display());
                Perf { child: Some(child) }
            }
            Err(e) => {
                println!("{label}: cannot start perf: {e}");
                Perf { child: None }
            }
        }
    }
}

impl Drop for Perf {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on our own, unreaped child.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGINT);
            }
            let _ = child.wait();
        }
    }
}
