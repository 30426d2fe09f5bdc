//! What the compliance pages show: the trail's filters as they travel in the query string, a
//! page of events, the chain's state and last verification, a proposal's timeline and the
//! charts' numbers. Audit-safe by construction: the server sends names, hashes and counts,
//! never a parameter value.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// Every kind of event the trail records, for the kind filter.
pub const EVENT_KINDS: &[&str] = &[
    "proposal.submitted",
    "proposal.rejected_input",
    "proposal.approval_recorded",
    "proposal.approved",
    "proposal.rejected",
    "proposal.decision_refused",
    "proposal.break_glass",
    "proposal.edited",
    "proposal.stepped_up",
    "proposal.expired",
    "proposal.withdrawn",
    "proposal.escalated",
    "proposal.viewed",
    "proposal.personal_data_revealed",
    "proposal.erased",
    "proposal.succeeded",
    "proposal.failed",
    "command.queued",
    "command.leased",
    "command.succeeded",
    "command.failed",
    "pre_tool_check.decided",
    "pre_tool_check.rejected",
    "user.created",
    "user.role_changed",
    "user.domains_changed",
    "user.email_changed",
    "user.disabled",
    "user.enabled",
    "user.password_reset",
    "token.created",
    "token.revoked",
    "token.webhook_secret_rotated",
    "auth.signed_in",
    "auth.sign_in_failed",
    "auth.sign_in_throttled",
    "auth.session_ended",
    "auth.signed_out",
    "auth.csrf_rejected",
    "access.denied",
    "policy.loaded",
    "policy.proposed",
    "policy.approved",
    "policy.refused",
    "policy.approval_refused",
    "policy.shadowed",
    "policy.activated",
    "audit.exported",
    "gateway.tool_seen",
    "gateway.tool_changed",
    "gateway.tool_accepted",
    "gateway.upstream_state",
    "grant.made",
    "grant.used",
    "grant.expired",
    "grant.revoked",
    "passkey.registered",
    "passkey.renamed",
    "passkey.removed",
];

/// The decision facet's values, for its filter.
pub const DECISIONS: &[&str] = &[
    "accept",
    "ask",
    "defer",
    "refuse",
    "approved",
    "rejected",
    "expired",
    "withdrawn",
];

/// The risk facet's values, for its filter.
pub const RISKS: &[&str] = &["low", "medium", "high"];

/// The `/audit` page's filters and cursor, exactly as in its query string (empty means
/// unset). The server parses them; the page only carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditQuery {
    /// From this time on (UTC; `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` or RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Up to and including this time, at the precision given (a day, a minute, a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Event kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Actor name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Agent facet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Tool facet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Domain facet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Decision facet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Risk facet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    /// Events older than this seq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Events newer than this seq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl AuditQuery {
    /// The query from a lookup of query-string parameters.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            from: get("from"),
            to: get("to"),
            kind: get("kind"),
            actor: get("actor"),
            agent: get("agent"),
            tool: get("tool"),
            domain: get("domain"),
            decision: get("decision"),
            risk: get("risk"),
            before: get("before"),
            after: get("after"),
        }
    }

    /// The filters by name, in form order, without the cursor.
    pub fn filters(&self) -> [(&'static str, Option<&str>); 9] {
        [
            ("from", self.from.as_deref()),
            ("to", self.to.as_deref()),
            ("kind", self.kind.as_deref()),
            ("actor", self.actor.as_deref()),
            ("agent", self.agent.as_deref()),
            ("tool", self.tool.as_deref()),
            ("domain", self.domain.as_deref()),
            ("decision", self.decision.as_deref()),
            ("risk", self.risk.as_deref()),
        ]
    }

    /// The value of filter `name`, or "".
    pub fn value(&self, name: &str) -> String {
        self.filters()
            .into_iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v)
            .unwrap_or_default()
            .to_owned()
    }

    /// The filters as a query string (`a=1&b=2`, percent-encoded), plus `extra` pairs.
    pub fn query_string(&self, extra: &[(&str, String)]) -> String {
        self.filters()
            .into_iter()
            .filter_map(|(k, v)| {
                v.filter(|v| !v.trim().is_empty())
                    .map(|v| (k, v.to_owned()))
            })
            .chain(extra.iter().map(|(k, v)| (*k, v.clone())))
            .map(|(k, v)| format!("{k}={}", percent_encode(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// `path`, with the filters and `extra` as its query string.
    pub fn href(&self, path: &str, extra: &[(&str, String)]) -> String {
        let q = self.query_string(extra);
        if q.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{q}")
        }
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// One event as the compliance pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEventView {
    /// Position in the chain.
    pub seq: i64,
    /// When it was recorded.
    pub at: Moment,
    /// `kind:name` of the actor.
    pub actor: String,
    /// Event kind.
    pub kind: String,
    /// `type:id` of the subject.
    pub subject: String,
    /// The proposal timeline it belongs to, for proposals and commands.
    pub timeline: Option<String>,
    /// `before → after`, or "".
    pub change: String,
    /// Facets as `(name, value)`.
    pub facets: Vec<(String, String)>,
    /// The other details, compact: `(key, value)`, values cut short.
    pub details: Vec<(String, String)>,
    /// Hidden characters in the row's actor, subject, facets and details (each shown escaped
    /// as `⟦U+…⟧`: a name typed at the sign-in form, an agent's model name).
    pub hidden: usize,
}

/// A signed checkpoint as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointView {
    /// The head it signs.
    pub seq: i64,
    /// When it was signed; `None` if the signed time could not be read (no time rather than
    /// a wrong one).
    pub at: Option<Moment>,
    /// The signer's Ed25519 public key (hex).
    pub public_key: String,
}

/// The last on-demand verification of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationView {
    /// When it ran, seen from when the page renders.
    pub at: Moment,
    /// Who ran it.
    pub by: String,
    /// Whether the chain held.
    pub ok: bool,
    /// Rows checked (when it held).
    pub count: i64,
    /// The head it reached (when it held).
    pub head_seq: i64,
    /// The head's hash (when it held).
    pub head_hash: String,
    /// The first bad seq (when it did not hold and one is named).
    pub first_bad_seq: Option<i64>,
    /// What it found, in words.
    pub message: String,
}

/// The chain's state: head, latest checkpoint, last verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailStatus {
    /// Head seq.
    pub head_seq: i64,
    /// Head hash.
    pub head_hash: String,
    /// Latest signed checkpoint.
    pub checkpoint: Option<CheckpointView>,
    /// The last verification since the server started.
    pub verification: Option<VerificationView>,
}

