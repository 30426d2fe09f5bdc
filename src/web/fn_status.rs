//! The pages' server functions' errors, answered with the status their kind says.
//!
//! `server_fn` answers every error a server function returns with `500`: signing in first,
//! a role that may not, an unknown id and a bad argument alike, all of them the client's. This
//! layer reads the error (the function's [`AppError`], JSON, marked by the `serverfnerror`
//! header) and answers `401`, `403`, `404`, `422` or `400` instead; only what failed on the
//! server stays `500`. The body is unchanged, and the pages' own client reads any `4xx` or `5xx`
//! as the error it carries.
//!
//! The pages' forms are plain HTML forms. For those posts `leptos_axum` sends the browser back
//! to the page it came from with the error in parameters no page reads, so the person would
//! land on the page unchanged and told nothing. This layer sends them back with the error's
//! [`Notice`] instead (`?error=unavailable`, …), which every page shows; or to the sign-in
//! page when the session had ended.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use leptos::server_fn::error::ServerFnErrorErr;

use app::dto::{AppError, Notice};

/// The header `server_fn` marks its error answers with.
const SERVER_FN_ERROR: &str = "serverfnerror";

/// The longest error body read back (an error is a sentence; a longer body stays `500`).
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// Gives a server function's error answer the status of its kind, or sends a form's browser
/// back with the error's notice (an axum middleware).
pub async fn error_status(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let sent_back = response.status().is_redirection();
    if !(response.status() == StatusCode::INTERNAL_SERVER_ERROR || sent_back)
        || !response.headers().contains_key(SERVER_FN_ERROR)
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BYTES).await else {
        return Response::from_parts(parts, Body::empty());
    };
    if sent_back {
        let location = parts
            .headers
            .get(header::LOCATION)
            .and_then(|l| l.to_str().ok());
        if let (Some(page), Ok(e)) = (location, serde_json::from_slice::<AppError>(&bytes)) {
            return back_to(page, &e);
        }
        return Response::from_parts(parts, Body::from(bytes));
    }
    parts.status = status_of(&bytes);
    Response::from_parts(parts, Body::from(bytes))
}

/// Sends a form's browser back to `page` (a URL or a path; only its path and query are kept)
/// with `e`'s notice in place of any notice or error it carried, or to the sign-in page when
/// the session had ended (`303`).
fn back_to(page: &str, e: &AppError) -> Response {
    let to = match notice_for(e) {
        None => "/login".to_owned(),
        Some(notice) => {
            let path = super::plain::local_path(page);
            let uri = page.parse::<Uri>().ok();
            let query = uri.as_ref().and_then(Uri::query).unwrap_or("");
            let kept = url::form_urlencoded::parse(query.as_bytes())
                .filter(|(k, _)| !matches!(k.as_ref(), "error" | "notice" | "__path" | "__err"));
            let query = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(kept)
                .append_pair("error", notice.code())
                .finish();
            format!("{path}?{query}")
        }
    };
    Redirect::to(&to).into_response()
}

/// The notice a form's error is shown as; `None`: sign in first.
fn notice_for(e: &AppError) -> Option<Notice> {
    Some(match e {
        AppError::Unauthenticated => return None,
        AppError::Forbidden(_) => Notice::NotAllowed,
        AppError::NotFound => Notice::Missing,
        AppError::Invalid(_) => Notice::FormInvalid,
        AppError::Unavailable => Notice::Unavailable,
        AppError::ServerFn(
            ServerFnErrorErr::Args(_)
            | ServerFnErrorErr::MissingArg(_)
            | ServerFnErrorErr::Deserialization(_),
        ) => Notice::FormInvalid,
        AppError::ServerFn(_) | AppError::Internal => Notice::ServerFailed,
    })
}

/// The status an error body's kind calls for.
fn status_of(body: &[u8]) -> StatusCode {
    match serde_json::from_slice::<AppError>(body) {
        Ok(e) => status_for(&e),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The status an error of the pages calls for, wherever it is answered (server functions,
/// the live pages' streams, the export, single sign-on).
pub fn status_for(e: &AppError) -> StatusCode {
    match e {
        AppError::Unauthenticated => StatusCode::UNAUTHORIZED,
        AppError::Forbidden(_) => StatusCode::FORBIDDEN,
        AppError::NotFound => StatusCode::NOT_FOUND,
        AppError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
        AppError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        AppError::ServerFn(e) => match e {
            ServerFnErrorErr::Args(_)
            | ServerFnErrorErr::MissingArg(_)
            | ServerFnErrorErr::Deserialization(_) => StatusCode::BAD_REQUEST,
            ServerFnErrorErr::UnsupportedRequestMethod(_) => StatusCode::METHOD_NOT_ALLOWED,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        },
        AppError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(e: &AppError) -> StatusCode {
        status_of(&serde_json::to_vec(e).expect("json"))
    }

    #[test]
    fn each_kind_of_error_has_its_status() {
        assert_eq!(status(&AppError::Unauthenticated), StatusCode::UNAUTHORIZED);
        assert_eq!(
            status(&AppError::Forbidden("no".into())),
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(&AppError::NotFound), StatusCode::NOT_FOUND);
        let invalid = AppError::Invalid("`action`: unknown".into());
        assert_eq!(status(&invalid), StatusCode::UNPROCESSABLE_ENTITY);
        let args = AppError::ServerFn(ServerFnErrorErr::Args("id".into()));
        assert_eq!(status(&args), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(&AppError::Internal),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            status(&AppError::Unavailable),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(status_of(b"not json"), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
