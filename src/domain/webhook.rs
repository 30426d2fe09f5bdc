//! Agents' webhooks: which callback URLs are allowed, what a delivery says, how it is signed and
//! when a failed one is tried again. Pure rules; the dispatcher (`service/webhooks.rs`) sends.
//!
//! - **Targets.** `https` anywhere public, or `http`/`https` to loopback (`localhost`,
//!   `127.0.0.0/8`, `::1`); private, link-local, shared-address and unspecified targets are
//!   refused unless the operator allows them ([`TargetPolicy`]). A host name is checked again
//!   when it is resolved, at every delivery: a name that resolves to a private address is
//!   refused then (DNS rebinding).
//! - **Signature.** `Countersign-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 over
//!   "<t>.<body>">`, keyed by the token's webhook secret ([`signature`]). Receivers check the
//!   MAC in constant time and refuse a `t` far from their clock. After the secret is rotated,
//!   the old one signs too for an overlap (a second `v1=`, [`signing_secrets`]), so a receiver
//!   accepts a delivery whose `v1` values include one made with a secret it knows.
//! - **Retries.** A failed attempt is tried again after 5 s, 10 s, 20 s … (doubling, at most
//!   one hour apart) until the delivery is [`Retries::give_up_after`] old ([`next_attempt`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use time::OffsetDateTime;
use uuid::Uuid;

/// The header carrying a delivery's signature.
pub const SIGNATURE_HEADER: &str = "Countersign-Signature";
/// The header naming the delivery (the same on every retry, for receivers to deduplicate).
pub const DELIVERY_HEADER: &str = "Countersign-Delivery";
/// The event type of a proposal's status change.
pub const STATUS_CHANGED: &str = "proposal.status_changed";
/// Longest callback URL accepted.
const MAX_URL_LEN: usize = 2_048;

/// Which callback targets the operator allows beyond the defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Plain `http` to any host, not only loopback.
    pub allow_http: bool,
    /// Private, link-local and shared-address ranges (10/8, 172.16/12, 192.168/16,
    /// 169.254/16, 100.64/10, fc00::/7, fe80::/10).
    pub allow_private: bool,
}

/// Checks a callback URL against the policy; the URL, normalised, or why it is refused.
pub fn check_url(raw: &str, policy: TargetPolicy) -> Result<url::Url, String> {
    let raw = raw.trim();
    if raw.len() > MAX_URL_LEN {
        return Err(format!("is longer than {MAX_URL_LEN} characters"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("is not a URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".into());
    }
    if url.fragment().is_some() {
        return Err("must not carry a fragment (`#…`)".into());
    }
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => is_loopback_name(name),
        Some(url::Host::Ipv4(ip)) => {
            check_ip(IpAddr::V4(ip), policy)?;
            ip.is_loopback()
        }
        Some(url::Host::Ipv6(ip)) => {
            check_ip(IpAddr::V6(ip), policy)?;
            ip.is_loopback()
        }
        None => return Err("must name a host".into()),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback || policy.allow_http => Ok(url),
        "http" => Err(
            "must use https (plain http only to loopback, unless the operator allows it)".into(),
        ),
        other => Err(format!("must use https, not `{other}`")),
    }
}

/// `localhost` and names under it resolve to loopback (RFC 6761).
fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    name == "localhost" || name.ends_with(".localhost")
}

/// Whether a delivery may connect to `ip`; why not, if it may not.
pub fn check_ip(ip: IpAddr, policy: TargetPolicy) -> Result<(), String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    if ip.is_unspecified() || ip.is_multicast() || is_broadcast(ip) {
        return Err(format!("names `{ip}`, which is no single host"));
    }
    if ip.is_loopback() || policy.allow_private || !is_private(ip) {
        Ok(())
    } else {
        Err(format!(
            "names `{ip}`, a private or link-local address (refused unless the operator allows \
             private targets)"
        ))
    }
}

fn is_broadcast(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
}

/// Private, link-local, shared (CGNAT), benchmarking and reserved ranges, and the "this
/// network" block: nothing a public callback lives on.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_link_local()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0
}

/// What a delivery POSTs: one status change of one proposal. The agent reads the whole
/// proposal with its token (`proposal.url`); the body never carries the proposal's contents.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StatusChanged {
    /// The delivery's id (also in `Countersign-Delivery`; the same on every retry).
    pub id: Uuid,
    /// Always `proposal.status_changed`.
    #[serde(rename = "type")]
    #[schemars(with = "String")]
    pub kind: &'static str,
    /// When the change was committed (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub occurred_at: OffsetDateTime,
    /// The change.
    pub proposal: ChangedProposal,
    /// The audit event that recorded it: its position in the chain orders deliveries.
    pub audit_event: AuditRef,
}

/// The proposal a delivery is about.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ChangedProposal {
    /// Its id.
    pub id: Uuid,
    /// Its status before the change (`null` when it was just submitted).
    pub previous_status: Option<String>,
    /// Its status now.
    pub status: String,
    /// Where the agent reads it: `/api/v1/proposals/{id}`.
    pub url: String,
}

