//! Reaching reviewers: what a notification says on each channel, and how floods fold into
//! digests. Pure rules; the dispatcher (`service/notify.rs`) sends.
//!
//! - **What a message says.** The agent, the tool, the intent summary, the declared risk, the
//!   route, the blockers, the time left and a link to the proposal page. Never a parameter
//!   value; a summary that looks like it carries a secret or personal data is withheld, and
//!   hidden characters are shown (`⟦U+202E⟧`), as on the page.
//! - **A link never decides.** It opens the proposal page; deciding takes a signed-in POST.
//! - **Floods fold.** Per channel, and per reviewer on email, at most one message per window
//!   ([`DEFAULT_WINDOW`]): the first is sent at once; those that arrive within the window wait
//!   for its end and go out together as one digest with counts ([`fold`]).
//! - **Who is told.** Shared channels (Slack, Teams, a generic webhook) get every notification;
//!   email goes to each reviewer who may decide the proposal (role, domains), or to the members
//!   of the escalation tier raised ([`super::policy::escalation`]).
//! - **A policy activated alone** at the shell (break-glass) is told to every admin and
//!   compliance officer on every channel, at once and never folded ([`policy`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

mod email;
pub mod policy;

use super::review::text::visible;
use super::routing::scan::is_clean;

/// At most one message per channel in this long, unless the operator says otherwise.
pub const DEFAULT_WINDOW: time::Duration = time::Duration::minutes(1);
/// Longest intent summary a message quotes.
const SUMMARY_CHARS: usize = 280;

/// Why reviewers are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A proposal started waiting for a human decision.
    Waiting,
    /// A command's outcome is unknown: a person must say what happened.
    OutcomeUnknown,
    /// A waiting proposal is about to expire undecided.
    Expiring,
    /// Nobody decided in time: the next tier is told (and may decide).
    Escalated,
    /// A rollback task was opened: a person approves or dismisses it.
    Rollback,
    /// An admin approved alone past the policy's quorum (break-glass): every admin and the
    /// compliance role are told ([`BREAK_GLASS_AUDIENCE`]).
    BreakGlass,
    /// An operator activated a policy version alone at the shell (break-glass): every admin
    /// and the compliance role are told ([`policy::PolicyNotice`]).
    PolicyBreakGlass,
}

/// The audience of a break-glass notification: every admin and compliance officer, whatever
/// their domains (not an escalation tier: a tier names one role or one person).
pub const BREAK_GLASS_AUDIENCE: &str = "admin+compliance";

impl Reason {
    /// Its stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Waiting => "waiting",
            Reason::OutcomeUnknown => "outcome_unknown",
            Reason::Expiring => "expiring",
            Reason::Escalated => "escalated",
            Reason::Rollback => "rollback",
            Reason::BreakGlass => "break_glass",
            Reason::PolicyBreakGlass => "policy_break_glass",
        }
    }

    /// Reads a stored name; an unknown one is `None` (fail closed).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "waiting" => Some(Reason::Waiting),
            "outcome_unknown" => Some(Reason::OutcomeUnknown),
            "expiring" => Some(Reason::Expiring),
            "escalated" => Some(Reason::Escalated),
            "rollback" => Some(Reason::Rollback),
            "break_glass" => Some(Reason::BreakGlass),
            "policy_break_glass" => Some(Reason::PolicyBreakGlass),
            _ => None,
        }
    }

    /// The proposal status that starts it.
    pub fn of_status(status: &str) -> Option<Self> {
        match status {
            "pending" => Some(Reason::Waiting),
            "outcome_unknown" => Some(Reason::OutcomeUnknown),
            _ => None,
        }
    }

    /// What the message's title says.
    pub fn headline(self) -> &'static str {
        match self {
            Reason::Waiting => "Approval needed",
            Reason::OutcomeUnknown => "Outcome unknown: a person must resolve it",
            Reason::Expiring => "About to expire undecided",
            Reason::Escalated => "Escalated: nobody decided in time",
            Reason::Rollback => "Rollback task: approve or dismiss it",
            Reason::BreakGlass => "Break-glass: an admin approved alone past the quorum",
            Reason::PolicyBreakGlass => {
                "Break-glass: a policy version was activated alone at the shell"
            }
        }
    }
}

/// One proposal a message is about: only what may leave Countersign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// Why.
    pub reason: Reason,
    /// The proposal.
    pub proposal_id: Uuid,
    /// The proposing agent.
    pub agent: String,
    /// The tool it would run.
    pub tool: String,
    /// Its intent summary, made safe ([`safe_summary`]).
    pub summary: String,
    /// Declared risk.
    pub risk: String,
    /// Route.
    pub route: String,
    /// Blocker codes.
    pub blockers: Vec<String>,
    /// When it expires undecided, if it does.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Declared blast radius, if any.
    pub blast_radius: Option<String>,
    /// The proposal page.
    pub url: String,
    /// The escalation tier told (a username or a role), when escalated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated_to: Option<String>,
}

