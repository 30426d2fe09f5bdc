//! All of Countersign's SQL, on SQLite (the embedded default) and PostgreSQL (for several
//! instances on one database): connection plumbing in [`db`], then one file per table group,
//! one statement per function, named after what it does. No rules live here: what a change
//! means is decided in `service/` and `domain/`; storage only reads and writes rows.
//!
//! Every state change runs in one [`Tx`] with the audit events it records and, where it
//! queues work, its command row: they commit together or not at all. Conditional updates
//! (`where status = 'pending'`) make concurrent decisions and leases safe on both backends.
//!
//! Errors: [`StorageError`] is this layer's only error type; `Database` is an internal
//! failure, logged by the caller and never echoed.

pub mod accounts;
pub mod alerts;
pub mod audit;
pub mod audit_query;
pub mod audit_walk;
pub mod changes;
pub mod charts;
pub mod commands;
pub mod db;
pub mod direct;
pub mod history;
pub mod notifications;
pub mod paused;
pub mod proposals;
pub mod queue;
pub mod schema;
pub mod slack;
pub(crate) mod statement;
pub mod throttle;
pub mod wal;
pub mod webhooks;
pub mod writer;

pub use audit::AuditRecord;
pub use db::{Backend, BoxFuture, Conn, ReadConn, Snapshot, Store, connect};
pub use direct::PointRead;
pub use writer::{Tx, Upfront};

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
