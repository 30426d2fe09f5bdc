//! `POST /audit/export.zip` (the `/audit` page's download form: its CSRF token and the
//! selection's filters): the compliance officer's download of the current selection as one
//! archive (`events.jsonl`, `events.csv`, `manifest.json`) that verifies offline with
//! `countersign audit verify --bundle`. A plain route rather than a server function, so the
//! browser receives a file. It checks the session, the CSRF token and the role like the pages'
//! forms do; a refusal and every export are recorded in the trail.
//!
//! No GET changes state, and an export is recorded: `GET /audit/export.zip?<filters>` (an old
//! bookmark) exports and records nothing, and answers with the trail page of the same filters,
//! whose form downloads.

use crate::domain::principal::Principal;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use app::dto::{AppError, AuditQuery, Form as FormName, Notice, Page, SecurityEvent, Viewer};
use app::ports::{DynDesk, SessionHandle};
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Form, Router};
use serde::Deserialize;

use super::filters::selection;
use super::ledger::may_audit;
use crate::audit::Actor;
use crate::audit::bundle::{self, Manifest};
use crate::service::Services;

/// What the download needs.
#[derive(Clone)]
struct ExportState {
    services: Services,
    desk: DynDesk,
}

/// The download form as posted: the session's CSRF token and the selection's filters.
#[derive(Debug, Deserialize)]
struct ExportForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(flatten)]
    query: AuditQuery,
}

/// The download route; it needs the session layer around it.
pub fn router(services: Services, desk: DynDesk) -> Router {
    Router::new()
        .route("/audit/export.zip", get(no_export).post(download))
        .with_state(ExportState { services, desk })
}

/// A GET exports nothing and records nothing: the trail page of the same filters, whose form
/// posts the download.
async fn no_export(Query(query): Query<AuditQuery>) -> Redirect {
    Redirect::to(&query.href("/audit", &[]))
}

/// A page of the export's: a title, a sentence and a link back to the trail.
fn page(status: StatusCode, title: &str, message: &str) -> Response {
    super::plain::page(
        status,
        title,
        message,
        ("/audit", "Back to the audit trail"),
    )
}

/// A failure of the pages' ports: `503` with words when the database cannot take the request
/// now (logged where it was made), else [`failed`].
fn app_failed(what: &str, e: AppError) -> Response {
    match e {
        AppError::Unavailable => page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again shortly",
            &e.to_string(),
        ),
        other => failed(what, other),
    }
}

/// A use case's failure, as [`app_failed`], classified (and logged) as every page's are.
fn service_failed(what: &str, e: crate::service::ServiceError) -> Response {
    app_failed(what, super::internal(e))
}

fn failed(what: &str, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what}");
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Export failed",
        "Something went wrong on the server; it has been logged.",
    )
}

/// Who may download: a signed-in compliance officer or admin whose form carries this session's
/// CSRF token; otherwise the answer (sign in, the trail page with the CSRF notice, or 403), the
/// refusal recorded.
async fn exporter(
    state: &ExportState,
    session: &SessionHandle,
    form: &ExportForm,
) -> Result<Viewer, Response> {
    // The session port checks the session and the stored account, and ends a stale one.
    let viewer = match session.0.viewer().await {
        Ok(Some(v)) => v,
        Ok(None) => return Err(Redirect::to("/login").into_response()),
        Err(e) => return Err(app_failed("reading the session failed", e)),
    };
    match session.0.csrf_matches(&form.csrf_token).await {
        Ok(true) => {}
        Ok(false) => {
            let rejected = SecurityEvent::CsrfRejected(FormName::Export);
            if let Err(e) = state.desk.security(Some(&viewer), rejected).await {
                return Err(app_failed("recording a rejected export form failed", e));
            }
            let back = form
                .query
                .href("/audit", &[("error", Notice::Csrf.code().into())]);
            return Err(Redirect::to(&back).into_response());
        }
        Err(e) => return Err(app_failed("checking the form's token failed", e)),
    }
    if let Err(AppError::Forbidden(why)) = may_audit(&viewer) {
        let denied = SecurityEvent::AccessDenied(Page::AuditExport);
        if let Err(e) = state.desk.security(Some(&viewer), denied).await {
            return Err(app_failed("recording a denied export failed", e));
        }
        return Err(page(StatusCode::FORBIDDEN, "Forbidden", &why));
    }
    Ok(viewer)
}

async fn download(
    State(state): State<ExportState>,
    Extension(session): Extension<SessionHandle>,
    Form(form): Form<ExportForm>,
) -> Response {
    let viewer = match exporter(&state, &session, &form).await {
        Ok(viewer) => viewer,
        Err(answer) => return answer,
    };
    let sel = match selection(&form.query) {
        Ok(sel) => sel,
        Err(e) => return page(StatusCode::BAD_REQUEST, "Invalid filters", &e.to_string()),
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => return failed("creating the export directory failed", e),
    };
    let bundle_dir = dir.path().join("bundle");
    let who = Principal::person(&viewer.username, super::role_of(&viewer));
    let manifest = match state
        .services
        .export_selection(&who, &bundle_dir, &sel)
        .await
    {
        Ok(m) => m,
        Err(e @ bundle::BundleError::Unavailable(_)) => {
            tracing::warn!(error = %e, "the database is not answering");
            return app_failed("exporting the trail failed", AppError::Unavailable);
        }
        Err(e) => return failed("exporting the trail failed", e),
    };
    let archive = dir.path().join("export.zip");
    let zipped = {
        let (from, to) = (bundle_dir.clone(), archive.clone());
        tokio::task::spawn_blocking(move || zip_bundle(&from, &to)).await
    };
    match zipped {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return failed("writing the archive failed", e),
        Err(e) => return failed("writing the archive failed", e),
    }
    // Recorded once the archive exists, before a byte of it leaves.
    let actor = Actor::of(&who);
    if let Err(e) = state
        .services
        .record_export(&actor, &sel, &manifest, "zip")
        .await
    {
        return service_failed("recording the export failed", e);
    }
    send(archive, dir, &manifest).await
}

/// Streams the archive; the temporary directory goes when the body is done.
async fn send(archive: PathBuf, dir: tempfile::TempDir, manifest: &Manifest) -> Response {
    let file = match tokio::fs::File::open(&archive).await {
        Ok(file) => file,
        Err(e) => return failed("opening the archive failed", e),
    };
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(Kept { file, _dir: dir }));
    let name = format!(
        "countersign-audit-{}-{}.zip",
        manifest.first_seq, manifest.last_seq
    );
    (
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        body,
    )
        .into_response()
}

/// The archive being sent, and the directory it lives in (removed when this is dropped).
struct Kept {
    file: tokio::fs::File,
    _dir: tempfile::TempDir,
}

impl tokio::io::AsyncRead for Kept {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.file).poll_read(cx, buf)
    }
}

/// Writes the bundle's three files into one deflated zip archive at `to`.
pub fn zip_bundle(from: &Path, to: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(to)?;
    let zipped = write_zip(file, from)?;
    zipped.sync_all()
}

fn write_zip<W: Write + Seek>(out: W, from: &Path) -> std::io::Result<W> {
    let mut zip = zip::ZipWriter::new(out);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for name in [bundle::EVENTS, bundle::CSV, bundle::MANIFEST] {
        zip.start_file(name, options)
            .map_err(std::io::Error::other)?;
        let mut input = std::fs::File::open(from.join(name))?;
        std::io::copy(&mut input, &mut zip)?;
    }
    zip.finish().map_err(std::io::Error::other)
}
