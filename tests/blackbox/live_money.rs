//! Live money from the operator's configuration: rates (manual, admin,
//! feed), methods and fees, and receiving details that come only from the
//! configuration file, never from a generator.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::*;

/// The account xpub m/44'/60'/0' of the "abandon … about" test mnemonic:
/// its addresses at 0/0 and 0/1 are published (MetaMask, ethers).
const XPUB: &str = "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt";
const ADDRESS_0: &str = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";
const ADDRESS_1: &str = "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0";
const SOLANA_1: &str = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV";
const SOLANA_2: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const BANK_NGN: &str = "5550001111";
const MERCHANT_GH: &str = "0244000999";
const VA_NGN: &str = "5550002222";

fn config() -> String {
    format!(
        r#"
[rates.usd]
USDC = "1"
GHS = "16.00"
NGN = "1600"

[live.methods.mtn_gh]
fee_fixed = "0.25"
fee_percent = "2"
max = "900"

[live.methods.telecel_gh]
status = "down"

[[live.receiving.bank]]
currency = "NGN"
bank_name = "Test Bank Nigeria"
account_name = "Acme Collections"
account_number = "{BANK_NGN}"
bank_code = "058"

[[live.receiving.mobile_money]]
method = "mtn_gh"
merchant_number = "{MERCHANT_GH}"
merchant_name = "Acme GH"

[[live.receiving.crypto]]
asset = "USDC"
chain = "base"
xpub = "{XPUB}"

[[live.receiving.crypto]]
asset = "USDC"
chain = "solana"
addresses = ["{SOLANA_1}", "{SOLANA_2}"]

[[live.virtual_accounts]]
currency = "NGN"
bank_name = "Test Bank Nigeria"
account_name = "Acme Virtual"
account_number = "{VA_NGN}"
"#
    )
}

fn options(config: String) -> Options {
    Options { config: Some(config), ..Options::unthrottled() }
}

/// Every live answer of a flow, kept to scan for invented details.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    fn keep(&mut self, r: &Resp) -> Value {
        self.0.push(r.text.clone());
        r.body.clone()
    }

    /// Every receiving detail any answer showed: account numbers,
    /// addresses and merchant numbers, wherever they appear.
    fn details(&self) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for text in &self.0 {
            let mut stack = vec![serde_json::from_str::<Value>(text).unwrap_or(Value::Null)];
            while let Some(value) = stack.pop() {
                match value {
                    Value::Object(map) => {
                        for (key, v) in map {
                            if ["accountNumber", "address", "merchantNumber"].contains(&key.as_str())
                                && let Some(s) = v.as_str()
                            {
                                found.insert(s.to_string());
                            }
                            stack.push(v);
                        }
                    }
                    Value::Array(items) => stack.extend(items),
                    _ => {}
                }
            }
        }
        found
    }
}

#[tokio::test]
async fn a_live_node_without_rates_or_routes_refuses_what_needs_them() {
    let node = Node::start(options(String::new()));
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let r = api.get(&node.live_url("/v1/rates/USD/GHS"), &key).await;
    r.expect_error(503, "rates_unavailable");
    assert_eq!(r.body["details"]["pair"], "USD/GHS", "{}", r.text);
    let quote = json!({ "from": { "currency": "USD", "amount": "10.00" }, "to": { "currency": "GHS" } });
    let r = api.post(&node.live_url("/v1/conversions/quotes"), &key, quote).await;
    r.expect_error(503, "rates_unavailable");
    let order = json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": "100.00" },
        "to": { "code": "bank_ng", "accountNumber": "0123456789", "currency": "NGN", "bankCode": "058" },
        "externalReference": "no-rate",
    });
    api.post(&node.live_url("/v1/orders"), &key, order).await.expect_error(503, "rates_unavailable");
    // Nothing is invented either: no route, no order, no virtual account.
    let order = json!({
        "from": { "method": "bank_transfer", "currency": "NGN", "amount": "1000.00" },
        "to": { "code": "bank_ng", "accountNumber": "0123456789", "bankCode": "058" },
        "externalReference": "no-route",
    });
    api.post(&node.live_url("/v1/orders"), &key, order).await.expect_invalid("from.method");
    let va = json!({ "currency": "NGN" });
    api.post(&node.live_url("/v1/virtual-accounts"), &key, va).await.expect_invalid("currency");
    // The sandbox keeps its reference rates.
    let r = api.get(&node.sandbox_url("/v1/rates/USD/GHS"), &node.creds.sandbox_key).await;
    r.expect(200);
    assert_eq!(r.body["rate"]["midRate"], "15.5");
}

