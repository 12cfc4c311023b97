//! The node's own books over the admin API and in the console: the system
//! accounts a deposit and a payout touch, an account's journal entries a
//! page at a time, and the refusals of bad paging.

use crossterm::event::KeyCode;
use serde_json::{Value, json};
use sika_tui::{Detail, Tab};

use crate::support::console::Console;
use crate::support::{Sandbox, deposit, mtn_payout};

fn account<'a>(accounts: &'a Value, id: &str) -> &'a Value {
    accounts["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|a| a["id"] == id))
        .unwrap_or_else(|| panic!("no {id} in {accounts}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_accounts_and_their_entries() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let admin = node.creds.admin_token.clone();
    deposit(&api, &node, &key, "GHS", "300.00").await;
    deposit(&api, &node, &key, "GHS", "20.00").await;

    // The world's entries, newest first, one to a page.
    let entries = |query: &str| {
        node.admin_url(&format!("/admin/v1/sandbox/ledger/accounts/sys_world_GHS/entries{query}"))
    };
    let first = api.get(&entries("?limit=1"), &admin).await;
    first.expect(200);
    assert_eq!(first.body["account"]["kind"], "world");
    assert_eq!(first.body["data"][0]["amount"], "20.00");
    assert_eq!(first.body["data"][0]["side"], "debit");
    assert_eq!(first.body["hasMore"], true);
    assert_eq!(first.body["scanLimitReached"], false);
    let cursor = first.body["nextCursor"].as_str().expect("a cursor").to_string();
    let second = api.get(&entries(&format!("?limit=1&cursor={cursor}")), &admin).await;
    second.expect(200);
    assert_eq!(second.body["data"][0]["amount"], "300.00", "the older deposit: {}", second.body);
    assert!(second.body["data"][0]["seq"].as_u64() < first.body["data"][0]["seq"].as_u64());
    let all = api.get(&entries(""), &admin).await;
    all.expect(200);
    assert_eq!(all.body["data"].as_array().unwrap().len(), 2, "{}", all.body);
    assert_eq!(all.body["hasMore"], false);

    // A payout holds its fee for the node and its amount in rail clearing.
    api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("25.00", "books-1")).await.expect(201);
    let accounts = api.get(&node.admin_url("/admin/v1/sandbox/ledger/system-accounts"), &admin).await;
    accounts.expect(200);
    let world = account(&accounts.body, "sys_world_GHS");
    assert_eq!(world["kind"], "world");
    assert_eq!(world["debitsPosted"], "320.00", "what came in from outside: {world}");
    let fees = account(&accounts.body, "sys_fee_revenue_GHS");
    assert_eq!(fees["kind"], "fee_revenue");
    let earned = [&fees["creditsPending"], &fees["creditsPosted"]];
    assert!(earned.iter().any(|a| *a != "0.00"), "the payout's fee is the node's: {fees}");
    assert_eq!(account(&accounts.body, "sys_rail_clearing_GHS")["kind"], "rail_clearing");
    let live = api.get(&node.admin_url("/admin/v1/live/ledger/system-accounts"), &admin).await;
    live.expect(200);
    assert_eq!(live.body["data"], json!([]), "nothing touched the live stack's books");

    // Bad paging and unknown accounts are refused with the spec's error.
    api.get(&entries("?limit=0"), &admin).await.expect_invalid("limit");
    api.get(&entries("?cursor=forged"), &admin).await.expect_invalid("cursor");
    api.get(&entries("?colour=red"), &admin).await.expect_invalid("colour");
    let missing = node.admin_url("/admin/v1/sandbox/ledger/accounts/sys_world_XYZ/entries");
    api.get(&missing, &admin).await.expect_error(404, "not_found");
    api.get(&node.admin_url("/admin/v1/mars/ledger/system-accounts"), &admin)
        .await
        .expect_error(404, "not_found");

    // The console shows the same books: `o` on the Accounts tab, Enter for
    // the world's entries.
    let url = node.admin.clone();
    let screen = tokio::task::spawn_blocking(move || console_books(&url, &admin)).await.expect("console");
    assert!(screen.contains("sys_world_GHS") && screen.contains("-300.00"), "{screen}");
}

/// Opens the sandbox's system accounts and the world's entries in the
/// console; returns the entries' screen.
fn console_books(url: &str, token: &str) -> String {
    let mut console = Console::new(url, token);
    console.press(KeyCode::Char('2'));
    console.press(KeyCode::Char('s'));
    console.press(KeyCode::Char('o'));
    assert_eq!(console.app.tab, Tab::Accounts);
    let world =
        console.app.system_account_rows().iter().position(|a| a.id == "sys_world_GHS").expect("listed");
    for _ in 0..world {
        console.press(KeyCode::Down);
    }
    console.press(KeyCode::Enter);
    let Some(Detail::LedgerAccount { entries, .. }) = &console.app.detail else { panic!("entries open") };
    // The two deposits, and the payout's delivery once the sandbox rail
    // has delivered it.
    let count = entries.data.as_ref().map_or(0, |p| p.data.len());
    assert!((2..=3).contains(&count), "{entries:?}");
    console.screen()
}
