//! Evidence assessment: what a list of evidence refs establishes, and what is wrong with it.
//!
//! Evidence can **support or lower** a declared authorization state, never raise it, and it is
//! read only through its structured metadata (`kind`, `trust_tier`, `freshness`,
//! `contradicts`): no summary is ever keyword-matched into a stronger state (AANA's own code does
//! that; the seed's text and `conformance/README.md` rule it out). Free text is scanned only to
//! find leaks, which can only make a decision stricter.
//!
//! Lowering rules, applied in order to the declared state:
//!
//! 1. **Unverified authorization evidence.** When the declared state is `authenticated` or
//!    higher and structured evidence is present, but none of it is `verified` or `runtime`
//!    (every ref is `user_claimed`, `unverified` or `unknown`), or structured authorization
//!    evidence (kind `auth_event` or `approval`) is present but none of it is `verified` or
//!    `runtime`, the effective state is at most `user_claimed`: the only evidence for it is a
//!    claim.
//! 2. **Confirmation without an approval.** When the state is still `confirmed` and structured
//!    evidence is present, but no `verified`/`runtime` ref of kind `approval` is among it, the
//!    effective state is at most `validated`: a confirmation is an explicit approval, and
//!    production evidence must show it.
//!
//! Plain string refs carry no metadata: they are counted, scanned for leaks, and otherwise
//! neither support nor lower anything.
//!
//! What evidence *supports* (AANA's `evidence_supported_state` and `support`) is read from
//! each structured ref's kind and trust tier alone: a ref that is not `verified` or `runtime`
//! supports at most `user_claimed`; a trusted `auth_event` supports `authenticated`, a trusted
//! `tool_result` or `policy` `validated`, a trusted `approval` `confirmed`.
//!
//! Issues found per ref (see [`EvidenceIssueCode`]): stale (declared `stale`, or `age_hours` over
//! `max_age_hours`), contradicting something, leaking a secret, leaking personal data, or marked
//! `sensitive` while carrying content (a summary or URL). How each issue affects a route is the
//! route engine's business ([`super::rules`]).

use serde::{Deserialize, Serialize};

use super::scan::{find_personal_data, find_secret};
use crate::domain::contract::aana::{
    EvidenceKind, EvidenceRef, FreshnessStatus, RedactionStatus, StructuredEvidence, TrustTier,
};
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::contract::wire::wire_enum;

wire_enum! {
    /// What is wrong with (or notable about) one evidence ref.
    pub enum EvidenceIssueCode {
        /// Declared stale, or older than its own `max_age_hours`.
        Stale => "stale",
        /// Lists claims/actions it contradicts.
        Contradicts => "contradicts",
        /// A text field looks like it contains a password, token, API key or private key.
        LeaksSecret => "leaks_secret",
        /// A text field contains an email address, phone number, SSN or card number.
        LeaksPersonalData => "leaks_personal_data",
        /// Marked `sensitive` yet carries a summary or URL onto the audit path.
        SensitiveContent => "sensitive_content",
        /// Freshness is `unknown` (informational).
        FreshnessUnknown => "freshness_unknown",
        /// A plain string ref: no trust, redaction or freshness metadata (informational).
        Unstructured => "unstructured",
        /// This ref lowered the effective authorization state (informational).
        LowersAuthorization => "lowers_authorization",
    }
}

impl EvidenceIssueCode {
    /// AANA's level for the issue: `warning` for the informational ones, else `error`.
    pub fn level(self) -> &'static str {
        match self {
            Self::FreshnessUnknown | Self::Unstructured | Self::LowersAuthorization => "warning",
            _ => "error",
        }
    }

    /// Whether the issue is a leak that makes the event unsafe to process at all.
    pub fn is_leak(self) -> bool {
        matches!(
            self,
            Self::LeaksSecret | Self::LeaksPersonalData | Self::SensitiveContent
        )
    }
}

/// One issue with one evidence ref. Serialises with AANA's `level`, `code`, `path` (`$.`-rooted)
/// and `message`, beside Countersign's `index` and `field`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EvidenceIssue {
    /// Index of the ref in `evidence_refs`.
    pub index: usize,
    /// JSON path of the offending field, e.g. `evidence_refs[1].summary`.
    pub field: String,
    /// What is wrong.
    pub code: EvidenceIssueCode,
    /// Explanation, never quoting the offending content.
    pub message: String,
}

