//! Single sign-on's protocol side: OpenID Connect through the `openidconnect` crate.
//!
//! At start, [`Oidc::discover`] reads the provider's discovery document and keys (a provider
//! that does not answer stops the start). A sign-in is the authorization code flow with PKCE
//! (S256): [`Oidc::start`] gives the provider's URL and a [`PendingLogin`] (state, nonce, PKCE
//! verifier) the web layer keeps in the session; [`Oidc::finish`] checks the returned state
//! against it, exchanges the code (client secret over HTTP Basic) and checks the ID token —
//! signature by the provider's keys, issuer, audience, expiry, nonce, and the access token's
//! hash when the token carries one — and reads who it vouches for ([`SsoIdentity`]). The
//! HTTP client follows no redirects. The client secret never reaches a log.

use std::collections::HashMap;
use std::time::Duration;

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreResponseType, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AccessTokenHash, AdditionalClaims, AuthenticationFlow, AuthorizationCode, Client, ClientId,
    ClientSecret, CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    IdTokenFields, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse, TokenResponse as _,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;

use crate::config::OidcSettings;
use crate::domain::sso::SsoIdentity;

/// How long one request to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// Every claim of the ID token beyond the standard ones, the role claim among them (its name
/// is configured, so it cannot be a field).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct OtherClaims(HashMap<String, Value>);

impl AdditionalClaims for OtherClaims {}

type IdFields = IdTokenFields<
    OtherClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

type Tokens = StandardTokenResponse<IdFields, CoreTokenType>;

/// The client discovery makes: authorization endpoint set, token endpoint as discovered.
type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why single sign-on could not be set up at start.
#[derive(Debug, thiserror::Error)]
pub enum OidcSetupError {
    /// A URL did not parse.
    #[error("{what} is not a valid URL: {why}")]
    Url {
        /// Which URL.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Http(String),
    /// The provider's discovery document or keys could not be read.
    #[error("discovering the OpenID provider at {issuer}: {why}")]
    Discovery {
        /// The issuer.
        issuer: String,
        /// Why, with its causes.
        why: String,
    },
    /// The provider has no token endpoint (the authorization code flow needs one).
    #[error("the OpenID provider at {0} has no token endpoint")]
    NoTokenEndpoint(String),
}

/// Why a sign-in through the provider failed; each has the reason recorded in the trail.
#[derive(Debug, thiserror::Error)]
pub enum OidcFailure {
    /// The provider answered with an error (the person cancelled, say).
    #[error("the provider refused: {0}")]
    Provider(String),
    /// The state is not the one this session started with (or there was none).
    #[error("the state does not match this session's")]
    StateMismatch,
    /// The answer names another issuer than the configured one (RFC 9207's `iss`).
    #[error("the answer comes from another issuer")]
    IssuerMismatch,
    /// The code exchange or the ID token did not check out.
    #[error("the code or the ID token did not check out: {0}")]
    Token(String),
}

impl OidcFailure {
    /// The `auth.sign_in_failed` reason.
    pub fn reason(&self) -> &'static str {
        match self {
            OidcFailure::Provider(_) => "oidc_provider_error",
            OidcFailure::StateMismatch => "oidc_state_mismatch",
            OidcFailure::IssuerMismatch => "oidc_issuer_mismatch",
            OidcFailure::Token(_) => "oidc_token_invalid",
        }
    }
}

/// What a session keeps between sending a person to the provider and their return. Secrets:
/// deliberately not `Debug`.
#[derive(Clone, Serialize, Deserialize)]
pub struct PendingLogin {
    state: String,
    nonce: String,
    pkce_verifier: String,
}

/// The configured provider, discovered.
pub struct Oidc {
    client: OidcClient,
    http: reqwest::Client,
    issuer: String,
    role_claim: String,
}

impl Oidc {
    /// Reads the provider's discovery document and keys.
    pub async fn discover(settings: &OidcSettings) -> Result<Self, OidcSetupError> {
        let issuer = IssuerUrl::new(settings.issuer.clone()).map_err(|e| OidcSetupError::Url {
            what: "--oidc-issuer",
            why: e.to_string(),
        })?;
        let redirect =
            RedirectUrl::new(settings.redirect_url.clone()).map_err(|e| OidcSetupError::Url {
                what: "the redirect URL (--public-url + /auth/oidc/callback)",
                why: e.to_string(),
            })?;
        let http = reqwest::Client::builder()
            // Following redirects would open the client up to SSRF.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| OidcSetupError::Http(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &http)
            .await
            .map_err(|e| OidcSetupError::Discovery {
                issuer: settings.issuer.clone(),
                why: with_causes(&e),
            })?;
        if metadata.token_endpoint().is_none() {
            return Err(OidcSetupError::NoTokenEndpoint(settings.issuer.clone()));
        }
        let client = OidcClient::from_provider_metadata(
            metadata,
            ClientId::new(settings.client_id.clone()),
            Some(ClientSecret::new(
                settings.client_secret.expose().to_owned(),
            )),
        )
        .set_redirect_uri(redirect);
        Ok(Self {
            client,
            http,
            issuer: settings.issuer.clone(),
            role_claim: settings.role_claim.clone(),
        })
    }

    /// The configured issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The provider's authorization URL for a new sign-in, and what to keep until the person
    /// returns.
    pub fn start(&self) -> (String, PendingLogin) {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = self
            .client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("profile".into()))
            .add_scope(Scope::new("email".into()))
            .set_pkce_challenge(challenge)
            .url();
        let pending = PendingLogin {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        };
        (url.to_string(), pending)
    }

    /// Checks the provider's answer (`state` and `code` as returned) against the session's
    /// pending sign-in, exchanges the code and checks the ID token.
    pub async fn finish(
        &self,
        pending: PendingLogin,
        state: &str,
        code: &str,
    ) -> Result<SsoIdentity, OidcFailure> {
        let state_matches: bool = pending.state.as_bytes().ct_eq(state.as_bytes()).into();
        if !state_matches {
            return Err(OidcFailure::StateMismatch);
        }
        let token = |e: &dyn std::error::Error| OidcFailure::Token(with_causes(e));
        let tokens = self
            .client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| token(&e))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| token(&e))?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| OidcFailure::Token("the provider returned no ID token".into()))?;
        let verifier = self.client.id_token_verifier();
        let claims = id_token
            .claims(&verifier, &Nonce::new(pending.nonce))
            .map_err(|e| token(&e))?;
        if let Some(expected) = claims.access_token_hash() {
            let alg = id_token.signing_alg().map_err(|e| token(&e))?;
            let key = id_token.signing_key(&verifier).map_err(|e| token(&e))?;
            let actual = AccessTokenHash::from_token(tokens.access_token(), alg, key)
                .map_err(|e| token(&e))?;
            if actual != *expected {
                return Err(OidcFailure::Token("the access token's hash differs".into()));
            }
        }
        Ok(SsoIdentity {
            issuer: self.issuer.clone(),
            subject: claims.subject().as_str().to_owned(),
            preferred_username: claims.preferred_username().map(|u| u.as_str().to_owned()),
            email: claims.email().map(|e| e.as_str().to_owned()),
            role_claim: claims.additional_claims().0.get(&self.role_claim).cloned(),
        })
    }
}

/// An error and its causes on one line (the crate's errors say little at the top).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
