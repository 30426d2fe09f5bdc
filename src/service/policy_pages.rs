//! What the policy page reads: the active version, the history of activations, the requests
//! to activate a version, and one request with its diff against the version it would replace,
//! its backtest and its shadow run's differences.

use super::error::ServiceError;
use super::services::Services;
use crate::domain::access::UseCase;
use crate::domain::policy_change::diff;
use crate::domain::policy_change::{ActivationRecord, ChangeRecord, VersionRecord};
use crate::domain::principal::Principal;
use crate::storage::policies::{self, ShadowDifference, ShadowTransition};

/// Shadow differences a request's page lists, at most.
pub const SHADOW_LISTED: i64 = 200;

/// The policy page's overview.
#[derive(Debug, Clone)]
pub struct PolicyOverview {
    /// The version in force, as stored.
    pub active: Option<VersionRecord>,
    /// The activations, newest first.
    pub history: Vec<ActivationRecord>,
    /// Pending requests, then the latest decided ones.
    pub changes: Vec<ChangeRecord>,
}

/// One request's page.
#[derive(Debug, Clone)]
pub struct ChangePage {
    /// The request.
    pub change: ChangeRecord,
    /// The version it would activate.
    pub candidate: VersionRecord,
    /// The version active now.
    pub active: Option<VersionRecord>,
    /// Unified diff from the active version's text to the candidate's.
    pub diff: String,
    /// A few examples of each difference its shadow run saw, newest first.
    pub shadow: Vec<ShadowDifference>,
    /// How many differences its shadow run saw in all.
    pub shadow_differences: i64,
    /// Its differences by route change, tool and agent, most frequent first.
    pub shadow_transitions: Vec<ShadowTransition>,
}

impl Services {
    /// The activations, newest first (at most `limit`).
    pub async fn policy_history(
        &self,
        who: &Principal,
        limit: i64,
    ) -> Result<Vec<ActivationRecord>, ServiceError> {
        self.authorize(who, UseCase::ViewPolicy)?;
        Ok(policies::history(self.read().await?.conn(), limit).await?)
    }

    /// The policy page's overview.
    pub async fn policy_overview(&self, who: &Principal) -> Result<PolicyOverview, ServiceError> {
        self.authorize(who, UseCase::ViewPolicy)?;
        let mut conn = self.read().await?;
        let active = match policies::active(conn.conn()).await? {
            Some(v) => policies::version(conn.conn(), &v).await?,
            None => None,
        };
        Ok(PolicyOverview {
            active,
            history: policies::history(conn.conn(), 100).await?,
            changes: policies::changes(conn.conn(), 50).await?,
        })
    }

    /// A stored version's text (its page's diff, `policy history`).
    pub async fn policy_version(
        &self,
        who: &Principal,
        version: &str,
    ) -> Result<Option<VersionRecord>, ServiceError> {
        self.authorize(who, UseCase::ViewPolicy)?;
        Ok(policies::version(self.read().await?.conn(), version).await?)
    }

    /// Request `id`'s page.
    pub async fn policy_change(
        &self,
        who: &Principal,
        id: uuid::Uuid,
    ) -> Result<Option<ChangePage>, ServiceError> {
        self.authorize(who, UseCase::ViewPolicy)?;
        let mut conn = self.read().await?;
        let Some(change) = policies::change(conn.conn(), id).await? else {
            return Ok(None);
        };
        let candidate = policies::version(conn.conn(), &change.version)
            .await?
            .ok_or(ServiceError::NotFound)?;
        let active = match policies::active(conn.conn()).await? {
            Some(v) => policies::version(conn.conn(), &v).await?,
            None => None,
        };
        let (old_name, old_text) = match &active {
            Some(a) => (a.version.as_str(), a.text.as_str()),
            None => ("(none)", ""),
        };
        let diff = diff::unified(old_name, old_text, &candidate.version, &candidate.text);
        let (shadow, shadow_differences) =
            policies::shadow_differences(conn.conn(), id, SHADOW_LISTED).await?;
        let shadow_transitions = policies::shadow_transitions(conn.conn(), id).await?;
        Ok(Some(ChangePage {
            change,
            candidate,
            active,
            diff,
            shadow,
            shadow_differences,
            shadow_transitions,
        }))
    }
}