#[tokio::test]
async fn configured_rates_methods_and_fees_show_and_apply() {
    let node = Node::start(options(config()));
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let r = api.get(&node.live_url("/v1/rates/USD/GHS"), &key).await;
    r.expect(200);
    assert_eq!(r.body["rate"]["midRate"], "16");
    assert_eq!(r.body["rate"]["rate"], "15.84", "the spread comes off the configured mid rate");
    let admin = node.creds.admin_token.clone();
    let r = api.get(&node.admin_url("/admin/v1/live/rates"), &admin).await;
    r.expect(200);
    assert_eq!(r.body["rates"]["rates"]["GHS"]["rate"], "16");
    assert_eq!(r.body["rates"]["rates"]["GHS"]["source"], "config");
    assert!(r.body["rates"]["rates"].get("KES").is_none(), "live has no rate it was not given");
    api.get(&node.live_url("/v1/rates/USD/KES"), &key).await.expect_error(503, "rates_unavailable");
    let r = api.get(&node.admin_url("/admin/v1/sandbox/rates"), &admin).await;
    assert_eq!(
        r.body["rates"]["rates"]["GHS"]["source"], "config",
        "a configured table serves the sandbox too"
    );

    // Methods: live shows the overrides, the sandbox the catalog.
    let r = api.get(&node.live_url("/v1/capabilities/GH"), &key).await;
    r.expect(200);
    let method = |body: &Value, code: &str| {
        body["data"].as_array().unwrap().iter().find(|m| m["code"] == code).unwrap().clone()
    };
    assert_eq!(method(&r.body, "telecel_gh")["status"], "down");
    assert_eq!(method(&r.body, "mtn_gh")["limits"]["max"], 900);
    let r = api.get(&node.sandbox_url("/v1/capabilities/GH"), &node.creds.sandbox_key).await;
    assert_eq!(method(&r.body, "telecel_gh")["status"], "operational");

    // Fund live GHS through a collection the operator confirms.
    let body = json!({ "amount": "500.00", "currency": "GHS", "code": "mtn_gh",
                       "accountNumber": "+233241234567", "externalReference": "fund" });
    let r = api.post(&node.live_url("/v1/collections"), &key, body).await;
    r.expect(201);
    let id = r.body["collection"]["id"].as_str().unwrap();
    let url = node.admin_url(&format!("/admin/v1/live/collections/{id}/complete"));
    api.call("POST", &url, Some(&admin), None).await.expect(200);

    let payout = |code: &str, amount: &str, reference: &str| {
        json!({ "from": { "currency": "GHS", "amount": amount },
                "to": { "code": code, "accountNumber": "+233241234567" },
                "externalReference": reference })
    };
    let r = api.post(&node.live_url("/v1/payouts"), &key, payout("mtn_gh", "100.00", "p1")).await;
    r.expect(201);
    assert_eq!(r.body["payout"]["fee"]["amount"], "2.25", "0.25 fixed + 2 % from the configuration");
    let r = api.post(&node.live_url("/v1/payouts"), &key, payout("mtn_gh", "901.00", "p2")).await;
    r.expect_invalid("from.amount");
    let r = api.post(&node.live_url("/v1/payouts"), &key, payout("telecel_gh", "10.00", "p3")).await;
    r.expect_error(503, "method_unavailable");
}

