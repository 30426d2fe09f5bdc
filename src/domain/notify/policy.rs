//! A policy version activated alone at the shell (`countersign policy activate`, break-glass):
//! what each channel says. It is never folded into a digest nor held for a window: it goes out
//! on its own, at once, to every admin and compliance officer ([`super::BREAK_GLASS_AUDIENCE`])
//! and every shared channel. It names the version, the one it replaced, who activated it, when,
//! and the reason (withheld whole when it looks like a secret or personal data, as an intent
//! summary is), and links to `/policy`, where the history marks it.

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Reason, is_clean, rfc3339, safe_summary, slack_escape};

/// One break-glass activation, as a message may carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyNotice {
    /// Its place in the activation history.
    pub activation: i64,
    /// The version now in force.
    pub version: String,
    /// The version it replaced, if any.
    pub previous: Option<String>,
    /// Who activated it.
    pub by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The reason given, made safe ([`safe_summary`]).
    pub reason: String,
    /// The policy page.
    pub url: String,
}

impl PolicyNotice {
    /// A notice for an activation with the reason `reason` as given.
    pub fn new(
        activation: i64,
        (version, previous): (String, Option<String>),
        by: String,
        at: OffsetDateTime,
        reason: &str,
        url: String,
    ) -> Self {
        Self {
            activation,
            version,
            previous,
            by,
            at,
            reason: if is_clean(reason) {
                safe_summary(reason)
            } else {
                "(withheld: the reason looks like it carries a secret or personal data; the \
                 policy's history shows it to admins)"
                    .to_owned()
            },
            url,
        }
    }

    fn facts(&self) -> Vec<(&'static str, String)> {
        vec![
            ("Version", short(&self.version)),
            (
                "Replaced",
                self.previous.as_deref().map_or("none".into(), short),
            ),
            ("Activated by", self.by.clone()),
            ("At", rfc3339(self.at)),
        ]
    }

    fn title(&self) -> String {
        Reason::PolicyBreakGlass.headline().to_owned()
    }

    /// A one-line text (Slack's fallback, logs).
    pub fn headline(&self) -> String {
        format!(
            "{}: {} activated {}",
            self.title(),
            self.by,
            short(&self.version)
        )
    }

    /// Slack: a Block Kit message with an "Open the policy" button (a link).
    pub fn slack(&self) -> Value {
        let fields: Vec<Value> = (self.facts().into_iter())
            .map(|(k, v)| json!({"type": "mrkdwn", "text": format!("*{k}*\n{}", slack_escape(&v))}))
            .collect();
        json!({"text": self.headline(), "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": self.title()}},
            {"type": "section", "fields": fields},
            {"type": "section", "text": {"type": "mrkdwn",
                "text": format!("*Reason*\n{}", slack_escape(&self.reason))}},
            {"type": "actions", "elements": [{"type": "button",
                "text": {"type": "plain_text", "text": "Open the policy"}, "url": self.url}]},
        ]})
    }

    /// Microsoft Teams: an Adaptive Card with an "Open the policy" action.
    pub fn teams(&self) -> Value {
        let facts: Vec<Value> = (self.facts().into_iter())
            .map(|(k, v)| json!({"title": k, "value": v}))
            .collect();
        json!({"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard", "version": "1.4", "body": [
                    {"type": "TextBlock", "size": "Medium", "weight": "Bolder",
                     "text": self.title(), "wrap": true},
                    {"type": "FactSet", "facts": facts},
                    {"type": "TextBlock", "text": self.reason, "wrap": true},
                ],
                "actions": [{"type": "Action.OpenUrl", "title": "Open the policy", "url": self.url}]
            }
        }]})
    }

    /// A generic webhook: the notice as JSON (signed by the sender).
    pub fn generic(&self, id: Uuid, now: OffsetDateTime) -> Value {
        json!({
            "id": id, "type": "policy.break_glass", "sent_at": rfc3339(now),
            "reason": Reason::PolicyBreakGlass.as_str(), "activation": self,
        })
    }

    /// The email's subject and plain-text body.
    pub fn email(&self) -> (String, String) {
        let mut body = String::new();
        for (k, v) in self.facts() {
            body.push_str(&format!("{k}: {v}\n"));
        }
        body.push_str(&format!("\nReason:\n{}\n", self.reason));
        body.push_str(&format!(
            "\nThe policy's history, with the diff against the version before:\n{}\n",
            self.url
        ));
        body.push_str(
            "\nYou get this because you are an admin or compliance officer in Countersign: a \
             policy version was activated without a second admin's approval.\n",
        );
        let subject = format!("[Countersign] {}", self.headline());
        (subject, body)
    }
}

/// A version as people read it: `sha256:` and its first 12 hex digits.
fn short(version: &str) -> String {
    match version.char_indices().nth(19) {
        Some((cut, _)) => version[..cut].to_owned(),
        None => version.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(reason: &str) -> PolicyNotice {
        PolicyNotice::new(
            7,
            (
                format!("sha256:{}", "a".repeat(64)),
                Some(format!("sha256:{}", "b".repeat(64))),
            ),
            "operator".into(),
            OffsetDateTime::UNIX_EPOCH,
            reason,
            "https://cs.example/policy".into(),
        )
    }

    #[test]
    fn every_channel_names_the_versions_who_and_why_and_links_the_policy() {
        let n = notice("the pages are down <@channel>");
        let slack = n.slack().to_string();
        assert!(slack.contains("sha256:aaaaaaaaaaaa") && slack.contains("sha256:bbbbbbbbbbbb"));
        assert!(slack.contains("&lt;@channel&gt;"), "{slack}");
        assert!(slack.contains("https://cs.example/policy"));
        let teams = n.teams();
        assert_eq!(
            teams["attachments"][0]["content"]["actions"][0]["url"],
            n.url
        );
        let generic = n.generic(Uuid::nil(), OffsetDateTime::UNIX_EPOCH);
        assert_eq!(generic["type"], "policy.break_glass");
        assert_eq!(generic["activation"]["activation"], 7);
        assert_eq!(generic["activation"]["by"], "operator");
        let (subject, body) = n.email();
        assert!(
            subject.starts_with("[Countersign] Break-glass"),
            "{subject}"
        );
        assert!(body.contains("Activated by: operator") && body.contains("the pages are down"));
    }

    #[test]
    fn a_reason_that_looks_like_a_secret_is_withheld() {
        let n = notice("rotate sk_live_abcdefghijklmnopqrstuvwx now");
        assert!(n.reason.starts_with("(withheld"), "{}", n.reason);
        assert!(!n.email().1.contains("sk_live"));
    }
}
