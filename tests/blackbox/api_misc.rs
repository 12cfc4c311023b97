//! The representative record, the request log, the capabilities catalog,
//! the simulations index, bulk validation and the served OpenAPI document.

use std::time::{Duration, Instant};

use crate::support::*;
use serde_json::{Value, json};

/// This module's node, for the tests that need no node of their own.
static SHARED: SharedNode = SharedNode::new();

fn representative(full_name: &str) -> Value {
    json!({ "fullName": full_name, "phone": "+233241234567", "idNumber": "GHA-123456789-0", "country": "GH" })
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn the_representative_record() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let session = &node.creds.owner_session;
    let url = node.sandbox_url("/v1/organization/representative");

    api.get(&url, key).await.expect_error(404, "not_found");
    api.call("PUT", &url, Some(key), Some(representative("Ama Mensah"))).await.expect_error(403, "forbidden");
    api.get(&url, key).await.expect_error(404, "not_found");

    let r = api.call("PUT", &url, Some(session), Some(representative("Ama Mensah"))).await;
    r.expect(200);
    let first = r.body["representative"].clone();
    assert!(first["id"].as_str().unwrap().starts_with("rep_"), "{first}");
    assert_eq!(first["fullName"], "Ama Mensah");
    assert_eq!(first["phone"], "+233241234567");
    assert_eq!(first["idType"], "ghana_card", "idType defaults to ghana_card");
    assert_eq!(first["idNumber"], "GHA-123456789-0", "idNumber is returned in full");
    assert_eq!(first["country"], "GH");
    assert_eq!(first["status"], "active");
    assert_eq!(first["createdAt"], first["updatedAt"]);
    let read = api.get(&url, key).await;
    read.expect(200);
    assert_eq!(read.body["representative"], first);

    // Reading needs collections:read.
    let rates = scoped_key(&api, node, "rates", &["rates:read"]).await;
    let collections = scoped_key(&api, node, "coll", &["collections:read"]).await;
    api.get(&url, &rates).await.expect_error(403, "forbidden");
    api.get(&url, &collections).await.expect(200);
    api.call("PUT", &url, Some(&collections), Some(representative("Ama Mensah")))
        .await
        .expect_error(403, "forbidden");

    // Each rule, at and beyond its boundary.
    let put = |body: Value| {
        let (api, url, session) = (api.clone(), url.clone(), session.clone());
        async move { api.call("PUT", &url, Some(&session), Some(body)).await }
    };
    let with = |field: &str, value: Value| {
        let mut b = representative("Ama Mensah");
        b[field] = value;
        b
    };
    let refused = [
        ("fullName", json!("A")),
        ("fullName", json!("A".repeat(121))),
        ("fullName", json!("")),
        ("phone", json!("+1234567")),
        ("phone", json!("+1234567890123456")),
        ("phone", json!("233241234567")),
        ("phone", json!("+23324 1234567")),
        ("idType", json!("passport")),
        ("idNumber", json!("GHA-12345678-0")),
        ("idNumber", json!("GHA-123456789-01")),
        ("idNumber", json!("gha-123456789-0")),
        ("idNumber", json!("GHA123456789-0")),
        ("country", json!("GHA")),
        ("country", json!("G")),
    ];
    for (field, value) in refused {
        let r = put(with(field, value.clone())).await;
        r.expect_invalid(field);
        assert!(r.body["message"].as_str().unwrap().contains(field), "{}", r.text);
    }
    for field in ["fullName", "phone", "idNumber", "country"] {
        let mut body = representative("Ama Mensah");
        body.as_object_mut().unwrap().remove(field);
        put(body).await.expect_invalid(field);
    }
    assert_eq!(api.get(&url, key).await.body["representative"], first, "refused writes change nothing");
    let accepted = [
        ("fullName", json!("Al")),
        ("fullName", json!("A".repeat(120))),
        ("phone", json!("+12345678")),
        ("phone", json!("+123456789012345")),
        ("idType", json!("ghana_card")),
        ("idNumber", json!("GHA-000000000-9")),
    ];
    for (field, value) in accepted {
        let r = put(with(field, value.clone())).await;
        r.expect(200);
        assert_eq!(r.body["representative"][field], value);
    }

    // A second PUT replaces the record: same id, new updatedAt.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let body = json!({ "fullName": "Kofi Boateng", "phone": "+233201112223", "idType": "ghana_card", "idNumber": "GHA-987654321-5", "country": "GH", "metadata": { "branch": "Accra" } });
    let r = put(body).await;
    r.expect(200);
    let second = r.body["representative"].clone();
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["createdAt"], first["createdAt"]);
    assert_ne!(second["updatedAt"], first["updatedAt"]);
    assert!(second["updatedAt"].as_str() > first["updatedAt"].as_str());
    assert_eq!(second["fullName"], "Kofi Boateng");
    assert_eq!(second["phone"], "+233201112223");
    assert_eq!(second["idNumber"], "GHA-987654321-5");
    assert_eq!(second["metadata"], json!({ "branch": "Accra" }));
    assert_eq!(api.get(&url, key).await.body["representative"], second);
    // The stacks are separate: live has none.
    api.get(&node.live_url("/v1/organization/representative"), &node.creds.live_key)
        .await
        .expect_error(404, "not_found");
}

