//! The dashboard's money pages over plain HTTP against the real binary
//! (`support::dashboard`): balances, the balance transactions list and a
//! statement show the API's own numbers, formatted per currency; the CSV
//! downloads are the API's exports, served with the dashboard's cookie
//! session; payment pages and links are listed, made, copied, closed and
//! show their payments. An owner uses each control; a viewer sees none,
//! and their forged POST (with a valid CSRF token) is refused with the
//! API's 403, changing nothing.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::dashboard::{Dashboard, Page};
use crate::support::team::{PASSWORD, member_with_role, owned_org};
use crate::support::{Api, MTN_PHONE, Node, Options, create_key, deposit, eventually};

/// An amount as the dashboard writes it: `GHS 1,270.00`.
fn shown(currency: &str, amount: &str) -> String {
    let (sign, digits) = amount.strip_prefix('-').map_or(("", amount), |rest| ("-", rest));
    let (whole, fraction) = digits.split_once('.').map_or((digits, None), |(w, f)| (w, Some(f)));
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match fraction {
        Some(f) => format!("{currency} {sign}{grouped}.{f}"),
        None => format!("{currency} {sign}{grouped}"),
    }
}

/// The texts of the cells of the table row with this id.
fn cells(page: &Page, id: &str) -> Vec<String> {
    let start = page.text.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}: {}", page.text));
    let row = &page.text[start..start + page.text[start..].find("</tr>").unwrap()];
    row.split("<t").skip(1).map(|cell| text_of(&format!("<t{cell}"))).collect()
}

/// An HTML fragment's text, tags dropped.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// The ids in the first column of the table with this id.
fn first_column(page: &Page, table: &str) -> Vec<String> {
    let Some(start) = page.text.find(&format!("id=\"{table}\"")) else { return Vec::new() };
    let body = &page.text[start..start + page.text[start..].find("</table>").unwrap()];
    body.split("<tr>").skip(2).map(|row| text_of(&row[..row.find("</td>").unwrap()])).collect()
}

/// The `href` of the link with this id, unescaped.
fn href(page: &Page, id: &str) -> String {
    let at = page.text.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}: {}", page.text));
    let tag_start = page.text[..at].rfind('<').unwrap();
    let tag = &page.text[tag_start..at + page.text[at..].find('>').unwrap()];
    let from = tag.find("href=\"").unwrap() + 6;
    tag[from..from + tag[from..].find('"').unwrap()].replace("&amp;", "&").replace("&#38;", "&")
}

fn ids(items: &Value) -> Vec<String> {
    items.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
}