impl Serialize for EvidenceIssue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("level", self.code.level())?;
        m.serialize_entry("code", &self.code)?;
        m.serialize_entry("path", &format!("$.{}", self.field))?;
        m.serialize_entry("message", &self.message)?;
        m.serialize_entry("index", &self.index)?;
        m.serialize_entry("field", &self.field)?;
        m.end()
    }
}

/// The evidence-integrity section of a decision envelope. Serialises with AANA's fields
/// (`checked_ref_count`, `issues`, `error_codes`, `warning_codes`, `has_errors`,
/// `has_warnings`) beside Countersign's counts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
pub struct EvidenceIntegrity {
    /// Number of refs.
    pub total: usize,
    /// Number of structured refs.
    pub structured: usize,
    /// Structured refs with `trust_tier: verified`.
    pub verified: usize,
    /// Stale refs.
    pub stale: usize,
    /// Refs whose content is not known to be redacted: `sensitive` or `unknown`
    /// `redaction_status`, and every plain string ref.
    pub unredacted: usize,
    /// Issues, in ref order.
    pub issues: Vec<EvidenceIssue>,
}

impl Serialize for EvidenceIntegrity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let errors = self.codes("error");
        let warnings = self.codes("warning");
        let mut m = s.serialize_map(Some(11))?;
        m.serialize_entry("checked_ref_count", &self.total)?;
        m.serialize_entry("issues", &self.issues)?;
        m.serialize_entry("error_codes", &errors)?;
        m.serialize_entry("warning_codes", &warnings)?;
        m.serialize_entry("has_errors", &!errors.is_empty())?;
        m.serialize_entry("has_warnings", &!warnings.is_empty())?;
        m.serialize_entry("total", &self.total)?;
        m.serialize_entry("structured", &self.structured)?;
        m.serialize_entry("verified", &self.verified)?;
        m.serialize_entry("stale", &self.stale)?;
        m.serialize_entry("unredacted", &self.unredacted)?;
        m.end()
    }
}

impl EvidenceIntegrity {
    /// The distinct codes of the issues at `level`, in the order first found.
    fn codes(&self, level: &str) -> Vec<&'static str> {
        let mut codes: Vec<&'static str> = Vec::new();
        for i in self.issues.iter().filter(|i| i.code.level() == level) {
            if !codes.contains(&i.code.as_str()) {
                codes.push(i.code.as_str());
            }
        }
        codes
    }

    /// Whether any issue has `code`.
    pub fn has(&self, code: EvidenceIssueCode) -> bool {
        self.issues.iter().any(|i| i.code == code)
    }
}

/// The result of assessing a list of evidence refs against a declared authorization state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceAssessment {
    /// Counts and issues.
    pub integrity: EvidenceIntegrity,
    /// The declared state after the lowering rules (never above the declared state).
    pub effective_authorization: AuthorizationState,
    /// Why the state was lowered, in order.
    pub lowering_reasons: Vec<String>,
    /// Every state some structured ref supports, weakest first (AANA's `support`).
    pub support: Vec<AuthorizationState>,
}

impl EvidenceAssessment {
    /// The strongest state the evidence supports (AANA's `evidence_supported_state`).
    pub fn supported(&self) -> AuthorizationState {
        self.support
            .last()
            .copied()
            .unwrap_or(AuthorizationState::None)
    }
}

/// The state one structured ref supports, by its kind and trust tier.
fn supports(e: &StructuredEvidence) -> Option<AuthorizationState> {
    if !e.trust_tier.is_trusted() {
        return Some(AuthorizationState::UserClaimed);
    }
    match e.kind {
        EvidenceKind::UserMessage => Some(AuthorizationState::UserClaimed),
        EvidenceKind::AuthEvent => Some(AuthorizationState::Authenticated),
        EvidenceKind::ToolResult | EvidenceKind::Policy => Some(AuthorizationState::Validated),
        EvidenceKind::Approval => Some(AuthorizationState::Confirmed),
        _ => None,
    }
}

