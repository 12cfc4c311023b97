//! Every tab and every detail view drawn into a `TestBackend` at 80×24 and
//! 160×48 and compared with the snapshot files in `tests/snapshots`. The
//! fake node's data is fixed, so ids and timestamps are stable as they are.

mod common;

use std::time::Duration;

use common::{Harness, Mode, char_key, key};
use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use sika_tui::Tab;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

/// Snapshots the harness's screen at both sizes as `{name}_{w}x{h}`.
fn snapshot_both(name: &str, harness: &Harness) {
    for (width, height) in SIZES {
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), harness.screen(width, height));
    }
}

fn on_tab(tab: Tab) -> Harness {
    let mut harness = Harness::new();
    let digit = char::from(b'1' + u8::try_from(tab.index()).unwrap());
    harness.press(char_key(digit));
    assert_eq!(harness.app.tab, tab);
    harness
}

#[test]
fn overview() {
    snapshot_both("overview", &Harness::new());
}

#[test]
fn accounts() {
    snapshot_both("accounts", &on_tab(Tab::Accounts));
}

#[test]
fn accounts_sandbox() {
    let mut harness = on_tab(Tab::Accounts);
    harness.press(char_key('s'));
    snapshot_both("accounts_sandbox", &harness);
}

/// A rate of each source, and a currency the stale feed left without one.
#[test]
fn rates() {
    snapshot_both("rates", &on_tab(Tab::Rates));
}

/// Snapshots hold text only: the currency without a rate must also stand
/// out in the warning colour.
#[test]
fn a_currency_without_a_rate_is_drawn_as_a_warning() {
    let harness = on_tab(Tab::Rates);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|frame| sika_tui::render(&harness.app, frame)).unwrap();
    let buffer = terminal.backend().buffer();
    let text = |y: u16| (0..80).map(|x| buffer[(x, y)].symbol()).collect::<String>();
    let row = (0..24).find(|y| text(*y).contains("unavailable (feed stale)")).expect("the XOF row");
    // Column 3, after the border and the selection marker, is the currency code.
    assert_eq!(buffer[(3, row)].symbol(), "X");
    assert_eq!(buffer[(3, row)].fg, Color::Yellow);
    let fresh = (0..24).find(|y| text(*y).contains("NGN")).unwrap();
    assert_ne!(buffer[(3, fresh)].fg, Color::Yellow, "a rate in effect is drawn plainly");
}

#[test]
fn activity() {
    snapshot_both("activity", &on_tab(Tab::Activity));
}

#[test]
fn disputes() {
    snapshot_both("disputes", &on_tab(Tab::Disputes));
}

#[test]
fn disputes_empty() {
    let mut harness = on_tab(Tab::Disputes);
    harness.press(char_key('s'));
    snapshot_both("disputes_empty", &harness);
}

#[test]
fn webhooks() {
    snapshot_both("webhooks", &on_tab(Tab::Webhooks));
}

#[test]
fn requests_on_the_sandbox_with_no_failures() {
    let mut harness = on_tab(Tab::Requests);
    harness.press(char_key('s'));
    snapshot_both("requests_empty", &harness);
}

#[test]
fn requests_lookup() {
    let mut harness = on_tab(Tab::Requests);
    harness.press(char_key('/'));
    harness.type_text(common::REQUEST_ID);
    harness.press(key(KeyCode::Enter));
    snapshot_both("requests_lookup", &harness);
}

#[test]
fn payout_timeline() {
    let mut harness = on_tab(Tab::Activity);
    // Newest first: the pending payout is the first row.
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_payout", &harness);
}

#[test]
fn collection_timeline() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('j'));
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_collection", &harness);
}

#[test]
fn order_timeline() {
    let mut harness = on_tab(Tab::Activity);
    // The order is the oldest row but one (the refund is the oldest).
    harness.press(char_key('G'));
    harness.press(char_key('k'));
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_order", &harness);
}

/// A refund waiting for the operator: its amount, payment and reason.
#[test]
fn detail_refund() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::End));
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_refund", &harness);
}

#[test]
fn dispute_thread() {
    let mut harness = on_tab(Tab::Disputes);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('j'));
    snapshot_both("detail_dispute", &harness);
}

#[test]
fn endpoint_attempts() {
    let mut harness = on_tab(Tab::Webhooks);
    harness.press(char_key('j'));
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_endpoint", &harness);
}

#[test]
fn help_overlay() {
    let mut harness = Harness::new();
    harness.press(char_key('?'));
    snapshot_both("help", &harness);
}

#[test]
fn settle_form() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('c'));
    harness.type_text("MP-99812");
    harness.press(key(KeyCode::Tab));
    harness.type_text("paid at the branch");
    snapshot_both("settle_form", &harness);
}

#[test]
fn confirm_dialog() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('K'));
    harness.press(char_key('x'));
    snapshot_both("confirm_revoke_key", &harness);
}

#[test]
fn organization_keys() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('K'));
    snapshot_both("detail_keys", &harness);
}

#[test]
fn failed_requests() {
    snapshot_both("requests_failed", &on_tab(Tab::Requests));
}

