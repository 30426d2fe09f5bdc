//! The policy's life: which version is in force (stored, shared by every instance, followed
//! within a second of a change), candidates proposed by one admin and activated only when
//! another approves, break-glass activation at the shell, and backtests that replay recorded
//! decisions under a candidate.
//!
//! At start ([`Services::start_policy`]) a `--policy` file whose version is not the active one
//! becomes active, audited as loaded by the operator; without one the database's active
//! version governs (the built-in policy on a new database). Every activation commits the active
//! row, its history row and `policy.activated` together, and on PostgreSQL notifies the other
//! instances at that commit ([`crate::storage::policies::notify_policy`]); each instance also
//! looks four times a second ([`Services::follow_policy`]), so a lost notification or a SQLite
//! database changed from the shell is followed too.

use std::sync::Arc;

use time::OffsetDateTime;
use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::{Actor, AuditEvent};
use crate::audit::{PolicyActivated, PolicyAnswered, PolicyApprovalRefused, PolicyProposed};
use crate::domain::access::UseCase;
use crate::domain::contract::wire::FieldError;
use crate::domain::policy::model::Policy;
use crate::domain::policy_change::backtest::Report;
use crate::domain::policy_change::{
    Activation, ActivationRecord, ChangeRecord, ChangeStatus, MAX_REASON, MAX_TEXT, VersionRecord,
};
use crate::domain::principal::Principal;
use crate::storage::policies;
use crate::storage::writer::Tx;

/// A policy file given at start: its text and the policy it holds.
#[derive(Debug, Clone)]
pub struct PolicyFile {
    /// The TOML text.
    pub text: String,
    /// The policy.
    pub policy: Policy,
}

/// Why a policy change was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyChangeError {
    /// The candidate is not a valid policy: every error, with its line.
    #[error("not a valid policy")]
    Invalid(Vec<crate::domain::policy::model::PolicyError>),
    /// The rules refused it: `own_change`, `not_pending`, `already_active`, `no_such_version`,
    /// `reason_required`.
    #[error("{message}")]
    Refused {
        /// The rule.
        code: &'static str,
        /// What it means.
        message: String,
    },
    /// Anything else.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<crate::storage::StorageError> for PolicyChangeError {
    fn from(e: crate::storage::StorageError) -> Self {
        Self::Service(e.into())
    }
}

fn refused(code: &'static str, message: impl Into<String>) -> PolicyChangeError {
    PolicyChangeError::Refused {
        code,
        message: message.into(),
    }
}

/// What one activation stores and records.
struct Activating {
    version: VersionRecord,
    how: Activation,
    proposed_by: String,
    approved_by: Option<String>,
    reason: Option<String>,
    change_id: Option<Uuid>,
}

/// Stores `a` as the active version in `tx` with its history row and `policy.activated`, and
/// notifies the other instances at commit.
async fn activate_in(
    tx: &mut Tx,
    a: &Activating,
    actor: &Actor,
    now: OffsetDateTime,
    reason: Option<crate::audit::safe::TextDigest>,
) -> crate::storage::Result<()> {
    policies::insert_version(tx.conn(), &a.version).await?;
    let record = ActivationRecord {
        seq: 0,
        version: a.version.version.clone(),
        previous: None,
        activated_at: now,
        how: a.how,
        proposed_by: a.proposed_by.clone(),
        approved_by: a.approved_by.clone(),
        reason: a.reason.clone(),
        change_id: a.change_id,
    };
    let previous = policies::activate(tx.conn(), &record).await?;
    policies::notify_policy(tx.conn(), &a.version.version).await?;
    let event = PolicyActivated {
        policy_version: a.version.version.clone(),
        previous_version: previous,
        how: a.how.as_str(),
        break_glass: a.how == Activation::BreakGlass,
        change_id: a.change_id,
        proposed_by: a.proposed_by.clone(),
        approved_by: a.approved_by.clone(),
        reason,
    };
    tx.record(now, actor, AuditEvent::PolicyActivated(event));
    Ok(())
}

