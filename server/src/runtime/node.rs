//! Starting and stopping a node: `sika init` and `sika serve`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use sika_engine::{Engine, EngineConfig};
use tokio::net::TcpListener;

use crate::config::NodeConfig;
use crate::domain::credentials::{ApiKeyRecord, SpendCaps};
use crate::domain::identity::{BootstrapCredentials, Identity, hash_secret, secret_token};
use crate::domain::rates::RateBook;
use crate::domain::settings::{self, FeedSettings};
use crate::domain::stack::{Stack, StackKind};
use crate::http::admin::{self, AdminState};
use crate::runtime::error::NodeError;
use crate::store::disk_reserve::DiskReserve;
use crate::store::request_log::{RequestLog, Retention};

/// The request log's retention, from the node's settings.
fn request_log_retention(config: &NodeConfig) -> Retention {
    let max_age_ms = i64::try_from(config.request_log_max_age.as_millis()).unwrap_or(i64::MAX);
    Retention { count: config.request_log_retention, max_age_ms }
}

fn engine_config(
    config: &NodeConfig,
    kind: StackKind,
    rates: &Arc<RateBook>,
    reserve: Option<&Arc<DiskReserve>>,
) -> EngineConfig {
    let mut engine = EngineConfig::new(Some(config.data_dir.join(kind.database_file())));
    engine.quote_ttl_ms = config.quote_ttl.as_millis() as i64;
    engine.spread_bps = config.spread_bps;
    engine.rates = rates.source();
    engine.ledger_steps = crate::domain::checkout_format::LEDGER_STEPS;
    engine.postgres = config.store.as_ref().map(|url| sika_engine::PostgresConfig {
        url: url.clone(),
        stack: kind.name().to_string(),
        holder: lease_name(&config.data_dir),
        lease_ttl: config.lease_ttl,
    });
    engine.admission = reserve.map(DiskReserve::admission);
    engine
}

/// This node's name in the writer leases: the host and an id kept in
/// the data directory (`node-id`), so a node restarted on its data
/// directory (after a crash, say) takes its leases back at once, with a
/// new term that fences off its previous run. Two processes never share a
/// data directory (its files are locked), so two live nodes never share a
/// name.
fn lease_name(data_dir: &Path) -> String {
    let path = data_dir.join("node-id");
    let id = std::fs::read_to_string(&path).ok().map(|id| id.trim().to_string()).filter(|id| !id.is_empty());
    let id = id.unwrap_or_else(|| {
        let id = format!("{:016x}", rand::random::<u64>());
        if let Err(e) = std::fs::write(&path, &id) {
            tracing::warn!(error = %e, "cannot keep the node's id in the data directory");
        }
        id
    });
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = if host.trim().is_empty() { "sika" } else { host.trim() };
    format!("{host}-{id}")
}

fn open_engine(
    config: &NodeConfig,
    kind: StackKind,
    rates: &Arc<RateBook>,
    reserve: Option<&Arc<DiskReserve>>,
) -> Result<Engine, NodeError> {
    let path = config.data_dir.join(kind.database_file());
    let engine = Engine::open(engine_config(config, kind, rates, reserve));
    if let Ok(engine) = &engine
        && let Some(reason) = engine.is_standby().then(|| engine.unavailable_reason()).flatten()
    {
        engine.shutdown();
        return Err(NodeError::Standby(reason));
    }
    engine.map_err(|source| {
        if source.to_string().contains("already open") || source.to_string().contains("DatabaseAlreadyOpen") {
            NodeError::Locked(path)
        } else {
            NodeError::Ledger { path, source }
        }
    })
}

