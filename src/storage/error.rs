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
                // PostgreSQL's connection exceptions (08…) and its shutdowns (57P01 admin
                // shutdown, 57P02 crash shutdown, 57P03 cannot connect now).
                sqlx::Error::Database(d) => d
                    .code()
                    .is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
                _ => false,
            },
            StorageError::Unavailable(_) => true,
            _ => false,
        }
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
}
