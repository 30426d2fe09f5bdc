//! All of Countersign's SQL, on SQLite (the embedded default) and PostgreSQL (for several
//! instances on one database): connection plumbing in [`conn`] and [`db`], then one file per
//! table group, one statement per function, named after what it does. No rules live here: what a change
//! means is decided in `service/` and `domain/`; storage only reads and writes rows.
//!
//! Every state change runs in one [`Tx`] with the audit events it records and, where it
//! queues work, its command row: they commit together or not at all. Conditional updates
//! (`where status = 'pending'`) make concurrent decisions and leases safe on both backends.
//!
//! Errors: [`StorageError`] is this layer's only error type; `Database` is an internal
//! failure, logged by the caller and never echoed.
//!
//! Layers: [`error`] and [`conn`] name nothing above them; each statement file names those
//! (and leaf files of shared types such as [`status_change`]); [`writer`] runs statements;
//! [`db`] hands changes to the writer. No file names one above it, and this file only
//! declares the modules and re-exports for callers outside storage: a file in here names the
//! file that defines an item, never these re-exports.

pub mod accounts;
pub mod agent_stream;
pub mod alerts;
pub mod audit;
pub mod audit_query;
pub mod audit_walk;
pub mod changes;
pub mod charts;
mod chunk;
pub mod commands;
pub mod conn;
pub mod db;
pub mod direct;
pub mod error;
pub mod gateway;
pub mod grants;
pub mod history;
pub(crate) mod in_order;
pub mod insights;
pub mod notifications;
pub mod passkeys;
pub mod paused;
pub mod policies;
pub mod proposals;
pub mod queue;
pub mod retention;
pub mod schema;
pub mod slack;
pub(crate) mod statement;
pub mod status_change;
pub mod throttle;
pub mod wal;
pub mod webhooks;
pub mod writer;

pub use audit::AuditRecord;
pub use conn::{Backend, BoxFuture, Conn, ReadConn, Snapshot};
pub use db::{Store, connect};
pub use direct::PointRead;
pub use error::{Result, StorageError};
pub use writer::tx::Tx;
pub use writer::upfront::Upfront;
