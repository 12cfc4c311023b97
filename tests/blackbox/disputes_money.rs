//! Disputes that move money, end to end over HTTP against the real binary:
//! the hold at opening (both balances fall), the shortfall a balance owes
//! when it held less than the amount and the inflows that fill it (a
//! deposit, a completed collection, a released payout hold: each its own
//! ledger entry, each firing `dispute.updated`), `accepted` taking the whole
//! amount (what is held, then the rest from the next inflows), `declined`
//! releasing the hold, `POST /v1/disputes/{id}/accept` with its scope and
//! refusals, and payouts racing a dispute's opening without a balance ever
//! going negative. Every test ends by stopping its node and verifying its
//! books (`sika verify` recounts each dispute's holds from the ledger).

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

const GHS: u32 = 2;

/// A completed sandbox collection of `amount` GHS; returns its id.
async fn paid(api: &Api, node: &Node, amount: &str, reference: &str) -> String {
    let (_, settled) = collect_until(api, node, mtn_collection(amount, reference), "completed").await;
    settled["id"].as_str().unwrap().to_string()
}

async fn open_dispute(api: &Api, node: &Node, body: Value) -> (Value, String) {
    let r = api.post(&node.sandbox_url("/v1/simulations/disputes"), &node.creds.sandbox_key, body).await;
    r.created("dispute", "dsp_")
}

async fn get_dispute(api: &Api, node: &Node, id: &str) -> Value {
    let r = api.get(&node.sandbox_url(&format!("/v1/disputes/{id}")), &node.creds.sandbox_key).await;
    r.expect(200);
    r.body["dispute"].clone()
}

/// (available, total) of the GHS balance, in minor units.
async fn ghs(api: &Api, node: &Node) -> (i128, i128) {
    let account =
        account_of(api, &node.sandbox, &node.creds.sandbox_key, "GHS").await.expect("a GHS balance");
    (
        minor(account["availableBalance"].as_str().unwrap(), GHS),
        minor(account["totalBalance"].as_str().unwrap(), GHS),
    )
}

/// The GHS balance's account id.
async fn ghs_account(api: &Api, node: &Node) -> String {
    let account =
        account_of(api, &node.sandbox, &node.creds.sandbox_key, "GHS").await.expect("a GHS balance");
    account["id"].as_str().unwrap().to_string()
}

/// The ledger entries of `account` whose memo names `dispute`, oldest first
/// (the operator's view of an account's journal).
async fn dispute_entries(api: &Api, node: &Node, account: &str, dispute: &str) -> Vec<Value> {
    let url = node.admin_url(&format!("/admin/v1/sandbox/ledger/accounts/{account}/entries"));
    let mut entries: Vec<Value> = every_item(api, &url, &node.creds.admin_token)
        .await
        .into_iter()
        .filter(|e| e["memo"].as_str().is_some_and(|m| m.contains(dispute)))
        .collect();
    entries.reverse();
    entries
}

/// The data of every event named `name` for dispute `id`, oldest first.
async fn dispute_events(api: &Api, node: &Node, id: &str, name: &str) -> Vec<Value> {
    events_named(api, &node.sandbox, &node.creds.sandbox_key, name)
        .await
        .into_iter()
        .filter(|e| e["data"]["id"] == id)
        .map(|e| e["data"].clone())
        .collect()
}

/// Waits until the dispute's `heldAmount` is `held`; returns the dispute.
async fn until_held(api: &Api, node: &Node, id: &str, held: &str) -> Value {
    let url = node.sandbox_url(&format!("/v1/disputes/{id}"));
    poll_until(api, &url, &node.creds.sandbox_key, |b| b["dispute"]["heldAmount"] == held).await["dispute"]
        .clone()
}

