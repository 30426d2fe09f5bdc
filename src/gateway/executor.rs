//! The built-in gateway executor: leases the approved gateway calls (its own executor
//! identity, scoped to the configured upstreams' tools; the commands of those tools name it as
//! their only executor), verifies each grant, makes the call to the upstream with exactly the
//! approved tool and arguments while heartbeating the lease, and reports the outcome through
//! the same use case as any executor.
//!
//! - An upstream's error result is `failed`, `side_effect: none` for a read-only tool, else
//!   `possible` (so the retry rules and `outcome_unknown` hold).
//! - A call that could not be sent (the upstream is down, the tool's definition changed) is
//!   `failed` with `side_effect: none`.
//! - An upstream that does not answer within [`UPSTREAM_CALL_LIMIT`] is treated as one whose
//!   answer was lost: `failed`, with the side effect the tool's annotations allow.
//! - A Countersign that dies during a call leaves the lease to lapse: `outcome_unknown`, never
//!   run again by itself.
//! - The result is kept with the command up to [`MAX_RESULT_BYTES`]; a larger one is cut, with
//!   a marker giving the whole result's size and SHA-256.

use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{CallError, Gateway, ServedTool};
use crate::domain::command::retry::SideEffect;
use crate::domain::command::scope::ToolScope;
use crate::domain::command::{CommandSpec, Outcome};
use crate::domain::contract::canonical::sha256_hex;
use crate::domain::gateway::call::call_prefix;
use crate::domain::gateway::{GATEWAY_EXECUTOR, TRUNCATED, ToolName, Upstream};
use crate::domain::principal::Principal;
use crate::domain::record::CommandRecord;
use crate::metrics::{GatewayStep, Metrics};
use crate::service::{LeaseRequest, Leased, Report, Services};

/// The largest result kept with a command, in bytes of its JSON.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;
/// The longest an upstream has to answer a call (unless the proposal's `execution.timeout_ms`
/// says otherwise): then the call is `failed` as one whose answer was lost, so a write is
/// `outcome_unknown` for a person to settle, and the agent is answered.
pub const UPSTREAM_CALL_LIMIT: Duration = Duration::from_secs(600);
/// Calls made at once, by the loop and where they are submitted together.
pub(super) const CONCURRENT_CALLS: usize = 64;
/// Lease requests in flight at once: a lease is a durable write, so several at once let a
/// burst of approved calls start together (the writer commits them in one group).
const LEASERS: usize = 8;
/// Each lease's length; heartbeats renew it every third of it.
const LEASE_SECONDS: u64 = 30;
/// How long one lease request waits for a command.
const LEASE_WAIT: Duration = Duration::from_secs(20);

/// The executor's scope: the configured upstreams' tools.
pub(super) fn scope(upstreams: &[Upstream]) -> Option<ToolScope> {
    let patterns: Vec<String> = upstreams.iter().map(|u| format!("{}.*", u.name)).collect();
    ToolScope::parse_list(&patterns.join(",")).ok()
}

/// The executor's lease: its identity and scope, waiting `wait` for a command.
fn lease_request(scope: ToolScope, wait: Duration) -> LeaseRequest {
    LeaseRequest {
        executor: GATEWAY_EXECUTOR.to_owned(),
        scope: Some(scope),
        wanted: None,
        lease_seconds: LEASE_SECONDS,
        wait,
    }
}

/// A call slot taken before an agent's call is submitted, and the lease to ask for with it:
/// an accepted call's command leased to this executor in the same transaction
/// ([`Services::submit_gateway_call`]), run at once by [`run_leased`] in that slot.
pub(crate) struct RunAtOnce {
    /// The lease to take with the submission.
    pub(crate) request: LeaseRequest,
    slot: OwnedSemaphorePermit,
}

/// A free call slot and the lease to ask for, if there is a free slot (else the call, if
/// accepted, waits in the queue for the loop: a leased call never waits for a slot while its
/// lease runs down) and the executor runs.
pub(crate) fn run_at_once(gateway: &Gateway) -> Option<RunAtOnce> {
    let scope = gateway.scope.clone()?;
    let slot = Arc::clone(&gateway.call_slots).try_acquire_owned().ok()?;
    Some(RunAtOnce {
        request: lease_request(scope, Duration::ZERO),
        slot,
    })
}

