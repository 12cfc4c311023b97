//! Issue 29.2, tenant disk starvation (CONTRACT.md, "Limits this round
//! adds"). An audit filled an 80 MiB disk in half a second with 75 sandbox
//! uploads of 512 KiB, after which live `POST /v1/collections` and live
//! `/readyz` answered 503. Now an organization's files take at most
//! `files_bytes_max` per stack (`413 validation_error` past it, `DELETE
//! /v1/files/{id}` gives room back), and below `disk_reserve` of free space
//! the sandbox refuses writes while the live stack goes on.

use std::time::Duration;

use crate::support::disk::SmallFilesystem;
use crate::support::*;
use serde_json::{Value, json};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// `bytes` zero bytes in standard base64 (every 3 bytes are `AAAA`).
fn zeros(bytes: u64) -> String {
    let tail = match bytes % 3 {
        1 => "AA==",
        2 => "AAA=",
        _ => "",
    };
    "AAAA".repeat(usize::try_from(bytes / 3).unwrap()) + tail
}

async fn upload(api: &Api, base: &str, key: &str, name: &str, bytes: u64) -> Resp {
    let body = json!({ "name": name, "contentType": "application/pdf", "data": zeros(bytes) });
    api.post(&format!("{base}/v1/files"), key, body).await
}

