//! Server functions of the compliance pages: thin adapters to the [`crate::ports::Ledger`].
//! A role that may not audit gets `Forbidden`, and the refusal is recorded in the trail
//! (`access.denied`) through the desk.

use leptos::prelude::*;

use crate::dto::{AppError, AuditPage, AuditQuery, ChartsView, TimelineView};

#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;

    use crate::dto::{AppError, Page, SecurityEvent, Viewer};
    use crate::ports::DynLedger;

    pub fn ledger() -> Result<DynLedger, AppError> {
        use_context::<DynLedger>().ok_or(AppError::Internal)
    }

    /// Passes `result` on; a `Forbidden` one is first recorded as `access.denied` to `page`.
    pub async fn denial_recorded<T>(
        viewer: &Viewer,
        page: Page,
        result: Result<T, AppError>,
    ) -> Result<T, AppError> {
        if let Err(AppError::Forbidden(_)) = &result {
            super::super::ssr::desk()?
                .security(Some(viewer), SecurityEvent::AccessDenied(page))
                .await?;
        }
        result
    }
}

/// A page of the audit trail under the filters and cursor of `query`.
#[server(prefix = "/fn", endpoint = "get_audit_trail")]
pub async fn get_audit_trail(#[server(default)] query: AuditQuery) -> Result<AuditPage, AppError> {
    let viewer = super::ssr::viewer().await?;
    let page = ssr::ledger()?.trail(&viewer, &query).await;
    ssr::denial_recorded(&viewer, crate::dto::Page::Audit, page).await
}

/// A proposal's audit timeline.
#[server(prefix = "/fn", endpoint = "get_audit_timeline")]
pub async fn get_audit_timeline(
    id: String,
    before: Option<String>,
    after: Option<String>,
) -> Result<TimelineView, AppError> {
    let viewer = super::ssr::viewer().await?;
    let timeline = ssr::ledger()?
        .timeline(&viewer, &id, before.as_deref(), after.as_deref())
        .await;
    ssr::denial_recorded(&viewer, crate::dto::Page::AuditTimeline, timeline).await
}

/// The charts' numbers.
#[server(prefix = "/fn", endpoint = "get_audit_charts")]
pub async fn get_audit_charts() -> Result<ChartsView, AppError> {
    let viewer = super::ssr::viewer().await?;
    let charts = ssr::ledger()?.charts(&viewer).await;
    ssr::denial_recorded(&viewer, crate::dto::Page::AuditCharts, charts).await
}

/// The decision insights over the last `days` days (default 30).
#[server(prefix = "/fn", endpoint = "get_insights")]
pub async fn get_insights(days: Option<i64>) -> Result<crate::dto::InsightsView, AppError> {
    let viewer = super::ssr::viewer().await?;
    let insights = ssr::ledger()?.insights(&viewer, days.unwrap_or(30)).await;
    ssr::denial_recorded(&viewer, crate::dto::Page::Insights, insights).await
}

/// Verifies the chain now, then shows the trail page with the result.
#[server(prefix = "/fn", endpoint = "verify_audit_trail")]
pub async fn verify_audit_trail(csrf_token: String) -> Result<(), AppError> {
    use crate::dto::{Form, Notice};

    let viewer = match super::ssr::viewer().await {
        Ok(v) => v,
        Err(AppError::Unauthenticated) => {
            super::ssr::redirect("/login");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if !super::ssr::csrf_ok(&csrf_token, Form::Verify).await? {
        super::ssr::redirect(&format!("/audit?error={}", Notice::Csrf.code()));
        return Ok(());
    }
    let verified = ssr::ledger()?.verify(&viewer).await;
    match ssr::denial_recorded(&viewer, crate::dto::Page::AuditVerify, verified).await {
        Ok(()) | Err(AppError::Forbidden(_)) => super::ssr::redirect("/audit"),
        Err(e) => return Err(e),
    }
    Ok(())
}
