//! Keeping SQLite's write-ahead log short under a writer that never stops.
//!
//! The writer never checkpoints in its own commits (`wal_autocheckpoint` is off: a checkpoint
//! there would stall every change waiting behind it). A task on its own connection copies
//! committed frames back into the database file every [`WAL_CHECKPOINT`] (further apart where
//! the disk makes copies slow: [`COPY_SHARE`]), without blocking anyone (`PASSIVE`). That alone never lets the log start over while writes keep coming: SQLite
//! rewinds the log only when a write begins with every frame already copied, and under steady
//! load the writer has always added frames since the last copy. Measured before this module:
//! the log grew by about 70 MB a second under pre-tool-checks at 64 connections, 4 GB in a
//! minute, and stayed that size on disk.
//!
//! So when a copy finds the log past [`WAL_RESTART_FRAMES`], the task asks the writer
//! ([`Rewind`]) to copy what is left itself, between two groups, where no write is open: the
//! rest since the task's last copy, a short stall once per that many frames. The writer's next
//! group then begins with every frame copied, and SQLite writes the log from its start again
//! (unless a reader still reads an old snapshot; then the next time). `journal_size_limit`
//! cuts a file that grew past [`WAL_SIZE_LIMIT`] back to it when it starts over.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::{SqliteConnection, SqlitePool};

use super::error::Result;

/// How often committed frames are copied back into the database file. Often, so each copy
/// is small: every 500 ms, each copy (tens of MB under load) took one of the two cores for a
/// burst, and the requests caught in it were the slowest percent. Pre-tool-checks at 64
/// connections, alternating runs on fresh files: p99 9.2–10.6 ms every 500 ms, 5.7–5.9 ms
/// every 50 ms, 4.6–4.9 ms every 20 ms, at the same throughput (about 25,000/s).
pub const WAL_CHECKPOINT: Duration = Duration::from_millis(20);

/// A log this long (frames of a page each: 256 MiB with 4 KiB pages) is rewound by the writer.
/// Under the heaviest load measured here (proposal submissions at 64 connections, about 80 MB
/// of log a second) that is every three seconds or so.
pub const WAL_RESTART_FRAMES: i64 = 65_536;

/// What a log file longer than this is cut back to when it starts over
/// (`journal_size_limit`, bytes): twice the rewinding length, so a log rewound on time is
/// written over in place, never cut and grown again (cutting a file a few hundred MB long
/// stalled the writer for 300 ms here), while one that grew past it (a reader holding an old
/// snapshot delays the start over) gives the space back.
pub const WAL_SIZE_LIMIT: i64 = 512 * 1024 * 1024;

/// How the checkpoint task runs: every `every`, asking for a rewind past `restart_frames`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Checkpointing {
    pub every: Duration,
    pub restart_frames: i64,
}

impl Checkpointing {
    /// What a serving store runs: [`WAL_CHECKPOINT`] and [`WAL_RESTART_FRAMES`].
    pub const SERVING: Self = Self {
        every: WAL_CHECKPOINT,
        restart_frames: WAL_RESTART_FRAMES,
    };
}

/// The checkpoint task's request to the writer: copy the rest of the log between two groups.
#[derive(Debug, Default)]
pub struct Rewind {
    due: AtomicBool,
}

impl Rewind {
    /// Whether the writer should copy the rest of the log now (and so clears the request).
    pub(super) fn take(&self) -> bool {
        self.due.swap(false, Ordering::AcqRel)
    }

    pub(super) fn ask(&self) {
        self.due.store(true, Ordering::Release);
    }
}

/// Checkpoint passes the task runs back to back before it asks for a rewind, until one copies
/// fewer than [`CATCH_UP_FRAMES`]: each pass copies what came in during the one before, so
/// they shorten, and what the writer then copies, and the time it stalls, is only what came
/// in during the last short pass. (A pass copies everything committed when it began, unless a
/// reader holds an older snapshot; then it copies little, and the passes stop at once, since
/// the writer could not start the log over either.)
const CATCH_UP_PASSES: usize = 8;
/// See [`CATCH_UP_PASSES`].
const CATCH_UP_FRAMES: i64 = 256;

/// One `PASSIVE` checkpoint: answers the frames in the log as it began, and how many of them
/// are now copied (both `-1` if another checkpoint was running).
async fn checkpoint(conn: impl sqlx::SqliteExecutor<'_>) -> Result<(i64, i64)> {
    let (_busy, log, copied): (i64, i64, i64) = sqlx::query_as("pragma wal_checkpoint(passive)")
        .fetch_one(conn)
        .await?;
    Ok((log, copied))
}

/// The checkpoint task: copies committed frames into the database file every `every` or, on
/// a disk where copies take long, [`spacing`] apart; asks the writer to rewind a log longer than
/// `restart_frames` ([`Checkpointing::SERVING`] when serving). The first turn is one period
/// after the start.
pub(super) async fn checkpoint_task(pool: SqlitePool, rewind: Arc<Rewind>, how: Checkpointing) {
    let Checkpointing {
        every,
        restart_frames,
    } = how;
    let mut gap = every;
    loop {
        tokio::time::sleep(gap).await;
        let started = std::time::Instant::now();
        copy_and_ask(&pool, &rewind, restart_frames).await;
        let took = started.elapsed();
        gap = spacing(took, every);
        tracing::trace!(?took, next_in = ?gap, "WAL checkpoint");
    }
}

