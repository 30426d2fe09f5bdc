#!/usr/bin/env python3
"""An AI agent's side of Countersign in plain httpx (no SDK): check, propose, wait, act.

The agent wants to change a CRM contact's email: a consequential write. It never runs
that tool itself; an executor does, after a human approves. The agent:

1. asks the pre-tool-check (seed 000) about the action; `defer` or `refuse` stops it here;
2. submits the action as a tool proposal (seed 004) with an idempotency key;
3. waits for the decision with `GET /api/v1/proposals/{id}?wait=SECONDS` (a long-poll);
4. acts on it: approved (or accepted by policy) is success, and with `--follow` it also
   waits for the executor's run and prints its result; a refusal ends with its reason.

Each step prints one JSON line on stdout. Exit codes: 0 approved (or, with --follow,
succeeded); 1 error; 2 bad usage; 3 stopped by the pre-tool-check; 4 not approved
(rejected, refused, changes requested, expired); 5 the run did not succeed; 6 gave up
waiting (--timeout).

    COUNTERSIGN_TOKEN=csa_... python3 agent.py --url http://127.0.0.1:3000 --agent sales-agent
"""

import argparse, json, os, sys, time, uuid
from datetime import datetime, timezone

import httpx

NOT_APPROVED = {"rejected", "refused", "changes_requested", "expired"}
RUN_ENDED = {"succeeded", "failed", "timed_out", "outcome_unknown"}


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


class ApiError(Exception):
    """A 4xx/5xx answer; Countersign's errors are {"error": {code, message, details}}."""


def call(client, method, path, **kw):
    """One API call, retried with backoff on 5xx and connection errors. Every call made
    here is safe to repeat: GETs read, a pre-tool-check only records one more check, and
    a resubmitted proposal with the same idempotency key and body is answered `200` with
    the proposal the first attempt created (even if that attempt's answer was lost)."""
    for attempt in range(6):
        if attempt:
            time.sleep(min(0.5 * 2**attempt, 8))  # 1, 2, 4, 8, 8 seconds
        try:
            r = client.request(method, path, **kw)
        except httpx.TransportError:  # refused, reset, timed out
            if attempt == 5:
                raise
            continue
        if r.status_code < 500 or attempt == 5:
            break
    if r.status_code >= 400:
        err = r.json().get("error", {}) if "json" in r.headers.get("content-type", "") else {}
        raise ApiError({"http_status": r.status_code, **err})
    return r


def event_for(args):
    """The AANA Agent Action Contract v1 event describing the action (seed 000)."""
    return {
        "agent_id": args.agent,  # must be the token's agent
        "tool_name": "crm.update_contact",
        "tool_category": "write",
        "authorization_state": "user_claimed",  # the user asked; nobody confirmed yet
        "evidence_refs": [{
            "source_id": "ticket:42", "kind": "user_message", "trust_tier": "runtime",
            "redaction_status": "redacted", "provenance": "helpdesk",
            "summary": "The customer asked for the new address in ticket 42.",
            "freshness": {"status": "fresh"},
        }],
        "risk_domain": "customer_support",
        "proposed_arguments": {"contact_id": args.contact, "email": args.email},
        "recommended_route": "accept",
    }


def proposal_for(args, event):
    """The seed 004 tool proposal. Only `timestamp` may differ between two submissions of
    the same request: the id is derived from the key, so a rerun with the same key (after a
    crash, say) is the very same request and gets the same proposal back, never a second one."""
    return {
        "proposal_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"countersign:{args.agent}:{args.idempotency_key}")),
        "idempotency_key": args.idempotency_key,
        "proposed_by": args.agent,
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "domain": "sales",
        "tool": {"name": event["tool_name"], "version": "2024-01"},
        "intent": {"summary": "Update the contact's email",
                   "reasoning": "The customer asked for it in ticket 42."},
        "parameters": event["proposed_arguments"],
        "risk_level": "medium", "approval_required": True, "rollback_supported": True,
        "compliance_context": {"gdpr": True, "hipaa": False},
        "blast_radius": "small", "target_refs": [{"type": "crm_contact", "id": args.contact}],
        **{k: event[k] for k in ("tool_category", "authorization_state", "evidence_refs", "risk_domain")},
    }


