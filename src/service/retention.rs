//! Pruning operational rows past their retention (see [`crate::domain::retention`]): one batch
//! of one kind per call, each its own short write, so the writer serves agents between
//! batches. The background task in [`crate::startup`] calls it until a batch comes back short.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use crate::domain::retention::{BATCH, Prunable};
use crate::storage::retention;

use super::error::ServiceError;
use super::services::Services;

impl Services {
    /// Deletes up to [`BATCH`] rows of `kind` older than `keep`; how many. Rows still pending
    /// and alerts of proposals still waiting are kept whatever their age.
    pub async fn prune(
        &self,
        who: &Principal,
        kind: Prunable,
        keep: std::time::Duration,
    ) -> Result<u64, ServiceError> {
        self.authorize(who, UseCase::Prune)?;
        let now = self.now();
        let Some(before) = (time::Duration::try_from(keep).ok()).and_then(|k| now.checked_sub(k))
        else {
            return Ok(0); // longer than time goes back: nothing is that old
        };
        // Repeatable (a delete of what is old when it runs, nothing else): a change that may
        // not run again would make the group it joins run each change under a savepoint and
        // none of the others' statements together (under agents' load, a slower group each
        // batch).
        let n = self
            .store()
            .write_repeatable(move |tx| {
                Box::pin(async move {
                    let conn = tx.conn();
                    match kind {
                        Prunable::Notifications => {
                            retention::prune_notifications(conn, before, BATCH).await
                        }
                        Prunable::WebhookDeliveries => {
                            retention::prune_webhook_deliveries(conn, before, BATCH).await
                        }
                        Prunable::Alerts => retention::prune_alerts(conn, before, BATCH).await,
                        Prunable::Sessions => retention::prune_sessions(conn, before, BATCH).await,
                    }
                })
            })
            .await?;
        self.metrics().pruned(kind.as_str(), n);
        Ok(n)
    }
}
