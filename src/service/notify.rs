//! Reaching reviewers where they are: email, Slack, Microsoft Teams and a generic signed
//! webhook. A status change that needs a person (and an expiry warning, an escalation, a
//! rollback task) queues one notification per configured channel in its own transaction
//! (`storage::notifications::queue`, at commit); email's are expanded per reviewer
//! (`super::reach`). This notifier sends them: per channel, and per reviewer on email, at most
//! one message per window, the first at once and the rest folded into a digest when the
//! window ends ([`crate::domain::notify`]). A failed send is tried again with backoff
//! (the agents' webhook schedule) and recorded; a dead channel never holds up a decision.
//!
//! Messages name the agent, tool, intent summary, risk, route, blockers and time left, and link
//! to the proposal page under `--public-url`; they never carry parameter values. The link only
//! opens the page: deciding takes a signed-in POST there.
//!
//! A policy version activated alone at the shell (break-glass) is told to every admin and
//! compliance officer: the first serving instance to see the activation queues its rows
//! ([`notifications::queue_policy`]), and each goes out on its own, at once.

use std::time::Duration;

use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::access::UseCase;
use crate::domain::notify::policy::PolicyNotice;
use crate::domain::notify::{self, Message, Reason, Subject};
use crate::domain::principal::Principal;
use crate::domain::webhook::{self, AfterAttempt, DELIVERY_HEADER, SIGNATURE_HEADER};
use crate::storage::notifications::{self, Claim, DueNotification, NotificationListing, Settled};
use crate::storage::policies;

/// Break-glass policy notices one channel sends per round at most (each is its own message).
const POLICY_NOTICES_PER_ROUND: usize = 16;

/// What one send carries: proposals (one, or a digest), or a policy activated alone.
enum Outgoing<'a> {
    Proposals(&'a Message),
    Policy(&'a PolicyNotice),
}

impl Outgoing<'_> {
    fn slack(&self, now: time::OffsetDateTime, buttons: bool) -> serde_json::Value {
        match self {
            Outgoing::Proposals(m) => m.slack(now, buttons),
            Outgoing::Policy(n) => n.slack(),
        }
    }

    fn teams(&self, now: time::OffsetDateTime) -> serde_json::Value {
        match self {
            Outgoing::Proposals(m) => m.teams(now),
            Outgoing::Policy(n) => n.teams(),
        }
    }

    fn generic(&self, id: Uuid, now: time::OffsetDateTime) -> serde_json::Value {
        match self {
            Outgoing::Proposals(m) => m.generic(id, now),
            Outgoing::Policy(n) => n.generic(id, now),
        }
    }

    fn email(&self, now: time::OffsetDateTime) -> (String, String) {
        match self {
            Outgoing::Proposals(m) => m.email(now),
            Outgoing::Policy(n) => n.email(),
        }
    }
}

/// Notifications one message carries at most: a digest folds a whole flood (10,000 in its
/// window), and what is beyond waits for the next window.
const PER_MESSAGE: i64 = 10_000;

impl Services {
    /// Sends every channel's due notifications: one message per channel (per reviewer on
    /// email) whose window is open, a digest when several wait; how many messages went out or
    /// were tried.
    pub async fn deliver_notifications(&self) -> Result<usize, ServiceError> {
        self.queue_policy_notices().await?;
        if self.notify.mailer.is_some() {
            self.expand_email().await?;
        }
        let mut sent = 0;
        for channel in self.notify.channels() {
            let recipients = match channel {
                "email" => self.emailed_people().await?,
                _ => vec![String::new()],
            };
            for recipient in recipients {
                if self.send_channel(channel, recipient).await? {
                    sent += 1;
                }
            }
        }
        Ok(sent)
    }

