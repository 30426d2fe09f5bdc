//! What a candidate policy would have decided differently: recorded decisions replayed under
//! it ([`Backtest`]), and the one comparison ([`compare`]) a shadow run makes of each new
//! decision too.
//!
//! A proposal replays from its stored request (the validated contract); a pre-tool-check from
//! the routing inputs its decision recorded ([`CheckInputs`]: fields, flags, trust tiers and
//! scan findings, never free text). What cannot be replayed is counted as such, never guessed:
//! an erased proposal (its personal data is gone), and a check recorded before its inputs were
//! kept. A decision routes *differently* when its route changes; the report groups differences
//! by route change, tool and agent, with a few examples of each.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::Route;
use crate::domain::contract::wire::wire_enum;
use crate::domain::policy::model::Policy;
use crate::domain::routing::gate::{self, CheckInputs};
use crate::domain::routing::proposal::route_proposal;

/// Examples kept of each route change, per tool and agent.
pub const EXAMPLES: usize = 3;

wire_enum! {
    /// Which kind of decision.
    pub enum DecisionKind {
        /// A tool proposal.
        Proposal => "proposal",
        /// An AANA pre-tool-check.
        PreToolCheck => "pre_tool_check",
    }
}

/// A decision's route, its deciding rule and its blockers' codes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The route.
    pub route: Route,
    /// The deciding rule.
    pub rule: String,
    /// Blocker codes, in order.
    pub blockers: Vec<String>,
}

impl Outcome {
    /// What the policy decided of a proposal, as routed: a proposal accepted under a standing
    /// grant was `ask` under the policy (the grant, not the policy, accepted it).
    pub fn of_proposal(route: Route, rule: &str, blockers: Vec<String>) -> Self {
        let route = if rule.starts_with("grant:") {
            Route::Ask
        } else {
            route
        };
        Outcome {
            route,
            rule: rule.to_owned(),
            blockers,
        }
    }
}

/// What replays a recorded decision, or why nothing can.
#[derive(Debug, Clone)]
pub enum Replay {
    /// A proposal's stored request.
    Proposal(Box<ToolProposal>),
    /// A pre-tool-check's recorded routing inputs.
    Check(Box<CheckInputs>),
    /// The proposal's personal data was erased.
    Erased,
    /// Recorded before its routing inputs were kept.
    Unrecorded,
}

/// One recorded decision.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Proposal or pre-tool-check.
    pub kind: DecisionKind,
    /// The proposal's id, or the check's audit seq.
    pub subject: String,
    /// When it was decided.
    pub at: OffsetDateTime,
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// What the policy in force decided.
    pub was: Outcome,
    /// What replays it.
    pub replay: Replay,
}

/// One decision the candidate routes differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// Proposal or pre-tool-check.
    pub kind: DecisionKind,
    /// The proposal's id, or the check's audit seq.
    pub subject: String,
    /// When it was decided.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Under the version in force.
    pub was: Outcome,
    /// Under the candidate.
    pub now: Outcome,
}

/// Every difference from one route to another, for one tool and agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// Proposal or pre-tool-check.
    pub kind: DecisionKind,
    /// Route under the version in force.
    pub from: Route,
    /// Route under the candidate.
    pub to: Route,
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// How many decisions.
    pub count: u64,
    /// The first few ([`EXAMPLES`]).
    pub examples: Vec<Difference>,
}

/// What a backtest found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The candidate's version.
    pub candidate: String,
    /// Decisions considered.
    pub considered: u64,
    /// Decisions replayed.
    pub replayed: u64,
    /// Replayed decisions the candidate routes differently.
    pub changed: u64,
    /// Erased proposals (not replayable).
    pub erased: u64,
    /// Checks recorded without their routing inputs (not replayable).
    pub unrecorded: u64,
    /// The differences, most frequent first.
    pub transitions: Vec<Transition>,
}

impl Report {
    /// Whether any decision would now be `accept` and was not: the candidate loosens.
    pub fn loosens(&self) -> bool {
        self.transitions.iter().any(|t| t.to == Route::Accept)
    }

