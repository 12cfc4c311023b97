//! Drives the real `sika tui` in a real terminal (tmux) against a running
//! node: opens, switches tabs (the Rates tab decoding the node's answer),
//! opens a payout's timeline, creates an organization through the
//! Organizations tab's form and sees it in the audit log, quits, and checks
//! the terminal was restored (canonical mode back on).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Sandbox, cannot_run, deposit, mtn_payout};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits until the screen shows `text`; panics with the screen if not.
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(Instant::now() < deadline, "the terminal never showed {text:?}; it shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-L").arg(&self.socket).arg("kill-server").output();
    }
}

/// The Organizations tab: creates one through the form; the invitation is
/// shown until Enter, the new organization is listed by name, and the
/// Audit tab shows the action.
fn create_an_organization(tmux: &Tmux) {
    tmux.keys(&["8"]);
    tmux.wait_for("n new");
    tmux.keys(&["n"]);
    tmux.wait_for("New organization");
    for field in ["Tmux Traders", "owner@tmux-traders.example", "Tmux Owner"] {
        tmux.keys(&["-l", field]);
        tmux.keys(&["Enter"]);
    }
    tmux.wait_for("Organization created");
    let screen = tmux.wait_for("Invitation token: inv_");
    assert!(screen.contains("Tmux Traders"), "{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("n new");
    assert!(screen.contains("Tmux Traders") && screen.contains("active"), "{screen}");
    tmux.keys(&["9"]);
    tmux.wait_for("organization.create");
}

fn tmux_available() -> bool {
    Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_opens_switches_tabs_shows_a_timeline_and_restores_the_terminal() {
    if !tmux_available() {
        return cannot_run(
            "the_console_opens_switches_tabs_shows_a_timeline_and_restores_the_terminal",
            "tmux is not installed (.ci/run installs it)",
        );
    }
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "300.00").await;
    let payout = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("25.00", "tui-1")).await;
    payout.expect(201);

    let tmux = Tmux { socket: format!("sika-tui-test-{}", std::process::id()) };
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "160", "-y", "48", "bash --norc --noprofile"]);
    let command = format!(
        "{} tui --data-dir {} --admin-url {}; echo EXITED:$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon",
        env!("CARGO_BIN_EXE_sika"),
        node.data_dir().display(),
        node.admin,
    );
    tmux.keys(&[&command, "Enter"]);

    // Overview first, with what waits for the operator and both stacks' status.
    tmux.wait_for("Tab next tab");
    tmux.wait_for("awaiting operator");
    // Tab to Accounts, then Rates (read from the real node), then Activity.
    tmux.keys(&["Tab"]);
    tmux.wait_for("v verify");
    tmux.keys(&["Tab"]);
    tmux.wait_for("Units per USD");
    tmux.wait_for("spread");
    tmux.keys(&["Tab"]);
    tmux.wait_for("Enter timeline");
    // The payout is on the sandbox stack; `s` switches stacks if needed.
    std::thread::sleep(Duration::from_millis(500));
    if !tmux.screen().contains("tui-1") {
        tmux.keys(&["s"]);
    }
    tmux.wait_for("tui-1");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Payout created");
    tmux.wait_for("Funds held");
    tmux.keys(&["Escape"]);
    tmux.wait_for("Enter timeline");
    tmux.keys(&["?"]);
    tmux.wait_for("quit");
    tmux.keys(&["Escape"]);
    // An Escape followed at once by `q` reads as Alt-q: let it land first.
    std::thread::sleep(Duration::from_millis(300));
    tmux.wait_for("Enter timeline");
    create_an_organization(&tmux);
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED:");
    // stty prints `icanon` (restored) or `-icanon` (left raw) on its own line.
    let deadline = Instant::now() + Duration::from_secs(10);
    let screen = loop {
        let screen = tmux.screen();
        if screen.lines().any(|l| matches!(l.trim(), "icanon" | "-icanon")) || Instant::now() > deadline {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(screen.contains("EXITED:0"), "sika tui exited with an error:\n{screen}");
    let lines: Vec<&str> = screen.lines().map(str::trim).collect();
    assert!(lines.contains(&"icanon"), "the terminal was left in raw mode:\n{screen}");
    node.stop_and_verify();
}