/// The node's settings from the `[node]` table (flags laid over the
/// file's) and the rest of the file, checked in full: every problem, one
/// line each naming its key, or settings the node can run with.
pub fn configure(
    node: crate::config::NodeTable,
    file: crate::config::ConfigFile,
) -> Result<NodeConfig, Vec<String>> {
    let operator = settings::resolve(&file).err().unwrap_or_default();
    match NodeConfig::resolve(node, file) {
        Ok(config) if operator.is_empty() => Ok(config),
        Ok(_) => Err(operator),
        Err(mut problems) => {
            problems.extend(operator);
            Err(problems)
        }
    }
}

/// Makes the data directory private to the node's user: files created from
/// now on are 0600 and directories 0700 (the process's umask), and what is
/// already there (a directory from an older release, a file someone
/// loosened) is set so now. The databases hold webhook signing secrets and
/// representatives' ID numbers; `nobody` could read them.
pub(crate) fn make_private(dir: &Path) -> Result<(), NodeError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    // SAFETY: umask only sets the process's file mode creation mask.
    unsafe {
        libc::umask(0o077);
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|source| NodeError::File {
        doing: "create",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut pending = vec![dir.to_path_buf()];
    // A bound on the walk: the data directory holds a few dozen files.
    let mut visited = 0usize;
    while let Some(path) = pending.pop() {
        visited += 1;
        if visited > 100_000 {
            break;
        }
        let metadata = std::fs::symlink_metadata(&path).map_err(|source| NodeError::File {
            doing: "read",
            path: path.clone(),
            source,
        })?;
        let mode = if metadata.is_dir() {
            let list = |source| NodeError::File { doing: "list", path: path.clone(), source };
            for entry in std::fs::read_dir(&path).map_err(list)? {
                pending.push(entry.map_err(list)?.path());
            }
            0o700
        } else if metadata.is_file() {
            0o600
        } else {
            continue;
        };
        if metadata.permissions().mode() & 0o7777 != mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|source| NodeError::File { doing: "make private", path: path.clone(), source })?;
        }
    }
    Ok(())
}

/// Initialises an empty data directory. Fails if it is already initialised.
pub fn init(config: &NodeConfig) -> Result<BootstrapCredentials, NodeError> {
    let dir = &config.data_dir;
    make_private(dir)?;
    if Identity::path(dir).exists() {
        return Err(NodeError::Refused(format!("{} is already initialised", dir.display())));
    }
    if joins_database(config)? {
        return Err(NodeError::Refused(
            "the database given by --store already holds a node's identity: start `sika serve` with it to join"
                .to_string(),
        ));
    }
    let identity = Identity::open(dir, config.store.as_deref()).map_err(NodeError::part)?;
    let now = chrono::Utc::now().timestamp_millis();
    let (organization, owner_session_token, admin_token) = identity
        .bootstrap(now, config.session_ttl.as_millis().try_into().unwrap_or(i64::MAX))
        .map_err(NodeError::part)?;
    let mut keys = Vec::new();
    for kind in [StackKind::Sandbox, StackKind::Live] {
        let secret = secret_token(kind.key_prefix());
        let record = ApiKeyRecord {
            id: sika_engine::ids::new_id("key"),
            organization: organization.id.clone(),
            name: "Bootstrap key".into(),
            hash: hash_secret(&secret),
            hint: secret.chars().take(12).collect(),
            scopes: vec!["*".into()],
            allowed_ips: Vec::new(),
            caps: SpendCaps::default(),
            expires_at: None,
            revoked_at: None,
            created_at: now,
        };
        // Initialising converts nothing: the book is the sandbox default.
        let rates = Arc::new(RateBook::new(&settings::RateSettings::default(), true, Arc::new(|| 0)));
        let engine = open_engine(config, kind, &rates, None)?;
        let body = crate::store::documents::encode(&record);
        engine.execute_blocking(sika_engine::Command::PutDocument {
            collection: crate::domain::stack::KEYS.to_string(),
            id: record.id.clone(),
            body,
            list: Some((organization.id.clone(), "api_keys".into())),
        })?;
        engine.shutdown();
        keys.push(secret);
    }
    write_admin_token(dir, &admin_token)?;
    let live_key = keys.pop().unwrap_or_default();
    let sandbox_key = keys.pop().unwrap_or_default();
    Ok(BootstrapCredentials {
        organization_id: organization.id,
        sandbox_key,
        live_key,
        owner_session_token,
        admin_token,
    })
}

