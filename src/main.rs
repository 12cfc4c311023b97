//! `sika`: the command line. It only parses arguments and dispatches into
//! the crates: `sika-server` for `serve` and `init`, `sika-engine` for
//! `verify`, `sika-tui` for `tui`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sika_server::NodeConfig;
use sika_server::config::parse_duration;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "sika", version, about = "A self-hosted payments node")]
struct Cli {
    #[command(subcommand)]
    command: Commands,
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
    /// Check a data directory offline: balances, double entry, hash chain, idempotency index.
    Verify {
        #[arg(long, env = "SIKA_DATA_DIR", default_value = "./sika-data")]
        data_dir: PathBuf,
    },
    /// The operator console, over the admin API of a running node.
    Tui {
        #[arg(long, env = "SIKA_DATA_DIR", default_value = "./sika-data")]
        data_dir: PathBuf,
        #[arg(long, env = "SIKA_ADMIN_ADDR", default_value = "127.0.0.1:8082")]
        admin_addr: SocketAddr,
        /// The admin API's base URL; overrides --admin-addr.
        #[arg(long)]
        admin_url: Option<String>,
        /// The operator token; read from <data-dir>/admin-token when absent.
        #[arg(long)]
        token: Option<String>,
    },
}

#[derive(Args, Clone)]
struct NodeArgs {
    #[arg(long, env = "SIKA_DATA_DIR", default_value = "./sika-data")]
    data_dir: PathBuf,
    #[arg(long, env = "SIKA_LIVE_ADDR", default_value = "127.0.0.1:8080")]
    live_addr: SocketAddr,
    #[arg(long, env = "SIKA_SANDBOX_ADDR", default_value = "127.0.0.1:8081")]
    sandbox_addr: SocketAddr,
    #[arg(long, env = "SIKA_ADMIN_ADDR", default_value = "127.0.0.1:8082")]
    admin_addr: SocketAddr,
    /// Multiplies every scheduled delay; 0.001 runs a 30 s delay in 30 ms.
    #[arg(long, env = "SIKA_TIME_SCALE", default_value_t = 1.0)]
    time_scale: f64,
    /// How long a conversion quote can be executed (not scaled).
    #[arg(long, env = "SIKA_QUOTE_TTL", default_value = "30s", value_parser = parse_duration)]
    quote_ttl: std::time::Duration,
    /// Requests per second per API key.
    #[arg(long, env = "SIKA_RATE_LIMIT", default_value_t = 100)]
    rate_limit: u32,
    /// A proxy whose X-Forwarded-For header is believed (repeatable).
    #[arg(long = "trusted-proxy", env = "SIKA_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Vec<IpAddr>,
    /// Let live webhook endpoints point at loopback and private addresses.
    #[arg(long, env = "SIKA_ALLOW_PRIVATE_WEBHOOKS")]
    allow_private_webhooks: bool,
    /// Request log entries kept per stack.
    #[arg(long, env = "SIKA_REQUEST_LOG_RETENTION", default_value_t = 100_000)]
    request_log_retention: u64,
    /// The address payers reach the live stack at (for hosted checkout
    /// URLs), such as https://pay.example.com; default http://<live-addr>.
    #[arg(long, env = "SIKA_LIVE_PUBLIC_URL")]
    live_public_url: Option<String>,
    /// The same for the sandbox stack; default http://<sandbox-addr>.
    #[arg(long, env = "SIKA_SANDBOX_PUBLIC_URL")]
    sandbox_public_url: Option<String>,
}

impl NodeArgs {
    fn config(&self) -> Result<NodeConfig, String> {
        if !self.time_scale.is_finite() || self.time_scale <= 0.0 {
            return Err("--time-scale must be a positive number".into());
        }
        if self.rate_limit == 0 {
            return Err("--rate-limit must be at least 1".into());
        }
        let mut config = NodeConfig::for_data_dir(self.data_dir.clone());
        config.live_addr = self.live_addr;
        config.sandbox_addr = self.sandbox_addr;
        config.admin_addr = self.admin_addr;
        config.time_scale = self.time_scale;
        config.quote_ttl = self.quote_ttl;
        config.rate_limit = self.rate_limit;
        config.trusted_proxies = self.trusted_proxies.clone();
        config.request_log_retention = self.request_log_retention.max(1);
        config.allow_private_webhooks = self.allow_private_webhooks;
        for (name, url) in
            [("--live-public-url", &self.live_public_url), ("--sandbox-public-url", &self.sandbox_public_url)]
        {
            if let Some(url) = url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return Err(format!("{name} must start with http:// or https://"));
            }
        }
        config.live_public_url = self.live_public_url.as_ref().map(|u| u.trim_end_matches('/').to_string());
        config.sandbox_public_url =
            self.sandbox_public_url.as_ref().map(|u| u.trim_end_matches('/').to_string());
        Ok(config)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Commands::Serve(args) => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
                )
                .with_writer(std::io::stderr)
                .init();
            let result = args.config().and_then(|config| {
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                runtime.block_on(sika_server::serve(config))
            });
            finish(result)
        }
        Commands::Init { node, json: _ } => {
            let result =
                node.config().and_then(|config| sika_server::init(&config)).and_then(|credentials| {
                    println!("{}", serde_json::to_string(&credentials).map_err(|e| e.to_string())?);
                    Ok(())
                });
            finish(result)
        }
        Commands::Verify { data_dir } => verify(&data_dir),
        Commands::Tui { data_dir, admin_addr, admin_url, token } => {
            let url = admin_url.unwrap_or_else(|| format!("http://{admin_addr}"));
            finish(sika_tui::run(&data_dir, &url, token))
        }
    }
}

fn finish(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("sika: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Audits both stacks' ledgers; exit 0 only when both are consistent.
fn verify(data_dir: &std::path::Path) -> ExitCode {
    let mut consistent = true;
    let mut found = 0;
    for name in ["live", "sandbox"] {
        let path = data_dir.join(format!("{name}.redb"));
        if !path.exists() {
            continue;
        }
        found += 1;
        match sika_engine::verify::verify_path(&path) {
            Ok(report) => {
                println!("{name}: {}", report.summary());
                for problem in &report.problems {
                    println!("  - {problem}");
                }
                consistent &= report.is_consistent();
            }
            Err(e) => {
                println!("{name}: cannot audit {}: {e}", path.display());
                consistent = false;
            }
        }
    }
    if found == 0 {
        eprintln!("sika: no ledger found in {}", data_dir.display());
        return ExitCode::from(2);
    }
    if consistent { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