    /// Differences by route change alone (`ask → accept`: 12), most frequent first.
    pub fn by_route(&self) -> Vec<(Route, Route, u64)> {
        let mut counts: HashMap<(Route, Route), u64> = HashMap::new();
        for t in &self.transitions {
            *counts.entry((t.from, t.to)).or_default() += t.count;
        }
        let mut rows: Vec<_> = counts.into_iter().map(|((f, t), n)| (f, t, n)).collect();
        rows.sort_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        rows
    }
}

/// What `candidate` decides of a replayable decision; `None` when nothing can replay it.
pub fn replay(replay: &Replay, candidate: &Policy) -> Option<Outcome> {
    match replay {
        Replay::Proposal(p) => {
            let d = route_proposal(&p.facts(), candidate);
            Some(Outcome {
                route: d.route,
                rule: d.rule,
                blockers: d.blockers.iter().map(|b| b.code.to_string()).collect(),
            })
        }
        Replay::Check(inputs) => {
            let d = gate::replay(inputs, candidate);
            Some(Outcome {
                route: d.route,
                rule: d.rule,
                blockers: d.blockers.iter().map(ToString::to_string).collect(),
            })
        }
        Replay::Erased | Replay::Unrecorded => None,
    }
}

/// The difference `now` makes to `recorded`, when its route changes.
pub fn compare(recorded: &Recorded, now: Outcome) -> Option<Difference> {
    (now.route != recorded.was.route).then(|| Difference {
        kind: recorded.kind,
        subject: recorded.subject.clone(),
        at: recorded.at,
        was: recorded.was.clone(),
        now,
    })
}

type Key = (DecisionKind, Route, Route, String, String);

/// A backtest in progress: add each recorded decision, then [`Backtest::finish`].
pub struct Backtest<'p> {
    candidate: &'p Policy,
    report: Report,
    transitions: HashMap<Key, Transition>,
}

impl<'p> Backtest<'p> {
    /// A backtest of `candidate`.
    pub fn new(candidate: &'p Policy) -> Self {
        Self {
            candidate,
            report: Report {
                candidate: candidate.version().to_owned(),
                ..Report::default()
            },
            transitions: HashMap::new(),
        }
    }

    /// Counts a recorded decision whose record does not read as not replayable.
    pub fn unreadable(&mut self) {
        self.report.considered += 1;
        self.report.unrecorded += 1;
    }

    /// Replays one recorded decision.
    pub fn add(&mut self, recorded: Recorded) {
        self.report.considered += 1;
        let Some(now) = replay(&recorded.replay, self.candidate) else {
            match recorded.replay {
                Replay::Erased => self.report.erased += 1,
                _ => self.report.unrecorded += 1,
            }
            return;
        };
        self.report.replayed += 1;
        if let Some(d) = compare(&recorded, now) {
            self.differs(recorded, d);
        }
    }

    fn differs(&mut self, recorded: Recorded, d: Difference) {
        self.report.changed += 1;
        let key = (
            d.kind,
            d.was.route,
            d.now.route,
            recorded.tool,
            recorded.agent,
        );
        let t = self
            .transitions
            .entry(key)
            .or_insert_with_key(|k| Transition {
                kind: k.0,
                from: k.1,
                to: k.2,
                tool: k.3.clone(),
                agent: k.4.clone(),
                count: 0,
                examples: Vec::new(),
            });
        t.count += 1;
        if t.examples.len() < EXAMPLES {
            t.examples.push(d);
        }
    }

    /// The report, differences most frequent first.
    pub fn finish(mut self) -> Report {
        let mut transitions: Vec<Transition> = self.transitions.into_values().collect();
        transitions.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (a.kind, a.from, a.to).cmp(&(b.kind, b.from, b.to)))
                .then_with(|| (&a.tool, &a.agent).cmp(&(&b.tool, &b.agent)))
        });
        self.report.transitions = transitions;
        self.report
    }
}