def follow_run(client, p, deadline):
    """After approval `?wait=` answers at once, so follow the run on the proposal's event
    stream (server-sent events, one per status change) until the run ends. A dropped stream
    is reopened: its first event is always the current status, so nothing is missed."""
    while p["status"] not in RUN_ENDED | NOT_APPROVED and time.monotonic() < deadline:
        try:
            with client.stream("GET", f"/api/v1/proposals/{p['id']}/events",
                               timeout=httpx.Timeout(10, read=60)) as r:
                if r.status_code >= 400:
                    raise ApiError({"http_status": r.status_code})
                for line in r.iter_lines():  # a keep-alive comment comes every 15 s
                    if line.startswith("data:"):
                        seen, p = p["status"], json.loads(line[5:])["proposal"]
                        if p["status"] != seen:
                            emit("status", id=p["id"], status=p["status"])
                    if p["status"] in RUN_ENDED | NOT_APPROVED or time.monotonic() > deadline:
                        break
        except httpx.TransportError:
            time.sleep(1)
    return p


def run(args):
    client = httpx.Client(base_url=args.url, timeout=httpx.Timeout(10, read=args.wait + 15),
                          headers={"authorization": f"Bearer {args.token}"})
    deadline = time.monotonic() + args.timeout
    # 1. Pre-tool-check. Seed 000 lets an agent execute only on gate_decision "pass",
    #    recommended_action "accept" and no hard blockers. A write is proposed either way
    #    (executors run it, never the agent); `ask` wants a person's confirmation, which is
    #    what the proposal's review is. `defer` and `refuse` end the attempt here.
    event = event_for(args)
    check = call(client, "POST", "/api/v1/pre-tool-check", json=event).json()
    emit("pre_tool_check", check_id=check["check_id"], route=check["route"],
         gate_decision=check["gate_decision"], recommended_action=check["recommended_action"],
         hard_blockers=check["hard_blockers"],
         execute_allowed=check["gate_decision"] == "pass"
         and check["recommended_action"] == "accept" and not check["hard_blockers"])
    if check["route"] in ("defer", "refuse"):
        emit("stopped", route=check["route"], reasons=[b["message"] for b in check["blocker_details"]])
        return 3
    # 2. Submit. 201: new; 200: a replay of this same request (same key and body).
    r = call(client, "POST", "/api/v1/proposals", json=proposal_for(args, event))
    p = r.json()["proposal"]
    emit("submitted", id=p["id"], status=p["status"], route=p["route"],
         replayed=r.status_code == 200, idempotency_key=args.idempotency_key,
         blockers=[b["code"] for b in p["blockers"]])
    # 3. Wait. The server answers as soon as the proposal leaves `pending`.
    while p["status"] == "pending":
        left = int(deadline - time.monotonic())
        if left <= 0:
            emit("gave_up", id=p["id"], status=p["status"])
            return 6
        emit("waiting", id=p["id"], wait=min(args.wait, left))
        p = call(client, "GET", f"/api/v1/proposals/{p['id']}",
                 params={"wait": min(args.wait, left)}).json()["proposal"]
    # 4. Act on the decision.
    review = p.get("review") or {}
    emit("decided", id=p["id"], status=p["status"], decided_by=review.get("decided_by"),
         reason=review.get("reason"), blockers=[b["code"] for b in p["blockers"]])
    if p["status"] in NOT_APPROVED:
        return 4
    if args.follow:
        p = follow_run(client, p, deadline)
        if p["status"] in NOT_APPROVED:  # e.g. approved, but not run in time: expired
            return 4
    if p["status"] in RUN_ENDED:
        execution = p.get("execution") or {}
        emit("outcome", id=p["id"], status=p["status"],
             result=execution.get("result"), error=execution.get("error"))
        return 0 if p["status"] == "succeeded" else 5
    if args.follow:
        emit("gave_up", id=p["id"], status=p["status"])
        return 6
    return 0  # approved or accepted: an executor will run it


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("COUNTERSIGN_URL", "http://127.0.0.1:3000"))
    ap.add_argument("--agent", default=os.environ.get("COUNTERSIGN_AGENT"),
                    help="the token's agent name (COUNTERSIGN_AGENT)")
    ap.add_argument("--idempotency-key", default=f"agent-{uuid.uuid4()}",
                    help="reuse a key to resubmit the same request (default: a new one)")
    ap.add_argument("--contact", default="c-123")
    ap.add_argument("--email", default="new@example.com")
    ap.add_argument("--wait", type=int, default=30, help="seconds per long-poll (0..60)")
    ap.add_argument("--timeout", type=int, default=3600, help="give up after this many seconds")
    ap.add_argument("--follow", action="store_true", help="after approval, wait for the run")
    args = ap.parse_args()
    args.token = os.environ.get("COUNTERSIGN_TOKEN")
    if not args.token or not args.agent:
        ap.error("set COUNTERSIGN_TOKEN and --agent (or COUNTERSIGN_AGENT)")
    try:
        return run(args)
    except ApiError as e:
        emit("error", **e.args[0])
    except httpx.HTTPError as e:
        emit("error", message=f"{type(e).__name__}: {e}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
