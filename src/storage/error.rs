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
    /// An audit event, or a hash the trail records, has no canonical form: nothing of the
    /// change is written (a trail row never vouches for a default in its place).
    #[error(transparent)]
    Uncanonical(#[from] crate::domain::contract::canonical::Uncanonical),
    /// The writer's thread or runtime could not be started (the system's limits).
    #[error("could not start the writer: {0}")]
    Start(#[from] std::io::Error),
}

/// Result alias for this layer.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Parses a stored enum value; an unknown one is corruption, never a default.
pub(crate) fn parse<T>(what: &str, raw: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(raw).ok_or_else(|| StorageError::Corrupt(format!("unknown {what} `{raw}`")))
}
