//! What a newcomer met in their first hour (issue 30, items 8 to 14): a
//! method's fee shown before paying, every field a method lists taken by a
//! payout, the sandbox keeping its reference rates beside a configured one,
//! a live bank payout naming its bank, timelines that say who did what,
//! and the operator's commands reading the node from one configuration
//! file, with the bootstrap secrets kept out of a service's journal.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

fn options(config: &str) -> Options {
    Options { config: Some(config.to_string()), ..Options::unthrottled() }
}

/// The titles of a movement's timeline, in order.
fn titles(movement: &Value) -> Vec<String> {
    let entries = movement["timeline"].as_array().expect("a timeline");
    entries.iter().map(|e| e["title"].as_str().unwrap_or_default().to_string()).collect()
}

/// The timeline entry titled `title`.
fn entry<'a>(movement: &'a Value, title: &str) -> &'a Value {
    let entries = movement["timeline"].as_array().expect("a timeline");
    entries.iter().find(|e| e["title"] == title).unwrap_or_else(|| panic!("no '{title}' in {movement}"))
}

/// A fee as the capabilities' schedule gives it, in minor units at two
/// digits: `fixed + percent % of amount`, rounded half up.
fn fee_from_schedule(fees: &Value, amount_minor: i128) -> i128 {
    let fixed = minor(fees["fixed"].as_str().unwrap(), 2);
    let percent_hundredths = minor(fees["percent"].as_str().unwrap(), 2);
    fixed + (amount_minor * percent_hundredths + 5_000) / 10_000
}

/// Item 8: `fees` on a method, matching what its payouts pay; every input
/// field a method lists is taken under the same key in the payout's `to`.
#[tokio::test]
async fn a_method_shows_the_fee_its_payouts_pay_and_payouts_take_every_field_it_lists() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "500.00").await;
    let r = api.get(&node.sandbox_url("/v1/capabilities/GH/mtn_gh"), &key).await;
    r.expect(200);
    let mtn = r.body["method"].clone();
    assert_eq!(mtn["fees"], json!({ "fixed": "1.00", "percent": "1.00", "currency": "GHS" }), "{mtn}");
    // 3.33 GHS: 1.00 + 1 % of 3.33 = 1.0333, rounded half up to 1.03.
    for (i, amount) in ["3.33", "1.49", "25.00", "10.05"].into_iter().enumerate() {
        let r =
            api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout(amount, &format!("fee-{i}"))).await;
        r.expect(201);
        let expected = fee_from_schedule(&mtn["fees"], minor(amount, 2));
        assert_eq!(
            minor(r.body["payout"]["fee"]["amount"].as_str().unwrap(), 2),
            expected,
            "{amount}: {}",
            r.text
        );
    }
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("3.33", "fee-333")).await;
    assert_eq!(r.body["payout"]["fee"]["amount"], "1.03");

    // Every listed field, filled as a form would from `fields`, is taken.
    for (country, code, account) in [("GH", "mtn_gh", "+233241234567"), ("GH", "bank_gh", "1234567890")] {
        let r = api.get(&node.sandbox_url(&format!("/v1/capabilities/{country}/{code}")), &key).await;
        r.expect(200);
        let mut to = json!({ "code": code });
        for field in r.body["method"]["fields"].as_array().unwrap() {
            let key_name = field["key"].as_str().unwrap();
            let value = match key_name {
                "accountNumber" => json!(account),
                "accountName" => json!("Ama Mensah"),
                _ => field["options"][0]["value"].clone(),
            };
            assert!(!value.is_null(), "{field}");
            to[key_name] = value;
        }
        assert!(to.get("accountName").is_some(), "{code} lists accountName: {to}");
        let body = json!({ "from": { "currency": "GHS", "amount": "20.00" }, "to": to,
                           "externalReference": format!("fields-{code}") });
        let r = api.post(&node.sandbox_url("/v1/payouts"), &key, body).await;
        r.expect(201);
    }
}