/// Runs a call leased to this executor as it was submitted, in the slot taken for it, and
/// reports it: the command as reported, if the report was taken.
pub(crate) async fn run_leased(
    gateway: &Gateway,
    services: &Services,
    leased: Leased,
    run: RunAtOnce,
) -> Option<CommandRecord> {
    let ran = execute(gateway, services, leased, true).await;
    drop(run.slot);
    ran
}

/// Starts the executor's loop.
pub(crate) fn spawn(gateway: Arc<Gateway>, services: Services) {
    let Some(scope) = gateway.scope.clone() else {
        tracing::error!("the gateway executor's scope did not parse; it does not run");
        return;
    };
    let slots = Arc::clone(&gateway.call_slots);
    for _ in 0..LEASERS {
        let (gateway, services) = (Arc::clone(&gateway), services.clone());
        tokio::spawn(run(gateway, services, scope.clone(), Arc::clone(&slots)));
    }
}

/// One leaser: takes a free call slot, leases a command (waiting for one), and runs it on its
/// own task.
async fn run(gateway: Arc<Gateway>, services: Services, scope: ToolScope, slots: Arc<Semaphore>) {
    let me = Principal::Executor(GATEWAY_EXECUTOR.to_owned());
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let request = lease_request(scope.clone(), LEASE_WAIT);
        match services.lease(&me, &request).await {
            Ok(Some(leased)) => {
                let (gateway, services) = (Arc::clone(&gateway), services.clone());
                tokio::spawn(async move {
                    execute(&gateway, &services, leased, false).await;
                    drop(permit);
                });
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the gateway executor could not lease");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Whether the grant is the server's signature over exactly this command.
fn grant_holds(services: &Services, leased: &Leased) -> bool {
    let claims = &leased.grant.claims;
    let key = hex::decode(services.grant_public_key())
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .and_then(|k| VerifyingKey::from_bytes(&k).ok());
    let signature = hex::decode(&leased.grant.signature)
        .ok()
        .and_then(|s| <[u8; 64]>::try_from(s).ok())
        .map(|s| Signature::from_bytes(&s));
    let (Some(key), Some(signature), Ok(message)) = (key, signature, claims.message()) else {
        return false;
    };
    key.verify(&message, &signature).is_ok()
        && claims.describe(leased.command.id, &leased.command.spec)
}

/// What a run came to: outcome, body and side effect.
struct Ran(Outcome, Value, SideEffect);

fn refused(code: &str, message: &str) -> Ran {
    let body = json!({"code": code, "message": message});
    Ran(Outcome::Failed, body, SideEffect::None)
}

/// Runs a leased call and reports it; a call run `at_once` where it was submitted has its
/// upstream call and its report timed ([`GatewayStep`]).
async fn execute(
    gateway: &Gateway,
    services: &Services,
    leased: Leased,
    at_once: bool,
) -> Option<CommandRecord> {
    let me = Principal::Executor(GATEWAY_EXECUTOR.to_owned());
    let command = &leased.command;
    let lease_token = leased.lease_token.expose().to_owned();
    let timer = at_once.then(|| services.metrics());
    let ran = if grant_holds(services, &leased) {
        let heartbeat = async {
            let mut tick = tokio::time::interval(Duration::from_secs(LEASE_SECONDS / 3));
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(e) = services
                    .heartbeat(&me, command.id, &lease_token, LEASE_SECONDS)
                    .await
                {
                    tracing::warn!(command.id = %command.id, error = %e, "the gateway executor's heartbeat was refused");
                }
            }
        };
        tokio::select! {
            ran = call(gateway, command, timer) => ran,
            () = heartbeat => unreachable!("the heartbeat never ends"),
        }
    } else {
        tracing::error!(command.id = %command.id, "a gateway command's grant did not verify; not run");
        refused(
            "grant_invalid",
            "the command's grant did not verify; it was not run",
        )
    };
    let Ran(outcome, body, side_effect) = ran;
    let report = Report {
        command_id: command.id,
        lease_token,
        outcome,
        body,
        side_effect,
    };
    let id = report.command_id;
    let started = std::time::Instant::now();
    let reported = services.report(&me, report).await;
    if let Some(metrics) = timer {
        metrics.gateway_step(GatewayStep::Report, started.elapsed());
    }
    match reported {
        Ok(command) => Some(command),
        Err(e) => {
            tracing::warn!(command.id = %id, error = %e, "the gateway executor's report was refused");
            None
        }
    }
}

/// The tool `spec` calls, if it may be called: a call made through the gateway, of a tool still
/// served with the definition it was approved against; else what the command reports, the call
/// not sent.
async fn callable(gateway: &Gateway, spec: &CommandSpec) -> Result<(ToolName, ServedTool), Ran> {
    let Some(name) = ToolName::from_internal(&spec.tool.name) else {
        return Err(refused(
            "no_such_tool",
            "no gateway upstream serves this tool",
        ));
    };
    // Only a call made through the gateway, whose proposal the gateway made from the tool's
    // pinned definition, is run: its key has the gateway's shape, which no other way in takes.
    if call_prefix(&spec.idempotency_key).is_none() {
        return Err(refused(
            "not_a_gateway_call",
            "this command was not proposed through the MCP gateway; the gateway runs only \
             calls made through it",
        ));
    }
    let tool = match gateway.tool_now(&name).await {
        Ok(tool) => tool,
        Err(CallError::DefinitionChanged) => {
            return Err(refused(
                "tool_definition_changed",
                "the upstream now serves another definition of this tool; an admin must \
                 accept it first",
            ));
        }
        Err(CallError::Unavailable | CallError::Lost(_)) => {
            return Err(refused(
                "upstream_unavailable",
                "the tool's upstream is not up; the call was not sent",
            ));
        }
        Err(CallError::NoSuchTool) => {
            return Err(refused(
                "no_such_tool",
                "the upstream no longer lists this tool",
            ));
        }
    };
    if tool.definition.version() != spec.tool.version {
        return Err(refused(
            "tool_definition_changed",
            "the call was approved against another definition of this tool",
        ));
    }
    Ok((name, tool))
}

/// Makes the approved call, if it may be made ([`callable`]); a call sent is timed into
/// `timer`, if given.
async fn call(gateway: &Gateway, command: &CommandRecord, timer: Option<&Metrics>) -> Ran {
    let spec = &command.spec;
    let (name, tool) = match callable(gateway, spec).await {
        Ok(callable) => callable,
        Err(refused) => return refused,
    };
    let side_effect = match tool.definition.read_only() {
        true => SideEffect::None,
        false => SideEffect::Possible,
    };
    let sent = std::time::Instant::now();
    let limit = (spec.execution.as_ref())
        .and_then(|e| e.timeout_ms)
        .map_or(UPSTREAM_CALL_LIMIT, Duration::from_millis);
    let answered = tokio::time::timeout(limit, gateway.call(&name, spec.parameters.clone())).await;
    if let Some(metrics) = timer {
        metrics.gateway_step(GatewayStep::Upstream, sent.elapsed());
    }
    let Ok(answered) = answered else {
        let message = format!(
            "the upstream did not answer within {} s; whether the call took effect is unknown",
            limit.as_secs()
        );
        return Ran(
            Outcome::Failed,
            json!({"code": "upstream_timeout", "message": message}),
            side_effect,
        );
    };
    match answered {
        Ok(result) => {
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            let body = bounded(result);
            match is_error {
                true => Ran(Outcome::Failed, body, side_effect),
                false => Ran(Outcome::Succeeded, body, SideEffect::None),
            }
        }
        Err(CallError::Unavailable) => refused(
            "upstream_unavailable",
            "the tool's upstream is not up; the call was not sent",
        ),
        Err(CallError::Lost(why)) => Ran(
            Outcome::Failed,
            json!({"code": "upstream_lost", "message": format!("no answer from the upstream: {why}")}),
            side_effect,
        ),
        Err(e) => refused("no_such_tool", &format!("{e:?}")),
    }
}

/// `result` if its JSON fits in [`MAX_RESULT_BYTES`]; else a result whose text is the first
/// part of it, marked as cut, with the whole result's size and SHA-256, itself within the bound
/// (the kept part is escaped again inside it: quotes, backslashes and line ends grow). The
/// result's `structuredContent` is kept whole when it leaves room for a marker and some text:
/// a client checks it against the tool's `outputSchema`, and a cut one would not match.
/// The marker is Countersign's alone: one an upstream sent is taken out (the trail records the
/// size and hash a marker names, so an upstream could otherwise choose them).
pub fn bounded(mut result: Value) -> Value {
    if let Some(meta) = result.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(TRUNCATED);
    }
    let text = result.to_string();
    if text.len() <= MAX_RESULT_BYTES {
        return result;
    }
    let is_error = result.get("isError").cloned().unwrap_or(Value::Bool(false));
    let structured = result
        .get("structuredContent")
        .filter(|s| s.to_string().len() <= MAX_RESULT_BYTES - KEPT_TEXT_LEAST);
    let sha256 = sha256_hex(text.as_bytes());
    let cut_at = |end: usize| {
        let mut cut = json!({
            "content": [{"type": "text", "text": &text[..end]}],
            "isError": is_error,
            "_meta": {TRUNCATED: {
                "bytes": text.len(),
                "sha256": sha256,
                "kept_bytes": end,
                "structured_kept": structured.is_some(),
            }}
        });
        if let Some(structured) = structured {
            cut["structuredContent"] = structured.clone();
        }
        cut
    };
    let mut end = MAX_RESULT_BYTES - 1024 - structured.map_or(0, |s| s.to_string().len());
    loop {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = cut_at(end);
        let size = cut.to_string().len();
        // Each byte left out takes at least one byte out of the cut's JSON: one more round fits.
        match size.checked_sub(MAX_RESULT_BYTES) {
            None | Some(0) => return cut,
            Some(over) => end = end.saturating_sub(over),
        }
    }
}

/// What a cut result keeps for its marker and the start of its text beside a whole
/// `structuredContent`; a larger one is left out.
const KEPT_TEXT_LEAST: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstreams_own_marker_is_taken_out() {
        let forged = json!({
            "content": [{"type": "text", "text": "small"}],
            "_meta": {TRUNCATED: {"bytes": 1, "sha256": "00"}, "other": 1},
        });
        let kept = bounded(forged);
        assert_eq!(kept["_meta"], json!({"other": 1}));
        assert_eq!(kept["content"][0]["text"], "small");
    }

    #[test]
    fn a_large_result_is_cut_with_its_size_and_hash() {
        let small = json!({"content": [{"type": "text", "text": "ok"}]});
        assert_eq!(bounded(small.clone()), small);
        let big = json!({"content": [{"type": "text", "text": "é".repeat(MAX_RESULT_BYTES)}]});
        let whole = big.to_string();
        let cut = bounded(big);
        assert!(cut.to_string().len() <= MAX_RESULT_BYTES);
        let marker = &cut["_meta"]["countersign/truncated"];
        assert_eq!(marker["bytes"], json!(whole.len()));
        assert_eq!(marker["sha256"], json!(sha256_hex(whole.as_bytes())));
    }

    #[test]
    fn a_cut_result_stays_within_the_bound_when_its_text_escapes_again() {
        // A source file of quoted lines: each `"` and line end is escaped once in the result's
        // JSON and once more inside the cut's text.
        let line = "    \"key\": \"value\",\n";
        let text = line.repeat(MAX_RESULT_BYTES / line.len() + 1);
        let big = json!({"content": [{"type": "text", "text": text}], "isError": false});
        let whole = big.to_string();
        let cut = bounded(big);
        let size = cut.to_string().len();
        assert!(size <= MAX_RESULT_BYTES, "{size} bytes");
        assert!(
            size > MAX_RESULT_BYTES / 2,
            "most of the bound is used: {size}"
        );
        let kept = cut["content"][0]["text"].as_str().expect("text");
        assert!(
            whole.starts_with(kept),
            "the kept part is the result's start"
        );
        let marker = &cut["_meta"]["countersign/truncated"];
        assert_eq!(marker["kept_bytes"], json!(kept.len()));
        assert_eq!(cut["isError"], false);
    }

    #[test]
    fn a_cut_result_keeps_its_structured_content_whole_where_it_fits() {
        // A tool with an output schema: its structured answer, and the same as text (as the
        // SDKs write it), together over the bound.
        let rows: Vec<Value> = (0..20_000)
            .map(|i| json!({"id": i, "name": format!("customer {i}")}))
            .collect();
        let structured = json!({ "rows": rows });
        let big = json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
        });
        assert!(big.to_string().len() > MAX_RESULT_BYTES);
        let cut = bounded(big);
        assert!(cut.to_string().len() <= MAX_RESULT_BYTES);
        assert_eq!(cut["structuredContent"], structured, "kept whole");
        assert_eq!(
            cut["_meta"]["countersign/truncated"]["structured_kept"],
            true
        );
        assert!(
            cut["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.len() > 1024),
            "and the start of the text"
        );

        // One too large to keep whole is left out, not cut.
        let huge = json!({"rows": "x".repeat(MAX_RESULT_BYTES)});
        let cut = bounded(json!({"content": [], "structuredContent": huge}));
        assert!(cut.to_string().len() <= MAX_RESULT_BYTES);
        assert_eq!(cut.get("structuredContent"), None);
        assert_eq!(
            cut["_meta"]["countersign/truncated"]["structured_kept"],
            false
        );
    }
}
