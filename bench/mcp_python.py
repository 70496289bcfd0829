#!/usr/bin/env python3
"""The Python toolnexus port (0.21.0) on the same servers as benches/mcp.rs.

    python3 -m venv bench/.venv && bench/.venv/bin/pip install toolnexus==0.21.0
    bench/.venv/bin/python bench/mcp_python.py

Prints the median of each measurement, in milliseconds. TN_BENCH_PYTHON picks
the interpreter that runs the servers (default python3), as for the Rust bench.
"""
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time

import toolnexus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "mcp_servers", "sdk_server.py")
PYTHON = os.environ.get("TN_BENCH_PYTHON", "python3")


def stdio_config(n):
    return {"mcpServers": {f"s{i}": {"command": [PYTHON, SCRIPT, "stdio"]} for i in range(n)}}


async def build(config):
    tk = await toolnexus.create_toolkit(mcp_config=config, builtins=False)
    failed = {k: v for k, v in tk.mcp_status().items() if str(v) not in ("connected", "McpStatus.CONNECTED")}
    if failed:
        raise SystemExit(f"servers failed: {failed}")
    return tk


async def time_connect(config, samples):
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        tk = await build(config)
        out.append(time.perf_counter() - t0)
        await tk.close()
    return out


async def time_calls(tk, name, samples):
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        r = await tk.execute(name, {"text": "ping"})
        out.append(time.perf_counter() - t0)
        if r.is_error:
            raise SystemExit(f"{name} failed: {r.output}")
    return out


def report(label, times):
    print(f"{label:40s} median {statistics.median(times) * 1000:9.3f} ms  (n={len(times)})")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def main():
    print(f"toolnexus {getattr(toolnexus, '__version__', '0.21.0')} (Python {sys.version.split()[0]})")
    report("connect 1 stdio server", await time_connect(stdio_config(1), 10))
    minimal = {"mcpServers": {"m": {"command": [PYTHON, os.path.join(ROOT, "tests", "mcp_servers", "hang_call.py")]}}}
    report("connect 1 minimal stdio server", await time_connect(minimal, 20))
    report("connect 10 stdio servers", await time_connect(stdio_config(10), 5))

    tk = await build(stdio_config(1))
    await time_calls(tk, "s0_echo", 20)  # warm-up
    report("tools/call stdio", await time_calls(tk, "s0_echo", 200))
    await tk.close()

    port = free_port()
    server = subprocess.Popen([PYTHON, SCRIPT, "streamable-http", str(port)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("the HTTP server did not start")
                time.sleep(0.05)
        tk = await build({"mcpServers": {"h": {"url": f"http://127.0.0.1:{port}/mcp"}}})
        await time_calls(tk, "h_echo", 20)
        report("tools/call streamable-http", await time_calls(tk, "h_echo", 200))
        await tk.close()
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    asyncio.run(main())
