//! `sika`: the command line. It only parses arguments and dispatches into
//! the crates: `sika-server` for `serve` and `init`, `sika-engine` for
//! `verify`, `sika-tui` for `tui`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sika_server::NodeConfig;
use sika_server::config::{ConfigFile, NodeTable};

mod json_log;
mod log_pipe;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "sika", version, about = "A self-hosted payments node")]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Validate the file given with --config (or SIKA_CONFIG).
    Check(NodeArgs),
}

#[derive(Subcommand)]
enum OrgAction {
    /// Create an organization and invite its first owner, through the admin
    /// API of the running node; prints the organization and the owner's
    /// invitation token (shown once) as JSON.
    Create {
        #[command(flatten)]
        admin: AdminArgs,
        #[arg(long)]
        name: String,
        #[arg(long)]
        owner_email: String,
        /// [the part of the email before @]
        #[arg(long)]
        owner_name: Option<String>,
    },
}

/// Where the admin API is and the operator token, as `sika tui` takes them.
/// Each of the data directory and the address unset (flag and environment
/// variable both) is read from the configuration file's `[node]` table,
/// then falls back to its default, as `serve` reads them.
#[derive(Args, Clone)]
struct AdminArgs {
    /// The node's configuration file (TOML); its [node] data_dir and
    /// admin_addr are used when the flags are not given.
    #[arg(long, env = "SIKA_CONFIG")]
    config: Option<PathBuf>,
    /// [./sika-data]
    #[arg(long, env = "SIKA_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// [127.0.0.1:8082]
    #[arg(long, env = "SIKA_ADMIN_ADDR")]
    admin_addr: Option<SocketAddr>,
    /// The admin API's base URL; overrides --admin-addr.
    #[arg(long)]
    admin_url: Option<String>,
    /// The operator token; read from <data-dir>/admin-token when absent.
    #[arg(long)]
    token: Option<String>,
}

/// A node's admin API as a command reaches it: its data directory, base
/// URL and the operator token if one was given.
struct Admin {
    data_dir: PathBuf,
    url: String,
    token: Option<String>,
}

impl AdminArgs {
    fn resolve(&self) -> Result<Admin, Failure> {
        let node = file_node(self.config.as_deref())?.overlay(NodeTable {
            data_dir: self.data_dir.clone(),
            admin_addr: self.admin_addr,
            ..NodeTable::default()
        });
        let admin_addr = node.admin_addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8082)));
        Ok(Admin {
            data_dir: node.data_dir.unwrap_or_else(|| PathBuf::from(DATA_DIR_DEFAULT)),
            url: self.admin_url.clone().unwrap_or_else(|| format!("http://{admin_addr}")),
            token: self.token.clone(),
        })
    }
}

/// `--data-dir`'s default, for every command.
const DATA_DIR_DEFAULT: &str = "./sika-data";

/// The `[node]` table of the configuration file at `path` (empty without
/// one); a file that cannot be read is an error naming its problems.
fn file_node(path: Option<&std::path::Path>) -> Result<NodeTable, Failure> {
    let Some(path) = path else { return Ok(NodeTable::default()) };
    ConfigFile::load(path).map(|file| file.node).map_err(|problems| {
        format!("the configuration in {} has problems:\n  {}", path.display(), problems.join("\n  ")).into()
    })
}

