//! Times as people read them: "3 min ago", "in 7 h", with the exact UTC time on hover and the
//! machine-readable instant in `<time datetime>`. Never raw ISO strings with nanoseconds.
//!
//! A [`Moment`] carries the instant *and* the moment the server rendered the page, so the words
//! are the same when the server renders them and when the browser hydrates the page (no
//! mismatch, whatever the browser's clock says). Use [`When`] in views:
//!
//! ```text
//! view! { "proposed " <When at=p.created/> }                 // proposed 3 min ago
//! view! { <When at=p.expires prefix="expires " past_prefix="expired "/> }  // expires in 7 h
//! ```
//!
//! On the server, build one with `Moment::new(t.unix_timestamp(), now.unix_timestamp())`.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// An instant and the instant the page was rendered, in whole seconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moment {
    /// The instant shown.
    pub at: i64,
    /// When the page was rendered (what "ago" and "in" count from).
    pub now: i64,
}

impl Moment {
    /// `at`, seen from `now` (both Unix seconds).
    pub fn new(at: i64, now: i64) -> Self {
        Self { at, now }
    }

    /// Whether it lies in the past.
    pub fn is_past(&self) -> bool {
        self.at <= self.now
    }

    /// "just now", "45 s ago", "3 min ago", "2 h 5 min ago", "3 d ago"; or "in 7 h" for a
    /// future instant.
    pub fn relative(&self) -> String {
        let d = self.now - self.at;
        if d.abs() < 5 {
            return "just now".into();
        }
        let span = span(d.unsigned_abs());
        if d > 0 {
            format!("{span} ago")
        } else {
            format!("in {span}")
        }
    }

    /// `2026-11-26 10:03:12 UTC`.
    pub fn exact(&self) -> String {
        let (y, mo, d, h, mi, s) = civil(self.at);
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
    }

    /// `2026-11-26T10:03:12Z`, for `<time datetime>`.
    pub fn iso(&self) -> String {
        let (y, mo, d, h, mi, s) = civil(self.at);
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }
}

/// A duration in the largest units that keep it short: `45 s`, `3 min`, `2 h 5 min`, `7 h`,
/// `1 d 4 h`, `12 d`.
pub fn span(secs: u64) -> String {
    const MIN: u64 = 60;
    const HOUR: u64 = 3_600;
    const DAY: u64 = 86_400;
    match secs {
        0..MIN => format!("{secs} s"),
        MIN..HOUR => format!("{} min", secs / MIN),
        HOUR..36_000 if secs % HOUR >= MIN => {
            format!("{} h {} min", secs / HOUR, secs % HOUR / MIN)
        }
        HOUR..DAY => format!("{} h", secs / HOUR),
        DAY..259_200 if secs % DAY >= HOUR => format!("{} d {} h", secs / DAY, secs % DAY / HOUR),
        _ => format!("{} d", secs / DAY),
    }
}

/// Year, month, day, hour, minute, second (UTC) of Unix time `t` (Howard Hinnant's
/// days-from-civil algorithm, inverted).
fn civil(t: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let part = |n: i64| u32::try_from(n).unwrap_or(0);
    (
        year,
        part(month),
        part(day),
        part(secs / 3_600),
        part(secs % 3_600 / 60),
        part(secs % 60),
    )
}

/// A `<time>` showing `at` relative to the page's render time, the exact UTC time on hover.
/// `prefix` goes before a future instant's words and `past_prefix` before a past one's (both
/// empty by default): `expires in 7 h` / `expired 3 min ago`.
#[component]
pub fn When(
    /// The instant.
    at: Moment,
    /// Words before a future instant's ("expires ").
    #[prop(optional, into)]
    prefix: String,
    /// Words before a past instant's ("expired ").
    #[prop(optional, into)]
    past_prefix: String,
) -> impl IntoView {
    let words = format!(
        "{}{}",
        if at.is_past() { past_prefix } else { prefix },
        at.relative()
    );
    view! { <time datetime=at.iso() title=at.exact()>{words}</time> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_words() {
        let now = 1_795_000_000;
        let m = |d: i64| Moment::new(now - d, now).relative();
        assert_eq!(m(2), "just now");
        assert_eq!(m(45), "45 s ago");
        assert_eq!(m(3 * 60 + 20), "3 min ago");
        assert_eq!(m(2 * 3_600 + 5 * 60), "2 h 5 min ago");
        assert_eq!(m(12 * 3_600 + 5 * 60), "12 h ago");
        assert_eq!(m(86_400 + 4 * 3_600), "1 d 4 h ago");
        assert_eq!(m(12 * 86_400), "12 d ago");
        assert_eq!(m(-7 * 3_600), "in 7 h");
        assert_eq!(m(-90), "in 1 min");
    }

    #[test]
    fn exact_utc() {
        // 2026-11-26T10:03:12Z
        let m = Moment::new(1_795_687_392, 0);
        assert_eq!(m.exact(), "2026-11-26 10:03:12 UTC");
        assert_eq!(m.iso(), "2026-11-26T10:03:12Z");
        assert_eq!(Moment::new(0, 0).iso(), "1970-01-01T00:00:00Z");
        assert_eq!(Moment::new(951_782_400, 0).iso(), "2000-02-29T00:00:00Z");
        assert_eq!(Moment::new(-86_400, 0).iso(), "1969-12-31T00:00:00Z");
    }
}