    /// One message on `channel` to `recipient` (`""` on a shared channel), if its window is
    /// open and something is due.
    async fn send_channel(
        &self,
        channel: &'static str,
        recipient: String,
    ) -> Result<bool, ServiceError> {
        let told = self.send_policy_notices(channel, &recipient).await?;
        let now = self.now();
        if self.windows.closed(channel, &recipient, now) {
            return Ok(told);
        }
        let mut read = self.read().await?;
        let last = notifications::last_sent(read.conn(), channel, &recipient).await?;
        drop(read);
        if let Some(opens) = last.map(|at| at + self.notify.window())
            && now < opens
        {
            self.windows.close_until(channel, &recipient, opens);
            return Ok(told);
        }
        let message = Uuid::now_v7();
        let due = self
            .claim(channel, &recipient, message, PER_MESSAGE, false)
            .await?;
        if due.is_empty() {
            return Ok(told);
        }
        let subjects = self.subjects(&due).await?;
        let outcome = match notify::fold(subjects, &self.notify.link("/")) {
            Some(m) if channel == "email" => {
                self.mail(&recipient, message, &Outgoing::Proposals(&m))
                    .await
            }
            Some(m) => self.post(channel, message, &Outgoing::Proposals(&m)).await,
            None => Ok(200),
        };
        if self.settle(channel, message, &due, outcome).await? == "sent" {
            self.windows
                .close_until(channel, &recipient, now + self.notify.window());
        }
        Ok(true)
    }

    /// What each notification is about, from its proposal (gone ones are left out).
    async fn subjects(&self, due: &[DueNotification]) -> Result<Vec<Subject>, ServiceError> {
        let mut subjects = Vec::with_capacity(due.len());
        for d in due {
            let Some(id) = d.proposal_id else {
                continue;
            };
            let Some(p) = self.proposal_row(id).await? else {
                continue;
            };
            let reason = Reason::parse(&d.reason).unwrap_or(Reason::Waiting);
            subjects.push(Subject {
                reason,
                proposal_id: p.id,
                agent: p.agent.clone(),
                tool: p.contract.tool.name.clone(),
                summary: notify::safe_summary(&p.contract.intent.summary),
                risk: p.contract.risk_level.as_str().to_owned(),
                route: p.routing.route.as_str().to_owned(),
                blockers: p
                    .routing
                    .blockers
                    .iter()
                    .map(|b| b.code.as_str().to_owned())
                    .collect(),
                expires_at: p.expires_at,
                blast_radius: p.contract.blast_radius.map(|b| b.as_str().to_owned()),
                url: self.notify.link(&format!("/proposals/{}", p.id)),
                escalated_to: d.audience.clone(),
            });
        }
        Ok(subjects)
    }