async fn file_ids(api: &Api, base: &str, key: &str) -> Vec<String> {
    every_item(api, &format!("{base}/v1/files"), key)
        .await
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

async fn delete(api: &Api, base: &str, key: &str, id: &str) -> Resp {
    api.call("DELETE", &format!("{base}/v1/files/{id}"), Some(key), None).await
}

#[track_caller]
fn over_quota(r: &Resp, limit: u64, used: u64) {
    r.expect_field(413, "validation_error", "data");
    assert_eq!(r.body["details"]["limit"], limit, "{}", r.text);
    assert_eq!(r.body["details"]["used"], used, "{}", r.text);
}

#[tokio::test]
async fn the_file_quota_refuses_past_its_limit_and_deleting_a_file_gives_room_back() {
    let node = Node::start_with_env(Options::unthrottled(), &[("SIKA_FILES_BYTES_MAX", "2MiB")]);
    let (api, key, base) = (Api::new(), node.creds.sandbox_key.clone(), node.sandbox.clone());
    let (limit, size) = (2 * MIB, 512 * KIB);
    let mut kept = Vec::new();
    for n in 0..4 {
        let r = upload(&api, &base, &key, &format!("evidence-{n}.pdf"), size).await;
        kept.push(r.created("file", "file_").1);
    }
    // The fifth would pass 2 MiB: refused, naming the limit and the use.
    over_quota(&upload(&api, &base, &key, "one-too-many.pdf", size).await, limit, limit);
    over_quota(&upload(&api, &base, &key, "one-byte.pdf", 1).await, limit, limit);
    let mut listed = file_ids(&api, &base, &key).await;
    listed.sort();
    let mut expected = kept.clone();
    expected.sort();
    assert_eq!(listed, expected, "a refused upload stores nothing");

    // The quota is the organization's on this stack: another organization,
    // and the same organization on live, each have their own.
    let (_, other_key) = organization_b(&api, &node).await;
    upload(&api, &base, &other_key, "b.pdf", size).await.expect(201);
    upload(&api, &node.live, &node.creds.live_key, "live.pdf", size).await.expect(201);

    // Deleting a file answers as the contract's other deletes, and frees it.
    let gone = kept.remove(0);
    let r = delete(&api, &base, &key, &gone).await;
    r.expect(200);
    assert_eq!(r.body, json!({ "file": { "id": gone, "deleted": true } }));
    api.get(&format!("{base}/v1/files/{gone}"), &key).await.expect_error(404, "not_found");
    delete(&api, &base, &key, &gone).await.expect_error(404, "not_found");
    // Organization B's key cannot see, so cannot delete, this one's files.
    delete(&api, &base, &other_key, &kept[0]).await.expect_error(404, "not_found");
    assert!(!file_ids(&api, &base, &key).await.contains(&gone));
    let r = upload(&api, &base, &key, "room-again.pdf", size).await;
    kept.push(r.created("file", "file_").1);
    over_quota(&upload(&api, &base, &key, "full-again.pdf", 1).await, limit, limit);

    // Racing uploads cannot pass the limit together: with room for two
    // files, two of eight concurrent uploads are stored and six refused.
    for id in kept.drain(..2) {
        delete(&api, &base, &key, &id).await.expect(200);
    }
    let racers = (0..8).map(|n| {
        let (api, key, base) = (api.clone(), key.clone(), base.clone());
        tokio::spawn(async move { upload(&api, &base, &key, &format!("race-{n}.pdf"), size).await })
    });
    let mut answers = Vec::new();
    for racer in racers {
        answers.push(racer.await.unwrap());
    }
    let stored: Vec<&Resp> = answers.iter().filter(|r| r.status == 201).collect();
    assert_eq!(stored.len(), 2, "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    for refused in answers.iter().filter(|r| r.status != 201) {
        over_quota(refused, limit, limit);
    }
    kept.extend(stored.iter().map(|r| r.body["file"]["id"].as_str().unwrap().to_string()));
    assert_eq!(file_ids(&api, &base, &key).await.len(), 4);

    // A file a dispute message attaches is kept with it: 409, still readable.
    let (_, paid) = collect_until(&api, &node, mtn_collection("25.00", "quota-paid"), "completed").await;
    let r = api
        .post(&format!("{base}/v1/simulations/disputes"), &key, json!({ "collectionId": paid["id"] }))
        .await;
    let (_, dispute) = r.created("dispute", "dsp_");
    let message = json!({ "body": "Receipt attached.", "attachments": [{ "fileId": kept[0] }] });
    api.post(&format!("{base}/v1/disputes/{dispute}/messages"), &key, message).await.expect(201);
    let r = delete(&api, &base, &key, &kept[0]).await;
    r.expect_error(409, "invalid_state");
    assert!(r.body["details"]["messageId"].as_str().unwrap().starts_with("dsm_"), "{}", r.text);
    let contents = format!("{base}/v1/files/{}/contents", kept[0]);
    let read = api.client.get(&contents).bearer_auth(&key).send().await.unwrap();
    assert_eq!((read.status().as_u16(), read.bytes().await.unwrap().len() as u64), (200, size));
    // Another file still goes, and a message cannot then attach it.
    delete(&api, &base, &key, &kept[1]).await.expect(200);
    let message = json!({ "body": "And this.", "attachments": [{ "fileId": kept[1] }] });
    let r = api.post(&format!("{base}/v1/disputes/{dispute}/messages"), &key, message).await;
    r.expect_field(400, "validation_error", "attachments[0].fileId");
    node.stop_and_verify();
}

/// `sika config check` reads both sizes from `[node]`, in either form, and
/// names the key of one it cannot read.
#[test]
fn config_check_reads_the_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let check = |toml: &str| {
        let path = dir.path().join("sika.toml");
        std::fs::write(&path, toml).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sika"))
            .args(["config", "check", "--config"])
            .arg(&path)
            .env_remove("SIKA_FILES_BYTES_MAX")
            .env_remove("SIKA_DISK_RESERVE")
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    assert_eq!(
        check("[node]\nfiles_bytes_max = \"64MiB\"\ndisk_reserve = \"1GiB\"\n"),
        (true, String::new())
    );
    assert_eq!(check("[node]\nfiles_bytes_max = 1048576\ndisk_reserve = 0\n"), (true, String::new()));
    let (ok, problems) = check("[node]\nfiles_bytes_max = \"64MB\"\ndisk_reserve = \"lots\"\n");
    assert!(!ok);
    assert!(
        problems.contains("node.files_bytes_max") && problems.contains("node.disk_reserve"),
        "{problems}"
    );
    assert_eq!(problems.lines().count(), 2, "one line per problem: {problems}");
}

/// Free bytes on the filesystem holding `dir`, as the node counts them.
fn free_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the zeroed struct on this stack from a
    // NUL-terminated path that outlives the call.
    unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(path.as_ptr(), &mut stats), 0);
        stats.f_bavail * stats.f_frsize
    }
}

