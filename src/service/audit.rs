//! The compliance officer's use cases over the trail: verify the chain in the database
//! (against every stored signed checkpoint and, optionally, one kept elsewhere), sign the head,
//! and export a selection as a bundle that verifies offline.

use std::path::Path;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{ServiceError, Services};
use crate::audit::bundle::{self, BundleError, BundleWriter, Manifest};
use crate::audit::chain::{ChainError, FORMAT, GENESIS, Head, Verifier};
use crate::audit::checkpoint::{Checkpoint, CheckpointKey};
use crate::storage::audit;

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
    /// The database's head record disagrees with the last row.
    #[error("seq {0}: the chain head record does not match the last row")]
    HeadMismatch(i64),
    /// Reading failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl Services {
    /// Verifies the whole chain in the database.
    pub async fn verify_trail(&self, kept: Option<&Checkpoint>) -> Result<Verified, VerifyError> {
        let mut read = self.read().await?;
        let (recorded, chained_from) =
            audit::head(read.conn()).await.map_err(ServiceError::from)?;
        let stored = audit::checkpoints(read.conn())
            .await
            .map_err(ServiceError::from)?;
        let key = kept.map(|k| k.public_key.as_str());
        let mut expected = Vec::new();
        for cp in stored.iter().chain(kept) {
            if !cp.signature_holds() || key.is_some_and(|k| k != cp.public_key) {
                return Err(VerifyError::BadCheckpoint(cp.seq));
            }
            expected.push(cp.head());
        }
        let start = Head {
            seq: chained_from - 1,
            hash: GENESIS.to_owned(),
        };
        let mut verifier = Verifier::resume(start.clone(), expected);
        let mut after = start.seq;
        loop {
            let page = audit::chain_page(read.conn(), after, PAGE)
                .await
                .map_err(ServiceError::from)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for row in &page {
                verifier.push(row)?;
            }
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

    /// Signs the current head if it moved since the last checkpoint; returns the new one.
    pub async fn sign_checkpoint(
        &self,
        key: &CheckpointKey,
    ) -> Result<Option<Checkpoint>, ServiceError> {
        let mut read = self.read().await?;
        let (head, _) = audit::head(read.conn()).await?;
        let last = audit::latest_checkpoint(read.conn()).await?;
        drop(read);
        if head.seq == 0 || last.is_some_and(|c| c.seq >= head.seq) {
            return Ok(None);
        }
        let at = self.now().format(&Rfc3339).unwrap_or_default();
        let cp = key.sign(&head, &at);
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
    /// a bundle in `dir`.
    pub async fn export_trail(
        &self,
        dir: &Path,
        from: Option<OffsetDateTime>,
        to: Option<OffsetDateTime>,
    ) -> Result<Manifest, BundleError> {
        let service = |e: ServiceError| BundleError::Malformed(e.to_string());
        let mut read = self.read().await.map_err(service)?;
        let (_, chained_from) = audit::head(read.conn())
            .await
            .map_err(|e| service(e.into()))?;
        let mut writer = BundleWriter::create(dir)?;
        let (mut first, mut last, mut count, mut previous) = (0, 0, 0, None::<String>);
        let mut after = chained_from - 1;
        let mut prev_hash = GENESIS.to_owned();
        loop {
            let page = audit::chain_page(read.conn(), after, PAGE)
                .await
                .map_err(|e| service(e.into()))?;
            let Some(tail) = page.last() else { break };
            after = tail.seq;
            for row in &page {
                let in_range = from.is_none_or(|f| row.at >= f) && to.is_none_or(|t| row.at <= t);
                if in_range {
                    // A bundle is one contiguous stretch of the chain.
                    if count > 0 && row.seq != last + 1 {
                        break;
                    }
                    if count == 0 {
                        first = row.seq;
                        previous = Some(prev_hash.clone());
                    }
                    writer.push(row)?;
                    last = row.seq;
                    count += 1;
                }
                prev_hash = row.hash.clone();
            }
        }
        let checkpoints = audit::checkpoints(read.conn())
            .await
            .map_err(|e| service(e.into()))?;
        let checkpoint = checkpoints
            .into_iter()
            .rfind(|c| count > 0 && c.seq >= first && c.seq <= last);
        let manifest = Manifest {
            format: FORMAT.to_owned(),
            count,
            first_seq: first,
            last_seq: last,
            previous_hash: previous.unwrap_or_else(|| GENESIS.to_owned()),
            files: Default::default(),
            public_key: checkpoint.as_ref().map(|c| c.public_key.clone()),
            checkpoint,
            selection: serde_json::json!({
                "from": from.and_then(|t| t.format(&Rfc3339).ok()),
                "to": to.and_then(|t| t.format(&Rfc3339).ok()),
            }),
        };
        writer.finish(dir, manifest)
    }
}

/// Verifies an export bundle in `dir` (no database needed).
pub fn verify_bundle(
    dir: &Path,
    kept: Option<&Checkpoint>,
) -> Result<(Manifest, Head), BundleError> {
    bundle::verify(dir, kept)
}