fn write_admin_token(dir: &Path, token: &str) -> Result<(), NodeError> {
    write_private(&dir.join("admin-token"), token.as_bytes())
}

/// Where a first start off a terminal leaves the bootstrap credentials.
pub(crate) const BOOTSTRAP_FILE: &str = "bootstrap.json";

/// Writes `bytes` to `path`, mode 0600, synced.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), NodeError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes).and_then(|_| file.sync_all()))
        .map_err(|source| NodeError::File { doing: "write", path: path.to_path_buf(), source })
}

/// A running node's stacks, for tests and the serve loop.
pub(crate) struct Node {
    pub live: Arc<Stack>,
    pub sandbox: Arc<Stack>,
    pub identity: Arc<Identity>,
    /// The rate feed both stacks read, when one is configured.
    feed: Option<FeedSettings>,
}

impl Node {
    pub(crate) fn open(config: NodeConfig) -> Result<Node, NodeError> {
        let config = Arc::new(config);
        make_private(&config.data_dir)?;
        let identity =
            Arc::new(Identity::open(&config.data_dir, config.store.as_deref()).map_err(NodeError::part)?);
        let settings =
            settings::resolve(&config.file).map_err(|problems| NodeError::Refused(problems.join("; ")))?;
        // Only the sandbox yields to the reserve: the live stack writes
        // until the disk itself is full.
        let reserve = Arc::new(DiskReserve::new(config.data_dir.clone(), config.disk_reserve));
        let open_stack = |kind: StackKind| -> Result<Arc<Stack>, NodeError> {
            let clock: Arc<dyn Fn() -> i64 + Send + Sync> =
                Arc::new(|| chrono::Utc::now().timestamp_millis());
            let rates = Arc::new(RateBook::new(&settings.rates, kind == StackKind::Sandbox, clock));
            let reserve = (kind == StackKind::Sandbox).then_some(&reserve);
            let engine = open_engine(&config, kind, &rates, reserve)?;
            let retention = request_log_retention(&config);
            let log = match &config.store {
                Some(url) => RequestLog::open_postgres(url, kind.name(), retention)?,
                None => RequestLog::open(
                    &config.data_dir.join(format!("{}-requests.redb", kind.name())),
                    retention,
                    reserve.map(DiskReserve::admission),
                )?,
            };
            let stack_settings = match kind {
                StackKind::Live => &settings.live,
                StackKind::Sandbox => &settings.sandbox,
            };
            // The provider's client, an adapter the domain knows only as a rail.
            let connector = match (&stack_settings.flutterwave, kind) {
                (Some(flutterwave), StackKind::Live) => Some(Box::new(
                    crate::adapters::flutterwave::Flutterwave::new(flutterwave).map_err(NodeError::part)?,
                )
                    as Box<dyn crate::domain::rails::AsyncRail>),
                _ => None,
            };
            let opened = crate::domain::stack::Opened { engine, request_log: log, rates, connector };
            let mut stack = Stack::new(kind, opened, identity.clone(), config.clone(), stack_settings)
                .map_err(NodeError::part)?;
            stack.disk_reserve = reserve.cloned();
            Ok(Arc::new(stack))
        };
        let live = open_stack(StackKind::Live)?;
        let sandbox = open_stack(StackKind::Sandbox)?;
        // Again once every file is open: any it created are set too.
        make_private(&config.data_dir)?;
        Ok(Node { live, sandbox, identity, feed: settings.rates.feed })
    }

