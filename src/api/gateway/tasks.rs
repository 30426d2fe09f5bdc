//! The MCP Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the gateway: a client
//! that declares it gets a call that waits for a person as a task instead of a held request.
//! The proposal is the durable task (its id is the task id, on every instance sharing the
//! database): `tasks/get` reports it (`working` while it waits, runs, or waits for a person to
//! settle an unknown outcome; `completed` only once nothing follows, with the call's result, or
//! with `isError: true` once it was rejected, refused or expired; `cancelled` once withdrawn), and `tasks/cancel` withdraws it while it waits
//! (`proposal.withdrawn`, audited). A call the policy accepts or refuses answers at once, as
//! without the extension.

use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::{GatewayMcp, answer, fit_to_schema};
use crate::api::error::ApiError;
use crate::api::mcp::Caller;
use crate::domain::gateway::ToolName;
use crate::domain::lifecycle::{ProposalStatus, status_at};
use crate::service::{AgentView, Conflict, ServiceError};

/// How often a client should poll `tasks/get`, in milliseconds.
const POLL_MS: u64 = 2_000;

/// Whether the request's client declared the tasks extension.
pub(super) fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// The task of a proposal seen in `status`.
fn task_of(view: &AgentView, status: ProposalStatus) -> Task {
    let p = &view.0;
    let mut task = Task::new(
        p.id.to_string(),
        TaskStatus::Working,
        rfc3339(p.created_at),
        rfc3339(p.updated_at),
    )
    .with_poll_interval_ms(POLL_MS)
    .with_status_message(match status {
        ProposalStatus::Pending => "waiting for a person's approval in Countersign".to_owned(),
        ProposalStatus::Approved | ProposalStatus::Accepted => "approved; running".to_owned(),
        ProposalStatus::OutcomeUnknown | ProposalStatus::TimedOut => {
            format!("{status}: a person settles what happened")
        }
        other => format!("{other}"),
    });
    if let Some(expires) = p.expires_at.filter(|_| status == ProposalStatus::Pending) {
        let ttl = (expires - p.created_at).whole_milliseconds().max(0);
        task = task.with_ttl_ms(u64::try_from(ttl).unwrap_or(u64::MAX));
    }
    task
}

/// What a client asking for a task that is not its own (or none) is told.
fn no_task(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task `{task_id}`"), None)
}

/// A failure of the server, logged: the client is told the database is not answering (as
/// the API's `503 unavailable` body, in the error's data), or no more.
fn failed(e: ServiceError) -> ErrorData {
    let shown = e.to_string();
    let api = ApiError::from(e);
    if !matches!(api, ApiError::Unavailable) {
        tracing::error!(error = %shown, "a gateway task could not be read or cancelled");
    }
    told(&api)
}

/// What the client is told of a failure, classified as the API classifies it.
fn told(e: &ApiError) -> ErrorData {
    match e {
        ApiError::Unavailable => ErrorData::internal_error(
            "Countersign's database is not answering; ask again shortly",
            Some(e.body()),
        ),
        _ => ErrorData::internal_error("Countersign could not answer for this task", None),
    }
}

/// A task id as a proposal id.
fn proposal_id(task_id: &str) -> Result<Uuid, ErrorData> {
    Uuid::parse_str(task_id.trim()).map_err(|_| no_task(task_id))
}

impl GatewayMcp {
    /// The call behind proposal `id` as a task, when it waits for a person; `None` when it
    /// does not (accepted or refused: it answers at once).
    pub(super) async fn as_task(
        &self,
        caller: &Caller,
        (id, first): &(Uuid, Option<AgentView>),
    ) -> Result<Option<CreateTaskResult>, ApiError> {
        let view = match first {
            Some(view) => view.clone(),
            None => self.services.agent_proposal(&caller.0, *id).await?,
        };
        let status = status_at(view.0.status, view.0.expires_at, self.services.now());
        if status != ProposalStatus::Pending {
            return Ok(None);
        }
        Ok(Some(CreateTaskResult::new(task_of(&view, status))))
    }

    /// `tasks/get`: the task of the caller's proposal `task_id`.
    pub(super) async fn get(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<GetTaskResult, ErrorData> {
        let id = proposal_id(task_id)?;
        let view = match self.services.agent_proposal(&caller.0, id).await {
            Ok(view) => view,
            Err(ServiceError::NotFound) => return Err(no_task(task_id)),
            Err(e) => return Err(failed(e)),
        };
        let status = status_at(view.0.status, view.0.expires_at, self.services.now());
        let task = task_of(&view, status);
        let payload = if status == ProposalStatus::Withdrawn {
            TaskPayload::Cancelled
        } else if status.is_final() {
            let name = ToolName::from_internal(&view.0.contract.tool.name);
            let mut result = answer(view, status);
            if let Some(tool) = name.and_then(|n| self.gateway.tool(&n).ok()) {
                result = fit_to_schema(result, &tool.definition);
            }
            let result: JsonObject = match serde_json::to_value(&result) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => JsonObject::new(),
            };
            TaskPayload::Completed { result }
        } else {
            TaskPayload::Working
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: withdraws the caller's proposal `task_id` while it waits.
    pub(super) async fn cancel(&self, caller: &Caller, task_id: &str) -> Result<(), ErrorData> {
        let id = proposal_id(task_id)?;
        match self.services.withdraw(&caller.0, id).await {
            Ok(_) => Ok(()),
            Err(ServiceError::NotFound) => Err(no_task(task_id)),
            Err(ServiceError::Conflict(Conflict::AlreadyDecided(status))) => {
                Err(ErrorData::invalid_params(
                    format!(
                        "the call is {status}: only a call waiting for a person can be cancelled"
                    ),
                    None,
                ))
            }
            Err(e) => Err(failed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_that_is_not_answering_is_said_so_in_the_error() {
        let data = told(&ApiError::Unavailable).data.expect("the API's body");
        assert_eq!(data["error"]["code"], "unavailable");
        assert_eq!(told(&ApiError::Internal).data, None, "nothing more");
    }
}