/// Item 12: a rate in the file replaces that currency's reference rate on
/// the sandbox and leaves the others; live still has only what it was given.
#[tokio::test]
async fn the_sandbox_keeps_reference_rates_for_currencies_the_file_does_not_set() {
    let node = Node::start(options("[rates.usd]\nGHS = \"16.00\"\n"));
    let api = Api::new();
    let sandbox = node.creds.sandbox_key.clone();
    let r = api.get(&node.sandbox_url("/v1/rates/USD/UGX"), &sandbox).await;
    r.expect(200);
    assert!(!r.body["rate"]["midRate"].as_str().unwrap_or_default().is_empty(), "{}", r.text);
    let r = api.get(&node.sandbox_url("/v1/rates/USD/GHS"), &sandbox).await;
    r.expect(200);
    assert_eq!(r.body["rate"]["midRate"], "16", "the file's rate wins: {}", r.text);
    let r = api.get(&node.admin_url("/admin/v1/sandbox/rates"), &node.creds.admin_token).await;
    assert_eq!(r.body["rates"]["rates"]["GHS"]["source"], "config");
    assert_eq!(r.body["rates"]["rates"]["UGX"]["source"], "builtin");
    let live = node.creds.live_key.clone();
    api.get(&node.live_url("/v1/rates/USD/GHS"), &live).await.expect(200);
    api.get(&node.live_url("/v1/rates/USD/UGX"), &live).await.expect_error(503, "rates_unavailable");
}

/// Item 13: with no connector, the operator pays a live bank payout by
/// hand, so it must name the bank; nothing is held for a refused one.
#[tokio::test]
async fn a_live_bank_payout_without_a_bank_code_is_refused_naming_it() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let payout = |to: Value, reference: &str| json!({ "from": { "currency": "NGN", "amount": "5000.00" }, "to": to, "externalReference": reference });
    let url = node.live_url("/v1/payouts");
    let r =
        api.post(&url, &key, payout(json!({ "code": "bank_ng", "accountNumber": "0123456789" }), "nb")).await;
    r.expect_invalid("to.bankCode");
    assert!(r.body["message"].as_str().unwrap_or_default().contains("058"), "names the options: {}", r.text);
    let order = json!({
        "from": { "method": "bank_transfer", "currency": "NGN", "amount": "6000.00" },
        "to": { "code": "bank_ng", "accountNumber": "0123456789" },
        "externalReference": "no-bank-order",
    });
    api.post(&node.live_url("/v1/orders"), &key, order).await.expect_invalid("to.bankCode");
    // Named, it passes validation and meets the (empty) balance.
    let to = json!({ "code": "bank_ng", "accountNumber": "0123456789", "bankCode": "058" });
    api.post(&url, &key, payout(to, "with-bank")).await.expect_error(422, "insufficient_funds");
    let r = api.get(&url, &key).await;
    r.expect(200);
    assert_eq!(r.body["data"], json!([]), "nothing was created");
    // The sandbox stays lenient: its simulated bank needs no code.
    let sandbox = node.creds.sandbox_key.clone();
    deposit(&api, &node, &sandbox, "NGN", "10000.00").await;
    let to = json!({ "code": "bank_ng", "accountNumber": "0123456789" });
    api.post(&node.sandbox_url("/v1/payouts"), &sandbox, payout(to, "sandbox")).await.expect(201);
}