/// Parses a candidate's text, bounded.
pub fn parse_candidate(text: &str) -> Result<Policy, PolicyChangeError> {
    if text.len() > MAX_TEXT {
        return Err(refused(
            "too_large",
            format!("a policy is at most {MAX_TEXT} bytes"),
        ));
    }
    Policy::from_toml_str(text).map_err(PolicyChangeError::Invalid)
}

fn check_reason(reason: &str) -> Result<String, PolicyChangeError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(refused("reason_required", "say why: `reason` is required"));
    }
    if reason.chars().count() > MAX_REASON {
        return Err(refused(
            "reason_too_long",
            format!("`reason` is at most {MAX_REASON} characters"),
        ));
    }
    Ok(reason.to_owned())
}

impl Services {
    /// At start: the `--policy` file becomes active when its version is not (audited as loaded
    /// by the operator); without one, the stored active version governs (the built-in policy
    /// on a new database, stored as its first version).
    pub async fn start_policy(&self, file: Option<PolicyFile>) -> Result<(), ServiceError> {
        let now = self.now();
        let active = policies::active(self.read().await?.conn()).await?;
        let (version, how, policy) = match file {
            Some(f) => (
                VersionRecord {
                    version: f.policy.version().to_owned(),
                    text: f.text,
                    source: "file".into(),
                    loaded_by: "operator".into(),
                    loaded_at: now,
                },
                Activation::File,
                f.policy,
            ),
            None if active.is_some() => {
                self.follow_policy().await?;
                return Ok(());
            }
            None => {
                let policy = Policy::builtin();
                let version = VersionRecord {
                    version: policy.version().to_owned(),
                    text: String::new(),
                    source: "builtin".into(),
                    loaded_by: "system".into(),
                    loaded_at: now,
                };
                (version, Activation::Builtin, policy)
            }
        };
        if active.as_deref() != Some(version.version.as_str()) {
            let a = Activating {
                proposed_by: version.loaded_by.clone(),
                version,
                how,
                approved_by: None,
                reason: None,
                change_id: None,
            };
            self.store()
                .write(move |tx| {
                    Box::pin(async move {
                        let actor = Actor::system("operator");
                        activate_in(tx, &a, &actor, now, None).await?;
                        Ok::<_, ServiceError>(())
                    })
                })
                .await?;
        }
        self.swap_policy(Arc::new(policy));
        Ok(())
    }

    /// Loads the stored active version when it is not the one in force here, and this
    /// instance's shadow candidates; `true` when the policy changed.
    pub async fn follow_policy(&self) -> Result<bool, ServiceError> {
        let _following = self.policy.following.lock().await;
        let mut conn = self.read().await?;
        self.follow_shadows(conn.conn()).await?;
        let Some(active) = policies::active(conn.conn()).await? else {
            return Ok(false);
        };
        if active == self.policy().version() {
            return Ok(false);
        }
        let stored = policies::version(conn.conn(), &active)
            .await?
            .ok_or(ServiceError::NotFound)?;
        let policy = match stored.source.as_str() {
            "builtin" => Policy::builtin(),
            _ => Policy::from_toml_str(&stored.text).map_err(|errors| {
                ServiceError::Invalid(vec![FieldError::new(
                    "policy",
                    format!(
                        "stored version {active} no longer loads: {}",
                        errors.first().map(ToString::to_string).unwrap_or_default()
                    ),
                )])
            })?,
        };
        tracing::info!(policy = %active, previous = %self.policy().version(), "policy activated");
        self.swap_policy(Arc::new(policy));
        // A break-glass activation waits to be told: the notifier looks now.
        self.store().changes().notifications_queued();
        Ok(true)
    }

    /// Proposes activating the policy `text` (stored as a candidate), backtested against the
    /// decisions recorded since `since`; a second admin approves it on `/policy`.
    pub async fn propose_policy(
        &self,
        who: &Principal,
        text: &str,
        reason: &str,
        since: OffsetDateTime,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        self.authorize(who, UseCase::ProposePolicy)?;
        let candidate = parse_candidate(text)?;
        let reason = check_reason(reason)?;
        let version = VersionRecord {
            version: candidate.version().to_owned(),
            text: text.to_owned(),
            source: "proposed".into(),
            loaded_by: who.name().to_owned(),
            loaded_at: self.now(),
        };
        self.propose(who, version, &candidate, reason, since).await
    }

