"""A real MCP client (the official Python SDK, `mcp`) against Countersign's `/mcp`.

Lists the tools, checks their input schemas are the ones the HTTP API publishes, and calls each
tool: a pre-tool-check, a proposal (and its replay), get_proposal, and wait_for_decision, which
returns once the test (which runs this script) approves the proposal through the reviewer's
page. Prints one JSON line per step on stdout; the test reads them. Exits non-zero on any
surprise.

    python client.py URL TOKEN PROPOSAL_JSON
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def say(**fields):
    print(json.dumps(fields), flush=True)


def structured(result):
    if result.structuredContent is not None:
        return result.structuredContent
    return json.loads(result.content[0].text)


async def main(base, token, proposal):
    headers = {"Authorization": f"Bearer {token}"}
    http = create_mcp_http_client(headers=headers, timeout=httpx.Timeout(90.0))
    async with http, streamable_http_client(f"{base}/mcp", http_client=http) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            say(step="tools", names=sorted(tools))
            async with httpx.AsyncClient() as plain:
                event_schema = (await plain.get(f"{base}/api/v1/schemas/agent-action-contract-v1.json")).json()
                proposal_schema = (await plain.get(f"{base}/api/v1/schemas/tool-proposal.json")).json()
            assert tools["countersign_pre_tool_check"].inputSchema == event_schema, "event schema differs"
            assert tools["propose_action"].inputSchema == proposal_schema, "proposal schema differs"

            event = {
                "tool_name": "crm.update_contact", "tool_category": "write",
                "authorization_state": "validated", "evidence_refs": [],
                "risk_domain": "customer_support",
                "proposed_arguments": {"contact_id": "c-1"}, "recommended_route": "accept",
            }
            check = await session.call_tool("countersign_pre_tool_check", event)
            decision = structured(check)
            say(step="pre_tool_check", is_error=check.isError, route=decision["route"],
                gate_decision=decision["gate_decision"], hard_blockers=decision["hard_blockers"])

            invalid = await session.call_tool("countersign_pre_tool_check", {"tool_name": "x"})
            refused = structured(invalid)
            say(step="pre_tool_check_invalid", route=refused["route"],
                paths=sorted(e["path"] for e in refused["validation_errors"]))

            first = await session.call_tool("propose_action", proposal)
            created = structured(first)
            again = structured(await session.call_tool("propose_action", proposal))
            pid = created["proposal"]["id"]
            say(step="proposed", is_error=first.isError, id=pid, status=created["proposal"]["status"],
                replayed=again["replayed"], same=again["proposal"]["id"] == pid)

            got = structured(await session.call_tool("get_proposal", {"proposal_id": pid}))
            say(step="got", status=got["proposal"]["status"])

            stranger = await session.call_tool("get_proposal", {"proposal_id": "0192f0c4-0000-7000-8000-000000000001"})
            say(step="not_found", is_error=stranger.isError, code=structured(stranger)["error"]["code"])

            say(step="waiting", id=pid)
            waited = structured(await session.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 60}))
            say(step="decided", status=waited["proposal"]["status"])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
