//! The OpenAPI 3.1 documents, generated: the public API's from the
//! documented routers (`crate::http::routes::documented`) and the wire types in
//! `sika-api`, the admin API's likewise (`crate::http::admin::document`). Nothing
//! here is written by hand. The black-box tests validate every response
//! they receive against the public document (see `validate`), so a response
//! that drifts from it fails a test.

use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;

use crate::http::envelope::{VERSION_CURRENT, VERSION_HEADER};

/// The public API's OpenAPI document. Every operation also takes the
/// optional version header.
pub fn document() -> Value {
    let mut document = finish(
        crate::http::routes::documented().into_openapi(),
        "Sika payments API",
        VERSION_CURRENT,
        "bearer",
    );
    document["servers"] = json!([{ "url": "/" }]);
    let version = json!({ "name": VERSION_HEADER, "in": "header", "required": false, "schema": { "enum": [VERSION_CURRENT] } });
    for item in document["paths"].as_object_mut().into_iter().flat_map(|paths| paths.values_mut()) {
        for operation in item.as_object_mut().into_iter().flat_map(|item| item.values_mut()) {
            let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
            operation["parameters"] = Value::Array(parameters.into_iter().chain([version.clone()]).collect());
        }
    }
    document
}

/// `router` with every operation under `tag`: a resource's router names its
/// tag once rather than each handler.
pub(crate) fn tagged<S: Clone + Send + Sync + 'static>(
    tag: &str,
    mut router: OpenApiRouter<S>,
) -> OpenApiRouter<S> {
    for item in router.get_openapi_mut().paths.paths.values_mut() {
        let methods = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        for operation in methods.into_iter().flatten() {
            operation.tags = Some(vec![tag.to_string()]);
        }
    }
    router
}

/// A generated document made whole: its title and version, and the bearer
/// security scheme its operations name.
pub fn finish(generated: utoipa::openapi::OpenApi, title: &str, version: &str, scheme: &str) -> Value {
    let mut document = serde_json::to_value(generated).expect("an OpenAPI document serializes to JSON");
    document["openapi"] = json!("3.1.0");
    document["info"] = json!({ "title": title, "version": version });
    document["components"]["securitySchemes"] = json!({ scheme: { "type": "http", "scheme": "bearer" } });
    document
}

/// The response schema the document gives for `method path` and `status`.
pub fn response_schema(document: &Value, method: &str, path: &str, status: u16) -> Option<Value> {
    let paths = document["paths"].as_object()?;
    let (_, item) = paths.iter().find(|(template, _)| path_matches(template, path))?;
    let response = &item[method.to_ascii_lowercase()]["responses"][status.to_string()];
    Some(response["content"]["application/json"]["schema"].clone())
}

fn path_matches(template: &str, path: &str) -> bool {
    let (t, p): (Vec<_>, Vec<_>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(t, p)| t.starts_with('{') || t == p)
}

/// Where a value departs from its schema, and how (`body.items[0].id: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

fn joined(mismatches: &[Mismatch]) -> String {
    mismatches.iter().map(|m| m.0.as_str()).collect::<Vec<_>>().join("; ")
}