/// Whether a person is told about a proposal of `agent` in `domain`: every admin and
/// compliance officer for a break-glass; the members of the escalation tier `audience` when
/// there is one, else everyone who may decide it (a deciding role, the domain among theirs);
/// never the proposing agent's own operators, who may not approve it.
pub fn is_told(
    username: &str,
    role: &str,
    domains: Option<&[String]>,
    proposal: (&str, &str),
    audience: Option<&str>,
    operators: &[String],
) -> bool {
    let (agent, domain) = proposal;
    if audience == Some(BREAK_GLASS_AUDIENCE) {
        return matches!(role, "admin" | "compliance");
    }
    if username == agent || operators.iter().any(|o| o == username) {
        return false;
    }
    match audience {
        Some(tier) => super::policy::escalation::reaches(tier, username, role),
        None => {
            super::principal::Role::parse(role).is_some_and(|r| r.can_decide())
                && super::queue::may_review_domain(domains, domain)
        }
    }
}

/// An intent summary as a message may quote it: hidden characters shown, at most
/// [`SUMMARY_CHARS`] characters, withheld whole when it looks like it carries a secret or
/// personal data.
pub fn safe_summary(summary: &str) -> String {
    if !is_clean(summary) {
        return "(withheld: the summary looks like it carries a secret or personal data; open \
                the proposal)"
            .to_owned();
    }
    let shown = visible(summary).text;
    match shown.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &shown[..cut]),
        None => shown,
    }
}

/// "in 7 h", "in 12 min", "in under a minute", "no expiry", "expired".
pub fn time_left(expires_at: Option<OffsetDateTime>, now: OffsetDateTime) -> String {
    let Some(at) = expires_at else {
        return "no expiry".into();
    };
    let left = at - now;
    if left <= time::Duration::ZERO {
        "expired".into()
    } else if left < time::Duration::MINUTE {
        "in under a minute".into()
    } else if left < time::Duration::HOUR {
        format!("in {} min", left.whole_minutes())
    } else if left < time::Duration::DAY {
        format!("in {} h", left.whole_hours())
    } else {
        format!("in {} d", left.whole_days())
    }
}

/// What one send carries: one proposal, or a digest of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// One proposal.
    One(Box<Subject>),
    /// Several, folded: how many, by tool and by risk, and the queue's address.
    Digest {
        /// The proposals, oldest first.
        subjects: Vec<Subject>,
        /// The queue page.
        queue_url: String,
    },
}

/// The message for what is due on one channel: one subject alone, several as a digest.
pub fn fold(mut subjects: Vec<Subject>, queue_url: &str) -> Option<Message> {
    match subjects.len() {
        0 => None,
        1 => subjects.pop().map(|s| Message::One(Box::new(s))),
        _ => Some(Message::Digest {
            subjects,
            queue_url: queue_url.to_owned(),
        }),
    }
}

fn counts<'a>(items: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts
}

fn counted(counts: &BTreeMap<&str, usize>) -> String {
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}

impl Message {
    /// A one-line text of the message (Slack's fallback, logs).
    pub fn headline(&self, now: OffsetDateTime) -> String {
        match self {
            Message::One(s) => format!(
                "{}: {} wants {} ({} risk), expires {}",
                s.reason.headline(),
                s.agent,
                s.tool,
                s.risk,
                time_left(s.expires_at, now)
            ),
            Message::Digest { subjects, .. } => {
                format!("{} proposals need a person in Countersign", subjects.len())
            }
        }
    }