/// The audit's attack on an 80 MiB disk: sandbox uploads until refused.
/// They stop at the reserve with `503 storage_unavailable` (and other
/// sandbox writes with them) while sandbox reads, live writes and liveness
/// go on, and readiness answers 503 naming `sandbox: disk reserve`. Once
/// space is freed the sandbox writes again, and the books verify.
#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn a_sandbox_filling_the_disk_stops_at_the_reserve_and_the_live_stack_goes_on() {
    let Some(disk) = SmallFilesystem::mount(80) else {
        return cannot_run(
            "a_sandbox_filling_the_disk_stops_at_the_reserve_and_the_live_stack_goes_on",
            "this machine does not let the test mount a tmpfs (it needs root)",
        );
    };
    let options = Options::unthrottled();
    let mut node = Node::start(options.clone());
    node.stop();
    let data = disk.path().join("data");
    let copied = std::process::Command::new("cp").arg("-a").arg(node.data_dir()).arg(&data).status().unwrap();
    assert!(copied.success());
    // Room the operator can free later, to show the sandbox resumes.
    let headroom = disk.path().join("headroom");
    std::fs::write(&headroom, vec![1u8; 40 * MIB as usize]).unwrap();
    let reserve = 32 * MIB;
    let env = [
        ("SIKA_DATA_DIR", data.to_str().unwrap()),
        ("SIKA_DISK_RESERVE", "32MiB"),
        // The quota is not what stops this tenant here.
        ("SIKA_FILES_BYTES_MAX", "1GiB"),
    ];
    node.restart(&options, &env);
    let api = Api::new();
    let (sandbox_key, live_key) = (node.creds.sandbox_key.clone(), node.creds.live_key.clone());
    let ready = || async { reqwest::get(node.live_url("/readyz")).await.unwrap() };
    assert_eq!(ready().await.status(), 200, "ready with {} MiB free", free_bytes(disk.path()) / MIB);

    let mut stored = 0;
    let refusal = loop {
        let r = upload(&api, &node.sandbox, &sandbox_key, &format!("fill-{stored}.pdf"), 512 * KIB).await;
        if r.status != 201 {
            break r;
        }
        stored += 1;
        assert!(
            stored < 160,
            "80 MiB cannot hold {stored} uploads of 512 KiB: the reserve never stopped them"
        );
    };
    refusal.expect_error(503, "storage_unavailable");
    assert!(refusal.body["message"].as_str().unwrap().contains("disk reserve"), "{}", refusal.text);
    assert!(stored > 0, "the sandbox wrote until the reserve");
    // What the last uploads admitted above the reserve still write (their
    // log, a new log file, the checkpoint into the database) goes below
    // it, but the disk never fills: the live stack has room.
    let free = free_bytes(disk.path());
    assert!(free < reserve, "refused only below the reserve: {} KiB free", free / KIB);
    // Every sandbox write is refused, not only uploads; reads go on.
    let deposits = node.sandbox_url("/v1/simulations/deposits");
    api.post(&deposits, &sandbox_key, json!({ "currency": "GHS", "amount": "1.00" }))
        .await
        .expect_error(503, "storage_unavailable");
    assert_eq!(file_ids(&api, &node.sandbox, &sandbox_key).await.len(), stored);

    // The live stack goes on: collections are taken and complete.
    for n in 0..5 {
        let r = api
            .post(&node.live_url("/v1/collections"), &live_key, mtn_collection("10.00", &format!("live-{n}")))
            .await;
        r.created("collection", "col_");
    }
    let healthz = reqwest::get(node.live_url("/healthz")).await.unwrap();
    assert_eq!(healthz.status(), 200);
    let readiness = ready().await;
    assert_eq!(readiness.status(), 503);
    let body: Value = readiness.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    let reasons: Vec<&str> =
        body["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(reasons.iter().any(|r| r.starts_with("sandbox: disk reserve")), "{reasons:?}");
    assert!(!reasons.iter().any(|r| r.starts_with("live")), "the live stack writes: {reasons:?}");
    assert!(
        free_bytes(disk.path()) >= MIB,
        "the disk never filled: {} KiB free",
        free_bytes(disk.path()) / KIB
    );

    // The operator frees space: the sandbox writes again, by itself.
    std::fs::remove_file(&headroom).unwrap();
    eventually("ready again", Duration::from_secs(15), || async {
        (ready().await.status() == 200).then_some(())
    })
    .await;
    upload(&api, &node.sandbox, &sandbox_key, "after.pdf", 512 * KIB).await.expect(201);
    api.post(&deposits, &sandbox_key, json!({ "currency": "GHS", "amount": "1.00" })).await.expect(201);
    node.stop();
    verify_dir(&data);
}
