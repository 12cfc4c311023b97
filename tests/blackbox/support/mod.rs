//! Black-box harness: starts the real `sika` binary on free loopback ports in
//! a fresh data directory and talks to it over HTTP. Every response a test
//! receives goes through `Api::check`, which validates it against the
//! OpenAPI document and the envelope rules (request id, version header,
//! error object), so a drifting response fails whichever test saw it.

pub mod browser;
pub mod console;
pub mod dashboard;
pub mod disk;
pub mod flutterwave;
#[path = "../../../engine/tests/support/pg_cluster.rs"]
pub mod pg_cluster;
pub mod smtp;
pub mod team;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};

pub const VERSION: &str = "2026-02-20";

/// What `sika init --json` prints.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub organization_id: String,
    pub sandbox_key: String,
    pub live_key: String,
    pub owner_session: String,
    pub admin_token: String,
}

/// Whether this run puts every node's stacks on PostgreSQL
/// (`SIKA_TEST_STORE=postgres`): the same black-box suite on the other
/// backend. A test of the embedded store's own files skips then.
pub fn on_postgres() -> bool {
    std::env::var("SIKA_TEST_STORE").is_ok_and(|v| v == "postgres")
}

/// `Some` unless this run is on PostgreSQL: a test of the embedded store's
/// own files (its fixtures, its backups) skips there, where the database's
/// tools do that work.
pub fn embedded_store() -> Option<()> {
    (!on_postgres()).then_some(())
}

/// With `SIKA_TEST_STORE=postgres`, a new database for one node on the
/// test process's own throwaway cluster (started on first use, stopped
/// when the process exits).
fn suite_store() -> Option<String> {
    static CLUSTER: OnceLock<pg_cluster::Cluster> = OnceLock::new();
    static NODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    extern "C" fn stop_cluster() {
        if let Some(cluster) = CLUSTER.get() {
            cluster.stop();
        }
    }
    if !on_postgres() {
        return None;
    }
    let cluster = CLUSTER.get_or_init(|| {
        let cluster =
            pg_cluster::Cluster::start().expect("SIKA_TEST_STORE=postgres needs PostgreSQL installed");
        // SAFETY: registering a plain extern "C" function.
        unsafe {
            libc::atexit(stop_cluster);
        }
        cluster
    });
    let n = NODES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Some(cluster.database(&format!("node_{n}")))
}

/// A test that cannot run on this machine (a tool or a privilege is
/// missing) calls this and returns: under `CI`, where `.ci/run` provides
/// everything, it fails the test naming what is missing; elsewhere it
/// prints that the test was skipped and why, so a skip is never mistaken
/// for a pass in CI.
pub fn cannot_run(test: &str, why: &str) {
    assert!(std::env::var_os("CI").is_none(), "{test} cannot run, and CI is set: {why}");
    eprintln!("SKIPPED {test}: {why}; set CI=1 to make this fail");
}

/// Per-node settings; `None` leaves the node's default.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub rate_limit: Option<u32>,
    /// `SIKA_TIME_SCALE`; `None` is the suite's 0.001 (a minute in 60 ms).
    pub time_scale: Option<f64>,
    pub quote_ttl: Option<String>,
    pub trusted_proxies: Option<String>,
    /// The configuration file; `None` is the repository's
    /// `sika.example.toml` (live rates, receiving routes), `Some("")` none.
    pub config: Option<String>,
    /// The soft limit on open files `serve` starts with (a default install's
    /// 1,024, say); `None` inherits this process's.
    pub descriptors_soft: Option<u64>,
    /// `SIKA_STORE` for `init` and `serve`: the stacks on PostgreSQL.
    pub store: Option<String>,
}

/// Starts `command` with a soft open-file limit of `soft` (the hard limit
/// unchanged), as a service manager's default would.
fn limit_descriptors(command: &mut Command, soft: Option<u64>) {
    use std::os::unix::process::CommandExt;
    let Some(soft) = soft else { return };
    // SAFETY: between fork and exec only getrlimit and setrlimit run, both
    // async-signal-safe, on a struct on this stack.
    unsafe {
        command.pre_exec(move || {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur = soft.min(limit.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            Ok(())
        });
    }
}

/// Raises this process's soft open-file limit to its hard limit (tests that
/// hold thousands of connections); returns the limit in force.
pub fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain syscalls on a struct on this stack.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
    limit.rlim_cur
}

/// The example configuration every node runs with unless a test says
/// otherwise: the live stack gets the sandbox's rates and example routes.
pub const EXAMPLE_CONFIG: &str = include_str!("../../../sika.example.toml");

impl Options {
    /// A rate limit high enough that no functional test ever meets it.
    pub fn unthrottled() -> Options {
        Options { rate_limit: Some(1_000_000), ..Options::default() }
    }
}

/// What most tests start from: an unthrottled node, a client, and the
/// sandbox's key and base URL.
pub struct Sandbox {
    pub node: Node,
    pub api: Api,
    pub key: String,
    pub base: String,
}

impl Sandbox {
    pub fn start() -> Sandbox {
        let node = Node::start(Options::unthrottled());
        let (key, base) = (node.creds.sandbox_key.clone(), node.sandbox.clone());
        Sandbox { node, api: Api::new(), key, base }
    }
}

/// A running node. Dropping it stops the process; nodes kept in statics are
/// stopped when the test binary exits (see `register`).
pub struct Node {
    child: Mutex<Option<Child>>,
    pid: u32,
    dir: PathBuf,
    _temp: std::sync::Arc<tempfile::TempDir>,
    /// `SIKA_STORE`: the database its stacks live in (`None`: its data
    /// directory), kept across restarts.
    store: Option<String>,
    pub creds: Credentials,
    pub live: String,
    pub sandbox: String,
    pub admin: String,
}

/// A node process this test process started: stopped at exit if a test did
/// not stop it, and described when a request to it fails.
#[derive(Clone)]
struct Running {
    pid: u32,
    dir: PathBuf,
    /// Its listeners' `host:port`s.
    addrs: Vec<String>,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());

