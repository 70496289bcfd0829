#!/usr/bin/env python3
"""A stdio server built on the official MCP Python SDK with one tool,
`hang(started, cancelled)`: it writes the file `started`, then waits a
minute; when the SDK cancels the call (a notifications/cancelled naming it)
it writes the file `cancelled` before the cancellation goes on. The SDK
also cancels its calls when its stdin closes, so a test keeps that open
(the toolkit alive): the file then means the notification came.

Works with mcp 1.x (FastMCP) and mcp 2.x (MCPServer)."""
import os

import anyio

try:
    from mcp.server.fastmcp import FastMCP as Server
except ImportError:
    from mcp.server.mcpserver import MCPServer as Server

server = Server("tn-sdk-cancel", log_level="ERROR")


@server.tool(description="Wait until cancelled.")
async def hang(started: str, cancelled: str) -> str:
    with open(started, "w") as f:
        f.write("started")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        with open(cancelled + ".tmp", "w") as f:
            f.write("cancelled")
        os.rename(cancelled + ".tmp", cancelled)
        raise
    return "never cancelled"


server.run("stdio")