    /// Proposes returning to stored version `version`.
    pub async fn propose_return(
        &self,
        who: &Principal,
        version: &str,
        reason: &str,
        since: OffsetDateTime,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        self.authorize(who, UseCase::ProposePolicy)?;
        let reason = check_reason(reason)?;
        let stored = policies::version(self.read().await?.conn(), version)
            .await?
            .ok_or_else(|| refused("no_such_version", format!("no stored version {version}")))?;
        let candidate = self.stored_policy(&stored)?;
        self.propose(who, stored, &candidate, reason, since).await
    }

    fn stored_policy(&self, stored: &VersionRecord) -> Result<Policy, PolicyChangeError> {
        match stored.source.as_str() {
            "builtin" => Ok(Policy::builtin()),
            _ => parse_candidate(&stored.text),
        }
    }

    async fn propose(
        &self,
        who: &Principal,
        version: VersionRecord,
        candidate: &Policy,
        reason: String,
        since: OffsetDateTime,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        let base = self.policy().version().to_owned();
        if version.version == base {
            return Err(refused(
                "already_active",
                format!("{base} is the active version already"),
            ));
        }
        let report = self.replay_since(candidate, since).await?;
        let now = self.now();
        let change = ChangeRecord {
            id: Uuid::now_v7(),
            version: version.version.clone(),
            base,
            proposed_by: who.name().to_owned(),
            proposed_at: now,
            reason,
            status: ChangeStatus::Pending,
            decided_by: None,
            decided_at: None,
            decision_reason: None,
            loosening: report.loosens(),
            backtest: Some(report),
            shadow_until: None,
            shadowed: 0,
        };
        let event = PolicyProposed {
            change_id: change.id,
            policy_version: change.version.clone(),
            base_version: change.base.clone(),
            replayed: change.backtest.as_ref().map_or(0, |r| r.replayed),
            changed: change.backtest.as_ref().map_or(0, |r| r.changed),
            not_replayable: change
                .backtest
                .as_ref()
                .map_or(0, |r| r.erased + r.unrecorded),
            loosening: change.loosening,
            reason: self.store().salt().text(&change.reason),
        };
        let (stored, actor) = (change.clone(), Actor::of(who));
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    policies::insert_version(tx.conn(), &version).await?;
                    policies::insert_change(tx.conn(), &stored).await?;
                    tx.record(now, &actor, AuditEvent::PolicyProposed(event));
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(change)
    }

    /// A second admin approves pending request `id`: its version becomes active on every
    /// instance. The proposer may not (refused, and recorded).
    pub async fn approve_policy(
        &self,
        who: &Principal,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        self.answer_policy(who, id, ChangeStatus::Approved, reason)
            .await
    }

    /// A second admin refuses pending request `id`.
    pub async fn refuse_policy(
        &self,
        who: &Principal,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        self.answer_policy(who, id, ChangeStatus::Refused, reason)
            .await
    }