extern "C" fn stop_all_nodes() {
    if let Ok(running) = RUNNING.lock() {
        for node in running.iter() {
            // SAFETY: plain syscall on a pid this process spawned.
            unsafe {
                libc::kill(node.pid as libc::pid_t, libc::SIGKILL);
            }
            let _ = std::fs::remove_dir_all(&node.dir);
        }
    }
}

fn register(pid: u32, dir: PathBuf, addrs: Vec<String>) {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registering a plain extern "C" function.
        unsafe {
            libc::atexit(stop_all_nodes);
        }
    });
    RUNNING.lock().unwrap().push(Running { pid, dir, addrs });
}

fn unregister(pid: u32) {
    if let Ok(mut running) = RUNNING.lock() {
        running.retain(|node| node.pid != pid);
    }
}

/// Whether the node listening at `url` is alive, and its log's tail, for a
/// transport error's message. Every node of the process is described when
/// none listens there (the test process runs many at once).
pub fn diagnostics(url: &str) -> String {
    let running = RUNNING.lock().map(|r| r.clone()).unwrap_or_default();
    let target = reqwest::Url::parse(url).ok().and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port()?)));
    let behind: Vec<&Running> =
        running.iter().filter(|node| target.as_ref().is_some_and(|t| node.addrs.contains(t))).collect();
    let shown = if behind.is_empty() { running.iter().collect() } else { behind };
    shown
        .iter()
        .map(|node| {
            // SAFETY: signal 0 only checks that the process exists.
            let alive = unsafe { libc::kill(node.pid as libc::pid_t, 0) } == 0;
            let log = std::fs::read_to_string(node.dir.join("serve.log")).unwrap_or_default();
            let tail: String = log.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
            format!("node {} alive={alive}; log tail:\n{tail}", node.pid)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a node's ports come from: below Linux's ephemeral range (32768
/// and up), which the kernel hands to every outgoing connection and every
/// `bind(0)`. A node restarted on its ports (`Node::restart`) must find
/// them free; taken from the ephemeral range, one could meanwhile be the
/// local end of another test's connection (to its PostgreSQL, say), and
/// the restart failed with "Address already in use".
const NODE_PORTS: std::ops::Range<u32> = 20_000..32_000;

/// `n` ports free now, each handed out once in this test process (the
/// suite's nodes run as threads of one process), starting at an offset of
/// the process id so two suites running at once rarely meet.
fn free_ports(n: usize) -> Vec<u16> {
    static HANDED_OUT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let span = NODE_PORTS.end - NODE_PORTS.start;
    let offset = std::process::id().wrapping_mul(7919) % span;
    let mut ports = Vec::with_capacity(n);
    for _ in 0..span {
        if ports.len() == n {
            break;
        }
        let turn = HANDED_OUT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = NODE_PORTS.start + (offset + turn) % span;
        let port = u16::try_from(port).expect("node ports fit in u16");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
        }
    }
    assert_eq!(ports.len(), n, "no {n} free ports in {NODE_PORTS:?}");
    ports
}

fn field(creds: &Value, name: &str) -> String {
    creds[name].as_str().unwrap_or_else(|| panic!("init --json lacks {name}: {creds}")).to_string()
}

impl Node {
    /// Starts a node (blocking); retries on fresh ports if one was taken.
    pub fn start(options: Options) -> Node {
        match Node::try_start(&options) {
            Ok(node) => node,
            Err(e) => panic!("the node did not start: {e}"),
        }
    }

    #[expect(clippy::too_many_lines)]
    fn try_start(options: &Options) -> Result<Node, String> {
        let temp = tempfile::Builder::new().prefix("sika-test-").tempdir().map_err(|e| e.to_string())?;
        let dir = temp.path().join("data");
        let ports = free_ports(3);
        let addr = |p: u16| format!("127.0.0.1:{p}");
        let mut env: Vec<(&str, String)> = vec![
            ("SIKA_DATA_DIR", dir.display().to_string()),
            ("SIKA_LIVE_ADDR", addr(ports[0])),
            ("SIKA_SANDBOX_ADDR", addr(ports[1])),
            ("SIKA_ADMIN_ADDR", addr(ports[2])),
            ("SIKA_TIME_SCALE", options.time_scale.unwrap_or(0.001).to_string()),
            // The default reserve (1 GiB) would make every sandbox write of
            // the suite depend on the test machine's free disk; the tests of
            // the reserve itself set their own.
            ("SIKA_DISK_RESERVE", "64MiB".into()),
        ];
        if let Some(r) = options.rate_limit {
            env.push(("SIKA_RATE_LIMIT", r.to_string()));
        }
        if let Some(t) = &options.quote_ttl {
            env.push(("SIKA_QUOTE_TTL", t.clone()));
        }
        if let Some(p) = &options.trusted_proxies {
            env.push(("SIKA_TRUSTED_PROXIES", p.clone()));
        }
        let store = options.store.clone().or_else(suite_store);
        if let Some(store) = &store {
            env.push(("SIKA_STORE", store.clone()));
        }
        let config = options.config.as_deref().unwrap_or(EXAMPLE_CONFIG);
        if !config.is_empty() {
            let path = temp.path().join("sika.toml");
            std::fs::write(&path, config).map_err(|e| e.to_string())?;
            env.push(("SIKA_CONFIG", path.display().to_string()));
        }
        let command = |args: &[&str]| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_sika"));
            c.args(args);
            for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SIKA_")) {
                c.env_remove(k);
            }
            for (k, v) in &env {
                c.env(k, v);
            }
            c
        };
        let out = command(&["init", "--json"]).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("init failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let creds: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!("init --json printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))
        })?;
        let creds = Credentials {
            organization_id: field(&creds, "organizationId"),
            sandbox_key: field(&creds, "sandboxKey"),
            live_key: field(&creds, "liveKey"),
            owner_session: field(&creds, "ownerSessionToken"),
            admin_token: field(&creds, "adminToken"),
        };
        // Initialised once; `serve` is tried again on fresh ports when one
        // was taken meanwhile (a retried `init` would find its own identity
        // in a shared database and refuse).
        let temp = std::sync::Arc::new(temp);
        let mut failures = Vec::new();
        for attempt in 0..3 {
            let ports = if attempt == 0 { ports.clone() } else { free_ports(3) };
            for (name, port) in ["SIKA_LIVE_ADDR", "SIKA_SANDBOX_ADDR", "SIKA_ADMIN_ADDR"].iter().zip(&ports)
            {
                if let Some(slot) = env.iter_mut().find(|(k, _)| k == name) {
                    slot.1 = addr(*port);
                }
            }
            match Node::serve_on(options, &env, &ports, &temp, &store, &creds) {
                Ok(node) => return Ok(node),
                Err(e) => failures.push(format!("attempt {}: {e}", attempt + 1)),
            }
        }
        Err(failures.join("\n"))
    }

    /// Starts `serve` with `env` on `ports` and waits until every listener answers.
    fn serve_on(
        options: &Options,
        env: &[(&str, String)],
        ports: &[u16],
        temp: &std::sync::Arc<tempfile::TempDir>,
        store: &Option<String>,
        creds: &Credentials,
    ) -> Result<Node, String> {
        let addr = |p: u16| format!("127.0.0.1:{p}");
        let mut serve = Command::new(env!("CARGO_BIN_EXE_sika"));
        serve.arg("serve");
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SIKA_")) {
            serve.env_remove(k);
        }
        for (k, v) in env {
            serve.env(k, v);
        }
        let log = std::fs::File::create(temp.path().join("serve.log")).map_err(|e| e.to_string())?;
        limit_descriptors(&mut serve, options.descriptors_soft);
        let mut child = serve
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| e.to_string())?;
        let pid = child.id();
        register(pid, temp.path().to_path_buf(), ports.iter().map(|p| addr(*p)).collect());
        let node = Node {
            child: Mutex::new(None),
            pid,
            dir: temp.path().to_path_buf(),
            _temp: temp.clone(),
            store: store.clone(),
            creds: creds.clone(),
            live: format!("http://{}", addr(ports[0])),
            sandbox: format!("http://{}", addr(ports[1])),
            admin: format!("http://{}", addr(ports[2])),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(node.dir.join("serve.log")).unwrap_or_default();
                *node.child.lock().unwrap() = Some(child);
                return Err(format!("serve exited with {status}: {log}"));
            }
            let up = ports.iter().all(|p| {
                let a: SocketAddr = addr(*p).parse().unwrap();
                TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok()
            });
            if up {
                break;
            }
            if Instant::now() > deadline {
                *node.child.lock().unwrap() = Some(child);
                return Err("the node did not answer within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        *node.child.lock().unwrap() = Some(child);
        Ok(node)
    }

    pub fn sandbox_url(&self, path: &str) -> String {
        format!("{}{path}", self.sandbox)
    }

    pub fn live_url(&self, path: &str) -> String {
        format!("{}{path}", self.live)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("{}{path}", self.admin)
    }

    /// The `serve` process's id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The `serve` process's resident memory now and at its peak
    /// (`VmRSS`, `VmHWM` of /proc/<pid>/status), in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).expect("the node's status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc/{}/status", self.pid))
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.halt(libc::SIGTERM);
        unregister(self.pid);
    }
}

