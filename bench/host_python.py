#!/usr/bin/env python3
"""The Python toolnexus port (0.21.0) on the host-call work of bench/c/bench_host.c.

    bench/.venv/bin/python bench/host_python.py [ROUNDS]

Prints "name value unit" lines, as bench_host does:
  host_round_trip_us          median per-call time of `await toolkit.execute`
                              on a native `def` tool returning "ok"
  host_parallel8_calls_per_s  8 threads, each with its own event loop, calling
                              that tool on one toolkit: total calls/s
  http_get_us                 median per-call time of an `http_tool` GET against
                              a keep-alive HTTP/1.1 server on 127.0.0.1
"""
from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import toolnexus


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = ("echo:" + self.path.rsplit("/", 1)[-1]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


def noop(x: int = 0) -> str:
    """A trivial tool."""
    return "ok"


async def _toolkit(url: str):
    tools = [
        toolnexus.define_tool(noop, name="noop", description="A trivial tool."),
        toolnexus.http_tool(name="getUser", description="Fetch a user.", method="GET", url=url),
    ]
    return await toolnexus.create_toolkit(extra_tools=tools, builtins=False)


def _check(r) -> None:
    if r.is_error:
        raise SystemExit(f"host_python: a call failed: {r.output}")


async def _round_trip(tk, rounds: int, batch: int) -> float:
    for _ in range(batch):
        _check(await tk.execute("noop", {"x": 1}))
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            _check(await tk.execute("noop", {"x": 1}))
        per.append((time.perf_counter() - t0) / batch)
    return statistics.median(per)


async def _http(tk, n: int) -> float:
    for _ in range(50):
        _check(await tk.execute("getUser", {"id": "42"}))
    per = []
    for _ in range(n):
        t0 = time.perf_counter()
        _check(await tk.execute("getUser", {"id": "42"}))
        per.append(time.perf_counter() - t0)
    return statistics.median(per)


def _parallel(tk, threads: int, calls: int) -> float:
    async def run():
        for _ in range(calls):
            _check(await tk.execute("noop", {"x": 1}))

    workers = [threading.Thread(target=lambda: asyncio.run(run())) for _ in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return threads * calls / (time.perf_counter() - t0)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/echo/{{id}}"
    tk = asyncio.run(_toolkit(url))
    rt = asyncio.run(_round_trip(tk, rounds, 50))
    print(f"host_round_trip_us {rt * 1e6:.3f} us")
    print(f"host_parallel8_calls_per_s {_parallel(tk, 8, 250 * max(1, rounds // 10)):.0f} calls/s")
    print(f"http_get_us {asyncio.run(_http(tk, rounds * 10)) * 1e6:.1f} us")
    server.shutdown()


if __name__ == "__main__":
    main()
