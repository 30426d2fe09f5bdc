// An AI agent's side of Countersign with Node's global fetch (no SDK): check, propose, wait, act.
//
// The agent wants to change a CRM contact's email: a consequential write. It never runs that
// tool itself; an executor does, after a human approves. The agent:
//
// 1. asks the pre-tool-check (seed 000) about the action; `defer` or `refuse` stops it here;
// 2. submits the action as a tool proposal (seed 004) with an idempotency key;
// 3. waits for the decision with `GET /api/v1/proposals/{id}?wait=SECONDS` (a long-poll);
// 4. acts on it: approved (or accepted by policy) is success, and with `--follow` it also waits
//    for the executor's run and prints its result; a refusal ends with its reason.
//
// Each step prints one JSON line on stdout. Exit codes: 0 approved (or, with --follow,
// succeeded); 1 error; 2 bad usage; 3 stopped by the pre-tool-check; 4 not approved (rejected,
// refused, changes requested, expired); 5 the run did not succeed; 6 gave up waiting (--timeout).
//
//   COUNTERSIGN_TOKEN=csa_... npx tsx agent.ts --url http://127.0.0.1:3000 --agent sales-agent
import { createHash, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

type Json = Record<string, any>; // the API's answers, read field by field below
const NOT_APPROVED = new Set(["rejected", "refused", "changes_requested", "expired"]);
const RUN_ENDED = new Set(["succeeded", "failed", "timed_out", "outcome_unknown"]);
const emit = (step: string, fields: Json = {}) => console.log(JSON.stringify({ step, ...fields }));
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
class ApiError extends Error {
  constructor(readonly fields: Json) { super(JSON.stringify(fields)); }
}

const { values: opt } = parseArgs({ options: {
  url: { type: "string", default: process.env.COUNTERSIGN_URL ?? "http://127.0.0.1:3000" },
  agent: { type: "string", default: process.env.COUNTERSIGN_AGENT }, // the token's agent
  "idempotency-key": { type: "string", default: `agent-${randomUUID()}` }, // reuse to resubmit
  contact: { type: "string", default: "c-123" },
  email: { type: "string", default: "new@example.com" },
  wait: { type: "string", default: "30" }, // seconds per long-poll (0..60)
  timeout: { type: "string", default: "3600" }, // give up after this many seconds
  follow: { type: "boolean", default: false }, // after approval, wait for the run
} });
const token = process.env.COUNTERSIGN_TOKEN;
if (!token || !opt.agent) {
  console.error("usage: set COUNTERSIGN_TOKEN and --agent (or COUNTERSIGN_AGENT)");
  process.exit(2);
}
const [agent, key, wait] = [opt.agent, opt["idempotency-key"], Number(opt.wait)];
const url = (path: string) => opt.url.replace(/\/+$/, "") + path; // keeps a path prefix
const deadline = Date.now() + Number(opt.timeout) * 1000;

// One API call, retried with backoff on 5xx and connection errors. Every call made here is safe
// to repeat: GETs read, a pre-tool-check only records one more check, and a resubmitted proposal
// with the same idempotency key and body is answered `200` with the proposal the first attempt
// created (even if that attempt's answer was lost).
async function call(method: string, path: string, body?: Json, timeoutMs = 10_000): Promise<[number, Json]> {
  for (let attempt = 0; ; attempt++) {
    if (attempt) await sleep(Math.min(500 * 2 ** attempt, 8000)); // 1, 2, 4, 8, 8 seconds
    let r: Response;
    try {
      r = await fetch(url(path), {
        method, signal: AbortSignal.timeout(timeoutMs),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body && JSON.stringify(body),
      });
    } catch (e) { // refused, reset, timed out
      if (attempt === 5) throw e;
      continue;
    }
    if (r.status < 500 || attempt === 5) {
      const answer = (await r.json().catch(() => ({}))) as Json;
      if (r.status >= 400) throw new ApiError({ http_status: r.status, ...answer.error });
      return [r.status, answer];
    }
  }
}

// The AANA Agent Action Contract v1 event describing the action (seed 000).
const event = {
  agent_id: agent, // must be the token's agent
  tool_name: "crm.update_contact",
  tool_category: "write",
  authorization_state: "user_claimed", // the user asked; nobody confirmed yet
  evidence_refs: [{
    source_id: "ticket:42", kind: "user_message", trust_tier: "runtime",
    redaction_status: "redacted", provenance: "helpdesk",
    summary: "The customer asked for the new address in ticket 42.", freshness: { status: "fresh" },
  }],
  risk_domain: "customer_support",
  proposed_arguments: { contact_id: opt.contact, email: opt.email },
  recommended_route: "accept",
};

// A name-based (v5) UUID, as Python's uuid.uuid5(uuid.NAMESPACE_URL, name).
function uuidV5(name: string): string {
  const namespace = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex");
  const h = createHash("sha1").update(namespace).update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// The seed 004 tool proposal. Only `timestamp` may differ between two submissions of the same
// request: the id is derived from the key, so a rerun with the same key (after a crash, say) is
// the very same request and gets the same proposal back, never a second one.
const proposal = {
  proposal_id: uuidV5(`countersign:${agent}:${key}`),
  idempotency_key: key,
  proposed_by: agent,
  timestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  domain: "sales",
  tool: { name: event.tool_name, version: "2024-01" },
  intent: { summary: "Update the contact's email", reasoning: "The customer asked for it in ticket 42." },
  parameters: event.proposed_arguments,
  risk_level: "medium", approval_required: true, rollback_supported: true,
  compliance_context: { gdpr: true, hipaa: false },
  blast_radius: "small", target_refs: [{ type: "crm_contact", id: opt.contact }],
  tool_category: event.tool_category, authorization_state: event.authorization_state,
  evidence_refs: event.evidence_refs, risk_domain: event.risk_domain,
};

// After approval `?wait=` answers at once, so follow the run on the proposal's event stream
// (server-sent events, one per status change) until the run ends. A dropped stream is reopened:
// its first event is always the current status, so nothing is missed.
async function followRun(p: Json): Promise<Json> {
  const done = (s: string) => RUN_ENDED.has(s) || NOT_APPROVED.has(s) || Date.now() > deadline;
  while (!done(p.status)) {
    try {
      const r = await fetch(url(`/api/v1/proposals/${p.id}/events`), {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(Math.max(deadline - Date.now(), 1)),
      });
      if (!r.ok || !r.body) throw new ApiError({ http_status: r.status });
      let text = "";
      for await (const chunk of r.body.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        for (let end: number; (end = text.indexOf("\n\n")) >= 0; text = text.slice(end + 2)) {
          const data = text.slice(0, end).split("\n").find((l) => l.startsWith("data:"));
          if (!data) continue; // a keep-alive comment
          const seen: string = p.status;
          p = JSON.parse(data.slice(5)).proposal;
          if (p.status !== seen) emit("status", { id: p.id, status: p.status });
          if (done(p.status)) return p;
        }
      }
    } catch (e) {
      if (e instanceof ApiError) throw e;
      await sleep(1000); // the stream dropped, or the deadline passed
    }
  }
  return p;
}

async function run(): Promise<number> {
  // 1. Pre-tool-check. Seed 000 lets an agent execute only on gate_decision "pass",
  //    recommended_action "accept" and no hard blockers. A write is proposed either way
  //    (executors run it, never the agent); `ask` wants a person's confirmation, which is what
  //    the proposal's review is. `defer` and `refuse` end the attempt here.
  const [, check] = await call("POST", "/api/v1/pre-tool-check", event);
  emit("pre_tool_check", { check_id: check.check_id, route: check.route, gate_decision: check.gate_decision,
    recommended_action: check.recommended_action, hard_blockers: check.hard_blockers,
    execute_allowed: check.gate_decision === "pass" && check.recommended_action === "accept"
      && check.hard_blockers.length === 0 });
  if (check.route === "defer" || check.route === "refuse") {
    emit("stopped", { route: check.route, reasons: check.blocker_details.map((b: Json) => b.message) });
    return 3;
  }
  // 2. Submit. 201: new; 200: a replay of this same request (same key and body).
  const [status, submitted] = await call("POST", "/api/v1/proposals", proposal);
  let p: Json = submitted.proposal;
  emit("submitted", { id: p.id, status: p.status, route: p.route, replayed: status === 200,
    idempotency_key: key, blockers: p.blockers.map((b: Json) => b.code) });
  // 3. Wait. The server answers as soon as the proposal leaves `pending`.
  while (p.status === "pending") {
    const left = Math.floor((deadline - Date.now()) / 1000);
    if (left <= 0) { emit("gave_up", { id: p.id, status: p.status }); return 6; }
    const w = Math.min(wait, left);
    emit("waiting", { id: p.id, wait: w });
    p = (await call("GET", `/api/v1/proposals/${p.id}?wait=${w}`, undefined, (w + 15) * 1000))[1].proposal;
  }
  // 4. Act on the decision.
  emit("decided", { id: p.id, status: p.status, decided_by: p.review?.decided_by ?? null,
    reason: p.review?.reason ?? null, blockers: p.blockers.map((b: Json) => b.code) });
  if (NOT_APPROVED.has(p.status)) return 4;
  if (opt.follow) {
    p = await followRun(p);
    if (NOT_APPROVED.has(p.status)) return 4; // e.g. approved, but not run in time: expired
  }
  if (RUN_ENDED.has(p.status)) {
    emit("outcome", { id: p.id, status: p.status, result: p.execution?.result ?? null,
      error: p.execution?.error ?? null });
    return p.status === "succeeded" ? 0 : 5;
  }
  if (opt.follow) { emit("gave_up", { id: p.id, status: p.status }); return 6; }
  return 0; // approved or accepted: an executor will run it
}

run().then((code) => { process.exitCode = code; }, (e: unknown) => {
  const cause = e instanceof Error && e.cause ? `: ${String(e.cause)}` : ""; // fetch's own reason
  emit("error", e instanceof ApiError ? e.fields : { message: `${String(e)}${cause}` });
  process.exitCode = 1;
});
