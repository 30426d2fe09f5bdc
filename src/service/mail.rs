//! Email over SMTP (`lettre`, rustls): the transport `serve --smtp-url` configures, and one
//! plain-text send. `smtp://HOST:PORT` speaks plain SMTP (a relay on the same host or network),
//! `smtp://HOST:PORT?tls=required` upgrades with STARTTLS, `smtps://HOST:PORT` is TLS from the
//! start; `user:password@` in the URL authenticates, and is refused over plain `smtp://` (the
//! password would cross the network unencrypted). The URL is never printed.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use uuid::Uuid;

/// How long one SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where reviewers' email goes out, and whom it is from.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    server: String,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mailer({}, from {})", self.server, self.from)
    }
}

impl Mailer {
    /// A mailer for `url` (`smtp://HOST:PORT`), sending as `from` (`Countersign
    /// <countersign@example.com>`).
    pub fn new(url: &str, from: &str) -> Result<Self, String> {
        let parsed = url::Url::parse(url.trim()).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "smtp" | "smtps") {
            return Err("must start with smtp:// or smtps://".into());
        }
        let authenticates = !parsed.username().is_empty() || parsed.password().is_some();
        // lettre reads the first `tls` pair only; so does this check.
        let starttls_required = parsed
            .query_pairs()
            .find(|(k, _)| k == "tls")
            .is_some_and(|(_, v)| v == "required");
        if authenticates && parsed.scheme() == "smtp" && !starttls_required {
            return Err(
                "`user:password@` over plain smtp:// would send the password \
                        unencrypted: use smtps:// or add ?tls=required"
                    .into(),
            );
        }
        let server = format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default(),
            parsed
                .port()
                .map_or_else(|| "default".into(), |p| p.to_string())
        );
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.trim())
            .map_err(|e| format!("not an SMTP URL ({e})"))?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let from: Mailbox = from
            .parse()
            .map_err(|e| format!("`--smtp-from` is not an address ({e})"))?;
        Ok(Self {
            transport,
            from,
            server,
        })
    }

    /// Sends one plain-text message to `to`; why not, if it was not accepted.
    pub async fn send(
        &self,
        to: &str,
        subject: &str,
        body: String,
        id: Uuid,
    ) -> Result<(), String> {
        let to: Mailbox = to
            .parse()
            .map_err(|_| "the recipient's address is not valid".to_owned())?;
        let email = lettre::Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .message_id(Some(format!("<{id}@countersign>")))
            .header(ContentType::TEXT_PLAIN)
            .body(body)
            .map_err(|e| format!("the message could not be built ({e})"))?;
        self.transport
            .send(email)
            .await
            .map(|_| ())
            .map_err(|e| format!("the SMTP server did not take it ({e})"))
    }
}

/// Checks an email address as `user add --email` and the admin page take it.
pub fn check_address(address: &str) -> Result<String, String> {
    let address = address.trim();
    if address.len() > 254 {
        return Err("an email address is at most 254 characters".into());
    }
    address
        .parse::<lettre::Address>()
        .map(|a| a.to_string())
        .map_err(|_| format!("`{address}` is not an email address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mailer_takes_smtp_urls_and_never_shows_credentials() {
        let m = Mailer::new(
            "smtp://user:hunter2@127.0.0.1:2525?tls=required",
            "Countersign <cs@example.com>",
        )
        .expect("a mailer");
        let shown = format!("{m:?}");
        assert!(
            shown.contains("127.0.0.1:2525") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert!(Mailer::new("http://x", "cs@example.com").is_err());
        // Credentials never cross the network in the clear.
        for plain in [
            "smtp://user:hunter2@127.0.0.1:2525",
            "smtp://user@127.0.0.1:2525",
            "smtp://user:hunter2@127.0.0.1:2525?tls=opportunistic",
            "smtp://user:hunter2@127.0.0.1:2525?tls=opportunistic&tls=required",
        ] {
            let refused = Mailer::new(plain, "cs@example.com").expect_err(plain);
            assert!(refused.contains("unencrypted") && !refused.contains("hunter2"));
        }
        assert!(Mailer::new("smtps://user:hunter2@127.0.0.1:465", "cs@example.com").is_ok());
        assert!(Mailer::new("smtp://127.0.0.1:25", "cs@example.com").is_ok());
        assert!(Mailer::new("smtp://127.0.0.1:25", "not an address").is_err());
        assert_eq!(
            check_address(" ann@example.com ").as_deref(),
            Ok("ann@example.com")
        );
        assert!(check_address("ann").is_err());
    }
}
