//! Synthetic policies for the benchmark (and the test that keeps this generator honest).
//!
//! `generate_policy(n)` writes a policy with `n` tool rules spread over services `svc0..svc9`,
//! in tiers of ten: broad patterns (`svcK.*`), prefix patterns (`svcK.read_*`), suffix patterns
//! (`svcK.*_record`), then exact names (`svcK.op_T`), with every category, tool category and
//! risk level, lanes on the exact rules, executors and PHI allow-listing, plus ten registered
//! agents. [`BENCH_TOOLS`] names one tool of each kind of match, and one no rule matches (which
//! scans every pattern).

use std::fmt::Write as _;

/// Services the generated rules are spread over.
pub const SERVICES: usize = 10;

/// `(tool name, agent in its lane)`: exact rule, prefix pattern, suffix pattern, broad
/// pattern, and no rule at all.
pub const BENCH_TOOLS: [(&str, &str); 5] = [
    ("svc3.op_3", "agent-3"),
    ("svc7.read_balance", "agent-7"),
    ("svc5.update_record", "agent-5"),
    ("svc9.update_status", "agent-9"),
    ("unlisted.tool", "agent-1"),
];

/// A policy with `rules` tool rules (see the module docs).
pub fn generate_policy(rules: usize) -> String {
    let mut out = String::from(
        "[policy]\nname = \"bench\"\n\n[defaults]\nrequired_approvals = 1\nexpiry = \"24h\"\n\
         unknown_agents = \"refuse\"\n\n[blast_radius]\nauto_execute_max = \"tiny\"\n\
         rollback_plan_above = \"small\"\nextra_approvals_above = \"medium\"\nextra_approvals = 1\n\n",
    );
    for a in 0..SERVICES {
        let _ = writeln!(
            out,
            "[agents.agent-{a}]\ndomains = [\"domain-{a}\", \"shared\"]\n"
        );
    }
    for i in 0..rules {
        let svc = i % SERVICES;
        let tier = i / SERVICES;
        let pattern = match tier {
            0 => format!("svc{svc}.*"),
            1 => format!("svc{svc}.read_*"),
            2 => format!("svc{svc}.*_record"),
            _ => format!("svc{svc}.op_{tier}"),
        };
        let (category, tool_category, risk) = match i % 4 {
            0 => ("A", "public_read", "low"),
            1 => ("A", "private_read", "low"),
            2 => ("C", "write", "medium"),
            _ => ("C", "write", "high"),
        };
        let _ = writeln!(
            out,
            "[tools.\"{pattern}\"]\ncategory = \"{category}\"\ntool_category = \"{tool_category}\"\n\
             risk = \"{risk}\"\nrequired_approvals = {}\nexpiry = \"{}h\"\nallow_phi = {}",
            1 + i % 3,
            1 + i % 48,
            i % 7 == 0,
        );
        if tier >= 3 {
            let _ = writeln!(
                out,
                "allowed_agents = [\"agent-{svc}\", \"agent-{}\"]\nallowed_executors = [\"exec-{svc}\"]",
                (svc + 1) % SERVICES
            );
        }
        out.push('\n');
    }
    out
}