/// Fetches a logged request, retrying for up to 2 s.
async fn logged(api: &Api, base: &str, key: &str, id: &str) -> Resp {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let r = api.get(&format!("{base}/v1/requests/{id}"), key).await;
        if r.status != 404 || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_request_log() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;
    let session = &node.creds.owner_session;
    let keys = api.get(&node.sandbox_url("/v1/keys"), session).await;
    let bootstrap_id = keys.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| key.starts_with(k["hint"].as_str().unwrap()))
        .map(|k| k["id"].as_str().unwrap().to_string())
        .expect("the bootstrap key is listed");

    let r = api.get(&node.sandbox_url("/v1/accounts"), key).await;
    let entry = logged(&api, &node.sandbox, key, &r.request_id()).await;
    entry.expect(200);
    let e = &entry.body["request"];
    assert_eq!(e["id"], r.request_id().as_str());
    assert_eq!(e["method"], "GET");
    assert_eq!(e["path"], "/v1/accounts");
    assert_eq!(e["status"], 200);
    assert!(e["durationMs"].as_f64().unwrap() >= 0.0);
    assert_eq!(e["apiKeyId"], bootstrap_id.as_str());
    assert!(e["createdAt"].is_string());

    // Errors are logged too, with the request body.
    let r = api.post(&node.sandbox_url("/v1/conversions"), key, json!({ "quoteId": "qte_missing" })).await;
    r.expect(404);
    let entry = logged(&api, &node.sandbox, key, &r.request_id()).await;
    entry.expect(200);
    let e = &entry.body["request"];
    assert_eq!(
        (e["method"].as_str(), e["path"].as_str(), e["status"].as_u64()),
        (Some("POST"), Some("/v1/conversions"), Some(404))
    );
    assert_eq!(e["requestBody"]["quoteId"], "qte_missing");
    assert_eq!(e["responseBody"]["error"], "not_found");

    // A key's secret never reaches the log.
    let created =
        api.post(&node.sandbox_url("/v1/keys"), session, json!({ "name": "logged", "scopes": ["*"] })).await;
    created.expect(201);
    let secret = created.body["apiKey"]["secret"].as_str().unwrap().to_string();
    let entry = logged(&api, &node.sandbox, key, &created.request_id()).await;
    entry.expect(200);
    let e = &entry.body["request"];
    assert_eq!(e["status"], 201);
    assert!(e["apiKeyId"].is_null(), "a session is not a key: {}", entry.text);
    assert_eq!(e["responseBody"]["apiKey"]["secret"], "[REDACTED]", "{}", entry.text);
    assert_eq!(e["responseBody"]["apiKey"]["name"], "logged");
    assert!(!entry.text.contains(&secret), "the secret leaked into the log");
    assert!(!entry.text.contains(session.as_str()), "the session leaked into the log");

    // The stacks keep separate logs.
    logged(&api, &node.live, &node.creds.live_key, &r.request_id()).await.expect_error(404, "not_found");
    let live = api.get(&node.live_url("/v1/accounts"), &node.creds.live_key).await;
    logged(&api, &node.live, &node.creds.live_key, &live.request_id()).await.expect(200);
    api.get(&node.sandbox_url(&format!("/v1/requests/{}", live.request_id())), key)
        .await
        .expect_error(404, "not_found");
    api.get(&node.sandbox_url("/v1/requests/req_unknown"), key).await.expect_error(404, "not_found");
    // Reading the log needs requests:read.
    let rates = scoped_key(&api, node, "r", &["rates:read"]).await;
    api.get(&node.sandbox_url(&format!("/v1/requests/{}", r.request_id())), &rates)
        .await
        .expect_error(403, "forbidden");
}

