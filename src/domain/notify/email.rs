//! Email: a notification as a plain-text message (subject and body), for one reviewer.
//! The same facts as the chat channels, and a link that only opens the page.

use time::OffsetDateTime;

use super::{Message, digest_counts, facts};

/// Longest subject line, in characters (agent and tool names are bounded, but a subject
/// should stay readable).
const SUBJECT_CHARS: usize = 150;

impl Message {
    /// The email's subject and plain-text body.
    pub fn email(&self, now: OffsetDateTime) -> (String, String) {
        let (subject, mut body) = match self {
            Message::One(s) => {
                let mut body = String::new();
                for (k, v) in facts(s, now) {
                    body.push_str(&format!("{k}: {v}\n"));
                }
                body.push_str(&format!("\nIntent:\n{}\n", s.summary));
                body.push_str(&format!(
                    "\nOpen the proposal to decide (opening it decides nothing):\n{}\n",
                    s.url
                ));
                let subject = format!(
                    "[Countersign] {}: {} wants {}",
                    s.reason.headline(),
                    s.agent,
                    s.tool
                );
                (subject, body)
            }
            Message::Digest {
                subjects,
                queue_url,
            } => {
                let (tools, risks) = digest_counts(subjects);
                let mut body = format!(
                    "{} proposals need a person.\n\nBy tool: {tools}\nBy risk: {risks}\n\n",
                    subjects.len()
                );
                for s in subjects.iter().take(50) {
                    body.push_str(&format!(
                        "- {} ({}, {} risk): {}\n",
                        s.tool,
                        s.reason.as_str(),
                        s.risk,
                        s.url
                    ));
                }
                if subjects.len() > 50 {
                    body.push_str(&format!("… and {} more\n", subjects.len() - 50));
                }
                body.push_str(&format!("\nOpen the queue:\n{queue_url}\n"));
                let subject = format!("[Countersign] {} proposals need a person", subjects.len());
                (subject, body)
            }
        };
        body.push_str(
            "\nYou get this because you may decide these proposals in Countersign. \
             Links only open pages; deciding takes signing in.\n",
        );
        (one_line(&subject), body)
    }
}

/// A subject line: no line breaks, at most [`SUBJECT_CHARS`] characters.
fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(SUBJECT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::subject;
    use super::*;
    use crate::domain::notify::fold;

    #[test]
    fn an_email_carries_the_facts_and_a_link_that_only_opens() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let (subject_line, body) =
            Message::One(Box::new(subject("crm.update_contact", "high"))).email(now);
        assert_eq!(
            subject_line,
            "[Countersign] Approval needed: sales-agent wants crm.update_contact"
        );
        assert!(body.contains("Risk: high") && body.contains("Expires: in 7 h"));
        assert!(body.contains("https://cs.example/proposals/x"));
        assert!(body.contains("U+202E"), "hidden characters shown: {body}");
    }

    #[test]
    fn a_digest_email_counts_and_lists() {
        let subjects = vec![
            subject("crm.update_contact", "high"),
            subject("billing.refund", "low"),
        ];
        let digest = fold(subjects, "https://cs.example/").expect("a message");
        let (subject_line, body) = digest.email(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(subject_line, "[Countersign] 2 proposals need a person");
        assert!(body.contains("1 billing.refund, 1 crm.update_contact"));
        assert!(body.contains("https://cs.example/"));
        assert_eq!(one_line("a\r\nb"), "a  b");
    }
}
