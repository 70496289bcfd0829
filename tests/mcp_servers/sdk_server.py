#!/usr/bin/env python3
"""A server built on the official MCP Python SDK, for tests and benchmarks.

usage: sdk_server.py stdio | streamable-http PORT | sse PORT (PORT 0: a free one, printed as `PORT n`)

Works with mcp 1.x (FastMCP) and mcp 2.x (FastMCP renamed MCPServer).
"""
import sys

try:
    from mcp.server.fastmcp import FastMCP as Server
    SDK_MAJOR = 1
except ImportError:
    from mcp.server.mcpserver import MCPServer as Server
    SDK_MAJOR = 2

mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
if mode != "stdio":
    from own_port import listen_here

    port = listen_here(port)

if SDK_MAJOR == 1:
    server = Server("tn-sdk-test", host="127.0.0.1", port=port, log_level="ERROR")
else:
    server = Server("tn-sdk-test", log_level="ERROR")


@server.tool(description="Echo the text argument.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Fail on purpose.")
def explode(reason: str = "boom") -> str:
    raise ValueError(reason)


if mode == "stdio":
    server.run("stdio")
elif SDK_MAJOR == 1:
    server.run(mode)
else:
    server.run(mode, host="127.0.0.1", port=port)