/// Balances, the list (filters and pages), a statement and the four
/// downloads show exactly what the API answers, for an owner and for a
/// viewer; a download needs the session, and bad input gets the API's 400.
#[tokio::test]
async fn balances_statement_and_downloads_show_the_apis_numbers() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "money@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    deposit(&api, &node, &key, "GHS", "1250.00").await;
    deposit(&api, &node, &key, "USD", "20.00").await;
    for i in 0..20 {
        deposit(&api, &node, &key, "GHS", &format!("1.{i:02}")).await;
    }
    member_with_role(&api, &node, &owner, "viewer@money.example", "viewer").await;
    let accounts = api.get(&node.sandbox_url("/v1/accounts"), &key).await.body["data"].clone();
    for (email, who) in [("money@shop.example", "owner"), ("viewer@money.example", "viewer")] {
        let dash = Dashboard::new(&node.sandbox);
        dash.log_in(email, PASSWORD).await;
        let page = dash.get("/dashboard/balances").await;
        assert_eq!(page.status, 200, "{who}: {}", page.text);
        for account in accounts.as_array().unwrap() {
            let currency = account["currency"].as_str().unwrap();
            let money = |field: &str| shown(currency, account[field].as_str().unwrap());
            assert_eq!(
                cells(&page, &format!("balance-{currency}")),
                [
                    currency.to_string(),
                    money("availableBalance"),
                    money("pendingBalance"),
                    money("totalBalance")
                ],
                "{who}"
            );
        }
        assert!(
            cells(&page, "balance-GHS")[1].starts_with("GHS 1,"),
            "grouped: {:?}",
            cells(&page, "balance-GHS")
        );
        // Pages of twenty, as the API's list pages them.
        let first = api.get(&node.sandbox_url("/v1/balance-transactions?limit=20"), &key).await;
        assert_eq!(first_column(&page, "transactions"), ids(&first.body["data"]), "{who}");
        let cursor = first.body["nextCursor"].as_str().unwrap();
        let second = api
            .get(&node.sandbox_url(&format!("/v1/balance-transactions?limit=20&cursor={cursor}")), &key)
            .await;
        let next = dash.get(&href(&page, "next-page")).await;
        assert_eq!(first_column(&next, "transactions"), ids(&second.body["data"]), "{who}");
        assert!(!next.has("next-page"), "{who}: two pages in all");
        assert_eq!(page.text.matches("method=\"post\"").count(), 1, "{who}: no form writes but log-out");
        // The filters are the API's.
        let usd = dash.get("/dashboard/balances?currency=USD&type=deposit").await;
        let api_usd =
            api.get(&node.sandbox_url("/v1/balance-transactions?currency=USD&type=deposit"), &key).await;
        assert_eq!(first_column(&usd, "transactions"), ids(&api_usd.body["data"]));
        let row = &api_usd.body["data"][0];
        assert!(usd.text.contains(&shown("USD", row["availableAfter"].as_str().unwrap())), "{}", usd.text);
        assert!(dash.get("/dashboard/balances?type=refund").await.has("no-transactions"));
        let bad = dash.get("/dashboard/balances?type=gift").await;
        assert_eq!(bad.status, 400, "the API's refusal: {}", bad.text);
        assert!(bad.element("refusal").unwrap_or_default().contains("must be one of"), "{}", bad.text);

        statement_matches_the_api(&node, &api, &key, &dash).await;
        downloads_are_the_apis_exports(&node, &api, &key, &dash, &page).await;
    }
    // Without a session, a download is the log-in page, not a file.
    let stranger = Dashboard::new(&node.sandbox).get("/dashboard/exports/payouts.csv").await;
    assert_eq!(stranger.path, "/dashboard/login", "{}", stranger.text);
}

