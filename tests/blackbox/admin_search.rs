//! The operator's search across the node (`GET /admin/v1/search`) and in
//! the console: any part of an id, reference, phone number, email or
//! amount finds the payout or payment link that holds it.

use crossterm::event::KeyCode;
use serde_json::{Value, json};
use sika_tui::Detail;

use crate::support::console::Console;
use crate::support::{Sandbox, deposit, mtn_payout_to};

fn hits(body: &Value) -> Vec<(String, String, String)> {
    body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|h| {
            let text = |k: &str| h[k].as_str().unwrap_or_default().to_string();
            (text("kind"), text("id"), text("field"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_any_part_of_ids_references_phones_emails_and_amounts() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let admin = node.creds.admin_token.clone();
    deposit(&api, &node, &key, "GHS", "300.00").await;
    let payout = api
        .post(
            &node.sandbox_url("/v1/payouts"),
            &key,
            mtn_payout_to("+233249876543", "37.45", "inv-search-42"),
        )
        .await;
    payout.expect(201);
    let payout_id = payout.body["payout"]["id"].as_str().expect("a payout").to_string();
    let link = api
        .post(
            &node.sandbox_url("/v1/payment-links"),
            &key,
            json!({ "currency": "GHS", "title": "Scarves", "allowedMethods": ["mobile_money"], "amount": "12.00", "email": "Kofi.Search@example.com" }),
        )
        .await;
    link.expect(201);
    let link_id = link.body["paymentLink"]["id"].as_str().expect("a link").to_string();

    let search = |query: &str| node.admin_url(&format!("/admin/v1/search?{query}"));
    for (query, kind, id, field) in [
        ("q=249876", "payout", &payout_id, "to.accountNumber"),
        ("q=SEARCH-42", "payout", &payout_id, "externalReference"),
        ("q=37.4", "payout", &payout_id, "from.amount"),
        (&format!("q={}", &payout_id[4..14]), "payout", &payout_id, "id"),
        ("q=kofi.search", "payment_link", &link_id, "email"),
    ] {
        let found = api.get(&search(query), &admin).await;
        found.expect(200);
        let want = (kind.to_string(), id.clone(), field.to_string());
        assert!(hits(&found.body).contains(&want), "{query}: {}", found.body);
        assert_eq!(found.body["scanLimitReached"], false);
        assert!(found.body["scanned"].as_u64().unwrap() >= 2);
    }
    let live = api.get(&search("q=249876&stack=live"), &admin).await;
    live.expect(200);
    assert_eq!(live.body["data"], json!([]), "the payout is on the sandbox stack");
    let sandbox = api.get(&search("q=249876&stack=sandbox"), &admin).await;
    assert_eq!(sandbox.body["data"][0]["stack"], "sandbox");
    assert_eq!(sandbox.body["data"][0]["organizationId"], node.creds.organization_id.as_str());

    api.get(&search(""), &admin).await.expect_invalid("q");
    api.get(&search("q=a"), &admin).await.expect_invalid("q");
    api.get(&search("q=249876&stack=mars"), &admin).await.expect_invalid("stack");
    api.get(&search("q=249876&colour=red"), &admin).await.expect_invalid("colour");
    api.get(&search("q=249876"), &key).await.expect_error(401, "unauthorized");

    // The console: `/` on the Overview, then Enter on the hit opens the
    // payout's timeline.
    let url = node.admin.clone();
    let found = tokio::task::spawn_blocking(move || console_search(&url, &admin, "249876")).await.unwrap();
    assert_eq!(found, payout_id);
}

/// Searches in the console and opens the first hit; returns the id of the
/// movement it opened.
fn console_search(url: &str, token: &str, text: &str) -> String {
    let mut console = Console::new(url, token);
    console.press(KeyCode::Char('/'));
    console.type_text(text);
    console.press(KeyCode::Enter);
    let Some(Detail::Search { results, .. }) = &console.app.detail else {
        panic!("results: {:?}", console.app.detail)
    };
    assert_eq!(results.data.as_ref().map(|r| r.data.len()), Some(1), "{results:?}");
    console.press(KeyCode::Enter);
    match &console.app.detail {
        Some(Detail::Movement { id, data, .. }) => {
            assert!(data.data.is_some(), "the timeline loaded: {data:?}");
            id.clone()
        }
        other => panic!("expected the payout's timeline, got {other:?}"),
    }
}
