"""A small MCP server (stdio, the official Python SDK's low-level server) whose tool
definition and availability a test controls through files in DIR:

- `DIR/description.txt`: the `append_note` tool's description, read at every `tools/list`
  (a test rewrites it to change the definition under a running gateway);
- `DIR/refuse`: while it exists, the server exits as soon as it starts;
- `DIR/exit`: removed and obeyed at the next request (a list or a call): the server exits
  without answering;
- `DIR/readonly`: if it exists, `append_note` is annotated `readOnlyHint` (a policy may then
  accept it outright);
- `DIR/block`: while it exists, a call writes `DIR/started` and waits before appending.
- `DIR/big`: if it exists, a call answers that many `x` (its content, a number) instead of
  "noted".

At start it writes its environment to `DIR/env.json` (what Countersign passed it).

`append_note` appends its text to `DIR/notes.txt`.

    python upstream_server.py DIR
"""

import json
import os
import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

DIR = sys.argv[1]


def path(name):
    return os.path.join(DIR, name)


server = Server("countersign-test-upstream")


def exit_if_asked():
    if os.path.exists(path("exit")):
        os.remove(path("exit"))
        os._exit(3)


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    exit_if_asked()
    with open(path("description.txt")) as f:
        description = f.read()
    return [
        types.Tool(
            name="append_note",
            description=description,
            inputSchema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            annotations=types.ToolAnnotations(
                readOnlyHint=os.path.exists(path("readonly")), destructiveHint=False
            ),
        )
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    exit_if_asked()
    if os.path.exists(path("block")):
        with open(path("started"), "w") as f:
            f.write("started")
        while os.path.exists(path("block")):
            await anyio.sleep(0.02)
    with open(path("notes.txt"), "a") as f:
        f.write(arguments["text"] + "\n")
    if os.path.exists(path("big")):
        with open(path("big")) as f:
            return [types.TextContent(type="text", text="x" * int(f.read()))]
    return [types.TextContent(type="text", text="noted")]


async def main():
    if os.path.exists(path("refuse")):
        sys.exit(2)
    with open(path("env.json"), "w") as f:
        json.dump(dict(os.environ), f)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