/// A node shared by the tests of one module, which keep out of each other's
/// way. Each module that wants one declares its own
/// (`static SHARED: SharedNode = SharedNode::new();`): tests of different
/// modules assert on state of the whole organization (a currency's balance,
/// the representative) that another module's tests would change.
///
/// Tests run in name order, so one module's tests run together. The newest
/// shared node is kept running between its module's tests; starting the
/// next module's node lets the previous one stop as soon as no test holds
/// it, so finished modules leave no idle node behind in the one test
/// process (an idle node takes ~3 % of a core). A test that asks after its
/// module's node stopped gets a fresh one.
pub struct SharedNode(Mutex<Weak<Node>>);

/// The shared node started last, kept alive between its module's tests.
static NEWEST_SHARED: Mutex<Option<Arc<Node>>> = Mutex::new(None);

impl SharedNode {
    pub const fn new() -> SharedNode {
        SharedNode(Mutex::new(Weak::new()))
    }

    /// The module's running node, or a new unthrottled one.
    pub fn get(&self) -> Arc<Node> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = slot.upgrade() {
            return node;
        }
        let node = Arc::new(Node::start(Options::unthrottled()));
        *slot = Arc::downgrade(&node);
        let previous = NEWEST_SHARED.lock().unwrap_or_else(|e| e.into_inner()).replace(node.clone());
        // Stops the previous module's node, unless a test still holds it.
        drop(previous);
        node
    }
}

pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(sika_server::openapi::document)
}

/// A response, after every envelope check passed.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn request_id(&self) -> String {
        self.header("x-request-id").unwrap_or_default().to_string()
    }

    /// The error code of an error body.
    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }

    /// `details.field` of an error body.
    pub fn field(&self) -> Option<&str> {
        self.body["details"]["field"].as_str()
    }

    /// Asserts the status (and for errors the code), with the body in the message.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        self
    }

    #[track_caller]
    /// The resource a `201` answer created (under `key`) and its id, which
    /// must start with `prefix`.
    pub fn created(&self, key: &str, prefix: &str) -> (Value, String) {
        self.expect(201);
        let resource = self.body[key].clone();
        let id = resource["id"].as_str().unwrap().to_string();
        assert!(id.starts_with(prefix), "{resource}");
        (resource, id)
    }

    pub fn expect_error(&self, status: u16, code: &str) -> &Self {
        assert_eq!((self.status, self.error()), (status, code), "unexpected error; body: {}", self.text);
        self
    }

    #[track_caller]
    pub fn expect_field(&self, status: u16, code: &str, field: &str) -> &Self {
        self.expect_error(status, code);
        assert_eq!(self.field(), Some(field), "details.field; body: {}", self.text);
        self
    }

    /// An error whose message says why, in words that include `saying`.
    #[track_caller]
    pub fn expect_refusal(&self, status: u16, code: &str, saying: &str) -> &Self {
        self.expect_error(status, code);
        assert!(self.body["message"].as_str().unwrap().contains(saying), "{}", self.text);
        self
    }

    /// A `400 validation_error` naming `field`: the answer to a request
    /// whose body the extractor refused, the most common error a test expects.
    #[track_caller]
    pub fn expect_invalid(&self, field: &str) -> &Self {
        self.expect_field(400, "validation_error", field)
    }
}

