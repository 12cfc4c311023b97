//! Format versions over the real binary: a data directory written by the
//! release before format versions (the committed fixture, made by
//! `tests/fixtures/make-format-fixture.py` with that release's binary and
//! left behind by a SIGKILL) opens, is upgraded, serves what it held and
//! verifies; a directory written by a newer format is refused with both
//! versions named, and nothing in it is touched; a ledger whose jobs
//! format 1 stored (whole commands) is upgraded to format 2 (job kinds) and
//! its jobs still run; and an identity database whose members have no
//! password and whose sessions no expiry (format 2) is upgraded to format 3,
//! its sessions still work and its members recover their accounts; and a
//! data directory written by format 3 (committed fixture, made with that
//! release's binary and `--checkout`) is upgraded to format 4, where each
//! payment link's totals are a tally on the ledger, and its links show the
//! totals they showed; and a
//! ledger whose payouts, orders and events have destinations with no bank
//! code (formats 3 and 4) is upgraded to format 5 and serves them as before;
//! and a ledger whose payouts, collections and orders are documents
//! (format 5) is upgraded to format 6, serves them as before, and its
//! pending movements (in the index of open movements it gains) settle; and
//! a ledger whose payout events hold whole payouts (format 8 and earlier)
//! is upgraded to format 9, where they hold marks of their payouts, and
//! serves every event as before; and a ledger whose balance changes are
//! keyed by account (formats 7 to 9) is upgraded to format 10, where they
//! are keyed by journal number and chained, and shows the same balance
//! transactions, statements and balances at every instant; and a ledger
//! whose transfers are stored whole beside their journal entries (format
//! 10 and earlier) is upgraded to format 11, where each is stored once,
//! and its holds still settle; and a request log that kept its order of
//! writing in a table of its own (format 11 and earlier) is upgraded to
//! format 12, where its entries are found and trimmed in the order of
//! their ids; and every ledger laid out as an older format here holds
//! journal entries with the hash of the entry before (formats 12 and
//! earlier), which the upgrade to format 13 leaves out; and a ledger whose
//! journal entries name their accounts as text (format 13 and earlier) is
//! upgraded to format 14, where they are stored compactly, reads the same
//! and its holds still settle; and a ledger with a reference under every
//! transfer's id (format 14 and earlier) is upgraded to format 15, where
//! only holds keep theirs, and its transfers and holds are still found;
//! and a ledger whose payouts are stored whole (format 17 and earlier) is
//! upgraded to format 18, where each stores the timeline lines that repeat
//! its own fields as marks, and its payouts and their events (as formats 9
//! to 17 stored them) read the same and settle.

use std::path::{Path, PathBuf};

use crate::support::*;
use redb::{ReadableDatabase, ReadableTable};
use serde_json::{Value, json};
use sika_engine::format::{
    format5, format8, format9, format10, format12, format13, format14, format15, format16, format17,
    format18, format19, format20, format21, format22, format23, format24, format25, format26, format27,
    format28, format29,
};
use sika_engine::storage::{RECORDS, Space, decode, encode, keys, prefix_end, scan};
use sika_engine::{Command, Job};

const FORMAT_VERSION: u32 = 30;
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/format-0");
/// Written by format 3 with payments on links (`make-format-fixture.py --checkout`).
const FIXTURE_3: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/format-3");
const STAMP: redb::TableDefinition<&str, u32> = redb::TableDefinition::new("sika_format");
const DATABASES: [&str; 5] =
    ["live.redb", "sandbox.redb", "node.redb", "live-requests.redb", "sandbox-requests.redb"];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The stamp of a redb file, or `None` where it has none (format 0).
fn stamp(path: &Path) -> Option<u32> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let table = match txn.open_table(STAMP) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return None,
        Err(e) => panic!("{e}"),
    };
    table.get("format_version").unwrap().map(|v| v.value())
}

fn wal_format(path: &Path) -> Option<u32> {
    let bytes = std::fs::read(path).unwrap();
    (bytes.len() >= 16 && &bytes[..8] == b"SIKA-WAL")
        .then(|| u32::from_le_bytes(bytes[8..12].try_into().unwrap()))
}

/// A stopped node whose data directory is replaced by `fixture`'s files,
/// with the fixture's credentials.
fn node_on(fixture: &Path) -> (Node, Value) {
    let mut node = Node::start(Options::unthrottled());
    node.stop();
    let data = node.data_dir();
    std::fs::remove_dir_all(&data).unwrap();
    copy_dir(fixture, &data);
    let expected: Value =
        serde_json::from_slice(&std::fs::read(data.join("expected.json")).unwrap()).unwrap();
    let creds = &expected["credentials"];
    let text = |name: &str| creds[name].as_str().unwrap().to_string();
    node.creds = Credentials {
        organization_id: text("organizationId"),
        sandbox_key: text("sandboxKey"),
        live_key: text("liveKey"),
        owner_session: text("ownerSessionToken"),
        admin_token: text("adminToken"),
    };
    (node, expected)
}

#[tokio::test]
async fn a_data_directory_from_the_release_before_format_versions_is_upgraded_and_serves_what_it_held() {
    let Some(()) = embedded_store() else { return };
    let fixture = PathBuf::from(FIXTURE);
    // Opening a file may repair it (the fixture was left by a SIGKILL), so
    // look at copies, never at the committed files.
    let copies = tempfile::tempdir().unwrap();
    copy_dir(&fixture, copies.path());
    for name in DATABASES {
        assert_eq!(stamp(&copies.path().join(name)), None, "the fixture's {name} predates format versions");
    }
    for name in ["live.wal", "sandbox.wal"] {
        assert_eq!(wal_format(&copies.path().join(name)), None, "the fixture's {name} has no header");
    }
    let (mut node, expected) = node_on(&fixture);
    node.restart(&Options::unthrottled(), &[]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();

    let accounts = api.get(&node.sandbox_url("/v1/accounts"), &key).await;
    accounts.expect(200);
    for account in accounts.body["data"].as_array().unwrap() {
        let currency = account["currency"].as_str().unwrap();
        assert_eq!(
            account["availableBalance"], expected["balances"][currency],
            "{currency} after the upgrade"
        );
    }
    assert_eq!(
        accounts.body["data"].as_array().unwrap().len(),
        expected["balances"].as_object().unwrap().len()
    );
    newest_balance_transactions_leave_the_balances(&api, &node, &accounts.body["data"]).await;
    let payout = api
        .get(&node.sandbox_url(&format!("/v1/payouts/{}", expected["payoutId"].as_str().unwrap())), &key)
        .await;
    payout.expect(200);
    assert_eq!(payout.body["payout"]["status"], expected["payoutStatus"]);
    assert_eq!(payout.body["payout"]["externalReference"], "fixture-payout-1");
    // Its destination reads whole after the format 4 step, with no bank code.
    assert_eq!(payout.body["payout"]["to"]["code"], "mtn_gh", "{}", payout.text);
    assert!(payout.body["payout"]["to"]["accountNumber"].is_string(), "{}", payout.text);
    assert!(payout.body["payout"]["to"].get("bankCode").is_none(), "{}", payout.text);
    // And so do the events that carry it.
    let events = api.get(&node.sandbox_url("/v1/webhooks/events?limit=100"), &key).await;
    events.expect(200);
    let payout_events = events.body["data"].as_array().unwrap().iter();
    let payout_events = payout_events
        .filter(|e| e["data"]["id"] == expected["payoutId"] && e["data"]["to"]["code"] == "mtn_gh")
        .count();
    assert!(payout_events >= 1, "{}", events.text);
    let conversion = api
        .get(
            &node.sandbox_url(&format!("/v1/conversions/{}", expected["conversionId"].as_str().unwrap())),
            &key,
        )
        .await;
    conversion.expect(200);
    for (path, id) in [
        ("/v1/webhooks/endpoints", "webhookEndpointId"),
        ("/v1/payment-links", "paymentLinkId"),
        ("/v1/recipients", "recipientId"),
    ] {
        let url = node.sandbox_url(&format!("{path}/{}", expected[id].as_str().unwrap()));
        api.get(&url, &key).await.expect(200);
    }
    // The upgraded node keeps writing: money still moves and the books balance.
    deposit(&api, &node, &key, "USD", "1.00").await;
    // The owner's session, kept in the identity database, still works.
    let session = node.creds.owner_session.clone();
    api.get(&node.sandbox_url("/v1/keys"), &session).await.expect(200);

    node.stop_and_verify();
    let data = node.data_dir();
    for name in DATABASES {
        assert_eq!(stamp(&data.join(name)), Some(FORMAT_VERSION), "{name} is stamped after the upgrade");
    }
    for name in ["live.wal", "live.1.wal", "sandbox.wal", "sandbox.1.wal"] {
        assert_eq!(wal_format(&data.join(name)), Some(FORMAT_VERSION), "{name} names its format");
    }
}

/// Format 7 indexed each balance's changes from the journal: the newest
/// balance transaction of each account leaves its balances.
async fn newest_balance_transactions_leave_the_balances(api: &Api, node: &Node, accounts: &Value) {
    let url = node.sandbox_url("/v1/balance-transactions");
    let items = every_item(api, &url, &node.creds.sandbox_key).await;
    for account in accounts.as_array().unwrap() {
        let newest = items.iter().find(|i| i["accountNumber"] == account["id"]);
        let newest = newest.unwrap_or_else(|| panic!("{account} has balance transactions: {items:?}"));
        assert_eq!(newest["availableAfter"], account["availableBalance"], "{newest}");
        assert_eq!(newest["totalAfter"], account["totalBalance"], "{newest}");
    }
}

/// `sika verify` on a copy of a committed fixture: the copy (kept while
/// the returned directory lives), and what the command answered.
fn verify_copy_of(fixture: &str) -> (tempfile::TempDir, PathBuf, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    copy_dir(Path::new(fixture), &data);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["verify", "--data-dir"])
        .arg(&data)
        .env_remove("SIKA_DATA_DIR")
        .output()
        .unwrap();
    (dir, data, out)
}

#[test]
fn verify_upgrades_a_directory_from_the_release_before_format_versions_as_opening_does() {
    let (_dir, data, out) = verify_copy_of(FIXTURE);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stamp(&data.join("sandbox.redb")), Some(FORMAT_VERSION));
}

#[tokio::test]
async fn a_database_from_a_newer_format_is_refused_naming_both_versions() {
    let Some(()) = embedded_store() else { return };
    let node = Node::start(Options::unthrottled());
    node.stop();
    let path = node.data_dir().join("sandbox.redb");
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(STAMP).unwrap().insert("format_version", FORMAT_VERSION + 1).unwrap();
        txn.commit().unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .arg("serve")
        .env("SIKA_DATA_DIR", node.data_dir())
        .env("SIKA_LIVE_ADDR", "127.0.0.1:0")
        .env("SIKA_SANDBOX_ADDR", "127.0.0.1:0")
        .env("SIKA_ADMIN_ADDR", "127.0.0.1:0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve must refuse a newer format: {stderr}");
    assert!(stderr.contains(&format!("format version {}", FORMAT_VERSION + 1)), "{stderr}");
    assert!(stderr.contains(&format!("up to {FORMAT_VERSION}")), "{stderr}");
    assert!(stderr.contains("sandbox.redb"), "{stderr}");
    assert_eq!(stamp(&path), Some(FORMAT_VERSION + 1), "a refused file keeps its stamp");

    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["verify", "--data-dir"])
        .arg(node.data_dir())
        .output()
        .unwrap();
    assert!(!verify.status.success());
    let said = String::from_utf8_lossy(&verify.stdout).to_string() + &String::from_utf8_lossy(&verify.stderr);
    assert!(said.contains(&format!("format version {}", FORMAT_VERSION + 1)), "{said}");
}