#[derive(Subcommand)]
enum Commands {
    /// Run the node: the live stack, the sandbox stack and the admin API.
    Serve(NodeArgs),
    /// Initialise an empty data directory and print the bootstrap credentials.
    Init {
        #[command(flatten)]
        node: NodeArgs,
        /// Print the credentials as one JSON object (the only format).
        #[arg(long)]
        json: bool,
    },
    /// Check a data directory offline (or, with --store, the PostgreSQL
    /// database itself): balances, double entry, hash chain, idempotency index.
    Verify {
        /// The node's configuration file (TOML); its [node] data_dir and
        /// store are used when the flags are not given.
        #[arg(long, env = "SIKA_CONFIG")]
        config: Option<PathBuf>,
        /// [./sika-data]
        #[arg(long, env = "SIKA_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// Audit the stacks kept in this PostgreSQL database
        /// (`postgres://…`), read in one consistent snapshot each, instead
        /// of the data directory's files; a node may be writing meanwhile.
        #[arg(long, env = "SIKA_STORE")]
        store: Option<String>,
    },
    /// Count a stopped node's ledger records by kind (storage space), with
    /// their key and value bytes, redb's pages and each file's size.
    Footprint {
        /// The node's configuration file (TOML); its [node] data_dir is
        /// used when --data-dir is not given.
        #[arg(long, env = "SIKA_CONFIG")]
        config: Option<PathBuf>,
        /// [./sika-data]
        #[arg(long, env = "SIKA_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Give a stopped node's ledgers' free pages back to the disk (redb
    /// keeps the pages a commit frees for later writes, and grows a file in
    /// steps); prints each file's bytes before and after.
    Compact {
        /// The node's configuration file (TOML); its [node] data_dir is
        /// used when --data-dir is not given.
        #[arg(long, env = "SIKA_CONFIG")]
        config: Option<PathBuf>,
        /// [./sika-data]
        #[arg(long, env = "SIKA_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Copy a consistent snapshot of every database, the node running or not.
    Backup {
        /// The data directory, and the running node's admin API (asked for
        /// the copy when a node holds the directory).
        #[command(flatten)]
        admin: AdminArgs,
        /// A new (or empty) directory for the copy.
        #[arg(long)]
        to: PathBuf,
    },
    /// Check a configuration file: exit 0, or one line per problem naming the key.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Manage organizations through the admin API of a running node.
    Org {
        #[command(subcommand)]
        action: OrgAction,
    },
    /// Compare the live stack's movements with what the provider connector
    /// reports for a period, through the admin API of the running node;
    /// prints the API's JSON (matched, missing on either side, mismatched).
    Reconcile {
        #[command(flatten)]
        admin: AdminArgs,
        /// The period's start, an RFC 3339 date-time (2026-11-01T00:00:00Z).
        #[arg(long)]
        from: String,
        /// The period's end (exclusive), at most 31 days after --from.
        #[arg(long)]
        to: String,
    },
    /// The operator console, over the admin API of a running node.
    Tui {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Measure the ledger on this machine: transfers between random
    /// accounts on a fresh database, submitted a batch at a time; prints
    /// the throughput and batch latency percentiles.
    Bench {
        /// Transfers to make.
        #[arg(long, default_value_t = 100_000)]
        transfers: usize,
        /// Accounts they move between.
        #[arg(long, default_value_t = 10_000)]
        accounts: usize,
        /// Transfers submitted together as one batch.
        #[arg(long, default_value_t = 1_000)]
        batch: usize,
        /// A directory for the throwaway database [the system's temporary directory].
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Measure on PostgreSQL (`postgres://…`): a stack of the bench's
        /// own in that database, removed afterwards [the embedded store].
        #[arg(long, env = "SIKA_STORE")]
        store: Option<String>,
    },
}

/// The node's flags. Each one unset (flag and environment variable both)
/// falls back to the configuration file's `[node]` table, then to its
/// default (shown in brackets).
#[derive(Args, Clone)]
struct NodeArgs {
    /// The configuration file (TOML): rates, methods and fees, receiving
    /// routes, and any of these flags under [node].
    #[arg(long, env = "SIKA_CONFIG")]
    config: Option<PathBuf>,
    /// [./sika-data]
    #[arg(long, env = "SIKA_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// [127.0.0.1:8080]
    #[arg(long, env = "SIKA_LIVE_ADDR")]
    live_addr: Option<SocketAddr>,
    /// [127.0.0.1:8081]
    #[arg(long, env = "SIKA_SANDBOX_ADDR")]
    sandbox_addr: Option<SocketAddr>,
    /// [127.0.0.1:8082]
    #[arg(long, env = "SIKA_ADMIN_ADDR")]
    admin_addr: Option<SocketAddr>,
    /// Multiplies every scheduled delay; 0.001 runs a 30 s delay in 30 ms [1.0].
    #[arg(long, env = "SIKA_TIME_SCALE")]
    time_scale: Option<f64>,
    /// How long a conversion quote can be executed, not scaled [30s].
    #[arg(long, env = "SIKA_QUOTE_TTL")]
    quote_ttl: Option<String>,
    /// How long a team member's session lasts [12h].
    #[arg(long, env = "SIKA_SESSION_TTL")]
    session_ttl: Option<String>,
    /// Requests per second per API key [100].
    #[arg(long, env = "SIKA_RATE_LIMIT")]
    rate_limit: Option<u32>,
    /// A proxy whose X-Forwarded-For header is believed (repeatable).
    #[arg(long = "trusted-proxy", env = "SIKA_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Vec<IpAddr>,
    /// Let live webhook endpoints point at loopback and private addresses.
    #[arg(long, env = "SIKA_ALLOW_PRIVATE_WEBHOOKS")]
    allow_private_webhooks: bool,
    /// Request log entries kept per organization on each stack [100000].
    #[arg(long, env = "SIKA_REQUEST_LOG_RETENTION")]
    request_log_retention: Option<u64>,
    /// How long request log entries are kept, such as 30d or 12h [30d].
    #[arg(long, env = "SIKA_REQUEST_LOG_MAX_AGE")]
    request_log_max_age: Option<String>,
    /// Payment attempts one payment link takes in all [1000].
    #[arg(long, env = "SIKA_CHECKOUT_ATTEMPTS_PER_LINK")]
    checkout_attempts_per_link: Option<u32>,
    /// Payment attempts one payer address makes on one page or link in an
    /// hour [50].
    #[arg(long, env = "SIKA_CHECKOUT_ATTEMPTS_PER_ADDRESS")]
    checkout_attempts_per_address: Option<u32>,
    /// Keep both stacks' ledgers and documents in PostgreSQL
    /// (`postgres://user@host/db`) instead of the data directory; several
    /// nodes may point at one database, one writing and the rest standing by.
    #[arg(long, env = "SIKA_STORE")]
    store: Option<String>,
    /// How long a stack's writer lease lasts unless renewed, which bounds
    /// how soon a standby takes over from a writer that died [10s].
    #[arg(long, env = "SIKA_LEASE_TTL")]
    lease_ttl: Option<String>,
    /// The address payers reach the live stack at (for hosted checkout
    /// URLs), such as https://pay.example.com [http://<live-addr>].
    #[arg(long, env = "SIKA_LIVE_PUBLIC_URL")]
    live_public_url: Option<String>,
    /// The same for the sandbox stack [http://<sandbox-addr>].
    #[arg(long, env = "SIKA_SANDBOX_PUBLIC_URL")]
    sandbox_public_url: Option<String>,
    /// How `serve` writes its log on stderr: `text`, or `json` (one object
    /// a line) [text on a terminal, json otherwise].
    #[arg(long, env = "SIKA_LOG_FORMAT")]
    log_format: Option<LogFormat>,
    /// Open connections per listener [a quarter of the file descriptor
    /// limit, at most 4096].
    #[arg(long, env = "SIKA_CONNECTIONS_MAX")]
    connections_max: Option<usize>,
    /// Open connections per caller address on one listener [an eighth of
    /// --connections-max].
    #[arg(long, env = "SIKA_CONNECTIONS_PER_ADDRESS_MAX")]
    connections_per_address_max: Option<usize>,
    /// How long a request's head may take from its first byte [10s].
    #[arg(long, env = "SIKA_HEADER_TIMEOUT")]
    header_timeout: Option<String>,
    /// How long a request's body may take once the node reads it [30s].
    #[arg(long, env = "SIKA_BODY_TIMEOUT")]
    body_timeout: Option<String>,
    /// How long a connection may stay open with no request and nothing
    /// sent either way [60s].
    #[arg(long, env = "SIKA_IDLE_TIMEOUT")]
    idle_timeout: Option<String>,
    /// The most bytes of files one organization keeps on each stack, such
    /// as 64MiB or a byte count [100MiB].
    #[arg(long, env = "SIKA_FILES_BYTES_MAX")]
    files_bytes_max: Option<String>,
    /// Free space under the data directory below which the sandbox refuses
    /// writes (503) while the live stack goes on, such as 1GiB [1GiB].
    #[arg(long, env = "SIKA_DISK_RESERVE")]
    disk_reserve: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// The log on stderr: JSON lines with `timestamp`, `level` and `message`
/// at the top level (a request's fields beside them), or text, coloured
/// only on a terminal. `RUST_LOG` filters it (default `info`). Lines go
/// through a `LogPipe` (warnings and errors at once, the rest within a few
/// milliseconds): flush it before the process ends.
fn init_logging(format: Option<LogFormat>) -> log_pipe::LogPipe {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let pipe = log_pipe::LogPipe::start();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(pipe.clone());
    match format.unwrap_or(if terminal { LogFormat::Text } else { LogFormat::Json }) {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .event_format(json_log::JsonLines::new())
            .init(),
        LogFormat::Text => builder.with_ansi(terminal).init(),
    }
    pipe
}

impl NodeArgs {
    /// The flags as a `[node]` table to lay over the file's.
    fn table(&self) -> NodeTable {
        NodeTable {
            data_dir: self.data_dir.clone(),
            live_addr: self.live_addr,
            sandbox_addr: self.sandbox_addr,
            admin_addr: self.admin_addr,
            time_scale: self.time_scale,
            quote_ttl: self.quote_ttl.clone(),
            session_ttl: self.session_ttl.clone(),
            rate_limit: self.rate_limit,
            trusted_proxies: (!self.trusted_proxies.is_empty()).then(|| self.trusted_proxies.clone()),
            allow_private_webhooks: self.allow_private_webhooks.then_some(true),
            request_log_retention: self.request_log_retention,
            request_log_max_age: self.request_log_max_age.clone(),
            checkout_attempts_per_link: self.checkout_attempts_per_link,
            checkout_attempts_per_address: self.checkout_attempts_per_address,
            store: self.store.clone(),
            lease_ttl: self.lease_ttl.clone(),
            live_public_url: self.live_public_url.clone(),
            sandbox_public_url: self.sandbox_public_url.clone(),
            connections_max: self.connections_max,
            connections_per_address_max: self.connections_per_address_max,
            header_timeout: self.header_timeout.clone(),
            body_timeout: self.body_timeout.clone(),
            idle_timeout: self.idle_timeout.clone(),
            files_bytes_max: self.files_bytes_max.clone().map(sika_server::config::Size::Text),
            disk_reserve: self.disk_reserve.clone().map(sika_server::config::Size::Text),
        }
    }

    /// The file (if any), the flags over its `[node]`, every problem found.
    fn resolve(&self) -> Result<NodeConfig, Vec<String>> {
        let file = match &self.config {
            Some(path) => ConfigFile::load(path)?,
            None => ConfigFile::default(),
        };
        let node = file.node.clone().overlay(self.table());
        sika_server::configure(node, file)
    }

    fn config(&self) -> Result<NodeConfig, Failure> {
        self.resolve().map_err(|problems| {
            let file = self.config.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default();
            format!("the configuration{file} has problems:\n  {}", problems.join("\n  ")).into()
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Commands::Serve(args) => {
            let log = init_logging(args.log_format);
            let result = args.config().and_then(|config| {
                let runtime = tokio::runtime::Runtime::new()?;
                Ok(runtime.block_on(sika_server::serve(config))?)
            });
            log.flush();
            finish(result)
        }
        Commands::Init { node, json: _ } => {
            let result =
                node.config().and_then(|config| Ok(sika_server::init(&config)?)).and_then(|credentials| {
                    println!("{}", serde_json::to_string(&credentials)?);
                    Ok(())
                });
            finish(result)
        }
        Commands::Verify { config, data_dir, store } => {
            let node = file_node(config.as_deref())
                .map(|file| file.overlay(NodeTable { data_dir, store, ..NodeTable::default() }));
            match node {
                Ok(node) => verify(
                    &node.data_dir.unwrap_or_else(|| PathBuf::from(DATA_DIR_DEFAULT)),
                    node.store.as_deref(),
                ),
                Err(message) => finish(Err(message)),
            }
        }
        Commands::Footprint { config, data_dir } => stopped_node_dir(config, data_dir, footprint),
        Commands::Compact { config, data_dir } => stopped_node_dir(config, data_dir, compact),
        Commands::Backup { admin, to } => {
            finish(admin.resolve().and_then(|admin| backup(&admin, &to)).map(|line| println!("{line}")))
        }
        Commands::Config { action: ConfigAction::Check(args) } => check_config(&args),
        Commands::Org { action: OrgAction::Create { admin, name, owner_email, owner_name } } => {
            let new = sika_tui::cli::NewOrganization {
                name: &name,
                owner_email: &owner_email,
                owner_name: owner_name.as_deref(),
            };
            let created = admin.resolve().and_then(|admin| {
                Ok(sika_tui::cli::create_organization(&admin.data_dir, &admin.url, admin.token, &new)?)
            });
            finish(created.map(|answer| println!("{answer}")))
        }
        Commands::Reconcile { admin, from, to } => {
            let answer = admin.resolve().and_then(|admin| {
                Ok(sika_tui::cli::reconcile(&admin.data_dir, &admin.url, admin.token, &from, &to)?)
            });
            finish(answer.map(|answer| println!("{answer}")))
        }
        Commands::Tui { admin } => finish(
            admin.resolve().and_then(|admin| Ok(sika_tui::run(&admin.data_dir, &admin.url, admin.token)?)),
        ),
        Commands::Bench { transfers, accounts, batch, dir, store } => {
            let options = sika_engine::bench::BenchOptions { transfers, accounts, batch, seed: 1 };
            finish(bench(dir, options, store).map(|summary| println!("{summary}")))
        }
    }
}

/// `sika bench` on a new database in its own directory, removed afterwards.
fn bench(
    dir: Option<PathBuf>,
    options: sika_engine::bench::BenchOptions,
    store: Option<String>,
) -> Result<String, Failure> {
    let parent = dir.unwrap_or_else(std::env::temp_dir);
    let scratch = parent.join(format!("sika-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let postgres = store.map(|url| sika_engine::PostgresConfig {
        url,
        stack: format!("bench-{}", std::process::id()),
        holder: format!("bench-{}", std::process::id()),
        lease_ttl: std::time::Duration::from_secs(10),
    });
    let report = sika_engine::bench::run(&scratch.join("bench.redb"), options, postgres);
    let _ = std::fs::remove_dir_all(&scratch);
    match report {
        Ok(report) => Ok(report.summary(&options)),
        // The engine names the problem; the command line words it.
        Err(sika_engine::EngineError::Invalid { problem: sika_engine::Problem::BenchTooSmall, .. }) => {
            Err("the benchmark needs at least 2 accounts, 1 transfer and a batch of 1".into())
        }
        Err(e) => Err(e.into()),
    }
}

/// `sika config check`: exit 0 and one line on success, otherwise one line
/// per problem on stderr and exit 1.
fn check_config(args: &NodeArgs) -> ExitCode {
    let Some(path) = &args.config else {
        eprintln!("sika: config check needs --config FILE (or SIKA_CONFIG)");
        return ExitCode::from(2);
    };
    match args.resolve() {
        Ok(_) => {
            println!("{}: ok", path.display());
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for problem in problems {
                eprintln!("{}: {problem}", path.display());
            }
            ExitCode::FAILURE
        }
    }
}

/// `sika backup`: asked of the running node when one holds the data
/// directory (its lock says so), made here otherwise; the summary line.
fn backup(admin: &Admin, to: &std::path::Path) -> Result<String, Failure> {
    let to = std::path::absolute(to).map_err(|e| format!("cannot resolve {}: {e}", to.display()))?;
    let backup = if sika_server::node_running(&admin.data_dir)? {
        sika_tui::cli::backup(&admin.data_dir, &admin.url, admin.token.clone(), &to)?
    } else {
        sika_server::backup_offline(&admin.data_dir, &to)?
    };
    Ok(backup.summary(&admin.data_dir.display().to_string()))
}

/// Why a command failed, said on one line to the operator: whatever error
/// it came from (the node's, the store's, a file's) with its causes.
type Failure = Box<dyn std::error::Error + Send + Sync>;

fn finish(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("sika: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Prints each stack's ledger files and records by kind (`sika footprint`).
/// Runs `command` on the data directory the flags, or else the
/// configuration file, name (`./sika-data` by default).
fn stopped_node_dir(
    config: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    command: fn(&std::path::Path) -> ExitCode,
) -> ExitCode {
    match file_node(config.as_deref())
        .map(|file| file.overlay(NodeTable { data_dir, ..NodeTable::default() }))
    {
        Ok(node) => command(&node.data_dir.unwrap_or_else(|| PathBuf::from(DATA_DIR_DEFAULT))),
        Err(message) => finish(Err(message)),
    }
}

/// Runs `each` on every ledger file of `data_dir` (`live`, `sandbox`),
/// given its data directory, its name and its path; stops at its first
/// failure, and fails (2) when there is none.
fn each_ledger(
    data_dir: &std::path::Path,
    each: fn(&std::path::Path, &str, &std::path::Path) -> Result<(), ExitCode>,
) -> ExitCode {
    let mut found = 0;
    for name in ["live", "sandbox"] {
        let path = data_dir.join(format!("{name}.redb"));
        if !path.exists() {
            continue;
        }
        found += 1;
        if let Err(code) = each(data_dir, name, &path) {
            return code;
        }
    }
    if found == 0 {
        eprintln!("sika: no ledger found in {}", data_dir.display());
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

fn compact(data_dir: &std::path::Path) -> ExitCode {
    each_ledger(data_dir, |_, name, path| {
        match sika_engine::footprint::compact_path(path, &sika_server::LEDGER_STEPS) {
            Ok(done) => println!("{name}: {} bytes, {} before compacting", done.after, done.before),
            Err(e) => {
                eprintln!("sika: cannot compact {} (is the node stopped?): {e}", path.display());
                return Err(ExitCode::FAILURE);
            }
        }
        Ok(())
    })
}

fn footprint(data_dir: &std::path::Path) -> ExitCode {
    each_ledger(data_dir, |data_dir, name, path| {
        let files: Vec<(String, u64)> =
            [format!("{name}.redb"), format!("{name}.wal"), format!("{name}.1.wal")]
                .into_iter()
                .filter_map(|file| Some((file.clone(), std::fs::metadata(data_dir.join(&file)).ok()?.len())))
                .collect();
        let counted = sika_engine::footprint::footprint_path(path, &sika_server::LEDGER_STEPS);
        let footprint = match counted {
            Ok(footprint) => footprint,
            Err(e) => {
                println!("{name}: cannot read {}: {e}", path.display());
                return Err(ExitCode::FAILURE);
            }
        };
        let sizes: Vec<String> = files.iter().map(|(file, bytes)| format!("{file} {bytes}")).collect();
        println!("{name}: files (bytes, before the log was replayed) {}", sizes.join(", "));
        println!(
            "{name}: redb pages: {} leaf, {} branch; leaf bytes {} stored, {} redb metadata, {} free in pages",
            footprint.leaf_pages,
            footprint.branch_pages,
            footprint.stored_leaf_bytes,
            footprint.metadata_bytes,
            footprint.fragmented_bytes
        );
        println!("{name}: {:<36} {:>10} {:>12} {:>13}", "space", "records", "key bytes", "value bytes");
        let total = footprint.total();
        for (space, used) in footprint.spaces.iter().chain([(&"total".to_string(), &total)]) {
            println!(
                "{name}: {space:<36} {:>10} {:>12} {:>13}",
                used.records, used.key_bytes, used.value_bytes
            );
        }
        Ok(())
    })
}

/// Audits both stacks' ledgers, in the data directory's files or in the
/// PostgreSQL database `store`; exit 0 only when both are consistent.
fn verify(data_dir: &std::path::Path, store: Option<&str>) -> ExitCode {
    let mut consistent = true;
    let mut found = 0;
    for name in ["live", "sandbox"] {
        let (place, audited) = match store {
            Some(url) => {
                (format!("stack '{name}' in the database"), sika_engine::verify::verify_postgres(url, name))
            }
            None => {
                let path = data_dir.join(format!("{name}.redb"));
                let audited = match path.exists() {
                    true => sika_engine::verify::verify_path(&path, &sika_server::LEDGER_STEPS).map(Some),
                    false => Ok(None),
                };
                (path.display().to_string(), audited)
            }
        };
        match audited {
            Ok(None) => continue,
            Ok(Some(report)) => {
                println!("{name}: {}", report.summary());
                for problem in &report.problems {
                    println!("  - {problem}");
                }
                consistent &= report.is_consistent();
            }
            Err(e) => {
                println!("{name}: cannot audit {place}: {e}");
                consistent = false;
            }
        }
        found += 1;
    }
    if found == 0 {
        match store {
            Some(_) => eprintln!("sika: no ledger found in the database given by --store"),
            None => eprintln!("sika: no ledger found in {}", data_dir.display()),
        }
        return ExitCode::from(2);
    }
    if consistent { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
