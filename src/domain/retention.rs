//! How long operational rows are kept. Rows that only record how Countersign reached people
//! (notifications sent, agents' webhook deliveries and their attempts, expiry and escalation
//! alerts of settled proposals) grow with every proposal; each kind has a retention, and a
//! background task deletes what is older, a small batch at a time, so it never holds the
//! writer for long. Web sessions that have ended go the same way, as soon as they end. The
//! audit trail is never pruned: its export bundles are the archive.
//! Imports `policy`'s duration syntax.

use std::time::Duration;

use super::policy::loader::parse_duration;

/// Rows deleted per statement: small enough that a batch costs the writer about what one
/// group of submissions does (500 a batch moved submissions' p99 at 64 connections from 43 to
/// 141 ms while a half-million-row backlog was pruned).
pub const BATCH: u32 = 100;

/// The pause between two batches: at most `BATCH` rows per pause are deleted (2,000 a second),
/// so a backlog (a first start on an old database) is worked off without crowding the write
/// path.
pub const PAUSE: Duration = Duration::from_millis(50);

/// How often the background task looks for rows past their retention.
pub const EVERY: Duration = Duration::from_secs(300);

/// Each kind of operational row that is pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prunable {
    /// Reviewers' notifications no longer pending (`sent`, `failed`, `expanded`).
    Notifications,
    /// Agents' webhook deliveries no longer pending, with their attempts.
    WebhookDeliveries,
    /// Expiry warnings and escalation tiers raised for proposals that no longer wait.
    Alerts,
    /// Web sessions that have ended (idle or past their lifetime): nobody can use them.
    Sessions,
}

impl Prunable {
    /// Every kind, in the order the task prunes them.
    pub const ALL: [Prunable; 4] = [
        Prunable::Notifications,
        Prunable::WebhookDeliveries,
        Prunable::Alerts,
        Prunable::Sessions,
    ];

    /// The table's name, as metrics and logs label it.
    pub fn as_str(self) -> &'static str {
        match self {
            Prunable::Notifications => "notifications",
            Prunable::WebhookDeliveries => "webhook_deliveries",
            Prunable::Alerts => "proposal_alerts",
            Prunable::Sessions => "sessions",
        }
    }
}

/// Each kind's retention; `None` keeps that kind forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Default 30 days.
    pub notifications: Option<Duration>,
    /// Default 30 days.
    pub webhook_deliveries: Option<Duration>,
    /// Default 90 days.
    pub alerts: Option<Duration>,
}

const DAY: u64 = 86_400;

impl Default for Retention {
    fn default() -> Self {
        Self {
            notifications: Some(Duration::from_secs(30 * DAY)),
            webhook_deliveries: Some(Duration::from_secs(30 * DAY)),
            alerts: Some(Duration::from_secs(90 * DAY)),
        }
    }
}

impl Retention {
    /// How long rows of `kind` are kept; `None` for ever. A web session is kept until it ends
    /// (`--session-idle`, `--session-lifetime`), and not after: no setting of its own.
    pub fn of(&self, kind: Prunable) -> Option<Duration> {
        match kind {
            Prunable::Notifications => self.notifications,
            Prunable::WebhookDeliveries => self.webhook_deliveries,
            Prunable::Alerts => self.alerts,
            Prunable::Sessions => Some(Duration::ZERO),
        }
    }
}

/// Parses a retention: `forever`, or a duration such as `"30d"` or `"12w"` (at most a year).
pub fn parse_retention(text: &str) -> Result<Option<Duration>, String> {
    if text == "forever" {
        return Ok(None);
    }
    parse_duration(text)
        .map(|secs| Some(Duration::from_secs(secs)))
        .map_err(|why| format!("{why}, or `forever`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_is_a_duration_or_forever() {
        assert_eq!(
            parse_retention("30d"),
            Ok(Some(Duration::from_secs(30 * DAY)))
        );
        assert_eq!(parse_retention("forever"), Ok(None));
        let err = parse_retention("0d");
        assert!(
            matches!(&err, Err(why) if why.contains("longer than zero") && why.contains("forever")),
            "{err:?}"
        );
        assert!(parse_retention("30 days").is_err());
        assert!(parse_retention("").is_err());
    }

    #[test]
    fn the_defaults_are_documented_ones() {
        let r = Retention::default();
        assert_eq!(
            r.of(Prunable::Notifications),
            Some(Duration::from_secs(30 * DAY))
        );
        assert_eq!(
            r.of(Prunable::WebhookDeliveries),
            Some(Duration::from_secs(30 * DAY))
        );
        assert_eq!(r.of(Prunable::Alerts), Some(Duration::from_secs(90 * DAY)));
        assert_eq!(r.of(Prunable::Sessions), Some(Duration::ZERO));
    }
}
