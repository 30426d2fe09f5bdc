//! The MCP gateway's use cases: pinning the tools its upstreams list (a changed definition is
//! withheld until an admin accepts it) and an upstream's state. A call itself is a proposal
//! like any other ([`Services::submit_with_token`]; the same call made again while one is open
//! gets that one: [`super::submit`]); its command is run by the built-in gateway executor
//! through the executor use cases.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;

use serde_json::Value;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::{
    Actor, AuditEvent, GatewayToolAccepted, GatewayToolChanged, GatewayToolSeen,
    GatewayUpstreamState,
};
use crate::domain::FieldError;
use crate::domain::gateway::{Definition, ToolName, ToolPin};
use crate::storage::Tx;
use crate::storage::gateway::{self, PinnedTool};
use time::OffsetDateTime;

fn definition(json: &str) -> Definition {
    Definition::from_json(serde_json::from_str::<Value>(json).unwrap_or(Value::Null))
}

fn pin_of(row: PinnedTool) -> ToolPin {
    ToolPin {
        pinned: definition(&row.pinned_definition),
        offered: row.offered_definition.as_deref().map(definition),
        called: None,
        name: row.name,
        upstream: row.upstream,
        first_seen_at: row.first_seen_at,
        updated_at: row.updated_at,
    }
}

/// Pins tool `name` of `upstream` listed with `def`, or compares `def` with its pin (offering
/// it when it differs, withdrawing an offer when it no longer does), recording what changed;
/// whether the tool may be served. Every definition seen is kept by its hash.
async fn pin_listed(
    tx: &mut Tx,
    (upstream, actor, now): (&str, &Actor, OffsetDateTime),
    name: &ToolName,
    def: &Definition,
) -> Result<bool, ServiceError> {
    let internal = name.internal();
    let sha = def.sha256();
    let json = def.as_json().to_string();
    gateway::remember(tx.conn(), &sha, &json, now).await?;
    let row = match gateway::by_name(tx.conn(), &internal).await? {
        None if gateway::pin(tx.conn(), &internal, upstream, &sha, &json, now).await? => {
            let seen = GatewayToolSeen {
                tool: internal,
                upstream: upstream.to_owned(),
                definition_sha256: sha,
            };
            tx.record(now, actor, AuditEvent::GatewayToolSeen(seen));
            return Ok(true);
        }
        // Another instance pinned it first (its insert committed while this one waited): its
        // pin holds, as if it had been there.
        None => gateway::by_name(tx.conn(), &internal).await?,
        row => row,
    };
    let Some(row) = row else {
        return Ok(false);
    };
    if row.pinned_sha256 == sha {
        gateway::withdraw_offer(tx.conn(), &internal, now).await?;
        return Ok(true);
    }
    if gateway::offer(tx.conn(), &internal, &sha, &json, now).await? {
        let changed = GatewayToolChanged {
            tool: internal,
            pinned_sha256: row.pinned_sha256,
            offered_sha256: sha,
        };
        tx.record(now, actor, AuditEvent::GatewayToolChanged(changed));
    }
    Ok(false)
}

impl Services {
    /// Records what `upstream` lists now: a tool seen for the first time is pinned
    /// (`gateway.tool_seen`); one whose definition differs from its pin is withheld
    /// (`gateway.tool_changed`, once per new definition); one back at its pin is served again.
    /// Answers the tools that may be served, with their (pinned) definitions.
    pub async fn pin_gateway_tools(
        &self,
        who: &Principal,
        upstream: &str,
        listed: Vec<(ToolName, Definition)>,
    ) -> Result<Vec<(ToolName, Definition)>, ServiceError> {
        self.authorize(who, UseCase::PinGatewayTools)?;
        if let Some(served) = self.settled(&listed).await? {
            return Ok(served);
        }
        let actor = Actor::of(who);
        let upstream = upstream.to_owned();
        let now = self.now();
        self.store()
            .write(move |tx| {
                let (listed, actor, upstream) = (listed.clone(), actor.clone(), upstream.clone());
                Box::pin(async move {
                    let mut served = Vec::new();
                    for (name, def) in listed {
                        if pin_listed(tx, (&upstream, &actor, now), &name, &def).await? {
                            served.push((name, def));
                        }
                    }
                    Ok::<_, ServiceError>(served)
                })
            })
            .await
    }

