//! Statements whose text depends on what is asked (the audit trail's and the queue's
//! filters): built left to right with numbered placeholders, run on either backend.

/// A bound value of a built statement.
pub(crate) enum Arg {
    /// A whole number.
    Int(i64),
    /// Text.
    Text(String),
    /// A time, bound as each backend stores times.
    Time(time::OffsetDateTime),
}

/// A statement and its arguments, built left to right so that placeholders are numbered in
/// order of appearance (SQLite numbers `$n` parameters that way).
#[derive(Default)]
pub(crate) struct Statement {
    pub(crate) sql: String,
    pub(crate) args: Vec<Arg>,
}

impl Statement {
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.sql.push_str(text);
        self
    }

    pub(crate) fn bind(&mut self, arg: Arg) -> &mut Self {
        self.args.push(arg);
        let n = self.args.len();
        self.sql.push_str(&format!("${n}"));
        self
    }

    /// ` and domain in (…)`: only rows in `domains` (none at all when it is empty).
    pub(crate) fn domain_in(&mut self, domains: &[String]) -> &mut Self {
        if domains.is_empty() {
            return self.push(" and false");
        }
        self.push(" and domain in (");
        for (i, d) in domains.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.bind(Arg::Text(d.clone()));
        }
        self.push(")")
    }
}

/// Runs a built statement with `fetch_all` into `$row`.
macro_rules! fetch_all {
    ($conn:expr, $row:ty, $stmt:expr) => {{
        let stmt = $stmt;
        $crate::storage::conn::on!($conn, |c| {
            let mut q = sqlx::query_as::<_, $row>(&stmt.sql);
            for a in &stmt.args {
                q = match a {
                    $crate::storage::statement::Arg::Int(i) => q.bind(*i),
                    $crate::storage::statement::Arg::Text(s) => q.bind(s.as_str()),
                    $crate::storage::statement::Arg::Time(t) => q.bind(*t),
                };
            }
            q.fetch_all(c).await
        })
    }};
}

pub(crate) use fetch_all;