/// An HTTP client bound to the current test's runtime.
#[derive(Clone)]
pub struct Api {
    pub client: reqwest::Client,
}

impl Default for Api {
    fn default() -> Self {
        Api::new()
    }
}

impl Api {
    pub fn new() -> Api {
        let client =
            reqwest::Client::builder().timeout(Duration::from_secs(30)).no_proxy().build().expect("client");
        Api { client }
    }

    /// A client whose requests come from `address`, a loopback address
    /// other than 127.0.0.1 (Linux answers on all of 127.0.0.0/8): another
    /// caller address, for the limits kept per address.
    pub fn from_address(address: [u8; 4]) -> Api {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .local_address(std::net::IpAddr::from(address))
            .no_proxy()
            .build()
            .expect("client");
        Api { client }
    }

    /// `method url` with an optional bearer credential and JSON body.
    pub async fn call(&self, method: &str, url: &str, key: Option<&str>, body: Option<Value>) -> Resp {
        self.send(method, url, |mut rb| {
            if let Some(key) = key {
                rb = rb.bearer_auth(key);
            }
            if let Some(body) = body {
                rb = rb.json(&body);
            }
            rb
        })
        .await
    }

    pub async fn get(&self, url: &str, key: &str) -> Resp {
        self.call("GET", url, Some(key), None).await
    }

    pub async fn post(&self, url: &str, key: &str, body: Value) -> Resp {
        self.call("POST", url, Some(key), Some(body)).await
    }

    pub async fn patch(&self, url: &str, key: &str, body: Value) -> Resp {
        self.call("PATCH", url, Some(key), Some(body)).await
    }

    /// A `POST` with no credentials: what a payer's browser or a hosted page sends.
    pub async fn post_anonymous(&self, url: &str, body: Value) -> Resp {
        self.call("POST", url, None, Some(body)).await
    }

