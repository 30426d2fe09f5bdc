//! Who may run a command (seed 004: executors "operate with scoped credentials").
//!
//! An executor token may carry a *tool scope*, a list of tool-name globs
//! (`token create --executor n8n --tools 'crm.*,calendar.*'`); the policy's
//! `allowed_executors`, copied into the command when it was approved, narrows further. Deny by
//! default:
//!
//! | policy names executors for the tool | token scope       | may run                               |
//! |-------------------------------------|-------------------|---------------------------------------|
//! | yes                                 | none              | the named executors                   |
//! | yes                                 | covers the tool   | the named executors                   |
//! | yes                                 | misses the tool   | nobody with this token                |
//! | no                                  | covers the tool   | this executor                         |
//! | no                                  | none, or misses   | nobody: the command waits, and says so |
//!
//! An executor's lease may narrow its own scope further for one call (`"tools": [...]` in the
//! lease body). [`may_lease`] adds the rest of what a lease takes: the command is queued, its
//! backoff is over, its approval window is open (or it already ran once), and no paused pattern
//! covers its tool. Storage states the same rule in SQL for speed (a SQLite `GLOB` and a
//! PostgreSQL `LIKE` translation); `tests/lease_rule.rs` generates tools, patterns, executors
//! and times and holds both dialects' answers to [`may_lease`].

use time::OffsetDateTime;

use super::CommandStatus;
use crate::domain::policy::glob::Glob;

/// Most patterns in one scope.
pub const MAX_SCOPE_PATTERNS: usize = 32;

/// A list of tool-name globs: a token's scope, or a lease's filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolScope {
    globs: Vec<Glob>,
}

impl ToolScope {
    /// Parses `crm.*,calendar.*` (commas, optional spaces).
    pub fn parse_list(text: &str) -> Result<ToolScope, String> {
        Self::from_patterns(text.split(',').map(str::trim).filter(|p| !p.is_empty()))
    }

    /// Builds a scope from patterns; at least one, at most [`MAX_SCOPE_PATTERNS`].
    pub fn from_patterns<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut globs = Vec::new();
        for p in patterns {
            let glob = Glob::new(p).map_err(|e| format!("`{p}`: {e}"))?;
            if !globs.contains(&glob) {
                globs.push(glob);
            }
        }
        if globs.is_empty() {
            return Err("must name at least one tool or pattern".into());
        }
        if globs.len() > MAX_SCOPE_PATTERNS {
            return Err(format!("must name at most {MAX_SCOPE_PATTERNS} patterns"));
        }
        Ok(ToolScope { globs })
    }

    /// Whether the scope covers `tool`.
    pub fn covers(&self, tool: &str) -> bool {
        self.globs.iter().any(|g| g.matches(tool))
    }

    /// The patterns, as written.
    pub fn patterns(&self) -> Vec<String> {
        self.globs.iter().map(|g| g.as_str().to_owned()).collect()
    }

    /// The patterns joined by commas, as stored and shown.
    pub fn to_list(&self) -> String {
        self.patterns().join(",")
    }
}

/// Whether `executor`, holding a token with `scope`, may run a command for `tool` whose
/// approval named `allowed_executors` (empty: the policy named none).
pub fn may_run(
    executor: &str,
    scope: Option<&ToolScope>,
    allowed_executors: &[String],
    tool: &str,
) -> bool {
    let covered = scope.map(|s| s.covers(tool));
    if allowed_executors.is_empty() {
        covered == Some(true)
    } else {
        allowed_executors.iter().any(|e| e == executor) && covered != Some(false)
    }
}

/// The first of the paused patterns `paused` that covers `tool` (the kill switch), if any.
pub fn paused_by<'a>(tool: &str, paused: impl IntoIterator<Item = &'a Glob>) -> Option<&'a Glob> {
    paused.into_iter().find(|glob| glob.matches(tool))
}

/// A command in the queue, as the lease rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct QueuedCommand<'a> {
    /// Its status: only `queued` may be leased.
    pub status: CommandStatus,
    /// The tool it runs.
    pub tool: &'a str,
    /// The executors its approval named (empty: the policy named none).
    pub allowed_executors: &'a [String],
    /// How many times it was leased.
    pub attempts: i32,
    /// Not leased before this (a retry's backoff).
    pub available_at: OffsetDateTime,
    /// Not leased for the first time after this (the approval window).
    pub execute_by: Option<OffsetDateTime>,
}

/// One lease request: who asks, under which token scope, for which tools, and when.
#[derive(Debug, Clone, Copy)]
pub struct LeaseRequest<'a> {
    /// The executor's name.
    pub executor: &'a str,
    /// Its token's scope (`None`: the token has none).
    pub scope: Option<&'a ToolScope>,
    /// The tools it asks for this time (`None`: any it may run).
    pub wanted: Option<&'a ToolScope>,
    /// The time of the request.
    pub now: OffsetDateTime,
}

