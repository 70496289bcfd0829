#!/usr/bin/env python3
"""The Python toolnexus port's HTTP tool on the same work as benches/http_tool.rs.

    bench/.venv/bin/python bench/http_python.py --url http://127.0.0.1:PORT/users/{id}

Builds `toolnexus.http_tool(...)` (toolnexus 0.21.0, `pip install
toolnexus==0.21.0` into bench/.venv) for a GET of the given URL template, calls
it with {"id": "42"} as an agent would (`await tool.execute(args)`), and
prints the per-call median, p90 and mean in microseconds. The Rust bench runs
this script itself against its own server, so both measure the same server.
Without --url it serves a keep-alive HTTP/1.1 endpoint of its own.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import toolnexus


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


def _serve() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/users/{{id}}"


async def _measure(url: str, warmup: int, iterations: int) -> list[float]:
    tool = toolnexus.http_tool(
        name="getUser", description="Fetch a user.", method="GET", url=url
    )
    args = {"id": "42"}
    for _ in range(warmup):
        result = await tool.execute(args)
        assert not result.is_error, result.output
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        result = await tool.execute(args)
        samples.append((time.perf_counter_ns() - start) / 1000.0)
        assert not result.is_error, result.output
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="URL template with {id}; default: a local server")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=2000)
    opts = parser.parse_args()
    url = opts.url or _serve()
    samples = sorted(asyncio.run(_measure(url, opts.warmup, opts.iterations)))
    p90 = samples[int(len(samples) * 0.9)]
    print(
        f"python toolnexus {toolnexus.__version__ if hasattr(toolnexus, '__version__') else '0.21.0'} "
        f"http_tool GET: median {statistics.median(samples):.1f} us, "
        f"p90 {p90:.1f} us, mean {statistics.fmean(samples):.1f} us "
        f"over {len(samples)} calls"
    )


if __name__ == "__main__":
    main()
