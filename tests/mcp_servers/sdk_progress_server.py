#!/usr/bin/env python3
"""A server built on the official MCP Python SDK for progress-aware
timeouts (issue 28).

usage: sdk_progress_server.py stdio | streamable-http PORT (PORT 0: a free
one, printed as `PORT n`)

Tools (each sleeps in steps of 100 ms):
- work(steps, log): reports progress `i/steps` (with a message) on the
  call's own token after each step, then answers `done STEPS`.
- silent(steps, log): reports nothing, then answers `woke`.
- stray(steps, log): reports progress after each step, but on a token the
  client never sent, then answers `stray done`.

Every tool, when the client cancels it (a notifications/cancelled naming the
call: the SDK cancels the tool's task), appends `cancelled TOOL` to the file
`log` before the cancellation goes on; a tool that ends appends `ended TOOL`.

Works with mcp 1.x (FastMCP) and mcp 2.x (MCPServer)."""
import sys

import anyio

try:
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server

    SDK_MAJOR = 1
except ImportError:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server

    SDK_MAJOR = 2

mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
if mode != "stdio":
    from own_port import listen_here

    port = listen_here(port)

if SDK_MAJOR == 1:
    server = Server("tn-sdk-progress", host="127.0.0.1", port=port, log_level="ERROR")
else:
    server = Server("tn-sdk-progress", log_level="ERROR")


def note(log: str, line: str) -> None:
    with open(log, "a") as f:
        f.write(line + "\n")


async def steps_of(tool: str, steps: int, log: str, each) -> None:
    try:
        for i in range(steps):
            await anyio.sleep(0.1)
            await each(i + 1)
    except anyio.get_cancelled_exc_class():
        note(log, f"cancelled {tool}")
        raise
    note(log, f"ended {tool}")


@server.tool(description="Sleep STEPS x 100 ms, reporting progress after each step.")
async def work(steps: int, log: str, ctx: Context) -> str:
    async def each(i):
        await ctx.report_progress(i, steps, f"step {i}")

    await steps_of("work", steps, log, each)
    return f"done {steps}"


@server.tool(description="Sleep STEPS x 100 ms without a word.")
async def silent(steps: int, log: str) -> str:
    async def each(_):
        pass

    await steps_of("silent", steps, log, each)
    return "woke"


@server.tool(description="Sleep STEPS x 100 ms, reporting progress on a token nobody sent.")
async def stray(steps: int, log: str, ctx: Context) -> str:
    async def each(i):
        await ctx.session.send_progress_notification(
            progress_token="not-a-token-of-yours",
            progress=i,
            total=steps,
            related_request_id=ctx.request_id,
        )

    await steps_of("stray", steps, log, each)
    return "stray done"


if mode == "stdio":
    server.run("stdio")
elif SDK_MAJOR == 1:
    server.run(mode)
else:
    server.run(mode, host="127.0.0.1", port=port)
