//! Exporting a selection of the trail as a bundle that verifies offline
//! ([`crate::audit::bundle`]), and recording that it left the system (`audit.exported`).
//!
//! A time range is one stretch of the chain; a selection by kind, actor or facet has gaps, so
//! each of its rows is written with the hash of the row before it in the chain, and the
//! manifest says `contiguous: false`.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::error::ServiceError;
use super::services::Services;
use crate::audit::bundle::{BundleError, BundleWriter, Manifest};
use crate::audit::chain::{FORMAT, GENESIS};
use crate::audit::{Actor, AuditEvent, AuditExported};
use crate::storage::audit;
use crate::storage::audit_query::{self, Selection, TrailEvent};

/// Rows read per statement while exporting.
const EXPORT_PAGE: i64 = 5_000;

impl From<ServiceError> for BundleError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Denied(denied) => BundleError::Denied(denied),
            ServiceError::Storage(e) => e.into(),
            other => BundleError::Read(other.to_string()),
        }
    }
}

impl From<crate::storage::StorageError> for BundleError {
    fn from(e: crate::storage::StorageError) -> Self {
        if e.is_unavailable() {
            BundleError::Unavailable(e.to_string())
        } else {
            BundleError::Read(e.to_string())
        }
    }
}

/// What the rows written so far add up to.
#[derive(Default)]
struct Written {
    count: i64,
    first: i64,
    last: i64,
    previous_hash: Option<String>,
    gaps: bool,
}

impl Written {
    /// Writes one row; with its predecessor's hash when the selection has gaps or the row
    /// follows one.
    fn push(
        &mut self,
        writer: &mut BundleWriter,
        row: &TrailEvent,
        linked: bool,
    ) -> Result<(), BundleError> {
        let seq = row.event.seq;
        let previous = row.prev_hash.as_deref().unwrap_or(GENESIS);
        let gap = self.count > 0 && seq != self.last + 1;
        self.gaps |= gap;
        writer.push_linked(&row.event, (linked || gap).then_some(previous))?;
        if self.count == 0 {
            self.first = seq;
            self.previous_hash = Some(previous.to_owned());
        }
        self.last = seq;
        self.count += 1;
        Ok(())
    }
}

impl Services {
    /// Exports the chained rows `sel` selects into a bundle in `dir`, oldest first.
    pub async fn export_selection(
        &self,
        who: &Principal,
        dir: &Path,
        sel: &Selection,
    ) -> Result<Manifest, BundleError> {
        self.authorize(who, UseCase::ExportTrail)?;
        let mut range = self.selection_bounds(sel).await?;
        let mut read = self.read().await?;
        let (_, chained_from) = audit::head(read.conn()).await?;
        // Rows written before the chain existed carry no hash to check.
        range.after = range.after.max(chained_from - 1);
        let mut writer = BundleWriter::create(dir)?;
        let linked = sel.filters_rows();
        let mut written = Written::default();
        loop {
            let page = audit_query::export_page(read.conn(), sel, range, EXPORT_PAGE).await?;
            let Some(tail) = page.last() else { break };
            range.after = tail.event.seq;
            for row in page.iter().filter(|r| sel.covers_time(r.event.at)) {
                written.push(&mut writer, row, linked)?;
            }
        }
        let checkpoint = audit::checkpoints(read.conn())
            .await?
            .into_iter()
            .rfind(|c| written.count > 0 && c.seq >= written.first && c.seq <= written.last);
        let manifest = Manifest {
            format: FORMAT.to_owned(),
            count: written.count,
            first_seq: written.first,
            last_seq: written.last,
            previous_hash: written.previous_hash.unwrap_or_else(|| GENESIS.to_owned()),
            files: Default::default(),
            public_key: checkpoint.as_ref().map(|c| c.public_key.clone()),
            checkpoint,
            selection: selection_json(sel),
            contiguous: !written.gaps,
        };
        writer.finish(dir, manifest)
    }

    /// Records that `actor` exported `sel` (`format`: `zip` or `directory`) as `manifest`.
    pub async fn record_export(
        &self,
        actor: &Actor,
        sel: &Selection,
        manifest: &Manifest,
        format: &'static str,
    ) -> Result<(), ServiceError> {
        let selection: BTreeMap<String, String> = sel
            .as_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let event = AuditEvent::AuditExported(AuditExported {
            selection,
            count: manifest.count,
            first_seq: manifest.first_seq,
            last_seq: manifest.last_seq,
            format,
        });
        self.record_security(actor, event).await
    }
}

/// The selection as the manifest states it: the filters given, by name.
fn selection_json(sel: &Selection) -> Value {
    let map: Map<String, Value> = sel
        .as_pairs()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect();
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageError;

    #[test]
    fn a_database_that_is_not_answering_is_told_apart_from_a_failed_read() {
        let down = StorageError::Database(sqlx::Error::PoolTimedOut);
        assert!(matches!(
            BundleError::from(ServiceError::Storage(down)),
            BundleError::Unavailable(_)
        ));
        let corrupt = StorageError::Corrupt("unknown status `x`".into());
        assert!(matches!(
            BundleError::from(ServiceError::Storage(corrupt)),
            BundleError::Read(_)
        ));
    }
}
