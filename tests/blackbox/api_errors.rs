//! The spec's error table, row by row, and a catalogue of malformed requests
//! that must each get a structured 4xx naming the field at fault.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

// ---------------------------------------------------------------- error table

#[tokio::test]
async fn row_400_validation_error_names_the_field() {
    let node = &SHARED.get();
    let api = Api::new();
    let r = api
        .post(
            &node.sandbox_url("/v1/conversions/quotes"),
            &node.creds.sandbox_key,
            json!({ "from": { "currency": "USD", "amount": "10.005" }, "to": { "currency": "GHS" } }),
        )
        .await;
    r.expect_invalid("from.amount");
    assert!(r.body["message"].as_str().unwrap().contains("from.amount"), "{}", r.text);
}

#[tokio::test]
async fn row_400_bad_request_quote_executed_twice() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    deposit(&api, node, key, "EUR", "50.00").await;
    let q = quote(&api, &node.sandbox, key, "EUR", "5.00", "GHS").await;
    let url = node.sandbox_url("/v1/conversions");
    let first = api.post(&url, key, json!({ "quoteId": q["id"] })).await;
    first.expect(201);
    assert_eq!(first.body["conversion"]["quoteId"], q["id"]);
    let second = api.post(&url, key, json!({ "quoteId": q["id"] })).await;
    second.expect_error(400, "bad_request");
    // The quote now reads as executed and points at its conversion.
    let read = api
        .get(&node.sandbox_url(&format!("/v1/conversions/quotes/{}", q["id"].as_str().unwrap())), key)
        .await;
    read.expect(200);
    assert_eq!(read.body["quote"]["status"], "executed");
    assert_eq!(read.body["quote"]["conversionId"], first.body["conversion"]["id"]);
}

#[tokio::test]
async fn row_400_bad_request_quote_expired() {
    let node = Node::start(Options { quote_ttl: Some("1s".into()), ..Options::unthrottled() });
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    deposit(&api, &node, key, "USD", "20.00").await;
    let q = quote(&api, &node.sandbox, key, "USD", "10.00", "GHS").await;
    assert_eq!(q["status"], "pending");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await;
    r.expect_error(400, "bad_request");
    let read = api
        .get(&node.sandbox_url(&format!("/v1/conversions/quotes/{}", q["id"].as_str().unwrap())), key)
        .await;
    assert_eq!(read.body["quote"]["status"], "expired", "{}", read.text);
    assert_eq!(balance(&api, &node.sandbox, key, "USD").await, "20.00", "no money moved");
    assert_eq!(balance(&api, &node.sandbox, key, "GHS").await, "0", "no GHS account was touched");
    // A fresh quote works again.
    let q = quote(&api, &node.sandbox, key, "USD", "10.00", "GHS").await;
    api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await.expect(201);
}

#[tokio::test]
async fn row_401_unauthorized() {
    let node = &SHARED.get();
    let api = Api::new();
    let url = node.sandbox_url("/v1/accounts");
    api.call("GET", &url, None, None).await.expect_error(401, "unauthorized");
    api.get(&url, "sk_test_not-a-real-key-0000000000000000000000000").await.expect_error(401, "unauthorized");
    api.get(&url, "sess_forged").await.expect_error(401, "unauthorized");
    api.get(&url, &node.creds.admin_token).await.expect_error(401, "unauthorized");
    // The admin API has its own 401 in the same error shape.
    let admin = node.admin_url("/admin/v1/organizations");
    api.call("GET", &admin, None, None).await.expect_error(401, "unauthorized");
    api.get(&admin, &node.creds.sandbox_key).await.expect_error(401, "unauthorized");
    api.get(&admin, &node.creds.admin_token).await.expect(200);
}

#[tokio::test]
async fn row_403_forbidden_missing_scope() {
    let node = &SHARED.get();
    let api = Api::new();
    let rates_only = scoped_key(&api, node, "rates", &["rates:read"]).await;
    api.get(&node.sandbox_url("/v1/accounts"), &rates_only).await.expect_error(403, "forbidden");
    api.get(&node.sandbox_url("/v1/rates/USD/GHS"), &rates_only).await.expect(200);
}