#[tokio::test]
#[expect(clippy::too_many_lines)]
async fn capabilities_simulations_and_bulk_validation() {
    let node = &SHARED.get();
    let api = Api::new();
    let key = &node.creds.sandbox_key;

    let r = api.get(&node.sandbox_url("/v1/capabilities/gh"), key).await;
    r.expect(200);
    let codes: Vec<&str> =
        r.body["data"].as_array().unwrap().iter().map(|m| m["code"].as_str().unwrap()).collect();
    for code in ["mtn_gh", "telecel_gh", "airteltigo_gh", "bank_gh"] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    assert_eq!(r.body["hasMore"], false);

    for path in ["/v1/capabilities/GH/mtn_gh", "/v1/capabilities/gh/mtn_gh"] {
        let r = api.get(&node.sandbox_url(path), key).await;
        r.expect(200);
        let m = &r.body["method"];
        assert_eq!(m["code"], "mtn_gh");
        assert_eq!(m["type"], "mobile_money");
        let (min, max) = (m["limits"]["min"].as_f64().unwrap(), m["limits"]["max"].as_f64().unwrap());
        assert!(0.0 < min && min < max, "{}", r.text);
        assert_eq!(m["limits"]["currency"], "GHS");
        let fields = m["fields"].as_array().unwrap();
        assert!(!fields.is_empty());
        for f in fields {
            for k in ["key", "label", "type", "placeholder", "description", "group"] {
                assert!(f[k].is_string(), "field {k} of {f}");
            }
            assert!(f["options"].is_array(), "{f}");
        }
    }
    api.get(&node.live_url("/v1/capabilities/GH/mtn_gh"), &node.creds.live_key).await.expect(200);

    // The simulations index: sandbox only.
    let r = api.get(&node.sandbox_url("/v1/simulations"), key).await;
    r.expect(200);
    let entries = r.body["data"].as_array().unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        for k in ["operation", "method", "path", "description"] {
            assert!(e[k].is_string(), "{k} of {e}");
        }
        assert!(e["path"].as_str().unwrap().starts_with("/v1/"), "{e}");
        assert!(
            e["outcomes"].as_array().is_some_and(|o| !o.is_empty() && o.iter().all(Value::is_string)),
            "{e}"
        );
        let scenarios = e["scenarios"].as_object().expect("scenarios object");
        for (trigger, outcome) in scenarios {
            assert!(trigger == "default" || !trigger.is_empty(), "{e}");
            assert!(
                e["outcomes"].as_array().unwrap().contains(outcome),
                "scenario outcome {outcome} not among the outcomes: {e}"
            );
        }
        assert!(e["trigger"]["field"].is_string() && e["trigger"]["rule"].is_string(), "{e}");
    }
    let validation = entries.iter().find(|e| e["path"] == "/v1/validate/bulk").expect("validation is listed");
    assert_eq!(validation["trigger"]["field"], "accountNumber");
    assert_eq!(validation["scenarios"]["00"], "account_not_found");
    api.get(&node.live_url("/v1/simulations"), &node.creds.live_key).await.expect_error(404, "not_found");

    // Bulk validation, in order, by account-number suffix.
    let numbers = ["0241000000", "0241000001", "0241000002", "0241234567"];
    let items: Vec<Value> = numbers.iter().map(|n| json!({ "code": "mtn_gh", "accountNumber": n })).collect();
    let r = api.post(&node.sandbox_url("/v1/validate/bulk"), key, json!({ "items": items })).await;
    r.expect(200);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let summary: Vec<(bool, Option<&str>)> = results
        .iter()
        .map(|x| (x["result"]["valid"].as_bool().unwrap(), x["result"]["reason"].as_str()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (false, Some("account_not_found")),
            (false, Some("account_closed")),
            (false, Some("timeout")),
            (true, None)
        ]
    );
    assert!(results.iter().all(|x| x["code"] == "mtn_gh"));
    let name = results[3]["result"]["accountName"].as_str().unwrap_or("");
    assert!(name.contains(' '), "a valid account has a name: {}", r.text);
    // Deterministic: the same number gets the same name.
    let again = api
        .post(
            &node.sandbox_url("/v1/validate/bulk"),
            key,
            json!({ "items": [{ "code": "mtn_gh", "accountNumber": "0241234567" }] }),
        )
        .await;
    assert_eq!(again.body["results"][0]["result"]["accountName"], name);
    // 100 items is the most, and allowed.
    let hundred: Vec<Value> =
        (0..100).map(|i| json!({ "code": "bank_gh", "accountNumber": format!("10{i:08}") })).collect();
    let r = api.post(&node.sandbox_url("/v1/validate/bulk"), key, json!({ "items": hundred })).await;
    r.expect(200);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn the_served_openapi_document_is_the_one_tests_validate_against() {
    let node = &SHARED.get();
    let api = Api::new();
    let r = api.call("GET", &node.sandbox_url("/v1/openapi.json"), None, None).await;
    r.expect(200);
    assert_eq!(&r.body, document());
    assert_eq!(r.body["openapi"], "3.1.0");
    assert_eq!(r.body["info"]["version"], VERSION);
    // The version header is echoed, and the current one is accepted.
    let r = api
        .send("GET", &node.sandbox_url("/v1/accounts"), |rb| {
            rb.bearer_auth(&node.creds.sandbox_key).header("sika-version", VERSION)
        })
        .await;
    r.expect(200);
}