    /// Starts the webhook dispatchers (inside a Tokio runtime).
    pub(crate) fn start_background(&self) -> Result<(), NodeError> {
        for stack in [&self.live, &self.sandbox] {
            let sender = crate::adapters::webhook_sender::WebhookSender::new(stack.webhook_guard())
                .map_err(NodeError::part)?;
            stack.start_webhooks(Arc::new(sender)).map_err(NodeError::part)?;
            crate::runtime::effects::spawn(stack.clone());
            crate::runtime::scheduler::spawn(stack.clone());
        }
        crate::runtime::storage_watch::spawn(vec![self.live.clone(), self.sandbox.clone()]);
        crate::runtime::rails::spawn(self.live.clone());
        crate::runtime::emails::spawn(self.identity.clone(), [&self.live, &self.sandbox])
            .map_err(NodeError::Refused)?;
        if let Some(feed) = &self.feed {
            crate::runtime::feed::spawn(
                feed.clone(),
                vec![self.live.rates.clone(), self.sandbox.rates.clone()],
            );
        }
        Ok(())
    }

    /// Stops the dispatchers, recording attempts already made.
    pub(crate) async fn stop_background(&self) {
        for stack in [&self.live, &self.sandbox] {
            if let Ok(handle) = stack.webhooks() {
                handle.stop().await;
            }
        }
    }

    /// Stops the writers and log writers after the listeners have drained.
    pub(crate) fn close(&self) {
        for stack in [&self.live, &self.sandbox] {
            stack.engine.shutdown();
            stack.request_log.close();
        }
    }
}

async fn bind(addr: SocketAddr, what: &str) -> Result<std::net::TcpListener, NodeError> {
    let failed = |source| NodeError::Listen { what: format!(" for the {what} on {addr}"), source };
    TcpListener::bind(addr).await.map_err(failed)?.into_std().map_err(failed)
}

/// A listener for one phase of serving: a handle on the same socket, so
/// the socket stays open (and connections queue) from one phase to the next.
fn phase(listener: &std::net::TcpListener) -> Result<TcpListener, NodeError> {
    listener
        .try_clone()
        .and_then(TcpListener::from_std)
        .map_err(|source| NodeError::Listen { what: String::new(), source })
}

async fn bind_all(config: &NodeConfig) -> Result<[std::net::TcpListener; 3], NodeError> {
    Ok([
        bind(config.live_addr, "live API").await?,
        bind(config.sandbox_addr, "sandbox API").await?,
        bind(config.admin_addr, "admin API").await?,
    ])
}

