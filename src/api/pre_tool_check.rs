//! `POST /api/v1/pre-tool-check` (agent token): seed 000's pre-tool-check. Takes an AANA
//! Agent Action Contract v1 event and answers the decision envelope (`route`, `gate_decision`,
//! `recommended_action`, `hard_blockers`, …). Every answer is recorded in the audit trail as its
//! audit-safe event (argument keys, never values); a schema-invalid event is answered `422` with
//! every error by field path, and only the rejection's audit row is stored.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{Value, json};

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody};
use crate::domain::Event;
use crate::domain::principal::ActorKind;
use crate::domain::routing::gate::{self, Decision};
use crate::domain::routing::scan::audit_safe_name;
use crate::storage::AuditEntry;

pub fn router() -> Router<ApiState> {
    Router::new().route("/pre-tool-check", post(pre_tool_check))
}

fn entry(agent: &str, action: &'static str, subject: String, details: Value) -> AuditEntry {
    AuditEntry {
        actor_kind: ActorKind::Agent,
        actor: agent.to_owned(),
        action,
        subject_type: "pre_tool_check",
        subject_id: subject,
        before_status: None,
        after_status: None,
        details,
    }
}

/// The decision envelope, with the id of its audit row.
#[derive(Serialize)]
struct Answer {
    /// Id under which this check is recorded in the audit trail.
    check_id: String,
    #[serde(flatten)]
    decision: Decision,
}

#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn pre_tool_check(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<Json<Answer>, ApiError> {
    let check_id = uuid::Uuid::now_v7().to_string();
    let mut event = match Event::parse(&body) {
        Ok(event) => event,
        Err(errors) => {
            let refused = Decision::schema_invalid(&errors, &state.policy);
            let details = json!({
                "route": refused.route,
                "policy_version": refused.policy_version,
                // Field paths only: messages may quote the rejected values.
                "fields": errors.iter().map(|e| audit_safe_name(&e.field)).collect::<Vec<_>>(),
            });
            state
                .store
                .append_audit(&entry(
                    &agent.0,
                    "pre_tool_check.rejected",
                    check_id,
                    details,
                ))
                .await?;
            return Err(ApiError::validation(errors));
        }
    };
    // The token says who is asking; an event may not speak for another agent.
    match &event.agent_id {
        Some(id) if *id != agent.0 => {
            return Err(ApiError::Forbidden {
                code: "agent_mismatch",
                message: format!(
                    "`agent_id` is `{id}` but this token belongs to agent `{}`",
                    agent.0
                ),
            });
        }
        Some(_) => {}
        None => event.agent_id = Some(agent.0.clone()),
    }
    let decision = gate::check(&event, &state.policy);
    let details = json!({
        "route": decision.route,
        "gate_decision": decision.gate_decision,
        "rule": decision.rule,
        "policy_version": decision.policy_version,
        "hard_blockers": decision.hard_blockers.iter().map(|b| b.code).collect::<Vec<_>>(),
        "event": decision.audit_event,
    });
    state
        .store
        .append_audit(&entry(
            &agent.0,
            "pre_tool_check.decided",
            check_id.clone(),
            details,
        ))
        .await?;
    tracing::info!(tool = %event.tool_name, route = %decision.route, "pre-tool-check");
    Ok(Json(Answer { check_id, decision }))
}
