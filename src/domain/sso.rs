//! Single sign-on's rules (OpenID Connect): what the identity provider's role claim grants,
//! and the username an account made at its first sign-in gets. Imports `principal` and
//! `queue`'s domain names.
//!
//! **The role claim** (`--oidc-role-claim`, default [`DEFAULT_ROLE_CLAIM`]) is a string or
//! an array of strings. Each entry is a role (`admin`, `reviewer`, `compliance`, any case) or
//! a domain the person is limited to (`domain:payments`); anything else is ignored. A string
//! may hold several entries separated by spaces or commas. Several roles give the one that
//! may do most (`admin` over `reviewer` over `compliance`); domains apply only with a role,
//! and no `domain:` entry means every domain, as for an account made by hand. No claim, or no
//! role in it, grants nothing: the account keeps the role an admin granted, or has none and
//! may do nothing (deny by default).
//!
//! **Accounts** are linked to the provider's issuer and subject, never found by name: a
//! username is only what people are shown. It comes from `preferred_username`, else from the
//! e-mail address, made a valid name ([`super::principal::parse_name`]); when another account
//! has it, a suffix derived from the subject makes it unique ([`username_with_suffix`]).

use super::contract::wire::wire_enum;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::principal::Role;

/// The ID token claim read for roles and domains unless `--oidc-role-claim` says otherwise.
pub const DEFAULT_ROLE_CLAIM: &str = "countersign_roles";

/// What a domain entry starts with in the role claim.
const DOMAIN_PREFIX: &str = "domain:";

/// The longest username this module makes (room for a suffix within 64).
const MAX_BASE: usize = 48;

/// What the identity provider vouched for, from a checked ID token.
#[derive(Debug, Clone, PartialEq)]
pub struct SsoIdentity {
    /// The provider (`iss`).
    pub issuer: String,
    /// The person at the provider (`sub`).
    pub subject: String,
    /// `preferred_username`, if given.
    pub preferred_username: Option<String>,
    /// `email`, if given.
    pub email: Option<String>,
    /// The role claim's value, if the token has it.
    pub role_claim: Option<Value>,
}

/// What the role claim grants.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    /// The role; `None`: the claim grants none.
    pub role: Option<Role>,
    /// The domains the person is limited to (`None`: every domain). Meaningful only with a
    /// role, and only when `says_domains`.
    pub domains: Option<Vec<String>>,
    /// Whether the claim speaks of domains at all (a `domain:` entry). When it does not, the
    /// domains an admin set are kept.
    pub says_domains: bool,
}

/// Reads the role claim's value (`None`: the token has no such claim).
pub fn grant_from_claim(claim: Option<&Value>) -> Grant {
    let entries: Vec<&str> = match claim {
        Some(Value::String(s)) => split_entries(s).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(split_entries)
            .collect(),
        _ => Vec::new(),
    };
    let role = entries
        .iter()
        .filter_map(|e| Role::parse(&e.to_ascii_lowercase()))
        .max_by_key(|r| rank(*r));
    let mut domains: Vec<String> = Vec::new();
    let mut says_domains = false;
    for entry in &entries {
        if entry.len() >= DOMAIN_PREFIX.len()
            && entry[..DOMAIN_PREFIX.len()].eq_ignore_ascii_case(DOMAIN_PREFIX)
        {
            says_domains = true;
        }
        let Some(name) = strip_prefix_ignore_case(entry, DOMAIN_PREFIX) else {
            continue;
        };
        if let Ok(parsed) = super::queue::parse_domains(name) {
            for d in parsed {
                if !domains.contains(&d) {
                    domains.push(d);
                }
            }
        }
    }
    domains.sort();
    // Domain entries none of which is valid (an empty `domain:` from a mapping template) grant
    // nothing: read as "every domain" they would widen what the provider meant to limit.
    let role = role.filter(|_| !says_domains || !domains.is_empty());
    Grant {
        role,
        domains: (role.is_some() && !domains.is_empty()).then_some(domains),
        says_domains,
    }
}

fn split_entries(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
        .filter(|rest| !rest.is_empty())
}

/// How much a role may do, for choosing among several.
fn rank(role: Role) -> u8 {
    match role {
        Role::Admin => 3,
        Role::Reviewer => 2,
        Role::Compliance => 1,
    }
}

wire_enum! {
    /// Where an account's role came from: an admin's grant (or the operator's, or the account
    /// was made with it) or the identity provider's role claim.
    pub enum RoleSource { Admin => "admin", Claim => "claim" }
}

/// Whether a later sign-in takes the account's role away: the claim grants no role now, and
/// the role the account has came from a claim. An admin's grant is never taken this way.
pub fn revokes(stored: Option<Role>, source: Option<RoleSource>, grant: &Grant) -> bool {
    grant.role.is_none() && stored.is_some() && source == Some(RoleSource::Claim)
}

/// What a later sign-in changes on the account: the claim's role (and its domains, when the
/// claim speaks of domains) when they differ from what the account has; nothing when it
/// grants no role (the account keeps what an admin granted). A claim without `domain:`
/// entries keeps the domains an admin limited the person to.
pub fn role_update(
    stored: (Option<Role>, Option<&[String]>),
    grant: &Grant,
) -> Option<(Role, Option<Vec<String>>)> {
    let role = grant.role?;
    let domains = if grant.says_domains {
        grant.domains.clone()
    } else {
        stored.1.map(<[String]>::to_vec)
    };
    let same = stored.0 == Some(role) && stored.1 == domains.as_deref();
    (!same).then_some((role, domains))
}