    async fn answer_policy(
        &self,
        who: &Principal,
        id: Uuid,
        answer: ChangeStatus,
        reason: Option<&str>,
    ) -> Result<ChangeRecord, PolicyChangeError> {
        self.authorize(who, UseCase::ApprovePolicy)?;
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        if reason.is_some_and(|r| r.chars().count() > MAX_REASON) {
            return Err(refused(
                "reason_too_long",
                format!("`reason` is at most {MAX_REASON} characters"),
            ));
        }
        let change = policies::change(self.read().await?.conn(), id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        let rule = if change.proposed_by == who.name() {
            Some("own_change")
        } else if change.status != ChangeStatus::Pending {
            Some("not_pending")
        } else {
            None
        };
        if let Some(rule) = rule {
            self.refuse_answer(who, &change, rule).await?;
            return Err(match rule {
                "own_change" => refused(
                    "own_change",
                    "you proposed this change: another admin must approve it",
                ),
                _ => refused("not_pending", format!("this change is {}", change.status)),
            });
        }
        let version = policies::version(self.read().await?.conn(), &change.version)
            .await?
            .ok_or(ServiceError::NotFound)?;
        self.stored_policy(&version)?;
        let settled = self
            .settle_change(who, &change, answer, reason, version)
            .await?;
        if !settled {
            return Err(refused(
                "not_pending",
                "someone else answered this change first",
            ));
        }
        if answer == ChangeStatus::Approved {
            self.follow_policy().await?;
        }
        Ok(policies::change(self.read().await?.conn(), id)
            .await?
            .ok_or(ServiceError::NotFound)?)
    }

    async fn refuse_answer(
        &self,
        who: &Principal,
        change: &ChangeRecord,
        rule: &'static str,
    ) -> Result<(), ServiceError> {
        let event = PolicyApprovalRefused {
            change_id: change.id,
            policy_version: change.version.clone(),
            rule,
        };
        self.store()
            .record(vec![(
                self.now(),
                Actor::of(who),
                AuditEvent::PolicyApprovalRefused(event),
            )])
            .await?;
        Ok(())
    }

    /// Settles `change` as `answer` and, when approved, activates its version, in one
    /// transaction; `false` when it was no longer pending.
    async fn settle_change(
        &self,
        who: &Principal,
        change: &ChangeRecord,
        answer: ChangeStatus,
        reason: Option<&str>,
        version: VersionRecord,
    ) -> Result<bool, ServiceError> {
        let now = self.now();
        let salt = self.store().salt();
        let answered = PolicyAnswered {
            answer: answer.as_str(),
            change_id: change.id,
            policy_version: change.version.clone(),
            proposed_by: change.proposed_by.clone(),
            loosening: change.loosening,
            reason: reason.map(|r| salt.text(r)),
        };
        let activating = (answer == ChangeStatus::Approved).then(|| Activating {
            version,
            how: Activation::Approved,
            proposed_by: change.proposed_by.clone(),
            approved_by: Some(who.name().to_owned()),
            reason: Some(change.reason.clone()),
            change_id: Some(change.id),
        });
        let (id, by, actor) = (change.id, who.name().to_owned(), Actor::of(who));
        let reason = reason.map(str::to_owned);
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let settled =
                        policies::settle(tx.conn(), id, answer, &by, now, reason.as_deref())
                            .await?;
                    if !settled {
                        return Ok::<_, ServiceError>(false);
                    }
                    tx.record(now, &actor, AuditEvent::PolicyAnswered(answered));
                    if let Some(a) = &activating {
                        activate_in(tx, a, &actor, now, None).await?;
                    }
                    Ok(true)
                })
            })
            .await
    }

    /// Break-glass: an operator at the shell activates stored version `version` alone, with a
    /// reason; marked on the trail as such.
    pub async fn activate_policy(
        &self,
        who: &Principal,
        version: &str,
        reason: &str,
    ) -> Result<ActivationRecord, PolicyChangeError> {
        self.authorize(who, UseCase::ActivatePolicy)?;
        let reason = check_reason(reason)?;
        let stored = policies::version(self.read().await?.conn(), version)
            .await?
            .ok_or_else(|| refused("no_such_version", format!("no stored version {version}")))?;
        self.stored_policy(&stored)?;
        let digest = self.store().salt().text(&reason);
        let a = Activating {
            version: stored,
            how: Activation::BreakGlass,
            proposed_by: who.name().to_owned(),
            approved_by: None,
            reason: Some(reason),
            change_id: None,
        };
        let (now, actor) = (self.now(), Actor::of(who));
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    activate_in(tx, &a, &actor, now, Some(digest)).await?;
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        tracing::warn!(policy = %version, "policy activated by break-glass at the shell");
        self.follow_policy().await?;
        let history = policies::history(self.read().await?.conn(), 1).await?;
        history
            .into_iter()
            .next()
            .ok_or_else(|| ServiceError::NotFound.into())
    }

    /// The backtest of `text` against the decisions recorded since `since`.
    pub async fn backtest_policy(
        &self,
        who: &Principal,
        text: &str,
        since: OffsetDateTime,
    ) -> Result<Report, PolicyChangeError> {
        self.authorize(who, UseCase::ProposePolicy)?;
        let candidate = parse_candidate(text)?;
        Ok(self.replay_since(&candidate, since).await?)
    }
}
