//! Runtime settings: from flags with environment fallbacks (see `cli`), plus the Leptos
//! settings read from `Leptos.toml` at start.

use std::net::SocketAddr;
use std::path::PathBuf;

/// The default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://countersign.db";

/// Where `serve` keeps its audit checkpoint key unless told otherwise.
pub const DEFAULT_AUDIT_KEY: &str = "countersign-audit.key";

/// Where `serve` keeps the key that signs executor grants unless told otherwise.
pub const DEFAULT_GRANT_KEY: &str = "countersign-grant.key";

/// What `serve` runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `sqlite://FILE` or `postgres://…`.
    pub database_url: String,
    /// Address to listen on; `None` means Leptos.toml's `site-addr`.
    pub bind: Option<SocketAddr>,
    /// Path of Leptos.toml.
    pub leptos_config: PathBuf,
    /// Mark the session cookie `Secure` (behind HTTPS).
    pub secure_cookies: bool,
    /// The routing policy file; `None` means the built-in default (every tool Category C).
    pub policy: Option<PathBuf>,
    /// The key that signs audit checkpoints; `None`: the head is not signed.
    pub audit_key: Option<PathBuf>,
    /// The key that signs executor grants; `None`: a key generated for this process only.
    pub grant_key: Option<PathBuf>,
}

impl Settings {
    /// Settings for `database_url` with every other value at its default.
    pub fn for_database(database_url: impl Into<String>) -> Self {
        Settings {
            database_url: database_url.into(),
            bind: None,
            leptos_config: PathBuf::from("Leptos.toml"),
            secure_cookies: false,
            policy: None,
            audit_key: None,
            grant_key: None,
        }
    }
}

/// The database URL as it may be logged: any password replaced.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact_url("sqlite://countersign.db"),
            "sqlite://countersign.db"
        );
    }
}