/// The username for a new account: `preferred_username`, else the e-mail address's local part,
/// lowercased, with every character a name may not hold made `-`; `sso-user` when neither
/// gives anything.
pub fn username_for(preferred_username: Option<&str>, email: Option<&str>) -> String {
    let from_email = email.and_then(|e| e.split('@').next());
    [preferred_username, from_email]
        .into_iter()
        .flatten()
        .map(slug)
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "sso-user".to_owned())
}

fn slug(s: &str) -> String {
    let mapped: String = s
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let short: String = trimmed.chars().take(MAX_BASE).collect();
    short.trim_end_matches('-').to_owned()
}

/// `base` with a suffix derived from the provider's issuer and subject, for when another
/// account has `base`: stable for one person, different for another.
pub fn username_with_suffix(base: &str, issuer: &str, subject: &str) -> String {
    let digest = Sha256::digest(format!("{issuer}\0{subject}").as_bytes());
    format!("{base}-{}", &hex::encode(digest)[..8])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn grant(v: Value) -> Grant {
        grant_from_claim(Some(&v))
    }

    #[test]
    fn a_role_claim_maps_to_a_role() {
        assert_eq!(grant(json!("reviewer")).role, Some(Role::Reviewer));
        assert_eq!(grant(json!(["compliance"])).role, Some(Role::Compliance));
        assert_eq!(grant(json!(["Admin"])).role, Some(Role::Admin));
        assert_eq!(grant(json!("staff reviewer")).role, Some(Role::Reviewer));
    }

    #[test]
    fn several_roles_give_the_one_that_may_do_most() {
        assert_eq!(
            grant(json!(["compliance", "admin", "reviewer"])).role,
            Some(Role::Admin)
        );
        assert_eq!(
            grant(json!("compliance,reviewer")).role,
            Some(Role::Reviewer)
        );
    }

    #[test]
    fn no_claim_or_no_role_grants_nothing() {
        assert_eq!(grant_from_claim(None), Grant::default());
        assert_eq!(grant(json!([])), Grant::default());
        assert_eq!(grant(json!(["staff", "superuser"])), Grant::default());
        assert_eq!(grant(json!(42)), Grant::default());
        assert_eq!(grant(json!({"role": "admin"})), Grant::default());
        // Domains without a role grant nothing either.
        assert_eq!(grant(json!(["domain:payments"])).role, None);
    }

    #[test]
    fn domain_entries_limit_the_role() {
        let g = grant(json!([
            "reviewer",
            "domain:payments",
            "DOMAIN:crm",
            "domain:payments"
        ]));
        assert_eq!(g.role, Some(Role::Reviewer));
        assert_eq!(
            g.domains,
            Some(vec!["crm".to_owned(), "payments".to_owned()])
        );
        assert_eq!(grant(json!(["reviewer"])).domains, None);
        // Domain entries none of which is valid grant nothing: never "every domain".
        let empty = grant(json!(["reviewer", "domain:"]));
        assert_eq!((empty.role, empty.domains), (None, None));
    }

    #[test]
    fn non_strings_in_the_array_are_ignored() {
        let g = grant(json!([1, null, "reviewer", ["admin"]]));
        assert_eq!(g.role, Some(Role::Reviewer));
    }

    #[test]
    fn a_later_sign_in_changes_only_what_the_claim_grants() {
        let reviewer = grant(json!(["reviewer"]));
        assert_eq!(
            role_update((None, None), &reviewer),
            Some((Role::Reviewer, None))
        );
        assert_eq!(role_update((Some(Role::Reviewer), None), &reviewer), None);
        assert_eq!(
            role_update((Some(Role::Admin), None), &reviewer),
            Some((Role::Reviewer, None))
        );
        let limited = grant(json!(["reviewer", "domain:crm"]));
        assert_eq!(
            role_update((Some(Role::Reviewer), None), &limited),
            Some((Role::Reviewer, Some(vec!["crm".to_owned()])))
        );
        // A claim that says nothing of domains keeps those an admin limited the person to.
        let crm = ["crm".to_owned()];
        assert_eq!(
            role_update((Some(Role::Reviewer), Some(&crm)), &reviewer),
            None
        );
        assert_eq!(
            role_update((Some(Role::Admin), Some(&crm)), &reviewer),
            Some((Role::Reviewer, Some(crm.to_vec())))
        );
        // No role in the claim: what an admin granted stays.
        assert_eq!(
            role_update((Some(Role::Compliance), None), &Grant::default()),
            None
        );
    }

    #[test]
    fn usernames_are_valid_names() {
        assert_eq!(username_for(Some("Alice.Smith"), None), "alice.smith");
        assert_eq!(username_for(None, Some("Bob@example.com")), "bob");
        assert_eq!(username_for(Some("  "), Some("carol+x@e.com")), "carol-x");
        assert_eq!(username_for(Some("Zoë Ünïcode"), None), "zo---n-code");
        assert_eq!(username_for(None, None), "sso-user");
        assert_eq!(username_for(Some("@@@"), None), "sso-user");
        for name in [
            username_for(Some(&"x".repeat(100)), None),
            username_for(Some("_lead"), None),
        ] {
            assert!(super::super::principal::parse_name(&name).is_ok(), "{name}");
        }
        let long = username_with_suffix(&"a".repeat(MAX_BASE), "https://idp", "sub");
        assert!(super::super::principal::parse_name(&long).is_ok());
    }

    #[test]
    fn a_suffix_is_stable_per_subject() {
        let a = username_with_suffix("alice", "https://idp", "1");
        assert_eq!(a, username_with_suffix("alice", "https://idp", "1"));
        assert_ne!(a, username_with_suffix("alice", "https://idp", "2"));
        assert_ne!(a, username_with_suffix("alice", "https://other", "1"));
    }
}
