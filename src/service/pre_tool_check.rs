//! Seed 000's pre-tool-check: an AANA Agent Action Contract v1 event in, the decision envelope
//! out, and every answer recorded in the audit trail in audit-safe form (argument keys with
//! keyed hashes of their values, free text as length and hash). A schema-invalid event is
//! recorded by field path only.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use serde::Serialize;
use serde_json::Value;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::safe;
use crate::audit::{Actor, AuditEvent, PreToolCheckDecided, PreToolCheckRejected, policy_ref};
use crate::domain::contract::aana::Event;
use crate::domain::policy_change::backtest::{DecisionKind, Outcome, Recorded, Replay};
use crate::domain::routing::gate::{self, CheckInputs, Decision, RecordedCheck};
use crate::domain::routing::scan::audit_safe_name;

/// The decision envelope, with the id of its audit row.
#[derive(Debug, Serialize)]
pub struct CheckAnswer {
    /// Id under which this check is recorded in the audit trail.
    pub check_id: String,
    /// The decision.
    #[serde(flatten)]
    pub decision: Decision,
}

impl Services {
    /// Answers agent `who`'s pre-tool-check for the event `body`.
    pub async fn pre_tool_check(
        &self,
        who: &Principal,
        body: &Value,
    ) -> Result<CheckAnswer, ServiceError> {
        let agent = self.agent_of(who, UseCase::PreToolCheck)?;
        let started = std::time::Instant::now();
        let answer = self.check_event(agent, body).await;
        self.metrics().checked(started.elapsed());
        answer
    }

    async fn check_event(&self, agent: &str, body: &Value) -> Result<CheckAnswer, ServiceError> {
        let check_id = uuid::Uuid::now_v7().to_string();
        let actor = Actor::agent(agent);
        let mut event = match Event::parse(body) {
            Ok(event) => event,
            Err(errors) => {
                let refused = Decision::schema_invalid(&errors, &self.policy());
                let rejected = PreToolCheckRejected {
                    check_id,
                    decision: refused.route,
                    policy: policy_ref(&refused.policy_version),
                    fields: safe::bounded(
                        errors.iter().map(|e| audit_safe_name(&e.field).to_owned()),
                    ),
                };
                let record = (
                    self.now(),
                    actor,
                    AuditEvent::PreToolCheckRejected(rejected),
                );
                self.store().record(vec![record]).await?;
                return Err(ServiceError::Invalid(errors));
            }
        };
        // The token says who is asking; an event may not speak for another agent.
        match &event.agent_id {
            Some(id) if id != agent => {
                return Err(ServiceError::Forbidden {
                    code: "agent_mismatch",
                    message: format!(
                        "`agent_id` is `{id}` but this token belongs to agent `{agent}`"
                    ),
                });
            }
            Some(_) => {}
            None => event.agent_id = Some(agent.to_owned()),
        }
        let decision = gate::check(&event, &self.policy());
        let decided = PreToolCheckDecided::new(self.store().salt(), &check_id, &event, &decision)?;
        self.shadow_decision(|| shadowed_check(&check_id, agent, &event, &decided, self.now()));
        let record = (self.now(), actor, AuditEvent::PreToolCheckDecided(decided));
        self.store().record(vec![record]).await?;
        tracing::info!(tool = %event.tool_name, route = %decision.route, "pre-tool-check");
        Ok(CheckAnswer { check_id, decision })
    }
}

/// A check just decided, as a shadow run routes it again: from what its record keeps (no
/// second look at its evidence on the request's path); one whose record cannot replay it is
/// not shadowed.
fn shadowed_check(
    check_id: &str,
    agent: &str,
    event: &crate::domain::Event,
    decided: &PreToolCheckDecided,
    at: time::OffsetDateTime,
) -> Option<Recorded> {
    let evidence = decided.replay.as_ref()?;
    let facts = RecordedCheck {
        tool_name: &event.tool_name,
        tool_category: event.tool_category,
        authorization_state: event.authorization_state,
        risk_domain: event.risk_domain,
        recommended_route: event.recommended_route,
        agent,
    };
    Some(Recorded {
        kind: DecisionKind::PreToolCheck,
        subject: check_id.to_owned(),
        at,
        tool: decided.tool.clone(),
        agent: agent.to_owned(),
        was: Outcome {
            route: decided.decision,
            rule: decided.rule.clone(),
            blockers: decided.blockers.clone(),
        },
        replay: Replay::Check(Box::new(CheckInputs::from_record(&facts, evidence))),
    })
}
