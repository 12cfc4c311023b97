//! Recipients (single, bulk, and as payout destinations), virtual accounts
//! with the representative rule on each stack, and deposits into virtual
//! accounts. Each test runs its own node and ends by stopping it and
//! verifying its books.

use std::collections::HashSet;

use crate::support::*;
use serde_json::{Value, json};

fn recipient(name: &str, code: &str, account_number: &str) -> Value {
    json!({ "name": name, "email": "ama@example.com", "code": code, "accountNumber": account_number })
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn recipients_single_bulk_and_as_payout_destinations() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let url = node.sandbox_url("/v1/recipients");

    // One at a time.
    let r = api.post(&url, &key, recipient("Ama Mensah", "mtn_gh", MTN_PHONE)).await;
    let (ama, ama_id) = r.created("recipient", "rcp_");
    assert_eq!(ama["name"], "Ama Mensah");
    assert_eq!(ama["code"], "mtn_gh");
    assert_eq!(ama["currency"], "GHS", "the method's currency");
    assert_eq!(ama["accountNumber"], MTN_PHONE);
    let r = api.get(&format!("{url}/{ama_id}"), &key).await;
    r.expect(200);
    assert_eq!(r.body["recipient"], ama);
    api.get(&format!("{url}/rcp_missing"), &key).await.expect_error(404, "not_found");
    api.post(&url, &key, recipient("Ama", "nope_gh", MTN_PHONE)).await.expect_invalid("code");
    api.post(&url, &key, json!({ "name": "No Number", "code": "mtn_gh" }))
        .await
        .expect_invalid("accountNumber");
    api.post(&url, &key, json!({ "name": "No Wallet", "code": "usdc_base" })).await.expect_invalid("address");
    // The other stack does not see it.
    api.get(&node.live_url(&format!("/v1/recipients/{ama_id}")), &node.creds.live_key)
        .await
        .expect_error(404, "not_found");

    // In bulk: a result per item, in order; valid items are created, invalid ones are not.
    let items = json!([
        recipient("Kofi Boateng", "telecel_gh", "+233201234567"),
        { "name": "", "code": "mtn_gh", "accountNumber": MTN_PHONE },
        recipient("Kwame Asante", "bank_gh", "0123456789"),
        { "name": "Wallet", "code": "usdc_base", "address": "0x742d35Cc6634C0532925a3b844Bc454e4438f44e", "tag": "7" },
        recipient("Nobody", "unknown_gh", "1"),
        { "name": "Extra", "code": "mtn_gh", "accountNumber": MTN_PHONE, "colour": "red" },
    ]);
    let r = api.post(&format!("{url}/bulk"), &key, json!({ "items": items })).await;
    r.expect(200);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    let statuses: Vec<&str> = results.iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["created", "failed", "created", "created", "failed", "failed"]);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["index"], i, "results in item order: {}", r.text);
    }
    assert_eq!(results[0]["recipient"]["name"], "Kofi Boateng");
    assert_eq!(results[1]["error"]["error"], "validation_error");
    assert_eq!(results[1]["error"]["details"]["field"], "items[1].name");
    assert_eq!(results[2]["recipient"]["code"], "bank_gh");
    assert_eq!(results[3]["recipient"]["currency"], "USDC");
    assert_eq!(results[3]["recipient"]["tag"], "7");
    assert_eq!(results[4]["error"]["details"]["field"], "items[4].code");
    assert_eq!(results[5]["error"]["error"], "validation_error");
    let created: Vec<&str> =
        [0, 2, 3].iter().map(|i| results[*i]["recipient"]["id"].as_str().unwrap()).collect();
    for id in &created {
        api.get(&format!("{url}/{id}"), &key).await.expect(200);
    }

    // More than 100 items, or none, is refused as a whole.
    let many: Vec<Value> = (0..101).map(|i| recipient(&format!("R{i}"), "mtn_gh", MTN_PHONE)).collect();
    api.post(&format!("{url}/bulk"), &key, json!({ "items": many })).await.expect_invalid("items");
    api.post(&format!("{url}/bulk"), &key, json!({ "items": [] })).await.expect_invalid("items");
    let hundred: Vec<Value> = (0..100).map(|i| recipient(&format!("R{i}"), "mtn_gh", MTN_PHONE)).collect();
    let r = api.post(&format!("{url}/bulk"), &key, json!({ "items": hundred })).await;
    r.expect(200);
    assert!(r.body["results"].as_array().unwrap().iter().all(|x| x["status"] == "created"));

    // The list: 1 + 3 + 100 recipients, newest first, in pages.
    let first = api.get(&format!("{url}?limit=100"), &key).await;
    first.expect(200);
    assert_eq!(first.body["data"].as_array().unwrap().len(), 100);
    assert_eq!(first.body["hasMore"], true);
    let cursor = first.body["nextCursor"].as_str().unwrap();
    let rest = api.get(&format!("{url}?limit=100&cursor={cursor}"), &key).await;
    rest.expect(200);
    let rest_ids: Vec<&str> =
        rest.body["data"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(rest_ids, vec![created[2], created[1], created[0], ama_id.as_str()]);
    assert_eq!(rest.body["hasMore"], false);

    // A payout naming a recipient pays that destination.
    deposit(&api, &node, &key, "GHS", "500.00").await;
    let payout = |recipient_id: &str, reference: &str| {
        json!({ "from": { "currency": "GHS", "amount": "20.00" },
                "to": { "recipientId": recipient_id }, "externalReference": reference })
    };
    let payouts = node.sandbox_url("/v1/payouts");
    let r = api.post(&payouts, &key, payout(&ama_id, "to-ama")).await;
    r.expect(201);
    let to = &r.body["payout"]["to"];
    assert_eq!(to["recipientId"], ama_id.as_str());
    assert_eq!(to["code"], "mtn_gh");
    assert_eq!(to["accountNumber"], MTN_PHONE);
    assert_eq!(to["currency"], "GHS");
    let id = r.body["payout"]["id"].as_str().unwrap();
    let done = poll_until(&api, &node.sandbox_url(&format!("/v1/payouts/{id}")), &key, |b| {
        b["payout"]["status"] == "completed"
    })
    .await;
    assert_eq!(done["payout"]["to"]["accountNumber"], MTN_PHONE);
    // A bank recipient: its own method, account and fee.
    let r = api.post(&payouts, &key, payout(created[1], "to-kwame")).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["to"]["code"], "bank_gh");
    assert_eq!(r.body["payout"]["to"]["accountNumber"], "0123456789");
    assert_eq!(r.body["payout"]["fee"]["amount"], "2.10", "bank_gh: 2.00 + 0.5 %");
    // A USDC recipient cannot be paid from GHS at a GHS amount without naming the currency.
    api.post(&payouts, &key, payout(created[2], "to-wallet")).await.expect_invalid("to.currency");
    api.post(&payouts, &key, payout("rcp_missing", "to-nobody")).await.expect_invalid("to.recipientId");
    // A live recipient id means nothing on the sandbox and the reverse.
    let live = api
        .post(&node.live_url("/v1/recipients"), &node.creds.live_key, recipient("Live", "mtn_gh", MTN_PHONE))
        .await;
    live.expect(201);
    let live_id = live.body["recipient"]["id"].as_str().unwrap();
    api.post(&payouts, &key, payout(live_id, "to-live")).await.expect_invalid("to.recipientId");
    // A recipient whose account the sandbox cannot find is refused at payout time.
    let r = api.post(&url, &key, recipient("Closed", "mtn_gh", "+233241000000")).await;
    r.expect(201);
    let closed = r.body["recipient"]["id"].as_str().unwrap();
    api.post(&payouts, &key, payout(closed, "to-closed")).await.expect_invalid("to.accountNumber");
    node.stop_and_verify();
}

