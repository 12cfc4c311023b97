//! Conversions over HTTP: walking the list with cursors while it grows, and
//! one quote executed by many clients at once.

use std::collections::HashSet;
use std::sync::Arc;

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

async fn convert(api: &Api, node: &Node, key: &str, from: &str, amount: &str, to: &str) -> Value {
    let q = quote(api, &node.sandbox, key, from, amount, to).await;
    let r = api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await;
    r.expect(201);
    r.body["conversion"].clone()
}

fn ids(page: &Value) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn walking_the_list_is_stable_while_it_grows() {
    // Its own node: the walk must see exactly this test's conversions.
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "USD", "1000.00").await;
    let mut created = Vec::new();
    for i in 0..45 {
        let amount = format!("{}.{:02}", 1 + i / 10, i % 100);
        let c = convert(&api, &node, &key, "USD", &amount, "GHS").await;
        assert!(c["id"].as_str().unwrap().starts_with("conv_"));
        assert_eq!(c["from"]["amount"], amount.as_str(), "amounts keep two digits");
        created.push(c["id"].as_str().unwrap().to_string());
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();

    let list = node.sandbox_url("/v1/conversions");
    let mut walked = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    let mut added = Vec::new();
    loop {
        let url = match &cursor {
            None => format!("{list}?limit=10"),
            Some(c) => format!("{list}?limit=10&cursor={c}"),
        };
        let page = api.get(&url, &key).await;
        page.expect(200);
        pages += 1;
        let page_ids = ids(&page.body);
        let has_more = page.body["hasMore"].as_bool().unwrap();
        let next = page.body["nextCursor"].as_str().map(str::to_string);
        assert_eq!(has_more, next.is_some(), "hasMore and nextCursor agree: {}", page.text);
        let stamps: Vec<&str> =
            page.body["data"].as_array().unwrap().iter().map(|c| c["createdAt"].as_str().unwrap()).collect();
        assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "newest first: {stamps:?}");
        walked.extend(page_ids.clone());
        if !has_more {
            assert_eq!(page_ids.len(), 5, "the last page holds the remainder");
            assert!(page.body["nextCursor"].is_null());
            break;
        }
        assert_eq!(page_ids.len(), 10);
        assert!(pages < 10, "the walk does not end");
        // The list grows while it is walked.
        added
            .push(convert(&api, &node, &key, "USD", "0.50", "GHS").await["id"].as_str().unwrap().to_string());
        cursor = next;
    }
    assert_eq!(pages, 5, "45 conversions at 10 a page");
    let unique: HashSet<&String> = walked.iter().collect();
    assert_eq!(unique.len(), walked.len(), "no repeats");
    assert_eq!(
        walked, newest_first,
        "exactly the conversions that existed when the walk began, newest first"
    );

    // A fresh walk shows the new ones first.
    let fresh = api.get(&format!("{list}?limit=100"), &key).await;
    fresh.expect(200);
    assert_eq!(fresh.body["hasMore"], false);
    let expected: Vec<String> = added.iter().rev().chain(newest_first.iter()).cloned().collect();
    assert_eq!(ids(&fresh.body), expected);
    // The default page size is 20.
    let default = api.get(&list, &key).await;
    assert_eq!(ids(&default.body), expected[..20].to_vec());
    assert_eq!(default.body["hasMore"], true);
    // One conversion read alone matches its list entry.
    let one = api.get(&node.sandbox_url(&format!("/v1/conversions/{}", expected[7])), &key).await;
    one.expect(200);
    assert_eq!(one.body["conversion"], fresh.body["data"][7]);
    // The live stack has none of them.
    let live = api.get(&node.live_url("/v1/conversions"), &node.creds.live_key).await;
    assert_eq!(live.body["data"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_quote_executed_by_32_clients_converts_once() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, node, &key, "NGN", "100000.00").await;
    for round in 0..3 {
        let ngn_before = minor(&balance(&api, &node.sandbox, &key, "NGN").await, 2);
        let kes_before = minor(&balance(&api, &node.sandbox, &key, "KES").await, 2);
        let q = quote(&api, &node.sandbox, &key, "NGN", "1550.00", "KES").await;
        let quote_id = q["id"].as_str().unwrap().to_string();
        let barrier = Arc::new(tokio::sync::Barrier::new(32));
        let url = node.sandbox_url("/v1/conversions");
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let (barrier, url, key, quote_id) = (barrier.clone(), url.clone(), key.clone(), quote_id.clone());
            tasks.push(tokio::spawn(async move {
                let api = Api::new(); // its own connection
                barrier.wait().await;
                api.post(&url, &key, json!({ "quoteId": quote_id })).await
            }));
        }
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.unwrap());
        }
        let mut conversion_ids = HashSet::new();
        let mut created = 0;
        for r in &answers {
            match r.status {
                200 | 201 => {
                    created += usize::from(r.status == 201);
                    conversion_ids.insert(r.body["conversion"]["id"].as_str().unwrap().to_string());
                    assert_eq!(r.body["conversion"]["quoteId"], quote_id.as_str());
                }
                _ => {
                    r.expect_error(400, "bad_request");
                }
            }
        }
        assert_eq!(created, 1, "round {round}: exactly one 201");
        assert_eq!(
            conversion_ids.len(),
            1,
            "round {round}: every success names one conversion: {conversion_ids:?}"
        );
        let conversion_id = conversion_ids.into_iter().next().unwrap();

        let list = api.get(&node.sandbox_url("/v1/conversions?limit=100"), &key).await;
        let of_quote: Vec<&Value> = list.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["quoteId"] == quote_id.as_str())
            .collect();
        assert_eq!(of_quote.len(), 1, "round {round}: one conversion of the quote exists");
        assert_eq!(of_quote[0]["id"], conversion_id.as_str());

        let ngn_after = minor(&balance(&api, &node.sandbox, &key, "NGN").await, 2);
        let kes_after = minor(&balance(&api, &node.sandbox, &key, "KES").await, 2);
        assert_eq!(
            ngn_before - ngn_after,
            minor(q["from"]["amount"].as_str().unwrap(), 2),
            "round {round}: debited once"
        );
        assert_eq!(
            kes_after - kes_before,
            minor(q["to"]["amount"].as_str().unwrap(), 2),
            "round {round}: credited once"
        );
        let read = api.get(&node.sandbox_url(&format!("/v1/conversions/quotes/{quote_id}")), &key).await;
        assert_eq!(read.body["quote"]["status"], "executed");
        assert_eq!(read.body["quote"]["conversionId"], conversion_id.as_str());
    }
}