/// A page of the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    /// Events, newest first.
    pub events: Vec<AuditEventView>,
    /// `before` of the older page.
    pub older: Option<i64>,
    /// `after` of the newer page.
    pub newer: Option<i64>,
    /// Set when the page stopped looking before it filled: the seq it looked as far as.
    pub searched_to: Option<i64>,
    /// The chain's state.
    pub status: TrailStatus,
}

/// A proposal's audit timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineView {
    /// Proposal id.
    pub id: String,
    /// Proposing agent.
    pub agent: String,
    /// Tool name.
    pub tool: String,
    /// Domain.
    pub domain: String,
    /// Current status.
    pub status: String,
    /// When it arrived.
    pub submitted_at: Moment,
    /// Policy version used (from its `proposal.submitted` event).
    pub policy_version: Option<String>,
    /// Route and rule, from the same event.
    pub routing: Option<String>,
    /// "approved by …", once decided.
    pub decided: Option<String>,
    /// When it was decided.
    pub decided_at: Option<Moment>,
    /// Its command, if one was queued.
    pub command_id: Option<String>,
    /// Events of the proposal and its command, oldest first.
    pub events: Vec<AuditEventView>,
    /// `before` of the earlier page.
    pub earlier: Option<i64>,
    /// `after` of the later page.
    pub later: Option<i64>,
}

/// Time to decision in one domain, in seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyView {
    /// Domain.
    pub domain: String,
    /// Decisions measured.
    pub count: i64,
    /// Median seconds.
    pub p50: i64,
    /// 90th percentile seconds.
    pub p90: i64,
    /// 99th percentile seconds.
    pub p99: i64,
}

/// Approvals and rejections of a tool or a reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TallyView {
    /// Tool or reviewer.
    pub name: String,
    /// Approved.
    pub approved: i64,
    /// Rejected.
    pub rejected: i64,
}

/// The charts' numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartsView {
    /// Days of the window, `YYYY-MM-DD`, oldest first.
    pub days: Vec<String>,
    /// Approved per day.
    pub approved: Vec<i64>,
    /// Rejected per day.
    pub rejected: Vec<i64>,
    /// Expired per day.
    pub expired: Vec<i64>,
    /// Pending at the end of each day.
    pub queue_depth: Vec<i64>,
    /// Time to decision per domain.
    pub latency: Vec<LatencyView>,
    /// Tools by rejections.
    pub tools: Vec<TallyView>,
    /// Reviewers by decisions.
    pub reviewers: Vec<TallyView>,
    /// Whether the decisions read were cut short (very many in the window).
    pub truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_carry_the_filters_encoded_and_skip_empty_ones() {
        let q = AuditQuery {
            tool: Some("crm.update contact".into()),
            kind: Some(String::new()),
            from: Some("2026-11-23T10:00".into()),
            before: Some("99".into()),
            ..AuditQuery::default()
        };
        assert_eq!(
            q.query_string(&[]),
            "from=2026-11-23T10%3A00&tool=crm.update%20contact"
        );
        assert_eq!(
            q.href("/audit", &[("before", "42".into())]),
            "/audit?from=2026-11-23T10%3A00&tool=crm.update%20contact&before=42"
        );
        assert_eq!(AuditQuery::default().href("/audit", &[]), "/audit");
        assert_eq!(q.value("tool"), "crm.update contact");
        assert_eq!(q.value("risk"), "");
    }

    #[test]
    fn a_lookup_reads_every_parameter() {
        let q = AuditQuery::from_lookup(|k| (k == "after").then(|| "7".to_owned()));
        assert_eq!(q.after.as_deref(), Some("7"));
        assert_eq!(q.before, None);
    }
}

/// One row of the decision insights: a reviewer or a domain over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsightRow {
    /// The reviewer's username, or the domain.
    pub name: String,
    /// Final decisions.
    pub decisions: i64,
    /// Approvals among them.
    pub approved: i64,
    /// Median seconds from submission to decision.
    pub p50: Option<i64>,
    /// 90th percentile of the same.
    pub p90: Option<i64>,
    /// Decisions made faster than the proposal could be read.
    pub fast: i64,
    /// Standing grants made (reviewers).
    pub grants: i64,
    /// Uses of those grants (reviewers).
    pub grant_uses: i64,
    /// Break-glass approvals (reviewers).
    pub break_glass: i64,
    /// Proposals that expired undecided (domains).
    pub expired: i64,
}

/// The decision insights over one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsightsView {
    /// The window, in days.
    pub days: i64,
    /// Its start, `YYYY-MM-DD HH:MM` UTC.
    pub from: String,
    /// Per reviewer, most decisions first.
    pub reviewers: Vec<InsightRow>,
    /// Per domain, most decisions first.
    pub domains: Vec<InsightRow>,
}