#[tokio::test]
async fn row_403_organization_suspended() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let org = node.creds.organization_id.clone();
    let accounts_sandbox = node.sandbox_url("/v1/accounts");
    let accounts_live = node.live_url("/v1/accounts");
    api.get(&accounts_sandbox, &node.creds.sandbox_key).await.expect(200);
    // Only the operator can suspend.
    api.call("POST", &node.admin_url(&format!("/admin/v1/organizations/{org}/suspend")), None, None)
        .await
        .expect_error(401, "unauthorized");
    let r = api
        .call(
            "POST",
            &node.admin_url(&format!("/admin/v1/organizations/{org}/suspend")),
            Some(&node.creds.admin_token),
            None,
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["organization"]["status"], "suspended", "{}", r.text);
    api.get(&accounts_sandbox, &node.creds.sandbox_key).await.expect_error(403, "organization_suspended");
    api.get(&accounts_live, &node.creds.live_key).await.expect_error(403, "organization_suspended");
    api.get(&node.sandbox_url("/v1/keys"), &node.creds.owner_session)
        .await
        .expect_error(403, "organization_suspended");
    api.post(
        &node.sandbox_url("/v1/simulations/deposits"),
        &node.creds.sandbox_key,
        json!({ "currency": "USD", "amount": "1.00" }),
    )
    .await
    .expect_error(403, "organization_suspended");
    // A bad key is still a 401, not a leak of the organization's state.
    api.get(&accounts_sandbox, "sk_test_unknown").await.expect_error(401, "unauthorized");
    let r = api
        .call(
            "POST",
            &node.admin_url(&format!("/admin/v1/organizations/{org}/reinstate")),
            Some(&node.creds.admin_token),
            None,
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["organization"]["status"], "active");
    let r = api.get(&accounts_sandbox, &node.creds.sandbox_key).await;
    r.expect(200);
    assert_eq!(r.body["data"], json!([]), "the refused deposit moved no money");
    api.get(&accounts_live, &node.creds.live_key).await.expect(200);
    // Unknown organization on the admin API.
    api.call(
        "POST",
        &node.admin_url("/admin/v1/organizations/org_nope/suspend"),
        Some(&node.creds.admin_token),
        None,
    )
    .await
    .expect_error(404, "not_found");
}

#[tokio::test]
async fn row_404_not_found() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": "qte_doesnotexist" }))
        .await
        .expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/conversions/quotes/qte_doesnotexist"), key)
        .await
        .expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/conversions/conv_doesnotexist"), key).await.expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/capabilities/GH/nope_gh"), key).await.expect_error(404, "not_found");
    api.get(&node.live_url("/v1/simulations"), &node.creds.live_key).await.expect_error(404, "not_found");
    // A sandbox quote does not exist on live.
    deposit(&api, node, key, "GBP", "10.00").await;
    let q = quote(&api, &node.sandbox, key, "GBP", "1.00", "USD").await;
    api.post(&node.live_url("/v1/conversions"), &node.creds.live_key, json!({ "quoteId": q["id"] }))
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn row_409_duplicate_external_reference() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let url = node.sandbox_url("/v1/simulations/deposits");
    let body = json!({ "currency": "ZAR", "amount": "100.00", "externalReference": "dep-dup-1" });
    let first = api.post(&url, key, body.clone()).await;
    first.expect(201);
    let replay = api.post(&url, key, body).await;
    replay.expect(200);
    assert_eq!(replay.body["deposit"]["id"], first.body["deposit"]["id"], "a replay returns the original");
    let other = api
        .post(&url, key, json!({ "currency": "ZAR", "amount": "100.01", "externalReference": "dep-dup-1" }))
        .await;
    other.expect_field(409, "duplicate", "externalReference");
    assert_eq!(balance(&api, &node.sandbox, key, "ZAR").await, "100.00", "one deposit landed");

    // Conversions: same reference with another quote.
    let q1 = quote(&api, &node.sandbox, key, "ZAR", "10.00", "USD").await;
    let q2 = quote(&api, &node.sandbox, key, "ZAR", "20.00", "USD").await;
    let url = node.sandbox_url("/v1/conversions");
    let c1 = api.post(&url, key, json!({ "quoteId": q1["id"], "externalReference": "conv-dup-1" })).await;
    c1.expect(201);
    let again = api.post(&url, key, json!({ "quoteId": q1["id"], "externalReference": "conv-dup-1" })).await;
    again.expect(200);
    assert_eq!(again.body["conversion"]["id"], c1.body["conversion"]["id"]);
    api.post(&url, key, json!({ "quoteId": q2["id"], "externalReference": "conv-dup-1" }))
        .await
        .expect_field(409, "duplicate", "externalReference");
    assert_eq!(
        balance(&api, &node.sandbox, key, "ZAR").await,
        "90.00",
        "only the first conversion moved money"
    );
}