/// Checks `value` against `schema` (the subset of JSON Schema the document
/// uses). Returns the first mismatch as a path and a reason.
pub fn validate(document: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), Mismatch> {
    if let Some(name) = schema["$ref"].as_str() {
        let name = name.rsplit('/').next().unwrap_or("");
        return validate(document, &document["components"]["schemas"][name], value, at);
    }
    if let Some(all) = schema["allOf"].as_array() {
        for part in all {
            validate(document, part, value, at)?;
        }
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(options) = schema[keyword].as_array() {
            let errors: Vec<_> =
                options.iter().filter_map(|o| validate(document, o, value, at).err()).collect();
            if errors.len() == options.len() {
                return Err(Mismatch(format!("{at}: matches none of {keyword}: {}", joined(&errors))));
            }
        }
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        return Err(Mismatch(format!("{at}: {value} is not one of {options:?}")));
    }
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let ok = allowed.contains(&actual) || (actual == "integer" && allowed.contains(&"number"));
        if !ok {
            return Err(Mismatch(format!("{at}: expected {allowed:?}, found {actual}")));
        }
    }
    if let (Some(pattern), Some(text)) = (schema["pattern"].as_str(), value.as_str()) {
        let re = regex_lite::Regex::new(pattern).map_err(|e| Mismatch(format!("{at}: {pattern}: {e}")))?;
        if !re.is_match(text) {
            return Err(Mismatch(format!("{at}: '{text}' does not match {pattern}")));
        }
    }
    if let Some(object) = value.as_object() {
        for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                return Err(Mismatch(format!("{at}: missing required field '{name}'")));
            }
        }
        if let Some(properties) = schema["properties"].as_object() {
            for (name, property) in properties {
                if let Some(v) = object.get(name) {
                    validate(document, property, v, &format!("{at}.{name}"))?;
                }
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (index, item) in array.iter().enumerate() {
            validate(document, items, item, &format!("{at}[{index}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` in `value`, with where it stands.
    fn refs<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    out.push((at.clone(), target));
                }
                for (key, child) in map {
                    refs(child, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    refs(child, format!("{at}/{index}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_reference_resolves_and_every_array_says_what_it_holds() {
        for document in [document(), crate::http::admin::document()] {
            references_resolve_and_arrays_have_items(&document);
        }
    }

    fn references_resolve_and_arrays_have_items(document: &Value) {
        let mut found = Vec::new();
        refs(document, String::new(), &mut found);
        assert!(!found.is_empty());
        for (at, target) in found {
            let name =
                target.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{at}: {target}"));
            assert!(document["components"]["schemas"][name].is_object(), "{at}: {target} does not resolve");
        }
        fn arrays(value: &Value, at: &str) {
            match value {
                Value::Object(map) => {
                    if map.get("type") == Some(&json!("array")) {
                        assert!(map.contains_key("items"), "{at}: an array schema without items");
                    }
                    for (key, child) in map {
                        arrays(child, &format!("{at}/{key}"));
                    }
                }
                Value::Array(items) => items.iter().for_each(|child| arrays(child, at)),
                _ => {}
            }
        }
        arrays(&document["components"], "components");
    }

    /// Every admin operation names the operator's token and documents the
    /// 401 it answers without one; searches take their paging and filters.
    #[test]
    fn the_admin_document_declares_security_errors_and_queries() {
        let document = crate::http::admin::document();
        assert_eq!(document["components"]["securitySchemes"]["operator"]["scheme"], "bearer");
        let mut operations = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                operations += 1;
                let name = format!("{} {path}", method.to_uppercase());
                assert_eq!(operation["security"], json!([{ "operator": [] }]), "{name}");
                assert!(operation["responses"]["401"].is_object(), "{name} documents 401");
                assert!(operation["operationId"].is_string(), "{name} has an operationId");
            }
        }
        assert_eq!(operations, 46, "every admin route is documented");
        let reconcile = &document["paths"]["/admin/v1/live/reconciliation"]["get"];
        for wanted in ["from", "to"] {
            let parameters = reconcile["parameters"].as_array().unwrap();
            assert!(parameters.iter().any(|p| p["name"] == wanted), "reconciliation takes {wanted}");
        }
        for status in ["200", "400", "409", "503"] {
            assert!(reconcile["responses"][status].is_object(), "reconciliation documents {status}");
        }
        let search = &document["paths"]["/admin/v1/{stack}/payouts"]["get"]["parameters"];
        for wanted in ["stack", "limit", "cursor", "q", "status"] {
            assert!(search.as_array().unwrap().iter().any(|p| p["name"] == wanted), "search takes {wanted}");
        }
    }

    #[test]
    fn generated_operations_declare_their_query_parameters_scopes_and_errors() {
        let document = document();
        let list = &document["paths"]["/v1/payouts"]["get"];
        let names: Vec<(&str, &str)> = list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
            .collect();
        for wanted in [("limit", "query"), ("cursor", "query"), (VERSION_HEADER, "header")] {
            assert!(names.contains(&wanted), "{wanted:?} in {names:?}");
        }
        assert_eq!(list["security"], json!([{ "bearer": ["payouts:read"] }]));
        let create = &document["paths"]["/v1/payouts"]["post"];
        assert_eq!(create["security"], json!([{ "bearer": ["payouts:write"] }]));
        for status in ["200", "201", "400", "401", "403", "409", "415", "422", "429"] {
            assert!(create["responses"][status].is_object(), "createPayout documents {status}");
        }
        assert_eq!(
            create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/CreatePayout"
        );
    }

    /// The schemas a request body uses, following `$ref`s from each
    /// operation's request body.
    fn request_schemas(document: &Value) -> std::collections::BTreeSet<String> {
        fn refs(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Object(fields) => {
                    if let Some(Value::String(target)) = fields.get("$ref") {
                        out.push(target.trim_start_matches("#/components/schemas/").to_string());
                    }
                    fields.values().for_each(|v| refs(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut pending = Vec::new();
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                refs(&operation["requestBody"], &mut pending);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        while let Some(name) = pending.pop() {
            if seen.insert(name.clone()) {
                refs(&document["components"]["schemas"][&name], &mut pending);
            }
        }
        seen
    }

    /// The schema an operation's JSON request body names, followed through
    /// `$ref` and an optional body's `oneOf` with `null`.
    fn request_body_schema<'a>(document: &'a Value, operation: &'a Value) -> Option<(String, &'a Value)> {
        let mut schema = &operation["requestBody"]["content"]["application/json"]["schema"];
        if let Some(options) = schema["oneOf"].as_array() {
            schema = options.iter().find(|option| option["$ref"].is_string())?;
        }
        let name = schema["$ref"].as_str()?.trim_start_matches("#/components/schemas/").to_string();
        let resolved = &document["components"]["schemas"][&name];
        Some((name, resolved))
    }

    /// Every request body of both documents carries an example (from the
    /// request type in `sika-api`), and each example fits its own schema,
    /// so a generated client's docs show a request that would be read.
    #[test]
    fn every_request_body_has_an_example_that_fits_its_schema() {
        let mut bodies = 0;
        for document in [document(), crate::http::admin::document()] {
            for (path, item) in document["paths"].as_object().unwrap() {
                for (method, operation) in item.as_object().unwrap() {
                    if operation.get("requestBody").is_none() {
                        continue;
                    }
                    let name = format!("{} {path}", method.to_uppercase());
                    let (schema_name, schema) = request_body_schema(&document, operation)
                        .unwrap_or_else(|| panic!("{name}: the body names no schema"));
                    let examples = schema["examples"].as_array().filter(|e| !e.is_empty());
                    let examples = examples.unwrap_or_else(|| panic!("{name}: {schema_name} has no example"));
                    for example in examples {
                        let at = format!("{name} example");
                        let schema_ref = json!({ "$ref": format!("#/components/schemas/{schema_name}") });
                        validate(&document, &schema_ref, example, &at).unwrap_or_else(|e| panic!("{e}"));
                    }
                    bodies += 1;
                }
            }
        }
        assert!(bodies >= 30, "only {bodies} request bodies");
    }

    /// The scopes a key may hold are listed where a key is created, and
    /// every scope an operation needs is one of them.
    #[test]
    fn the_document_lists_the_scopes_and_every_operation_needs_a_listed_one() {
        let document = document();
        let scopes = &document["components"]["schemas"]["CreateApiKey"]["properties"]["scopes"];
        let listed: Vec<String> = serde_json::from_value(scopes["items"]["enum"].clone()).unwrap();
        assert_eq!(listed, sika_api::keys::scope_names());
        assert!(listed.contains(&"*".to_string()) && listed.contains(&"payouts:write".to_string()));
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for requirement in operation["security"].as_array().into_iter().flatten() {
                    for scope in requirement["bearer"].as_array().into_iter().flatten() {
                        let scope = scope.as_str().unwrap();
                        if scope == "session" || scope.starts_with("session:") {
                            continue;
                        }
                        assert!(listed.iter().any(|s| s == scope), "{method} {path} needs unlisted {scope}");
                        assert!(crate::domain::credentials::is_known_scope(scope), "{scope}");
                    }
                }
            }
        }
        for scope in &listed {
            assert!(crate::domain::credentials::is_known_scope(scope), "{scope}");
        }
    }

    /// Each free-text request field states the maximum the node enforces
    /// (`domain::limits`), so the document and the check cannot disagree.
    #[test]
    fn request_text_fields_state_the_enforced_maximum() {
        let document = document();
        let mut checked = 0;
        for name in request_schemas(&document) {
            let schema = &document["components"]["schemas"][&name];
            let Some(properties) = schema["properties"].as_object() else { continue };
            for (field, property) in properties {
                let is_text = property["type"] == "string"
                    || property["type"].as_array().is_some_and(|t| t.contains(&json!("string")));
                let Some(max) = crate::domain::limits::text_chars_max(field) else { continue };
                if !is_text || property["enum"].is_array() {
                    continue;
                }
                assert_eq!(property["maxLength"], json!(max), "{name}.{field}: {property}");
                checked += 1;
            }
        }
        assert!(checked > 50, "only {checked} fields checked");
    }

    /// What every generated operation owes its callers: the one scope it
    /// needs, the errors any request can meet (an unknown `sika-version` is
    /// a 400 on every path), a 404 for an id, and the paging parameters of
    /// a list (but the accounts list, one account per currency, which the
    /// spec says is not paginated).
    #[test]
    fn every_generated_operation_declares_its_scope_errors_and_paging() {
        let generated = serde_json::to_value(crate::http::routes::documented().into_openapi()).unwrap();
        let document = document();
        let mut seen = 0;
        for (path, item) in generated["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                seen += 1;
                let operation = &document["paths"][path.as_str()][method.as_str()];
                let name = format!("{} {path}", method.to_uppercase());
                if name == "POST /v1/sessions" {
                    // Log-in takes no credentials, so it has no scope and no 403.
                    assert_eq!(operation["security"], json!([{}]), "{name} needs no credentials");
                    for status in ["400", "401", "429"] {
                        assert!(operation["responses"][status].is_object(), "{name} documents {status}");
                    }
                    continue;
                }
                if name == "POST /v1/sessions/password-reset" {
                    // Asked without credentials, answered 202 whatever the email.
                    assert_eq!(operation["security"], json!([{}]), "{name} needs no credentials");
                    for status in ["202", "400"] {
                        assert!(operation["responses"][status].is_object(), "{name} documents {status}");
                    }
                    continue;
                }
                let scopes = operation["security"][0]["bearer"].as_array();
                // Any valid key or session may read the simulations index.
                let wanted = if name == "GET /v1/simulations" { 0 } else { 1 };
                assert!(scopes.is_some_and(|s| s.len() == wanted), "{name} names its scope");
                let mut statuses = vec!["400", "401", "403", "429"];
                if path.ends_with("/{id}") {
                    statuses.push("404");
                }
                for status in statuses {
                    assert!(operation["responses"][status].is_object(), "{name} documents {status}");
                }
                let success = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
                    .as_str()
                    .unwrap_or_default();
                // GET /v1/accounts holds one account per currency and is not paged.
                if success.starts_with("#/components/schemas/ListPage_") && path != "/v1/accounts" {
                    let parameters = operation["parameters"].as_array().unwrap();
                    for wanted in ["limit", "cursor"] {
                        assert!(parameters.iter().any(|p| p["name"] == wanted), "{name} takes {wanted}");
                    }
                }
            }
        }
        assert!(seen >= 6, "only {seen} generated operations: is the document still generated?");
    }

    /// The names of the query parameters `method path` declares.
    fn query_parameters<'a>(document: &'a Value, method: &str, path: &str) -> Vec<&'a str> {
        document["paths"][path][method]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap())
            .collect()
    }

    /// A bulk answer documents each item's result: either the saved
    /// resource or the item's error, told apart by `status`.
    #[test]
    fn bulk_results_are_typed_per_item() {
        let document = document();
        let answer = response_schema(&document, "post", "/v1/recipients/bulk", 200).unwrap();
        assert_eq!(answer["$ref"], "#/components/schemas/RecipientResults");
        let result = &document["components"]["schemas"]["RecipientResult"];
        let statuses: Vec<&Value> = result["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|option| &option["properties"]["status"]["enum"])
            .collect();
        assert_eq!(statuses, [&json!(["created"]), &json!(["failed"])]);
        let created = json!({ "status": "created", "index": 0, "recipient": { "id": "rcp_1", "name": "Ama", "code": "mtn_gh", "currency": "GHS", "createdAt": "2026-02-20T10:00:00.000Z" } });
        assert_eq!(validate(&document, &answer, &json!({ "results": [created] }), "body"), Ok(()));
        let no_error = json!({ "status": "failed", "index": 1 });
        assert!(validate(&document, &answer, &json!({ "results": [no_error] }), "body").is_err());
    }

    #[test]
    fn list_filters_are_documented_query_parameters() {
        let document = document();
        let deliveries = query_parameters(&document, "get", "/v1/webhooks/deliveries");
        for wanted in ["limit", "cursor", "status", "endpointId", "eventId", "event", "resourceId"] {
            assert!(deliveries.contains(&wanted), "listDeliveries declares {wanted}: {deliveries:?}");
        }
    }
}