/// A destination as format 5 stored it: code, account number, address,
/// tag, recipient id, bank code.
type Destination5 = (String, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);
/// A payout as format 5 stored it, up to where its destination ends.
type PayoutToDestination = (String, String, u32, String, String, i128, Destination5);
/// An order as format 5 stored it, up to where its destination ends.
type OrderToDestination = (String, String, u32, String, String, i128, Option<String>, Destination5);
/// A whole order as format 5 stored it: its English timeline lines are
/// (at, kind, title, detail).
type Order5 = (
    OrderToDestination,
    (
        String,
        String,
        u32,
        i128,
        Option<String>,
        String,
        String,
        String,
        Vec<(i64, String, String, String)>,
        i64,
        i64,
        i64,
    ),
);

/// The `T` at the start of `bytes`, and how many bytes it takes.
macro_rules! take {
    ($t:ty, $bytes:expr) => {{
        let bytes: &[u8] = $bytes;
        let (value, rest) = postcard::take_from_bytes::<$t>(bytes).unwrap();
        (value, bytes.len() - rest.len())
    }};
}

/// A format 5 record as format 3 wrote it: the destination that ends at
/// `end` without its bank code (a `None`, the one byte 0), the rest as is.
fn without_bank_code(bytes: &[u8], destination: &Destination5, end: usize) -> Vec<u8> {
    assert!(destination.5.is_none(), "format 3 had no bank code to keep");
    assert_eq!(bytes[end - 1], 0);
    [&bytes[..end - 1], &bytes[end..]].concat()
}

/// The format 5 payout at the start of `bytes` (and what follows it) as
/// format 3 wrote it.
fn format_3_payout(bytes: &[u8]) -> Vec<u8> {
    let (head, end) = take!(PayoutToDestination, bytes);
    without_bank_code(bytes, &head.6, end)
}

fn format_3_order(bytes: &[u8]) -> Vec<u8> {
    let (head, end) = take!(OrderToDestination, bytes);
    without_bank_code(bytes, &head.7, end)
}

/// A format 5 event as format 3 wrote it, when it carries a payout or an
/// order (the payload's variants 3, 5 and 6: a payout, an order, both).
fn format_3_event(bytes: &[u8]) -> Option<Vec<u8>> {
    let ((_, _, _, _, variant), head) = take!((u64, String, String, String, u32), bytes);
    let payload = &bytes[head..];
    let old = match variant {
        3 => format_3_payout(payload),
        5 => format_3_order(payload),
        6 => {
            let (_, order) = take!(Order5, payload);
            [format_3_order(&payload[..order]), format_3_payout(&payload[order..])].concat()
        }
        _ => return None,
    };
    Some([&bytes[..head], old.as_slice()].concat())
}

/// Lays an open ledger table out as format 5 did (`store_as_format_5`),
/// then rewrites every payout, order and event as format 3 stored them;
/// returns how many of each it rewrote.
fn store_destinations_as_format_3(table: &mut redb::Table<&[u8], &[u8]>) -> [usize; 3] {
    format5::store_as_format_5(table, &sika_server::timeline_words).unwrap();
    let mut rewritten = Vec::new();
    let mut counts = [0; 3];
    let spaces = [
        format5::documents_prefix("payouts"),
        format5::documents_prefix("orders"),
        keys::space(Space::Event),
    ];
    for (n, start) in spaces.iter().enumerate() {
        for entry in table.range(start.as_slice()..prefix_end(start).as_slice()).unwrap() {
            let (key, value) = entry.unwrap();
            let old = match n {
                0 => Some(format_3_payout(value.value())),
                1 => Some(format_3_order(value.value())),
                _ => format_3_event(value.value()),
            };
            if let Some(old) = old {
                counts[n] += 1;
                rewritten.push((key.value().to_vec(), old));
            }
        }
    }
    for (key, value) in &rewritten {
        table.insert(key.as_slice(), value.as_slice()).unwrap();
    }
    counts
}

/// Rewrites every job of a stopped node's ledger as format 1 stored it (the
/// whole command it runs, where format 2 stores its kind) and stamps the
/// file format 1; returns how many jobs it rewrote.
fn store_jobs_as_format_1(path: &Path) -> usize {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    let rewritten = {
        let mut table = txn.open_table(RECORDS).unwrap();
        let start = keys::space(Space::Job);
        let jobs: Vec<(Vec<u8>, Job)> = table
            .range(start.as_slice()..prefix_end(&start).as_slice())
            .unwrap()
            .map(|entry| entry.unwrap())
            .map(|(key, value)| (key.value().to_vec(), decode(value.value()).unwrap()))
            .collect();
        for (key, job) in &jobs {
            // A tuple is encoded as its fields in order, as the struct was.
            let format_1 = encode(&(job.id.clone(), job.due_at, Command::from(job.kind.clone())));
            table.insert(key.as_slice(), format_1.as_slice()).unwrap();
        }
        // Format 1 wrote destinations as format 3 still did, journal
        // entries as format 12 still did (each with its hash), a
        // reference for every transfer, as format 14 still did, accounts
        // as format 15 still did, payouts whole, as format 17 still did,
        // and list and idempotency keys spelling their names, as format
        // 19 still did.
        format29::store_balance_changes_apart(&mut table).unwrap();
        format28::store_idempotency_resources_by_id(&mut table).unwrap();
        format26::store_event_lists_as_ids(&mut table).unwrap();
        format25::store_idempotency_by_reference(&mut table).unwrap();
        format14::store_every_transfer_ref(&mut table).unwrap();
        format15::store_heads_apart(&mut table).unwrap();
        format17::store_payouts_whole(&mut table).unwrap();
        format22::store_fingerprints_whole(&mut table).unwrap();
        format19::store_names_as_text(&mut table).unwrap();
        store_destinations_as_format_3(&mut table);
        format12::store_journal_with_previous_hashes(&mut table).unwrap();
        jobs.len()
    };
    txn.open_table(STAMP).unwrap().insert("format_version", 1).unwrap();
    txn.commit().unwrap();
    rewritten
}

#[tokio::test]
async fn a_format_1_ledger_with_waiting_jobs_is_upgraded_and_its_jobs_run() {
    let Some(()) = embedded_store() else { return };
    // Slow enough that the rail's two steps (a note at 3 s, the outcome at
    // 6 s) still wait when the node stops.
    let slow = [("SIKA_TIME_SCALE", "0.1")];
    let mut node = Node::start_with_env(Options::unthrottled(), &slow);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    // Cents 03: the rail times out, notes it, and then reconciles.
    let body = mtn_payout("20.03", "format-1-jobs");
    let created = api.post(&node.sandbox_url("/v1/payouts"), &key, body).await;
    created.expect(201);
    let url = node.sandbox_url(&format!("/v1/payouts/{}", created.body["payout"]["id"].as_str().unwrap()));
    node.stop();
    let sandbox = node.data_dir().join("sandbox.redb");
    assert_eq!(store_jobs_as_format_1(&sandbox), 2, "the note and the outcome wait");

    node.restart(&Options::unthrottled(), &slow);
    // A new client: the old one's pooled connections went with the node.
    let api = Api::new();
    let payout = eventually("the payout to complete", std::time::Duration::from_secs(30), || async {
        let r = api.get(&url, &key).await;
        r.expect(200);
        (r.body["payout"]["status"] == "completed").then_some(r.body)
    })
    .await;
    let timeline = payout["payout"]["timeline"].as_array().unwrap();
    let noted = timeline.iter().filter(|e| e["title"] == "Provider timed out").count();
    assert_eq!(noted, 1, "each job ran once: {timeline:?}");
    node.stop_and_verify();
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
}

/// Rewrites a stopped node's members and sessions as format 2 stored them
/// (a member with no password hash, a session with no expiry) and stamps
/// `node.redb` format 2; returns how many records it rewrote.
fn store_identity_as_format_2(path: &Path) -> usize {
    const IDENTITY: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("identity");
    type MemberV3 = (String, String, String, String, u32, i64, Option<String>);
    type SessionV3 = ([u8; 32], String, i64, i64);
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    let rewritten = {
        let mut table = txn.open_table(IDENTITY).unwrap();
        let mut records = Vec::new();
        for entry in table.iter().unwrap() {
            let (key, value) = entry.unwrap();
            let key = key.value().to_string();
            let format_2 = if key.starts_with("member/") {
                let (id, org, name, email, role, created, password): MemberV3 =
                    postcard::from_bytes(value.value()).unwrap();
                assert!(password.is_none(), "the bootstrap owner has no password");
                postcard::to_stdvec(&(id, org, name, email, role, created)).unwrap()
            } else if key.starts_with("session/") {
                let (hash, member, created, _expires): SessionV3 =
                    postcard::from_bytes(value.value()).unwrap();
                postcard::to_stdvec(&(hash, member, created)).unwrap()
            } else {
                continue;
            };
            records.push((key, format_2));
        }
        for (key, value) in &records {
            table.insert(key.as_str(), value.as_slice()).unwrap();
        }
        records.len()
    };
    txn.open_table(STAMP).unwrap().insert("format_version", 2).unwrap();
    txn.commit().unwrap();
    rewritten
}

#[tokio::test]
async fn a_format_2_identity_database_is_upgraded_and_its_owner_recovers_the_account() {
    let Some(()) = embedded_store() else { return };
    let mut node = Node::start(Options::unthrottled());
    node.stop();
    let path = node.data_dir().join("node.redb");
    assert_eq!(store_identity_as_format_2(&path), 2, "the owner and the owner's session");
    node.restart(&Options::unthrottled(), &[]);
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    // The session from before the upgrade still works, for a while.
    api.get(&node.sandbox_url("/v1/keys"), &node.creds.owner_session).await.expect(200);
    let org = node.creds.organization_id.clone();
    let members = api.get(&node.admin_url(&format!("/admin/v1/organizations/{org}/members")), &admin).await;
    members.expect(200);
    assert_eq!(members.body["data"][0]["status"], "invited", "no password yet: {}", members.text);
    let member = members.body["data"][0]["id"].as_str().unwrap();
    let email = members.body["data"][0]["email"].as_str().unwrap().to_string();
    let invitation = api
        .post(
            &node.admin_url(&format!("/admin/v1/organizations/{org}/members/{member}/invitations")),
            &admin,
            json!({}),
        )
        .await;
    invitation.expect(201);
    let password = "a password of some length";
    let accept = json!({ "invitation": invitation.body["invitation"]["token"], "password": password });
    api.post_anonymous(&node.sandbox_url("/v1/sessions"), accept).await.expect(201);
    let login = json!({ "email": email, "password": password });
    let session = api.post_anonymous(&node.live_url("/v1/sessions"), login).await;
    session.expect(201);
    api.get(&node.live_url("/v1/keys"), session.body["session"]["token"].as_str().unwrap()).await.expect(200);
    node.stop_and_verify();
    assert_eq!(stamp(&path), Some(FORMAT_VERSION));
}

/// A payer's attempt on `link` through the hosted page's call.
async fn pay(api: &Api, node: &Node, link: &str, amount: &str) -> Value {
    let body =
        json!({ "amount": amount, "method": "mobile_money", "network": "mtn_gh", "phone": "+233241234567" });
    let r = api.post_anonymous(&node.sandbox_url(&format!("/pay/{link}/sessions")), body).await;
    r.expect(201);
    r.body
}

