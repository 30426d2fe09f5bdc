//! The policy page's playground: what the active version, and beside it a stored candidate,
//! decide of one input (a tool proposal, or an AANA event when it has `tool_name`). It reads
//! and routes only; nothing is stored or recorded.

use serde_json::Value;

use super::error::ServiceError;
use super::policy::parse_candidate;
use super::services::Services;
use crate::domain::access::UseCase;
use crate::domain::contract::wire::FieldError;
use crate::domain::policy::model::Policy;
use crate::domain::policy_change::explain::{Explained, explain};
use crate::domain::principal::Principal;

/// Longest input the playground reads, in bytes of JSON text (an adapter checks it before
/// parsing; a real proposal is far smaller).
pub const MAX_PLAYGROUND_INPUT: usize = 64 * 1024;

/// What one version decides of the input, or every contract error when it is neither a
/// proposal nor an event.
pub type Explanation = Result<Explained, Vec<FieldError>>;

impl Services {
    /// What the active version decides of `input` and, when `candidate` names a stored
    /// version, what that version decides of it.
    pub async fn policy_playground(
        &self,
        who: &Principal,
        input: &Value,
        candidate: Option<&str>,
    ) -> Result<(Explanation, Option<Explanation>), ServiceError> {
        self.authorize(who, UseCase::ViewPolicy)?;
        let candidate = match candidate {
            Some(version) => Some(self.stored_candidate(who, version).await?),
            None => None,
        };
        let active = explain(input, &self.policy());
        Ok((active, candidate.map(|c| explain(input, &c))))
    }

    /// Stored version `version` as a policy: `NotFound` when there is none, `Invalid` when
    /// its text no longer loads.
    async fn stored_candidate(
        &self,
        who: &Principal,
        version: &str,
    ) -> Result<Policy, ServiceError> {
        let stored = self
            .policy_version(who, version)
            .await?
            .ok_or(ServiceError::NotFound)?;
        if stored.source == "builtin" {
            return Ok(Policy::builtin());
        }
        parse_candidate(&stored.text).map_err(|e| {
            ServiceError::Invalid(vec![FieldError::new(
                "candidate",
                format!("stored version {version} does not load: {e}"),
            )])
        })
    }
}
