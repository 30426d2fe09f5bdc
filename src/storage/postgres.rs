//! PostgreSQL, for deployments that outgrow one machine: several Countersign instances can
//! share one database. The queue head is claimed with `for update skip locked`, so instances
//! never lease the same command.

use std::str::FromStr;

use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use crate::auth::session::AnySessionStore;

/// The PostgreSQL store.
#[derive(Clone)]
pub struct PgStore {
    write: PgPool,
    read: PgPool,
}

impl PgStore {
    /// Connects to `url`, creating the database if it is missing, and migrates it.
    pub async fn connect(url: &str) -> Result<(Self, AnySessionStore)> {
        if !Postgres::database_exists(url).await? {
            // Two instances starting at once may race here; the loser finds it created.
            if let Err(e) = Postgres::create_database(url).await
                && !Postgres::database_exists(url).await?
            {
                return Err(e.into());
            }
        }
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        let sessions = tower_sessions_sqlx_store::PostgresStore::new(pool.clone());
        sessions.migrate().await?;
        Ok((
            Self {
                write: pool.clone(),
                read: pool,
            },
            AnySessionStore::Postgres(sessions),
        ))
    }
}

crate::storage::sql::impl_store!(
    PgStore,
    Postgres,
    backend = Backend::Postgres,
    expired = "lease_expires_at < $4",
    due = "expires_at <= $1",
    live = "(expires_at is null or expires_at > $1)",
    contains = "strpos",
    lock = "for update skip locked"
);