    /// A request shaped by `build` (raw bodies, odd headers), checked like any other.
    pub async fn send(
        &self,
        method: &str,
        url: &str,
        build: impl FnOnce(RequestBuilder) -> RequestBuilder,
    ) -> Resp {
        let m = Method::from_bytes(method.as_bytes()).expect("method");
        let response = build(self.client.request(m, url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: transport error {e:?}\n{}", diagnostics(url)));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_else(|e| panic!("{method} {url}: body {e}"));
        let text = String::from_utf8_lossy(&bytes).to_string();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let resp = Resp { status, headers, body, text };
        check(method, url, &resp);
        resp
    }
}

/// The envelope rules and the OpenAPI document, for every response.
#[track_caller]
pub fn check(method: &str, url: &str, resp: &Resp) {
    let what = format!("{method} {url} -> {}: {}", resp.status, resp.text);
    let request_id = resp.header("x-request-id").unwrap_or("");
    assert!(request_id.starts_with("req_"), "x-request-id missing or malformed: {what}");
    assert_eq!(resp.header("sika-version"), Some(VERSION), "sika-version header: {what}");
    let refusal = ["unavailable", "storage_unavailable", "rates_unavailable", "method_unavailable"]
        .contains(&resp.error());
    assert!(resp.status < 500 || (resp.status == 503 && refusal), "server error: {what}");
    if resp.status >= 400 {
        assert!(resp.body["error"].is_string(), "error must be a string: {what}");
        assert!(resp.body["message"].is_string(), "message must be a string: {what}");
        assert_eq!(resp.body["requestId"].as_str(), Some(request_id), "requestId != x-request-id: {what}");
        if let Some(details) = resp.body.get("details") {
            assert!(details.is_object(), "details must be an object: {what}");
        }
    } else {
        assert!(!resp.body.is_null(), "success without a JSON body: {what}");
    }
    let path = reqwest::Url::parse(url).expect("url").path().to_string();
    if !path.starts_with("/v1/") || path == "/v1/openapi.json" {
        return;
    }
    let doc = document();
    let schema = match sika_server::openapi::response_schema(doc, method, &path, resp.status) {
        Some(s) if !s.is_null() => s,
        found => {
            let known_path = found.is_some();
            let generic = matches!(resp.status, 405 | 413 | 415) || (!known_path && resp.status == 404);
            assert!(generic, "status {} is not documented for {method} {path}: {what}", resp.status);
            json!({ "$ref": "#/components/schemas/Error" })
        }
    };
    if let Err(e) = sika_server::openapi::validate(doc, &schema, &resp.body, "body") {
        panic!("response does not match the OpenAPI document ({e}): {what}");
    }
}

/// The request ids of `n` authenticated reads by `key`.
pub async fn logged_reads(api: &Api, node: &Node, key: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let r = api.get(&node.sandbox_url("/v1/accounts"), key).await;
        r.expect(200);
        ids.push(r.request_id());
    }
    ids
}

/// Whether the operator finds request `id` in the log.
pub async fn in_log(api: &Api, node: &Node, id: &str) -> bool {
    let r = api.get(&node.admin_url(&format!("/admin/v1/requests/{id}")), &node.creds.admin_token).await;
    assert!(r.status == 200 || r.status == 404, "{}", r.text);
    r.status == 200
}

/// Organization B: a new organization whose owner makes a sandbox key;
/// returns (session, key).
pub async fn organization_b(api: &Api, node: &Node) -> (String, String) {
    let body = json!({ "name": "Organization B", "owner": { "email": "b@example.com", "name": "B" } });
    let created = api.post(&node.admin_url("/admin/v1/organizations"), &node.creds.admin_token, body).await;
    created.expect(201);
    let accept =
        json!({ "invitation": created.body["invitation"]["token"], "password": "organization b password" });
    let session = api.call("POST", &node.sandbox_url("/v1/sessions"), None, Some(accept)).await;
    session.expect(201);
    let session = session.body["session"]["token"].as_str().unwrap().to_string();
    let (_, key) = create_key(api, &node.sandbox, &session, json!({ "name": "b", "scopes": ["*"] })).await;
    (session, key)
}

/// Creates an API key with the owner's session; returns (id, secret).
pub async fn create_key(api: &Api, base: &str, session: &str, body: Value) -> (String, String) {
    let r = api.post(&format!("{base}/v1/keys"), session, body).await;
    r.expect(201);
    let key = &r.body["apiKey"];
    (key["id"].as_str().unwrap().to_string(), key["secret"].as_str().unwrap().to_string())
}

/// A sandbox key the owner makes with only `scopes`; returns its secret.
pub async fn scoped_key(api: &Api, node: &Node, name: &str, scopes: &[&str]) -> String {
    let body = json!({ "name": name, "scopes": scopes });
    create_key(api, &node.sandbox, &node.creds.owner_session, body).await.1
}

/// A node of the test's own, not rate-limited, with a client and its
/// sandbox key.
pub fn unthrottled_node() -> (Node, Api, String) {
    let node = Node::start(Options::unthrottled());
    let key = node.creds.sandbox_key.clone();
    (node, Api::new(), key)
}

/// The MTN Ghana wallet most of the tests' payouts go to.
pub const MTN_PHONE: &str = "+233241234567";

/// A `POST /v1/payouts` body: `amount` GHS to the MTN Ghana wallet `phone`.
pub fn mtn_payout_to(phone: &str, amount: &str, reference: &str) -> Value {
    json!({
        "from": { "currency": "GHS", "amount": amount },
        "to": { "code": "mtn_gh", "accountNumber": phone },
        "externalReference": reference,
    })
}

/// A `POST /v1/payouts` body: `amount` GHS to [`MTN_PHONE`].
pub fn mtn_payout(amount: &str, reference: &str) -> Value {
    mtn_payout_to(MTN_PHONE, amount, reference)
}

/// A `POST /v1/collections` body: `amount` GHS from the MTN Ghana wallet
/// [`MTN_PHONE`].
pub fn mtn_collection(amount: &str, reference: &str) -> Value {
    json!({
        "amount": amount,
        "currency": "GHS",
        "code": "mtn_gh",
        "accountNumber": MTN_PHONE,
        "externalReference": reference,
    })
}

/// Creates a sandbox collection from `body` and waits until its status is
/// `outcome`; returns the collection as created and as it settled.
pub async fn collect_until(api: &Api, node: &Node, body: Value, outcome: &str) -> (Value, Value) {
    let key = &node.creds.sandbox_key;
    let r = api.post(&node.sandbox_url("/v1/collections"), key, body).await;
    let (created, id) = r.created("collection", "col_");
    let url = node.sandbox_url(&format!("/v1/collections/{id}"));
    let settled = poll_until(api, &url, key, |b| b["collection"]["status"] == outcome).await;
    (created, settled["collection"].clone())
}

/// Credits a sandbox balance.
pub async fn deposit(api: &Api, node: &Node, key: &str, currency: &str, amount: &str) {
    api.post(
        &node.sandbox_url("/v1/simulations/deposits"),
        key,
        json!({ "currency": currency, "amount": amount }),
    )
    .await
    .expect(201);
}

/// A quote `from` → `to` for a fixed from-amount; returns the quote.
pub async fn quote(api: &Api, base: &str, key: &str, from: &str, amount: &str, to: &str) -> Value {
    let r = api
        .post(
            &format!("{base}/v1/conversions/quotes"),
            key,
            json!({ "from": { "currency": from, "amount": amount }, "to": { "currency": to } }),
        )
        .await;
    r.expect(201);
    r.body["quote"].clone()
}

/// The available balance of one currency, as a decimal string ("0" when no account).
pub async fn balance(api: &Api, base: &str, key: &str, currency: &str) -> String {
    let r = api.get(&format!("{base}/v1/accounts"), key).await;
    r.expect(200);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["currency"] == currency)
        .map(|a| a["availableBalance"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "0".into())
}

/// Minor units of a decimal string with `scale` fraction digits.
pub fn minor(amount: &str, scale: u32) -> i128 {
    let (int, frac) = amount.split_once('.').unwrap_or((amount, ""));
    assert!(frac.len() as u32 <= scale, "{amount} has more than {scale} digits");
    let frac = format!("{frac:0<width$}", width = scale as usize);
    format!("{int}{frac}").parse().unwrap()
}

/// An RFC 3339 timestamp `secs` seconds from now.
pub fn in_seconds(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// ---------------------------------------------------------------------------
// Helpers for the money-flow tests (payouts, collections, orders, accounts):
// stopping a node and verifying its books, polling with a deadline, reading
// events, and a loopback webhook receiver.

impl Node {
    /// The data directory the node runs on.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Stops the node with SIGTERM (asserting a clean exit), then runs
    /// `sika verify` on its books and asserts exit 0: its data directory's
    /// files, or on PostgreSQL the database itself (`--store`).
    #[track_caller]
    pub fn stop_and_verify(&self) {
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child {
            // SAFETY: plain syscall on our own child.
            unsafe {
                libc::kill(self.pid as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(15);
            let status = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    _ if Instant::now() > deadline => break None,
                    _ => std::thread::sleep(Duration::from_millis(10)),
                }
            };
            let Some(status) = status else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the node did not stop within 15 s of SIGTERM; log: {}", self.log());
            };
            unregister(self.pid);
            assert!(status.success(), "the node exited with {status} after SIGTERM; log: {}", self.log());
        }
        self.verify();
    }

    /// Runs `sika verify` on the node's books (its data directory, or on
    /// PostgreSQL the database itself), asserts exit 0, and returns the
    /// report. The node may be running.
    #[track_caller]
    pub fn verify(&self) -> String {
        verify_books(&self.data_dir(), self.store.as_deref())
    }
}

/// Polls `probe` every 10 ms until it returns `Some`, for at most `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// GETs `url` until `done` holds for the body (at most 10 s); returns the body.
pub async fn poll_until(api: &Api, url: &str, key: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually(url, Duration::from_secs(10), || async {
        let r = api.get(url, key).await;
        r.expect(200);
        done(&r.body).then_some(r.body)
    })
    .await
}

/// One currency's balance account as `GET /v1/accounts` shows it (`None` before any money touched it).
pub async fn account_of(api: &Api, base: &str, key: &str, currency: &str) -> Option<Value> {
    let r = api.get(&format!("{base}/v1/accounts"), key).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().iter().find(|a| a["currency"] == currency).cloned()
}

/// (available, pending) of one currency in minor units; zeros when no account.
pub async fn balances_minor(api: &Api, base: &str, key: &str, currency: &str, scale: u32) -> (i128, i128) {
    match account_of(api, base, key, currency).await {
        None => (0, 0),
        Some(a) => (
            minor(a["availableBalance"].as_str().unwrap(), scale),
            minor(a["pendingBalance"].as_str().unwrap(), scale),
        ),
    }
}

/// Walks the list at `url` (which may carry a query already) `limit` items
/// a page, following `nextCursor`, and hands each page's answer to `page`.
pub async fn walk_pages(api: &Api, url: &str, key: &str, limit: usize, mut page: impl FnMut(&Resp)) {
    let separator = if url.contains('?') { '&' } else { '?' };
    let mut cursor: Option<String> = None;
    loop {
        let page_url = match &cursor {
            Some(c) => format!("{url}{separator}limit={limit}&cursor={c}"),
            None => format!("{url}{separator}limit={limit}"),
        };
        let r = api.get(&page_url, key).await;
        r.expect(200);
        page(&r);
        match r.body["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return,
        }
    }
}

/// Every item of the list at `url` (which may carry a query already), in
/// the list's order, walking `nextCursor` 100 items at a time.
pub async fn every_item(api: &Api, url: &str, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    walk_pages(api, url, key, 100, |r| items.extend(r.body["data"].as_array().unwrap().iter().cloned()))
        .await;
    items
}

/// Every event of the organization on a stack, oldest first (walks all pages).
pub async fn all_events(api: &Api, base: &str, key: &str) -> Vec<Value> {
    let mut events = every_item(api, &format!("{base}/v1/webhooks/events"), key).await;
    events.reverse();
    events
}

/// The organization's events named `name` on a stack, oldest first.
pub async fn events_named(api: &Api, base: &str, key: &str, name: &str) -> Vec<Value> {
    all_events(api, base, key).await.into_iter().filter(|e| e["event"] == name).collect()
}

/// The names of the events whose `data.id` is `id`, oldest first.
pub async fn event_names_for(api: &Api, base: &str, key: &str, id: &str) -> Vec<String> {
    all_events(api, base, key)
        .await
        .into_iter()
        .filter(|e| e["data"]["id"] == id)
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until the events of resource `id` include every name in `wanted`; returns them all.
pub async fn wait_for_events(api: &Api, base: &str, key: &str, id: &str, wanted: &[&str]) -> Vec<String> {
    eventually(&format!("events {wanted:?} for {id}"), Duration::from_secs(10), || async {
        let names = event_names_for(api, base, key, id).await;
        wanted.iter().all(|w| names.iter().any(|n| n == w)).then_some(names)
    })
    .await
}

/// Serves `app` on a free loopback port from a thread and runtime of its
/// own, so it answers even while the test blocks (stopping a node, or a
/// handler holding its answer). Returns `http://host:port` and the sender
/// whose drop stops it.
pub fn serve_in_background(app: axum::Router, what: &str) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind {what}: {e}"));
    listener.set_nonblocking(true).expect("a non-blocking listener for tokio");
    let address = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    (address, stop)
}

/// A loopback HTTP server (axum) that answers 200 to every request and keeps
/// the JSON bodies (webhook deliveries) it received. It stops when dropped.
pub struct WebhookSink {
    pub url: String,
    received: Arc<Mutex<Vec<Value>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl WebhookSink {
    pub fn start() -> WebhookSink {
        let received = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new().fallback(keep_delivery).with_state(received.clone());
        let (address, stop) = serve_in_background(app, "the webhook sink");
        WebhookSink { url: format!("{address}/hooks"), received, _stop: stop }
    }

    /// A sink registered for every event on a stack.
    pub async fn registered(api: &Api, base: &str, key: &str) -> WebhookSink {
        let sink = WebhookSink::start();
        sink.register(api, base, key).await;
        sink
    }

    /// Registers the sink for every event on a stack; returns the endpoint id.
    pub async fn register(&self, api: &Api, base: &str, key: &str) -> String {
        let r = api
            .post(&format!("{base}/v1/webhooks/endpoints"), key, json!({ "url": self.url, "events": ["*"] }))
            .await;
        r.expect(201);
        r.body["webhookEndpoint"]["id"].as_str().unwrap().to_string()
    }

    /// Every delivery body received so far, in arrival order.
    pub fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until a delivery of `event` for resource `id` arrived; returns its body.
    pub async fn wait_for(&self, event: &str, id: &str) -> Value {
        eventually(&format!("webhook {event} for {id}"), Duration::from_secs(10), || async {
            self.received().into_iter().find(|b| b["event"] == event && b["data"]["id"] == id)
        })
        .await
    }
}

async fn keep_delivery(State(store): State<Arc<Mutex<Vec<Value>>>>, body: Bytes) -> StatusCode {
    if let Ok(value) = serde_json::from_slice::<Value>(&body) {
        store.lock().unwrap().push(value);
    }
    StatusCode::OK
}

// ---------------------------------------------------------------------------
// Stopping and restarting a node on its data directory (for the webhooks
// tests): SIGKILL or SIGTERM the process, then start `serve`
// again on the same directory and ports, optionally with extra environment.

impl Node {
    /// A node whose `serve` also gets `extra` (e.g. `SIKA_ALLOW_PRIVATE_WEBHOOKS`).
    pub fn start_with_env(options: Options, extra: &[(&str, &str)]) -> Node {
        let mut node = Node::start(options.clone());
        node.stop();
        node.restart(&options, extra);
        node
    }

