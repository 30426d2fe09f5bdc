//! The compliance officer's use cases over the trail: verify the chain in the database
//! (against every stored signed checkpoint and, optionally, one kept elsewhere), sign the head,
//! and export a selection as a bundle that verifies offline.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::path::Path;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::Actor;
use crate::audit::bundle::{self, BundleError, Manifest};
use crate::audit::chain::{ChainError, GENESIS, Head, RowRef, Uncanonical, Verifier};
use crate::audit::checkpoint::{Checkpoint, CheckpointKey, Trust};
use crate::storage::audit_query::Selection;
use crate::storage::{Snapshot, StorageError, audit, audit_walk};

/// Rows read per page while walking the chain.
const PAGE: i64 = 10_000;

/// A chain that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Chained rows checked.
    pub count: i64,
    /// The head.
    pub head: Head,
    /// The first chained seq (rows before it predate the chain).
    pub chained_from: i64,
    /// Signed checkpoints checked on the way.
    pub checkpoints: usize,
}

/// Why verification failed.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The chain does not hold; names the first bad seq.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// A checkpoint's signature does not hold, or it is signed by another key than the kept one.
    #[error("seq {0}: checkpoint signature does not hold (or was made with another key)")]
    BadCheckpoint(i64),
    /// A checkpoint whose signature holds under a key not trusted.
    #[error("seq {0}: checkpoint signed with a key that is not trusted (re-signed?)")]
    UntrustedCheckpoint(i64),
    /// Keys were given to trust, and no checkpoint is signed with any of them.
    #[error("no checkpoint signed with a trusted key: nothing vouches for the chain")]
    NoTrustedCheckpoint,
    /// The database's head record disagrees with the last row.
    #[error("seq {0}: the chain head record does not match the last row")]
    HeadMismatch(i64),
    /// Reading failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<StorageError> for VerifyError {
    fn from(e: StorageError) -> Self {
        VerifyError::Service(e.into())
    }
}

impl Services {
    /// Verifies the whole chain in the database, on one snapshot: the head record, the
    /// checkpoints and every row as of one moment, however much is appended meanwhile. Rows
    /// are read a page at a time.
    pub async fn verify_trail(
        &self,
        who: &Principal,
        kept: Option<&Checkpoint>,
    ) -> Result<Verified, VerifyError> {
        self.authorize(who, UseCase::VerifyTrail)?;
        let mut snapshot = self.store().snapshot().await?;
        let verified = verify_snapshot(&mut snapshot, kept, self.checkpoint_trust()).await;
        snapshot.end().await?;
        verified
    }

    /// Signs the current head if it moved since the last checkpoint; returns the new one.
    pub async fn sign_checkpoint(
        &self,
        who: &Principal,
        key: &CheckpointKey,
    ) -> Result<Option<Checkpoint>, ServiceError> {
        self.authorize(who, UseCase::VerifyTrail)?;
        let mut read = self.read().await?;
        let (head, _) = audit::head(read.conn()).await?;
        let last = audit::latest_checkpoint(read.conn()).await?;
        drop(read);
        if head.seq == 0 || last.is_some_and(|c| c.seq >= head.seq) {
            return Ok(None);
        }
        let now = self.now();
        let at = (now.format(&Rfc3339))
            .map_err(|e| Uncanonical(format!("checkpoint time {now}: {e}")))?;
        let cp = key.sign(&head, &at)?;
        let stored = cp.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    audit::insert_checkpoint(tx.conn(), &stored).await?;
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(Some(cp))
    }

    /// The latest signed checkpoint, and how many events were written since.
    pub async fn latest_checkpoint(&self) -> Result<(Option<Checkpoint>, Head), ServiceError> {
        let mut read = self.read().await?;
        let (head, _) = audit::head(read.conn()).await?;
        Ok((audit::latest_checkpoint(read.conn()).await?, head))
    }

    /// Exports the chained rows written between `from` and `to` (inclusive, either open) into
    /// a bundle in `dir`: one contiguous stretch of the chain (see [`Services::export_selection`]
    /// for any other selection). The export is itself recorded (`audit.exported`, by `actor`),
    /// after the bundle is written: the bundle never contains its own export event.
    pub async fn export_trail(
        &self,
        who: &Principal,
        dir: &Path,
        from: Option<OffsetDateTime>,
        to: Option<OffsetDateTime>,
    ) -> Result<Manifest, BundleError> {
        let sel = Selection {
            from,
            // Trail times are whole microseconds: at or before `to` is before `to` + 1 µs.
            until: to.map(|t| t + time::Duration::MICROSECOND),
            ..Selection::default()
        };
        let manifest = self.export_selection(who, dir, &sel).await?;
        self.record_export(&Actor::of(who), &sel, &manifest, "directory")
            .await
            .map_err(|e| BundleError::Malformed(format!("recording the export: {e}")))?;
        Ok(manifest)
    }
}

/// Walks the chain on `snapshot`: checkpoints first, then every row, then the head record.
async fn verify_snapshot(
    snapshot: &mut Snapshot,
    kept: Option<&Checkpoint>,
    trust: &Trust,
) -> Result<Verified, VerifyError> {
    let (recorded, chained_from) = audit::head(snapshot.conn()).await?;
    let stored = audit::checkpoints(snapshot.conn()).await?;
    let start = Head {
        seq: chained_from - 1,
        hash: GENESIS.to_owned(),
    };
    let mut verifier = Verifier::resume(start.clone(), checkpoint_heads(&stored, kept, trust)?);
    let mut visit = |row: RowRef<'_>| verifier.push_stored(&row).map_err(VerifyError::Chain);
    let mut after = start.seq;
    while let Some(last) = audit_walk::walk_page(snapshot, after, PAGE, &mut visit).await? {
        after = last;
    }
    let head = verifier.finish()?;
    if head != recorded {
        return Err(VerifyError::HeadMismatch(recorded.seq.max(head.seq)));
    }
    Ok(Verified {
        count: head.seq - start.seq,
        head,
        chained_from,
        checkpoints: stored.len() + usize::from(kept.is_some()),
    })
}

/// The heads the stored checkpoints and the kept one vouch for, once their signatures hold
/// and every one is signed with a trusted key ([`Trust::admits`]). A checkpoint under any
/// other key is refused: the database's owner could have made it.
fn checkpoint_heads(
    stored: &[Checkpoint],
    kept: Option<&Checkpoint>,
    trust: &Trust,
) -> Result<Vec<Head>, VerifyError> {
    let heads = stored
        .iter()
        .chain(kept)
        .map(|cp| {
            if !cp.signature_holds() {
                return Err(VerifyError::BadCheckpoint(cp.seq));
            }
            if !trust.admits(cp, kept) {
                return Err(VerifyError::UntrustedCheckpoint(cp.seq));
            }
            Ok(cp.head())
        })
        .collect::<Result<Vec<_>, _>>()?;
    if trust.require_one && heads.is_empty() {
        return Err(VerifyError::NoTrustedCheckpoint);
    }
    Ok(heads)
}

/// Verifies an export bundle in `dir` (no database needed), every checkpoint signed with a
/// key `trust` admits.
pub fn verify_bundle(
    dir: &Path,
    kept: Option<&Checkpoint>,
    trust: &Trust,
) -> Result<(Manifest, Head), BundleError> {
    bundle::verify_trusting(dir, kept, trust)
}
