//! Format versions over the real binary: a data directory written by the
//! release before format versions (the committed fixture, made by
//! `tests/fixtures/make-format-fixture.py` with that release's binary and
//! left behind by a SIGKILL) opens, is upgraded, serves what it held and
//! verifies; a directory written by a newer format is refused with both
//! versions named, and nothing in it is touched; a ledger whose jobs
//! format 1 stored (whole commands) is upgraded to format 2 (job kinds) and
//! its jobs still run; and an identity database whose members have no
//! password and whose sessions no expiry (format 2) is upgraded to format 3,
//! its sessions still work and its members recover their accounts.

use std::path::{Path, PathBuf};

use crate::support::*;
use redb::{ReadableDatabase, ReadableTable};
use serde_json::{Value, json};
use sika_engine::storage::{RECORDS, Space, decode, encode, keys, prefix_end};
use sika_engine::{Command, Job};

const FORMAT_VERSION: u32 = 3;
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/format-0");
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
    // The embedded store's own files; on PostgreSQL the database's tools do this.
    if on_postgres() {
        return;
    }
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
    let payout = api
        .get(&node.sandbox_url(&format!("/v1/payouts/{}", expected["payoutId"].as_str().unwrap())), &key)
        .await;
    payout.expect(200);
    assert_eq!(payout.body["payout"]["status"], expected["payoutStatus"]);
    assert_eq!(payout.body["payout"]["externalReference"], "fixture-payout-1");
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

#[test]
fn verify_upgrades_a_directory_from_the_release_before_format_versions_as_opening_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    copy_dir(Path::new(FIXTURE), &data);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
        .args(["verify", "--data-dir"])
        .arg(&data)
        .env_remove("SIKA_DATA_DIR")
        .output()
        .unwrap();
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
    // The embedded store's own files; on PostgreSQL the database's tools do this.
    if on_postgres() {
        return;
    }
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
        jobs.len()
    };
    txn.open_table(STAMP).unwrap().insert("format_version", 1).unwrap();
    txn.commit().unwrap();
    rewritten
}

#[tokio::test]
async fn a_format_1_ledger_with_waiting_jobs_is_upgraded_and_its_jobs_run() {
    // The embedded store's own files; on PostgreSQL the database's tools do this.
    if on_postgres() {
        return;
    }
    // Slow enough that the rail's two steps (a note at 3 s, the outcome at
    // 6 s) still wait when the node stops.
    let slow = [("SIKA_TIME_SCALE", "0.1")];
    let mut node = Node::start_with_env(Options::unthrottled(), &slow);
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    // Cents 03: the rail times out, notes it, and then reconciles.
    let body = json!({
        "from": { "currency": "GHS", "amount": "20.03" },
        "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
        "externalReference": "format-1-jobs",
    });
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
    // The embedded store's own files; on PostgreSQL the database's tools do this.
    if on_postgres() {
        return;
    }
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
    api.call("POST", &node.sandbox_url("/v1/sessions"), None, Some(accept)).await.expect(201);
    let login = json!({ "email": email, "password": password });
    let session = api.call("POST", &node.live_url("/v1/sessions"), None, Some(login)).await;
    session.expect(201);
    api.get(&node.live_url("/v1/keys"), session.body["session"]["token"].as_str().unwrap()).await.expect(200);
    node.stop_and_verify();
    assert_eq!(stamp(&path), Some(FORMAT_VERSION));
}
