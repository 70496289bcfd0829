#!/usr/bin/env python3
"""An MCP server on the official Python SDK whose tools elicit input from the
client in the middle of a tools/call (SPEC §2, the elicitation bridge).

usage: sdk_elicit_server.py [stdio | streamable-http PORT]

Tools:
  ask_name   form mode: asks for {name, age}; says what came back
  login      URL mode (when the SDK has it): asks the user to open a link
  client_caps the elicitation capability the client advertised, as JSON

A refused elicitation (an error reply) is caught and reported as the tool's
text, so a test sees what the server saw.
"""
import json
import sys

from pydantic import BaseModel

try:
    from mcp.server.fastmcp import Context, FastMCP as Server
    SDK_MAJOR = 1
except ImportError:
    from mcp.server.mcpserver import Context, MCPServer as Server
    SDK_MAJOR = 2

mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
if mode != "stdio":
    from own_port import listen_here

    port = listen_here(port)

if SDK_MAJOR == 1:
    server = Server("tn-elicit-test", host="127.0.0.1", port=port, log_level="ERROR")
else:
    server = Server("tn-elicit-test", log_level="ERROR")


class Person(BaseModel):
    name: str
    age: int = 0


def _caps(ctx):
    caps = getattr(ctx, "client_capabilities", None)
    if caps is None:
        params = getattr(ctx.session, "client_params", None)
        caps = getattr(params, "capabilities", None)
    return caps


@server.tool(description="Ask the user for a name and an age.")
async def ask_name(ctx: Context) -> str:
    try:
        result = await ctx.elicit(message="Who are you?", schema=Person)
    except Exception as e:  # the client refused: report what we were told
        return f"refused: {e}"
    if result.action == "accept":
        return f"accepted: name={result.data.name} age={result.data.age}"
    return result.action


@server.tool(description="Ask the user to log in at a link.")
async def login(ctx: Context) -> str:
    if not hasattr(ctx, "elicit_url"):
        return "unsupported: this SDK has no URL-mode elicitation"
    try:
        result = await ctx.elicit_url(
            message="Log in to Acme",
            url="https://auth.example/authorize?client=tn",
            elicitation_id="acme-login-1",
        )
    except Exception as e:
        return f"refused: {e}"
    return result.action


@server.tool(description="The elicitation capability the client advertised.")
def client_caps(ctx: Context) -> str:
    caps = _caps(ctx)
    elicitation = getattr(caps, "elicitation", None) if caps is not None else None
    if elicitation is None:
        return "none"
    return json.dumps(elicitation.model_dump(exclude_none=True), sort_keys=True)


if mode == "stdio":
    server.run("stdio")
elif SDK_MAJOR == 1:
    server.run(mode)
else:
    server.run(mode, host="127.0.0.1", port=port)