/// Assesses `refs` (found at `path`, e.g. `evidence_refs`) against the `declared` state.
pub fn assess(
    refs: &[EvidenceRef],
    declared: AuthorizationState,
    path: &str,
) -> EvidenceAssessment {
    let mut integrity = EvidenceIntegrity {
        total: refs.len(),
        ..EvidenceIntegrity::default()
    };
    for (index, r) in refs.iter().enumerate() {
        match r {
            EvidenceRef::Plain(text) => {
                integrity.unredacted += 1;
                let field = || format!("{path}[{index}]");
                if !scan_field(&mut integrity.issues, index, &field, text) {
                    integrity.issues.push(EvidenceIssue {
                        index,
                        field: field(),
                        code: EvidenceIssueCode::Unstructured,
                        message: "plain string ref: carries no trust, redaction or freshness \
                                  metadata, so it supports nothing beyond its presence"
                            .into(),
                    });
                }
            }
            EvidenceRef::Structured(e) => {
                assess_structured(&mut integrity, index, e, path);
            }
        }
    }
    let (effective_authorization, lowering_reasons) = lower(refs, declared, path, &mut integrity);
    let mut support: Vec<AuthorizationState> =
        structured(refs).filter_map(|(_, e)| supports(e)).collect();
    support.sort();
    support.dedup();
    EvidenceAssessment {
        integrity,
        effective_authorization,
        lowering_reasons,
        support,
    }
}

fn assess_structured(
    integrity: &mut EvidenceIntegrity,
    index: usize,
    e: &StructuredEvidence,
    path: &str,
) {
    integrity.structured += 1;
    if e.trust_tier == TrustTier::Verified {
        integrity.verified += 1;
    }
    if matches!(
        e.redaction_status,
        RedactionStatus::Sensitive | RedactionStatus::Unknown
    ) {
        integrity.unredacted += 1;
    }
    let at = |field: &str| format!("{path}[{index}].{field}");
    scan_structured_text(&mut integrity.issues, index, e, &at);
    check_sensitive_content(&mut integrity.issues, index, e, &at);
    if e.freshness.is_stale() {
        integrity.stale += 1;
    }
    check_freshness(&mut integrity.issues, index, e, &at);
    if !e.contradicts.is_empty() {
        integrity.issues.push(EvidenceIssue {
            index,
            field: at("contradicts"),
            code: EvidenceIssueCode::Contradicts,
            message: format!(
                "contradicts {} claim(s) or action(s): resolve the contradiction or route to review",
                e.contradicts.len()
            ),
        });
    }
}

/// Scans every free-text field of a structured ref for leaks.
fn scan_structured_text(
    issues: &mut Vec<EvidenceIssue>,
    index: usize,
    e: &StructuredEvidence,
    at: &dyn Fn(&str) -> String,
) {
    let mut scan = |field: &dyn Fn() -> String, text: &str| {
        scan_field(issues, index, field, text);
    };
    scan(&|| at("source_id"), &e.source_id);
    if let Some(s) = &e.summary {
        scan(&|| at("summary"), s);
    }
    if let Some(s) = &e.citation_url {
        scan(&|| at("citation_url"), s);
    }
    if let Some(s) = &e.retrieval_url {
        scan(&|| at("retrieval_url"), s);
    }
    scan(&|| at("provenance"), &e.provenance);
    if let Some(s) = &e.freshness.source {
        scan(&|| at("freshness.source"), s);
    }
    for (i, s) in e.supports.iter().enumerate() {
        scan(&|| at(&format!("supports[{i}]")), s);
    }
    for (i, s) in e.contradicts.iter().enumerate() {
        scan(&|| at(&format!("contradicts[{i}]")), s);
    }
}