    /// A second node on the same PostgreSQL database as `writer` (its
    /// `options.store`), with an empty data directory of its own (it joins
    /// the identity in the database), as an operator sets up a standby; it serves
    /// once its listeners are up, as a standby while the writer holds the
    /// leases.
    pub fn standby_of(writer: &Node, options: &Options, extra: &[(&str, &str)]) -> Node {
        let temp = tempfile::Builder::new().prefix("sika-test-").tempdir().unwrap();
        let data = temp.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        // The identity comes from the database; the token file is the
        // operator's copy for the command-line tools.
        std::fs::copy(writer.data_dir().join("admin-token"), data.join("admin-token")).unwrap();
        let ports = free_ports(3);
        let url = |p: u16| format!("http://127.0.0.1:{p}");
        let mut node = Node {
            child: Mutex::new(None),
            pid: 0,
            dir: temp.path().to_path_buf(),
            _temp: std::sync::Arc::new(temp),
            store: writer.store.clone(),
            creds: writer.creds.clone(),
            live: url(ports[0]),
            sandbox: url(ports[1]),
            admin: url(ports[2]),
        };
        node.restart(options, extra);
        node
    }

    /// Kills the process with SIGKILL (no shutdown at all) and reaps it.
    pub fn kill9(&self) {
        self.halt(libc::SIGKILL);
    }

