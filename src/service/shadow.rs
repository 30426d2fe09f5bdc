//! Shadow runs: while a candidate runs in shadow, every new decision is also routed under it,
//! off the request's path. The decision hands its record to a bounded channel
//! ([`Services::shadow_decision`]: one atomic load when nothing is in shadow, a `try_send`
//! when something is) and answers; one worker per instance routes what it receives under each
//! candidate and stores, a batch per write, how many it routed, the differences counted by
//! route change, tool and agent, and a few examples of each. When the channel is
//! full the decision is not shadowed (counted in the log), never delayed.
//!
//! Which candidates run is stored (`policy_changes.shadow_until`); each instance reloads the
//! list whenever it follows the policy ([`Services::follow_policy`], at least once a second).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;
use uuid::Uuid;

use super::error::ServiceError;
use super::policy::{PolicyChangeError, parse_candidate};
use super::policy_cell::Candidate;
use super::services::Services;
use crate::audit::PolicyShadowed;
use crate::audit::{Actor, AuditEvent};
use crate::domain::access::UseCase;
use crate::domain::policy::model::Policy;
use crate::domain::policy_change::ChangeStatus;
use crate::domain::policy_change::backtest::{Recorded, compare, replay};
use crate::domain::principal::Principal;
use crate::storage::conn::Conn;
use crate::storage::policies::{self, ShadowDifference, ShadowTransition};

/// Decisions waiting to be shadowed, at most.
const BACKLOG: usize = 8_192;

/// Decisions shadowed per write, at most.
const BATCH: usize = 512;

/// Longest shadow run.
pub const MAX_SHADOW: time::Duration = time::Duration::days(30);

impl Services {
    /// Reloads the candidates in a shadow run (`conn`: a read connection, taken while holding
    /// `self.policy.following`).
    pub(super) async fn follow_shadows(&self, mut conn: Conn<'_>) -> Result<(), ServiceError> {
        let running = policies::shadowing(conn.reborrow(), self.now()).await?;
        let current = self.shadow.candidates.load_full();
        let unchanged = running.len() == current.len()
            && running
                .iter()
                .zip(current.iter())
                .all(|(r, c)| r.0 == c.change_id);
        if unchanged {
            return Ok(());
        }
        let mut next = Vec::with_capacity(running.len());
        for (change_id, version) in running {
            if let Some(c) = current.iter().find(|c| c.change_id == change_id) {
                next.push(Arc::clone(c));
                continue;
            }
            let Some(stored) = policies::version(conn.reborrow(), &version).await? else {
                continue;
            };
            let policy = match stored.source.as_str() {
                "builtin" => Policy::builtin(),
                _ => match parse_candidate(&stored.text) {
                    Ok(p) => p,
                    Err(_) => continue,
                },
            };
            next.push(Arc::new(Candidate {
                change_id,
                version,
                policy: Arc::new(policy),
            }));
        }
        self.shadow.candidates.store(Arc::new(next));
        Ok(())
    }

    /// Whether some candidate runs in shadow here.
    pub(super) fn shadowing(&self) -> bool {
        !self.shadow.candidates.load().is_empty()
    }

    /// Hands a decision just made to the shadow runs, when there are any; never waits.
    pub(super) fn shadow_decision(&self, recorded: impl FnOnce() -> Option<Recorded>) {
        if !self.shadowing() {
            return;
        }
        let sender = self.shadow.sender.get_or_init(|| {
            let (tx, rx) = mpsc::channel(BACKLOG);
            tokio::spawn(shadow_worker(self.clone(), rx));
            tx
        });
        let Some(recorded) = recorded() else {
            return;
        };
        if sender.try_send(recorded).is_ok() {
            self.shadow.sent.fetch_add(1, Ordering::AcqRel);
        } else {
            let n = self.shadow.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "shadow runs fell behind; decisions not shadowed"
                );
            }
        }
    }

    /// Runs pending request `id`'s version in shadow for `for_` (or stops it, with `None`).
    pub async fn shadow_policy(
        &self,
        who: &Principal,
        id: Uuid,
        for_: Option<time::Duration>,
    ) -> Result<(), PolicyChangeError> {
        self.authorize(who, UseCase::ProposePolicy)?;
        let change = policies::change(self.read().await?.conn(), id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        if change.status != ChangeStatus::Pending {
            return Err(PolicyChangeError::Refused {
                code: "not_pending",
                message: format!("this change is {}", change.status),
            });
        }
        let now = self.now();
        let until = for_.map(|d| now + d.clamp(time::Duration::ZERO, MAX_SHADOW));
        let event = PolicyShadowed {
            change_id: id,
            policy_version: change.version,
            until: until.and_then(|u| {
                u.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }),
        };
        let actor = Actor::of(who);
        let set = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let set = policies::set_shadow(tx.conn(), id, until).await?;
                    if set {
                        tx.record(now, &actor, AuditEvent::PolicyShadowed(event));
                    }
                    Ok::<_, ServiceError>(set)
                })
            })
            .await?;
        if !set {
            return Err(PolicyChangeError::Refused {
                code: "not_pending",
                message: "this change is no longer pending".into(),
            });
        }
        // Under the followers' lock, so a follower that read before this commit cannot store
        // its older list over this one.
        let _following = self.policy.following.lock().await;
        self.follow_shadows(self.read().await?.conn()).await?;
        Ok(())
    }
}