fn representative() -> Value {
    json!({
        "fullName": "Ama Mensah",
        "phone": "+233241234567",
        "idNumber": "GHA-123456789-0",
        "country": "GH",
    })
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn virtual_accounts_and_the_representative() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let session = node.creds.owner_session.clone();
    let va_url = node.sandbox_url("/v1/virtual-accounts");
    let rep_url = node.sandbox_url("/v1/organization/representative");

    // Sandbox: no representative yet; a GHS account fills the default.
    api.get(&rep_url, &key).await.expect_error(404, "not_found");
    let r = api.post(&va_url, &key, json!({ "currency": "GHS", "customerReference": "cust-1" })).await;
    let (va, va_id) = r.created("virtualAccount", "va_");
    assert_eq!(va["currency"], "GHS");
    assert_eq!(va["customerReference"], "cust-1");
    assert_eq!(va["status"], "active");
    assert_eq!(va["bankName"], "Sika Partner Bank Ghana");
    let number = va["accountNumber"].as_str().unwrap();
    assert!(number.len() == 10 && number.chars().all(|c| c.is_ascii_digit()), "{va}");
    let r = api.get(&rep_url, &key).await;
    r.expect(200);
    let default = r.body["representative"].clone();
    assert_eq!(default["status"], "sandbox_default");
    assert!(default["id"].as_str().unwrap().starts_with("rep_"));
    assert!(default["fullName"].as_str().unwrap().chars().count() >= 2);
    // A second account keeps the same default.
    api.post(&va_url, &key, json!({ "currency": "GHS" })).await.expect(201);
    let r = api.get(&rep_url, &key).await;
    assert_eq!(r.body["representative"], default);
    let r = api.get(&format!("{va_url}/{va_id}"), &key).await;
    r.expect(200);
    assert_eq!(r.body["virtualAccount"], va);
    let list = api.get(&va_url, &key).await;
    list.expect(200);
    assert_eq!(list.body["data"].as_array().unwrap().len(), 2);
    api.get(&format!("{va_url}/va_missing"), &key).await.expect_error(404, "not_found");
    api.post(&va_url, &key, json!({ "currency": "XYZ" })).await.expect_invalid("currency");

    // A deposit into the virtual account lands on the balance and fires account.credited.
    let deposits = node.sandbox_url(&format!("/v1/simulations/virtual-accounts/{va_id}/deposits"));
    let r = api.post(&deposits, &key, json!({ "amount": "75.00" })).await;
    r.expect(201);
    assert_eq!(r.body["deposit"]["virtualAccountId"], va_id.as_str());
    assert_eq!(r.body["deposit"]["amount"], "75.00");
    assert_eq!(r.body["deposit"]["currency"], "GHS");
    assert_eq!(balances_minor(&api, &node.sandbox, &key, "GHS", 2).await, (7_500, 0));
    let r = api.post(&deposits, &key, json!({ "amount": "25.00", "externalReference": "va-dep-1" })).await;
    r.expect(201);
    let again =
        api.post(&deposits, &key, json!({ "amount": "25.00", "externalReference": "va-dep-1" })).await;
    again.expect(200);
    assert_eq!(again.body["deposit"]["id"], r.body["deposit"]["id"], "a replayed deposit is the same one");
    assert_eq!(balances_minor(&api, &node.sandbox, &key, "GHS", 2).await, (10_000, 0), "credited once");
    let credited = events_named(&api, &node.sandbox, &key, "account.credited").await;
    assert_eq!(credited.len(), 2, "{credited:?}");
    assert_eq!(credited[0]["data"]["currency"], "GHS");
    assert_eq!(credited[0]["data"]["availableBalance"], "75.00");
    assert_eq!(credited[1]["data"]["availableBalance"], "100.00");
    api.post(&deposits, &key, json!({ "amount": "1.001" })).await.expect_invalid("amount");
    api.post(
        &node.sandbox_url("/v1/simulations/virtual-accounts/va_missing/deposits"),
        &key,
        json!({ "amount": "1.00" }),
    )
    .await
    .expect_error(404, "not_found");
    // Other currencies need no representative.
    let r = api.post(&va_url, &key, json!({ "currency": "NGN", "accountName": "Shop" })).await;
    r.expect(201);
    assert_eq!(r.body["virtualAccount"]["accountName"], "Shop");

    // Setting the representative replaces the sandbox default.
    let r = api.call("PUT", &rep_url, Some(&key), Some(representative())).await;
    r.expect_error(403, "forbidden");
    // A country is two letters A-Z; a name is not only spaces (issue 15.11).
    for (field, value) in
        [("country", "G1"), ("country", "é"), ("fullName", "     "), ("fullName", "Ama\u{7}")]
    {
        let mut bad = representative();
        bad[field] = json!(value);
        api.call("PUT", &rep_url, Some(&session), Some(bad)).await.expect_invalid(field);
    }
    let r = api.call("PUT", &rep_url, Some(&session), Some(representative())).await;
    r.expect(200);
    assert_eq!(r.body["representative"]["status"], "active");
    assert_eq!(r.body["representative"]["fullName"], "Ama Mensah");

    // Live: no representative, no GHS account.
    let key = node.creds.live_key.clone();
    let va_url = node.live_url("/v1/virtual-accounts");
    let rep_url = node.live_url("/v1/organization/representative");
    api.get(&rep_url, &key).await.expect_error(404, "not_found");
    api.post(&va_url, &key, json!({ "currency": "GHS" })).await.expect_error(422, "representative_required");
    api.get(&rep_url, &key).await.expect_error(404, "not_found");
    assert_eq!(api.get(&va_url, &key).await.body["data"], json!([]), "nothing was opened");
    api.post(&va_url, &key, json!({ "currency": "USD" })).await.expect(201);
    api.call("PUT", &rep_url, Some(&key), Some(representative())).await.expect_error(403, "forbidden");
    let mut bad = representative();
    bad["idNumber"] = json!("GHA-1-0");
    api.call("PUT", &rep_url, Some(&session), Some(bad)).await.expect_invalid("idNumber");
    let r = api.call("PUT", &rep_url, Some(&session), Some(representative())).await;
    r.expect(200);
    assert_eq!(r.body["representative"]["status"], "active");
    let r = api.post(&va_url, &key, json!({ "currency": "GHS" })).await;
    let (_, live_va) = r.created("virtualAccount", "va_");
    assert_eq!(api.get(&rep_url, &key).await.body["representative"]["status"], "active");
    // Live has no simulations.
    let r = api
        .post(
            &node.live_url(&format!("/v1/simulations/virtual-accounts/{live_va}/deposits")),
            &key,
            json!({ "amount": "1.00" }),
        )
        .await;
    r.expect_error(404, "not_found");
    assert_eq!(balances_minor(&api, &node.live, &key, "GHS", 2).await, (0, 0));
    node.stop_and_verify();
}

