//! Backtests: every proposal and pre-tool-check recorded since a time, replayed under a
//! candidate policy ([`crate::domain::policy_change::backtest`]), a page at a time in arrival
//! order. A proposal replays from its stored request; a check from the routing inputs its
//! `pre_tool_check.decided` event recorded. An erased proposal, a check recorded before inputs
//! were kept, and a stored request that no longer reads are counted as not replayable.

use serde::Deserialize;
use time::OffsetDateTime;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::Route;
use crate::domain::contract::vocab::{AuthorizationState, RiskDomain, ToolCategory};
use crate::domain::policy::model::Policy;
use crate::domain::policy_change::backtest::{
    Backtest, DecisionKind, Outcome, Recorded, Replay, Report,
};
use crate::domain::routing::gate::{CheckInputs, RecordedCheck, ReplayEvidence};
use crate::storage::policies::{self, CheckDecisionRow, ProposalDecisionRow};

/// Rows read per page.
const PAGE: i64 = 5_000;

/// What a backtest reads of a proposal's stored routing.
#[derive(Deserialize)]
struct StoredRouting {
    route: Route,
    rule: String,
    #[serde(default)]
    blockers: Vec<StoredBlocker>,
}

#[derive(Deserialize)]
struct StoredBlocker {
    code: String,
}

/// What a backtest reads of a `pre_tool_check.decided` event.
#[derive(Deserialize)]
struct StoredCheck {
    tool: String,
    decision: Route,
    rule: String,
    #[serde(default)]
    blockers: Vec<String>,
    category: ToolCategory,
    authorization_state: AuthorizationState,
    domain: RiskDomain,
    recommended_route: Route,
    #[serde(default)]
    replay: Option<ReplayEvidence>,
}

/// The recorded decision of a proposal row; `None` when its routing does not read (corrupt).
fn proposal(row: ProposalDecisionRow) -> Option<Recorded> {
    let routing: StoredRouting = serde_json::from_str(&row.routing).ok()?;
    let replay = match row.erased_at {
        Some(_) => Replay::Erased,
        None => match serde_json::from_str::<ToolProposal>(&row.contract) {
            Ok(c) => Replay::Proposal(Box::new(c)),
            Err(_) => Replay::Unrecorded,
        },
    };
    Some(Recorded {
        kind: DecisionKind::Proposal,
        subject: row.id.to_string(),
        at: row.created_at,
        tool: row.tool_name,
        agent: row.agent,
        was: Outcome::of_proposal(
            routing.route,
            &routing.rule,
            routing.blockers.into_iter().map(|b| b.code).collect(),
        ),
        replay,
    })
}

/// The recorded decision of a check's event; `None` when its details do not read.
fn check(row: CheckDecisionRow) -> Option<Recorded> {
    let stored: StoredCheck = serde_json::from_str(&row.details).ok()?;
    let replay = match &stored.replay {
        Some(evidence) => {
            let recorded = RecordedCheck {
                tool_name: &stored.tool,
                tool_category: stored.category,
                authorization_state: stored.authorization_state,
                risk_domain: stored.domain,
                recommended_route: stored.recommended_route,
                agent: &row.actor,
            };
            Replay::Check(Box::new(CheckInputs::from_record(&recorded, evidence)))
        }
        None => Replay::Unrecorded,
    };
    Some(Recorded {
        kind: DecisionKind::PreToolCheck,
        subject: row.seq.to_string(),
        at: row.at,
        tool: stored.tool,
        agent: row.actor,
        was: Outcome {
            route: stored.decision,
            rule: stored.rule,
            blockers: stored.blockers,
        },
        replay,
    })
}

impl Services {
    /// Replays every decision recorded since `since` under `candidate` (the caller checked who
    /// asks).
    pub(super) async fn replay_since(
        &self,
        candidate: &Policy,
        since: OffsetDateTime,
    ) -> Result<Report, ServiceError> {
        let mut backtest = Backtest::new(candidate);
        let mut conn = self.read().await?;
        let mut after = 0;
        loop {
            let rows = policies::proposals_page(conn.conn(), since, after, PAGE).await?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            after = last;
            for row in rows {
                match proposal(row) {
                    Some(r) => backtest.add(r),
                    None => backtest.unreadable(),
                }
            }
        }
        let mut after = 0;
        loop {
            let rows = policies::checks_page(conn.conn(), since, after, PAGE).await?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            after = last;
            for row in rows {
                match check(row) {
                    Some(r) => backtest.add(r),
                    None => backtest.unreadable(),
                }
            }
        }
        Ok(backtest.finish())
    }
}
