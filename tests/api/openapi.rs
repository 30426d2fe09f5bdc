//! The OpenAPI document matches the routes both ways: every operation it names answers (`401`
//! without a token where it needs one, else `200`), and every API route in the source is
//! registered through utoipa-axum's `routes!`, which documents it. The human-readable page
//! lists every operation and loads nothing from elsewhere.

use std::path::Path;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::common::on_both_backends;
use crate::helpers::TestApp;

on_both_backends!(
    every_documented_operation_exists_and_says_who_may_call_it,
    the_api_page_lists_every_operation_from_this_server_only,
);

async fn every_documented_operation_exists_and_says_who_may_call_it(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let r = app
        .client
        .get(app.url("/api/v1/openapi.json"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::OK);
    let doc: Value = r.json().await.expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().expect("paths");
    let mut operations = 0;
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            operations += 1;
            let id = op["operationId"].as_str().expect("operationId");
            assert!(ids.insert(id.to_owned()), "operationId {id} is used twice");
            let url = app.url(&path.replace("{id}", "0192f0c4-0000-7000-8000-000000000001"));
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let mut request = app.client.request(method.clone(), url);
            if method == Method::POST {
                request = request.json(&serde_json::json!({}));
            }
            let status = request.send().await.expect("request").status();
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let expected = if secured {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::OK
            };
            assert_eq!(status, expected, "{method} {path}");
            // Every operation says what it answers, and every JSON body names a schema.
            assert!(
                op["responses"].as_object().is_some_and(|r| !r.is_empty()),
                "{path}"
            );
            if let Some(body) = op.get("requestBody") {
                let schema = &body["content"]["application/json"]["schema"]["$ref"];
                let name = schema
                    .as_str()
                    .expect("a named schema")
                    .rsplit('/')
                    .next()
                    .expect("name");
                assert!(
                    doc["components"]["schemas"][name].is_object(),
                    "{name} is defined"
                );
            }
        }
    }
    assert!(operations >= 16, "{operations} operations");
    // The published request schemas are the same the contracts endpoints serve.
    let served: Value = app
        .client
        .get(app.url("/api/v1/schemas/tool-proposal.json"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    let documented = &doc["components"]["schemas"]["ToolProposal"];
    assert_eq!(documented["required"], served["required"]);
    // Every reference resolves inside the document.
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"").skip(1) {
        let target = reference.split('"').next().expect("ref");
        let pointer = target.strip_prefix('#').expect("a local reference");
        assert!(doc.pointer(pointer).is_some(), "{target} resolves");
    }
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn every_api_route_is_registered_with_its_operation() {
    // Routes registered with utoipa-axum's `routes!` are in the document by construction; a
    // plain axum route (`.route(`, `.route_service(`, `.nest_service(`) is not. None may serve
    // the API: not in `src/api` (any depth), and nowhere under `/api` or `/aana`. The one
    // exception is MCP's endpoints (`/mcp`, `/mcp/gateway`), a protocol of its own with its
    // own tool schemas.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let in_api = |f: &Path| f.starts_with(root.join("api"));
    assert!(files.iter().filter(|f| in_api(f)).count() > 5);
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for plain in [".route(", ".route_service(", ".nest_service("] {
            for (at, _) in text.match_indices(plain) {
                let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
                if text[line_start..at].trim_start().starts_with("//") {
                    continue;
                }
                checked += 1;
                // The path, also when rustfmt put it on the next line.
                let path = text[at + plain.len()..].trim_start();
                if path.starts_with("\"/mcp\"") || path.starts_with("\"/mcp/gateway\"") {
                    continue;
                }
                let line = text[..at].lines().count();
                assert!(
                    !in_api(&file) && !path.starts_with("\"/api") && !path.starts_with("\"/aana"),
                    "{}:{line}: register API routes with `.routes(routes!(handler))`",
                    file.display(),
                );
            }
        }
    }
    // The scan saw the web's own routes and MCP's, so it reads the code it means to.
    assert!(checked > 5, "{checked} plain routes seen");
}

async fn the_api_page_lists_every_operation_from_this_server_only(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let doc: Value = app
        .client
        .get(app.url("/api/v1/openapi.json"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    let r = app
        .client
        .get(app.url("/api/v1/docs"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/html")
    );
    let html = r.text().await.expect("html");
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("item").keys() {
            let heading = format!("<code>{} {}</code>", method.to_uppercase(), path);
            assert!(html.contains(&heading), "{heading}");
        }
    }
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from elsewhere"
    );
}
