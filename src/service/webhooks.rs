//! Delivering agents' webhooks. A status change queues its deliveries in its own transaction
//! (`storage::webhooks::queue_status_changes`, at commit); this dispatcher takes the due ones,
//! POSTs each signed (`Countersign-Signature`, see [`crate::domain::webhook`]) and records the
//! attempt: delivered on any 2xx, otherwise tried again with backoff until it is given up.
//!
//! The dispatcher never follows redirects, ignores proxy settings from the environment, and
//! checks every address a callback's host resolves to against the operator's
//! [`TargetPolicy`] at each attempt, so a name that comes to resolve to a private address is
//! refused then. An unreachable receiver costs only its own deliveries: a decision never
//! waits for a webhook.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use time::OffsetDateTime;
use uuid::Uuid;

use super::error::{AccountError, ServiceError};
use super::services::Services;
use super::webhook_client::{WebhookSettings, describe};
use crate::audit::{Actor, AuditEvent, WebhookSecretRotated};
use crate::auth::token::{self, Secret};
use crate::domain::webhook::{
    self, AfterAttempt, DELIVERY_HEADER, Retries, SIGNATURE_HEADER, check_url,
};
use crate::storage::webhooks::{self, Attempt, AttemptListing, DeliveryListing, DueDelivery};

/// Deliveries taken per round.
const ROUND: usize = 64;
/// Attempts in flight at once.
const IN_FLIGHT: usize = 16;

/// A delivery with its secret, ready to send.
struct Ready {
    due: DueDelivery,
    secret: Option<webhooks::Signers>,
}

/// An attempt with what follows from it: the delivery's new state, its next try, the error.
struct Settled {
    outcome: Outcome,
    state: &'static str,
    after: AfterAttempt,
    error: Option<String>,
}

impl Outcome {
    /// Delivered on a 2xx; else tried again after its backoff, or given up (too old, or
    /// never worth another try).
    fn settle(self, retries: Retries) -> Settled {
        let (status, at) = (self.status, self.at);
        let after = AfterAttempt::of(
            retries,
            status,
            self.permanent,
            self.attempt,
            self.created_at,
            at,
        );
        let state = match after {
            AfterAttempt::Delivered => "delivered",
            AfterAttempt::Retry(_) => "pending",
            AfterAttempt::GiveUp => "failed",
        };
        Settled {
            error: after.error(self.error.as_deref(), status),
            outcome: self,
            state,
            after,
        }
    }
}

/// What one attempt came to, before it is recorded.
struct Outcome {
    delivery: Uuid,
    attempt: i32,
    created_at: OffsetDateTime,
    at: OffsetDateTime,
    status: Option<u16>,
    error: Option<String>,
    took_ms: i64,
    /// Never worth trying again (the token lost its webhook, the URL is no longer allowed).
    permanent: bool,
}

impl Services {
    /// The webhook settings in force.
    pub fn webhook_settings(&self) -> WebhookSettings {
        self.webhooks.settings
    }

    /// The outgoing HTTP client (no redirects, no proxies, targets checked at resolution),
    /// shared by agents' webhooks and reviewers' notifications.
    pub(super) fn webhook_client(&self) -> &reqwest::Client {
        &self.webhooks.client
    }

    /// Delivers every webhook due now, one attempt each, [`ROUND`] at a time; how many were
    /// attempted. The dispatcher task calls it when a commit queued deliveries and every
    /// second; tests call it to step deliveries.
    pub async fn deliver_webhooks(&self) -> Result<usize, ServiceError> {
        let mut total = 0;
        loop {
            if !webhooks::any_due(self.read().await?.conn(), self.now()).await? {
                return Ok(total);
            }
            let ready = self.claim_webhooks().await?;
            let n = ready.len();
            if n == 0 {
                return Ok(total);
            }
            let outcomes: Vec<Outcome> = futures_util::stream::iter(ready)
                .map(|r| self.attempt(r))
                .buffer_unordered(IN_FLIGHT)
                .collect()
                .await;
            self.record_attempts(outcomes).await?;
            total += n;
            if n < ROUND {
                return Ok(total);
            }
        }
    }

