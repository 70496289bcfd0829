#!/usr/bin/env python3
"""A server built on the official MCP Python SDK whose tool list changes
while it runs, for live `list_changed` refresh (issue 28).

usage: sdk_changing_server.py stdio | streamable-http PORT (PORT 0: a free
one, printed as `PORT n`)

Tools:
- add(name): adds the tool NAME (answering `I am NAME`), then sends
  notifications/tools/list_changed; answers `added NAME`.
- remove(name): removes the tool NAME, then sends list_changed.
- flood(count, ms): sends notifications/tools/list_changed COUNT times over
  about MS milliseconds (with the list unchanged but for a tool `flooded`
  added first), then answers `flooded COUNT`.
- lists(): how many tools/list requests the server answered so far.
- break_list(broken): while BROKEN, tools/list fails (an error).
- announce(kind): sends notifications/KIND/list_changed (prompts or
  resources).

Every tool answers plain text (no structured output).

A session at 2026-07-28 (a client that sent server/discover) hears the
changes only on its subscriptions/listen stream (the SDK's subscription
bus); one of 2025 hears them unasked, as that revision has it.

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

state = {"lists": 0, "broken": False}


class Counting(Server):
    """Counts the tools/list requests it answers; fails them while broken."""

    async def list_tools(self, *args, **kwargs):
        state["lists"] += 1
        if state["broken"]:
            raise RuntimeError("tools/list is broken on purpose")
        return await super().list_tools(*args, **kwargs)


if SDK_MAJOR == 1:
    server = Counting("tn-sdk-changing", host="127.0.0.1", port=port, log_level="ERROR")
else:
    server = Counting("tn-sdk-changing", log_level="ERROR")


def modern(ctx) -> bool:
    """Whether the request came on a 2026-07-28 session (no initialize)."""
    version = getattr(ctx, "protocol_version", None)
    return version is not None and version >= "2026-07-28"


async def tools_changed(ctx) -> None:
    if modern(ctx):
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()


def named(name: str):
    async def tool() -> str:
        return f"I am {name}"

    return tool


@server.tool(structured_output=False, description="Add the tool NAME and announce the change.")
async def add(name: str, ctx: Context) -> str:
    server.add_tool(named(name), name=name, description=f"The tool {name}.", structured_output=False)
    await tools_changed(ctx)
    return f"added {name}"


@server.tool(structured_output=False, description="Remove the tool NAME and announce the change.")
async def remove(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await tools_changed(ctx)
    return f"removed {name}"


@server.tool(structured_output=False, description="Announce a tool list change COUNT times over MS ms.")
async def flood(count: int, ms: int, ctx: Context) -> str:
    try:
        server.add_tool(named("flooded"), name="flooded", description="Added by flood.", structured_output=False)
    except Exception:
        pass
    pause = ms / 1000.0 / max(count, 1)
    for _ in range(count):
        await tools_changed(ctx)
        await anyio.sleep(pause)
    return f"flooded {count}"


@server.tool(structured_output=False, description="How many tools/list requests were answered.")
async def lists() -> str:
    return str(state["lists"])


@server.tool(structured_output=False, description="Make tools/list fail (or work again).")
async def break_list(broken: bool) -> str:
    state["broken"] = broken
    return f"broken {str(broken).lower()}"


@server.tool(structured_output=False, description="Announce a change of the prompts or resources list.")
async def announce(kind: str, ctx: Context) -> str:
    if kind == "prompts":
        await (ctx.notify_prompts_changed() if modern(ctx) else ctx.session.send_prompt_list_changed())
    else:
        await (ctx.notify_resources_changed() if modern(ctx) else ctx.session.send_resource_list_changed())
    return f"announced {kind}"


@server.prompt(description="A prompt, so the gateway advertises prompts.")
def hello() -> str:
    return "hello"


if mode == "stdio":
    server.run("stdio")
elif SDK_MAJOR == 1:
    server.run(mode)
else:
    server.run(mode, host="127.0.0.1", port=port)
