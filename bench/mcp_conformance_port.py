#!/usr/bin/env python3
"""The client under test of the official MCP conformance suite when the peer
is upstream's Python port (toolnexus 0.21.0), driven by
bench/mcp_conformance_peers.sh. The same protocol and the same steps as our
examples/mcp_conformance_client.rs: the suite appends the server's URL as the
last argument and names the scenario in MCP_CONFORMANCE_SCENARIO.

It does what a host of the port does: build a toolkit over that one
streamable HTTP server (with a `wait_for` that accepts every question with no
answers of its own), list the tools and call the ones the scenario expects.
The port's MCP config has no OAuth block, so the `auth/*` scenarios connect
without credentials, as a host of the port would.

Exit code: 0 when the server connected, 1 otherwise.
"""
import asyncio
import json
import os
import sys

from toolnexus import create_toolkit
from toolnexus.types import Answer


def accept_with_nothing(request):
    return Answer(id=request.id, ok=True, data={})


def args_for(scenario, remote):
    if remote == "add_numbers":
        return {"a": 5, "b": 3}
    if scenario == "tools_call":
        return None
    return {}


async def main():
    url = sys.argv[-1] if len(sys.argv) > 1 else ""
    if not url:
        print("usage: mcp_conformance_port.py URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    config = {"mcpServers": {"s": {"url": url, "timeout": 20000}}}
    tk = await create_toolkit(mcp_config=config, builtins=False, wait_for=accept_with_nothing)
    try:
        status = {k: str(v) for k, v in tk.mcp_status().items()}
        print(f"status: {json.dumps(status)}")
        for tool in tk.tools():
            remote = tool.name.removeprefix("s_")
            args = args_for(scenario, remote)
            if args is None:
                continue
            r = await tk.execute(tool.name, args)
            print(f"{tool.name}: {json.dumps({'output': r.output, 'isError': r.is_error})}")
        connected = status.get("s") == "connected"
        return 0 if connected else 1
    finally:
        await tk.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
