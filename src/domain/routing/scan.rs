//! Detectors for secrets and personal data in free text (evidence summaries, source ids,
//! URLs, audit fields). They are deliberately conservative heuristics: they look for shapes,
//! not meanings, work on bytes without allocating, and are only ever used to make a decision
//! *stricter* (refuse, or withhold a field from an audit record), never to loosen one.
//!
//! Secrets: PEM private-key blocks; credentials inside URLs (`scheme://user:pass@host`);
//! credential assignments (`password=…`, `"api_key": "…"`, `?token=…`) whose value looks like a
//! secret rather than a word or a redaction marker; `Bearer` tokens; well-known API key
//! prefixes (`sk-`, `sk_live_`, `ghp_`, `github_pat_`, `glpat-`, `xoxb-`, `AKIA`, `AIza`, …);
//! JSON Web Tokens.
//!
//! Personal data: email addresses; phone numbers (`+` and 10–15 digits, or the 3-3-4 North
//! American shapes); US SSN-shaped `ddd-dd-dddd`; payment card numbers (13–19 digits that pass
//! the Luhn check).

use crate::domain::contract::wire::wire_enum;

/// Replaces a free-text audit field that looks like it contains personal data or a secret.
pub const WITHHELD: &str = "[withheld]";

wire_enum! {
    /// The kind of secret a text appears to contain.
    pub enum SecretKind {
        /// A PEM private key block.
        PrivateKey => "private_key",
        /// A URL carrying `user:password@`.
        UrlCredentials => "url_credentials",
        /// `password=…`, `token: …` and the like, with a secret-looking value.
        CredentialAssignment => "credential_assignment",
        /// An HTTP bearer token.
        BearerToken => "bearer_token",
        /// A well-known API key format.
        ApiKey => "api_key",
        /// A JSON Web Token.
        Jwt => "jwt",
    }
}

wire_enum! {
    /// The kind of personal data a text appears to contain.
    pub enum PersonalDataKind {
        /// An email address.
        Email => "email",
        /// A phone number.
        Phone => "phone_number",
        /// A US social security number shape.
        NationalId => "national_id",
        /// A payment card number.
        PaymentCard => "payment_card",
    }
}

/// Words that introduce a credential when followed by `=` or `:`.
const CREDENTIAL_KEYWORDS: &[&[u8]] = &[
    b"password",
    b"passwd",
    b"passphrase",
    b"pwd",
    b"secret",
    b"token",
    b"apikey",
    b"api_key",
    b"api-key",
    b"access_key",
    b"private_key",
];

/// Prefixes of well-known API keys, with the least number of key characters that must follow.
const KEY_PREFIXES: &[(&[u8], usize)] = &[
    (b"sk-", 20),
    (b"sk_live_", 16),
    (b"sk_test_", 16),
    (b"rk_live_", 16),
    (b"ghp_", 30),
    (b"gho_", 30),
    (b"ghu_", 30),
    (b"ghs_", 30),
    (b"ghr_", 30),
    (b"github_pat_", 20),
    (b"glpat-", 20),
    (b"xoxb-", 10),
    (b"xoxp-", 10),
    (b"xoxa-", 10),
    (b"xoxs-", 10),
    (b"AIza", 30),
    (b"AKIA", 16),
    (b"ASIA", 16),
];

/// The first bytes of [`KEY_PREFIXES`], checked before trying them.
const KEY_PREFIX_STARTS: &[u8] = b"srgxA";

/// Values that say "there is no secret here".
const REDACTION_MARKERS: &[&str] = &[
    "redacted", "hidden", "masked", "omitted", "removed", "none", "null", "n/a", "unset", "empty",
];