#[tokio::test]
async fn opening_holds_the_amount_and_declining_releases_it() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;
    let collection = paid(&api, &node, "25.00", "dm-paid").await;
    let (available, total) = ghs(&api, &node).await;
    assert!(available >= 2_000, "the payment is on the balance: {available}");

    let (opened, id) =
        open_dispute(&api, &node, json!({ "collectionId": collection, "amount": "10.00" })).await;
    assert_eq!(opened["heldAmount"], "10.00");
    assert_eq!(opened["outcome"], Value::Null);
    assert_eq!(opened["status"], "open");
    // A pending debit, as a payout's hold: both balances fall.
    assert_eq!(ghs(&api, &node).await, (available - 1_000, total - 1_000));
    assert_eq!(get_dispute(&api, &node, &id).await, opened);
    assert_eq!(sink.wait_for("dispute.created", &id).await["data"], opened, "the event is the GET");

    let r = api
        .post(
            &node.sandbox_url(&format!("/v1/simulations/disputes/{id}/resolve")),
            &key,
            json!({ "outcome": "declined" }),
        )
        .await;
    r.expect(200);
    let declined = r.body["dispute"].clone();
    assert_eq!(declined["status"], "declined");
    assert_eq!(declined["outcome"], "won");
    assert_eq!(declined["heldAmount"], "0.00", "the hold is released");
    assert_eq!(ghs(&api, &node).await, (available, total), "the balance has it all back");
    assert_eq!(get_dispute(&api, &node, &id).await, declined);
    let closed = sink.wait_for("dispute.closed", &id).await;
    assert_eq!(closed["data"], declined);
    assert_eq!(closed["data"]["outcome"], "won");
    let entries = dispute_entries(&api, &node, &ghs_account(&api, &node).await, &id).await;
    let kinds: Vec<(&str, &str)> =
        entries.iter().map(|e| (e["kind"].as_str().unwrap(), e["amount"].as_str().unwrap())).collect();
    assert_eq!(kinds.len(), 2, "a hold and its release: {entries:?}");

    // Declined, nothing is held for it any more: a later deposit stays whole.
    deposit(&api, &node, &key, "GHS", "5.00").await;
    assert_eq!(ghs(&api, &node).await, (available + 500, total + 500));
    assert_eq!(get_dispute(&api, &node, &id).await["heldAmount"], "0.00");
    node.stop_and_verify();
}