/// With the PostgreSQL backend: while another node holds a stack's writer
/// lease, serve as a standby (`/readyz` says so, everything else is 503)
/// and wait until the leases are free. `false` when the node was told to
/// stop meanwhile.
async fn stand_by(
    url: &str,
    holder: &str,
    config: &NodeConfig,
    listeners: &mut Option<[std::net::TcpListener; 3]>,
    shutdown: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Result<bool, NodeError> {
    let held = || {
        let (url, holder) = (url.to_string(), holder.to_string());
        tokio::task::spawn_blocking(move || {
            let mut reasons = Vec::new();
            for kind in [StackKind::Live, StackKind::Sandbox] {
                match sika_engine::postgres::lease_holder(&url, kind.name()) {
                    Ok(None) => {}
                    // This node's own, from before a restart: it takes it back.
                    Ok(Some(held)) if held.holder == holder => {}
                    Ok(Some(held)) => reasons.push(format!("{} writer: {held}", kind.name())),
                    Err(e) => reasons.push(format!("{} writer: {e}", kind.name())),
                }
            }
            reasons
        })
    };
    let mut reasons = held().await?;
    if reasons.is_empty() {
        return Ok(true);
    }
    tracing::info!(reasons = ?reasons, "standby: waiting for the writer leases");
    let shared = Arc::new(std::sync::Mutex::new(reasons.clone()));
    let app = crate::http::health::standby_router(shared.clone());
    let mut servers = Vec::new();
    if listeners.is_none() {
        *listeners = Some(bind_all(config).await?);
    }
    // Ended when the standby stops waiting: a request in flight then (a
    // load balancer's `/readyz`) is answered, not cut off.
    let (end, ended) = tokio::sync::watch::channel(false);
    for listener in listeners.iter().flatten() {
        let listener = phase(listener)?;
        let mut ended = ended.clone();
        let server = axum::serve(listener, app.clone()).with_graceful_shutdown(async move {
            let _ = ended.wait_for(|ended| *ended).await;
        });
        servers.push(tokio::spawn(server.into_future()));
    }
    let stopped = loop {
        tokio::select! {
            () = &mut *shutdown => break true,
            () = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
        }
        reasons = held().await?;
        if reasons.is_empty() {
            break false;
        }
        if let Ok(mut shared) = shared.lock() {
            *shared = reasons.clone();
        }
    };
    let _ = end.send(true);
    for server in servers {
        // A connection that keeps a request open longer is cut.
        let abort = server.abort_handle();
        if tokio::time::timeout(std::time::Duration::from_secs(1), server).await.is_err() {
            abort.abort();
        }
    }
    Ok(!stopped)
}

/// Whether `--store` names a database that already holds a node's
/// identity: a node started on it with an empty data directory joins that
/// identity (loaded when the node opens) instead of initialising its own.
fn joins_database(config: &NodeConfig) -> Result<bool, NodeError> {
    match &config.store {
        Some(url) => Ok(crate::store::postgres::PgIdentity::open(url)?.exists()?),
        None => Ok(false),
    }
}

/// Opens the node; on PostgreSQL, first waits as a standby until no other
/// node holds the writer leases. `None` when told to stop meanwhile.
async fn open_as_writer(
    config: &NodeConfig,
    listeners: &mut Option<[std::net::TcpListener; 3]>,
    shutdown: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Result<Option<Node>, NodeError> {
    // Only a node on PostgreSQL has a lease name, kept in `node-id` (a
    // node joining a database may start with no data directory yet).
    if config.store.is_some() {
        make_private(&config.data_dir)?;
    }
    let name = config.store.as_ref().map(|_| lease_name(&config.data_dir));
    loop {
        if let (Some(url), Some(name)) = (&config.store, &name)
            && !stand_by(url, name, config, listeners, shutdown).await?
        {
            return Ok(None);
        }
        match Node::open(config.clone()) {
            Ok(node) => return Ok(Some(node)),
            // Another standby took a lease first: wait again.
            Err(NodeError::Standby(_)) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// On an empty data directory, initialises the node and shows the
/// bootstrap credentials once, unless `--store` names a database that holds
/// a node's identity already (the node joins it). They go to standard
/// output only on a terminal: under a service manager standard output is
/// the journal, which must never hold a secret, so there they are written
/// to `<data-dir>/bootstrap.json` (0600) and only its path is logged.
async fn initialise_if_new(config: &NodeConfig) -> Result<(), NodeError> {
    let join_config = config.clone();
    let joins = tokio::task::spawn_blocking(move || joins_database(&join_config)).await??;
    if !Identity::path(&config.data_dir).exists() && !joins {
        let init_config = config.clone();
        let credentials = tokio::task::spawn_blocking(move || init(&init_config)).await??;
        let json = serde_json::to_string(&credentials)
            .map_err(|e| NodeError::Refused(format!("cannot show the bootstrap credentials: {e}")))?;
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            println!("{json}");
        } else {
            let path = config.data_dir.join(BOOTSTRAP_FILE);
            write_private(&path, format!("{json}\n").as_bytes())?;
            tracing::info!(
                path = %path.display(),
                "the node was initialised; its bootstrap credentials (the live key and the operator token) are in {}, readable by this user only: store them somewhere safe and delete the file",
                path.display()
            );
        }
    }
    Ok(())
}

/// Runs the node until SIGTERM or Ctrl-C, then drains in-flight requests.
/// On an empty data directory it initialises first and shows the
/// bootstrap credentials once (`initialise_if_new`).
pub async fn serve(config: NodeConfig) -> Result<(), NodeError> {
    initialise_if_new(&config).await?;
    // The signal handlers go in before any listener answers, so a SIGTERM
    // that arrives as soon as the node is reachable still drains it.
    let shutdown = shutdown_signal()?;
    tokio::pin!(shutdown);
    // Bound once the node opens, so a client that connects is served, or
    // earlier by a standby, which answers while it waits.
    let mut listeners = None;
    let Some(node) = open_as_writer(&config, &mut listeners, &mut shutdown).await? else { return Ok(()) };
    node.start_background()?;
    let listeners = match listeners {
        Some(listeners) => listeners,
        None => bind_all(&config).await?,
    };
    let [live_listener, sandbox_listener, admin_listener] =
        [phase(&listeners[0])?, phase(&listeners[1])?, phase(&listeners[2])?];
    let admin_state = Arc::new(AdminState {
        identity: node.identity.clone(),
        live: node.live.clone(),
        sandbox: node.sandbox.clone(),
        started: Instant::now(),
        data_dir: config.data_dir.clone(),
        operator_tokens: crate::domain::ratelimit::FailureThrottle::operator_tokens(),
    });
    let health =
        crate::http::health::Health::new(node.live.clone(), node.sandbox.clone(), config.data_dir.clone());
    let (stop_sender, stop) = tokio::sync::watch::channel(false);
    let descriptors = crate::runtime::listen::raise_descriptor_limit();
    let limits = crate::runtime::listen::Limits::resolve(
        &config.connections,
        descriptors,
        config.trusted_proxies.clone(),
    );
    tracing::info!(
        descriptors,
        connections_max = limits.max,
        per_address_max = limits.per_address_max,
        "connection limits per listener"
    );
    let serve_one = |listener: TcpListener, app: axum::Router| {
        tokio::spawn(crate::runtime::listen::serve(listener, app, limits.clone(), stop.clone()))
    };
    let live_app = crate::http::routes::app(node.live.clone(), health.clone()).map_err(NodeError::part)?;
    let sandbox_app =
        crate::http::routes::app(node.sandbox.clone(), health.clone()).map_err(NodeError::part)?;
    let servers = [
        serve_one(live_listener, live_app.merge(crate::http::rails::router(node.live.clone()))),
        serve_one(sandbox_listener, sandbox_app),
        serve_one(admin_listener, admin::app(admin_state, health.clone())),
    ];
    tracing::info!(live = %config.live_addr, sandbox = %config.sandbox_addr, admin = %config.admin_addr, "sika is serving");
    let lost = tokio::select! {
        () = &mut shutdown => None,
        reason = lease_lost(&node) => Some(reason),
    };
    tracing::info!("stopping: draining in-flight requests");
    health.start_draining();
    let _ = stop_sender.send(true);
    for server in servers {
        if let Ok(Err(e)) = server.await {
            tracing::error!(error = %e, "listener failed");
        }
    }
    node.stop_background().await;
    node.close();
    match lost {
        // Its caches (keys, settings) may now lag the database: the node
        // exits, and its supervisor starts it again as a standby.
        Some(reason) => Err(NodeError::Refused(format!("stopped writing: {reason}"))),
        None => Ok(()),
    }
}

/// Resolves once a stack's writer lease has passed to another node
/// (PostgreSQL backend); never on the embedded store.
async fn lease_lost(node: &Node) -> String {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        for stack in [&node.live, &node.sandbox] {
            if stack.engine.is_standby() {
                let reason = stack.engine.unavailable_reason().unwrap_or_default();
                return format!("the {} writer lease passed to another node: {reason}", stack.kind.name());
            }
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C; the handlers are installed when this is
/// called, not when it is first polled.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, NodeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|source| NodeError::Signal { signal: "SIGTERM", source })?;
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|source| NodeError::Signal { signal: "SIGINT", source })?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
