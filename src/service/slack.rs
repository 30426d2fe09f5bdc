//! Deciding from Slack: a reviewer presses Approve or Reject on a notification in Slack and
//! Slack POSTs it to `/integrations/slack/actions`. The request must be Slack's (its `v0`
//! signature, fresh, never seen before: else `401` and nothing changes); the Slack user must be
//! mapped to a Countersign person (`user add --slack-id`); and every rule of the web page
//! applies, because the decision goes through [`Services::decide`] (role, domains, no
//! self-approval, quorum). High-risk and wide-reaching proposals are decided on the page only.
//! Every refusal is audited.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use uuid::Uuid;

use super::error::{AccountError, ServiceError};
use super::services::Services;
use crate::audit::{AccessDenied, Actor, AuditEvent};
use crate::domain::lifecycle::ReviewVerdict;
use crate::domain::slack::{self, Pressed, SignatureError};
use crate::storage::slack as store;

/// Where Slack's requests are audited as coming to.
const PAGE: &str = "/integrations/slack/actions";

/// A Slack user id as given (trimmed), if it looks like one: letters and digits, 1-32.
pub(super) fn check_slack_id(slack_id: &str) -> Result<String, AccountError> {
    let id = slack_id.trim();
    if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(AccountError::Invalid(
            "a Slack user id is letters and digits, e.g. U024BE7LH".into(),
        ));
    }
    Ok(id.to_owned())
}

/// What a Slack action came to, said back to the person in Slack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackReply(pub String);

impl Services {
    /// Maps `username` to Slack user `slack_id`.
    pub async fn set_slack_id(
        &self,
        who: &Principal,
        username: &str,
        slack_id: &str,
    ) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let (name, id) = (username.to_owned(), check_slack_id(slack_id)?);
        let mapped = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    Ok::<_, ServiceError>(store::set_slack_id(tx.conn(), &name, Some(&id)).await?)
                })
            })
            .await?;
        mapped
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))
    }

    /// Handles one Slack action request (raw body and its two signing headers). `Err` when the
    /// request is not Slack's, or is stale or replayed: answer `401`, nothing changed.
    pub async fn slack_action(
        &self,
        secret: &str,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<SlackReply, SignatureError> {
        let now = self.now();
        if let Err(e) = slack::verify(secret, timestamp, signature, body, now.unix_timestamp()) {
            self.slack_denied(None).await;
            return Err(e);
        }
        let seen = signature.unwrap_or_default().to_owned();
        let forget = now - time::Duration::seconds(2 * slack::MAX_AGE_SECS);
        let fresh = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    Ok::<_, ServiceError>(
                        store::remember_request(tx.conn(), &seen, now, forget).await?,
                    )
                })
            })
            .await;
        match fresh {
            Ok(true) => {}
            Ok(false) => {
                self.slack_denied(None).await;
                return Err(SignatureError::Stale);
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot remember a Slack request");
                return Ok(SlackReply(
                    "Countersign could not record this; try again.".into(),
                ));
            }
        }
        let payload = url::form_urlencoded::parse(body)
            .find(|(k, _)| k == "payload")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let Some(pressed) = slack::pressed(&payload) else {
            return Ok(SlackReply("Nothing to do.".into()));
        };
        Ok(SlackReply(self.decide_pressed(pressed).await))
    }

    /// A pressed button, under every rule of the web page.
    async fn decide_pressed(&self, pressed: Pressed) -> String {
        let reviewer = match self.read().await {
            Ok(mut read) => store::user_by_slack_id(read.conn(), &pressed.slack_user)
                .await
                .map_err(ServiceError::from),
            Err(e) => Err(e),
        };
        // An account without a role (not granted yet) may do nothing, from Slack neither.
        let found = match reviewer {
            Ok(Some(user)) if !user.disabled => user.role.map(|role| (user, role)),
            Ok(_) => None,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the Slack user's account");
                return "Countersign could not check who you are; try again.".into();
            }
        };
        let Some((user, role)) = found else {
            self.slack_denied(None).await;
            return "Your Slack account is not mapped to a Countersign reviewer.".into();
        };
        let link = format!("Open it in Countersign: /proposals/{}", pressed.proposal_id);
        let Ok(id) = Uuid::parse_str(&pressed.proposal_id) else {
            return "No such proposal.".into();
        };
        let who = match self.person(&user.username, role).await {
            Ok(who) => who,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the Slack user's domains");
                return "Countersign could not check who you are; try again.".into();
            }
        };
        match self.proposal(&who, id).await {
            Ok(Some(p)) => {
                let blast = p.contract.blast_radius.map(|b| b.as_str());
                if !slack::decidable_in_chat(p.contract.risk_level.as_str(), blast) {
                    return format!("This proposal is decided on its page only. {link}");
                }
            }
            Ok(None) => return "No such proposal.".into(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read a proposal for Slack");
                return "Countersign could not read the proposal; try again.".into();
            }
        }
        let verdict = if pressed.approve {
            ReviewVerdict::Approved
        } else {
            ReviewVerdict::Rejected
        };
        match self
            .decide(&who, id, verdict, pressed.reason.as_deref())
            .await
        {
            Ok(super::decide::Decided::Final(p)) => format!("Done: the proposal is {}.", p.status),
            Ok(super::decide::Decided::ApprovalRecorded(_)) => {
                "Your approval is recorded; it needs another approver.".into()
            }
            Err(e) => format!("Refused: {}. {link}", refusal(&e)),
        }
    }

    /// Records a refused Slack request.
    async fn slack_denied(&self, role: Option<crate::domain::principal::Role>) {
        let event = AuditEvent::AccessDenied(AccessDenied { page: PAGE, role });
        if let Err(e) = self.record_security(&Actor::system("slack"), event).await {
            tracing::error!(error = %e, "cannot record a refused Slack request");
        }
    }
}

/// What a refused decision says in Slack (never an internal error's text).
fn refusal(e: &ServiceError) -> String {
    match e {
        ServiceError::Conflict(super::error::Conflict::AlreadyDecided(status)) => {
            format!("it was already decided: it is {status}")
        }
        ServiceError::Conflict(_) => "it changed meanwhile".into(),
        ServiceError::Invalid(errors) => errors
            .iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect::<Vec<_>>()
            .join("; "),
        ServiceError::Storage(_) => "Countersign could not decide it; try again".into(),
        other => other.to_string(),
    }
}