    /// Takes the due deliveries, each held past its attempt's time limit, with their secrets.
    async fn claim_webhooks(&self) -> Result<Vec<Ready>, ServiceError> {
        let now = self.now();
        let hold = self.webhooks.settings.timeout + Duration::from_secs(30);
        let hold_until = now + hold;
        let claimed = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let due = webhooks::claim_due(tx.conn(), now, hold_until, ROUND as i64).await?;
                    let mut secrets: HashMap<Uuid, Option<webhooks::Signers>> = HashMap::new();
                    let mut ready = Vec::with_capacity(due.len());
                    for d in due {
                        let secret = match secrets.entry(d.token_id) {
                            Entry::Occupied(known) => known.get().clone(),
                            Entry::Vacant(slot) => slot
                                .insert(webhooks::secret_of(tx.conn(), d.token_id).await?)
                                .clone(),
                        };
                        ready.push(Ready { due: d, secret });
                    }
                    Ok::<_, ServiceError>(ready)
                })
            })
            .await?;
        Ok(claimed)
    }

    /// One attempt: signs and POSTs the body, and says what came of it.
    async fn attempt(&self, ready: Ready) -> Outcome {
        let Ready { due, secret } = ready;
        let at = self.now();
        let mut outcome = Outcome {
            delivery: due.id,
            attempt: due.attempts,
            created_at: due.created_at,
            at,
            status: None,
            error: None,
            took_ms: 0,
            permanent: false,
        };
        let Some(secret) = secret else {
            outcome.error = Some("the token was revoked or has no webhook".into());
            outcome.permanent = true;
            return outcome;
        };
        let url = match check_url(&due.url, self.webhooks.settings.targets) {
            Ok(url) => url,
            Err(why) => {
                outcome.error = Some(format!("the URL {why}"));
                outcome.permanent = true;
                return outcome;
            }
        };
        let started = Instant::now();
        let sent = self
            .webhooks
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, {
                let signers = webhook::signing_secrets(
                    &secret.current,
                    secret.previous.as_deref(),
                    secret.previous_until,
                    at,
                );
                webhook::signature_by(&signers, at.unix_timestamp(), &due.body)
            })
            .header(DELIVERY_HEADER, due.id.to_string())
            .body(due.body)
            .send()
            .await;
        outcome.took_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match sent {
            Ok(answer) => outcome.status = Some(answer.status().as_u16()),
            Err(e) => outcome.error = Some(describe(&e.without_url())),
        }
        outcome
    }

    /// Records a round's attempts, moving each delivery on.
    async fn record_attempts(&self, outcomes: Vec<Outcome>) -> Result<(), ServiceError> {
        let retries = self.webhooks.settings.retries;
        let settled: Vec<Settled> = outcomes.into_iter().map(|o| o.settle(retries)).collect();
        let results: Vec<&'static str> = settled.iter().map(|s| s.after.result()).collect();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    for s in &settled {
                        let o = &s.outcome;
                        let attempt = Attempt {
                            delivery: o.delivery,
                            attempt: o.attempt,
                            at: o.at,
                            status: o.status.map(i32::from),
                            error: s.error.as_deref(),
                            took_ms: o.took_ms,
                            state: s.state,
                            next_attempt_at: s.after.next(),
                        };
                        webhooks::record_attempt(tx.conn(), &attempt).await?;
                    }
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        for result in &results {
            self.metrics().webhook_attempt(result);
        }
        self.store().changes().attempts_recorded(results.len());
        Ok(())
    }

    /// The newest webhook deliveries with their attempts, for admins.
    pub async fn webhook_deliveries(
        &self,
        who: &Principal,
        limit: i64,
    ) -> Result<Vec<(DeliveryListing, Vec<AttemptListing>)>, ServiceError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let mut read = self.read().await?;
        let deliveries = webhooks::recent(read.conn(), limit).await?;
        let ids: Vec<Uuid> = deliveries.iter().map(|d| d.id).collect();
        let mut attempts: HashMap<Uuid, Vec<AttemptListing>> = HashMap::new();
        for a in webhooks::attempts_of(read.conn(), &ids).await? {
            attempts.entry(a.delivery_id).or_default().push(a);
        }
        Ok(deliveries
            .into_iter()
            .map(|d| {
                let tried = attempts.remove(&d.id).unwrap_or_default();
                (d, tried)
            })
            .collect())
    }
}

