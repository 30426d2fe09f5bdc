//! A plain page outside the Leptos routes: a title, a sentence and a link back, for the answers
//! those pages cannot give (the trail's export, a form whose session could not be saved).

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

/// `status` with a page saying `message` under `title`, and a link to `back` (a path on this
/// server, or the queue) worded `back_words`.
pub fn page(
    status: StatusCode,
    title: &str,
    message: &str,
    (back, back_words): (&str, &str),
) -> Response {
    let back = local_path(back);
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <link rel=\"stylesheet\" href=\"/pkg/countersign.css\"></head><body><main>\
         <h1>{title}</h1><p class=\"flash error\" role=\"alert\">{message}</p>\
         <p><a href=\"{back}\">{back_words}</a></p></main></body></html>",
        title = escape(title),
        message = escape(message),
        back = escape(&back),
        back_words = escape(back_words),
    );
    (status, Html(body)).into_response()
}

/// The path of `page` (a URL or a path) if it is a path on this server, else `/`: never
/// `//elsewhere` nor `/\\elsewhere`, which browsers take for another host.
pub fn local_path(page: &str) -> String {
    let uri = page.parse::<axum::http::Uri>().ok();
    let path = uri.as_ref().map_or("/", axum::http::Uri::path);
    if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') {
        path.to_owned()
    } else {
        "/".to_owned()
    }
}

/// `s` safe in HTML text and attribute values.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn words_are_escaped_and_the_link_stays_on_this_server() {
        let r = page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again",
            "<b>no</b>",
            ("//evil.example/x", "Back"),
        );
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(r.into_body(), 4096)
            .await
            .expect("body");
        let html = String::from_utf8(body.to_vec()).expect("utf-8");
        assert!(html.contains("&lt;b&gt;no&lt;/b&gt;"), "{html}");
        assert!(html.contains("<a href=\"/\">Back</a>"), "{html}");
    }

    #[test]
    fn only_a_path_on_this_server_is_kept() {
        assert_eq!(local_path("http://host/proposals/1?x=2"), "/proposals/1");
        assert_eq!(local_path("/audit"), "/audit");
        assert_eq!(local_path("//evil.example/x"), "/");
        assert_eq!(local_path("/\\evil.example"), "/");
        assert_eq!(local_path("not a url at all"), "/");
    }
}