/// The audit event behind a delivery.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AuditRef {
    /// Its id.
    pub id: Uuid,
    /// Its position in the hash chain.
    pub seq: i64,
    /// Its kind (`proposal.approved`, …).
    pub kind: String,
}

impl StatusChanged {
    /// The body of delivery `id` for a committed status change.
    pub fn new(
        id: Uuid,
        proposal: Uuid,
        previous_status: Option<String>,
        status: String,
        event: AuditRef,
        at: OffsetDateTime,
    ) -> Self {
        Self {
            id,
            kind: STATUS_CHANGED,
            occurred_at: at,
            proposal: ChangedProposal {
                id: proposal,
                previous_status,
                status,
                url: format!("/api/v1/proposals/{proposal}"),
            },
            audit_event: event,
        }
    }
}

/// The `Countersign-Signature` value for `body` sent at unix time `t`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    signature_by(&[secret], t, body)
}

/// The same, signed by each of `secrets` in turn (`t=…,v1=…,v1=…`): while a rotated secret's
/// overlap lasts, the new and the old one sign, and a receiver that knows either accepts.
pub fn signature_by(secrets: &[&str], t: i64, body: &str) -> String {
    let mut header = format!("t={t}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&mac_hex(secret, t, body));
    }
    header
}

fn mac_hex(secret: &str, t: i64, body: &str) -> String {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Checks a `Countersign-Signature` header as a receiver does: a timestamp within
/// `tolerance_secs` of `now`, and one of its `v1` MACs (there are two while a rotated secret's
/// overlap lasts) made with `secret`, compared in constant time.
pub fn verify(secret: &str, header: &str, body: &str, now: i64, tolerance_secs: i64) -> bool {
    let mut t = None;
    let mut macs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => macs.push(value),
            _ => {}
        }
    }
    let Some(t) = t else {
        return false;
    };
    if macs.is_empty() || (now - t).abs() > tolerance_secs {
        return false;
    }
    let expected = mac_hex(secret, t, body);
    macs.iter().fold(false, |found, mac| {
        let same: bool = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), mac.as_bytes()).into();
        found | same
    })
}

/// How long a rotated secret keeps signing beside its successor unless told otherwise (the
/// admin page's rotation; the CLI's `--overlap` default).
pub const DEFAULT_OVERLAP: time::Duration = time::Duration::hours(24);

/// Longest overlap a rotated secret may keep signing.
pub const MAX_OVERLAP: time::Duration = time::Duration::days(7);

/// The secrets that sign a delivery at `now`: the current one, then the one it replaced while
/// its overlap lasts (`previous_until` after `now`).
pub fn signing_secrets<'a>(
    current: &'a str,
    previous: Option<&'a str>,
    previous_until: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Vec<&'a str> {
    let mut secrets = vec![current];
    if let (Some(old), Some(until)) = (previous, previous_until)
        && now < until
    {
        secrets.push(old);
    }
    secrets
}

/// How failed deliveries are tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    /// The wait after the first failure; each later wait doubles.
    pub first_wait: time::Duration,
    /// The longest wait between two attempts.
    pub longest_wait: time::Duration,
    /// A delivery this old is not tried again.
    pub give_up_after: time::Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Self {
            first_wait: time::Duration::seconds(5),
            longest_wait: time::Duration::hours(1),
            give_up_after: time::Duration::hours(24),
        }
    }
}

/// When to try a delivery again after its `attempts`-th attempt failed at `now`; `None`: give
/// up (the next try would fall after the delivery is [`Retries::give_up_after`] old).
pub fn next_attempt(
    retries: Retries,
    attempts: u32,
    created_at: OffsetDateTime,
    now: OffsetDateTime,
) -> Option<OffsetDateTime> {
    let doublings = attempts.saturating_sub(1).min(30);
    let wait = retries
        .first_wait
        .saturating_mul(1_i32 << doublings)
        .min(retries.longest_wait);
    let next = now + wait;
    (next - created_at <= retries.give_up_after).then_some(next)
}

/// Whether an answer's status code counts as delivered (any 2xx).
pub fn delivered(status: u16) -> bool {
    (200..300).contains(&status)
}

/// What follows an attempt (agents' webhooks and reviewers' notifications alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    /// A 2xx came back.
    Delivered,
    /// Tried again at this time.
    Retry(OffsetDateTime),
    /// Given up: too old, or never worth another try.
    GiveUp,
}

impl AfterAttempt {
    /// After the `attempts`-th attempt at something queued at `created_at`, made at `now`, that
    /// was answered `status` (none: no answer); `permanent` failures are not tried again.
    pub fn of(
        retries: Retries,
        status: Option<u16>,
        permanent: bool,
        attempts: i32,
        created_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Self {
        if status.is_some_and(delivered) {
            return AfterAttempt::Delivered;
        }
        let attempts = u32::try_from(attempts).unwrap_or(u32::MAX);
        match (permanent, next_attempt(retries, attempts, created_at, now)) {
            (false, Some(next)) => AfterAttempt::Retry(next),
            _ => AfterAttempt::GiveUp,
        }
    }

    /// The next try, when there is one.
    pub fn next(self) -> Option<OffsetDateTime> {
        match self {
            AfterAttempt::Retry(next) => Some(next),
            _ => None,
        }
    }

    /// As the metrics count it: `delivered`, `retry` or `failed`.
    pub fn result(self) -> &'static str {
        match self {
            AfterAttempt::Delivered => "delivered",
            AfterAttempt::Retry(_) => "retry",
            AfterAttempt::GiveUp => "failed",
        }
    }