/// The first kind of secret `text` appears to contain.
///
/// One pass over the bytes: credential assignments are found from their (rare) `=` / `:`
/// separators, key prefixes, bearer tokens and JWTs only at the start of a word.
pub fn find_secret(text: &str) -> Option<SecretKind> {
    let b = text.as_bytes();
    let mut pem_checked = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'-' if !pem_checked && b[i..].starts_with(b"-----") => {
                pem_checked = true;
                if find_ci(b, b"private key", i).is_some() {
                    return Some(SecretKind::PrivateKey);
                }
            }
            b':' if b[i..].starts_with(b"://") && url_credentials_at(b, i + 3) => {
                return Some(SecretKind::UrlCredentials);
            }
            _ => {}
        }
        if (c == b'=' || c == b':') && credential_assignment_at(b, i) {
            return Some(SecretKind::CredentialAssignment);
        }
        if !left_boundary(b, i) {
            continue;
        }
        match c {
            b'b' | b'B' if bearer_token_at(b, i) => return Some(SecretKind::BearerToken),
            b'e' if jwt_at(b, i) => return Some(SecretKind::Jwt),
            _ if KEY_PREFIX_STARTS.contains(&c) && key_prefix_at(b, i) => {
                return Some(SecretKind::ApiKey);
            }
            _ => {}
        }
    }
    None
}

/// The first kind of personal data `text` appears to contain.
pub fn find_personal_data(text: &str) -> Option<PersonalDataKind> {
    let b = text.as_bytes();
    if b.contains(&b'@') && has_email(b) {
        return Some(PersonalDataKind::Email);
    }
    scan_digit_runs(b)
}

/// `name` as it may be written to the audit trail: a short identifier-like name that carries no
/// secret or personal data is kept; anything else (a key that is an email address, a token, a
/// 10 KB string) becomes [`WITHHELD`].
pub fn audit_safe_name(name: &str) -> &str {
    let identifier = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-[]:/".contains(c));
    if identifier && is_clean(name) {
        name
    } else {
        WITHHELD
    }
}

/// Neither a secret nor personal data was found.
pub fn is_clean(text: &str) -> bool {
    find_secret(text).is_none() && find_personal_data(text).is_none()
}

fn find_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    (from..=hay.len() - needle.len())
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Start of text, or preceded by a byte that is not a letter or digit.
fn left_boundary(b: &[u8], i: usize) -> bool {
    i == 0 || !b[i - 1].is_ascii_alphanumeric()
}

fn run_len(b: &[u8], from: usize, pred: impl Fn(u8) -> bool) -> usize {
    b[from.min(b.len())..]
        .iter()
        .take_while(|&&c| pred(c))
        .count()
}

/// Whether the URL authority starting at `start` (just after `://`) has `user:password@`.
fn url_credentials_at(b: &[u8], start: usize) -> bool {
    let rest = &b[start..];
    let authority_len = rest
        .iter()
        .take_while(|&&c| !matches!(c, b'/' | b'?' | b'#') && !c.is_ascii_whitespace())
        .count();
    let authority = &rest[..authority_len];
    let Some(at) = authority.iter().rposition(|&c| c == b'@') else {
        return false;
    };
    let userinfo = &authority[..at];
    userinfo
        .iter()
        .position(|&c| c == b':')
        .is_some_and(|colon| colon + 1 < userinfo.len())
}

fn is_quote_or_space(c: u8) -> bool {
    matches!(c, b'"' | b'\'' | b' ' | b'\t')
}

/// `sep` is an `=` or `:`: whether the word before it (past quotes and spaces) ends with a
/// credential keyword and the value after it looks like a secret.
fn credential_assignment_at(b: &[u8], sep: usize) -> bool {
    let word_end = sep
        - b[..sep]
            .iter()
            .rev()
            .take_while(|&&c| is_quote_or_space(c))
            .count();
    let word_len = b[..word_end]
        .iter()
        .rev()
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        .count();
    let word = &b[word_end - word_len..word_end];
    let keyword = CREDENTIAL_KEYWORDS
        .iter()
        .any(|kw| word.len() >= kw.len() && word[word.len() - kw.len()..].eq_ignore_ascii_case(kw));
    if !keyword {
        return false;
    }
    let start = sep + 1 + run_len(b, sep + 1, is_quote_or_space);
    let len = run_len(b, start, |c| {
        !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b',' | b';' | b'&' | b')' | b'}')
    });
    looks_like_secret_value(&b[start..start + len])
}