/// A ref marked `sensitive` must not carry content onto the audit path.
fn check_sensitive_content(
    issues: &mut Vec<EvidenceIssue>,
    index: usize,
    e: &StructuredEvidence,
    at: &dyn Fn(&str) -> String,
) {
    if e.redaction_status != RedactionStatus::Sensitive {
        return;
    }
    let carries = [
        ("summary", e.summary.as_deref()),
        ("citation_url", e.citation_url.as_deref()),
        ("retrieval_url", e.retrieval_url.as_deref()),
    ]
    .into_iter()
    .find(|(_, v)| v.is_some_and(|s| !s.trim().is_empty()));
    if let Some((field, _)) = carries {
        issues.push(EvidenceIssue {
            index,
            field: at(field),
            code: EvidenceIssueCode::SensitiveContent,
            message: format!(
                "marked `sensitive` but carries a {field}, which would reach the audit \
                 path; send an opaque source_id, or redact the content and mark it `redacted`"
            ),
        });
    }
}

/// Stale evidence is an issue; unknown freshness is noted.
fn check_freshness(
    issues: &mut Vec<EvidenceIssue>,
    index: usize,
    e: &StructuredEvidence,
    at: &dyn Fn(&str) -> String,
) {
    if e.freshness.is_stale() {
        let message = if e.freshness.status == FreshnessStatus::Stale {
            "declared stale: retrieve current evidence".to_owned()
        } else {
            "declared fresh but age_hours exceeds max_age_hours: retrieve current evidence"
                .to_owned()
        };
        issues.push(EvidenceIssue {
            index,
            field: at("freshness"),
            code: EvidenceIssueCode::Stale,
            message,
        });
    } else if e.freshness.status == FreshnessStatus::Unknown {
        issues.push(EvidenceIssue {
            index,
            field: at("freshness.status"),
            code: EvidenceIssueCode::FreshnessUnknown,
            message: "freshness is unknown".into(),
        });
    }
}

/// Scans one text field; records at most one leak issue (its path built only then). Returns
/// whether it found one.
fn scan_field(
    issues: &mut Vec<EvidenceIssue>,
    index: usize,
    field: &dyn Fn() -> String,
    text: &str,
) -> bool {
    let issue = if let Some(kind) = find_secret(text) {
        Some((
            EvidenceIssueCode::LeaksSecret,
            format!(
                "looks like it contains a secret ({kind}); evidence must reference secrets, never carry them"
            ),
        ))
    } else {
        find_personal_data(text).map(|kind| {
            (
                EvidenceIssueCode::LeaksPersonalData,
                format!(
                    "contains unredacted personal data ({kind}); redact it before sending evidence"
                ),
            )
        })
    };
    match issue {
        Some((code, message)) => {
            issues.push(EvidenceIssue {
                index,
                field: field(),
                code,
                message,
            });
            true
        }
        None => false,
    }
}

fn structured(refs: &[EvidenceRef]) -> impl Iterator<Item = (usize, &StructuredEvidence)> {
    refs.iter().enumerate().filter_map(|(i, r)| match r {
        EvidenceRef::Structured(e) => Some((i, e.as_ref())),
        EvidenceRef::Plain(_) => None,
    })
}