#[test]
fn search_prompt() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('/'));
    harness.type_text("inv-20");
    snapshot_both("search_prompt", &harness);
}

#[test]
fn unreachable_banner() {
    let mut harness = Harness::new();
    harness.client.set_mode(Mode::Down);
    harness.advance(Duration::from_secs(2));
    snapshot_both("banner_unreachable", &harness);
}

#[test]
fn wrong_token_banner() {
    let mut harness = Harness::new();
    harness.client.set_mode(Mode::WrongToken);
    harness.advance(Duration::from_secs(2));
    snapshot_both("banner_unauthorized", &harness);
}

#[test]
fn before_the_first_answer() {
    let app = sika_tui::App::new(common::ADMIN_URL);
    for (width, height) in SIZES {
        insta::assert_snapshot!(format!("connecting_{width}x{height}"), common::screen(&app, width, height));
    }
}

/// Every view, overlay and banner at sizes down to nothing: drawing must
/// never panic, whatever the operator does to the window.
#[test]
fn tiny_and_empty_sizes_never_panic() {
    let sizes =
        [(0, 0), (0, 10), (10, 0), (1, 1), (10, 5), (20, 3), (5, 20), (80, 1), (80, 2), (2, 80), (40, 12)];
    let mut scenes: Vec<Harness> = Tab::ALL.iter().map(|t| on_tab(*t)).collect();
    for (tab, keys) in [
        (Tab::Activity, vec![key(KeyCode::Enter)]),
        (Tab::Activity, vec![key(KeyCode::Enter), char_key('c')]),
        (Tab::Disputes, vec![key(KeyCode::Enter)]),
        (Tab::Webhooks, vec![char_key('j'), key(KeyCode::Enter)]),
        (Tab::Requests, vec![char_key('/')]),
        (Tab::Overview, vec![char_key('?')]),
        (Tab::Organizations, vec![key(KeyCode::Enter)]),
        (Tab::Organizations, vec![char_key('n')]),
        (Tab::Organizations, vec![char_key('x')]),
        (Tab::Organizations, vec![char_key('K')]),
        (Tab::Organizations, vec![char_key('K'), char_key('x')]),
        (Tab::Activity, vec![key(KeyCode::Enter), char_key('f'), char_key('z')]),
        (Tab::Audit, vec![char_key('n')]),
    ] {
        let mut harness = on_tab(tab);
        for k in keys {
            harness.press(k);
        }
        scenes.push(harness);
    }
    let mut down = Harness::new();
    down.client.set_mode(Mode::Down);
    down.advance(Duration::from_secs(2));
    scenes.push(down);
    scenes.push(on_tab(Tab::Requests));
    let last = scenes.last_mut().unwrap();
    last.press(char_key('/'));
    last.type_text(common::REQUEST_ID);
    last.press(key(KeyCode::Enter));
    for _ in 0..500 {
        last.press(char_key('j'));
    }
    for scene in &scenes {
        for (width, height) in sizes {
            let _ = scene.screen(width, height);
        }
    }
}

#[test]
fn organizations() {
    snapshot_both("organizations", &on_tab(Tab::Organizations));
}

#[test]
fn organization_members() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('j'));
    snapshot_both("detail_organization", &harness);
}

#[test]
fn new_organization_form() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('n'));
    harness.fill_form(&["Kumasi Traders", "not-an-email", "Yaw Asante"]);
    // The node refused it: the form stays with what was typed and why.
    snapshot_both("organization_form_refused", &harness);
}

#[test]
fn created_organization_shows_its_invitation() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('n'));
    harness.fill_form(&["Kumasi Traders", "yaw@kumasi.example", "Yaw Asante"]);
    snapshot_both("organization_created", &harness);
}

/// The Audit tab shows the newest emails of the outbox with their status
/// and the server's last refusal.
#[test]
fn audit_tab_lists_the_email_outbox() {
    let harness = on_tab(Tab::Audit);
    let screen = harness.screen(160, 48);
    for expected in ["Emails", "payout_failed", "ama@shop.example", "retrying", "451 try later", "suppressed"]
    {
        assert!(screen.contains(expected), "{expected} in\n{screen}");
    }
}

#[test]
fn audit_log() {
    snapshot_both("audit", &on_tab(Tab::Audit));
}

#[test]
fn audit_log_second_page() {
    let mut harness = on_tab(Tab::Audit);
    harness.press(char_key('n'));
    snapshot_both("audit_page_2", &harness);
}

#[test]
fn system_accounts() {
    let mut harness = on_tab(Tab::Accounts);
    harness.press(char_key('o'));
    snapshot_both("system_accounts", &harness);
}

#[test]
fn system_account_entries() {
    let mut harness = on_tab(Tab::Accounts);
    harness.press(char_key('o'));
    harness.press(key(KeyCode::Enter));
    snapshot_both("detail_ledger_account", &harness);
}

#[test]
fn reconciliation() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('R'));
    snapshot_both("reconciliation", &harness);
}

#[test]
fn search_results() {
    let mut harness = Harness::new();
    harness.press(char_key('/'));
    harness.type_text("0");
    harness.press(key(KeyCode::Enter));
    snapshot_both("search_results", &harness);
}
