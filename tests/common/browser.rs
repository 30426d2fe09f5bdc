//! A cookie-keeping HTTP client that uses the pages the way a browser without JavaScript does:
//! reads CSRF tokens from forms, posts forms, follows nothing by itself.

use reqwest::{Client, Response, StatusCode};

pub struct Browser {
    pub client: Client,
    base: String,
}

impl Browser {
    /// A fresh browser (no cookies) for the server at `base`.
    pub fn new(base: &str) -> Self {
        let client = Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Self {
            client,
            base: base.to_owned(),
        }
    }
}

/// A redirect's target path.
pub fn location(r: &Response) -> String {
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

impl Browser {
    pub async fn get(&self, path: &str) -> Response {
        self.client
            .get(format!("{}{path}", self.base))
            .header("accept", "text/html")
            .send()
            .await
            .expect("request")
    }

    pub async fn page(&self, path: &str) -> String {
        let r = self.get(path).await;
        assert_eq!(r.status(), StatusCode::OK, "GET {path}");
        r.text().await.expect("html")
    }

    /// The CSRF token embedded in the page's forms.
    pub async fn csrf(&self, path: &str) -> String {
        let html = self.page(path).await;
        let marker = "name=\"csrf_token\" value=\"";
        let start = html.find(marker).expect("a form with a CSRF token") + marker.len();
        html[start..start + 64].to_owned()
    }

    pub async fn post_form(&self, path: &str, referer: &str, form: &[(&str, &str)]) -> Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header("accept", "text/html")
            .header("referer", format!("{}{referer}", self.base))
            .form(form)
            .send()
            .await
            .expect("request")
    }

    pub async fn login(&self, username: &str, password: &str) -> Response {
        let csrf = self.csrf("/login").await;
        self.post_form(
            "/fn/login",
            "/login",
            &[
                ("csrf_token", &csrf),
                ("username", username),
                ("password", password),
            ],
        )
        .await
    }

    /// Approves or rejects the way a person does: when the page asks for the target's name
    /// before approving, it is typed as shown.
    pub async fn decide(&self, id: &str, verdict: &str, reason: Option<&str>) -> Response {
        let page = format!("/proposals/{id}");
        let html = self.page(&page).await;
        let name = confirm_name(&html);
        self.decide_typed(id, verdict, reason, name.as_deref())
            .await
    }

    /// Approves or rejects with `typed` as the typed confirmation (or none).
    pub async fn decide_typed(
        &self,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
        typed: Option<&str>,
    ) -> Response {
        let page = format!("/proposals/{id}");
        let csrf = self.csrf(&page).await;
        let mut form = vec![
            ("csrf_token", csrf.as_str()),
            ("id", id),
            ("verdict", verdict),
        ];
        if let Some(r) = reason {
            form.push(("reason", r));
        }
        if let Some(t) = typed {
            form.push(("confirm", t));
        }
        self.post_form("/fn/decide_proposal", &page, &form).await
    }

    /// Presses "Reveal personal data" on a proposal's page.
    pub async fn reveal(&self, id: &str) -> Response {
        let page = format!("/proposals/{id}");
        let csrf = self.csrf(&page).await;
        self.post_form(
            "/fn/reveal_personal_data",
            &page,
            &[("csrf_token", csrf.as_str()), ("id", id)],
        )
        .await
    }
}

/// The text of HTML (tags and comments dropped, the usual entities decoded).
pub fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let end = if rest[lt..].starts_with("<!--") {
            rest[lt..].find("-->").map(|e| lt + e + 3)
        } else {
            rest[lt..].find('>').map(|e| lt + e + 1)
        };
        rest = &rest[end.unwrap_or(rest.len())..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The name a proposal page asks to be typed before approving, if it asks.
pub fn confirm_name(html: &str) -> Option<String> {
    let marker = "data-testid=\"confirm-name\">";
    let start = html.find(marker)? + marker.len();
    let end = html[start..].find("</code>")? + start;
    Some(text_of(&html[start..end]))
}
