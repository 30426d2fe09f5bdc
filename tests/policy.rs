//! The policy: loading (every error, with its line), the version, rule precedence, how the
//! gate applies it, and every route of the proposal router.

#[path = "../benches/support/policy_gen.rs"]
mod policy_gen;

use countersign::domain::contract::aana::EvidenceRef;
use countersign::domain::contract::vocab::{
    AuthorizationMode, AuthorizationState, BlastRadius, RiskDomain, RiskLevel, ToolCategory,
};
use countersign::domain::policy::model::{ActionCategory, UnknownAgents};
use countersign::domain::routing::verdict::BlockerCode;
use countersign::domain::{
    Policy, PolicyError, ProposalDecision, ProposalFacts, Route, check_value, route_proposal,
};
use serde_json::json;

const EXAMPLE: &str = include_str!("../policy.example.toml");

fn example() -> Policy {
    Policy::from_toml_str(EXAMPLE).unwrap_or_else(|e| panic!("example policy: {e:#?}"))
}

fn errors(src: &str) -> Vec<PolicyError> {
    Policy::from_toml_str(src).expect_err("invalid policy")
}

#[test]
fn the_example_policy_loads() {
    let p = example();
    assert_eq!(p.name(), Some("acme-support"));
    assert_eq!(p.tools().len(), 7);
    assert_eq!(p.agents().len(), 3);
    assert_eq!(p.defaults().unknown_agents, UnknownAgents::Refuse);
    assert_eq!(p.blast_radius().refuse_above, Some(BlastRadius::Medium));
    let crm = p.tool_rule("crm.update_contact").expect("crm rule");
    assert_eq!(crm.id, r#"tools."crm.*""#);
    assert_eq!(crm.expiry_secs, 8 * 3600);
    assert!(crm.allows_executor("n8n-crm") && !crm.allows_executor("n8n-mail"));
    assert!(p.executor_may_run("unlisted.tool", "anyone"));
    assert!(!p.executor_may_run("payments.refund", "n8n-crm"));
    assert_eq!(p.expiry_secs("payments.refund"), 3600);
    assert_eq!(p.expiry_secs("unlisted.tool"), 86_400);
}

#[test]
fn grants_are_limited_per_tool() {
    let p = example();
    assert_eq!(p.max_grant_secs("email.send"), Some(2 * 3600));
    assert_eq!(
        p.max_grant_secs("payments.refund"),
        None,
        "grantable = false"
    );
    assert_eq!(
        p.max_grant_secs("crm.update_contact"),
        Some(8 * 3600),
        "the default"
    );
    assert_eq!(p.max_grant_secs("unlisted.tool"), Some(8 * 3600));
    let bad = errors("[tools.\"a.b\"]\ngrantable = \"yes\"\nmax_grant = \"forever\"\n");
    let paths: Vec<&str> = bad.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [r#"tools."a.b".grantable"#, r#"tools."a.b".max_grant"#],
        "{bad:?}"
    );
}

#[test]
fn every_error_is_reported_with_its_line() {
    let src = r#"[policy]
name = "x"
colour = "blue"

[defaults]
required_approvals = 0
expiry = "tomorrow"
unknown_agents = "maybe"

[blast_radius]
auto_execute_max = "huge"
rollback_plan_above = "large"
extra_approvals = 2

[agents.a]
domains = []

[agents.b]
description = "no domains"

[tools."crm.[ab]"]
category = "A"

[tools."docs.search"]
category = "D"
tool_category = "public_write"
risk = "extreme"
required_approvals = 300
allowed_agents = ["a", "a", 3]
allow_phi = "yes"
expiry = 24

[tools."fast.lane"]
category = "A"
risk = "high"
tool_category = "unknown"
"#;
    let got: Vec<(Option<usize>, String)> =
        errors(src).into_iter().map(|e| (e.line, e.path)).collect();
    let want: Vec<(Option<usize>, &str)> = vec![
        (Some(3), "policy.colour"),
        (Some(6), "defaults.required_approvals"),
        (Some(7), "defaults.expiry"),
        (Some(8), "defaults.unknown_agents"),
        (Some(11), "blast_radius.auto_execute_max"),
        (Some(12), "blast_radius.rollback_plan_above"),
        (Some(13), "blast_radius.extra_approvals"),
        (Some(16), "agents.a.domains"),
        (Some(18), "agents.b"),
        (Some(21), r#"tools."crm.[ab]""#),
        (Some(25), r#"tools."docs.search".category"#),
        (Some(26), r#"tools."docs.search".tool_category"#),
        (Some(27), r#"tools."docs.search".risk"#),
        (Some(28), r#"tools."docs.search".required_approvals"#),
        (Some(29), r#"tools."docs.search".allowed_agents[1]"#),
        (Some(29), r#"tools."docs.search".allowed_agents[2]"#),
        (Some(30), r#"tools."docs.search".allow_phi"#),
        (Some(31), r#"tools."docs.search".expiry"#),
        (Some(35), r#"tools."fast.lane".risk"#),
        (Some(36), r#"tools."fast.lane".tool_category"#),
    ];
    let got_ref: Vec<(Option<usize>, &str)> = got.iter().map(|(l, p)| (*l, p.as_str())).collect();
    assert_eq!(got_ref, want);
}

#[test]
fn error_messages_say_what_to_do() {
    let e = errors("[tools.x]\ncategory = \"D\"\n");
    assert_eq!(
        e[0].to_string(),
        "line 2, column 12: tools.x.category: unknown category `D`; must be A, B or C"
    );
    let e = errors("[tools.x]\nrisk = \"extreme\"\n");
    assert_eq!(
        e[0].to_string(),
        "line 2, column 8: tools.x.risk: unknown value `extreme`; must be one of `low`, `medium`, `high`"
    );
    let e = errors("[defaults]\nexpiry = \"1y\"\n");
    assert!(
        e[0].message.contains("followed by s, m, h, d or w"),
        "{}",
        e[0]
    );
    let e = errors("[tool.x]\ncategory = \"A\"\n");
    assert_eq!(e[0].line, Some(1));
    assert!(e[0].message.starts_with("unknown key `tool`"), "{}", e[0]);
    let e = errors("tools = \"all\"\n");
    assert_eq!(
        e[0].to_string(),
        "line 1, column 9: tools: must be a table, got string"
    );
}

#[test]
fn syntax_errors_have_lines() {
    let e = errors("[defaults]\nexpiry = \"24h\"\nexpiry = \"1h\"\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].line, Some(3));
    assert!(e[0].message.starts_with("invalid TOML"), "{}", e[0]);
    let e = errors("[tools.\"a\"]\ncategory = \n");
    assert_eq!(e[0].line, Some(2));
}

#[test]
fn the_version_ignores_form_and_tracks_content() {
    let a = r#"
[policy]
name = "p"
[defaults]
expiry = "24h"
[agents.x]
domains = ["b", "a"]
[tools."crm.*"]
category = "C"
tool_category = "write"
allowed_agents = ["x", "y"]
[tools."docs.search"]
category = "A"
"#;
    // Comments, whitespace, key order, rule order, list order, equivalent spellings, and
    // defaults spelled out.
    let b = r#"# a comment
[tools."docs.search"]
category   =   "a"     # lower case is the same category
risk = "low"

[tools."crm.*"]
allowed_agents = ["y", "x"]
tool_category = "write"
category = "C"
required_approvals = 1

[agents.x]
domains = ["a", "b"]

[defaults]
unknown_agents = "refuse"
expiry = "1d"
required_approvals = 1

[policy]
name = "p"
"#;
    let va = Policy::from_toml_str(a).expect("a").version().to_owned();
    let vb = Policy::from_toml_str(b).expect("b").version().to_owned();
    assert_eq!(va, vb);
    assert!(va.starts_with("sha256:") && va.len() == 71);
    // Any semantic change moves it.
    for change in [
        a.replace("category = \"A\"", "category = \"C\""),
        a.replace("\"x\", \"y\"", "\"x\""),
        a.replace("24h", "25h"),
        a.replace("name = \"p\"", "name = \"q\""),
        format!("{a}\n[tools.\"new.tool\"]\n"),
    ] {
        assert_ne!(
            Policy::from_toml_str(&change).expect("valid").version(),
            va,
            "{change}"
        );
    }
    // The canonical form is what is hashed, and it is itself stable.
    let p = Policy::from_toml_str(a).expect("a");
    assert!(
        p.canonical_json()
            .starts_with(r#"{"agents":{"x":{"description":null,"domains":["a","b"]}}"#)
    );
}

#[test]
fn exact_names_beat_patterns_and_specific_patterns_beat_broad_ones() {
    let p = Policy::from_toml_str(
        r#"
[tools."*"]
risk = "medium"
[tools."crm.*"]
required_approvals = 2
[tools."crm.delete_*"]
required_approvals = 3
[tools."crm.delete_contact"]
required_approvals = 4
[tools."crm.???"]
required_approvals = 5
"#,
    )
    .expect("valid");
    let approvals = |name: &str| p.tool_rule(name).map(|r| r.required_approvals);
    assert_eq!(approvals("crm.delete_contact"), Some(4));
    assert_eq!(approvals("crm.delete_account"), Some(3));
    assert_eq!(approvals("crm.update"), Some(2));
    assert_eq!(approvals("crm.get"), Some(5));
    assert_eq!(approvals("email.send"), Some(1));
    assert_eq!(
        p.tool_rule("crm.delete_contact").expect("rule").id,
        r#"tools."crm.delete_contact""#
    );
    let no_catch_all = Policy::from_toml_str("[tools.\"crm.*\"]\n").expect("valid");
    assert!(no_catch_all.tool_rule("email.send").is_none());
}

fn aana(tool: &str, category: &str, state: &str, agent: Option<&str>) -> serde_json::Value {
    let mut refs = vec![json!({
        "source_id": "auth.session", "kind": "auth_event", "trust_tier": "verified",
        "redaction_status": "redacted", "provenance": "connector", "freshness": {"status": "fresh"}
    })];
    if state == "confirmed" {
        refs.push(json!({
            "source_id": "approval.1", "kind": "approval", "trust_tier": "verified",
            "redaction_status": "redacted", "provenance": "connector", "freshness": {"status": "fresh"}
        }));
    }
    let mut v = json!({
        "tool_name": tool, "tool_category": category, "authorization_state": state,
        "evidence_refs": refs, "risk_domain": "customer_support",
        "proposed_arguments": {}, "recommended_route": "accept"
    });
    if let Some(agent) = agent {
        v["agent_id"] = json!(agent);
    }
    v
}

#[test]
fn the_gate_applies_the_policy_as_floors() {
    let p = example();
    // A CRM tool declared as a public read is a write under the policy.
    let d = check_value(
        &aana(
            "crm.update_contact",
            "public_read",
            "authenticated",
            Some("sales-agent"),
        ),
        &p,
    );
    assert_eq!(d.route, Route::Ask);
    let c = d.classification.expect("classification");
    assert_eq!(
        (c.declared_category, c.effective_category),
        (ToolCategory::PublicRead, ToolCategory::Write)
    );
    assert_eq!(c.policy_rule.as_deref(), Some(r#"tools."crm.*""#));
    // A high risk floor makes an unvalidated write defer even in a low-risk domain.
    let d = check_value(&aana("payments.refund", "write", "authenticated", None), &p);
    assert_eq!(d.route, Route::Defer);
    assert!(d.classification.expect("classification").high_risk);
    // Confirmed and in its lane: accepted.
    let d = check_value(
        &aana(
            "crm.update_contact",
            "write",
            "confirmed",
            Some("sales-agent"),
        ),
        &p,
    );
    assert_eq!(d.route, Route::Accept, "{:#?}", d.reasons);
    // Lanes: the wrong agent, or none at all, is refused.
    let d = check_value(
        &aana(
            "crm.update_contact",
            "write",
            "confirmed",
            Some("support-agent"),
        ),
        &p,
    );
    assert_eq!(
        (d.route, d.hard_blockers[0].code),
        (Route::Refuse, BlockerCode::AgentNotInLane)
    );
    assert_eq!(d.rule, r#"policy:tools."crm.*".allowed_agents"#);
    let d = check_value(&aana("crm.update_contact", "write", "confirmed", None), &p);
    assert_eq!(
        (d.route, d.hard_blockers[0].code),
        (Route::Refuse, BlockerCode::AgentUnidentified)
    );
    // Category A reads follow the ladder; a Category C read needs a human.
    let d = check_value(&aana("docs.search", "public_read", "none", None), &p);
    assert_eq!(d.route, Route::Accept);
    let p2 = Policy::from_toml_str(
        "[tools.\"reports.view\"]\ncategory = \"C\"\ntool_category = \"private_read\"\n",
    )
    .expect("valid");
    let d = check_value(
        &aana("reports.view", "private_read", "authenticated", None),
        &p2,
    );
    assert_eq!(
        (d.route, d.hard_blockers[0].code),
        (Route::Ask, BlockerCode::HumanApprovalRequired)
    );
    assert_eq!(
        d.authorization_report.expect("report").required,
        Some(AuthorizationState::Confirmed)
    );
    let d = check_value(
        &aana("reports.view", "private_read", "confirmed", None),
        &p2,
    );
    assert_eq!(d.route, Route::Accept);
    assert_eq!(d.policy_version, p2.version());
}

fn facts(agent: &str, domain: &str, tool: &str) -> ProposalFacts {
    ProposalFacts {
        agent: agent.into(),
        domain: domain.into(),
        tool_name: tool.into(),
        risk_level: RiskLevel::Low,
        approval_required: false,
        gdpr: false,
        hipaa: false,
        rollback_supported: true,
        blast_radius: None,
        has_rollback_plan: false,
        authorization_mode: None,
        tool_category: None,
        authorization_state: None,
        evidence: Vec::new(),
        risk_domain: None,
    }
}

fn codes(d: &ProposalDecision) -> Vec<BlockerCode> {
    d.blockers.iter().map(|b| b.code).collect()
}

#[test]
fn category_a_auto_executes_only_when_every_condition_holds() {
    let p = example();
    let base = facts("support-agent", "customer_support", "docs.search");
    let d = route_proposal(&base, &p);
    assert_eq!(d.route, Route::Accept, "{:#?}", d.reasons);
    assert_eq!((d.category, d.required_approvals), (ActionCategory::A, 0));
    assert!(d.blockers.is_empty());
    type Tweak = fn(&mut ProposalFacts);
    let tweaks: [(&str, Tweak); 7] = [
        ("approval_required", |f| f.approval_required = true),
        ("gdpr", |f| f.gdpr = true),
        ("irreversible", |f| f.rollback_supported = false),
        ("medium risk", |f| f.risk_level = RiskLevel::Medium),
        ("hitl", |f| {
            f.authorization_mode = Some(AuthorizationMode::Hitl)
        }),
        ("blast radius small", |f| {
            f.blast_radius = Some(BlastRadius::Small)
        }),
        ("high-risk domain", |f| {
            f.risk_domain = Some(RiskDomain::Finance)
        }),
    ];
    for (name, tweak) in tweaks {
        let mut f = base.clone();
        tweak(&mut f);
        let d = route_proposal(&f, &p);
        assert_eq!(d.route, Route::Ask, "{name}: {:#?}", d.reasons);
        assert_eq!(codes(&d), [BlockerCode::HumanApprovalRequired], "{name}");
        assert_eq!(d.required_approvals, 1, "{name}");
    }
    // `auto` mode cannot loosen anything.
    let mut f = base.clone();
    f.authorization_mode = Some(AuthorizationMode::Auto);
    assert_eq!(route_proposal(&f, &p).route, Route::Accept);
}

#[test]
fn unlisted_tools_are_category_c() {
    let p = example();
    let d = route_proposal(&facts("support-agent", "chat", "calendar.create_event"), &p);
    assert_eq!((d.route, d.category), (Route::Ask, ActionCategory::C));
    assert_eq!(d.rule, "default:unlisted_tools_are_category_c");
    assert_eq!(d.required_approvals, 1);
    assert_eq!(d.expires_after_secs, 86_400);
    assert!(
        d.reasons
            .iter()
            .any(|r| r.contains("honoured only for Category A"))
    );
    // Category B is handled as C.
    let pb = Policy::from_toml_str(
        "[defaults]\nunknown_agents = \"allow\"\n[tools.\"sync.*\"]\ncategory = \"B\"\n",
    )
    .expect("valid");
    let d = route_proposal(&facts("any", "ops", "sync.metadata"), &pb);
    assert_eq!((d.route, d.category), (Route::Ask, ActionCategory::B));
}

#[test]
fn every_refuse_path() {
    let p = example();
    let cases: Vec<(ProposalFacts, BlockerCode, &str)> = vec![
        (
            facts("sales-agent", "chat", "crm.update_contact"),
            BlockerCode::DomainNotOwned,
            "policy:agents.sales-agent.domains",
        ),
        (
            facts("rogue-agent", "sales", "crm.update_contact"),
            BlockerCode::AgentUnknown,
            "policy:defaults.unknown_agents",
        ),
        (
            facts("support-agent", "customer_support", "crm.update_contact"),
            BlockerCode::AgentNotInLane,
            r#"policy:tools."crm.*".allowed_agents"#,
        ),
        (
            ProposalFacts {
                authorization_mode: Some(AuthorizationMode::Blocked),
                ..facts("support-agent", "chat", "docs.search")
            },
            BlockerCode::AuthorizationBlocked,
            "builtin:authorization_mode_blocked",
        ),
        (
            ProposalFacts {
                hipaa: true,
                ..facts("sales-agent", "sales", "email.send")
            },
            BlockerCode::PhiNotAllowed,
            r#"policy:tools."email.send".allow_phi"#,
        ),
        (
            ProposalFacts {
                hipaa: true,
                ..facts("clinic-agent", "healthcare", "fax.send")
            },
            BlockerCode::PhiNotAllowed,
            "default:unlisted_tools_do_not_allow_phi",
        ),
        (
            ProposalFacts {
                blast_radius: Some(BlastRadius::Large),
                has_rollback_plan: true,
                ..facts("sales-agent", "sales", "crm.update_contact")
            },
            BlockerCode::BlastRadiusExceeded,
            "policy:blast_radius.refuse_above",
        ),
        (
            ProposalFacts {
                blast_radius: Some(BlastRadius::Medium),
                ..facts("sales-agent", "sales", "crm.update_contact")
            },
            BlockerCode::RollbackPlanRequired,
            "policy:blast_radius.rollback_plan_above",
        ),
        (
            ProposalFacts {
                evidence: vec![EvidenceRef::Plain("note: call 555-123-4567".into())],
                ..facts("support-agent", "chat", "docs.search")
            },
            BlockerCode::EvidenceLeaksPersonalData,
            "builtin:evidence_leaks_personal_data",
        ),
    ];
    for (f, code, rule) in cases {
        let d = route_proposal(&f, &p);
        assert_eq!(d.route, Route::Refuse, "{code}: {:#?}", d.reasons);
        assert!(codes(&d).contains(&code), "{code}: {:?}", codes(&d));
        assert_eq!(d.rule, rule, "{code}");
        assert_eq!(d.required_approvals, 0, "{code}");
    }
}

#[test]
fn compliance_and_risk() {
    let p = example();
    // PHI with the allow-listed tool: never auto, always a human, risk high.
    let f = ProposalFacts {
        hipaa: true,
        ..facts("clinic-agent", "healthcare", "calendar.create_appointment")
    };
    let d = route_proposal(&f, &p);
    assert_eq!((d.route, d.effective_risk), (Route::Ask, RiskLevel::High));
    assert!(
        d.blockers[0]
            .message
            .contains("PHI (HIPAA) always needs explicit approval")
    );
    // GDPR raises risk to at least medium and needs approval.
    let f = ProposalFacts {
        gdpr: true,
        ..facts("support-agent", "chat", "docs.search")
    };
    let d = route_proposal(&f, &p);
    assert_eq!((d.route, d.effective_risk), (Route::Ask, RiskLevel::Medium));
    // Risk is never lowered: a policy floor of low does not lower a declared high.
    let f = ProposalFacts {
        risk_level: RiskLevel::High,
        ..facts("support-agent", "chat", "docs.search")
    };
    assert_eq!(route_proposal(&f, &p).effective_risk, RiskLevel::High);
    // Floors raise: crm.* is medium, crm.delete_* high (and destructive).
    let d = route_proposal(&facts("sales-agent", "sales", "crm.delete_contact"), &p);
    assert_eq!(
        (d.effective_risk, d.required_approvals, d.expires_after_secs),
        (RiskLevel::High, 2, 4 * 3600)
    );
}

#[test]
fn blast_radius_adds_approvals() {
    let p = Policy::from_toml_str(
        "[defaults]\nunknown_agents = \"allow\"\n[blast_radius]\nextra_approvals_above = \"small\"\nextra_approvals = 2\n",
    )
    .expect("valid");
    let mut f = facts("a", "ops", "infra.scale");
    f.blast_radius = Some(BlastRadius::Small);
    assert_eq!(route_proposal(&f, &p).required_approvals, 1);
    f.blast_radius = Some(BlastRadius::Large);
    let d = route_proposal(&f, &p);
    assert_eq!(
        (d.route, d.required_approvals, d.effective_risk),
        (Route::Ask, 3, RiskLevel::High)
    );
}

#[test]
fn proposals_use_the_ladder_and_evidence_when_they_carry_them() {
    let p = example();
    // A Category A private read with no declared authorization cannot auto-execute: a
    // reviewer's approval stands in for the authentication (ask, not defer).
    let mut f = facts("support-agent", "customer_support", "tickets.preview_reply");
    let d = route_proposal(&f, &p);
    assert_eq!(d.route, Route::Ask, "{:#?}", d.reasons);
    assert_eq!(codes(&d), [BlockerCode::AuthorizationBelowRequired]);
    assert_eq!(d.required_approvals, 1);
    // Declared `none`: the AANA ladder applies in full.
    f.authorization_state = Some(AuthorizationState::None);
    let d = route_proposal(&f, &p);
    assert_eq!(d.route, Route::Defer, "{:#?}", d.reasons);
    assert_eq!(
        codes(&d),
        [
            BlockerCode::AuthorizationBelowRequired,
            BlockerCode::EvidenceMissing
        ]
    );
    // Authenticated, with evidence: auto-executes.
    f.authorization_state = Some(AuthorizationState::Authenticated);
    f.evidence = vec![EvidenceRef::Plain("auth.session".into())];
    let d = route_proposal(&f, &p);
    assert_eq!(d.route, Route::Accept, "{:#?}", d.reasons);
    assert_eq!(
        d.authorization_report.expect("report").required,
        Some(AuthorizationState::Authenticated)
    );
    // Stale evidence defers even without a tool category.
    let stale: EvidenceRef = serde_json::from_value(json!({
        "source_id": "crm.snapshot", "kind": "tool_result", "trust_tier": "verified",
        "redaction_status": "redacted", "provenance": "connector", "freshness": {"status": "stale"}
    }))
    .expect("evidence");
    let f = ProposalFacts {
        evidence: vec![stale],
        ..facts("support-agent", "chat", "calendar.create_event")
    };
    let d = route_proposal(&f, &p);
    assert_eq!(d.route, Route::Defer);
    assert_eq!(
        codes(&d),
        [
            BlockerCode::HumanApprovalRequired,
            BlockerCode::EvidenceStale
        ]
    );
}

#[test]
fn the_benchmark_policy_generator_makes_valid_policies() {
    let src = policy_gen::generate_policy(100);
    let p = Policy::from_toml_str(&src).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(p.tools().len(), 100);
    assert_eq!(p.agents().len(), 10);
    let kinds: Vec<Option<bool>> = policy_gen::BENCH_TOOLS
        .iter()
        .map(|(tool, _)| p.tool_rule(tool).map(|r| r.is_exact()))
        .collect();
    assert_eq!(
        kinds,
        [Some(true), Some(false), Some(false), Some(false), None]
    );
    assert_eq!(
        p.tool_rule("svc5.update_record").expect("rule").pattern,
        "svc5.*_record"
    );
    assert_eq!(
        p.tool_rule("svc9.update_status").expect("rule").pattern,
        "svc9.*"
    );
    assert!(Policy::from_toml_str(&policy_gen::generate_policy(1000)).is_ok());
}

#[test]
fn escalation_comes_from_the_tool_else_the_domain_else_the_defaults() {
    let p = example();
    let payments = p
        .escalation_for("payments.refund", "billing")
        .expect("the tool's");
    assert_eq!(payments.after_secs, 15 * 60);
    assert_eq!(
        payments.to,
        ["payments-oncall", "admin"],
        "tiers keep their order"
    );
    let sales = p
        .escalation_for("crm.update_contact", "sales")
        .expect("the domain's");
    assert_eq!(sales.after_secs, 3600);
    assert_eq!(sales.to, ["sales-lead", "admin"]);
    let other = p
        .escalation_for("crm.update_contact", "chat")
        .expect("the defaults'");
    assert_eq!(other.after_secs, 4 * 3600);
    assert_eq!(p.shortest_escalation(), Some(15 * 60));
    assert_eq!(Policy::builtin().shortest_escalation(), None);
    assert!(
        Policy::builtin()
            .escalation_for("anything", "anywhere")
            .is_none()
    );
}

#[test]
fn escalation_keys_are_validated_at_load() {
    let src = r#"[defaults]
escalate_after = "30m"

[domains.billing]
escalate_after = "never"
escalate_to = ["lead", "compliance", "lead", "Bad Name", 3]

[domains."not a domain"]
escalate_to = ["x"]

[tools."crm.*"]
escalate_to = []
escalate_after = "1h"
"#;
    let errs = errors(src);
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let has = |needle: &str| shown.iter().any(|e| e.contains(needle));
    assert!(
        has("line 1") && has("defaults: `escalate_after` and `escalate_to` go together"),
        "{shown:#?}"
    );
    assert!(has(
        "domains.billing.escalate_after: must be a whole number"
    ));
    assert!(has("escalate_to[1]: compliance officers decide nothing"));
    assert!(has("escalate_to[2]: `lead` is listed twice"));
    assert!(has("escalate_to[3]: `Bad Name` is not a username or role"));
    assert!(has("escalate_to[4]: must be a name, got integer"));
    assert!(has("is not a domain name"));
    assert!(has(
        r#"tools."crm.*".escalate_to: must name at least one tier"#
    ));
}

#[test]
fn policies_without_escalation_keep_their_version() {
    let plain = "[defaults]\nexpiry = \"8h\"\n";
    let with = "[defaults]\nexpiry = \"8h\"\nescalate_after = \"1h\"\nescalate_to = [\"admin\"]\n";
    let a = Policy::from_toml_str(plain).expect("plain");
    let b = Policy::from_toml_str(with).expect("with");
    assert_ne!(a.version(), b.version(), "escalation changes what happens");
    assert!(!a.canonical_json().contains("escalate"));
}