/// Whether `request` may lease `command` while the patterns `paused` are paused: the command is
/// queued, its backoff is over, its approval window is still open (or it already ran once, so
/// the approval was used in time), [`may_run`] lets the executor run it, the request asks for
/// its tool, and no paused pattern covers the tool.
pub fn may_lease(request: &LeaseRequest<'_>, command: &QueuedCommand<'_>, paused: &[Glob]) -> bool {
    let tool = command.tool;
    command.status == CommandStatus::Queued
        && command.available_at <= request.now
        && (command.attempts > 0 || command.execute_by.is_none_or(|by| by > request.now))
        && may_run(
            request.executor,
            request.scope,
            command.allowed_executors,
            tool,
        )
        && request.wanted.is_none_or(|wanted| wanted.covers(tool))
        && paused_by(tool, paused).is_none()
}

/// Why a queued command for `tool` reaches no executor, given the active executor tokens
/// (name and scope); `None` when at least one may run it.
pub fn unreachable_reason<'a>(
    tool: &str,
    allowed_executors: &[String],
    tokens: impl IntoIterator<Item = (&'a str, Option<&'a ToolScope>)>,
) -> Option<String> {
    let mut any = false;
    for (name, scope) in tokens {
        any = true;
        if may_run(name, scope, allowed_executors, tool) {
            return None;
        }
    }
    Some(match (any, allowed_executors.is_empty()) {
        (false, _) => "no executor token is active".to_owned(),
        (true, true) => format!(
            "no executor may run `{tool}`: the policy names no executor for it and no executor \
             token's scope covers it"
        ),
        (true, false) => format!(
            "no executor may run `{tool}`: the policy allows only {} and none of them holds a \
             token whose scope covers it",
            allowed_executors.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(s: &str) -> ToolScope {
        ToolScope::parse_list(s).expect("scope")
    }

    #[test]
    fn deny_by_default() {
        assert!(!may_run("n8n", None, &[], "payments.refund"));
        assert!(!may_run(
            "n8n",
            Some(&scope("crm.*")),
            &[],
            "payments.refund"
        ));
        assert!(may_run("n8n", Some(&scope("crm.*")), &[], "crm.update"));
    }

    #[test]
    fn the_policy_narrows_the_scope() {
        let allowed = vec!["n8n-crm".to_owned()];
        assert!(may_run("n8n-crm", None, &allowed, "crm.update"));
        assert!(may_run(
            "n8n-crm",
            Some(&scope("crm.*")),
            &allowed,
            "crm.update"
        ));
        assert!(!may_run(
            "n8n-crm",
            Some(&scope("calendar.*")),
            &allowed,
            "crm.update"
        ));
        assert!(!may_run(
            "reporter",
            Some(&scope("*")),
            &allowed,
            "crm.update"
        ));
    }

    #[test]
    fn scopes_parse_and_refuse_junk() {
        assert_eq!(
            scope(" crm.* , calendar.*,crm.*").patterns(),
            ["crm.*", "calendar.*"]
        );
        assert!(ToolScope::parse_list(" , ").is_err());
        assert!(ToolScope::parse_list("crm.[a]").is_err());
    }

    #[test]
    fn a_lease_takes_every_condition() {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let allowed = vec!["n8n".to_owned()];
        let crm = scope("crm.*");
        let command = QueuedCommand {
            status: CommandStatus::Queued,
            tool: "crm.update",
            allowed_executors: &allowed,
            attempts: 0,
            available_at: now,
            execute_by: Some(now + time::Duration::seconds(1)),
        };
        let request = LeaseRequest {
            executor: "n8n",
            scope: Some(&crm),
            wanted: None,
            now,
        };
        assert!(may_lease(&request, &command, &[]));
        let cases = [
            QueuedCommand {
                status: CommandStatus::Leased,
                ..command
            },
            QueuedCommand {
                available_at: now + time::Duration::milliseconds(1),
                ..command
            },
            QueuedCommand {
                execute_by: Some(now),
                ..command
            },
            QueuedCommand {
                tool: "calendar.add",
                ..command
            },
        ];
        for refused in cases {
            assert!(!may_lease(&request, &refused, &[]), "{refused:?}");
        }
        let late = QueuedCommand {
            execute_by: Some(now),
            attempts: 1,
            ..command
        };
        assert!(
            may_lease(&request, &late, &[]),
            "a retry runs after the window"
        );
        let other = scope("crm.other");
        let narrowed = LeaseRequest {
            wanted: Some(&other),
            ..request
        };
        assert!(!may_lease(&narrowed, &command, &[]));
        let paused = [Glob::new("crm.*").expect("glob")];
        assert!(!may_lease(&request, &command, &paused));
        assert_eq!(
            paused_by("crm.update", &paused).map(Glob::as_str),
            Some("crm.*")
        );
    }

    #[test]
    fn a_waiting_command_says_why() {
        let s = scope("crm.*");
        assert!(unreachable_reason("crm.x", &[], [("n8n", Some(&s))]).is_none());
        let why = unreachable_reason("payments.refund", &[], [("n8n", Some(&s))]);
        assert!(why.is_some_and(|w| w.contains("names no executor")));
        assert!(unreachable_reason("x", &[], []).is_some());
    }
}
