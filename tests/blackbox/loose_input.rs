//! Issue 29.4, loose input: what an independent audit got the node to
//! accept. A JSON key given twice (`"amount":"1.00","amount":"900.00"` paid
//! 900.00), control and invisible characters in URL and reference fields
//! (a raw NUL written into a hosted page), three fraction digits for a
//! two-digit currency, and a webhook URL on port 0. Each is refused with
//! `400 validation_error` naming the field, and nothing is created.

use crate::support::*;
use serde_json::{Value, json};

/// A raw JSON body, sent as written (serde_json cannot write a key twice).
async fn post_raw(api: &Api, url: &str, key: &str, body: &str) -> Resp {
    let body = body.to_string();
    api.send("POST", url, |rb| rb.bearer_auth(key).header("content-type", "application/json").body(body))
        .await
}

/// How many items a list answers (one page is enough: these tests make few).
async fn count(api: &Api, url: &str, key: &str) -> usize {
    let r = api.get(url, key).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().len()
}

/// Every list a refused request here could have added to, with its length.
async fn lists(api: &Api, node: &Node, key: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for path in
        ["/v1/payouts", "/v1/collections", "/v1/payment-links", "/v1/payment-pages", "/v1/webhooks/endpoints"]
    {
        out.push((path.to_string(), count(api, &node.sandbox_url(path), key).await));
    }
    out
}

#[tokio::test]
async fn a_key_given_twice_is_refused_wherever_it_is_and_nothing_is_created() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "1000.00").await;
    let before = (lists(&api, &node, &key).await, balance(&api, &node.sandbox, &key, "GHS").await);
    let payouts = node.sandbox_url("/v1/payouts");
    let collections = node.sandbox_url("/v1/collections");
    let to = format!(r#""to":{{"code":"mtn_gh","accountNumber":"{MTN_PHONE}"}}"#);
    let cases = [
        // The audit's: the last amount won and 900.00 was paid.
        (
            &payouts,
            format!(
                r#"{{"from":{{"currency":"GHS","amount":"1.00","amount":"900.00"}},{to},"externalReference":"dup-1"}}"#
            ),
            "from.amount",
        ),
        (
            &payouts,
            format!(
                r#"{{"from":{{"currency":"GHS","amount":"1.00"}},{to},"externalReference":"dup-2","externalReference":"dup-3"}}"#
            ),
            "externalReference",
        ),
        (
            &payouts,
            format!(
                r#"{{"from":{{"currency":"GHS","amount":"1.00"}},"to":{{"code":"mtn_gh","accountNumber":"{MTN_PHONE}","accountNumber":"+233240000000"}},"externalReference":"dup-4"}}"#
            ),
            "to.accountNumber",
        ),
        (
            &payouts,
            format!(
                r#"{{"from":{{"currency":"GHS","amount":"1.00"}},{to},"externalReference":"dup-5","metadata":{{"order":{{"lines":[{{"sku":"a","sku":"b"}}]}}}}}}"#
            ),
            "metadata.order.lines[0].sku",
        ),
        (
            &collections,
            format!(
                r#"{{"amount":"1.00","amount":900,"currency":"GHS","code":"mtn_gh","accountNumber":"{MTN_PHONE}","externalReference":"dup-6"}}"#
            ),
            "amount",
        ),
        // An escaped spelling names the same key.
        (
            &collections,
            format!(
                r#"{{"amount":"1.00","currency":"GHS","\u0063urrency":"KES","code":"mtn_gh","accountNumber":"{MTN_PHONE}","externalReference":"dup-7"}}"#
            ),
            "currency",
        ),
    ];
    for (url, body, field) in &cases {
        let r = post_raw(&api, url, &key, body).await;
        r.expect_field(400, "validation_error", field);
        assert!(r.body["message"].as_str().unwrap().contains("more than once"), "{}", r.text);
    }
    assert_eq!((lists(&api, &node, &key).await, balance(&api, &node.sandbox, &key, "GHS").await), before);
    // The same bodies with each key once are taken: the refusal was the duplicate.
    let once = format!(r#"{{"from":{{"currency":"GHS","amount":"1.00"}},{to},"externalReference":"dup-1"}}"#);
    let r = post_raw(&api, &payouts, &key, &once).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["from"]["amount"], "1.00");
    node.stop_and_verify();
}

/// The characters the contract names, one of each range and edge.
const HIDDEN: [&str; 12] = [
    "\u{0}", "\u{1b}", "\u{1f}", "\u{7f}", "\u{85}", "\u{9f}", "\u{200b}", "\u{200f}", "\u{2028}",
    "\u{202e}", "\u{2060}", "\u{feff}",
];