#[tokio::test]
async fn row_429_rate_limited() {
    let node = Node::start(Options { rate_limit: Some(5), ..Options::default() });
    let api = Api::new();
    let url = node.sandbox_url("/v1/accounts");
    let mut limited = None;
    for _ in 0..20 {
        let r = api.get(&url, &node.creds.sandbox_key).await;
        if r.status == 429 {
            limited = Some(r);
            break;
        }
        r.expect(200);
    }
    let r = limited.expect("20 quick requests against a limit of 5/s were all accepted");
    r.expect_error(429, "rate_limited");
    let retry_after = r.body["details"]["retryAfter"].as_u64().expect("details.retryAfter is an integer");
    assert!((1..=60).contains(&retry_after), "{}", r.text);
    assert_eq!(r.header("retry-after"), Some(retry_after.to_string().as_str()), "Retry-After header");
    // Another key of the same organization is not affected.
    api.get(&node.live_url("/v1/accounts"), &node.creds.live_key).await.expect(200);
    // Waiting as told is enough.
    tokio::time::sleep(Duration::from_secs(retry_after) + Duration::from_millis(100)).await;
    api.get(&url, &node.creds.sandbox_key).await.expect(200);
}

#[tokio::test]
async fn row_insufficient_funds() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let q = quote(&api, &node.sandbox, key, "KES", "10.00", "USD").await;
    let r = api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await;
    r.expect_error(422, "insufficient_funds");
    let details = &r.body["details"];
    assert_eq!(details["currency"], "KES", "{}", r.text);
    assert_eq!(details["required"], "10.00", "{}", r.text);
    assert_eq!(details["available"], "0.00", "{}", r.text);
    // The quote was not consumed: with funds it executes.
    deposit(&api, node, key, "KES", "10.00").await;
    api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": q["id"] })).await.expect(201);
    assert_eq!(balance(&api, &node.sandbox, key, "KES").await, "0.00");
}

// ----------------------------------------------------------- malformed requests