/// Item 14: what the operator settles by hand reads as the operator's, not
/// a provider's.
#[tokio::test]
async fn timelines_say_the_operator_settled_what_the_operator_settled() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let admin = node.creds.admin_token.clone();
    let r = api.post(&node.live_url("/v1/collections"), &key, mtn_collection("300.00", "fund")).await;
    r.expect(201);
    let collection = r.body["collection"].clone();
    assert!(!titles(&collection).contains(&"Prompt sent".to_string()), "no prompt was sent: {collection}");
    assert_eq!(entry(&collection, "Waiting for the operator")["kind"], "operator");
    let id = collection["id"].as_str().unwrap();
    let r = api
        .call(
            "POST",
            &node.admin_url(&format!("/admin/v1/live/collections/{id}/complete")),
            Some(&admin),
            None,
        )
        .await;
    r.expect(200);
    let collection = r.body["collection"].clone();
    assert_eq!(entry(&collection, "Payment confirmed by the operator")["kind"], "operator");
    assert!(!titles(&collection).contains(&"Payer approved".to_string()), "{collection}");

    for (reference, action, title) in
        [("paid", "complete", "Settled by the operator"), ("unpaid", "fail", "Failed by the operator")]
    {
        let r = api.post(&node.live_url("/v1/payouts"), &key, mtn_payout("20.00", reference)).await;
        r.expect(201);
        let payout = r.body["payout"].clone();
        assert_eq!(entry(&payout, "Waiting for the operator")["kind"], "operator", "{payout}");
        assert!(!titles(&payout).contains(&"Sent to rail".to_string()), "{payout}");
        let id = payout["id"].as_str().unwrap();
        let url = node.admin_url(&format!("/admin/v1/live/payouts/{id}/{action}"));
        let r = api.call("POST", &url, Some(&admin), None).await;
        r.expect(200);
        let payout = r.body["payout"].clone();
        assert_eq!(entry(&payout, title)["kind"], "operator", "{payout}");
        let provider: Vec<&Value> =
            payout["timeline"].as_array().unwrap().iter().filter(|e| e["kind"] == "provider").collect();
        assert!(provider.is_empty(), "no provider took part: {payout}");
        let r = api.get(&node.live_url(&format!("/v1/payouts/{id}")), &key).await;
        assert_eq!(r.body["payout"]["timeline"], payout["timeline"], "the GET shows the same");
    }
}

/// Item 14: a sandbox checkout paid in USDC on Base: the session's address
/// is the node's, and the collection's timeline names no address as the
/// payer's and promises no prompt.
#[tokio::test]
async fn a_checkout_crypto_collection_does_not_read_as_coming_from_our_address() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let sandbox = node.creds.sandbox_key.clone();
    let page = json!({ "currency": "NGN", "title": "Crypto", "allowedMethods": ["crypto"],
                       "allowedCryptoAssets": ["USDC"] });
    let r = api.post(&node.sandbox_url("/v1/payment-links"), &sandbox, page).await;
    r.expect(201);
    let link = r.body["paymentLink"]["id"].as_str().unwrap().to_string();
    let url = node.sandbox_url(&format!("/pay/{link}/sessions"));
    let r = api
        .post_anonymous(
            &url,
            json!({ "amount": "1000.00", "method": "crypto", "asset": "USDC", "chain": "base" }),
        )
        .await;
    r.expect(201);
    let session = r.body["session"]["id"].as_str().unwrap().to_string();
    let ours = r.body["session"]["instructions"]["address"].as_str().unwrap().to_string();
    let r = api.get(&node.sandbox_url("/v1/collections?limit=100"), &sandbox).await;
    r.expect(200);
    let collection = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["externalReference"] == session.as_str())
        .cloned();
    let collection = collection.unwrap_or_else(|| panic!("no collection for {session}: {}", r.text));
    let text = collection["timeline"].to_string();
    assert!(!text.contains(&ours), "the node's own address is not the payer's: {text}");
    assert!(
        !entry(&collection, "Collection created")["detail"].as_str().unwrap().contains(" from "),
        "{text}"
    );
    assert!(!titles(&collection).contains(&"Prompt sent".to_string()), "no prompt for crypto: {text}");
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// A node's configuration file naming its data directory and addresses,
/// the example configuration's tables after them.
fn node_file(dir: &Path) -> (std::path::PathBuf, SocketAddr) {
    let admin = free_addr();
    let node = format!(
        "[node]\ndata_dir = \"{}\"\nlive_addr = \"{}\"\nsandbox_addr = \"{}\"\nadmin_addr = \"{admin}\"\ntime_scale = 0.001\n",
        dir.join("data").display(),
        free_addr(),
        free_addr(),
    );
    let path = dir.join("sika.toml");
    std::fs::write(&path, EXAMPLE_CONFIG.replacen("[node]\n", &node, 1)).unwrap();
    (path, admin)
}