#[tokio::test]
async fn a_shortfall_is_held_from_the_next_inflows_each_its_own_entry() {
    // Time at twice real time: a payout settles 4 s after it is made, so
    // the rejected one is released after the dispute opened.
    let node = Node::start(Options { time_scale: Some(2.0), ..Options::unthrottled() });
    let (api, key, base) = (Api::new(), node.creds.sandbox_key.clone(), node.sandbox.clone());
    let sink = WebhookSink::registered(&api, &base, &key).await;
    let collection = paid(&api, &node, "25.00", "dm-short").await;
    // Spend most of it: what is left is less than the dispute.
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("18.00", "dm-spend")).await;
    r.expect(201);
    // A payout the rail rejects: its hold comes back later, an inflow too.
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("2.01", "dm-rejected")).await;
    let (_, rejected) = r.created("payout", "pay_");
    let rejected_fee = minor(r.body["payout"]["fee"]["amount"].as_str().unwrap(), GHS);
    assert!(rejected_fee > 0, "{}", r.body);
    let rejected_total = 201 + rejected_fee;
    let (left, _) = ghs(&api, &node).await;
    assert!(left > 0 && left < 1_000, "less than the dispute is available: {left}");

    let (opened, id) =
        open_dispute(&api, &node, json!({ "collectionId": collection, "amount": "10.00" })).await;
    let held = |v: &Value| minor(v["heldAmount"].as_str().unwrap(), GHS);
    assert_eq!(held(&opened), left, "what is available is held");
    assert_eq!(opened["amount"], "10.00");
    assert_eq!(ghs(&api, &node).await.0, 0, "never negative: the balance is just empty");

    // The rejected payout's release is two inflows (its amount's hold, then
    // its fee's): each held for the dispute first.
    let url = node.sandbox_url(&format!("/v1/payouts/{rejected}"));
    poll_until(&api, &url, &key, |b| b["payout"]["status"] == "failed").await;
    let after_release = left + rejected_total;
    let dispute = get_dispute(&api, &node, &id).await;
    assert_eq!(held(&dispute), after_release.min(1_000), "{dispute}");
    assert_eq!(ghs(&api, &node).await.0, 0);

    // A deposit: held for it, first.
    deposit(&api, &node, &key, "GHS", "1.00").await;
    let dispute = get_dispute(&api, &node, &id).await;
    assert_eq!(held(&dispute), (after_release + 100).min(1_000));
    assert_eq!(ghs(&api, &node).await.0, 0);
    let updated = dispute_events(&api, &node, &id, "dispute.updated").await;
    assert_eq!(updated.len(), 3, "one dispute.updated per inflow: {updated:?}");
    let helds: Vec<i128> = updated.iter().map(held).collect();
    assert_eq!(helds, [left + 201, after_release, after_release + 100], "heldAmount as each inflow left it");
    assert_eq!(updated.last().unwrap(), &dispute, "the event carries the dispute as the GET shows it");
    assert_eq!(sink.wait_for("dispute.updated", &id).await["data"]["status"], "open");

    // A completed collection fills the rest; the remainder is the merchant's.
    let (available_before, _) = ghs(&api, &node).await;
    paid(&api, &node, "10.00", "dm-fill").await;
    let filled = until_held(&api, &node, &id, "10.00").await;
    assert_eq!(filled["outcome"], Value::Null);
    let owed = 1_000 - (after_release + 100);
    assert_eq!(ghs(&api, &node).await.0, available_before + 1_000 - owed);
    let updated = dispute_events(&api, &node, &id, "dispute.updated").await;
    assert_eq!(updated.len(), 4, "{updated:?}");
    assert_eq!(updated.last().unwrap()["heldAmount"], "10.00");

    // Each inflow's hold is its own ledger entry, and nothing more is held.
    let account = ghs_account(&api, &node).await;
    let entries = dispute_entries(&api, &node, &account, &id).await;
    let amounts: Vec<i128> = entries.iter().map(|e| minor(e["amount"].as_str().unwrap(), GHS)).collect();
    assert_eq!(amounts, [left, 201, rejected_fee, 100, owed], "{entries:?}");
    assert!(entries.iter().all(|e| e["side"] == "debit"), "{entries:?}");
    deposit(&api, &node, &key, "GHS", "3.00").await;
    assert_eq!(get_dispute(&api, &node, &id).await["heldAmount"], "10.00");
    assert_eq!(dispute_entries(&api, &node, &account, &id).await.len(), 5);
    node.stop_and_verify();
}

