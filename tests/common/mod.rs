//! Shared test helpers: fresh databases on either backend and sample proposals.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use serde_json::{Value, json};
use uuid::Uuid;

/// Where test PostgreSQL databases are created; override with `COUNTERSIGN_TEST_PG_URL`.
pub fn pg_base() -> String {
    std::env::var("COUNTERSIGN_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A fresh, empty database URL on `backend` (`sqlite` or `postgres`). SQLite files live in a
/// temporary directory that lives as long as the returned guard.
pub fn fresh_database(backend: &str) -> (String, Option<tempfile::TempDir>) {
    match backend {
        "sqlite" => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}/countersign.db", dir.path().display());
            (url, Some(dir))
        }
        "postgres" => (
            format!("{}/cs_test_{}", pg_base(), Uuid::new_v4().simple()),
            None,
        ),
        other => panic!("unknown backend {other}"),
    }
}

/// A valid seed 004 proposal body from `agent`.
pub fn proposal_body(agent: &str) -> Value {
    json!({
        "proposal_id": Uuid::new_v4(),
        "proposed_by": agent,
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked for it in ticket 42."},
        "parameters": {"contact_id": "c-123", "email": "new@example.com"},
        "risk_level": "medium",
        "approval_required": true,
        "compliance_context": {"gdpr": true, "hipaa": false},
        "idempotency_key": format!("key-{}", Uuid::new_v4()),
        "rollback_supported": true,
        "blast_radius": "small",
        "target_refs": [{"type": "crm_contact", "id": "c-123"}]
    })
}