/// The harness's checks fail a test on drift; here on canned responses.
#[test]
fn the_response_checks_bite() {
    use reqwest::header::{HeaderMap, HeaderValue};
    let mut headers = HeaderMap::new();
    headers.insert("x-request-id", HeaderValue::from_static("req_abc"));
    headers.insert("sika-version", HeaderValue::from_static(VERSION));
    let fails = |method: &str, path: &str, status: u16, body: Value, headers: &HeaderMap| {
        let r = Resp { status, headers: headers.clone(), text: body.to_string(), body };
        let url = format!("http://127.0.0.1:1{path}");
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(method, &url, &r))).is_err()
    };
    let error = json!({ "error": "unauthorized", "message": "m", "requestId": "req_abc" });
    let empty = json!({ "data": [], "hasMore": false, "nextCursor": null });
    assert!(!fails("GET", "/v1/accounts", 200, empty.clone(), &headers));
    assert!(!fails("GET", "/v1/accounts", 401, error.clone(), &headers));
    assert!(!fails("DELETE", "/v1/accounts", 405, error.clone(), &headers), "405 is generic");
    assert!(!fails("GET", "/v1/nowhere", 404, error.clone(), &headers), "unknown routes are 404");

    let account = json!({ "id": "USD1", "currency": "USD", "availableBalance": 1.5, "pendingBalance": "0.00", "totalBalance": "1.50", "estimatedUsd": "1.50", "createdAt": "x" });
    // Answers to `GET /v1/accounts` the checks refuse, each with why.
    let drifted = [
        (200, json!({ "data": [], "hasMore": "no", "nextCursor": null }), "hasMore not a boolean"),
        (
            200,
            json!({ "data": [{ "id": "USD1" }], "hasMore": false, "nextCursor": null }),
            "an account's fields missing",
        ),
        (200, json!({ "data": [account], "hasMore": false, "nextCursor": null }), "a float amount"),
        (418, error.clone(), "an undocumented status"),
        (500, json!({ "error": "internal_error", "message": "m", "requestId": "req_abc" }), "a 500"),
        (
            401,
            json!({ "error": "unauthorized", "message": "m", "requestId": "req_other" }),
            "another request id",
        ),
        (401, json!({ "error": 401, "message": "m", "requestId": "req_abc" }), "a numeric error code"),
    ];
    for (status, body, why) in drifted {
        assert!(fails("GET", "/v1/accounts", status, body, &headers), "{why}");
    }
    let mut no_version = headers.clone();
    no_version.remove("sika-version");
    assert!(fails("GET", "/v1/accounts", 200, empty.clone(), &no_version));
    let mut bad_id = headers.clone();
    bad_id.insert("x-request-id", HeaderValue::from_static("abc"));
    assert!(fails("GET", "/v1/accounts", 200, empty, &bad_id));
}