/// A GHS customer has one virtual account (issue 15.19): asking again, even
/// by eight requests racing, answers the same account, and only one opens.
#[tokio::test]
async fn a_ghs_customer_has_one_virtual_account() {
    let (node, api, key) = unthrottled_node();
    let url = node.sandbox_url("/v1/virtual-accounts");
    let body = json!({ "currency": "GHS", "customerReference": "cust-17" });
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (api, url, key, body) = (api.clone(), url.clone(), key.clone(), body.clone());
            tokio::spawn(async move {
                let r = api.post(&url, &key, body).await;
                (r.status, r.body["virtualAccount"]["id"].as_str().unwrap_or_default().to_string())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(answers.iter().filter(|(s, _)| *s == 201).count(), 1, "{answers:?}");
    assert_eq!(answers.iter().filter(|(s, _)| *s == 200).count(), 7, "{answers:?}");
    let ids: HashSet<&String> = answers.iter().map(|(_, id)| id).collect();
    assert_eq!(ids.len(), 1, "one account for the customer: {answers:?}");
    let r = api.get(&url, &key).await;
    let ghs: Vec<&Value> =
        r.body["data"].as_array().unwrap().iter().filter(|a| a["currency"] == "GHS").collect();
    assert_eq!(ghs.len(), 1, "{}", r.text);
    // Another customer gets their own.
    let other = api.post(&url, &key, json!({ "currency": "GHS", "customerReference": "cust-18" })).await;
    other.expect(201);
    assert_ne!(other.body["virtualAccount"]["id"].as_str(), ids.into_iter().next().map(String::as_str));
}