#[tokio::test]
async fn a_quote_for_a_fixed_to_amount_and_the_rate_it_locks() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    deposit(&api, node, &key, "EUR", "100.00").await;
    let r = api
        .post(
            &node.sandbox_url("/v1/conversions/quotes"),
            &key,
            json!({ "from": { "currency": "eur" }, "to": { "currency": "XOF", "amount": 6000 } }),
        )
        .await;
    r.expect(201);
    let q = &r.body["quote"];
    assert!(q["id"].as_str().unwrap().starts_with("qte_"));
    assert_eq!((q["from"]["currency"].as_str(), q["to"]["currency"].as_str()), (Some("EUR"), Some("XOF")));
    assert_eq!(q["to"]["amount"], "6000", "XOF has no fraction digits");
    assert_eq!(q["status"], "pending");
    let rate = api.get(&node.sandbox_url("/v1/rates/EUR/XOF"), &key).await;
    assert_eq!(
        rate.body["rate"]["rate"].as_str().map(|r| r.parse::<f64>().unwrap()),
        q["rate"].as_str().map(|r| r.parse::<f64>().unwrap())
    );
    let c = api.post(&node.sandbox_url("/v1/conversions"), &key, json!({ "quoteId": q["id"] })).await;
    c.expect(201);
    let conversion = &c.body["conversion"];
    assert_eq!(conversion["status"], "completed");
    assert_eq!(conversion["to"]["amount"], "6000");
    assert_eq!(conversion["from"]["amount"], q["from"]["amount"]);
    assert!(conversion["from"]["accountNumber"].as_str().unwrap().starts_with("EUR"));
    assert!(conversion["to"]["accountNumber"].as_str().unwrap().starts_with("XOF"));
    assert_eq!(balance(&api, &node.sandbox, &key, "XOF").await, "6000");
    // The bought currency is an inflow: account.credited fires for it, as
    // for a deposit, carrying the credited account (issue 15.4).
    let xof = conversion["to"]["accountNumber"].as_str().unwrap();
    let credited: Vec<Value> = events_named(&api, &node.sandbox, &key, "account.credited")
        .await
        .into_iter()
        .filter(|e| e["data"]["id"] == xof)
        .collect();
    assert_eq!(credited.len(), 1, "one account.credited for the conversion's credit: {credited:?}");
    assert_eq!(credited[0]["data"]["availableBalance"], "6000");
}