/// `sika` with no `SIKA_*` variable from this process's environment.
fn sika(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sika"));
    command.args(args);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SIKA_")) {
        command.env_remove(k);
    }
    command
}

fn run(args: &[&str]) -> Output {
    sika(args).stdin(Stdio::null()).output().expect("sika runs")
}

#[track_caller]
fn succeeded(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    stdout
}

fn wait_for_port(addr: SocketAddr, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(child.try_wait().unwrap().is_none(), "serve exited");
        assert!(Instant::now() < deadline, "the node did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn terminate(mut child: Child) {
    // SAFETY: plain syscall on a child this test spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "serve stopped with {status}");
}

fn tmux_available() -> bool {
    let available = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    assert!(available || std::env::var_os("CI").is_none(), "tmux is required in CI (.ci/run installs it)");
    available
}

/// A tmux server of one window for one test, killed when dropped.
struct Terminal(String);

impl Terminal {
    fn open(name: &str) -> Terminal {
        let terminal = Terminal(format!("sika-{name}-{}", std::process::id()));
        terminal.tmux(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "50", "bash --norc --noprofile"]);
        terminal
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-L").arg(&self.0).args(args).output().expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.tmux(&["capture-pane", "-p", "-J", "-t", "t"]);
            if screen.contains(text) {
                return screen;
            }
            assert!(Instant::now() < deadline, "the terminal never showed {text:?}:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-L").arg(&self.0).arg("kill-server").output();
    }
}

/// Items 10 and 11, as processes: a node started from a file alone, off a
/// terminal, leaves its credentials in `bootstrap.json` (0600) and logs
/// only the path; `org create`, `backup`, `tui`, `verify`, `init` and
/// `config check` find the node from `--config` alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_finds_the_node_from_its_configuration_file() {
    if embedded_store().is_none() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let (file, admin) = node_file(temp.path());
    let file_arg = file.to_str().unwrap();
    succeeded(&run(&["config", "check", "--config", file_arg]));

    let (stdout, stderr) = (temp.path().join("stdout"), temp.path().join("stderr"));
    let mut serve = sika(&["serve", "--config", file_arg])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    wait_for_port(admin, &mut serve);
    let bootstrap = temp.path().join("data").join("bootstrap.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&bootstrap).expect("bootstrap.json is written").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let credentials: Value = serde_json::from_str(&std::fs::read_to_string(&bootstrap).unwrap()).unwrap();
    let live_key = credentials["liveKey"].as_str().unwrap().to_string();
    let admin_token = credentials["adminToken"].as_str().unwrap().to_string();
    assert!(live_key.starts_with("sk_live_") && admin_token.starts_with("adm_"), "{credentials}");
    for name in ["organizationId", "sandboxKey", "ownerSessionToken"] {
        assert!(credentials[name].is_string(), "the same JSON as sika init: {credentials}");
    }
    // The node's log goes through a pipe and its own thread, so its line
    // may land a moment after the port opens on a busy machine.
    let read_log = || std::fs::read_to_string(&stderr).unwrap() + &std::fs::read_to_string(&stdout).unwrap();
    let log = eventually("the log to name bootstrap.json", Duration::from_secs(10), || {
        let log = read_log();
        std::future::ready(log.contains(bootstrap.to_str().unwrap()).then_some(log))
    })
    .await;
    for secret in [live_key.as_str(), admin_token.as_str(), credentials["sandboxKey"].as_str().unwrap()] {
        assert!(!log.contains(secret), "no secret in the output or log: {log}");
    }

    // The operator's commands, given the file alone.
    let created = succeeded(&run(&[
        "org",
        "create",
        "--config",
        file_arg,
        "--name",
        "Configured Co",
        "--owner-email",
        "owner@configured.example",
    ]));
    assert!(created.contains("Configured Co") && created.contains("inv_"), "{created}");
    let copy = temp.path().join("backup");
    let summary = succeeded(&run(&["backup", "--config", file_arg, "--to", copy.to_str().unwrap()]));
    assert!(copy.join("live.redb").exists(), "{summary}");
    if tmux_available() {
        let terminal = Terminal::open("tui-config");
        let command = format!("{} tui --config {file_arg}; echo EXITED:$?", env!("CARGO_BIN_EXE_sika"));
        terminal.tmux(&["send-keys", "-t", "t", &command, "Enter"]);
        terminal.wait_for("Tab next tab");
        std::thread::sleep(Duration::from_millis(300));
        terminal.tmux(&["send-keys", "-t", "t", "q"]);
        // The typed command shows `EXITED:$?`; only the exit prints a digit.
        terminal.wait_for("EXITED:0");
    }
    terminate(serve);

    let verified = succeeded(&run(&["verify", "--config", file_arg]));
    assert!(verified.contains("live:") && verified.contains("sandbox:"), "{verified}");
    let again = run(&["init", "--config", file_arg, "--json"]);
    assert!(!again.status.success());
    let message = String::from_utf8_lossy(&again.stderr);
    assert!(message.contains("already initialised") && message.contains("data"), "{message}");
    // A flag still wins over the file.
    let elsewhere = temp.path().join("elsewhere");
    let r = run(&["verify", "--config", file_arg, "--data-dir", elsewhere.to_str().unwrap()]);
    assert!(!r.status.success(), "no ledger in the flag's directory");
    assert!(String::from_utf8_lossy(&r.stderr).contains("elsewhere"));
}

