//! The checkout create forms take everything the API's create takes
//! (`CheckoutRequest`: title, currency, a fixed or open amount,
//! description, methods, stablecoins, the fields the payer fills in,
//! branding, redirect address, metadata, expiry, and a link's email and
//! reference), posted to the same use case; a refusal is the API's own,
//! shown beside the field its `details.field` names, and makes nothing.

use serde_json::{Value, json};

use crate::support::dashboard::{Dashboard, Page};
use crate::support::team::{PASSWORD, owned_org};
use crate::support::{Api, Node, Options, create_key};

/// HTML text as written, with askama's escapes undone.
fn unescape(html: &str) -> String {
    html.replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn error_beside(page: &Page, id: &str) -> String {
    unescape(&page.element(id).unwrap_or_else(|| panic!("no #{id} on the refused form: {}", page.text)))
}

/// The link form has a control for each field of the API's create, and
/// as many rows of custom fields as the API takes.
async fn form_has_a_control_for_each_field(dash: &Dashboard) {
    let form = dash.get("/dashboard/checkout?kind=links").await;
    for id in [
        "checkout-title",
        "checkout-currency",
        "checkout-amount",
        "checkout-description",
        "checkout-email",
        "checkout-reference",
        "method-crypto",
        "asset-USDC",
        "asset-USDT",
        "checkout-redirect",
        "checkout-business",
        "checkout-logo",
        "checkout-accent",
        "checkout-expires",
        "checkout-metadata",
        "cf-0-name",
        "cf-0-label",
        "cf-0-type",
        "cf-0-required",
        "cf-19-name",
    ] {
        assert!(form.has(id), "the form has #{id}");
    }
    assert!(!form.has("cf-20-name"), "no more rows than the API's 20");
}

/// The link the form made, as the API reads it: each field as typed.
fn reads_back_every_field(link: &Value) {
    assert_eq!(link["title"], "Harmattan order");
    assert_eq!((&link["currency"], &link["amount"]), (&json!("NGN"), &json!("2500.00")));
    assert_eq!(link["description"], "Two scarves, delivered");
    assert_eq!(link["allowedMethods"], json!(["crypto"]));
    assert_eq!(link["allowedCryptoAssets"], json!(["USDC"]));
    assert_eq!(
        link["customFields"],
        json!([
            { "name": "size", "type": "text", "required": true, "label": "Your size" },
            { "name": "delivery_date", "type": "date", "required": false, "label": "delivery date" },
        ])
    );
    assert_eq!(link["redirectUrl"], "https://shop.example/thanks");
    assert_eq!(
        link["branding"],
        json!({ "logoUrl": "https://shop.example/logo.png", "accentColor": "#0a7d4f", "businessName": "Ama's Shop" })
    );
    assert_eq!(link["metadata"], json!({ "campaign": "harmattan", "batch": 3 }));
    assert!(link["expiresAt"].as_str().unwrap().starts_with("2031-01-02T03:04:00"), "{link}");
    assert_eq!(
        (&link["email"], &link["customerReference"]),
        (&json!("kofi@buyer.example"), &json!("cust-9"))
    );
}

/// A link with every field the API's create takes, from the form: the
/// API reads it back field for field. A page with an open amount too.
#[tokio::test]
async fn dashboard_checkout_forms_take_every_field_of_the_apis_create() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "forms@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("forms@shop.example", PASSWORD).await;
    form_has_a_control_for_each_field(&dash).await;

    let fields = [
        ("title", "Harmattan order"),
        ("currency", "NGN"),
        ("amount", "2500.00"),
        ("description", "Two scarves, delivered"),
        ("allowedMethods", "crypto"),
        ("allowedCryptoAssets", "USDC"),
        ("customFields[0].name", "size"),
        ("customFields[0].label", "Your size"),
        ("customFields[0].type", "text"),
        ("customFields[0].required", "true"),
        // Row 1 left empty: not sent.
        ("customFields[1].type", "text"),
        ("customFields[2].name", "delivery_date"),
        ("customFields[2].type", "date"),
        ("redirectUrl", "https://shop.example/thanks"),
        ("branding.businessName", "Ama's Shop"),
        ("branding.logoUrl", "https://shop.example/logo.png"),
        ("branding.accentColor", "#0a7d4f"),
        ("metadata", r#"{"campaign": "harmattan", "batch": 3}"#),
        ("expiresAt", "2031-01-02T03:04"),
        ("email", "kofi@buyer.example"),
        ("customerReference", "cust-9"),
    ];
    let made = dash.submit("/dashboard/checkout?kind=links", "/dashboard/checkout/links", &fields).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let id = made.element("checkout-id").unwrap();
    let link = api.get(&node.sandbox_url(&format!("/v1/payment-links/{id}")), &key).await.body["paymentLink"]
        .clone();
    reads_back_every_field(&link);

    // A page whose payer chooses the amount: no amount sent.
    let open = [("title", "Tips"), ("currency", "GHS"), ("amount", ""), ("allowedMethods", "mobile_money")];
    let made = dash.submit("/dashboard/checkout", "/dashboard/checkout/pages", &open).await;
    let id = made.element("checkout-id").unwrap_or_else(|| panic!("{}", made.text));
    let page = api.get(&node.sandbox_url(&format!("/v1/payment-pages/{id}")), &key).await;
    assert_eq!(page.body["paymentPage"]["amount"], Value::Null, "{}", page.text);
    assert!(made.text.contains("GHS, payer chooses"), "{}", made.text);
}

/// One bad field: the kind of checkout, the form's fields changed, the
/// same change to the API's JSON body, the field the API names, and the id
/// of the message beside the form's field.
type Case = (&'static str, Vec<(&'static str, &'static str)>, Value, &'static str, &'static str);

/// 121 characters: one more than a label or a business name takes.
const LONG: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

#[expect(clippy::too_many_lines, reason = "a table of cases, one per field")]
fn refusal_cases() -> Vec<Case> {
    vec![
        ("pages", vec![("title", "")], json!({ "title": null }), "title", "checkout-title-error"),
        (
            "pages",
            vec![("currency", "XYZ")],
            json!({ "currency": "XYZ" }),
            "currency",
            "checkout-currency-error",
        ),
        ("pages", vec![("amount", "1.234")], json!({ "amount": "1.234" }), "amount", "checkout-amount-error"),
        (
            "pages",
            vec![("allowedMethods", "")],
            json!({ "allowedMethods": [] }),
            "allowedMethods",
            "methods-error",
        ),
        (
            "pages",
            vec![("allowedCryptoAssets", "DOGE")],
            json!({ "allowedCryptoAssets": ["DOGE"] }),
            "allowedCryptoAssets[0]",
            "assets-error",
        ),
        (
            "pages",
            vec![("customFields[3].name", "bad name!")],
            json!({ "customFields": [{ "name": "bad name!", "type": "text", "required": false }] }),
            "customFields[0].name",
            "cf-3-name-error",
        ),
        (
            "pages",
            vec![("customFields[1].name", "size"), ("customFields[1].label", LONG)],
            json!({ "customFields": [{ "name": "size", "label": LONG, "type": "text", "required": false }] }),
            "customFields[0].label",
            "cf-1-label-error",
        ),
        (
            "pages",
            vec![("customFields[0].name", "size"), ("customFields[0].type", "colour")],
            json!({ "customFields": [{ "name": "size", "type": "colour", "required": false }] }),
            "customFields[0].type",
            "cf-0-type-error",
        ),
        (
            "pages",
            vec![("redirectUrl", "ftp://shop.example/x")],
            json!({ "redirectUrl": "ftp://shop.example/x" }),
            "redirectUrl",
            "checkout-redirect-error",
        ),
        (
            "pages",
            vec![("branding.logoUrl", "javascript:alert(1)")],
            json!({ "branding": { "logoUrl": "javascript:alert(1)" } }),
            "branding.logoUrl",
            "checkout-logo-error",
        ),
        (
            "pages",
            vec![("branding.accentColor", "green")],
            json!({ "branding": { "accentColor": "green" } }),
            "branding.accentColor",
            "checkout-accent-error",
        ),
        (
            "pages",
            vec![("branding.businessName", LONG)],
            json!({ "branding": { "businessName": LONG } }),
            "branding.businessName",
            "checkout-business-error",
        ),
        (
            "pages",
            vec![("metadata", "[1, 2]")],
            json!({ "metadata": [1, 2] }),
            "metadata",
            "checkout-metadata-error",
        ),
        (
            "pages",
            vec![("expiresAt", "2001-01-01T00:00")],
            json!({ "expiresAt": "2001-01-01T00:00:00Z" }),
            "expiresAt",
            "checkout-expires-error",
        ),
        (
            "links",
            vec![("email", "not-an-address")],
            json!({ "email": "not-an-address" }),
            "email",
            "checkout-email-error",
        ),
        (
            "links",
            vec![("customerReference", "a\u{200B}b")],
            json!({ "customerReference": "a\u{200B}b" }),
            "customerReference",
            "checkout-reference-error",
        ),
    ]
}

/// The API refuses the body with `patch` naming `field`; the form with
/// `changed` is refused with the same message beside its field.
async fn refused_as_the_api_refuses(api: &Api, node: &Node, key: &str, dash: &Dashboard, case: &Case) {
    let (kind, changed, patch, field, beside) = case;
    let (kind, field, beside) = (*kind, *field, *beside);
    let base = json!({ "title": "Scarves", "currency": "NGN", "allowedMethods": ["crypto"] });
    let mut body = base.clone();
    for (k, v) in patch.as_object().unwrap() {
        if v.is_null() {
            body.as_object_mut().unwrap().remove(k);
        } else {
            body[k] = v.clone();
        }
    }
    let operation = if kind == "pages" { "/v1/payment-pages" } else { "/v1/payment-links" };
    let by_api = api.post(&node.sandbox_url(operation), key, body.clone()).await;
    assert_eq!(by_api.status, 400, "{field}: {}", by_api.text);
    assert_eq!(by_api.body["details"]["field"], field, "{body}: {}", by_api.text);
    let message = by_api.body["message"].as_str().unwrap().to_string();

    let mut fields: Vec<(&str, &str)> = vec![("title", "Scarves"), ("currency", "NGN")];
    if !changed.iter().any(|(k, _)| *k == "allowedMethods") {
        fields.push(("allowedMethods", "crypto"));
    }
    for &(k, v) in changed {
        fields.retain(|(name, _)| *name != k);
        if !v.is_empty() {
            fields.push((k, v));
        }
    }
    let page = format!("/dashboard/checkout?kind={kind}");
    let refused = dash.submit(&page, &format!("/dashboard/checkout/{kind}"), &fields).await;
    assert_eq!(refused.status, 400, "{field}: {}", refused.text);
    assert_eq!(error_beside(&refused, beside), message, "{field}");
    let input = beside.trim_end_matches("-error");
    if refused.text.contains(&format!("id=\"{input}\"")) {
        let at = refused.text.find(&format!("id=\"{input}\"")).unwrap();
        let tag = &refused.text[at..at + refused.text[at..].find('>').unwrap()];
        assert!(tag.contains("aria-invalid=\"true\"") && tag.contains(beside), "{field}: {tag}");
    }
    assert_eq!(refused.text.matches("class=\"field-error\"").count(), 1, "{field}: one message");
    if field != "title" {
        assert!(refused.text.contains("value=\"Scarves\""), "{field}: the form keeps what was typed");
    }
}

/// Each bad field is refused as the API refuses the same body: the same
/// `details.field` and message, shown beside that field of the form (the
/// field marked invalid and described by it), the form kept, nothing made.
#[tokio::test]
async fn dashboard_checkout_form_refusals_show_beside_the_field_the_api_names() {
    let node = Node::start(Options::unthrottled());
    let api = Api::new();
    let (_, owner) = owned_org(&api, &node, "refusals@shop.example").await;
    let (_, key) = create_key(&api, &node.sandbox, &owner, json!({ "name": "k", "scopes": ["*"] })).await;
    let dash = Dashboard::new(&node.sandbox);
    dash.log_in("refusals@shop.example", PASSWORD).await;
    for case in refusal_cases() {
        refused_as_the_api_refuses(&api, &node, &key, &dash, &case).await;
    }
    for list in ["/v1/payment-pages", "/v1/payment-links"] {
        let listed = api.get(&node.sandbox_url(list), &key).await;
        assert_eq!(listed.body["data"], json!([]), "nothing made: {}", listed.text);
    }
}