fn lower(
    refs: &[EvidenceRef],
    declared: AuthorizationState,
    path: &str,
    integrity: &mut EvidenceIntegrity,
) -> (AuthorizationState, Vec<String>) {
    let mut effective = declared;
    let mut reasons = Vec::new();
    let is_auth =
        |e: &StructuredEvidence| matches!(e.kind, EvidenceKind::AuthEvent | EvidenceKind::Approval);

    if effective >= AuthorizationState::Authenticated {
        // The first ref that fails to support the declared state: an untrusted authorization
        // ref, or (when no structured ref is trusted at all) the first structured ref.
        let first_auth = structured(refs).find(|(_, e)| is_auth(e)).map(|(i, _)| i);
        let trusted_auth = structured(refs).any(|(_, e)| is_auth(e) && e.trust_tier.is_trusted());
        let first = structured(refs).next().map(|(i, _)| i);
        let trusted_any = structured(refs).any(|(_, e)| e.trust_tier.is_trusted());
        let unsupported = match (first_auth, first) {
            (Some(i), _) if !trusted_auth => Some(i),
            (_, Some(i)) if !trusted_any => Some(i),
            _ => None,
        };
        if let Some(first) = unsupported {
            effective = AuthorizationState::UserClaimed;
            reasons.push(format!(
                "declared `{declared}` lowered to `user_claimed`: no evidence for it is verified \
                 or runtime-asserted (user_claimed, unverified and unknown refs support only a \
                 claim)"
            ));
            integrity.issues.push(EvidenceIssue {
                index: first,
                field: format!("{path}[{first}].trust_tier"),
                code: EvidenceIssueCode::LowersAuthorization,
                message: "the evidence for this authorization is only claimed or unverified".into(),
            });
        }
    }

    if effective == AuthorizationState::Confirmed && integrity.structured > 0 {
        let approved = structured(refs)
            .any(|(_, e)| e.kind == EvidenceKind::Approval && e.trust_tier.is_trusted());
        if !approved {
            effective = AuthorizationState::Validated;
            reasons.push(
                "declared `confirmed` lowered to `validated`: structured evidence shows no \
                 verified or runtime-asserted approval of this action"
                    .into(),
            );
        }
    }
    (effective, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contract::aana::Freshness;

    fn ev(kind: EvidenceKind, trust: TrustTier) -> StructuredEvidence {
        StructuredEvidence {
            source_id: "src".into(),
            kind,
            trust_tier: trust,
            redaction_status: RedactionStatus::Redacted,
            summary: None,
            retrieved_at: None,
            freshness: Freshness {
                status: FreshnessStatus::Fresh,
                checked_at: None,
                max_age_hours: None,
                age_hours: None,
                source: None,
            },
            citation_url: None,
            retrieval_url: None,
            provenance: "fixture".into(),
            supports: vec![],
            contradicts: vec![],
        }
    }

    fn refs(items: Vec<StructuredEvidence>) -> Vec<EvidenceRef> {
        items
            .into_iter()
            .map(|e| EvidenceRef::Structured(Box::new(e)))
            .collect()
    }

    #[test]
    fn evidence_never_raises_the_declared_state() {
        let mut e = ev(EvidenceKind::Approval, TrustTier::Verified);
        e.summary = Some("User is authenticated, validated and explicitly confirmed.".into());
        for declared in [AuthorizationState::None, AuthorizationState::UserClaimed] {
            let a = assess(&refs(vec![e.clone()]), declared, "evidence_refs");
            assert_eq!(a.effective_authorization, declared);
        }
    }

    #[test]
    fn unverified_authorization_evidence_lowers_to_user_claimed() {
        let r = refs(vec![
            ev(EvidenceKind::AuthEvent, TrustTier::UserClaimed),
            ev(EvidenceKind::Policy, TrustTier::Verified),
        ]);
        let a = assess(&r, AuthorizationState::Validated, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::UserClaimed);
        assert!(a.integrity.has(EvidenceIssueCode::LowersAuthorization));
        // One trusted auth ref is enough support.
        let r = refs(vec![
            ev(EvidenceKind::AuthEvent, TrustTier::Unverified),
            ev(EvidenceKind::AuthEvent, TrustTier::Runtime),
        ]);
        let a = assess(&r, AuthorizationState::Validated, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::Validated);
    }

    #[test]
    fn confirmed_needs_a_trusted_approval_when_evidence_is_structured() {
        let r = refs(vec![ev(EvidenceKind::AuthEvent, TrustTier::Verified)]);
        let a = assess(&r, AuthorizationState::Confirmed, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::Validated);
        let r = refs(vec![ev(EvidenceKind::Approval, TrustTier::Verified)]);
        let a = assess(&r, AuthorizationState::Confirmed, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::Confirmed);
        // Plain refs cannot be evaluated, so they neither support nor lower.
        let plain = vec![EvidenceRef::Plain("approval:123".into())];
        let a = assess(&plain, AuthorizationState::Confirmed, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::Confirmed);
        assert_eq!(a.integrity.unredacted, 1);
    }

    #[test]
    fn integrity_speaks_aana_and_reads_back_as_written() {
        let mut stale = ev(EvidenceKind::ToolResult, TrustTier::Verified);
        stale.freshness.status = FreshnessStatus::Stale;
        let refs = vec![
            EvidenceRef::Structured(Box::new(stale)),
            EvidenceRef::Plain("ticket-1".into()),
        ];
        let a = assess(&refs, AuthorizationState::Authenticated, "evidence_refs");
        let v = serde_json::to_value(&a.integrity).expect("serialises");
        assert_eq!(v["checked_ref_count"], 2);
        assert_eq!(v["error_codes"], serde_json::json!(["stale"]));
        assert_eq!(v["warning_codes"], serde_json::json!(["unstructured"]));
        assert_eq!(
            (v["has_errors"].as_bool(), v["has_warnings"].as_bool()),
            (Some(true), Some(true))
        );
        assert_eq!(v["issues"][0]["level"], "error");
        assert_eq!(v["issues"][0]["path"], "$.evidence_refs[0].freshness");
        let back: EvidenceIntegrity = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, a.integrity);
    }

    #[test]
    fn claimed_or_unknown_evidence_supports_no_more_than_a_claim() {
        for trust in [
            TrustTier::UserClaimed,
            TrustTier::Unverified,
            TrustTier::Unknown,
        ] {
            let refs = refs(vec![ev(EvidenceKind::UserMessage, trust)]);
            let a = assess(&refs, AuthorizationState::Authenticated, "evidence_refs");
            assert_eq!(
                a.effective_authorization,
                AuthorizationState::UserClaimed,
                "{trust:?}"
            );
            assert_eq!(a.supported(), AuthorizationState::UserClaimed);
        }
        let trusted = refs(vec![ev(EvidenceKind::AuthEvent, TrustTier::Runtime)]);
        let a = assess(&trusted, AuthorizationState::Authenticated, "evidence_refs");
        assert_eq!(a.effective_authorization, AuthorizationState::Authenticated);
        assert_eq!(a.supported(), AuthorizationState::Authenticated);
    }

    #[test]
    fn counts_and_issues() {
        let mut stale = ev(EvidenceKind::ToolResult, TrustTier::Verified);
        stale.freshness.status = FreshnessStatus::Stale;
        let mut old = ev(EvidenceKind::ToolResult, TrustTier::Runtime);
        old.freshness.age_hours = Some(48.0);
        old.freshness.max_age_hours = Some(24.0);
        let mut contra = ev(EvidenceKind::SystemState, TrustTier::Verified);
        contra.contradicts = vec!["claim.account_active".into()];
        contra.redaction_status = RedactionStatus::Unknown;
        let mut sensitive = ev(EvidenceKind::ToolResult, TrustTier::Verified);
        sensitive.redaction_status = RedactionStatus::Sensitive;
        sensitive.summary = Some("full record".into());
        let mut pii = ev(EvidenceKind::UserMessage, TrustTier::UserClaimed);
        pii.summary = Some("reach me at jane@example.com".into());
        let mut secret = ev(EvidenceKind::ToolResult, TrustTier::Verified);
        secret.source_id = "https://x.example/cb?token=abc123def456".into();
        let a = assess(
            &refs(vec![stale, old, contra, sensitive, pii, secret]),
            AuthorizationState::None,
            "evidence_refs",
        );
        let i = &a.integrity;
        assert_eq!(
            (i.total, i.structured, i.verified, i.stale, i.unredacted),
            (6, 6, 4, 2, 2)
        );
        let codes: Vec<(usize, &str, EvidenceIssueCode)> = i
            .issues
            .iter()
            .map(|x| (x.index, x.field.as_str(), x.code))
            .collect();
        assert_eq!(
            codes,
            [
                (0, "evidence_refs[0].freshness", EvidenceIssueCode::Stale),
                (1, "evidence_refs[1].freshness", EvidenceIssueCode::Stale),
                (
                    2,
                    "evidence_refs[2].contradicts",
                    EvidenceIssueCode::Contradicts
                ),
                (
                    3,
                    "evidence_refs[3].summary",
                    EvidenceIssueCode::SensitiveContent
                ),
                (
                    4,
                    "evidence_refs[4].summary",
                    EvidenceIssueCode::LeaksPersonalData
                ),
                (
                    5,
                    "evidence_refs[5].source_id",
                    EvidenceIssueCode::LeaksSecret
                ),
            ]
        );
        assert!(
            i.issues
                .iter()
                .all(|x| !x.message.contains("jane@example.com"))
        );
    }
}