/// The whole live flow of checkout, orders and virtual accounts shows only
/// configured receiving details, and each payment gets its own address.
#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn live_receiving_details_come_only_from_the_configuration() {
    let node = Node::start(options(config()));
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let mut seen = Seen::default();

    // A live NGN link offers bank transfer and only the configured coins.
    let link = json!({ "currency": "NGN", "amount": "5000.00", "title": "Order 7",
                       "allowedMethods": ["bank_transfer", "crypto"] });
    let r = api.post(&node.live_url("/v1/payment-links"), &key, link).await;
    r.expect(201);
    let link = seen.keep(&r)["paymentLink"]["id"].as_str().unwrap().to_string();
    let page = reqwest::get(node.live_url(&format!("/pay/{link}"))).await.unwrap().text().await.unwrap();
    assert!(page.contains("value=\"bank_transfer\""), "the configured NGN account is offered");
    assert!(page.contains("USDC|base") && page.contains("USDC|solana"), "the configured coins are offered");
    for missing in ["USDT|tron", "USDC|ethereum", "USDC|polygon"] {
        assert!(!page.contains(missing), "{missing} has no route on live, so it is not offered");
    }
    let sessions = node.live_url(&format!("/pay/{link}/sessions"));
    let attempt = |body: Value| api.post_anonymous(&sessions, body);
    let r = attempt(json!({ "amount": "1000.00", "method": "bank_transfer" })).await;
    r.expect(201);
    let s = seen.keep(&r)["session"].clone();
    assert_eq!(s["instructions"]["accountNumber"], BANK_NGN);
    assert_eq!(s["instructions"]["bankName"], "Test Bank Nigeria");
    assert_eq!(s["instructions"]["accountName"], "Acme Collections");
    assert_eq!(s["instructions"]["reference"], s["id"]);
    let coin =
        |chain: &str| json!({ "amount": "1000.00", "method": "crypto", "asset": "USDC", "chain": chain });
    let r = attempt(coin("base")).await;
    r.expect(201);
    assert_eq!(seen.keep(&r)["session"]["instructions"]["address"], ADDRESS_0, "xpub 0/0");
    let r = attempt(coin("solana")).await;
    r.expect(201);
    assert_eq!(seen.keep(&r)["session"]["instructions"]["address"], SOLANA_1);
    let r = attempt(coin("solana")).await;
    r.expect(201);
    assert_eq!(seen.keep(&r)["session"]["instructions"]["address"], SOLANA_2, "a pool address is given once");
    let r = attempt(coin("solana")).await;
    r.expect_error(503, "unavailable");
    assert!(r.text.contains("given out"), "{}", r.text);
    attempt(coin("ethereum")).await.expect_invalid("chain");

    // Orders: the next derived address, the same one on a replay.
    let order = json!({
        "from": { "method": "crypto", "currency": "USDC", "amount": "20.00", "chain": "base" },
        "to": { "code": "mtn_gh", "accountNumber": "+233241234567", "currency": "GHS" },
        "externalReference": "live-crypto-order",
    });
    let r = api.post(&node.live_url("/v1/orders"), &key, order.clone()).await;
    r.expect(201);
    let instructions = seen.keep(&r)["order"]["depositInstructions"].clone();
    assert_eq!(instructions["address"], ADDRESS_1, "xpub 0/1");
    assert_eq!(instructions["network"], "mainnet");
    let r = api.post(&node.live_url("/v1/orders"), &key, order).await;
    r.expect(200);
    assert_eq!(
        seen.keep(&r)["order"]["depositInstructions"]["address"],
        ADDRESS_1,
        "a replay keeps its address"
    );
    let momo = json!({
        "from": { "method": "mobile_money", "currency": "GHS", "amount": "100.00" },
        "to": { "code": "mtn_gh", "accountNumber": "+233241234567" },
        "externalReference": "live-momo-order",
    });
    let r = api.post(&node.live_url("/v1/orders"), &key, momo).await;
    r.expect(201);
    assert_eq!(seen.keep(&r)["order"]["depositInstructions"]["merchantNumber"], MERCHANT_GH);
    let bank = json!({
        "from": { "method": "bank_transfer", "currency": "NGN", "amount": "1000.00" },
        "to": { "code": "bank_ng", "accountNumber": "0123456789", "bankCode": "058" },
        "externalReference": "live-bank-order",
    });
    let r = api.post(&node.live_url("/v1/orders"), &key, bank).await;
    r.expect(201);
    let instructions = seen.keep(&r)["order"]["depositInstructions"].clone();
    assert_eq!(
        (instructions["accountNumber"].as_str(), instructions["bankCode"].as_str()),
        (Some(BANK_NGN), Some("058"))
    );

    // Virtual accounts: the pool's real account, then 503 when it is used up.
    let va_url = node.live_url("/v1/virtual-accounts");
    let r = api.post(&va_url, &key, json!({ "currency": "NGN" })).await;
    r.expect(201);
    let va = seen.keep(&r);
    assert_eq!(va["virtualAccount"]["accountNumber"], VA_NGN, "{va}");
    assert_eq!(va["virtualAccount"]["bankName"], "Test Bank Nigeria");
    api.post(&va_url, &key, json!({ "currency": "NGN" })).await.expect_error(503, "unavailable");
    api.post(&va_url, &key, json!({ "currency": "KES" })).await.expect_invalid("currency");

    // Every read of all of it, too.
    for path in ["/v1/virtual-accounts", "/v1/orders", &format!("/v1/payment-links/{link}")] {
        let r = api.get(&node.live_url(path), &key).await;
        r.expect(200);
        seen.keep(&r);
    }
    let configured: BTreeSet<String> = [
        BANK_NGN,
        MERCHANT_GH,
        VA_NGN,
        ADDRESS_0,
        ADDRESS_1,
        SOLANA_1,
        SOLANA_2,
        "+233241234567",
        "0123456789",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let details = seen.details();
    assert!(details.len() >= 7, "the scan saw the details: {details:?}");
    let invented: Vec<&String> = details.difference(&configured).collect();
    assert!(invented.is_empty(), "live answers showed details nobody configured: {invented:?}");
}