/// Which agent tokens' signing secrets to rotate.
#[derive(Debug, Clone)]
pub enum RotateWhich {
    /// One token, by id (the admin page).
    Token(Uuid),
    /// Every active token of this agent that has a callback (the CLI).
    Agent(String),
}

impl RotateWhich {
    /// What none was found of, for the error.
    fn missing(&self) -> String {
        match self {
            RotateWhich::Token(id) => format!("agent token {id} with a webhook"),
            RotateWhich::Agent(name) => format!("agent token of `{name}` with a webhook"),
        }
    }
}

/// A rotated signing secret, to show once.
pub struct RotatedSecret {
    /// The token.
    pub token_id: Uuid,
    /// Its agent.
    pub agent: String,
    /// The new secret.
    pub secret: Secret,
    /// Until when the replaced secret signs too (`None`: it stopped at once).
    pub previous_until: Option<OffsetDateTime>,
}

impl Services {
    /// Gives the chosen agent tokens' callbacks new signing secrets, each replaced one signing
    /// too for `overlap` (at most [`webhook::MAX_OVERLAP`]; zero stops it at once and forgets
    /// it), audited without either secret. Returns the new secrets, to show once.
    ///
    /// While an earlier rotation's overlap still runs, a rotation with an overlap is refused
    /// (nothing written): it would silently drop the secret receivers may still use. A zero
    /// overlap is always allowed, and stops every older secret at once (after a leak).
    pub async fn rotate_webhook_secrets(
        &self,
        who: &Principal,
        which: RotateWhich,
        overlap: time::Duration,
    ) -> Result<Vec<RotatedSecret>, AccountError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let actor = &Actor::of(who);
        if overlap.is_negative() || overlap > webhook::MAX_OVERLAP {
            return Err(AccountError::Invalid(format!(
                "the overlap must be between 0 and {} days",
                webhook::MAX_OVERLAP.whole_days()
            )));
        }
        let (now, actor, chosen) = (self.now(), actor.clone(), which.clone());
        let until = (!overlap.is_zero()).then_some(now + overlap);
        let rotated = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let ids = match &chosen {
                        RotateWhich::Token(id) => vec![*id],
                        RotateWhich::Agent(name) => {
                            webhooks::webhook_tokens_of(tx.conn(), name).await?
                        }
                    };
                    let mut rotated = Vec::with_capacity(ids.len());
                    for token_id in ids {
                        let Some(signers) = webhooks::secret_of(tx.conn(), token_id).await? else {
                            continue;
                        };
                        if let (Some(_), Some(running)) = (until, signers.previous_until)
                            && running > now
                        {
                            return Ok(Err(running));
                        }
                        let secret = token::new_webhook_secret();
                        let kept = until.map(|t| (signers.current.as_str(), t));
                        let rotation = webhooks::Rotation {
                            id: token_id,
                            secret: secret.expose(),
                            previous: kept,
                        };
                        let Some(agent) = webhooks::rotate_secret(tx.conn(), &rotation).await?
                        else {
                            continue;
                        };
                        let event = WebhookSecretRotated {
                            token_id,
                            name: agent.clone(),
                            previous_until: until.map(rfc3339),
                        };
                        tx.record(now, &actor, AuditEvent::WebhookSecretRotated(event));
                        rotated.push(RotatedSecret {
                            token_id,
                            agent,
                            secret,
                            previous_until: until,
                        });
                    }
                    Ok::<_, ServiceError>(Ok(rotated))
                })
            })
            .await?;
        match rotated {
            Err(running) => Err(AccountError::Invalid(format!(
                "an earlier rotation's old secret signs until {}: rotate again then, or now with \
                 no overlap (it stops every old secret at once)",
                rfc3339(running)
            ))),
            Ok(rotated) if rotated.is_empty() => Err(AccountError::Missing(which.missing())),
            Ok(rotated) => Ok(rotated),
        }
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