/// Format 4 keeps each payment link's totals as a tally on the ledger,
/// where format 3 derived them from every attempt on each read. A directory
/// format 3 wrote (left by a SIGKILL with one attempt still waiting for the
/// payer's approval) is upgraded: its links show the totals they showed on
/// every read, the attempt that was waiting counts once it settles, and the
/// link takes its last payment.
#[tokio::test]
async fn a_format_3_directory_is_upgraded_and_its_links_keep_their_totals() {
    let Some(()) = embedded_store() else { return };
    let fixture = PathBuf::from(FIXTURE_3);
    let copies = tempfile::tempdir().unwrap();
    copy_dir(&fixture, copies.path());
    for name in DATABASES {
        assert_eq!(stamp(&copies.path().join(name)), Some(3), "the fixture's {name} is format 3");
    }
    let (mut node, expected) = node_on(&fixture);
    node.restart(&Options::unthrottled(), &[]);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let checkout = &expected["checkout"];
    let text = |name: &str| checkout[name].as_str().unwrap().to_string();
    let link_id = text("linkId");

    // The attempt waiting at the kill was due long ago: it settles at once,
    // and counts in the link's tally like the payment before the upgrade.
    let url = node.sandbox_url(&format!("/v1/payment-links/{link_id}"));
    let link =
        poll_until(&api, &url, &key, |b| b["paymentLink"]["totalReceived"] == checkout["linkTotalReceived"])
            .await["paymentLink"]
            .clone();
    assert_eq!(link["remaining"], checkout["linkRemaining"]);
    assert_eq!(link["status"], "active");
    let statuses: Vec<&Value> = link["sessions"].as_array().unwrap().iter().map(|s| &s["status"]).collect();
    assert_eq!(json!(statuses), checkout["sessionStatuses"]);
    assert_eq!(link["sessions"][0]["id"], checkout["pendingSessionId"]);
    // The payer's page and the merchant's list show the same.
    let page =
        reqwest::get(node.sandbox_url(&format!("/pay/{link_id}"))).await.unwrap().text().await.unwrap();
    assert!(page.contains("Already paid 70.50 GHS; remaining 29.50 GHS"), "{page}");
    let listed =
        api.get(&node.sandbox_url("/v1/payment-links?customerReference=fixture-partial"), &key).await;
    listed.expect(200);
    assert_eq!(listed.body["data"][0]["totalReceived"], checkout["linkTotalReceived"], "{}", listed.text);
    assert_eq!(listed.body["data"][0]["remaining"], checkout["linkRemaining"]);
    // The payer of the open-amount page paid before the upgrade: their link
    // is still paid, for what they chose, and the page still counts it.
    let child = api.get(&node.sandbox_url(&format!("/v1/payment-links/{}", text("childLinkId"))), &key).await;
    child.expect(200);
    let child = &child.body["paymentLink"];
    assert_eq!((&child["status"], &child["amount"]), (&json!("paid"), &checkout["childAmount"]), "{child}");
    assert_eq!(child["sessions"][0]["status"], "complete");
    let page = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{}", text("pageId"))), &key).await;
    page.expect(200);
    assert_eq!(page.body["paymentPage"]["paymentCount"], 1);
    assert_eq!(page.body["paymentPage"]["totalCollected"], checkout["childAmount"]);
    // The money behind the tally: the waiting 30.50 reached the balance.
    let ghs = minor(expected["balances"]["GHS"].as_str().unwrap(), 2) + 3_050;
    assert_eq!(minor(&balance(&api, &node.sandbox, &key, "GHS").await, 2), ghs);

    // The link takes what remains, and that payment completes it.
    let last = pay(&api, &node, &link_id, "29.50").await;
    let link =
        poll_until(&api, &url, &key, |b| b["paymentLink"]["status"] == "paid").await["paymentLink"].clone();
    assert_eq!((&link["totalReceived"], &link["remaining"]), (&json!("100.00"), &json!("0.00")));
    assert_eq!(link["sessions"][0]["id"], last["session"]["id"]);
    let statuses: Vec<&Value> = link["sessions"].as_array().unwrap().iter().map(|s| &s["status"]).collect();
    assert_eq!(json!(statuses), json!(["complete", "partial", "failed", "partial"]));

    node.stop_and_verify();
    let data = node.data_dir();
    for name in DATABASES {
        assert_eq!(stamp(&data.join(name)), Some(FORMAT_VERSION), "{name} is stamped after the upgrade");
    }
}

/// `sika verify` upgrades a format 3 directory as opening it does, and
/// recounts the tallies the upgrade made from the links' attempts.
#[test]
fn verify_upgrades_a_format_3_directory_and_recounts_its_links() {
    let (_dir, data, out) = verify_copy_of(FIXTURE_3);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    // The link's payment before the kill and the page's payer's: two tallies.
    assert!(said.contains("2 collection tallies"), "{said}");
    assert_eq!(stamp(&data.join("sandbox.redb")), Some(FORMAT_VERSION));
}

/// A ledger written by format 3 (destinations with no bank code) with a
/// payout, an order paid out, and their events opens upgraded to format 5:
/// each reads and renders exactly as before, the books verify, and a bank
/// payout naming its bank code is taken after it.
#[tokio::test]
async fn a_format_3_ledgers_payouts_orders_and_events_read_the_same_after_the_upgrade() {
    let Some(()) = embedded_store() else { return };
    let mut node = Node::start(Options::unthrottled());
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let body = mtn_payout("20.00", "format-3-payout");
    let payout = api.post(&node.sandbox_url("/v1/payouts"), &key, body).await;
    payout.expect(201);
    let order = json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": "30.00" },
        "to": { "code": "mtn_gh", "accountNumber": "+233241234567", "currency": "GHS" },
        "externalReference": "format-3-order",
    });
    let order = api.post(&node.sandbox_url("/v1/orders"), &key, order).await;
    let (_, order_id) = order.created("order", "ord_");
    let funds = node.sandbox_url(&format!("/v1/simulations/orders/{order_id}/funds"));
    api.post(&funds, &key, json!({ "amount": "30.00" })).await.expect(200);
    let urls = [
        node.sandbox_url(&format!("/v1/payouts/{}", payout.body["payout"]["id"].as_str().unwrap())),
        node.sandbox_url(&format!("/v1/orders/{order_id}")),
        node.sandbox_url("/v1/webhooks/events?limit=100"),
    ];
    // Once the order's payout and the first payout have settled, nothing moves any more.
    eventually("both payouts to settle", std::time::Duration::from_secs(20), || async {
        let order = api.get(&urls[1], &key).await;
        let payout = api.get(&urls[0], &key).await;
        (order.body["order"]["status"] == "completed" && payout.body["payout"]["status"] == "completed")
            .then_some(())
    })
    .await;
    let mut before = Vec::new();
    for url in &urls {
        let r = api.get(url, &key).await;
        r.expect(200);
        before.push(r.body);
    }
    assert!(before[0]["payout"]["to"].get("bankCode").is_none());
    node.stop();

    let sandbox = node.data_dir().join("sandbox.redb");
    let counts = lay_out_as(&sandbox, 3, store_destinations_as_format_3);
    assert!(counts[0] >= 2 && counts[1] == 1 && counts[2] >= 4, "payouts, orders, events: {counts:?}");
    node.restart(&Options::unthrottled(), &[]);
    let api = Api::new();
    for (url, was) in urls.iter().zip(&before) {
        let r = api.get(url, &key).await;
        r.expect(200);
        assert_eq!(&r.body, was, "{url} after the upgrade");
    }
    let bank = json!({
        "from": { "currency": "GHS", "amount": "10.00" },
        "to": { "code": "bank_gh", "accountNumber": "1234567890", "bankCode": "040100" },
        "externalReference": "format-4-bank",
    });
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, bank).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["to"]["bankCode"], "040100");
    node.stop_and_verify();
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
}

