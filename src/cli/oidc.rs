//! `serve`'s single sign-on flags (see docs/sso.md): the OpenID provider, this
//! app's client id, the role claim. The client secret is read from the environment only
//! (`COUNTERSIGN_OIDC_CLIENT_SECRET`), never from a flag, where `ps` would show it.

use clap::Args;

use crate::config::{OidcClientSecret, OidcSettings};
use crate::domain::sso::DEFAULT_ROLE_CLAIM;

/// Where the client secret comes from.
pub(crate) const CLIENT_SECRET_VAR: &str = "COUNTERSIGN_OIDC_CLIENT_SECRET";

/// The path the provider sends people back to, under `--public-url`.
pub(crate) const CALLBACK_PATH: &str = "/auth/oidc/callback";

/// Single sign-on through an OpenID provider, beside passwords.
#[derive(Debug, Args)]
pub(crate) struct OidcArgs {
    /// The OpenID provider's issuer URL (e.g. `https://idp.example.com/realms/acme`): people
    /// may then sign in through it beside passwords. Needs `--oidc-client-id`,
    /// `--public-url` and the client secret in `COUNTERSIGN_OIDC_CLIENT_SECRET`.
    #[arg(long, env = "COUNTERSIGN_OIDC_ISSUER", requires = "oidc_client_id")]
    oidc_issuer: Option<String>,
    /// This app's client id at the OpenID provider (redirect URI: the public URL +
    /// `/auth/oidc/callback`).
    #[arg(long, env = "COUNTERSIGN_OIDC_CLIENT_ID", requires = "oidc_issuer")]
    oidc_client_id: Option<String>,
    /// The ID token claim that grants roles (`admin`, `reviewer`, `compliance`) and domains
    /// (`domain:NAME`); a person it grants no role gets none.
    #[arg(long, env = "COUNTERSIGN_OIDC_ROLE_CLAIM", default_value = DEFAULT_ROLE_CLAIM)]
    oidc_role_claim: String,
}

impl OidcArgs {
    /// The settings (`None` without `--oidc-issuer`), the secret read from the environment.
    pub(crate) fn settings(
        self,
        public_url: Option<&url::Url>,
    ) -> Result<Option<OidcSettings>, String> {
        let (Some(issuer), Some(client_id)) = (self.oidc_issuer, self.oidc_client_id) else {
            return Ok(None);
        };
        let secret = std::env::var(CLIENT_SECRET_VAR)
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                format!("--oidc-issuer needs the client secret in {CLIENT_SECRET_VAR}")
            })?;
        let public_url = public_url.ok_or_else(|| {
            "--oidc-issuer needs --public-url (the provider sends people back to it)".to_owned()
        })?;
        let role_claim = self.oidc_role_claim.trim().to_owned();
        if role_claim.is_empty() {
            return Err("--oidc-role-claim must name a claim".into());
        }
        Ok(Some(OidcSettings {
            issuer: issuer.trim().to_owned(),
            client_id: client_id.trim().to_owned(),
            client_secret: OidcClientSecret::new(secret),
            role_claim,
            redirect_url: redirect_url(public_url),
        }))
    }
}

/// The public URL with the callback path, whether or not it ends in `/`.
fn redirect_url(public_url: &url::Url) -> String {
    format!(
        "{}{CALLBACK_PATH}",
        public_url.as_str().trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_is_under_the_public_url() {
        for (public, expected) in [
            (
                "https://cs.example.com",
                "https://cs.example.com/auth/oidc/callback",
            ),
            (
                "https://cs.example.com/",
                "https://cs.example.com/auth/oidc/callback",
            ),
            (
                "https://x.example/cs/",
                "https://x.example/cs/auth/oidc/callback",
            ),
        ] {
            let url = url::Url::parse(public).expect("a URL");
            assert_eq!(redirect_url(&url), expected);
        }
    }
}
