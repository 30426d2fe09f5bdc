//! What a `tools/call` through the gateway becomes: a seed 004 tool proposal from the calling
//! agent, in the upstream's domain, for the tool's internal name, with the arguments as its
//! parameters and the pinned definition's hash (hex) as the tool's version (the revision the call
//! was made against). The intent comes from the call's `_meta` (`countersign/intent`,
//! `countersign/reasoning`) or else from the tool's description, marked as such.

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::domain::contract::canonical::{rfc8785, sha256_hex};

use super::tool::{Definition, ToolName};

/// `_meta` key of the agent's one-line intent.
pub const META_INTENT: &str = "countersign/intent";
/// `_meta` key of the agent's reasoning.
pub const META_REASONING: &str = "countersign/reasoning";

/// What every gateway call's idempotency key starts with.
pub const KEY_START: &str = "gateway-";

/// How long a gateway call's key prefix is: [`KEY_START`], 32 hex digits of the call's digest
/// and `-`. The index `proposals_open_gateway_call`, which keeps one copy of a call open, reads
/// this many characters.
pub const KEY_PREFIX_LEN: usize = 41;

/// How long a gateway call's whole key is, in characters: its prefix and the proposal's id.
pub const KEY_LEN: usize = KEY_PREFIX_LEN + 36;

/// The prefix naming the call of gateway idempotency key `key` (its agent's tool, arguments and
/// definition: [`CallInput::key_prefix`]); `None` for a key of any other shape. Only a key of
/// exactly the gateway's shape is one (the index `proposals_open_gateway_call` checks the same),
/// so an agent's own keys that merely start with `gateway-` stay its own.
pub fn call_prefix(key: &str) -> Option<&str> {
    let digest = key.get(KEY_START.len()..KEY_PREFIX_LEN - 1)?;
    let shaped = key.starts_with(KEY_START)
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && key.as_bytes().get(KEY_PREFIX_LEN - 1) == Some(&b'-')
        && key.chars().count() == KEY_LEN;
    shaped.then(|| &key[..KEY_PREFIX_LEN])
}

/// Longest intent summary a proposal takes (seed 004).
const MAX_SUMMARY: usize = 500;
/// Longest reasoning a proposal takes (seed 004).
const MAX_REASONING: usize = 10_000;

/// One call, as the gateway received it.
#[derive(Debug, Clone)]
pub struct CallInput<'a> {
    /// The calling agent.
    pub agent: &'a str,
    /// The upstream's domain.
    pub domain: &'a str,
    /// The tool.
    pub name: &'a ToolName,
    /// Its pinned definition.
    pub definition: &'a Definition,
    /// The call's arguments.
    pub arguments: &'a Map<String, Value>,
    /// The call's `_meta`, if any.
    pub meta: Option<&'a Map<String, Value>>,
}

impl CallInput<'_> {
    /// The idempotency key's prefix shared by every call of this agent to this tool, with
    /// these arguments, against this definition: a call finds an earlier one still open by it.
    pub fn key_prefix(&self) -> String {
        let call = json!({
            "tool": self.name.internal(),
            "definition": self.definition.sha256(),
            "arguments": self.arguments,
        });
        let digest = sha256_hex(&rfc8785(&call).unwrap_or_default());
        format!("{KEY_START}{}-", &digest[..32])
    }
}

fn meta_text<'a>(meta: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    meta.and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// At most `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => text[..at].to_owned(),
        None => text.to_owned(),
    }
}