/// A ledger laid out as format 5 (payouts, collections and orders among the
/// documents, no index of open movements) with a settled payout, an order
/// paid out, their events and a payout still waiting on the rail opens
/// upgraded to format 6: each reads and renders exactly as before, the
/// waiting payout (found through the index the upgrade built) completes,
/// and the books and the index verify.
#[tokio::test]
async fn a_format_5_ledgers_movements_read_the_same_and_settle_after_the_upgrade() {
    let Some(()) = embedded_store() else { return };
    // Slow enough that the second payout's two steps (cents 03: a note at
    // 3 s, the outcome at 6 s) still wait at the stop.
    let slow = [("SIKA_TIME_SCALE", "0.1")];
    let mut node = Node::start_with_env(Options::unthrottled(), &slow);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let settled =
        api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("20.00", "format-5-settled")).await;
    settled.expect(201);
    let settled_url =
        node.sandbox_url(&format!("/v1/payouts/{}", settled.body["payout"]["id"].as_str().unwrap()));
    eventually("the first payout to settle", std::time::Duration::from_secs(60), || async {
        let r = api.get(&settled_url, &key).await;
        (r.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    let waiting =
        api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("10.03", "format-5-waiting")).await;
    waiting.expect(201);
    let waiting_url =
        node.sandbox_url(&format!("/v1/payouts/{}", waiting.body["payout"]["id"].as_str().unwrap()));
    let urls = [settled_url, waiting_url.clone(), node.sandbox_url("/v1/webhooks/events?limit=100")];
    let mut before = Vec::new();
    for url in &urls {
        let r = api.get(url, &key).await;
        r.expect(200);
        before.push(r.body);
    }
    assert_eq!(before[1]["payout"]["status"], "pending", "the second payout waits on the rail");
    node.stop();

    let sandbox = node.data_dir().join("sandbox.redb");
    let moved = lay_out_as(&sandbox, 5, |table| {
        format5::store_as_format_5(table, &sika_server::timeline_words).unwrap()
    });
    assert!(moved >= 2 + 2, "two payouts and their events' ids at least: {moved}");
    node.restart(&Options::unthrottled(), &slow);
    let api = Api::new();
    let settled = api.get(&urls[0], &key).await;
    settled.expect(200);
    assert_eq!(settled.body, before[0], "the settled payout after the upgrade");
    let events = api.get(&urls[2], &key).await;
    let was: Vec<&Value> = before[2]["data"].as_array().unwrap().iter().collect();
    let now = events.body["data"].as_array().unwrap();
    for event in &was {
        assert!(now.contains(event), "event {} reads as before the upgrade", event["id"]);
    }
    let completed =
        eventually("the waiting payout to complete", std::time::Duration::from_secs(60), || async {
            let r = api.get(&waiting_url, &key).await;
            (r.body["payout"]["status"] == "completed").then_some(r.body)
        })
        .await;
    let (was, now) = (&before[1]["payout"], &completed["payout"]);
    for field in ["id", "amount", "to", "fee", "createdAt", "externalReference"] {
        assert_eq!(was[field], now[field], "the waiting payout's {field}");
    }
    let was = was["timeline"].as_array().unwrap();
    assert_eq!(&now["timeline"].as_array().unwrap()[..was.len()], was.as_slice(), "its timeline goes on");
    node.stop_and_verify();
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
}

/// Lays a stopped node's ledger at `path` out as format `version` wrote
/// it: `rewrite` changes its records (and says what it did), every
/// transfer has a reference under its id (up to format 14), each account's
/// balance-change head is stored apart (up to format 15), its payouts
/// are stored whole (up to format 17, before `rewrite`), its journal
/// entries are stored as that format stored them (with the hash of the
/// entry before them up to format 12, with their accounts' ids as text up
/// to format 13, each with its hash up to format 16, every memo as text up
/// to format 18), and the file is stamped `version`, all in one
/// transaction.
fn lay_out_as<R>(path: &Path, version: u32, rewrite: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> R) -> R {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    // Up to format 29, each balance change was stored apart from its
    // journal entry (older layouts read them there).
    if version < 30 {
        format29::store_balance_changes_apart(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 28, an idempotency entry named its resource by id.
    if version < 29 {
        format28::store_idempotency_resources_by_id(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 27, a journal entry numbered its accounts.
    if version < 28 {
        format27::store_journal_accounts_numbered(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 26, an events list entry stored the event's id.
    if version < 27 {
        format26::store_event_lists_as_ids(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 25, an idempotency entry was keyed by its reference.
    if version < 26 {
        format25::store_idempotency_by_reference(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 24, an idempotency entry stored the time it was made
    // (format 22's layout adds it too).
    if (23..25).contains(&version) {
        format24::store_idempotency_times(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 23, a hold's reference was stored whole.
    if version < 24 {
        format23::store_transfer_refs_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
        format23::store_journal_ids_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 22, an idempotency entry kept the whole fingerprint.
    if version < 23 {
        format22::store_fingerprints_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 21, every id was stored and keyed as its text.
    if version < 22 {
        format21::store_ids_as_text(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 20, payouts and their events stored every text whole.
    if version < 21 {
        format20::store_texts_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 19, list and idempotency keys spelled their names.
    if version < 20 {
        format19::store_names_as_text(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 14, every transfer had a reference under its id; up to
    // format 15, each account's balance-change head was stored apart.
    if version < 15 {
        format14::store_every_transfer_ref(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    if version < 16 {
        format15::store_heads_apart(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    // Up to format 17, payouts were stored whole.
    if version < 18 {
        format17::store_payouts_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    }
    let done = rewrite(&mut txn.open_table(RECORDS).unwrap());
    assert!(version < FORMAT_VERSION, "format {version} is not older");
    let mut table = txn.open_table(RECORDS).unwrap();
    if version < 13 {
        format12::store_journal_with_previous_hashes(&mut table).unwrap();
    } else if version < 14 {
        format13::store_journal_as_format_13(&mut table).unwrap();
    } else if version < 17 {
        format16::store_hashes_in_every_entry(&mut table).unwrap();
    } else if version < 19 {
        format18::store_memos_as_text(&mut table).unwrap();
    }
    drop(table);
    txn.open_table(STAMP).unwrap().insert("format_version", version).unwrap();
    txn.commit().unwrap();
    done
}

/// The stored events of a stopped node's sandbox ledger, each with its
/// bytes and its bytes were it stored whole (a copy of its payout).
fn stored_events(sandbox: &Path) -> Vec<(usize, usize, String)> {
    let db = redb::Database::open(sandbox).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(RECORDS).unwrap();
    let start = keys::space(Space::Event);
    let mut events = Vec::new();
    for entry in table.range(start.as_slice()..prefix_end(&start).as_slice()).unwrap() {
        let (_, value) = entry.unwrap();
        let bytes = value.value();
        let payout = |id: &str| {
            let key = keys::payout(id);
            Ok(table
                .get(key.as_slice())
                .unwrap()
                .map(|v| sika_engine::stored_payout::decode(&key, v.value()).unwrap()))
        };
        let event = sika_engine::events::decode_event(bytes, payout).unwrap();
        events.push((bytes.len(), encode(&event).len(), event.kind));
    }
    events
}

/// A ledger whose payout events hold whole payouts, as format 8 and every
/// format before stored them, with a payout completed, one failed and one
/// completed then reversed (so an event's payout differs from the payout
/// now), opens upgraded to format 9: its payout events now hold marks of
/// their payouts, a fraction of their bytes, and every event reads and
/// renders exactly as before; a payout made after the upgrade has its
/// events too, and the books verify.
#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_format_8_ledgers_payout_events_read_the_same_after_they_hold_marks() {
    let Some(()) = embedded_store() else { return };
    let fast = [("SIKA_TIME_SCALE", "0.001")];
    let mut node = Node::start_with_env(Options::unthrottled(), &fast);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let mut urls = Vec::new();
    for (amount, reference) in [("10.00", "f9-completed"), ("10.01", "f9-rejected"), ("10.05", "f9-reversed")]
    {
        let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout(amount, reference)).await;
        r.expect(201);
        urls.push(node.sandbox_url(&format!("/v1/payouts/{}", r.body["payout"]["id"].as_str().unwrap())));
    }
    let events_url = node.sandbox_url("/v1/webhooks/events?limit=100");
    let settled = ["completed", "failed", "reversed"];
    let events = eventually(
        "the payouts to settle and one to be reversed",
        std::time::Duration::from_secs(30),
        || async {
            for (url, status) in urls.iter().zip(settled) {
                if api.get(url, &key).await.body["payout"]["status"] != status {
                    return None;
                }
            }
            let events = api.get(&events_url, &key).await;
            events.expect(200);
            let kinds: Vec<&str> =
                events.body["data"].as_array().unwrap().iter().filter_map(|e| e["event"].as_str()).collect();
            (kinds.iter().filter(|k| k.starts_with("payout.")).count() == 4).then_some(events.body.clone())
        },
    )
    .await;
    let completed_of_reversed = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "payout.completed" && e["data"]["externalReference"] == "f9-reversed");
    assert_eq!(
        completed_of_reversed.unwrap()["data"]["status"],
        "completed",
        "an event shows its payout as it stood when it happened, not as it is now"
    );
    node.stop();

    let sandbox = node.data_dir().join("sandbox.redb");
    let marked = stored_events(&sandbox);
    let payout_events: Vec<_> = marked.iter().filter(|(_, _, kind)| kind.starts_with("payout.")).collect();
    assert_eq!(payout_events.len(), 4, "{marked:?}");
    for (stored, whole, kind) in &payout_events {
        assert!(
            stored * 2 < *whole,
            "a {kind} event holds a mark ({stored} bytes) rather than its payout ({whole})"
        );
    }
    let rewritten = lay_out_as(&sandbox, 8, |table| format8::store_payout_events_whole(table).unwrap());
    assert_eq!(rewritten, 4, "the payout events, stored whole as format 8 did");
    let whole = stored_events(&sandbox);
    assert!(whole.iter().all(|(stored, whole, _)| stored == whole), "{whole:?}");

    node.restart(&Options::unthrottled(), &fast);
    let api = Api::new();
    let after = api.get(&events_url, &key).await;
    after.expect(200);
    assert_eq!(after.body, events, "every event reads as before the upgrade");
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("10.00", "f9-after")).await;
    r.expect(201);
    let url = node.sandbox_url(&format!("/v1/payouts/{}", r.body["payout"]["id"].as_str().unwrap()));
    let payout = eventually("the new payout to complete", std::time::Duration::from_secs(30), || async {
        let r = api.get(&url, &key).await;
        (r.body["payout"]["status"] == "completed").then_some(r.body["payout"].clone())
    })
    .await;
    let event = eventually("its event", std::time::Duration::from_secs(30), || async {
        let events = api.get(&events_url, &key).await;
        events.body["data"].as_array().unwrap().iter().find(|e| e["data"]["id"] == payout["id"]).cloned()
    })
    .await;
    assert_eq!(event["event"], "payout.completed");
    assert_eq!(event["data"], payout, "the event's payout is the payout its GET shows");
    node.stop_and_verify();
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let upgraded = stored_events(&sandbox);
    let payout_events: Vec<_> = upgraded.iter().filter(|(_, _, kind)| kind.starts_with("payout.")).collect();
    assert_eq!(payout_events.len(), 5, "{upgraded:?}");
    assert!(
        payout_events.iter().all(|(stored, whole, _)| stored * 2 < *whole),
        "marks after the upgrade: {upgraded:?}"
    );
}

/// What a merchant's accountant reads of the sandbox's GHS balance: every
/// balance transaction, a statement of the whole history and of its two
/// halves, and the balances at each entry's instant and just before it.
async fn accountants_view(api: &Api, node: &Node) -> Vec<Value> {
    let key = &node.creds.sandbox_key;
    let items = every_item(api, &node.sandbox_url("/v1/balance-transactions?currency=GHS"), key).await;
    let mut view = vec![Value::Array(items.clone())];
    let first = items.last().expect("entries")["createdAt"].as_str().unwrap().to_string();
    let middle = items[items.len() / 2]["createdAt"].as_str().unwrap().to_string();
    let end = chrono::DateTime::from_timestamp_millis(millis(&items[0]["createdAt"]) + 1)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    for (from, to) in [(&first, &end), (&first, &middle), (&middle, &end)] {
        let url = node.sandbox_url(&format!("/v1/statements?currency=GHS&from={from}&to={to}"));
        let r = api.get(&url, key).await;
        r.expect(200);
        view.push(r.body["statement"].clone());
    }
    for item in items.iter().step_by(3) {
        let at = millis(&item["createdAt"]);
        for ms in [at - 1, at] {
            let instant = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let r = api.get(&node.sandbox_url(&format!("/v1/accounts?asOf={instant}")), key).await;
            r.expect(200);
            view.push(r.body["data"].clone());
        }
    }
    view
}

/// A ledger whose balance changes are keyed by account first, as formats 7
/// to 9 stored them, opens upgraded to format 10: its balance transactions,
/// statements and balances at each instant read exactly as before (more
/// changes than one mark covers, so the upgrade's marks are walked from),
/// a deposit after the upgrade is the newest entry and leaves the balances,
/// and the books verify.
#[tokio::test]
async fn a_format_9_ledgers_balance_changes_read_the_same_after_they_are_rekeyed() {
    let Some(()) = embedded_store() else { return };
    let fast = [("SIKA_TIME_SCALE", "0.001")];
    let mut node = Node::start_with_env(Options::unthrottled(), &fast);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    for n in 0..70 {
        deposit(&api, &node, &key, "GHS", &format!("{}.{:02}", 10 + n, n)).await;
        if n % 20 == 0 {
            let r = api
                .post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("5.00", &format!("f10-{n}")))
                .await;
            r.expect(201);
        }
    }
    let before = eventually("the payouts to settle", std::time::Duration::from_secs(30), || async {
        let view = accountants_view(&api, &node).await;
        let kinds: Vec<&str> =
            view[0].as_array().unwrap().iter().filter_map(|i| i["type"].as_str()).collect();
        (kinds.iter().filter(|k| **k == "payout").count() == 4 && view[0].as_array().unwrap().len() >= 78)
            .then_some(view)
    })
    .await;
    node.stop();

    let sandbox = node.data_dir().join("sandbox.redb");
    let rekeyed = lay_out_as(&sandbox, 9, |table| format9::store_balance_changes_as_format_9(table).unwrap());
    assert!(rekeyed >= 78, "every change of the GHS balance: {rekeyed}");
    node.restart(&Options::unthrottled(), &fast);
    let api = Api::new();
    let after = accountants_view(&api, &node).await;
    assert_eq!(after.len(), before.len());
    for (n, (was, now)) in before.iter().zip(&after).enumerate() {
        assert_eq!(was, now, "read {n} of the accountant's view after the upgrade");
    }
    deposit(&api, &node, &key, "GHS", "1.00").await;
    let accounts = api.get(&node.sandbox_url("/v1/accounts"), &key).await;
    accounts.expect(200);
    newest_balance_transactions_leave_the_balances(&api, &node, &accounts.body["data"]).await;
    let items = every_item(&api, &node.sandbox_url("/v1/balance-transactions?currency=GHS"), &key).await;
    assert_eq!(items.len(), before[0].as_array().unwrap().len() + 1, "the new deposit is one more entry");
    assert_eq!(items[0]["type"], "deposit");
    node.stop_and_verify();
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
}

/// The records (keys and values) of `space` in a stopped node's sandbox,
/// in key order.
/// The journal entries of a stopped node's sandbox ledger without the
/// balance changes stored after their transfers since format 30, as
/// formats up to 29 stored them: the bytes the tests of older formats
/// compare.
fn stored_entries(sandbox: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let bare = |(key, value): (Vec<u8>, Vec<u8>)| {
        let value = sika_engine::JournalEntry::without_changes(&value).unwrap().to_vec();
        (key, value)
    };
    stored_records(sandbox, Space::Journal).into_iter().map(bare).collect()
}

fn stored_records(sandbox: &Path, space: Space) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = redb::Database::open(sandbox).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(RECORDS).unwrap();
    scan(&table, space).unwrap()
}

/// The values of `space` in a stopped node's sandbox, in key order.
fn stored_values(sandbox: &Path, space: Space) -> Vec<Vec<u8>> {
    stored_records(sandbox, space).into_iter().map(|(_, value)| value).collect()
}

/// Slow enough that a payout whose cents are 03 (the rail times out, notes
/// it at 3 s, settles at 6 s) still waits when the node stops.
const SLOW: [(&str, &str); 1] = [("SIKA_TIME_SCALE", "0.1")];

/// What a stopped node's sandbox held before a test lays it out as an
/// older format: three payouts (`{reference}-completed`, its holds posted;
/// `-failed`, voided; `-held`, still held at the rail), the first two as
/// read, and every balance transaction.
struct ThreePayouts {
    urls: Vec<String>,
    settled: Vec<Value>,
    entries: Vec<Value>,
}

/// Starts a node slowed by `SLOW`, makes the three payouts of
/// `ThreePayouts` after a deposit, waits for the first two to settle, and
/// stops the node while the third is still held.
/// The amounts of `three_payouts_one_held`'s payouts and what each ends
/// as (the last held), which also suffix their references.
const THREE_PAYOUTS: [(&str, &str); 3] = [("20.00", "completed"), ("10.01", "failed"), ("10.03", "held")];

/// Each of `three_payouts_one_held(reference)`'s references, sent again
/// with its body to the restarted node, replays its payout.
async fn each_reference_replays(api: &Api, node: &Node, payouts: &ThreePayouts, reference: &str) {
    let key = &node.creds.sandbox_key;
    let ids = payouts.urls.iter().map(|url| url.rsplit('/').next().unwrap());
    for ((amount, outcome), id) in THREE_PAYOUTS.iter().zip(ids) {
        let body = mtn_payout(amount, &format!("{reference}-{outcome}"));
        let replay = api.post(&node.sandbox_url("/v1/payouts"), key, body).await;
        replay.expect(200);
        assert_eq!(replay.body["payout"]["id"], id, "{reference}-{outcome} replays its payout");
    }
}

async fn three_payouts_one_held(reference: &str) -> (Node, ThreePayouts) {
    let node = Node::start_with_env(Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let mut urls = Vec::new();
    for (amount, outcome) in THREE_PAYOUTS {
        let body = mtn_payout(amount, &format!("{reference}-{outcome}"));
        let r = api.post(&node.sandbox_url("/v1/payouts"), &key, body).await;
        r.expect(201);
        urls.push(node.sandbox_url(&format!("/v1/payouts/{}", r.body["payout"]["id"].as_str().unwrap())));
    }
    let settled = eventually("two payouts to settle", std::time::Duration::from_secs(60), || async {
        let mut bodies = Vec::new();
        for (url, status) in urls.iter().zip(["completed", "failed"]) {
            let r = api.get(url, &key).await;
            if r.body["payout"]["status"] != status {
                return None;
            }
            bodies.push(r.body);
        }
        Some(bodies)
    })
    .await;
    assert_eq!(api.get(&urls[2], &key).await.body["payout"]["status"], "pending", "the third waits");
    let entries = every_item(&api, &node.sandbox_url("/v1/balance-transactions"), &key).await;
    node.stop();
    (node, ThreePayouts { urls, settled, entries })
}

/// Restarts the node of `three_payouts_one_held` (its ledger upgraded on
/// opening): the settled payouts and every balance transaction read as
/// before, the held payout completes (its holds found and posted), each
/// balance's newest balance transaction leaves its balances, and after a
/// stop the books verify.
async fn read_the_same_and_the_held_payout_completes(node: &mut Node, payouts: &ThreePayouts) {
    node.restart(&Options::unthrottled(), &SLOW);
    // A new client: the old one's pooled connections went with the node.
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    for (url, was) in payouts.urls.iter().zip(&payouts.settled) {
        let now = api.get(url, &key).await;
        now.expect(200);
        assert_eq!(&now.body, was, "{url} after the upgrade");
    }
    let entries = &payouts.entries;
    let now = every_item(&api, &node.sandbox_url("/v1/balance-transactions"), &key).await;
    assert!(now.ends_with(entries), "every balance transaction reads as before: {now:?} against {entries:?}");
    eventually("the held payout to complete", std::time::Duration::from_secs(60), || async {
        (api.get(&payouts.urls[2], &key).await.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    let accounts = api.get(&node.sandbox_url("/v1/accounts"), &key).await;
    accounts.expect(200);
    newest_balance_transactions_leave_the_balances(&api, node, &accounts.body["data"]).await;
    node.stop_and_verify();
}

/// A ledger whose transfers are stored whole under their ids beside the
/// same transfers in their journal entries (format 10 and earlier), with a
/// payout completed (its holds posted), one failed (its holds voided) and
/// one still held at the rail, opens upgraded to format 11: each transfer
/// is stored once, in its journal entry, the settled payouts read as
/// before, the held one completes (its holds are found by id and posted),
/// each balance's newest balance transaction leaves its balances, and the
/// books verify.
#[tokio::test]
async fn a_format_10_ledgers_transfers_are_stored_once_and_its_holds_still_settle() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f11").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let references: usize = stored_values(&sandbox, Space::Transfer).iter().map(Vec::len).sum();
    let rewritten = lay_out_as(&sandbox, 10, |table| format10::store_transfers_whole(table).unwrap());
    assert!(rewritten >= 9, "the deposit and three payouts' holds, posted and voided: {rewritten}");
    let whole: usize = stored_values(&sandbox, Space::Transfer).iter().map(Vec::len).sum();
    assert!(
        whole > 10 * references,
        "format 10 stored each transfer whole: {whole} against {references} bytes"
    );

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = stored_values(&sandbox, Space::Transfer);
    assert!(
        after.iter().all(|value| value.len() <= 12),
        "each transfer is a reference to its journal entry: {after:?}"
    );
}

/// A ledger whose journal entries name their transfers' accounts as text
/// and hold their number twice (format 13 and earlier), with a payout
/// completed (its holds posted), one failed (its holds voided) and one
/// still held at the rail, opens upgraded to format 14: its journal is
/// stored in fewer bytes, the settled payouts and every balance
/// transaction read as before, the held payout completes (its holds, in
/// entries format 13 wrote, are found and posted), each balance's newest
/// balance transaction leaves its balances, and the books verify.
#[tokio::test]
async fn a_format_13_ledgers_journal_reads_the_same_and_its_holds_settle_after_it_is_stored_compactly() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f14").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let compact: usize = stored_values(&sandbox, Space::Journal).iter().map(Vec::len).sum();
    // The books stored the hash of each batch's last entry; the upgrade
    // keeps only the journal's last (and the marks, which so short a
    // journal has none of).
    let batch_ends = stored_values(&sandbox, Space::Journal)
        .iter()
        .filter(|value| decode::<sika_engine::JournalEntry>(value).unwrap().hash.is_some())
        .count();
    lay_out_as(&sandbox, 13, |_| ());
    let old = stored_values(&sandbox, Space::Journal);
    let before_upgrade = old.len();
    // The deposit; each payout's two holds (amount and fee); the first's
    // posted and delivered, the second's voided.
    assert!(old.len() >= 12, "the deposit and the payouts' holds, posted and voided: {}", old.len());
    let old: usize = old.iter().map(Vec::len).sum();
    assert!(compact * 100 < old * 80, "format 14 stores the journal in {compact} bytes against {old}");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let upgraded: usize =
        stored_values(&sandbox, Space::Journal)[..before_upgrade].iter().map(Vec::len).sum();
    assert_eq!(
        upgraded + 32 * (batch_ends - 1),
        compact,
        "the upgrade stores the entries as the books wrote them, but for the batches' last hashes"
    );
}

/// A ledger with a reference under every transfer's id (format 14 and
/// earlier), with a payout completed (its holds posted), one failed (its
/// holds voided) and one still held at the rail, opens upgraded to format
/// 15: only the holds keep their references, the settled payouts and
/// every balance transaction read as before, the held payout completes
/// (its holds found by their references and posted), each balance's
/// newest balance transaction leaves its balances, and the books verify.
#[tokio::test]
async fn a_format_14_ledgers_transfers_are_found_by_their_numbers_and_its_holds_settle() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f15").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let holds = stored_values(&sandbox, Space::Transfer);
    assert_eq!(holds.len(), 6, "each payout's two holds");
    lay_out_as(&sandbox, 14, |_| ());
    let every = stored_values(&sandbox, Space::Transfer).len();
    assert!(every >= 12, "format 14 had a reference for each transfer: {every}");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = stored_records(&sandbox, Space::Transfer);
    assert_eq!(after.len(), 6, "only the holds keep their references");
    for (key, value) in &after {
        let id = keys::number_of(key).unwrap();
        let found = sika_engine::TransferRef::decode(id, value).unwrap();
        assert!(found.pending_state.is_some(), "a hold's: {found:?}");
    }
}

/// A ledger whose accounts' balance-change heads are records of their own
/// (format 15 and earlier), with a payout completed (its holds posted),
/// one failed (its holds voided) and one still held at the rail, opens
/// upgraded to format 16: each head is in its account and no head record
/// is left, the settled payouts and every balance transaction read as
/// before, the held payout completes (its changes chained after the moved
/// heads), each balance's newest balance transaction leaves its balances,
/// and the books verify.
#[tokio::test]
async fn a_format_15_ledgers_accounts_take_in_their_heads_and_its_holds_settle() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f16").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    assert!(stored_values(&sandbox, Space::BalanceHead).is_empty(), "the books keep heads in accounts");
    lay_out_as(&sandbox, 15, |_| ());
    let apart = stored_values(&sandbox, Space::BalanceHead).len();
    assert!(apart >= 1, "format 15 stored the merchant's NGN head apart");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    assert!(stored_values(&sandbox, Space::BalanceHead).is_empty(), "no head is left apart");
    let changed: Vec<sika_engine::AccountEntry> = stored_values(&sandbox, Space::Account)
        .iter()
        .map(|value| decode::<sika_engine::AccountEntry>(value).unwrap())
        .filter(|entry| entry.changes.count > 0)
        .collect();
    assert_eq!(changed.len(), apart, "each head is in its account: {changed:?}");
    assert!(changed.iter().all(|entry| entry.account.is_organization()), "{changed:?}");
}

/// A format 16 ledger (every journal entry with its hash), with a payout
/// completed, one failed and one still held at the rail, opens upgraded
/// to format 17: an entry stores its hash only at the marks and the last,
/// the settled payouts and every balance transaction read as before, the
/// held payout completes (its entries chained after the upgraded ones),
/// and the books verify.
#[tokio::test]
async fn a_format_16_ledgers_journal_keeps_hashes_at_its_marks_and_its_holds_settle() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f17").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let entries = |path: &Path| -> Vec<sika_engine::JournalEntry> {
        stored_values(path, Space::Journal).iter().map(|value| decode(value).unwrap()).collect()
    };
    let before = entries(&sandbox);
    let size = |path: &Path| stored_values(path, Space::Journal).iter().map(Vec::len).sum::<usize>();
    // The books' journal with every memo as text, as formats 14 to 18
    // stored memos.
    let books = {
        let db = redb::Database::open(&sandbox).unwrap();
        let txn = db.begin_read().unwrap();
        let current = scan(&txn.open_table(RECORDS).unwrap(), Space::Journal).unwrap();
        format18::memos_as_text(current).unwrap().iter().map(|(_, value)| value.len()).sum::<usize>()
    };
    lay_out_as(&sandbox, 16, |_| ());
    // Format 16 stored 32 bytes of hash in every entry; format 17 a tag,
    // and the hash where it is.
    let hashed = before.iter().filter(|entry| entry.hash.is_some()).count();
    assert_eq!(size(&sandbox) + hashed, books + 31 * (before.len() - hashed), "format 16's shape");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = entries(&sandbox);
    assert!(after.len() > before.len(), "the held payout's entries follow");
    let upgraded = &after[..before.len()];
    let last = before.last().unwrap().seq;
    for (entry, was) in upgraded.iter().zip(&before) {
        assert_eq!((entry.seq, &entry.transfer), (was.seq, &was.transfer));
        let at_mark = entry.seq % sika_engine::HASH_EVERY == 0;
        assert_eq!(entry.hash.is_some(), at_mark || entry.seq == last, "entry {}", entry.seq);
    }
    assert!(after.last().unwrap().hash.is_some(), "the last batch's last entry stores its hash");
}

/// A format 17 ledger (payouts stored whole: each timeline line with the
/// payout's amount, currency, destination and message again, and its time
/// whole), with a payout completed, one failed and one still held at the
/// rail, opens upgraded to format 18: each payout stores the lines that
/// repeat its own fields as marks, in the bytes the node writes itself,
/// the settled payouts and every balance transaction read as before, the
/// held payout completes, and the books verify.
#[tokio::test]
async fn a_format_17_ledgers_payouts_store_their_own_lines_and_its_held_payout_completes() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f18").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let payouts_stored = |path: &Path| stored_records(path, Space::Payout);
    // Every event, as read back with its payout as it stood (`whole`: the
    // payouts stored as format 17 stored them).
    let events = |path: &Path, whole: bool| -> Vec<(usize, sika_engine::EventRecord)> {
        let db = redb::Database::open(path).unwrap();
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let payout = |id: &str| {
            let key = keys::payout(id);
            let stored = table.get(key.as_slice()).unwrap();
            Ok(stored.map(|v| match whole {
                true => decode(v.value()).unwrap(),
                false => sika_engine::stored_payout::decode(&key, v.value()).unwrap(),
            }))
        };
        let stored = scan(&table, Space::Event).unwrap();
        stored.iter().map(|(_, v)| (v.len(), sika_engine::events::decode_event(v, payout).unwrap())).collect()
    };
    let written = payouts_stored(&sandbox);
    assert_eq!(written.len(), 3);
    let events_written = events(&sandbox, false);
    lay_out_as(&sandbox, 17, |_| ());
    let whole = payouts_stored(&sandbox);
    let events_whole = events(&sandbox, true);
    let settled_events = events_written.iter().filter(|(_, e)| e.kind.starts_with("payout.")).count();
    assert_eq!(settled_events, 2, "the completed and the failed payout's");
    for ((now, event), (was, whole_event)) in events_written.iter().zip(&events_whole) {
        assert_eq!(event, whole_event);
        if event.kind.starts_with("payout.") {
            // The kind's name and the payout's updated time, at least.
            assert!(now + 15 <= *was, "{}: {now} bytes against {was}", event.kind);
        }
    }
    for ((key, now), (_, was)) in written.iter().zip(&whole) {
        let payout = sika_engine::stored_payout::decode(key, now).unwrap();
        assert_eq!(decode::<sika_engine::PayoutRecord>(was).unwrap(), payout, "format 17's shape");
        assert!(now.len() < was.len(), "{}: {} bytes against {}", payout.id, now.len(), was.len());
    }
    // Format 18 leaves out the id, the lines' times and the values of
    // the payout's own lines: a fifth of the three payouts' bytes at least.
    let size = |records: &[(Vec<u8>, Vec<u8>)]| records.iter().map(|(_, value)| value.len()).sum::<usize>();
    assert!(size(&written) * 10 < size(&whole) * 8, "{} bytes against {}", size(&written), size(&whole));

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after: Vec<_> = events(&sandbox, false).into_iter().map(|(_, e)| e).collect();
    let before: Vec<_> = events_written.into_iter().map(|(_, e)| e).collect();
    assert!(after.len() > before.len() && after.starts_with(&before), "the events read as before");
    let upgraded = payouts_stored(&sandbox);
    for record in &written {
        let payout = sika_engine::stored_payout::decode(&record.0, &record.1).unwrap();
        if payout.status != sika_engine::MovementStatus::Pending {
            assert!(upgraded.contains(record), "{} is stored as the node wrote it", payout.id);
        }
    }
}

/// A format 18 ledger (every journal entry's memo stored as text), with a
/// payout completed, one failed and one still held at the rail, opens as
/// format 19 without a rewrite: its entries keep their bytes and read the
/// same, the settled payouts and every balance transaction read as before,
/// the held payout completes, its new entries store their memos shaped
/// (smaller, and the same transfers as text would give), and the books,
/// old entries and new, verify.
#[tokio::test]
async fn a_format_18_ledgers_journal_keeps_its_text_memos_and_its_new_entries_store_them_shaped() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f19").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let journal = |path: &Path| stored_entries(path);
    let transfers = |records: &[(Vec<u8>, Vec<u8>)]| -> Vec<sika_engine::TransferRecord> {
        records
            .iter()
            .map(|(_, value)| decode::<sika_engine::JournalEntry>(value).unwrap().transfer)
            .collect()
    };
    let size = |records: &[(Vec<u8>, Vec<u8>)]| records.iter().map(|(_, value)| value.len()).sum::<usize>();
    let written = journal(&sandbox);
    lay_out_as(&sandbox, 18, |_| ());
    let as_text = journal(&sandbox);
    assert_eq!(transfers(&as_text), transfers(&written), "the same transfers");
    // Every payout's transfers name it in their memos: 20 or more bytes
    // each are left out when they are shaped.
    assert!(written.len() >= 12, "{} entries", written.len());
    assert!(
        size(&written) + 20 * 12 <= size(&as_text),
        "{} bytes against {}",
        size(&written),
        size(&as_text)
    );

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = journal(&sandbox);
    assert!(after.len() > as_text.len(), "the held payout's entries follow");
    assert_eq!(&after[..as_text.len()], as_text.as_slice(), "the old entries keep their bytes");
    let new = &after[as_text.len()..];
    let new_as_text = format18::memos_as_text(new.to_vec()).unwrap();
    assert_eq!(transfers(new), transfers(&new_as_text));
    for ((_, shaped), (_, text)) in new.iter().zip(&new_as_text) {
        let entry: sika_engine::JournalEntry = decode(shaped).unwrap();
        assert!(entry.transfer.memo.contains("payout pay_ghs_"), "{}", entry.transfer.memo);
        assert!(
            shaped.len() + 20 <= text.len(),
            "{}: {} bytes against {}",
            entry.transfer.memo,
            shaped.len(),
            text.len()
        );
    }
}

/// A format 19 ledger's list entries and idempotency entries spelled their
/// organization and their kind or operation in every key; format 20 keys
/// them by the names' numbers. After the upgrade the payouts list as
/// before, newest first; a payout's reference replays it with the same
/// body and refuses another; a new payout lists first; the held payout
/// completes; every key is 25 bytes or more shorter; and the books verify.
#[tokio::test]
async fn a_format_19_ledgers_lists_and_references_are_found_by_their_names_numbers() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f20").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let keys_of = |path: &Path| {
        let mut records = stored_records(path, Space::ListIndex);
        records.extend(stored_records(path, Space::Idempotency));
        records.extend(stored_records(path, Space::IdempotencyDigest));
        records.into_iter().map(|(key, _)| key.len()).collect::<Vec<_>>()
    };
    let numbered = keys_of(&sandbox);
    lay_out_as(&sandbox, 19, |_| ());
    let spelled = keys_of(&sandbox);
    // The three payouts' references and list entries, and their events'.
    assert!(numbered.len() >= 3 + 3 + 2, "{} keys", numbered.len());
    assert_eq!(spelled.len(), numbered.len());
    assert_eq!(stored_values(&sandbox, Space::Name).len(), 0, "format 19 had no names");
    let ids: Vec<String> =
        payouts.urls.iter().map(|url| url.rsplit('/').next().unwrap().to_string()).collect();

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let listed = every_item(&api, &node.sandbox_url("/v1/payouts"), &key).await;
    let listed: Vec<&str> = listed.iter().map(|p| p["id"].as_str().unwrap()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first, "the payouts list as before");
    let url = node.sandbox_url("/v1/payouts");
    let replay = api.post(&url, &key, mtn_payout("20.00", "f20-completed")).await;
    replay.expect(200);
    assert_eq!(replay.body["payout"]["id"], ids[0].as_str(), "the reference replays its payout");
    api.post(&url, &key, mtn_payout("20.01", "f20-completed")).await.expect_field(
        409,
        "duplicate",
        "externalReference",
    );
    let new = api.post(&url, &key, mtn_payout("1.00", "f20-new")).await;
    new.expect(201);
    let listed = every_item(&api, &node.sandbox_url("/v1/payouts"), &key).await;
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[0]["id"], new.body["payout"]["id"], "a new payout lists first");
    eventually("the held payout to complete", std::time::Duration::from_secs(60), || async {
        (api.get(&payouts.urls[2], &key).await.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = keys_of(&sandbox);
    assert!(after.len() > numbered.len(), "the new payout's reference and list entries follow");
    // An organization's id is 28 bytes and a kind's at least 5: in numbers,
    // 8 bytes for both.
    let saved = spelled.iter().sum::<usize>() - numbered.iter().sum::<usize>();
    assert!(saved >= 25 * numbered.len(), "{saved} bytes over {} keys", numbered.len());
    assert!(after.iter().all(|len| *len <= 40), "every key holds numbers: {after:?}");
}

/// A format 20 ledger stored every text of a payout and its event whole;
/// format 21 stores the node's own phrases (the rail's name, the
/// simulator's note and its messages) as their numbers. After the upgrade
/// the settled payouts and their events keep their bytes and read the same,
/// the held payout completes and is stored with its phrases, its new event
/// too, and the books verify.
#[tokio::test]
async fn a_format_20_ledgers_payouts_keep_their_texts_and_store_phrases_once_they_change() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f21").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let size = |records: &[(Vec<u8>, Vec<u8>)]| records.iter().map(|(_, value)| value.len()).sum::<usize>();
    let phrased = stored_records(&sandbox, Space::Payout);
    lay_out_as(&sandbox, 20, |_| ());
    let whole = stored_records(&sandbox, Space::Payout);
    let whole_events = stored_records(&sandbox, Space::Event);
    assert_eq!(whole.len(), 3);
    // Each payout spells its rail (17 bytes) and the simulator's note (45
    // or more); the settled ones their status message too.
    assert!(size(&phrased) + 3 * 60 <= size(&whole), "{} bytes against {}", size(&phrased), size(&whole));

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;
    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let held = keys::payout(payouts.urls[2].rsplit('/').next().unwrap());
    for (key, value) in stored_records(&sandbox, Space::Payout) {
        let was = whole.iter().find(|(k, _)| *k == key).map(|(_, v)| v).expect("the same payouts");
        if key == held {
            let as_20 = format20::payouts_with_whole_texts(vec![(key, value.clone())]).unwrap();
            // Its rail, note and status message: 15 + 58 + 36 bytes less.
            assert!(
                value.len() + 90 <= as_20[0].1.len(),
                "{} bytes against {}",
                value.len(),
                as_20[0].1.len()
            );
            assert_ne!(&value, was, "the held payout settled");
        } else {
            assert_eq!(&value, was, "a settled payout keeps its bytes");
        }
    }
    let events = stored_records(&sandbox, Space::Event);
    assert!(events.len() > whole_events.len(), "the held payout's event follows");
    assert_eq!(&events[..whole_events.len()], whole_events.as_slice(), "the old events keep their bytes");
    let completed = events.last().unwrap();
    // Formats 20 and 21 both spell its ids; 20 its message too.
    let as_20 =
        sika_engine::events::payout_event_as_format_20(&completed.1).unwrap().expect("a payout's event");
    let as_21 =
        sika_engine::events::payout_event_as_format_21(&completed.1).unwrap().expect("a payout's event");
    assert_eq!(as_20.len(), as_21.len() + "Delivered; confirmed by reconciliation".len() - 2);
}

/// A format 21 ledger stored every id as its text: in list entries, in a
/// payout's event, and as the key of an event's id; format 22 stores an id
/// of the node's shape as its parts. After the upgrade the payouts and the
/// events list as before and every event is found by its id; the held
/// payout completes, and its event is found by its id too, keyed by its
/// parts in 20 bytes; a payout's reference replays it; the old records
/// keep their bytes, each new list entry is 6 bytes shorter, and the
/// books verify.
#[tokio::test]
async fn a_format_21_ledgers_ids_read_the_same_and_new_ones_are_stored_as_their_parts() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f22").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let as_parts = stored_records(&sandbox, Space::ListIndex);
    lay_out_as(&sandbox, 21, |_| ());
    let as_text = stored_records(&sandbox, Space::ListIndex);
    let old_event_ids = stored_records(&sandbox, Space::EventId);
    // The key's, the deposit's, the three payouts' and their events'.
    assert!(as_text.len() >= 7, "{} list entries", as_text.len());
    for ((key, parts), (text_key, text)) in as_parts.iter().zip(&as_text) {
        assert_eq!(key, text_key);
        // Since format 27 an events list entry is the event's number
        // (`records::Listed`); every other entry is an id, as its parts.
        if parts.first() != Some(&0) {
            assert_eq!(parts.len() + 6, text.len(), "each id as text is 6 bytes longer");
        }
    }
    assert!(old_event_ids.iter().all(|(key, _)| key.len() == 30), "keyed by their text");

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let ids: Vec<&str> = payouts.urls.iter().map(|url| url.rsplit('/').next().unwrap()).collect();
    let listed = every_item(&api, &node.sandbox_url("/v1/payouts"), &key).await;
    let listed: Vec<&str> = listed.iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ids.iter().rev().copied().collect::<Vec<_>>(), "the payouts list as before");
    // Its reference, stored with the payout's id as text, replays it.
    let replay = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("20.00", "f22-completed")).await;
    replay.expect(200);
    assert_eq!(replay.body["payout"]["id"], ids[0], "the reference replays its payout");
    let found_by_id = |events: Vec<Value>| {
        let (api, node, key) = (&api, &node, &key);
        async move {
            for event in &events {
                let id = event["id"].as_str().unwrap();
                let r = api.get(&node.sandbox_url(&format!("/v1/webhooks/events/{id}")), key).await;
                r.expect(200);
                assert_eq!(&r.body["event"], event, "{id} by its id");
            }
            events.len()
        }
    };
    let before = found_by_id(every_item(&api, &node.sandbox_url("/v1/webhooks/events"), &key).await).await;
    assert_eq!(before, old_event_ids.len());
    eventually("the held payout to complete", std::time::Duration::from_secs(60), || async {
        (api.get(&payouts.urls[2], &key).await.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    let after = found_by_id(every_item(&api, &node.sandbox_url("/v1/webhooks/events"), &key).await).await;
    assert!(after > before, "the held payout's event follows");
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    // A new entry sorts by its list's kind, among the old ones.
    let (old, new): (Vec<_>, Vec<_>) =
        stored_records(&sandbox, Space::ListIndex).into_iter().partition(|entry| as_text.contains(entry));
    assert_eq!(old.len(), as_text.len(), "the old list entries keep their bytes");
    assert!(!new.is_empty(), "the held payout's event lists");
    assert!(new.iter().all(|(_, value)| value.len() <= 27), "each new id as its parts: {new:?}");
    let event_ids = stored_records(&sandbox, Space::EventId);
    let (by_parts, by_text): (Vec<_>, Vec<_>) = event_ids.iter().partition(|(key, _)| key.len() == 20);
    assert_eq!(by_text.len(), old_event_ids.len());
    assert_eq!(by_parts.len(), after - before);
}

/// Format 22 kept a request's whole 32-byte fingerprint in each
/// idempotency entry; format 23 keeps its first 16 bytes, and its step
/// rewrites every entry. After the upgrade a format 22 ledger's references
/// replay their payouts, a different body under one is still refused, each
/// entry is stored with 16 bytes of its fingerprint, and the books verify.
#[tokio::test]
async fn a_format_22_ledgers_references_replay_after_its_entries_keep_half_their_fingerprints() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f23").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let kept = laid_out_records(&sandbox, 23, Space::Idempotency);
    lay_out_as(&sandbox, 22, |_| ());
    let whole = stored_records(&sandbox, Space::Idempotency);
    assert_eq!(kept.len(), 3, "the three payouts' references");
    for ((key, half), (whole_key, all)) in kept.iter().zip(&whole) {
        assert_eq!(key, whole_key);
        assert_eq!(half.len() + 16, all.len(), "format 22 kept 16 bytes more");
    }

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    each_reference_replays(&api, &node, &payouts, "f23").await;
    let other = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("20.01", "f23-completed")).await;
    other.expect_field(409, "duplicate", "externalReference");
    api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("1.00", "f23-new")).await.expect(201);
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let stored = stored_records(&sandbox, Space::IdempotencyDigest);
    assert_eq!(stored.len(), 4, "and the new payout's");
    for (key, value) in &kept {
        // As format 23 stored it, with the time it was made (format 25
        // reads it and leaves it), under its digest since format 26.
        let entry = (digest_of(key), value.clone());
        assert!(stored.contains(&entry), "each entry is stored as format 23 wrote it: {entry:?}");
    }
}

/// Formats 1 to 24 stored the time an idempotency entry was made, which
/// nothing read; format 25 leaves it out. After the upgrade a format 24
/// ledger's references replay their payouts, a different body under one
/// is refused, the old entries keep their bytes, a new one is 6 bytes
/// shorter, and the books verify.
#[tokio::test]
async fn a_format_24_ledgers_references_replay_after_its_entries_leave_their_times() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f25").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let current = laid_out_records(&sandbox, 25, Space::Idempotency);
    lay_out_as(&sandbox, 24, |_| ());
    let timed = stored_records(&sandbox, Space::Idempotency);
    assert_eq!(current.len(), 3, "the three payouts' references");
    for ((key, now), (timed_key, then)) in current.iter().zip(&timed) {
        assert_eq!(key, timed_key);
        assert_eq!(now.len() + 6, then.len(), "format 24 stored the time too");
    }

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let other = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("10.02", "f25-failed")).await;
    other.expect_field(409, "duplicate", "externalReference");
    each_reference_replays(&api, &node, &payouts, "f25").await;
    api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("1.00", "f25-new")).await.expect(201);
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let stored = stored_records(&sandbox, Space::IdempotencyDigest);
    let (old, new): (Vec<_>, Vec<_>) =
        stored.into_iter().partition(|(_, value)| timed.iter().any(|(_, then)| then == value));
    assert_eq!(old.len(), 3, "the old entries keep their bytes");
    assert_eq!(new.len(), 1, "the new payout's");
    let entry = sika_engine::records::IdempotencyRecord::decode(&new[0].1).unwrap();
    assert_eq!(encode(&entry), new[0].1, "without the time");
}

/// Formats 11 to 23 stored a hold's reference whole (its entry's number
/// and its state); format 24 stores the state alone, one byte, when the
/// hold is numbered as its entry. After the upgrade a format 23 ledger's
/// payouts read as before, its held payout's holds are found and posted,
/// the settled holds keep their bytes, the posted ones are one byte, the
/// new journal entries store their transfers' ids as their own numbers,
/// and the books verify.
#[tokio::test]
async fn a_format_23_ledgers_holds_are_found_and_settle_and_new_references_are_one_byte() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f24").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let states = stored_records(&sandbox, Space::Transfer);
    lay_out_as(&sandbox, 23, |_| ());
    let whole = stored_records(&sandbox, Space::Transfer);
    let journal = stored_entries(&sandbox);
    assert!(journal.iter().all(|(_, entry)| as_format_23(entry) == *entry), "each id whole");
    // Each payout holds its amount and its fee.
    assert_eq!(states.len(), 6, "six holds");
    for ((key, state), (whole_key, all)) in states.iter().zip(&whole) {
        assert_eq!(key, whole_key);
        assert_eq!(state.len(), 1, "a hold's state alone");
        assert!(all.len() >= 2, "format 23 stored the entry's number too");
    }

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let after = stored_records(&sandbox, Space::Transfer);
    assert_eq!(after.len(), 6);
    let (kept, posted): (Vec<_>, Vec<_>) = after.iter().partition(|entry| whole.contains(entry));
    assert_eq!(kept.len(), 4, "the settled payouts' holds keep their bytes");
    assert!(posted.iter().all(|(_, value)| value.len() == 1), "the posted holds are one byte: {posted:?}");
    // The held payout's three entries (its holds posted, its amount
    // delivered) store their ids as 0, the entry's number; the old ones
    // keep their bytes.
    let (old, new): (Vec<_>, Vec<_>) =
        stored_entries(&sandbox).into_iter().partition(|entry| journal.contains(entry));
    assert_eq!(old.len(), journal.len());
    assert_eq!(new.len(), 3);
    assert!(new.iter().all(|(_, entry)| as_format_23(entry) != *entry), "each id as the entry's number");
}

/// A journal entry's bytes as formats 19 to 23 stored it.
fn as_format_23(entry: &[u8]) -> Vec<u8> {
    decode::<sika_engine::records::JournalEntry>(entry).unwrap().encode_as_format_23()
}

const REQUESTS: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("requests");
/// Format 11's table of a request log's order of writing.
const REQUEST_ORDER: redb::TableDefinition<u64, &str> = redb::TableDefinition::new("order");

/// Format 11 kept a request log's order of writing in a table of its own;
/// format 12 drops it and keeps the entries in the order of their ids,
/// which are made in order. A format 11 log's entries are still found
/// after the upgrade, and they are the first to go when the log is trimmed.
#[tokio::test]
async fn a_format_11_request_logs_entries_are_found_and_trimmed_oldest_first_after_the_upgrade() {
    let Some(()) = embedded_store() else { return };
    let retention = [("SIKA_REQUEST_LOG_RETENTION", "5")];
    let mut node = Node::start_with_env(Options::unthrottled(), &retention);
    let api = Api::new();
    let before = logged_reads(&api, &node, &node.creds.sandbox_key, 3).await;
    node.stop();

    let path = node.data_dir().join("sandbox-requests.redb");
    let laid_out = {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let ids: Vec<String> = {
            let entries = txn.open_table(REQUESTS).unwrap();
            entries.iter().unwrap().map(|e| e.unwrap().0.value().to_string()).collect()
        };
        let mut order = txn.open_table(REQUEST_ORDER).unwrap();
        for (seq, id) in (1u64..).zip(&ids) {
            order.insert(seq, id.as_str()).unwrap();
        }
        drop(order);
        txn.open_table(STAMP).unwrap().insert("format_version", 11).unwrap();
        txn.commit().unwrap();
        ids
    };
    for id in &before {
        assert!(laid_out.contains(id), "the clean stop wrote {id}: {laid_out:?}");
    }

    node.restart(&Options::unthrottled(), &retention);
    for id in &before {
        assert!(in_log(&api, &node, id).await, "{id} is found after the upgrade");
    }
    // Four more reads of this organization: the oldest of its 7 go first.
    let after = logged_reads(&api, &node, &node.creds.sandbox_key, 4).await;
    let newest = after.last().unwrap().clone();
    eventually(
        "the newest read written and the oldest two trimmed",
        std::time::Duration::from_secs(10),
        || async {
            (in_log(&api, &node, &newest).await && !in_log(&api, &node, &before[1]).await).then_some(())
        },
    )
    .await;
    assert!(!in_log(&api, &node, &before[0]).await, "the oldest entry went first");
    assert!(in_log(&api, &node, &before[2]).await, "the third of five newest stays");
    node.stop_and_verify();

    assert_eq!(stamp(&path), Some(FORMAT_VERSION));
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    assert!(
        matches!(txn.open_table(REQUEST_ORDER), Err(redb::TableError::TableDoesNotExist(_))),
        "format 12 drops the table of the order of writing"
    );
}

/// The records of `space` that a copy of a stopped node's ledger holds
/// once laid out as format `version`: how the format after a test's own
/// stored them, where the ledger itself now holds later formats' records.
fn laid_out_records(sandbox: &Path, version: u32, space: Space) -> Vec<(Vec<u8>, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.redb");
    std::fs::copy(sandbox, &copy).unwrap();
    lay_out_as(&copy, version, |_| ());
    stored_records(&copy, space)
}

/// The key format 26 gives the idempotency entry formats 20 to 25 keyed
/// `key`.
fn digest_of(key: &[u8]) -> Vec<u8> {
    let (organization, operation, reference) = format25::reference_in(key).unwrap();
    keys::idempotency(organization, operation, reference)
}

/// The id of `three_payouts_one_held`'s held payout.
fn ids_held(payouts: &ThreePayouts) -> String {
    payouts.urls[2].rsplit('/').next().unwrap().to_string()
}

/// Formats 20 to 25 keyed an idempotency entry by its organization's and
/// operation's numbers and its reference's text; format 26 keys it by a
/// 16-byte digest of the three. After the upgrade a format 25 ledger's
/// references replay their payouts, a different body under one is
/// refused, every entry is keyed by a digest with its bytes unchanged, a
/// new payout's entry is keyed in 17 bytes whatever its reference's
/// length, and the books verify.
#[tokio::test]
async fn a_format_25_ledgers_references_replay_after_their_entries_are_keyed_by_digests() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f26").await;

    let sandbox = node.data_dir().join("sandbox.redb");
    let digests = laid_out_records(&sandbox, 26, Space::IdempotencyDigest);
    lay_out_as(&sandbox, 25, |_| ());
    let by_reference = stored_records(&sandbox, Space::Idempotency);
    assert_eq!(by_reference.len(), 3, "the three payouts' references");
    assert!(stored_records(&sandbox, Space::IdempotencyDigest).is_empty(), "format 25 had no digests");
    assert!(
        by_reference.iter().all(|(key, _)| String::from_utf8_lossy(key).contains("f26-")),
        "format 25 keyed each entry by its reference's text"
    );

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let url = node.sandbox_url("/v1/payouts");
    each_reference_replays(&api, &node, &payouts, "f26").await;
    let other = api.post(&url, &key, mtn_payout("10.04", "f26-held")).await;
    other.expect_field(409, "duplicate", "externalReference");
    let long = format!("f26-{}", "r".repeat(96));
    let new = api.post(&url, &key, mtn_payout("1.00", &long)).await;
    new.expect(201);
    let again = api.post(&url, &key, mtn_payout("1.00", &long)).await;
    again.expect(200);
    assert_eq!(again.body["payout"]["id"], new.body["payout"]["id"], "the long reference replays");
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    assert!(stored_records(&sandbox, Space::Idempotency).is_empty(), "every entry moved");
    let stored = stored_records(&sandbox, Space::IdempotencyDigest);
    assert_eq!(stored.len(), 4, "and the new payout's");
    for entry in &digests {
        assert!(stored.contains(entry), "each entry moved to its digest with its bytes: {entry:?}");
    }
    assert!(stored.iter().all(|(key, _)| key.len() == 17), "a space byte and 16 bytes of digest");
}

/// Formats 1 to 26 stored each entry of an organization's events list as
/// the event's id (23 bytes); format 27 stores the event's number after a
/// zero byte. After the upgrade a format 26 ledger's events list the same
/// ids in the same order, page by page and one by one; the old entries
/// keep their bytes, the new payout's events are listed first and stored
/// in 5 bytes or fewer, and the books verify.
#[tokio::test]
async fn a_format_26_ledgers_events_list_as_before_and_new_entries_name_their_numbers() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f27").await;
    let sandbox = node.data_dir().join("sandbox.redb");
    let numbered = stored_records(&sandbox, Space::ListIndex);
    lay_out_as(&sandbox, 26, |_| ());
    let by_id = stored_records(&sandbox, Space::ListIndex);
    let events: Vec<_> = by_id.iter().filter(|entry| !numbered.contains(entry)).collect();
    // The deposit's event and the two settled payouts'.
    assert_eq!(events.len(), 1 + 2, "{} events listed by id", events.len());
    assert!(events.iter().all(|(_, value)| value.len() == 23), "format 26 stored each event's id");

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let url = node.sandbox_url("/v1/webhooks/events");
    let before = every_item(&api, &url, &key).await;
    assert_eq!(before.len(), events.len(), "every event lists");
    for event in &before {
        let id = event["id"].as_str().unwrap();
        let one = api.get(&node.sandbox_url(&format!("/v1/webhooks/events/{id}")), &key).await;
        one.expect(200);
        assert_eq!(&one.body["event"], event, "{id} by its id");
    }
    let new = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("1.00", "f27-new")).await;
    new.expect(201);
    eventually("the held payout to complete", std::time::Duration::from_secs(60), || async {
        (api.get(&payouts.urls[2], &key).await.body["payout"]["status"] == "completed").then_some(())
    })
    .await;
    let after = every_item(&api, &url, &key).await;
    assert!(after.len() > before.len(), "the new events list too");
    assert_eq!(
        after[after.len() - before.len()..],
        before[..],
        "the old events list as before, after the new"
    );
    assert!(
        after[..after.len() - before.len()].iter().any(|event| event["data"]["id"] == ids_held(&payouts)),
        "the held payout's event lists first"
    );
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let stored = stored_records(&sandbox, Space::ListIndex);
    for entry in &by_id {
        assert!(stored.contains(entry), "each old entry keeps its bytes: {entry:?}");
    }
    let added: Vec<_> = stored.iter().filter(|(key, _)| !by_id.iter().any(|(k, _)| k == key)).collect();
    let (numbers, ids): (Vec<_>, Vec<_>) =
        added.iter().copied().partition(|(_, value)| value.len() <= 5 && value[0] == 0);
    // Events may follow the last read (the new payout settling).
    assert!(numbers.len() >= after.len() - before.len(), "each new event is listed by its number: {added:?}");
    assert_eq!(ids.len(), 1, "the new payout, listed by its id: {added:?}");
}

/// Formats 14 to 27 stored an organization account in a journal entry as
/// its number (five bytes past 1,000,000,000); format 28 stores its count
/// past that number (one byte for the first 127 accounts). After the
/// upgrade a format 27 ledger's payouts and balance transactions read as
/// before, its held payout's holds are found and posted, the old entries
/// keep their bytes, the new ones that name the organization's account
/// are shorter than format 27 would have stored them, and the books
/// verify (the chain covers each account's number either way).
#[tokio::test]
async fn a_format_27_ledgers_journal_reads_the_same_and_new_entries_count_their_accounts() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f28").await;
    let sandbox = node.data_dir().join("sandbox.redb");
    let counted = stored_entries(&sandbox);
    lay_out_as(&sandbox, 27, |_| ());
    let numbered = stored_entries(&sandbox);
    assert_eq!(numbered.len(), counted.len());
    let longer =
        counted.iter().zip(&numbered).filter(|((_, now), (_, then))| then.len() == now.len() + 4).count();
    // The deposit, and each payout's two holds and what settled them.
    assert!(longer >= 7, "{longer} entries named the organization's account by number");
    assert!(numbered.iter().all(|(_, entry)| as_format_27(entry) == *entry), "every account numbered");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let (old, new): (Vec<_>, Vec<_>) =
        stored_entries(&sandbox).into_iter().partition(|entry| numbered.contains(entry));
    assert_eq!(old.len(), numbered.len(), "the old entries keep their bytes");
    // The held payout's holds posted and its amount delivered.
    assert_eq!(new.len(), 3);
    let shorter = new.iter().filter(|(_, entry)| as_format_27(entry).len() == entry.len() + 4).count();
    assert_eq!(shorter, 2, "the two posts name the organization's account by its count");
}

fn as_format_27(entry: &[u8]) -> Vec<u8> {
    decode::<sika_engine::records::JournalEntry>(entry).unwrap().encode_as_format_27()
}

/// Formats 1 to 28 named an idempotency entry's resource by its id (28
/// bytes for a payout's); format 29 names it by its position in the list
/// its create fills. After the upgrade a format 28 ledger's references
/// replay their payouts, a different body under one is refused, the old
/// entries keep their bytes, a new payout's entry is at most 21 bytes and
/// replays it too, and the books verify.
#[tokio::test]
async fn a_format_28_ledgers_references_replay_and_new_entries_name_their_resources_by_position() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f29").await;
    let sandbox = node.data_dir().join("sandbox.redb");
    let listed = stored_records(&sandbox, Space::IdempotencyDigest);
    lay_out_as(&sandbox, 28, |_| ());
    let by_id = stored_records(&sandbox, Space::IdempotencyDigest);
    assert_eq!(by_id.len(), 3, "the three payouts' references");
    for ((key, now), (old_key, then)) in listed.iter().zip(&by_id) {
        assert_eq!(key, old_key);
        assert!(
            now.len() <= 21 && then.len() >= now.len() + 20,
            "{} bytes by position, {} by id",
            now.len(),
            then.len()
        );
    }

    node.restart(&Options::unthrottled(), &SLOW);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let url = node.sandbox_url("/v1/payouts");
    each_reference_replays(&api, &node, &payouts, "f29").await;
    api.post(&url, &key, mtn_payout("20.02", "f29-completed")).await.expect_field(
        409,
        "duplicate",
        "externalReference",
    );
    let new = api.post(&url, &key, mtn_payout("1.00", "f29-new")).await;
    new.expect(201);
    let again = api.post(&url, &key, mtn_payout("1.00", "f29-new")).await;
    again.expect(200);
    assert_eq!(again.body["payout"], new.body["payout"], "the new reference replays its payout");
    api.post(&url, &key, mtn_payout("1.01", "f29-new")).await.expect_field(
        409,
        "duplicate",
        "externalReference",
    );
    node.stop_and_verify();

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    let stored = stored_records(&sandbox, Space::IdempotencyDigest);
    let (old, new): (Vec<_>, Vec<_>) = stored.into_iter().partition(|entry| by_id.contains(entry));
    assert_eq!(old.len(), 3, "the old entries keep their bytes");
    assert_eq!(new.len(), 1, "the new payout's");
    assert!(new[0].1.len() <= 21, "the fingerprint and the position: {} bytes", new[0].1.len());
}

/// Formats 10 to 29 stored each balance change apart from its journal
/// entry, keyed by the entry's and the account's numbers; format 30 stores
/// an entry's changes after its transfer. After the upgrade a format 29
/// ledger's payouts and balance transactions read as before, its held
/// payout completes, no change is left apart, each old entry holds exactly
/// the changes the books would have stored in it, and the books verify.
#[tokio::test]
async fn a_format_29_ledgers_balance_changes_move_into_their_journal_entries() {
    let Some(()) = embedded_store() else { return };
    let (mut node, payouts) = three_payouts_one_held("f30").await;
    let sandbox = node.data_dir().join("sandbox.redb");
    let written = stored_records(&sandbox, Space::Journal);
    assert!(stored_records(&sandbox, Space::BalanceChange).is_empty(), "the books store none apart");
    lay_out_as(&sandbox, 29, |_| ());
    let apart = stored_records(&sandbox, Space::BalanceChange);
    // The deposit, and each payout's two holds and what settled them.
    assert!(apart.len() >= 7, "{} balance changes apart", apart.len());
    let bare = stored_records(&sandbox, Space::Journal);
    let shorter = written.iter().zip(&bare).filter(|((_, now), (_, then))| then.len() < now.len()).count();
    let changed: std::collections::BTreeSet<u64> = apart
        .iter()
        .filter_map(|(key, _)| sika_engine::balance_changes::parse_key(key))
        .map(|(seq, _)| seq)
        .collect();
    assert_eq!(shorter, changed.len(), "each entry that changed a balance held its changes");

    read_the_same_and_the_held_payout_completes(&mut node, &payouts).await;

    assert_eq!(stamp(&sandbox), Some(FORMAT_VERSION));
    assert!(stored_records(&sandbox, Space::BalanceChange).is_empty(), "every change moved");
    let journal = stored_records(&sandbox, Space::Journal);
    assert!(journal.starts_with(&written), "the old entries hold what the books stored in them");
    assert_eq!(journal.len(), written.len() + 3, "the held payout's holds posted and its amount delivered");
}