#[tokio::test]
async fn rates_set_through_the_admin_api_are_kept_across_a_restart() {
    let opts = options(config());
    let mut node = Node::start(opts.clone());
    let api = Api::new();
    let admin = node.creds.admin_token.clone();
    let url = node.admin_url("/admin/v1/live/rates");
    let bad = json!({ "base": "EUR", "rates": { "GHS": "17" } });
    api.call("PUT", &url, Some(&admin), Some(bad)).await.expect_invalid("base");
    let bad = json!({ "base": "USD", "rates": { "GHS": "-1" } });
    api.call("PUT", &url, Some(&admin), Some(bad)).await.expect_invalid("rates.GHS");
    let r = api
        .call(
            "PUT",
            &url,
            Some(&admin),
            Some(json!({ "base": "USD", "rates": { "GHS": "17.25", "KES": 130 } })),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["rates"]["rates"]["GHS"]["source"], "admin");
    assert!(r.body["rates"]["rates"].get("NGN").is_none(), "the new table replaces the file's");
    let check = |node: &Node| {
        let api = Api::new();
        let (url, key) = (node.live_url("/v1/rates/USD/GHS"), node.creds.live_key.clone());
        async move {
            let r = api.get(&url, &key).await;
            r.expect(200);
            r.body["rate"]["midRate"].clone()
        }
    };
    assert_eq!(check(&node).await, "17.25");
    node.stop();
    node.restart(&opts, &[]);
    assert_eq!(check(&node).await, "17.25", "the admin table survives a restart");
    let r = api.get(&node.admin_url("/admin/v1/live/rates"), &admin).await;
    assert_eq!(r.body["rates"]["rates"]["KES"]["rate"], "130");
    let sandbox = api.get(&node.sandbox_url("/v1/rates/USD/GHS"), &node.creds.sandbox_key).await;
    assert_eq!(sandbox.body["rate"]["midRate"], "16", "each stack has its own table");
}