/// A statement for a period: opening, each type's total and closing, the
/// API's numbers; a bad period is the API's 400.
async fn statement_matches_the_api(node: &Node, api: &Api, key: &str, dash: &Dashboard) {
    let query = "currency=GHS&from=2020-01-01&to=2100-01-01";
    let page = dash.get(&format!("/dashboard/balances/statement?{query}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let statement =
        api.get(&node.sandbox_url(&format!("/v1/statements?{query}")), key).await.body["statement"].clone();
    let ghs = |v: &Value| shown("GHS", v.as_str().unwrap());
    assert_eq!(
        cells(&page, "opening")[2..],
        [ghs(&statement["opening"]["available"]), ghs(&statement["opening"]["total"])]
    );
    assert_eq!(
        cells(&page, "closing")[2..],
        [ghs(&statement["closing"]["available"]), ghs(&statement["closing"]["total"])]
    );
    assert_eq!(ghs(&statement["closing"]["total"]), "GHS 1,271.90", "1,250.00 and twenty small deposits");
    for total in statement["totals"].as_array().unwrap() {
        let kind = total["type"].as_str().or(total["kind"].as_str()).unwrap();
        assert_eq!(
            cells(&page, &format!("total-{kind}"))[1..],
            [total["count"].to_string(), ghs(&total["availableChange"]), ghs(&total["totalChange"])],
        );
    }
    let backwards =
        dash.get("/dashboard/balances/statement?currency=GHS&from=2026-02-01&to=2026-01-01").await;
    assert_eq!(backwards.status, 400, "{}", backwards.text);
    assert!(backwards.element("refusal").unwrap_or_default().contains("after"), "{}", backwards.text);
}

/// Each download link of the page is the API's export, byte for byte, as
/// a CSV attachment.
async fn downloads_are_the_apis_exports(node: &Node, api: &Api, key: &str, dash: &Dashboard, page: &Page) {
    for resource in ["balance-transactions", "payouts", "collections", "refunds"] {
        let link = href(page, &format!("download-{resource}"));
        let path = format!("/dashboard/exports/{resource}.csv");
        assert!(link.starts_with(&format!("{path}?createdFrom=")), "{link}");
        let query = link.split_once('?').unwrap().1;
        let file = dash.get(&link).await;
        assert_eq!(file.status, 200, "{link}: {}", file.text);
        assert_eq!(file.header("content-type"), Some("text/csv; charset=utf-8"));
        assert!(file.header("content-disposition").unwrap_or_default().starts_with("attachment"));
        let url = node.sandbox_url(&format!("/v1/exports/{resource}.csv?{query}"));
        let from_api = api.client.get(url).bearer_auth(key).send().await.unwrap().text().await.unwrap();
        assert_eq!(file.text, from_api, "{resource}: the API's file");
        assert!(file.text.starts_with("id,"), "{}", file.text);
    }
    let all = dash.get("/dashboard/exports/balance-transactions.csv?currency=GHS").await;
    assert_eq!(all.text.lines().count(), 1 + 21, "a header and every GHS change: {}", all.text);
    let wide = dash.get("/dashboard/exports/payouts.csv?createdFrom=2020-01-01&createdTo=2026-01-01").await;
    assert_eq!(wide.status, 400, "{}", wide.text);
    assert!(wide.element("refusal").unwrap_or_default().contains("366"), "{}", wide.text);
}

/// The create form's fields for a checkout.
fn checkout_form<'a>(title: &'a str, amount: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![("title", title), ("currency", "GHS"), ("amount", amount), ("allowedMethods", "mobile_money")]
}

/// The value of the read-only address field.
fn copy_field(page: &Page) -> String {
    let marker = "id=\"checkout-url\" value=\"";
    let start =
        page.text.find(marker).unwrap_or_else(|| panic!("no address field: {}", page.text)) + marker.len();
    page.text[start..start + page.text[start..].find('"').unwrap()].replace("&amp;", "&")
}

/// A payer pays `amount` on `target` through the hosted page's call and
/// the session settles; returns the payer's link id.
async fn pay(api: &Api, node: &Node, target: &str, amount: &str) -> String {
    let body = json!({ "amount": amount, "method": "mobile_money", "network": "mtn_gh", "phone": MTN_PHONE });
    let r = api.post_anonymous(&node.sandbox_url(&format!("/pay/{target}/sessions")), body).await;
    let (_, link) = r.created("paymentLink", "pl_");
    let session = r.body["session"]["id"].as_str().unwrap().to_string();
    let url = node.sandbox_url(&format!("/pay/{link}/sessions/{session}"));
    eventually("the session to settle", Duration::from_secs(10), || async {
        let r = api.call("GET", &url, None, None).await;
        (r.body["session"]["status"] != "pending").then_some(())
    })
    .await;
    link
}

/// Payment pages and links: made from the form (its refusal the API's),
/// the address shown to copy, the payments of each, closed; a viewer sees
/// the same pages without a control and their forged posts change nothing.
#[tokio::test]
async fn checkout_pages_and_links_are_made_copied_paid_and_closed() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "checkout@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("checkout@shop.example", PASSWORD).await;

    let made = dash
        .submit(
            "/dashboard/checkout",
            "/dashboard/checkout/pages",
            &checkout_form("Kente scarves", "1500.00"),
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let page_id = made.element("checkout-id").unwrap();
    assert!(made.element("notice").unwrap_or_default().contains(&page_id), "{}", made.text);
    let from_api = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{page_id}")), &key).await;
    assert_eq!(
        copy_field(&made),
        from_api.body["paymentPage"]["url"].as_str().unwrap(),
        "the address to copy"
    );
    assert!(made.text.contains("readonly") && !made.text.contains("<script"), "{}", made.text);
    // The API's refusal, the form kept, nothing made.
    let refused = dash
        .submit(
            "/dashboard/checkout",
            "/dashboard/checkout/pages",
            &[("title", "No methods"), ("currency", "GHS")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(refused.element("notice").unwrap_or_default().contains("allowedMethods"), "{}", refused.text);
    assert!(refused.text.contains("value=\"No methods\""), "the form keeps what was typed");
    let pages = api.get(&node.sandbox_url("/v1/payment-pages"), &key).await;
    assert_eq!(ids(&pages.body["data"]), std::slice::from_ref(&page_id));

    let mut link_form = checkout_form("Invoice 7", "20.00");
    link_form.extend([("email", "kofi@buyer.example"), ("customerReference", "cust-7")]);
    let made = dash.submit("/dashboard/checkout?kind=links", "/dashboard/checkout/links", &link_form).await;
    let link_id = made.element("checkout-id").unwrap();
    assert!(made.text.contains("kofi@buyer.example") && made.has("close-form"), "{}", made.text);

    payments_show_as_the_api_answers(&node, &api, &key, &dash, &page_id, &link_id).await;

    viewer_sees_no_control_and_forges_nothing(&node, &api, &owner, &key, &page_id).await;

    let closed = dash
        .submit(
            &format!("/dashboard/checkout/pages/{page_id}"),
            &format!("/dashboard/checkout/pages/{page_id}/close"),
            &[],
        )
        .await;
    assert!(closed.element("notice").unwrap_or_default().contains("is closed"), "{}", closed.text);
    assert!(!closed.has("close-form"), "{}", closed.text);
    let from_api = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{page_id}")), &key).await;
    assert_eq!(from_api.body["paymentPage"]["status"], "closed");
    let closed = dash.get("/dashboard/checkout?kind=pages&status=closed").await;
    assert_eq!(first_column(&closed, "checkouts"), [page_id]);
}

/// A payer on the page (a link of their own) and part of the link: each
/// one's payments and totals as the API answers them.
async fn payments_show_as_the_api_answers(
    node: &Node,
    api: &Api,
    key: &str,
    dash: &Dashboard,
    page_id: &str,
    link_id: &str,
) {
    let payer_link = pay(api, node, page_id, "1500.00").await;
    pay(api, node, link_id, "5.00").await;
    let page = dash.get(&format!("/dashboard/checkout/pages/{page_id}")).await;
    assert_eq!(first_column(&page, "checkout-payments"), [payer_link]);
    let api_page =
        api.get(&node.sandbox_url(&format!("/v1/payment-pages/{page_id}")), key).await.body["paymentPage"]
            .clone();
    assert!(
        page.text
            .contains(&format!("{} (1 payment)", shown("GHS", api_page["totalCollected"].as_str().unwrap()))),
        "{}",
        page.text
    );
    let link = dash.get(&format!("/dashboard/checkout/links/{link_id}")).await;
    let api_link =
        api.get(&node.sandbox_url(&format!("/v1/payment-links/{link_id}")), key).await.body["paymentLink"]
            .clone();
    assert_eq!(first_column(&link, "checkout-payments"), ids(&api_link["sessions"]));
    assert!(link.text.contains(&shown("GHS", api_link["totalReceived"].as_str().unwrap())), "{}", link.text);
    assert!(link.text.contains(&shown("GHS", api_link["remaining"].as_str().unwrap())), "{}", link.text);
    let collection = api_link["sessions"][0]["collectionId"].as_str().unwrap();
    assert!(link.text.contains(&format!("/dashboard/payments/collections/{collection}")), "{}", link.text);
    let list = dash.get("/dashboard/checkout?kind=links").await;
    let api_links = api.get(&node.sandbox_url("/v1/payment-links"), key).await;
    assert_eq!(first_column(&list, "checkouts"), ids(&api_links.body["data"]));
}

/// A viewer reads the checkout pages without a form; their forged posts,
/// with a valid CSRF token, are the API's 403 and change nothing.
async fn viewer_sees_no_control_and_forges_nothing(
    node: &Node,
    api: &Api,
    owner: &str,
    key: &str,
    page_id: &str,
) {
    member_with_role(api, node, owner, "viewer@checkout.example", "viewer").await;
    let viewer = Dashboard::new(&node.sandbox);
    viewer.log_in("viewer@checkout.example", PASSWORD).await;
    let list = viewer.get("/dashboard/checkout").await;
    assert!(list.has("checkouts") && !list.has("create-form"), "{}", list.text);
    let one = viewer.get(&format!("/dashboard/checkout/pages/{page_id}")).await;
    assert!(one.has("checkout-url") && !one.has("close-form"), "{}", one.text);
    let page_path = format!("/dashboard/checkout/pages/{page_id}");
    for (path, fields) in [
        ("/dashboard/checkout/pages".to_string(), checkout_form("Forged", "1.00")),
        ("/dashboard/checkout/links".to_string(), checkout_form("Forged", "1.00")),
        (format!("{page_path}/close"), vec![]),
    ] {
        let refused = viewer.submit("/dashboard/settings", &path, &fields).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text);
    }
    let pages = api.get(&node.sandbox_url("/v1/payment-pages"), key).await;
    assert_eq!(pages.body["data"].as_array().unwrap().len(), 1, "{}", pages.text);
    assert_eq!(pages.body["data"][0]["status"], "active");
    let links = api.get(&node.sandbox_url("/v1/payment-links"), key).await;
    assert!(links.body["data"].as_array().unwrap().iter().all(|l| l["title"] != "Forged"), "{}", links.text);
}