    /// Slack: a Block Kit message with an "Open in Countersign" button (a link: it decides
    /// nothing). With `buttons` (the Slack app's interactivity is set up), a proposal that may
    /// be decided from chat also gets a reason field and Approve and Reject buttons.
    pub fn slack(&self, now: OffsetDateTime, buttons: bool) -> Value {
        let mut blocks = Vec::new();
        let (title, url, button) = match self {
            Message::One(s) => {
                let fields: Vec<Value> = facts(s, now)
                    .into_iter()
                    .map(|(k, v)| json!({"type": "mrkdwn", "text": format!("*{k}*\n{}", slack_escape(&v))}))
                    .collect();
                blocks.push(json!({"type": "section", "fields": fields}));
                blocks.push(json!({"type": "section", "text": {"type": "mrkdwn",
                    "text": format!("*Intent*\n{}", slack_escape(&s.summary))}}));
                let title = format!("{}: {}", s.reason.headline(), s.tool);
                (title, s.url.clone(), "Open in Countersign")
            }
            Message::Digest {
                subjects,
                queue_url,
            } => {
                let (tools, risks) = digest_counts(subjects);
                blocks.push(
                    json!({"type": "section", "text": {"type": "mrkdwn", "text": format!(
                    "*By tool*: {}\n*By risk*: {}", slack_escape(&tools), slack_escape(&risks))}}),
                );
                let title = format!("{} proposals need a person", subjects.len());
                (title, queue_url.clone(), "Open the queue")
            }
        };
        blocks.insert(
            0,
            json!({"type": "header", "text": {"type": "plain_text", "text": title}}),
        );
        let mut elements = vec![json!({"type": "button",
            "text": {"type": "plain_text", "text": button}, "url": url})];
        if let Message::One(s) = self
            && buttons
            && super::slack::decidable_in_chat(&s.risk, s.blast_radius.as_deref())
        {
            blocks.push(
                json!({"type": "input", "block_id": super::slack::REASON, "optional": true,
                "dispatch_action": false,
                "label": {"type": "plain_text", "text": "Reason (needed to reject)"},
                "element": {"type": "plain_text_input", "action_id": super::slack::REASON}}),
            );
            let id = s.proposal_id.to_string();
            elements.push(
                json!({"type": "button", "style": "primary", "action_id": super::slack::APPROVE,
                "text": {"type": "plain_text", "text": "Approve"}, "value": id}),
            );
            elements.push(
                json!({"type": "button", "style": "danger", "action_id": super::slack::REJECT,
                "text": {"type": "plain_text", "text": "Reject"}, "value": id}),
            );
        }
        blocks.push(json!({"type": "actions", "elements": elements}));
        json!({"text": self.headline(now), "blocks": blocks})
    }