    /// Stops the process with SIGTERM (a clean shutdown) and reaps it.
    pub fn stop(&self) {
        self.halt(libc::SIGTERM);
    }

    /// Sends `signal`, waits up to 10 s for the process to end, then kills
    /// and reaps it. A poisoned lock still gives up the child: this runs
    /// from `drop` too, which must not panic.
    fn halt(&self, signal: libc::c_int) {
        let Some(mut child) = self.child.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return;
        };
        // SAFETY: plain syscall on our own child.
        unsafe {
            libc::kill(self.pid as libc::pid_t, signal);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        unregister(self.pid);
    }

    /// Starts `serve` again (after `kill9` or `stop`) on the same data
    /// directory and ports; blocks until every listener answers.
    pub fn restart(&mut self, options: &Options, extra: &[(&str, &str)]) {
        assert!(self.child.lock().unwrap().is_none(), "restart: the node is still running");
        let host = |url: &str| url.trim_start_matches("http://").to_string();
        let addrs = [host(&self.live), host(&self.sandbox), host(&self.admin)];
        let mut env: Vec<(String, String)> = vec![
            ("SIKA_DATA_DIR".into(), self.data_dir().display().to_string()),
            ("SIKA_LIVE_ADDR".into(), addrs[0].clone()),
            ("SIKA_SANDBOX_ADDR".into(), addrs[1].clone()),
            ("SIKA_ADMIN_ADDR".into(), addrs[2].clone()),
            ("SIKA_TIME_SCALE".into(), "0.001".into()),
            ("SIKA_DISK_RESERVE".into(), "64MiB".into()),
        ];
        if let Some(r) = options.rate_limit {
            env.push(("SIKA_RATE_LIMIT".into(), r.to_string()));
        }
        if let Some(t) = &options.quote_ttl {
            env.push(("SIKA_QUOTE_TTL".into(), t.clone()));
        }
        if let Some(p) = &options.trusted_proxies {
            env.push(("SIKA_TRUSTED_PROXIES".into(), p.clone()));
        }
        if let Some(store) = options.store.as_ref().or(self.store.as_ref()) {
            env.push(("SIKA_STORE".into(), store.clone()));
        }
        let config = options.config.as_deref().unwrap_or(EXAMPLE_CONFIG);
        if !config.is_empty() {
            let path = self.dir.join("sika.toml");
            std::fs::write(&path, config).expect("write the configuration");
            env.push(("SIKA_CONFIG".into(), path.display().to_string()));
        }
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("serve.log"))
            .expect("serve.log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_sika"));
        command.arg("serve");
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SIKA_")) {
            command.env_remove(k);
        }
        command.env("RUST_LOG", "warn").envs(env).stdin(Stdio::null());
        limit_descriptors(&mut command, options.descriptors_soft);
        let mut child = command
            .stdout(log.try_clone().expect("serve.log"))
            .stderr(log)
            .spawn()
            .expect("spawn sika serve");
        self.pid = child.id();
        register(self.pid, self.dir.clone(), addrs.to_vec());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("serve exited with {status} on restart: {}", self.log());
            }
            let up = addrs.iter().all(|a| {
                let a: SocketAddr = a.parse().unwrap();
                TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok()
            });
            if up {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the node did not answer within 30 s of a restart: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        *self.child.lock().unwrap() = Some(child);
    }
}

/// The mtn_gh fee in pesewas: 1.00 GHS plus 1 %, rounded half up.
pub fn mtn_fee(amount_minor: i128) -> i128 {
    100 + (amount_minor + 50) / 100
}

/// An RFC 3339 timestamp in milliseconds since the epoch.
#[track_caller]
pub fn millis(at: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(at.as_str().expect("a timestamp string"))
        .unwrap_or_else(|e| panic!("{at} is not RFC 3339: {e}"))
        .timestamp_millis()
}