struct Case {
    name: &'static str,
    method: &'static str,
    url: String,
    authorization: Option<String>,
    content_type: Option<&'static str>,
    body: Option<Vec<u8>>,
    headers: Vec<(&'static str, String)>,
    status: u16,
    code: &'static str,
    field: Option<String>,
}

fn case(name: &'static str, method: &'static str, url: String, key: &str) -> Case {
    Case {
        name,
        method,
        url,
        authorization: Some(format!("Bearer {key}")),
        content_type: None,
        body: None,
        headers: Vec::new(),
        status: 400,
        code: "validation_error",
        field: None,
    }
}

impl Case {
    fn json(mut self, body: Value) -> Self {
        self.content_type = Some("application/json");
        self.body = Some(serde_json::to_vec(&body).unwrap());
        self
    }
    fn raw(mut self, content_type: Option<&'static str>, body: impl Into<Vec<u8>>) -> Self {
        self.content_type = content_type;
        self.body = Some(body.into());
        self
    }
    fn auth(mut self, value: Option<&str>) -> Self {
        self.authorization = value.map(str::to_string);
        self
    }
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
    /// The common answer: `400 validation_error` naming `field`.
    fn invalid(self, field: &str) -> Self {
        self.expect(400, "validation_error", Some(field))
    }
    fn expect(mut self, status: u16, code: &'static str, field: Option<&str>) -> Self {
        self.status = status;
        self.code = code;
        self.field = field.map(str::to_string);
        self
    }
}

async fn run(api: &Api, c: Case) -> Result<(), String> {
    let Case { name, method, url, authorization, content_type, body, headers, .. } = &c;
    let r = api
        .send(method, url, |mut rb| {
            if let Some(a) = authorization {
                rb = rb.header("authorization", a);
            }
            if let Some(ct) = content_type {
                rb = rb.header("content-type", *ct);
            }
            for (k, v) in headers {
                rb = rb.header(*k, v);
            }
            if let Some(b) = body {
                rb = rb.body(b.clone());
            }
            rb
        })
        .await;
    let got = (r.status, r.error().to_string(), r.field().map(str::to_string));
    let want = (c.status, c.code.to_string(), c.field.clone());
    if !(400..500).contains(&r.status) {
        return Err(format!("{name}: not a 4xx: {} {}", r.status, r.text));
    }
    // Where no field is at fault, none is asserted; where one is, it must be named.
    let field_ok = want.2.is_none() || got.2 == want.2;
    if got.0 != want.0 || got.1 != want.1 || !field_ok {
        return Err(format!("{name}: want {want:?}, got {got:?}: {}", r.text));
    }
    Ok(())
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn malformed_requests_get_structured_4xx_naming_the_field() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = node.creds.sandbox_key.clone();
    let session = node.creds.owner_session.clone();
    let sb = |p: &str| node.sandbox_url(p);
    let quotes = sb("/v1/conversions/quotes");
    let execute = sb("/v1/conversions");
    let deposits = sb("/v1/simulations/deposits");
    let bulk = sb("/v1/validate/bulk");
    let rep = sb("/v1/organization/representative");
    let keys = sb("/v1/keys");
    let q = |from: Value, to: Value| json!({ "from": from, "to": to });
    let usd = |amount: Value| json!({ "currency": "USD", "amount": amount });
    let ghs = json!({ "currency": "GHS" });
    let rep_body = |field: &str, value: Value| {
        let mut b = json!({ "fullName": "Ama Mensah", "phone": "+233241234567", "idType": "ghana_card", "idNumber": "GHA-123456789-0", "country": "GH" });
        b[field] = value;
        b
    };
    let items = |n: usize| json!({ "items": (0..n).map(|i| json!({ "code": "mtn_gh", "accountNumber": format!("02412{i:05}") })).collect::<Vec<_>>() });

    // A cursor of the sandbox's conversions list, to replay where it does not belong.
    deposit(&api, node, &key, "USD", "10.00").await;
    for _ in 0..2 {
        let quote = quote(&api, &node.sandbox, &key, "USD", "1.00", "GHS").await;
        api.post(&execute, &key, json!({ "quoteId": quote["id"] })).await.expect(201);
    }
    let page = api.get(&sb("/v1/conversions?limit=1"), &key).await;
    let cursor = page.body["nextCursor"].as_str().expect("a next cursor").to_string();
    let mut forged = cursor.clone().into_bytes();
    forged[3] = if forged[3] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();

    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let huge = format!("{{\"quoteId\": \"{}\"}}", "x".repeat(1024 * 1024 + 10));

    let cases =
        vec![
            // Body format.
            case("no content-type", "POST", execute.clone(), &key)
                .raw(None, r#"{"quoteId":"qte_x"}"#)
                .expect(415, "unsupported_media_type", Some("Content-Type")),
            case("text/plain", "POST", execute.clone(), &key)
                .raw(Some("text/plain"), r#"{"quoteId":"qte_x"}"#)
                .expect(415, "unsupported_media_type", Some("Content-Type")),
            case("invalid JSON", "POST", quotes.clone(), &key)
                .raw(Some("application/json"), r#"{"from": {"currency": "USD""#)
                .expect(400, "bad_request", Some("body")),
            case("empty body", "POST", execute.clone(), &key).raw(Some("application/json"), "").expect(
                400,
                "bad_request",
                Some("body"),
            ),
            case("trailing garbage", "POST", execute.clone(), &key)
                .raw(Some("application/json"), r#"{"quoteId":"qte_x"} trailing"#)
                .expect(400, "bad_request", Some("body")),
            case("nesting 300 deep", "POST", execute.clone(), &key)
                .raw(Some("application/json"), deep)
                .invalid("body"),
            case("invalid UTF-8", "POST", execute.clone(), &key)
                .raw(Some("application/json"), b"{\"quoteId\": \"\xff\xfe\"}".to_vec())
                .invalid("quoteId"),
            case("JSON array instead of object", "POST", execute.clone(), &key)
                .json(json!([1, 2]))
                .invalid("body"),
            case("JSON null body", "POST", execute.clone(), &key).json(Value::Null).invalid("body"),
            case("body > 1 MiB", "POST", execute.clone(), &key).raw(Some("application/json"), huge).expect(
                413,
                "payload_too_large",
                None,
            ),
            // Types, unknown and missing fields.
            case("number for quoteId", "POST", execute.clone(), &key)
                .json(json!({ "quoteId": 5 }))
                .invalid("quoteId"),
            case("empty quoteId", "POST", execute.clone(), &key)
                .json(json!({ "quoteId": "" }))
                .invalid("quoteId"),
            case("missing quoteId", "POST", execute.clone(), &key).json(json!({})).invalid("quoteId"),
            case("object for currency", "POST", quotes.clone(), &key)
                .json(q(json!({ "currency": { "code": "USD" }, "amount": "1.00" }), ghs.clone()))
                .invalid("from.currency"),
            case("string for items", "POST", bulk.clone(), &key)
                .json(json!({ "items": "mtn_gh" }))
                .invalid("items"),
            case("unknown top-level field", "POST", quotes.clone(), &key)
                .json(json!({ "from": usd(json!("1.00")), "to": ghs.clone(), "rate": "99" }))
                .invalid("rate"),
            case("unknown nested field", "POST", quotes.clone(), &key)
                .json(q(json!({ "currency": "USD", "amount": "1.00", "account": "x" }), ghs.clone()))
                .invalid("from.account"),
            case("missing required field", "POST", quotes.clone(), &key)
                .json(json!({ "from": usd(json!("1.00")) }))
                .invalid("to"),
            case("missing nested currency", "POST", quotes.clone(), &key)
                .json(q(json!({ "amount": "1.00" }), ghs.clone()))
                .invalid("from.currency"),
            // Amounts.
            case("amount with too many digits", "POST", quotes.clone(), &key)
                .json(q(usd(json!("1.001")), ghs.clone()))
                .invalid("from.amount"),
            case("negative amount", "POST", quotes.clone(), &key)
                .json(q(usd(json!("-5.00")), ghs.clone()))
                .invalid("from.amount"),
            case("zero amount", "POST", quotes.clone(), &key)
                .json(q(usd(json!(0)), ghs.clone()))
                .invalid("from.amount"),
            case("amount abc", "POST", quotes.clone(), &key)
                .json(q(usd(json!("abc")), ghs.clone()))
                .invalid("from.amount"),
            case("amount 1e40 (number)", "POST", quotes.clone(), &key)
                .raw(
                    Some("application/json"),
                    r#"{"from":{"currency":"USD","amount":1e40},"to":{"currency":"GHS"}}"#,
                )
                .invalid("from.amount"),
            case("amount NaN", "POST", quotes.clone(), &key)
                .json(q(usd(json!("NaN")), ghs.clone()))
                .invalid("from.amount"),
            case("amount with thousands separator", "POST", quotes.clone(), &key)
                .json(q(usd(json!("1,000.00")), ghs.clone()))
                .invalid("from.amount"),
            case("amount boolean", "POST", quotes.clone(), &key)
                .json(q(usd(json!(true)), ghs.clone()))
                .invalid("from.amount"),
            case("to.amount with too many digits", "POST", quotes.clone(), &key)
                .json(q(json!({ "currency": "USD" }), json!({ "currency": "XOF", "amount": "10.5" })))
                .invalid("to.amount"),
            case("deposit amount too many digits", "POST", deposits.clone(), &key)
                .json(json!({ "currency": "USD", "amount": "1.234" }))
                .invalid("amount"),
            // Currencies and quote shape.
            case("unknown currency", "POST", quotes.clone(), &key)
                .json(q(json!({ "currency": "XYZ", "amount": "1.00" }), ghs.clone()))
                .invalid("from.currency"),
            case("lowercase garbage currency", "POST", quotes.clone(), &key)
                .json(q(usd(json!("1.00")), json!({ "currency": "zzq" })))
                .invalid("to.currency"),
            case("deposit unknown currency", "POST", deposits.clone(), &key)
                .json(json!({ "currency": "DOGE", "amount": "1.00" }))
                .invalid("currency"),
            case("both amounts on a quote", "POST", quotes.clone(), &key)
                .json(q(usd(json!("1.00")), json!({ "currency": "GHS", "amount": "15.00" })))
                .invalid("from.amount"),
            case("neither amount on a quote", "POST", quotes.clone(), &key)
                .json(q(json!({ "currency": "USD" }), ghs.clone()))
                .invalid("from.amount"),
            case("same currency both sides", "POST", quotes.clone(), &key)
                .json(q(usd(json!("1.00")), json!({ "currency": "USD" })))
                .invalid("to.currency"),
            case("rate of unknown currency", "GET", sb("/v1/rates/USD/XYZ"), &key).invalid("destination"),
            case("rate of one currency to itself", "GET", sb("/v1/rates/USD/USD"), &key)
                .invalid("destination"),
            case("bad externalReference", "POST", deposits.clone(), &key)
                .json(json!({ "currency": "USD", "amount": "1.00", "externalReference": "" }))
                .invalid("externalReference"),
            // Pagination.
            case("limit=0", "GET", sb("/v1/conversions?limit=0"), &key).invalid("limit"),
            case("limit=101", "GET", sb("/v1/conversions?limit=101"), &key).invalid("limit"),
            case("limit=abc", "GET", sb("/v1/conversions?limit=abc"), &key).invalid("limit"),
            case("limit=-1", "GET", sb("/v1/conversions?limit=-1"), &key).invalid("limit"),
            case("limit=1.5", "GET", sb("/v1/conversions?limit=1.5"), &key).invalid("limit"),
            case("forged cursor", "GET", sb(&format!("/v1/conversions?cursor={forged}")), &key)
                .invalid("cursor"),
            case("garbage cursor", "GET", sb("/v1/conversions?cursor=%%%not-base64"), &key).invalid("cursor"),
            case(
                "cursor from another list (sandbox cursor on live)",
                "GET",
                node.live_url(&format!("/v1/conversions?cursor={cursor}")),
                &node.creds.live_key,
            )
            .invalid("cursor"),
            // Routing, versions, credentials.
            case("unknown route", "GET", sb("/v1/nothing-here"), &key).expect(404, "not_found", None),
            case("unknown route without a key", "GET", sb("/v2/accounts"), &key).auth(None).expect(
                404,
                "not_found",
                None,
            ),
            case("wrong method", "DELETE", sb("/v1/accounts"), &key).expect(405, "method_not_allowed", None),
            case("wrong method on a POST route", "GET", sb("/v1/validate/bulk"), &key).expect(
                405,
                "method_not_allowed",
                None,
            ),
            case("unknown sika-version", "GET", sb("/v1/accounts"), &key)
                .header("sika-version", "2020-01-01")
                .invalid("sika-version"),
            case("Authorization without Bearer", "GET", sb("/v1/accounts"), &key).auth(Some(&key)).expect(
                401,
                "unauthorized",
                None,
            ),
            case("Basic authorization", "GET", sb("/v1/accounts"), &key)
                .auth(Some("Basic dXNlcjpwYXNz"))
                .expect(401, "unauthorized", None),
            case("empty bearer", "GET", sb("/v1/accounts"), &key).auth(Some("Bearer ")).expect(
                401,
                "unauthorized",
                None,
            ),
            case("bearer with a token that is no key", "GET", sb("/v1/accounts"), &key)
                .auth(Some("Bearer not_a_key"))
                .expect(401, "unauthorized", None),
            case("truncated key", "GET", sb("/v1/accounts"), &key)
                .auth(Some(&format!("Bearer {}", &key[..key.len() - 1])))
                .expect(401, "unauthorized", None),
            // Representative rules.
            case("fullName too short", "PUT", rep.clone(), &session)
                .json(rep_body("fullName", json!("A")))
                .invalid("fullName"),
            case("fullName too long", "PUT", rep.clone(), &session)
                .json(rep_body("fullName", json!("A".repeat(121))))
                .invalid("fullName"),
            case("phone not E.164", "PUT", rep.clone(), &session)
                .json(rep_body("phone", json!("0241234567")))
                .invalid("phone"),
            case("idType not ghana_card", "PUT", rep.clone(), &session)
                .json(rep_body("idType", json!("passport")))
                .invalid("idType"),
            case("idNumber wrong shape", "PUT", rep.clone(), &session)
                .json(rep_body("idNumber", json!("GHA-12345678-0")))
                .invalid("idNumber"),
            case("country 3 letters", "PUT", rep.clone(), &session)
                .json(rep_body("country", json!("GHA")))
                .invalid("country"),
            case("fullName a number", "PUT", rep.clone(), &session)
                .json(rep_body("fullName", json!(42)))
                .invalid("fullName"),
            // Bulk validation.
            case("validate/bulk with 0 items", "POST", bulk.clone(), &key).json(items(0)).invalid("items"),
            case("validate/bulk with 101 items", "POST", bulk.clone(), &key)
                .json(items(101))
                .invalid("items"),
            case("validate/bulk item without code", "POST", bulk.clone(), &key)
                .json(json!({ "items": [{ "accountNumber": "0241234567" }] }))
                .invalid("items[0].code"),
            // Capabilities.
            case("capabilities of an unknown country", "GET", sb("/v1/capabilities/ZZ"), &key).expect(
                404,
                "not_found",
                None,
            ),
            case("capabilities of an unknown method", "GET", sb("/v1/capabilities/GH/paypal_gh"), &key)
                .expect(404, "not_found", None),
            case("a Kenyan method under Ghana", "GET", sb("/v1/capabilities/GH/mpesa_ke"), &key).expect(
                404,
                "not_found",
                None,
            ),
            // Keys.
            case("key with an unknown scope", "POST", keys.clone(), &session)
                .json(json!({ "name": "k", "scopes": ["payouts:delete"] }))
                .invalid("scopes[0]"),
            case("key with no scopes", "POST", keys.clone(), &session)
                .json(json!({ "name": "k", "scopes": [] }))
                .invalid("scopes"),
            case("key with a bad IP", "POST", keys.clone(), &session)
                .json(json!({ "name": "k", "scopes": ["*"], "allowedIps": ["127.0.0.1", "10.0.0.300"] }))
                .invalid("allowedIps[1]"),
            case("key expiring in the past", "POST", keys.clone(), &session)
                .json(json!({ "name": "k", "scopes": ["*"], "expiresAt": "2001-01-01T00:00:00Z" }))
                .invalid("expiresAt"),
            case("key with a garbage expiry", "POST", keys.clone(), &session)
                .json(json!({ "name": "k", "scopes": ["*"], "expiresAt": "tomorrow" }))
                .invalid("expiresAt"),
            case("key with an empty name", "POST", keys.clone(), &session)
                .json(json!({ "name": "  ", "scopes": ["*"] }))
                .invalid("name"),
        ];
    let total = cases.len();
    let mut kinds = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for c in cases {
        assert!(kinds.insert(c.name), "duplicate case name {}", c.name);
        if let Err(e) = run(&api, c).await {
            failures.push(e);
        }
    }
    assert!(total >= 30, "only {total} kinds of malformed request");
    assert!(
        failures.is_empty(),
        "{} of {total} malformed requests were answered wrongly:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // None of it changed the representative.
    api.get(&rep, &key).await.expect_error(404, "not_found");
}