    /// Microsoft Teams: an Adaptive Card with an "Open in Countersign" action.
    pub fn teams(&self, now: OffsetDateTime) -> Value {
        let (title, mut body, url) = match self {
            Message::One(s) => {
                let facts: Vec<Value> = facts(s, now)
                    .into_iter()
                    .map(|(k, v)| json!({"title": k, "value": v}))
                    .collect();
                (
                    format!("{}: {}", s.reason.headline(), s.tool),
                    vec![
                        json!({"type": "FactSet", "facts": facts}),
                        json!({"type": "TextBlock", "text": s.summary, "wrap": true}),
                    ],
                    s.url.clone(),
                )
            }
            Message::Digest {
                subjects,
                queue_url,
            } => {
                let (tools, risks) = digest_counts(subjects);
                (
                    format!("{} proposals need a person", subjects.len()),
                    vec![json!({"type": "FactSet", "facts": [
                        {"title": "By tool", "value": tools}, {"title": "By risk", "value": risks}]})],
                    queue_url.clone(),
                )
            }
        };
        body.insert(
            0,
            json!({"type": "TextBlock", "size": "Medium", "weight": "Bolder", "text": title, "wrap": true}),
        );
        json!({"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard", "version": "1.4", "body": body,
                "actions": [{"type": "Action.OpenUrl", "title": "Open in Countersign", "url": url}]
            }
        }]})
    }

    /// A generic webhook: the subjects as JSON (signed like agents' webhooks by the sender).
    pub fn generic(&self, id: Uuid, now: OffsetDateTime) -> Value {
        match self {
            Message::One(s) => json!({
                "id": id, "type": "reviewers.notified", "sent_at": rfc3339(now),
                "time_left": time_left(s.expires_at, now), "proposal": s,
            }),
            Message::Digest {
                subjects,
                queue_url,
            } => json!({
                "id": id, "type": "reviewers.digest", "sent_at": rfc3339(now),
                "count": subjects.len(), "queue_url": queue_url, "proposals": subjects,
            }),
        }
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn facts(s: &Subject, now: OffsetDateTime) -> Vec<(&'static str, String)> {
    let mut facts = base_facts(s, now);
    if let Some(to) = &s.escalated_to {
        facts.push(("Escalated to", to.clone()));
    }
    facts
}

fn base_facts(s: &Subject, now: OffsetDateTime) -> Vec<(&'static str, String)> {
    let blockers = if s.blockers.is_empty() {
        "none".to_owned()
    } else {
        s.blockers.join(", ")
    };
    vec![
        ("Agent", s.agent.clone()),
        ("Tool", s.tool.clone()),
        ("Risk", s.risk.clone()),
        ("Route", s.route.clone()),
        ("Blockers", blockers),
        ("Expires", time_left(s.expires_at, now)),
    ]
}

fn digest_counts(subjects: &[Subject]) -> (String, String) {
    let tools = counts(subjects.iter().map(|s| s.tool.as_str()));
    let risks = counts(subjects.iter().map(|s| s.risk.as_str()));
    (counted(&tools), counted(&risks))
}

/// Slack's mrkdwn escapes: `&`, `<` and `>` (so agent text cannot make links or mentions).
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(super) fn subject(tool: &str, risk: &str) -> Subject {
        Subject {
            reason: Reason::Waiting,
            proposal_id: Uuid::nil(),
            agent: "sales-agent".into(),
            tool: tool.into(),
            summary: safe_summary("Update <@channel> contact\u{202E}txt.exe"),
            risk: risk.into(),
            route: "ask".into(),
            blockers: vec!["human_approval_required".into()],
            expires_at: Some(OffsetDateTime::UNIX_EPOCH + time::Duration::hours(7)),
            blast_radius: Some("small".into()),
            url: "https://cs.example/proposals/x".into(),
            escalated_to: None,
        }
    }

    #[test]
    fn the_reviewers_who_may_decide_are_told_or_the_escalation_tier() {
        let payments = Some(vec!["payments".to_owned()]);
        let proposal = ("billing-agent", "payments");
        let ops = vec!["olga".to_owned()];
        assert!(is_told("rob", "reviewer", None, proposal, None, &ops));
        assert!(is_told(
            "rob",
            "reviewer",
            payments.as_deref(),
            proposal,
            None,
            &ops
        ));
        let crm = Some(vec!["crm".to_owned()]);
        assert!(!is_told(
            "ria",
            "reviewer",
            crm.as_deref(),
            proposal,
            None,
            &ops
        ));
        assert!(!is_told("cora", "compliance", None, proposal, None, &ops));
        assert!(
            !is_told("olga", "admin", None, proposal, None, &ops),
            "an operator"
        );
        assert!(is_told(
            "ria",
            "reviewer",
            crm.as_deref(),
            proposal,
            Some("ria"),
            &ops
        ));
        assert!(is_told(
            "ann",
            "admin",
            crm.as_deref(),
            proposal,
            Some("admin"),
            &ops
        ));
        assert!(!is_told(
            "rob",
            "reviewer",
            None,
            proposal,
            Some("admin"),
            &ops
        ));
    }

    #[test]
    fn a_summary_is_shown_safely_or_withheld() {
        assert!(safe_summary("Mail jane.doe@example.com the invoice").starts_with("(withheld"));
        assert!(
            safe_summary("use token sk_live_abcdefghijklmnopqrstuvwx").starts_with("(withheld")
        );
        assert!(safe_summary("a\u{200B}b").contains("U+200B"));
        let long = "x".repeat(400);
        assert_eq!(safe_summary(&long).chars().count(), SUMMARY_CHARS + 1);
    }

    #[test]
    fn slack_and_teams_carry_the_facts_and_a_link_that_only_opens() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let one = Message::One(Box::new(subject("crm.update_contact", "high")));
        let slack = one.slack(now, false);
        let text = slack.to_string();
        assert!(text.contains("sales-agent") && text.contains("in 7 h"));
        assert!(
            text.contains("&lt;@channel&gt;"),
            "no mention from agent text: {text}"
        );
        assert!(text.contains("U+202E"));
        assert_eq!(slack["blocks"][0]["type"], "header");
        let button = &slack["blocks"]
            .as_array()
            .expect("blocks")
            .last()
            .expect("actions")["elements"][0];
        assert_eq!(button["url"], "https://cs.example/proposals/x");
        assert!(button.get("action_id").is_none() && button.get("value").is_none());
        let teams = one.teams(now);
        let card = &teams["attachments"][0]["content"];
        assert_eq!(card["type"], "AdaptiveCard");
        assert_eq!(card["actions"][0]["type"], "Action.OpenUrl");
    }

    #[test]
    fn several_fold_into_one_digest_with_counts() {
        let subjects = vec![
            subject("crm.update_contact", "high"),
            subject("crm.update_contact", "low"),
            subject("billing.refund", "high"),
        ];
        let digest = fold(subjects, "https://cs.example/").expect("a message");
        let text = digest.slack(OffsetDateTime::UNIX_EPOCH, true).to_string();
        assert!(text.contains("3 proposals"), "{text}");
        assert!(text.contains("2 crm.update_contact") && text.contains("2 high"));
        assert!(fold(Vec::new(), "x").is_none());
        assert!(matches!(
            fold(vec![subject("a", "low")], "x"),
            Some(Message::One(_))
        ));
    }
}