/// The seed 004 proposal body a call becomes, with id `proposal_id`, made at `now`.
pub fn proposal_for(call: &CallInput<'_>, proposal_id: Uuid, now: OffsetDateTime) -> Value {
    let internal = call.name.internal();
    let description = call
        .definition
        .description()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let summary = match meta_text(call.meta, META_INTENT) {
        Some(intent) => cut(intent, MAX_SUMMARY),
        None => {
            let first = description
                .and_then(|d| d.lines().next())
                .unwrap_or("no description");
            cut(
                &format!("Call {internal} (from the tool's description: {first})"),
                MAX_SUMMARY,
            )
        }
    };
    let reasoning = match meta_text(call.meta, META_REASONING) {
        Some(r) => cut(r, MAX_REASONING),
        None => cut(
            &format!(
                "The agent called {internal} through the MCP gateway without giving its \
                 reasoning. The tool's description: {}",
                description.unwrap_or("(none)")
            ),
            MAX_REASONING,
        ),
    };
    let read_only = call.definition.read_only();
    let mut body = json!({
        "proposal_id": proposal_id,
        "proposed_by": call.agent,
        "timestamp": now.format(&Rfc3339).unwrap_or_default(),
        "domain": call.domain,
        "tool": {"name": internal, "version": call.definition.version()},
        "intent": {"summary": summary, "reasoning": reasoning},
        "parameters": call.arguments,
        "risk_level": call.definition.risk().as_str(),
        "approval_required": !read_only,
        "compliance_context": {"gdpr": false, "hipaa": false},
        "idempotency_key": format!("{}{proposal_id}", call.key_prefix()),
        "rollback_supported": read_only,
    });
    if read_only {
        // It changes nothing: the smallest blast radius, and nothing to roll back.
        body["blast_radius"] = json!("tiny");
        body["rollback_plan"] = json!({
            "type": "none",
            "instructions": "A read-only tool (readOnlyHint): the call changes nothing, so \
                             there is nothing to roll back."
        });
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contract::proposal::ToolProposal;

    fn definition(annotations: Value) -> Definition {
        Definition::of(&json!({
            "name": "write_file",
            "description": "Create a new file or overwrite an existing one.\nMore text.",
            "inputSchema": {"type": "object"},
            "annotations": annotations,
        }))
    }

    #[test]
    fn a_call_is_a_valid_proposal_bound_to_its_definition() {
        let name = ToolName::new("files", "write_file").expect("name");
        let def = definition(json!({"destructiveHint": true}));
        let args = json!({"path": "/srv/a.txt", "content": "hi"});
        let call = CallInput {
            agent: "sales-agent",
            domain: "files",
            name: &name,
            definition: &def,
            arguments: args.as_object().expect("object"),
            meta: None,
        };
        let id = Uuid::now_v7();
        let body = proposal_for(&call, id, OffsetDateTime::UNIX_EPOCH);
        let parsed = ToolProposal::parse(&body).expect("a valid seed 004 proposal");
        assert_eq!(parsed.tool.name, "files.write_file");
        assert_eq!(parsed.tool.version, def.version());
        assert_eq!(parsed.parameters, *args.as_object().expect("object"));
        assert_eq!(parsed.risk_level.as_str(), "high");
        assert!(
            parsed
                .intent
                .summary
                .contains("from the tool's description")
        );
        assert!(parsed.idempotency_key.starts_with(&call.key_prefix()));
        assert!(!parsed.rollback_supported);
    }

    #[test]
    fn the_agents_meta_gives_the_intent_and_read_only_says_nothing_to_roll_back() {
        let name = ToolName::new("files", "read_file").expect("name");
        let def = definition(json!({"readOnlyHint": true}));
        let args = Map::new();
        let meta = json!({META_INTENT: "Read the report", META_REASONING: "The user asked."});
        let call = CallInput {
            agent: "a",
            domain: "files",
            name: &name,
            definition: &def,
            arguments: &args,
            meta: meta.as_object(),
        };
        let body = proposal_for(&call, Uuid::now_v7(), OffsetDateTime::UNIX_EPOCH);
        let parsed = ToolProposal::parse(&body).expect("valid");
        assert_eq!(parsed.intent.summary, "Read the report");
        assert_eq!(parsed.intent.reasoning, "The user asked.");
        assert_eq!(parsed.risk_level.as_str(), "low");
        assert!(!parsed.approval_required);
        assert!(parsed.rollback_supported && parsed.rollback_plan.is_some());
        assert_eq!(parsed.blast_radius.map(|b| b.as_str()), Some("tiny"));
    }

    #[test]
    fn other_arguments_or_another_definition_are_another_call() {
        let name = ToolName::new("files", "write_file").expect("name");
        let (a, b) = (
            definition(json!({})),
            definition(json!({"readOnlyHint": true})),
        );
        let one = json!({"path": "x"});
        let two = json!({"path": "y"});
        let key = |d: &Definition, args: &Value| {
            CallInput {
                agent: "a",
                domain: "files",
                name: &name,
                definition: d,
                arguments: args.as_object().expect("object"),
                meta: None,
            }
            .key_prefix()
        };
        assert_eq!(key(&a, &one), key(&a, &one));
        assert_eq!(key(&a, &one).len(), KEY_PREFIX_LEN, "as the index reads it");
        let full = format!("{}{}", key(&a, &one), Uuid::nil());
        assert_eq!(call_prefix(&full), Some(key(&a, &one).as_str()));
        assert_eq!(call_prefix("gateway-short"), None);
        assert_eq!(call_prefix(&full.replacen("gateway", "gatewax", 1)), None);
        // An agent's own key that starts alike is not a gateway call's.
        let own = format!("gateway-payments-batch-2026-11-30-0001-{}", Uuid::nil());
        assert_eq!(call_prefix(&own), None);
        assert_eq!(call_prefix(&format!("{full}x")), None);
        assert_eq!(call_prefix(&full.to_uppercase()), None);
        assert_ne!(key(&a, &one), key(&a, &two));
        assert_ne!(key(&a, &one), key(&b, &one));
    }
}