#[tokio::test]
async fn hidden_characters_are_refused_in_every_url_and_reference_field() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let before = lists(&api, &node, &key).await;
    let link = |redirect: &str, logo: &str, reference: &str| {
        json!({
            "currency": "GHS", "title": "Scarves", "allowedMethods": ["mobile_money"], "amount": "10.00",
            "redirectUrl": redirect, "branding": { "logoUrl": logo }, "customerReference": reference,
        })
    };
    let page = |redirect: &str| json!({ "currency": "GHS", "title": "Scarves", "allowedMethods": ["mobile_money"], "redirectUrl": redirect });
    let ok_url = "https://shop.example/thanks";
    for c in HIDDEN {
        let bad_url = format!("https://shop.example/{c}thanks");
        let bad_reference = format!("order-{c}42");
        let cases: [(&str, Value, &str); 9] = [
            ("/v1/payment-links", link(&bad_url, ok_url, "cust-1"), "redirectUrl"),
            ("/v1/payment-links", link(ok_url, &bad_url, "cust-1"), "branding.logoUrl"),
            ("/v1/payment-links", link(ok_url, ok_url, &bad_reference), "customerReference"),
            ("/v1/payment-pages", page(&bad_url), "redirectUrl"),
            ("/v1/webhooks/endpoints", json!({ "url": bad_url, "events": ["*"] }), "url"),
            ("/v1/collections", mtn_collection("1.00", &bad_reference), "externalReference"),
            ("/v1/payouts", mtn_payout("1.00", &bad_reference), "externalReference"),
            (
                "/v1/virtual-accounts",
                json!({ "currency": "GHS", "customerReference": bad_reference }),
                "customerReference",
            ),
            (
                "/v1/simulations/deposits",
                json!({ "currency": "GHS", "amount": "1.00", "externalReference": bad_reference }),
                "externalReference",
            ),
        ];
        for (path, body, field) in cases {
            let r = api.post(&node.sandbox_url(path), &key, body).await;
            assert_eq!(
                r.field(),
                Some(field),
                "U+{:04X} in {path}: {}",
                c.chars().next().unwrap() as u32,
                r.text
            );
            r.expect_field(400, "validation_error", field);
        }
    }
    assert_eq!(lists(&api, &node, &key).await, before, "nothing was created");
    assert_eq!(balance(&api, &node.sandbox, &key, "GHS").await, "100.00");
    assert_eq!(count(&api, &node.sandbox_url("/v1/virtual-accounts"), &key).await, 0);
    // Visible text, accents and spaces included, is taken.
    let r =
        api.post(&node.sandbox_url("/v1/payment-links"), &key, link(ok_url, ok_url, "Ama Owusu é 42")).await;
    r.expect(201);
    node.stop_and_verify();
}

#[tokio::test]
async fn more_fraction_digits_than_the_currency_has_are_refused_even_as_zeros() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    deposit(&api, &node, &key, "GHS", "100.00").await;
    let before = lists(&api, &node, &key).await;
    let collections = node.sandbox_url("/v1/collections");
    let payouts = node.sandbox_url("/v1/payouts");
    let collection = |amount: &str, reference: &str| {
        format!(
            r#"{{"amount":{amount},"currency":"GHS","code":"mtn_gh","accountNumber":"{MTN_PHONE}","externalReference":"{reference}"}}"#
        )
    };
    // A string and a JSON number, as written: three digits for GHS's two.
    for (amount, reference) in [
        (r#""1.000""#, "digits-1"),
        ("1.000", "digits-2"),
        (r#""10.500""#, "digits-3"),
        ("1.000e0", "digits-4"),
    ] {
        let r = post_raw(&api, &collections, &key, &collection(amount, reference)).await;
        r.expect_field(400, "validation_error", "amount");
    }
    let r = api.post(&payouts, &key, mtn_payout("1.000", "digits-5")).await;
    r.expect_field(400, "validation_error", "from.amount");
    let r = api
        .post(
            &node.sandbox_url("/v1/simulations/deposits"),
            &key,
            json!({ "currency": "GHS", "amount": "5.000" }),
        )
        .await;
    r.expect_invalid("amount");
    assert_eq!(lists(&api, &node, &key).await, before, "nothing was created");
    assert_eq!(balance(&api, &node.sandbox, &key, "GHS").await, "100.00");
    // Two digits or fewer, as a string or a number, are taken.
    for (amount, reference) in [(r#""1.00""#, "digits-ok-1"), ("1.5", "digits-ok-2"), ("2", "digits-ok-3")] {
        post_raw(&api, &collections, &key, &collection(amount, reference)).await.expect(201);
    }
    node.stop_and_verify();
}

#[tokio::test]
async fn a_url_on_port_zero_is_refused() {
    let Sandbox { node, api, key, .. } = Sandbox::start();
    let before = lists(&api, &node, &key).await;
    let endpoints = node.sandbox_url("/v1/webhooks/endpoints");
    for url in ["https://example.com:0/", "http://example.com:0/hook", "https://93.184.215.14:00/"] {
        let r = api.post(&endpoints, &key, json!({ "url": url, "events": ["*"] })).await;
        r.expect_field(400, "validation_error", "url");
        assert!(r.body["message"].as_str().unwrap().contains("port 0"), "{}", r.text);
    }
    let page = json!({
        "currency": "GHS", "title": "Scarves", "allowedMethods": ["mobile_money"],
        "redirectUrl": "https://shop.example:0/thanks",
    });
    api.post(&node.sandbox_url("/v1/payment-pages"), &key, page).await.expect_field(
        400,
        "validation_error",
        "redirectUrl",
    );
    assert_eq!(lists(&api, &node, &key).await, before, "nothing was created");
    node.stop_and_verify();
}
