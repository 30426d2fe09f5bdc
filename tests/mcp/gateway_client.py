"""An agent built on the official MCP Python SDK (`mcp`), pointed at Countersign's
`/mcp/gateway` instead of at its tool server, and nothing else changed.

Each command is one step; it prints one JSON line per result on stdout for the test that runs
it (tests/api/gateway.rs) and exits non-zero on any surprise.

    python gateway_client.py URL TOKEN list
    python gateway_client.py URL TOKEN call TOOL ARGUMENTS_JSON [META_JSON]
    python gateway_client.py URL TOKEN wait PROPOSAL_ID
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def say(**fields):
    print(json.dumps(fields), flush=True)


def result_fields(result):
    return {
        "is_error": bool(result.isError),
        "text": [c.text for c in result.content if getattr(c, "type", "") == "text"],
        "structured": result.structuredContent,
        # Countersign's own answers carry their structured form here too, also for tools whose
        # output schema leaves no room for it in structuredContent.
        "status": (result.meta or {}).get("countersign/status"),
        # A result larger than Countersign keeps: the whole one's size and SHA-256.
        "truncated": (result.meta or {}).get("countersign/truncated"),
    }


async def main(base, token, command, args):
    headers = {"Authorization": f"Bearer {token}"}
    http = create_mcp_http_client(headers=headers, timeout=httpx.Timeout(120.0))
    url = f"{base}/mcp/gateway"
    # The agent offers sampling, roots and elicitation, as a chat client may, and records any
    # request that reaches it: the gateway answers an upstream's such requests itself.
    asked = []

    async def on_sampling(context, params):
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="yes"), model="agent")

    async def on_roots(context):
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/agent")])

    async def on_elicitation(context, params):
        asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"password": "hunter2"})

    async with http, streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(
                read, write, sampling_callback=on_sampling, list_roots_callback=on_roots,
                elicitation_callback=on_elicitation) as session:
            await session.initialize()
            if command == "list":
                tools = (await session.list_tools()).tools
                say(step="tools", tools=[
                    {"name": t.name, "description": t.description,
                     "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None}
                    for t in tools])
            elif command == "call":
                tool, arguments = args[0], json.loads(args[1])
                # The request's `_meta`, where an agent says why it calls (countersign/intent).
                meta = json.loads(args[2]) if len(args) > 2 else None
                progress = []

                async def on_progress(done, total, message):
                    progress.append(message)

                result = await session.call_tool(
                    tool, arguments, progress_callback=on_progress, meta=meta)
                say(step="call", progress=progress, asked_of_agent=asked, **result_fields(result))
            elif command == "wait":
                result = await session.call_tool(
                    "countersign_wait_for_decision", {"proposal_id": args[0]})
                say(step="wait", **result_fields(result))
            else:
                raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