#[tokio::test]
async fn accepting_takes_the_hold_and_the_rest_from_the_next_inflows() {
    let Sandbox { node, api, key, base } = Sandbox::start();
    let sink = WebhookSink::registered(&api, &base, &key).await;
    let collection = paid(&api, &node, "12.00", "dm-accept").await;
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("6.00", "dm-accept-spend")).await;
    r.expect(201);
    let (left, total_before) = ghs(&api, &node).await;
    assert!(left > 0 && left < 1_000, "{left}");
    let (_, id) = open_dispute(&api, &node, json!({ "collectionId": collection, "amount": "10.00" })).await;
    let accept = node.sandbox_url(&format!("/v1/disputes/{id}/accept"));

    // The scope: disputes:write.
    let reader = scoped_key(&api, &node, "disputes reader", &["disputes:read"]).await;
    api.post(&accept, &reader, json!({})).await.expect_error(403, "forbidden");
    api.post(&node.sandbox_url("/v1/disputes/dsp_nope/accept"), &key, json!({}))
        .await
        .expect_error(404, "not_found");
    assert_eq!(get_dispute(&api, &node, &id).await["status"], "open", "a refusal changes nothing");

    let r = api.post(&accept, &key, json!({})).await;
    r.expect(200);
    let accepted = r.body["dispute"].clone();
    assert_eq!(accepted["status"], "accepted");
    assert_eq!(accepted["outcome"], "lost");
    assert_eq!(minor(accepted["heldAmount"].as_str().unwrap(), GHS), left, "what was held is taken");
    assert!(accepted["resolvedAt"].is_string());
    // Taken: what was pending is now debited; neither balance moves again.
    assert_eq!(ghs(&api, &node).await, (0, total_before - left));
    assert_eq!(get_dispute(&api, &node, &id).await, accepted);
    assert_eq!(sink.wait_for("dispute.closed", &id).await["data"], accepted);
    assert_eq!(sink.wait_for("dispute.updated", &id).await["data"]["outcome"], "lost");

    // Already resolved: refused, by the merchant and by the simulation.
    api.post(&accept, &key, json!({})).await.expect_error(409, "invalid_state");
    let resolve = node.sandbox_url(&format!("/v1/simulations/disputes/{id}/resolve"));
    api.post(&resolve, &key, json!({ "outcome": "declined" })).await.expect_error(409, "invalid_state");

    // The rest of the amount is taken from the next inflow, first.
    deposit(&api, &node, &key, "GHS", "20.00").await;
    let taken = get_dispute(&api, &node, &id).await;
    assert_eq!(taken["heldAmount"], "10.00", "the whole amount is taken: {taken}");
    assert_eq!(taken["outcome"], "lost");
    assert_eq!(ghs(&api, &node).await.0, 2_000 - (1_000 - left));
    let updated = dispute_events(&api, &node, &id, "dispute.updated").await;
    assert_eq!(updated.last().unwrap(), &taken, "dispute.updated fires when heldAmount changes");
    let names = event_names_for(&api, &base, &key, &id).await;
    assert_eq!(names, ["dispute.created", "dispute.updated", "dispute.closed", "dispute.updated"]);
    // A hold, its taking, then the rest taken from the deposit.
    let entries = dispute_entries(&api, &node, &ghs_account(&api, &node).await, &id).await;
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert_eq!(minor(entries[2]["amount"].as_str().unwrap(), GHS), 1_000 - left);

    // The operator's resolution moves the money the same way.
    let second = paid(&api, &node, "4.00", "dm-accept-2").await;
    let (available, _) = ghs(&api, &node).await;
    let (_, other) = open_dispute(&api, &node, json!({ "collectionId": second })).await;
    assert_eq!(ghs(&api, &node).await.0, available - 400);
    let admin_resolve = node.admin_url(&format!("/admin/v1/sandbox/disputes/{other}/resolve"));
    let r = api.post(&admin_resolve, &node.creds.admin_token, json!({ "outcome": "accepted" })).await;
    r.expect(200);
    assert_eq!(r.body["dispute"]["outcome"], "lost");
    assert_eq!(r.body["dispute"]["heldAmount"], "4.00");
    assert_eq!(ghs(&api, &node).await.0, available - 400);
    api.post(&admin_resolve, &node.creds.admin_token, json!({ "outcome": "accepted" }))
        .await
        .expect_error(409, "invalid_state");
    node.stop_and_verify();
}

/// Payouts and a dispute's opening race for one balance: whatever order
/// the writer takes them in, no balance goes below zero, the dispute holds
/// exactly what the payouts left when it held less than its amount, and
/// every minor unit is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payouts_racing_a_dispute_opening_never_take_a_balance_below_zero() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    for round in 0..3 {
        let collection = paid(&api, &node, "40.00", &format!("dm-race-{round}")).await;
        let (available, _) = ghs(&api, &node).await;
        // Eight payouts and the opening, all in flight at once.
        let mut payouts = tokio::task::JoinSet::new();
        for i in 0..8 {
            let (api, url, key) = (api.clone(), node.sandbox_url("/v1/payouts"), key.clone());
            payouts.spawn(async move {
                api.post(&url, &key, mtn_payout("6.00", &format!("dm-race-{round}-{i}"))).await
            });
        }
        let body = json!({ "collectionId": collection, "amount": "40.00" });
        let (api2, url, key2) = (api.clone(), node.sandbox_url("/v1/simulations/disputes"), key.clone());
        let dispute = tokio::spawn(async move { api2.post(&url, &key2, body).await });
        let answers: Vec<Resp> = payouts.join_all().await;
        let opened = dispute.await.unwrap();
        opened.expect(201);
        let held = minor(opened.body["dispute"]["heldAmount"].as_str().unwrap(), GHS);
        let mut spent = 0;
        for r in &answers {
            match r.status {
                201 => {
                    spent += minor(r.body["payout"]["amount"].as_str().unwrap_or("6.00"), GHS)
                        + minor(r.body["payout"]["fee"]["amount"].as_str().unwrap(), GHS);
                }
                422 => assert_eq!(r.error(), "insufficient_funds", "{:?}", r.body),
                other => panic!("payout answered {other}: {:?}", r.body),
            }
        }
        let (now, total) = ghs(&api, &node).await;
        assert!(now >= 0 && total >= 0, "never negative: {now} {total}");
        assert!(held <= 4_000);
        assert_eq!(now + held + spent, available, "round {round}: every unit accounted for");
        if held < 4_000 {
            assert_eq!(now, 0, "round {round}: a dispute short of its amount holds all that is available");
        }
        // Release the dispute so the next round starts from the payments.
        let id = opened.body["dispute"]["id"].as_str().unwrap();
        let resolve = node.sandbox_url(&format!("/v1/simulations/disputes/{id}/resolve"));
        api.post(&resolve, &key, json!({ "outcome": "declined" })).await.expect(200);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(ghs(&api, &node).await.0 >= 0);
    node.stop_and_verify();
}

