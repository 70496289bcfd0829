#!/usr/bin/env python3
"""The client-loop overhead benchmark (issue 11), the Python port's runner.

The same scenario as bench/c/bench_overhead.c, through toolnexus 0.21.0's own
client loop: a toolkit over the stdio MCP server (builtins off) and an
OpenAI-style client at the mock provider; each run is one `client.run` of the
question (2 LLM round trips, 2 MCP tool calls).

    init    = create_toolkit (spawn the server, initialize, list tools)
              + create_client
    per run = one `await client.run(question, toolkit)`

    overhead_python.py --url URL --mcp SERVER [--runs N] [--warmup N]

Prints one JSON line: {"framework", "init_ms", "latencies_ms", "final_ok"}.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time

from toolnexus import create_client, create_toolkit

QUESTION = "What's the weather in Paris and what is 2+2?"
FINAL = "The weather in Paris is sunny, 22C, and 2 + 2 = 4."


def settled(res) -> bool:
    outputs = [c.get("output") for c in res.tool_calls]
    return res.text == FINAL and res.status == "done" and "Paris: sunny, 22C" in outputs


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--mcp", required=True)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()

    config = {"mcpServers": {"bench": {"type": "local", "command": [args.mcp],
                                       "enabled": True, "timeout": 30000}}}
    t0 = time.perf_counter()
    toolkit = await create_toolkit(mcp_config=config, builtins=False)
    client = create_client(base_url=args.url, style="openai", model="mock-model",
                           api_key="sk-mock")
    init_ms = (time.perf_counter() - t0) * 1e3

    ok = True
    for _ in range(args.warmup):
        ok &= settled(await client.run(QUESTION, toolkit))
    lat = []
    for _ in range(args.runs):
        s = time.perf_counter()
        res = await client.run(QUESTION, toolkit)
        lat.append((time.perf_counter() - s) * 1e3)
        ok &= settled(res)
    await toolkit.close()
    print(json.dumps({"framework": "toolnexus-python-0.21.0", "language": "python",
                      "init_ms": round(init_ms, 3), "latencies_ms": [round(x, 4) for x in lat],
                      "final_ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