/// A value that is not a redaction marker and looks random rather than like a word: it has a
/// digit or symbol, mixed case, or is at least 12 characters long.
fn looks_like_secret_value(v: &[u8]) -> bool {
    if v.len() < 4 {
        return false;
    }
    if v.iter()
        .all(|&c| matches!(c, b'*' | b'x' | b'X' | b'#' | b'.' | b'-' | b'_'))
    {
        return false;
    }
    let core = trim_brackets(v);
    if REDACTION_MARKERS
        .iter()
        .any(|m| core.eq_ignore_ascii_case(m.as_bytes()))
    {
        return false;
    }
    let has_digit_or_symbol = v.iter().any(|c| !c.is_ascii_alphabetic());
    let has_upper = v.iter().skip(1).any(u8::is_ascii_uppercase);
    let has_lower = v.iter().any(u8::is_ascii_lowercase);
    has_digit_or_symbol || (has_upper && has_lower) || v.len() >= 12
}

fn trim_brackets(v: &[u8]) -> &[u8] {
    let open = |c: &u8| matches!(c, b'[' | b'<' | b'(' | b'{');
    let close = |c: &u8| matches!(c, b']' | b'>' | b')' | b'}');
    let start = v.iter().take_while(|c| open(c)).count();
    let end = v.len() - v.iter().rev().take_while(|c| close(c)).count();
    if start <= end { &v[start..end] } else { &[] }
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// `Bearer <token of 16+ characters>` starting at `i`.
fn bearer_token_at(b: &[u8], i: usize) -> bool {
    const BEARER: &[u8] = b"bearer ";
    if !b[i..]
        .get(..BEARER.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(BEARER))
    {
        return false;
    }
    let start = i + BEARER.len() + run_len(b, i + BEARER.len(), |c| c == b' ');
    run_len(b, start, is_token_char) >= 16
}

/// A well-known API key prefix followed by enough key characters, starting at `i`.
fn key_prefix_at(b: &[u8], i: usize) -> bool {
    KEY_PREFIXES.iter().any(|(prefix, min)| {
        b[i..].starts_with(prefix)
            && run_len(b, i + prefix.len(), |c| {
                c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
            }) >= *min
    })
}

fn is_b64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// `eyJ<header>.<payload>.` (a JSON Web Token) starting at `i`.
fn jwt_at(b: &[u8], i: usize) -> bool {
    if !b[i..].starts_with(b"eyJ") {
        return false;
    }
    let head = run_len(b, i, is_b64url);
    let dot1 = i + head;
    if head < 10 || b.get(dot1) != Some(&b'.') {
        return false;
    }
    let payload = run_len(b, dot1 + 1, is_b64url);
    payload >= 10 && b.get(dot1 + 1 + payload) == Some(&b'.')
}

fn is_email_local(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn has_email(b: &[u8]) -> bool {
    b.iter().enumerate().any(|(at, &c)| {
        if c != b'@' {
            return false;
        }
        let local = b[..at]
            .iter()
            .rev()
            .take_while(|&&c| is_email_local(c))
            .count();
        if local == 0 {
            return false;
        }
        let domain_len = run_len(b, at + 1, |c| {
            c.is_ascii_alphanumeric() || c == b'-' || c == b'.'
        });
        let domain = &b[at + 1..at + 1 + domain_len];
        let domain = domain.strip_suffix(b".").unwrap_or(domain);
        let mut labels = domain.split(|&c| c == b'.');
        let first_ok = labels.next().is_some_and(|l| !l.is_empty());
        let mut count = 1;
        let mut last: &[u8] = &[];
        let mut all_ok = first_ok;
        for label in labels {
            count += 1;
            all_ok &= !label.is_empty();
            last = label;
        }
        all_ok && count >= 2 && last.len() >= 2 && last.iter().all(u8::is_ascii_alphabetic)
    })
}

/// Digit runs such as `+44 20 7946 0958`, `(555) 123-4567`, `123-45-6789` or
/// `4111 1111 1111 1111`, classified by their group shape.
fn scan_digit_runs(b: &[u8]) -> Option<PersonalDataKind> {
    const MAX_GROUPS: usize = 8;
    let is_sep = |c: u8| matches!(c, b' ' | b'-' | b'.' | b'(' | b')');
    let mut i = 0;
    while i < b.len() {
        let plus = b[i] == b'+';
        let start_ok = (b[i].is_ascii_digit()
            || ((plus || b[i] == b'(') && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            && (i == 0 || !(is_word(b[i - 1]) || b[i - 1] == b'.' || b[i - 1] == b'/'));
        if !start_ok {
            i += 1;
            continue;
        }
        let mut groups = [0usize; MAX_GROUPS];
        let mut n_groups = 0;
        let mut digits = 0;
        let mut dashes_only = true;
        let mut luhn_digits = [0u8; 19];
        let mut j = i + usize::from(plus || b[i] == b'(');
        let mut end = j;
        let mut too_many = false;
        while j < b.len() {
            let run = run_len(b, j, |c| c.is_ascii_digit());
            if run == 0 {
                break;
            }
            if n_groups == MAX_GROUPS {
                too_many = true;
                break;
            }
            for &d in &b[j..j + run] {
                if digits < luhn_digits.len() {
                    luhn_digits[digits] = d - b'0';
                }
                digits += 1;
            }
            groups[n_groups] = run;
            n_groups += 1;
            j += run;
            end = j;
            let seps = run_len(b, j, is_sep);
            if seps == 0 || seps > 2 || !b.get(j + seps).is_some_and(u8::is_ascii_digit) {
                break;
            }
            dashes_only &= b[j..j + seps].iter().all(|&c| c == b'-');
            j += seps;
        }
        let right_ok = !b.get(end).is_some_and(|&c| is_word(c));
        if right_ok && !too_many {
            let shape = &groups[..n_groups];
            if shape == [3, 2, 4] && dashes_only {
                return Some(PersonalDataKind::NationalId);
            }
            if (13..=19).contains(&digits)
                && card_shape(shape)
                && luhn_valid(&luhn_digits[..digits])
            {
                return Some(PersonalDataKind::PaymentCard);
            }
            if (plus && (10..=15).contains(&digits))
                || matches!(shape, [3, 3, 4] | [1, 3, 3, 4] | [10])
            {
                return Some(PersonalDataKind::Phone);
            }
        }
        i = end.max(i + 1);
    }
    None
}

fn card_shape(groups: &[usize]) -> bool {
    match groups {
        [_] | [4, 6, 5] | [4, 6, 4] => true,
        [.., last] => groups[..groups.len() - 1].iter().all(|&g| g == 4) && (1..=4).contains(last),
        [] => false,
    }
}

fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_secrets() {
        let cases = [
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
                SecretKind::PrivateKey,
            ),
            (
                "postgres://admin:hunter2@db.internal/prod",
                SecretKind::UrlCredentials,
            ),
            ("password=hunter2", SecretKind::CredentialAssignment),
            ("Password: Tr0ub4dor", SecretKind::CredentialAssignment),
            (
                r#"{"api_key": "a8f5f167f44f4964e6c998dee827110c"}"#,
                SecretKind::CredentialAssignment,
            ),
            (
                "https://api.example.com/v1?access_token=abc123def456",
                SecretKind::CredentialAssignment,
            ),
            (
                "client_secret = correcthorsebatterystaple",
                SecretKind::CredentialAssignment,
            ),
            (
                "Authorization: Bearer abcdefghijklmnop1234",
                SecretKind::BearerToken,
            ),
            ("key sk-proj1234567890abcdefghijkl", SecretKind::ApiKey),
            (
                "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc",
                SecretKind::ApiKey,
            ),
            (
                "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                SecretKind::ApiKey,
            ),
            ("xoxb-123456789012-abcdef", SecretKind::ApiKey),
            ("aws AKIAIOSFODNN7EXAMPLE", SecretKind::ApiKey),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                SecretKind::Jwt,
            ),
        ];
        for (text, kind) in cases {
            assert_eq!(find_secret(text), Some(kind), "{text}");
        }
    }

    #[test]
    fn every_key_prefix_is_dispatched() {
        for (prefix, _) in KEY_PREFIXES {
            assert!(KEY_PREFIX_STARTS.contains(&prefix[0]), "{prefix:?}");
        }
    }

    #[test]
    fn ignores_secret_words_without_secrets() {
        for text in [
            "User identity was authenticated for this account.",
            "No authenticated or validated authorization context is available.",
            "Password reset link sent to the account owner.",
            "token: [redacted]",
            "password: ********",
            "api_key=REDACTED",
            "Session token: valid",
            "tokens: 5000",
            "secret_santa=yes",
            "auth.session",
            "task-1234567890abcdefghijklmn",
            "Bearer token was verified",
            "draft_id:123",
            "https://docs.example.com/guide?page=2",
        ] {
            assert_eq!(find_secret(text), None, "{text}");
        }
    }

    #[test]
    fn finds_personal_data() {
        let cases = [
            (
                "Contact customer@example.com about the refund",
                PersonalDataKind::Email,
            ),
            (
                "mailto:jane.doe+billing@mail.example.co.uk.",
                PersonalDataKind::Email,
            ),
            ("call +44 20 7946 0958", PersonalDataKind::Phone),
            ("call (555) 123-4567 today", PersonalDataKind::Phone),
            ("555.123.4567", PersonalDataKind::Phone),
            ("1-555-123-4567", PersonalDataKind::Phone),
            ("phone 5551234567", PersonalDataKind::Phone),
            ("SSN 123-45-6789 on file", PersonalDataKind::NationalId),
            ("card 4111 1111 1111 1111", PersonalDataKind::PaymentCard),
            ("card 4111111111111111", PersonalDataKind::PaymentCard),
        ];
        for (text, kind) in cases {
            assert_eq!(find_personal_data(text), Some(kind), "{text}");
        }
    }

    #[test]
    fn ignores_ids_dates_and_masked_values() {
        for text in [
            "auth.lookup.client_email",
            "User identity was authenticated through email lookup.",
            "j***@example.com",
            "checked 2026-02-25 10:00 UTC",
            "2026-02-25T10:00:00Z",
            "order_1234567890",
            "acct_redacted",
            "version 1.2.3 on 192.168.1.10",
            "limit 20, 15 rows",
            "card 4111 1111 1111 1112",
            "@mention without an address",
            "user@localhost",
        ] {
            assert_eq!(find_personal_data(text), None, "{text}");
        }
        assert!(is_clean("Draft email is ready for a scoped send."));
    }

    #[test]
    fn only_plain_names_reach_the_audit_trail() {
        assert_eq!(audit_safe_name("email"), "email");
        assert_eq!(audit_safe_name("target_refs[0].id"), "target_refs[0].id");
        assert_eq!(audit_safe_name("jane.doe@example.com"), WITHHELD);
        assert_eq!(audit_safe_name(&"k".repeat(129)), WITHHELD);
        assert_eq!(audit_safe_name("has space"), WITHHELD);
        assert_eq!(audit_safe_name(""), WITHHELD);
    }
}