impl Services {
    /// Waits until every decision handed to the shadow runs so far is routed and stored (for
    /// tests and benchmarks: the answer to an agent never waits for this).
    pub async fn shadow_settled(&self) {
        let sent = self.shadow.sent.load(Ordering::Acquire);
        let mut done = self.shadow.done.subscribe();
        // The worker lives as long as this instance; its sender is never dropped.
        let _ = done.wait_for(|&n| n >= sent).await;
    }
}

/// Examples of each route change (per tool and agent) a worker keeps, per candidate.
const EXAMPLES: usize = 5;

/// What one batch made of one candidate's run: the counts to add, the examples to keep.
type Seen = (Vec<ShadowTransition>, Vec<ShadowDifference>);

/// Routes what it receives under every candidate, a batch at a time, and stores what it saw:
/// the counts always, a few examples of each route change.
async fn shadow_worker(services: Services, mut rx: mpsc::Receiver<Recorded>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut kept: HashMap<(Uuid, Key), usize> = HashMap::new();
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let candidates = services.shadow.candidates.load_full();
        for c in candidates.iter() {
            let (transitions, examples) = differences(c, &batch, &mut kept);
            let shadowed = i64::try_from(batch.len()).unwrap_or(i64::MAX);
            let id = c.change_id;
            let stored = services
                .store()
                .write(move |tx| {
                    Box::pin(async move {
                        policies::record_shadow(tx.conn(), id, shadowed, &transitions, &examples)
                            .await?;
                        Ok::<_, ServiceError>(())
                    })
                })
                .await;
            if let Err(e) = stored {
                tracing::error!(error = %e, version = %c.version, "storing a shadow run's results failed");
            }
        }
        let n = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        services.shadow.done.send_modify(|d| *d += n);
        batch.clear();
    }
}

/// A route change for one tool and agent: kind, from, to, tool, agent.
type Key = (&'static str, &'static str, &'static str, String, String);

/// The differences `c` makes to `batch`: counted by route change, tool and agent, with up to
/// [`EXAMPLES`] of each kept (`kept` remembers how many this worker kept already).
fn differences(c: &Candidate, batch: &[Recorded], kept: &mut HashMap<(Uuid, Key), usize>) -> Seen {
    let json = |b: &[String]| serde_json::to_string(b).unwrap_or_else(|_| "[]".into());
    let mut counts: HashMap<Key, i64> = HashMap::new();
    let mut examples = Vec::new();
    for r in batch {
        let Some(d) = replay(&r.replay, &c.policy).and_then(|now| compare(r, now)) else {
            continue;
        };
        let key: Key = (
            r.kind.as_str(),
            d.was.route.as_str(),
            d.now.route.as_str(),
            r.tool.clone(),
            r.agent.clone(),
        );
        *counts.entry(key.clone()).or_default() += 1;
        let n = kept.entry((c.change_id, key)).or_default();
        if *n >= EXAMPLES {
            continue;
        }
        *n += 1;
        examples.push(ShadowDifference {
            change_id: c.change_id,
            at: r.at,
            kind: r.kind.as_str().to_owned(),
            subject: r.subject.clone(),
            tool: r.tool.clone(),
            agent: r.agent.clone(),
            from_route: d.was.route.as_str().to_owned(),
            from_rule: d.was.rule.clone(),
            to_route: d.now.route.as_str().to_owned(),
            to_rule: d.now.rule.clone(),
            from_blockers: json(&d.was.blockers),
            to_blockers: json(&d.now.blockers),
        });
    }
    let transitions = counts
        .into_iter()
        .map(|((kind, from, to, tool, agent), count)| ShadowTransition {
            kind: kind.to_owned(),
            from_route: from.to_owned(),
            to_route: to.to_owned(),
            tool,
            agent,
            count,
        })
        .collect();
    (transitions, examples)
}