    /// What to record of a failed attempt: its own error, else the status it was answered.
    pub fn error(self, error: Option<&str>, status: Option<u16>) -> Option<String> {
        match (error, status) {
            (Some(e), _) => Some(e.to_owned()),
            (None, Some(s)) if self != AfterAttempt::Delivered => Some(format!("answered {s}")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> String {
        check_url(url, TargetPolicy::default()).expect_err(url)
    }

    #[test]
    fn https_and_loopback_pass_and_everything_else_is_refused_by_default() {
        for ok in [
            "https://hooks.example.com/countersign",
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://[::1]:9/hook",
            "https://8.8.8.8/hook",
        ] {
            assert!(check_url(ok, TargetPolicy::default()).is_ok(), "{ok}");
        }
        assert!(refused("http://hooks.example.com/").contains("https"));
        assert!(refused("ftp://example.com/").contains("`ftp`"));
        assert!(refused("https://user:pw@example.com/").contains("password"));
        assert!(refused("not a url").contains("not a URL"));
        for private in [
            "https://10.0.0.5/hook",
            "https://172.16.1.1/",
            "https://192.168.1.10/",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:10.1.2.3]/",
        ] {
            assert!(refused(private).contains("private"), "{private}");
        }
        assert!(refused("https://0.0.0.0/").contains("no single host"));
    }

    #[test]
    fn the_operator_may_allow_http_and_private_targets() {
        let open = TargetPolicy {
            allow_http: true,
            allow_private: true,
        };
        assert!(check_url("http://hooks.internal/x", open).is_ok());
        assert!(check_url("https://10.0.0.5/hook", open).is_ok());
        assert!(check_ip("0.0.0.0".parse().expect("ip"), open).is_err());
    }

    #[test]
    fn a_signature_verifies_only_with_its_secret_body_and_a_fresh_time() {
        let header = signature("whsec_1", 1_700_000_000, "{\"a\":1}");
        assert!(header.starts_with("t=1700000000,v1="));
        assert!(verify("whsec_1", &header, "{\"a\":1}", 1_700_000_100, 300));
        assert!(!verify("whsec_2", &header, "{\"a\":1}", 1_700_000_100, 300));
        assert!(!verify("whsec_1", &header, "{\"a\":2}", 1_700_000_100, 300));
        assert!(!verify("whsec_1", &header, "{\"a\":1}", 1_700_001_000, 300));
        assert!(!verify("whsec_1", "v1=00", "{\"a\":1}", 1_700_000_000, 300));
    }

    #[test]
    fn during_an_overlap_both_secrets_sign_and_either_verifies() {
        let t0 = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let until = Some(t0 + time::Duration::hours(1));
        let both = signing_secrets("new", Some("old"), until, t0);
        assert_eq!(both, ["new", "old"]);
        let header = signature_by(&both, 1_700_000_000, "{}");
        assert_eq!(header.matches(",v1=").count(), 2);
        assert!(verify("new", &header, "{}", 1_700_000_000, 300));
        assert!(verify("old", &header, "{}", 1_700_000_000, 300));
        assert!(!verify("other", &header, "{}", 1_700_000_000, 300));
        // Once the overlap ends, only the new secret signs.
        let after = signing_secrets("new", Some("old"), until, t0 + time::Duration::hours(1));
        assert_eq!(after, ["new"]);
        let header = signature_by(&after, 1_700_000_000, "{}");
        assert!(!verify("old", &header, "{}", 1_700_000_000, 300));
        assert_eq!(signing_secrets("new", None, None, t0), ["new"]);
    }

    #[test]
    fn retries_double_up_to_an_hour_and_stop_after_a_day() {
        let r = Retries::default();
        let t0 = OffsetDateTime::UNIX_EPOCH;
        let wait = |n, now| next_attempt(r, n, t0, now).map(|next| next - now);
        assert_eq!(wait(1, t0), Some(time::Duration::seconds(5)));
        assert_eq!(wait(2, t0), Some(time::Duration::seconds(10)));
        assert_eq!(wait(5, t0), Some(time::Duration::seconds(80)));
        assert_eq!(wait(20, t0), Some(time::Duration::hours(1)));
        assert_eq!(
            wait(20, t0 + time::Duration::hours(23)),
            Some(time::Duration::hours(1))
        );
        assert_eq!(
            wait(20, t0 + time::Duration::hours(23) + time::Duration::SECOND),
            None
        );
        assert!(delivered(204) && !delivered(301) && !delivered(500));
    }
}