/// A fake rate feed whose document the test changes.
async fn feed_server(document: Arc<Mutex<String>>) -> String {
    let app = axum::Router::new().route(
        "/usd.json",
        axum::routing::get(move || {
            let document = document.clone();
            async move { document.lock().unwrap().clone() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/usd.json")
}

fn feed_document(rate: &str, age_seconds: i64) -> String {
    let as_of = chrono::Utc::now() - chrono::Duration::seconds(age_seconds);
    json!({ "base": "USD", "rates": { "GHS": rate, "NGN": "1600" }, "asOf": as_of.to_rfc3339() }).to_string()
}

#[tokio::test]
async fn a_feed_serves_rates_until_it_is_older_than_max_age() {
    let document = Arc::new(Mutex::new(feed_document("15.75", 0)));
    let url = feed_server(document.clone()).await;
    let config = format!("[rates.feed]\nurl = \"{url}\"\ninterval = \"100ms\"\nmax_age = \"60s\"\n");
    let node = Node::start(options(config));
    let api = Api::new();
    let key = node.creds.live_key.clone();
    let rate_url = node.live_url("/v1/rates/USD/GHS");
    let mid = eventually("the feed's rate", std::time::Duration::from_secs(10), || async {
        let r = api.get(&rate_url, &key).await;
        (r.status == 200).then(|| r.body["rate"]["midRate"].clone())
    })
    .await;
    assert_eq!(mid, "15.75");
    let admin = node.creds.admin_token.clone();
    let r = api.get(&node.admin_url("/admin/v1/live/rates"), &admin).await;
    assert_eq!(r.body["rates"]["rates"]["GHS"]["source"], "feed");
    assert_eq!(r.body["rates"]["feed"]["stale"], false);
    assert_eq!(r.body["rates"]["feed"]["url"], url.as_str());
    // Monitoring sees the feed's age too.
    let metrics = reqwest::get(node.admin_url("/metrics")).await.unwrap().text().await.unwrap();
    let age = metrics.lines().find(|l| l.starts_with("sika_rates_feed_age_seconds{stack=\"live\"}"));
    let age: i64 =
        age.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).expect("the feed's age");
    assert!((0..60).contains(&age), "a fresh feed is seconds old: {age}");
    // The feed goes on answering, but with a document an hour old.
    *document.lock().unwrap() = feed_document("15.80", 3_600);
    let r = eventually("the stale feed refused", std::time::Duration::from_secs(10), || async {
        let r = api.get(&rate_url, &key).await;
        (r.status == 503).then_some(r)
    })
    .await;
    r.expect_error(503, "rates_unavailable");
    let r = api.get(&node.admin_url("/admin/v1/live/rates"), &admin).await;
    assert_eq!(r.body["rates"]["feed"]["stale"], true);
    assert!(r.body["rates"]["rates"]["GHS"]["rate"].is_null(), "{}", r.text);
    // A bad document is an error the operator sees; the rates stay refused.
    *document.lock().unwrap() = "not json".into();
    let r = eventually("the feed's error shown", std::time::Duration::from_secs(10), || async {
        let r = api.get(&node.admin_url("/admin/v1/live/rates"), &admin).await;
        r.body["rates"]["feed"]["lastError"].is_string().then_some(r)
    })
    .await;
    assert!(r.body["rates"]["feed"]["lastError"].as_str().unwrap().contains("not a rates document"));
    api.get(&rate_url, &key).await.expect_error(503, "rates_unavailable");
}