    /// Takes up to `limit` of the rows due on `channel` for `recipient` for send `message`
    /// (about policy activations with `policy`, else about proposals).
    async fn claim(
        &self,
        channel: &'static str,
        recipient: &str,
        message: Uuid,
        limit: i64,
        policy: bool,
    ) -> Result<Vec<DueNotification>, ServiceError> {
        let now = self.now();
        let hold_until = now + self.webhook_settings().timeout + Duration::from_secs(30);
        let recipient = recipient.to_owned();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let claim = Claim {
                        channel,
                        recipient: &recipient,
                        message,
                        now,
                        hold_until,
                        limit,
                        policy,
                    };
                    Ok::<_, ServiceError>(notifications::claim_due(tx.conn(), &claim).await?)
                })
            })
            .await
    }

    /// Queues the notifications of every break-glass policy activation not told yet, on this
    /// instance's channels (whichever instance gets there first tells them, once).
    async fn queue_policy_notices(&self) -> Result<(), ServiceError> {
        let channels = self.store().changes().notify_channels().to_vec();
        if channels.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let queued = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let n = notifications::queue_policy(tx.conn(), &channels, now).await?;
                    Ok::<_, ServiceError>(n)
                })
            })
            .await?;
        if queued > 0 {
            tracing::warn!(queued, "break-glass policy activation: every admin is told");
        }
        Ok(())
    }

    /// Sends every break-glass policy notice due on `channel` for `recipient`, each on its
    /// own and whatever the window (they are never held nor folded); whether any was sent.
    async fn send_policy_notices(
        &self,
        channel: &'static str,
        recipient: &str,
    ) -> Result<bool, ServiceError> {
        let mut told = false;
        for _ in 0..POLICY_NOTICES_PER_ROUND {
            let message = Uuid::now_v7();
            let due = self.claim(channel, recipient, message, 1, true).await?;
            let Some(seq) = due.first().and_then(|d| d.policy_activation) else {
                break;
            };
            let notice = self.policy_notice(seq).await?;
            let outcome = match &notice {
                Some(n) if channel == "email" => {
                    self.mail(recipient, message, &Outgoing::Policy(n)).await
                }
                Some(n) => self.post(channel, message, &Outgoing::Policy(n)).await,
                None => Ok(200),
            };
            self.settle(channel, message, &due, outcome).await?;
            told = true;
        }
        Ok(told)
    }

    /// What activation `seq` is, as a notice says it.
    async fn policy_notice(&self, seq: i64) -> Result<Option<PolicyNotice>, ServiceError> {
        let mut read = self.read().await?;
        let Some(a) = policies::activation(read.conn(), seq).await? else {
            return Ok(None);
        };
        Ok(Some(PolicyNotice::new(
            a.seq,
            (a.version, a.previous),
            a.proposed_by,
            a.activated_at,
            a.reason.as_deref().unwrap_or_default(),
            self.notify.link("/policy"),
        )))
    }

    /// POSTs `message` to `channel`; its status code, or why there was none.
    async fn post(&self, channel: &str, id: Uuid, message: &Outgoing<'_>) -> Result<u16, String> {
        let now = self.now();
        let (url, body, secret) = match channel {
            "slack" => {
                let buttons = self.notify.slack_signing_secret.is_some();
                (
                    self.notify.slack.as_ref(),
                    message.slack(now, buttons),
                    None,
                )
            }
            "teams" => (self.notify.teams.as_ref(), message.teams(now), None),
            _ => match &self.notify.webhook {
                Some((url, secret)) => (Some(url), message.generic(id, now), Some(secret)),
                None => (None, message.generic(id, now), None),
            },
        };
        let Some(url) = url else {
            return Err(format!("the {channel} channel is no longer configured"));
        };
        let body = body.to_string();
        let mut request = self
            .webhook_client()
            .post(url.0.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(DELIVERY_HEADER, id.to_string());
        if let Some(secret) = secret {
            let signature = webhook::signature(&secret.0, now.unix_timestamp(), &body);
            request = request.header(SIGNATURE_HEADER, signature);
        }
        match request.body(body).send().await {
            Ok(answer) => Ok(answer.status().as_u16()),
            Err(e) => Err(super::webhook_client::describe(&e.without_url())),
        }
    }

    /// Emails `message` to `username`; `250` (SMTP's "taken") or why not.
    async fn mail(&self, username: &str, id: Uuid, message: &Outgoing<'_>) -> Result<u16, String> {
        let Some(mailer) = &self.notify.mailer else {
            return Err("email is no longer configured".into());
        };
        let address = match self.email_of(username).await {
            Ok(Some(address)) => address,
            Ok(None) => {
                return Err(format!(
                    "`{username}` has no email address, role or enabled account any more"
                ));
            }
            Err(e) => return Err(format!("the address could not be read ({e})")),
        };
        let (subject, body) = message.email(self.now());
        mailer
            .send(&address, &subject, body, id)
            .await
            .map(|()| 250)
    }

    /// Records what became of message `message`: sent, tried again later, or given up (the
    /// state it answers).
    async fn settle(
        &self,
        channel: &str,
        message: Uuid,
        due: &[DueNotification],
        outcome: Result<u16, String>,
    ) -> Result<&'static str, ServiceError> {
        let at = self.now();
        let attempts = due.iter().map(|d| d.attempts).max().unwrap_or(1);
        let oldest = due.iter().map(|d| d.created_at).min().unwrap_or(at);
        let (status, failure) = match outcome {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        };
        let retries = self.webhook_settings().retries;
        let after = AfterAttempt::of(retries, status, false, attempts, oldest, at);
        let state = match after {
            AfterAttempt::Delivered => "sent",
            AfterAttempt::Retry(_) => "pending",
            AfterAttempt::GiveUp => "failed",
        };
        let error = after.error(failure.as_deref(), status);
        let (status, next) = (status.map(i32::from), after.next());
        if after != AfterAttempt::Delivered {
            tracing::warn!(
                channel,
                error = error.as_deref().unwrap_or(""),
                "a notification was not delivered"
            );
        }
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let settled = Settled {
                        message,
                        at,
                        state,
                        next_attempt_at: next,
                        status,
                        error: error.as_deref(),
                    };
                    notifications::settle(tx.conn(), &settled).await?;
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        self.metrics().notification(channel, state);
        self.store().changes().sends_settled(1);
        Ok(state)
    }

    /// The newest reviewers' notifications, for admins.
    pub async fn recent_notifications(
        &self,
        who: &Principal,
        limit: i64,
    ) -> Result<Vec<NotificationListing>, ServiceError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let mut read = self.read().await?;
        Ok(notifications::recent(read.conn(), limit).await?)
    }
}