/// Item 11 on a terminal: the first start prints the credentials there and
/// writes no file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_on_a_terminal_prints_the_credentials_and_writes_no_file() {
    if embedded_store().is_none() || !tmux_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let (file, admin) = node_file(temp.path());
    let terminal = Terminal::open("serve-terminal");
    let command = format!("RUST_LOG=warn {} serve --config {}", env!("CARGO_BIN_EXE_sika"), file.display());
    terminal.tmux(&["send-keys", "-t", "t", &command, "Enter"]);
    let screen = terminal.wait_for("\"adminToken\":\"adm_");
    assert!(screen.contains("\"liveKey\":\"sk_live_"), "{screen}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&admin, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "the node did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!temp.path().join("data").join("bootstrap.json").exists(), "a terminal gets them, not a file");
    terminal.tmux(&["send-keys", "-t", "t", "C-c"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&admin, Duration::from_millis(200)).is_ok() {
        assert!(Instant::now() < deadline, "the node did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Item 9: the document a merchant starts from lists the scopes and shows
/// an example of every request body; an unknown scope's refusal lists the
/// valid ones; payout ids look as the README says.
#[tokio::test]
async fn the_document_lists_scopes_and_examples_and_a_bad_scope_names_the_good_ones() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let document = document();
    let scopes = &document["components"]["schemas"]["CreateApiKey"]["properties"]["scopes"]["items"]["enum"];
    let listed: Vec<&str> = scopes.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        listed.contains(&"*") && listed.contains(&"payouts:write") && listed.contains(&"rates:read"),
        "{scopes}"
    );
    let example = &document["components"]["schemas"]["CreatePayout"]["examples"][0];
    assert!(example["to"]["accountNumber"].is_string(), "{example}");

    let session = node.creds.owner_session.clone();
    let r = api
        .post(&node.sandbox_url("/v1/keys"), &session, json!({ "name": "typo", "scopes": ["payout:write"] }))
        .await;
    r.expect_invalid("scopes[0]");
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(message.contains("payouts:write") && message.contains("capabilities:read"), "{}", r.text);
    let allowed: Vec<&str> =
        r.body["details"]["allowed"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(allowed, listed, "details.allowed is the document's list");
    // The example of a payout is one the node takes, and its id is pay_ghs_….
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, example.clone()).await;
    r.expect(201);
    assert!(r.body["payout"]["id"].as_str().unwrap().starts_with("pay_ghs_"), "{}", r.text);
    assert!(r.headers.get("sika-version").is_some(), "every answer names its version");
}