/// Checks an event's `data` against a later GET of the same resource in
/// the same state: it is that GET as of the event's `createdAt`. The
/// state and every non-webhook entry match exactly; the webhook entries
/// are those recorded before the event (to the millisecond): every
/// delivery scheduled before it is there, and each attempt shown is one
/// the GET shows before it (an attempt that finished in the moment the
/// event was committed may have been recorded just after it).
pub fn assert_data_as_of_event(event: &Value, later: &Value) {
    let committed = millis(&event["createdAt"]);
    let data = &event["data"];
    let webhook = |e: &&Value| e["kind"] == "webhook";
    let split = |resource: &Value| -> (Value, Vec<Value>) {
        let mut rest = resource.clone();
        let entries = resource["timeline"].as_array().expect("a timeline").clone();
        rest["timeline"] = Value::Array(entries.iter().filter(|e| !webhook(e)).cloned().collect());
        (rest, entries.iter().filter(webhook).cloned().collect())
    };
    let (data_rest, data_hooks) = split(data);
    let (later_rest, later_hooks) = split(later);
    assert_eq!(data_rest, later_rest, "the event's data is the resource as its GET shows it");
    let before: Vec<&Value> = later_hooks.iter().filter(|e| millis(&e["at"]) < committed).collect();
    for entry in &data_hooks {
        assert!(before.contains(&entry), "{entry} is a delivery entry the GET shows before the event");
    }
    for entry in before.iter().filter(|e| e["title"].as_str().is_some_and(|t| t.ends_with(" scheduled"))) {
        assert!(data_hooks.contains(entry), "{entry} was scheduled before the event, so its data shows it");
    }
}

/// Each timeline entry's (kind, title, at), after checking its shape and order.
#[track_caller]
pub fn timeline(resource: &Value) -> Vec<(String, String, i64)> {
    let entries = resource["timeline"].as_array().expect("a timeline array");
    let mut out = Vec::new();
    for e in entries {
        for field in ["kind", "title", "detail"] {
            assert!(e[field].as_str().is_some_and(|s| !s.is_empty()), "timeline entry without {field}: {e}");
        }
        out.push((
            e["kind"].as_str().unwrap().to_string(),
            e["title"].as_str().unwrap().to_string(),
            millis(&e["at"]),
        ));
    }
    assert!(out.windows(2).all(|w| w[0].2 <= w[1].2), "timeline in time order: {resource}");
    out
}

/// Runs `sika verify --data-dir DIR`, asserts it passes, and returns its report.
pub fn verify_dir(dir: &std::path::Path) -> String {
    verify_books(dir, None)
}

/// Runs `sika verify` on the files in `dir`, or with `store` on that
/// database (`--store`), with no other `SIKA_*` setting; asserts it passes
/// and returns its report.
#[track_caller]
fn verify_books(dir: &std::path::Path, store: Option<&str>) -> String {
    let mut verify = Command::new(env!("CARGO_BIN_EXE_sika"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SIKA_")) {
        verify.env_remove(k);
    }
    verify.arg("verify").arg("--data-dir").arg(dir);
    if let Some(store) = store {
        verify.arg("--store").arg(store);
    }
    let out = verify.output().expect("run sika verify");
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "sika verify of {} exited with {}:\n{report}\n{}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

/// Four tasks that deposit 1.00 (GHS unless named) on a node's sandbox,
/// one after another each, until stopped or until a deposit is not
/// acknowledged (the node was killed): writes pouring in while something
/// else happens. Each deposit has an `externalReference` of its own, so a
/// test can send it again and find it exactly once.
pub struct Depositors {
    acknowledged: Arc<std::sync::atomic::AtomicU64>,
    /// (externalReference, id) of each deposit answered 201.
    deposits: Arc<Mutex<Vec<(String, String)>>>,
    running: Arc<std::sync::atomic::AtomicBool>,
    /// Each task answers whether a deposit went unacknowledged.
    tasks: Vec<tokio::task::JoinHandle<bool>>,
}

/// How many tasks `Depositors` runs, and what each deposit is.
pub const DEPOSITOR_TASKS: usize = 4;
pub const DEPOSITED: &str = "1.00";

/// A simulated deposit's body.
pub fn deposit_body(currency: &str, reference: &str) -> Value {
    json!({ "currency": currency, "amount": DEPOSITED, "externalReference": reference })
}

impl Depositors {
    pub fn start(api: &Api, node: &Node, key: &str) -> Depositors {
        Depositors::start_in(api, node, key, "GHS")
    }

    pub fn start_in(api: &Api, node: &Node, key: &str, currency: &str) -> Depositors {
        let acknowledged = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let deposits = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let url = node.sandbox_url("/v1/simulations/deposits");
        let run = format!("dep-{:x}", rand::random::<u32>());
        let tasks = (0..DEPOSITOR_TASKS)
            .map(|task| {
                let (api, key, url, currency) =
                    (api.clone(), key.to_string(), url.clone(), currency.to_string());
                let (acknowledged, deposits, running) =
                    (acknowledged.clone(), deposits.clone(), running.clone());
                let prefix = format!("{run}-{task}");
                tokio::spawn(async move {
                    for n in 0.. {
                        if !running.load(std::sync::atomic::Ordering::SeqCst) {
                            break;
                        }
                        let reference = format!("{prefix}-{n}");
                        let body = deposit_body(&currency, &reference);
                        let answer = match api.client.post(&url).bearer_auth(&key).json(&body).send().await {
                            Ok(r) if r.status() == 201 => r.json::<Value>().await.ok(),
                            _ => None,
                        };
                        let Some(answer) = answer else { return true };
                        let id = answer["deposit"]["id"].as_str().unwrap_or_default().to_string();
                        deposits.lock().unwrap().push((reference, id));
                        acknowledged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    false
                })
            })
            .collect();
        Depositors { acknowledged, deposits, running, tasks }
    }

    /// (externalReference, id) of each deposit acknowledged so far.
    pub fn deposits(&self) -> Vec<(String, String)> {
        self.deposits.lock().unwrap().clone()
    }

    /// Deposits acknowledged so far.
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops the tasks; the deposits acknowledged in all, and whether any
    /// deposit went unacknowledged.
    pub async fn stop(self) -> (u64, bool) {
        self.running.store(false, std::sync::atomic::Ordering::SeqCst);
        let mut failed = false;
        for task in self.tasks {
            failed |= task.await.unwrap();
        }
        (self.acknowledged.load(std::sync::atomic::Ordering::SeqCst), failed)
    }
}