/// A dispute opened before disputes moved money has no money of its own
/// in the engine (made here by taking its record out of a stopped node's
/// file): it shows `heldAmount` `0.00`, later inflows stay whole, and
/// resolving it moves nothing while its events still carry `outcome`.
#[tokio::test]
async fn a_dispute_from_before_disputes_moved_money_resolves_without_moving_any() {
    let Some(()) = embedded_store() else { return };
    let mut node = Node::start(Options::unthrottled());
    let (api, key) = (Api::new(), node.creds.sandbox_key.clone());
    let collection = paid(&api, &node, "8.00", "dm-legacy").await;
    // 6.93 and its fee (1.00 + 1 %, rounded half up: 1.07) spend all 8.00,
    // so the dispute holds nothing and has no ledger entry.
    let r = api.post(&node.sandbox_url("/v1/payouts"), &key, mtn_payout("6.93", "dm-legacy-spend")).await;
    r.expect(201);
    assert_eq!(ghs(&api, &node).await.0, 0);
    let (opened, id) = open_dispute(&api, &node, json!({ "collectionId": collection })).await;
    assert_eq!(opened["heldAmount"], "0.00");
    node.stop();
    {
        use sika_engine::storage::{RECORDS, keys};
        let path = node.data_dir().join("sandbox.redb");
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            assert!(table.remove(keys::dispute(&id).as_slice()).unwrap().is_some(), "its money record");
            let organization = &node.creds.organization_id;
            let owed = keys::dispute_shortfalls(organization, "GHS");
            assert!(table.remove(owed.as_slice()).unwrap().is_some(), "the balance owed it");
        }
        txn.commit().unwrap();
    }
    node.restart(&Options::unthrottled(), &[]);
    let api = Api::new();
    let before = get_dispute(&api, &node, &id).await;
    assert_eq!(
        (&before["status"], &before["heldAmount"], &before["outcome"]),
        (&json!("open"), &json!("0.00"), &Value::Null)
    );
    deposit(&api, &node, &key, "GHS", "3.00").await;
    assert_eq!(ghs(&api, &node).await.0, 300, "nothing is held for it");
    let r = api.post(&node.sandbox_url(&format!("/v1/disputes/{id}/accept")), &key, json!({})).await;
    r.expect(200);
    let accepted = r.body["dispute"].clone();
    assert_eq!(
        (&accepted["status"], &accepted["outcome"], &accepted["heldAmount"]),
        (&json!("accepted"), &json!("lost"), &json!("0.00"))
    );
    assert_eq!(ghs(&api, &node).await.0, 300, "resolving it moves no money");
    assert_eq!(get_dispute(&api, &node, &id).await, accepted);
    let closed = dispute_events(&api, &node, &id, "dispute.closed").await;
    assert_eq!(closed, [accepted]);
    node.stop_and_verify();
}