    /// The tools of `listed` that may be served, when pinning `listed` would change and record
    /// nothing: each tool is at its pin with no changed definition on offer (served), or is
    /// listed with the changed definition already on offer (withheld still). Then listing it
    /// again costs a read instead of a write: an agent's every `tools/list` lists the upstreams
    /// afresh, and every call of a withheld tool looks at its pin again.
    async fn settled(
        &self,
        listed: &[(ToolName, Definition)],
    ) -> Result<Option<Vec<(ToolName, Definition)>>, ServiceError> {
        let mut read = self.read().await?;
        let pins: std::collections::HashMap<String, PinnedTool> = gateway::all(read.conn())
            .await?
            .into_iter()
            .map(|row| (row.name.clone(), row))
            .collect();
        let mut served = Vec::new();
        for (name, def) in listed {
            let Some(row) = pins.get(&name.internal()) else {
                return Ok(None);
            };
            let sha = def.sha256();
            match (row.pinned_sha256 == sha, row.offered_sha256.as_ref()) {
                (true, None) => served.push((name.clone(), def.clone())),
                (false, Some(offered)) if *offered == sha => {}
                _ => return Ok(None),
            }
        }
        Ok(Some(served))
    }

    /// Every tool the gateway has pinned, by name (`/admin/gateway`, `countersign gateway`).
    pub async fn gateway_tools(&self, who: &Principal) -> Result<Vec<ToolPin>, ServiceError> {
        self.authorize(who, UseCase::ManageGateway)?;
        let mut read = self.read().await?;
        let rows = gateway::all(read.conn()).await?;
        Ok(rows.into_iter().map(pin_of).collect())
    }

    /// Pins the changed definition tool `name` (internal) is now served with, in place of the
    /// old one (`gateway.tool_accepted`). Not found without such a tool; refused when no
    /// changed definition is on offer, or when `seen` (the SHA-256 of the definition the admin
    /// looked at) is not the one on offer now.
    pub async fn accept_gateway_tool(
        &self,
        who: &Principal,
        name: &str,
        seen: Option<&str>,
    ) -> Result<ToolPin, ServiceError> {
        self.authorize(who, UseCase::ManageGateway)?;
        let actor = Actor::of(who);
        let name = name.trim().to_owned();
        let seen = seen.map(|s| s.trim().to_owned());
        let now = self.now();
        self.store()
            .write(move |tx| {
                let (actor, name, seen) = (actor.clone(), name.clone(), seen.clone());
                Box::pin(async move {
                    let Some(row) = gateway::by_name(tx.conn(), &name).await? else {
                        return Err(ServiceError::NotFound);
                    };
                    let Some(offered) = row.offered_sha256.clone() else {
                        return Err(ServiceError::Invalid(vec![FieldError::new(
                            "tool",
                            format!("`{name}` has no changed definition to accept"),
                        )]));
                    };
                    // The definition the admin looked at, if they said which: one the upstream
                    // changed again since is not theirs to accept unseen.
                    let hex = |s: &str| s.trim_start_matches("sha256:").to_ascii_lowercase();
                    if seen.as_ref().is_some_and(|seen| hex(seen) != hex(&offered)) {
                        return Err(ServiceError::Invalid(vec![FieldError::new(
                            "sha256",
                            format!(
                                "`{name}` is now offered at {offered}, not the definition \
                                 given; look at it again"
                            ),
                        )]));
                    }
                    gateway::accept(tx.conn(), &name, &offered, now).await?;
                    let accepted = GatewayToolAccepted {
                        tool: name.clone(),
                        previous_sha256: row.pinned_sha256,
                        definition_sha256: offered,
                    };
                    tx.record(now, &actor, AuditEvent::GatewayToolAccepted(accepted));
                    let row = gateway::by_name(tx.conn(), &name).await?;
                    row.map(pin_of).ok_or(ServiceError::NotFound)
                })
            })
            .await
    }

    /// Records that upstream `upstream` went from `before` to `after` (`up`, `down`,
    /// `restarting`).
    pub async fn gateway_upstream_state(
        &self,
        who: &Principal,
        upstream: &str,
        before: &'static str,
        after: &'static str,
    ) -> Result<(), ServiceError> {
        self.authorize(who, UseCase::PinGatewayTools)?;
        let event = AuditEvent::GatewayUpstreamState(GatewayUpstreamState {
            upstream: upstream.to_owned(),
            before,
            after,
        });
        self.store()
            .record(vec![(self.now(), Actor::of(who), event)])
            .await?;
        Ok(())
    }

    /// The pin of gateway tool `name` (internal), if it is one, with the definition a call
    /// made against `version` (its hex hash) read (part of the proposal page's use case, which
    /// authorized the read).
    pub(super) async fn gateway_pin(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<ToolPin>, ServiceError> {
        if !self.is_gateway_tool(name) {
            return Ok(None);
        }
        let mut read = self.read().await?;
        let Some(mut pin) = gateway::by_name(read.conn(), name).await?.map(pin_of) else {
            return Ok(None);
        };
        let called = format!("sha256:{version}");
        pin.called = gateway::definition(read.conn(), &called)
            .await?
            .map(|json| definition(&json));
        Ok(Some(pin))
    }
}