/// The most of the disk's time the copies may take: the next copy waits this many times as
/// long as the last took.
///
/// Each copy ends with two flushes (the log's, then the database file's), and the file's is of
/// pages scattered through it. Where a flush is cheap that costs little, and copying often keeps
/// each copy small (see [`WAL_CHECKPOINT`]). On a disk with few operations a second to spare,
/// the copies' writes queue ahead of the writer's commits: with writes capped at 9,000 a
/// second (a synchronous 4 KiB write then takes 0.32 ms), submissions at 64 connections ran
/// 3,000/s, their commits at p99 71 ms, with copies every 20 ms; spaced so, 5,600–6,000/s and
/// 4.9 ms (each copy took about 15 ms, so they ran about 150 ms apart). Pre-tool-checks' copies
/// take 2–3 ms: they still run every 20–40 ms.
pub const COPY_SHARE: u32 = 10;

/// The longest wait between copies, whatever the last took.
pub const LONGEST_GAP: Duration = Duration::from_secs(1);

/// How long after a copy that took `took` the next starts: [`COPY_SHARE`] times that, between
/// `every` and [`LONGEST_GAP`].
fn spacing(took: Duration, every: Duration) -> Duration {
    (took * COPY_SHARE).clamp(every, LONGEST_GAP.max(every))
}

/// One turn of the task: a checkpoint, and if the log was long, passes until it has caught up
/// and a request to rewind.
async fn copy_and_ask(pool: &SqlitePool, rewind: &Rewind, restart_frames: i64) {
    if let Err(e) = try_copy_and_ask(pool, rewind, restart_frames).await {
        tracing::warn!(error = %e, "WAL checkpoint failed");
    }
}

async fn try_copy_and_ask(pool: &SqlitePool, rewind: &Rewind, restart_frames: i64) -> Result<()> {
    let (log, mut copied) = checkpoint(pool).await?;
    if log <= restart_frames {
        return Ok(());
    }
    for _ in 0..CATCH_UP_PASSES {
        let (_, now) = checkpoint(pool).await?;
        let this_pass = now - copied;
        copied = now;
        if this_pass < CATCH_UP_FRAMES {
            break;
        }
    }
    rewind.ask();
    Ok(())
}

/// The writer's part, out of any transaction: copies what the task has not, so the next
/// group's write starts the log over. (If the task is copying at that moment, this copies
/// nothing and the next request tries again.)
pub(super) async fn rewind(conn: &mut SqliteConnection) -> Result<()> {
    let started = std::time::Instant::now();
    let (log, copied) = checkpoint(conn).await?;
    if log < 0 {
        tracing::debug!("WAL rewind skipped: the checkpoint task is copying");
    } else {
        tracing::debug!(log, copied, took = ?started.elapsed(), "WAL rewound");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
    use sqlx::{Connection, Executor};

    use super::*;

    fn options(dir: &tempfile::TempDir) -> SqliteConnectOptions {
        let url = format!("sqlite://{}", dir.path().join("wal.db").display());
        SqliteConnectOptions::from_str(&url)
            .expect("url")
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("wal_autocheckpoint", "0")
    }

    /// Frames in the log after `rounds` writes, each committed while a checkpoint on another
    /// connection copies what was committed before it (a writer that never pauses, in slow
    /// motion); with `rewinding`, the writer rewinds after each commit, as the serving writer
    /// does when the checkpoint task asks.
    async fn frames_after(rounds: usize, rewinding: bool) -> i64 {
        let dir = tempfile::tempdir().expect("dir");
        let mut writer = SqliteConnection::connect_with(&options(&dir))
            .await
            .expect("writer");
        let checkpointer = SqlitePool::connect_with(options(&dir))
            .await
            .expect("checkpointer");
        writer
            .execute("create table t (x blob)")
            .await
            .expect("table");
        let row = vec![7u8; 3000];
        for _ in 0..rounds {
            writer.execute("begin immediate").await.expect("begin");
            for _ in 0..2 {
                sqlx::query("insert into t values ($1)")
                    .bind(&row)
                    .execute(&mut writer)
                    .await
                    .expect("insert");
                checkpoint(&checkpointer).await.expect("checkpoint");
            }
            writer.execute("commit").await.expect("commit");
            if rewinding {
                rewind(&mut writer).await.expect("rewind");
            }
        }
        checkpoint(&checkpointer).await.expect("log").0
    }

    #[test]
    fn copies_that_take_long_are_spaced_out() {
        let every = WAL_CHECKPOINT;
        let ms = Duration::from_millis;
        // Quick copies keep the period.
        assert_eq!(spacing(ms(1), every), every);
        // A 15 ms copy waits ten times as long before the next.
        assert_eq!(spacing(ms(15), every), ms(150));
        // Never more than a second, whatever the disk.
        assert_eq!(spacing(ms(900), every), LONGEST_GAP);
        // A period longer than that (tests that never copy on their own) stays.
        let hour = Duration::from_secs(3600);
        assert_eq!(spacing(ms(900), hour), hour);
    }

    #[tokio::test]
    async fn a_writer_that_rewinds_keeps_the_log_short() {
        // Without rewinding, no write ever begins with every frame copied: the log only grows.
        assert!(frames_after(60, false).await >= 120);
        // Rewound after each commit, the next write starts it over.
        assert!(frames_after(60, true).await < 40);
    }

    #[tokio::test]
    async fn the_task_asks_for_a_rewind_once_the_log_is_long() {
        let dir = tempfile::tempdir().expect("dir");
        let pool = SqlitePool::connect_with(options(&dir)).await.expect("pool");
        pool.execute("create table t (x blob)")
            .await
            .expect("table");
        let rewind = Rewind::default();
        copy_and_ask(&pool, &rewind, 4).await;
        assert!(!rewind.take(), "a short log is left to the task");
        for _ in 0..8 {
            pool.execute("insert into t values (zeroblob(3000))")
                .await
                .expect("insert");
        }
        copy_and_ask(&pool, &rewind, 4).await;
        assert!(rewind.take(), "a log of more than 4 frames is rewound");
        assert!(!rewind.take(), "once");
    }
}
