//! Parsing the compliance pages' query string ([`AuditQuery`]) into a trail [`Selection`] and
//! a [`Cursor`]: times in UTC at the precision typed, names bounded, empty fields unset. The
//! `/audit` page and the export download read the same filters through here.

use app::dto::{AppError, AuditQuery};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::audit::trail::Selection;
use crate::service::Cursor;

/// Longest filter value accepted.
pub const MAX_FILTER: usize = 128;

/// The selection `q` describes. `from` is inclusive; `to` includes the whole day, minute or
/// second it names.
pub fn selection(q: &AuditQuery) -> Result<Selection, AppError> {
    Ok(Selection {
        from: time_field("from", q.from.as_deref(), false)?,
        until: time_field("to", q.to.as_deref(), true)?,
        kind: text("kind", q.kind.as_deref())?,
        actor: text("actor", q.actor.as_deref())?,
        agent: text("agent", q.agent.as_deref())?,
        tool: text("tool", q.tool.as_deref())?,
        domain: text("domain", q.domain.as_deref())?,
        decision: text("decision", q.decision.as_deref())?,
        risk: text("risk", q.risk.as_deref())?,
    })
}

/// Where the page starts: `after` (newer), `before` (older), or the newest events.
pub fn cursor(q: &AuditQuery, default: Cursor) -> Result<Cursor, AppError> {
    let seq = |name: &str, v: Option<&str>| -> Result<Option<i64>, AppError> {
        match v.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .ok()
                // `after` points one past itself; the largest seq has nothing after it.
                .filter(|n| (0..i64::MAX).contains(n))
                .map(Some)
                .ok_or_else(|| AppError::Invalid(format!("{name}: not a sequence number"))),
        }
    };
    Ok(
        match (
            seq("after", q.after.as_deref())?,
            seq("before", q.before.as_deref())?,
        ) {
            (Some(after), _) => Cursor::After(after),
            (None, Some(before)) => Cursor::Before(before),
            (None, None) => default,
        },
    )
}

fn text(name: &str, value: Option<&str>) -> Result<Option<String>, AppError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if v.chars().count() > MAX_FILTER || v.chars().any(char::is_control) {
        return Err(AppError::Invalid(format!(
            "{name}: at most {MAX_FILTER} printable characters"
        )));
    }
    Ok(Some(v.to_owned()))
}

/// A time typed as `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS` (UTC, `T` or a
/// space) or RFC 3339. With `end`, the first instant after the day, minute or second it names.
fn time_field(
    name: &str,
    value: Option<&str>,
    end: bool,
) -> Result<Option<OffsetDateTime>, AppError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let (start, precision) = parse_time(v).ok_or_else(|| {
        AppError::Invalid(format!(
            "{name}: use YYYY-MM-DD, YYYY-MM-DDTHH:MM or an RFC 3339 time (UTC)"
        ))
    })?;
    if !end {
        return Ok(Some(start));
    }
    // The last representable day has no "first instant after" it.
    start
        .checked_add(precision)
        .map(Some)
        .ok_or_else(|| AppError::Invalid(format!("{name}: too far in the future")))
}

/// The instant a typed time starts at (whole seconds, UTC) and the length of what it names.
fn parse_time(v: &str) -> Option<(OffsetDateTime, Duration)> {
    let v = v.replacen(' ', "T", 1);
    if let Ok(t) = OffsetDateTime::parse(&v, &Rfc3339) {
        let t = t.to_offset(UtcOffset::UTC);
        return Some((t.replace_nanosecond(0).ok()?, Duration::SECOND));
    }
    let seconds = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    if let Ok(t) = PrimitiveDateTime::parse(&v, &seconds) {
        return Some((t.assume_utc(), Duration::SECOND));
    }
    let minutes = format_description!("[year]-[month]-[day]T[hour]:[minute]");
    if let Ok(t) = PrimitiveDateTime::parse(&v, &minutes) {
        return Some((t.assume_utc(), Duration::MINUTE));
    }
    let day = format_description!("[year]-[month]-[day]");
    let d = Date::parse(&v, &day).ok()?;
    Some((d.midnight().assume_utc(), Duration::DAY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn q(from: &str, to: &str) -> AuditQuery {
        AuditQuery {
            from: Some(from.into()),
            to: Some(to.into()),
            ..AuditQuery::default()
        }
    }

    #[test]
    fn times_are_utc_and_to_includes_what_it_names() {
        let s = selection(&q("2026-11-01", "2026-11-30")).expect("parses");
        assert_eq!(s.from, Some(datetime!(2026-11-01 0:00 UTC)));
        assert_eq!(s.until, Some(datetime!(2026-12-01 0:00 UTC)));
        let s = selection(&q("2026-11-01T09:30", "2026-11-01 10:15")).expect("parses");
        assert_eq!(s.from, Some(datetime!(2026-11-01 9:30 UTC)));
        assert_eq!(s.until, Some(datetime!(2026-11-01 10:16 UTC)));
        let s = selection(&q("2026-11-01T09:30:05", "2026-11-01T10:00:00+01:00")).expect("parses");
        assert_eq!(s.from, Some(datetime!(2026-11-01 9:30:05 UTC)));
        assert_eq!(s.until, Some(datetime!(2026-11-01 9:00:01 UTC)));
        assert!(selection(&q("yesterday", "")).is_err());
    }

    #[test]
    fn names_are_trimmed_bounded_and_empty_means_unset() {
        let query = AuditQuery {
            tool: Some("  crm.update ".into()),
            kind: Some(String::new()),
            ..AuditQuery::default()
        };
        let s = selection(&query).expect("parses");
        assert_eq!(s.tool.as_deref(), Some("crm.update"));
        assert_eq!(s.kind, None);
        let long = AuditQuery {
            actor: Some("a".repeat(MAX_FILTER + 1)),
            ..AuditQuery::default()
        };
        assert!(selection(&long).is_err());
    }

    #[test]
    fn cursors_prefer_after_and_refuse_what_is_not_a_number() {
        let mut query = AuditQuery::default();
        assert_eq!(cursor(&query, Cursor::Newest), Ok(Cursor::Newest));
        query.before = Some("40".into());
        assert_eq!(cursor(&query, Cursor::Newest), Ok(Cursor::Before(40)));
        query.after = Some("7".into());
        assert_eq!(cursor(&query, Cursor::Newest), Ok(Cursor::After(7)));
        query.after = Some("x".into());
        assert!(cursor(&query, Cursor::Newest).is_err());
    }
}
