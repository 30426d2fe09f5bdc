//! The storage layer's one error type, its result alias, and the parsing of stored enum
//! values: the leaf every statement file names.

/// The storage layer's error.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The row does not exist.
    #[error("not found")]
    NotFound,
    /// A stored value is not one Countersign writes (corruption or a newer schema).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// SQLite failed on a path that steps its statements itself (rusqlite, on the handle sqlx
    /// lends: the trail's appends and walks, the direct reads).
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// Migrations failed.
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The connecting role may not do what was asked (migrate a pending schema, grant to a
    /// role that cannot be a serving role); says what to do instead.
    #[error("{0}")]
    Privileges(String),
    /// The write batch this change was part of could not be committed.
    #[error("write failed: {0}")]
    Batch(String),
    /// The write batch this change was part of could not be committed: the database did not
    /// answer.
    #[error("write failed, the database is not answering: {0}")]
    Unavailable(String),
    /// An audit event, or a hash the trail records, has no canonical form: nothing of the
    /// change is written (a trail row never vouches for a default in its place).
    #[error(transparent)]
    Uncanonical(#[from] crate::domain::contract::canonical::Uncanonical),
    /// The writer's thread or runtime could not be started (the system's limits).
    #[error("could not start the writer: {0}")]
    Start(#[from] std::io::Error),
}

impl StorageError {
    /// Whether the database is not answering (down, restarting, unreachable, or every
    /// connection busy past the pool's wait), rather than refusing this request: the caller
    /// says `503`, retry later, instead of `500`.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StorageError::Database(e) => match e {
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed => true,
                sqlx::Error::Database(d) => out_of_service(d.as_ref()),
                _ => false,
            },
            StorageError::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::SystemIoFailure)
            ),
            StorageError::Unavailable(_) => true,
            _ => false,
        }
    }
}

/// Whether a database's own error says it cannot serve now, not that the request is wrong:
/// SQLite's disk full (`SQLITE_FULL`) or I/O failure (`SQLITE_IOERR` and its extended codes);
/// PostgreSQL's connection exceptions (`08…`), its shutdowns (`57P01` admin, `57P02` crash,
/// `57P03` cannot connect now) and insufficient resources (`53…`: disk full, out of memory,
/// too many connections).
fn out_of_service(d: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    const SQLITE_IOERR: i32 = 10;
    const SQLITE_FULL: i32 = 13;
    let Some(code) = d.code() else { return false };
    match d.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
        Some(_) => code
            .parse::<i32>()
            .is_ok_and(|c| matches!(c & 0xff, SQLITE_IOERR | SQLITE_FULL)),
        None => code.starts_with("08") || code.starts_with("57P") || code.starts_with("53"),
    }
}

/// Result alias for this layer.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Parses a stored enum value; an unknown one is corruption, never a default.
pub(crate) fn parse<T>(what: &str, raw: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(raw).ok_or_else(|| StorageError::Corrupt(format!("unknown {what} `{raw}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_that_does_not_answer_is_unavailable_and_a_refusal_is_not() {
        let down = [
            StorageError::Database(sqlx::Error::PoolTimedOut),
            StorageError::Database(sqlx::Error::Io(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused,
            ))),
            StorageError::Unavailable("connection reset".into()),
        ];
        assert!(down.iter().all(StorageError::is_unavailable));
        let refused = [
            StorageError::Database(sqlx::Error::RowNotFound),
            StorageError::Batch("constraint".into()),
            StorageError::NotFound,
        ];
        assert!(!refused.iter().any(StorageError::is_unavailable));
    }

    #[tokio::test]
    async fn a_full_sqlite_database_is_unavailable_and_a_broken_constraint_is_not() {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .expect("memory");
        for sql in [
            "create table t (k integer primary key, v text not null)",
            "pragma max_page_count = 8",
        ] {
            sqlx::query(sql).execute(&mut c).await.expect(sql);
        }
        let mut full = None;
        for k in 0..1_000 {
            let insert = sqlx::query("insert into t values ($1, zeroblob(2000))").bind(k);
            if let Err(e) = insert.execute(&mut c).await {
                full = Some(StorageError::Database(e));
                break;
            }
        }
        let full = full.expect("eight pages fill up");
        assert!(full.is_unavailable(), "{full:?}");
        let broken = sqlx::query("insert into t values (0, null)")
            .execute(&mut c)
            .await
            .map_err(StorageError::Database);
        assert!(
            matches!(&broken, Err(e) if !e.is_unavailable()),
            "{broken:?}"
        );
    }

    #[test]
    fn sqlite_stepped_in_place_is_unavailable_only_when_its_disk_is() {
        use rusqlite::ffi;
        let failure =
            |code| StorageError::from(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None));
        assert!(failure(ffi::SQLITE_FULL).is_unavailable());
        assert!(failure(ffi::SQLITE_IOERR_WRITE).is_unavailable());
        assert!(!failure(ffi::SQLITE_CONSTRAINT_TRIGGER).is_unavailable());
        assert!(!failure(ffi::SQLITE_CORRUPT).is_unavailable());
    }
}
