#!/usr/bin/env python3
"""What the served toolkit adds to a proxied MCP call (issue 13), measured
against a server that costs next to nothing, so the gateway's own share is
not lost in the noise of a Python SDK server's ~0.5-1 ms per call.

    cargo build --release --bin toolnexus
    python3 bench/serve_overhead.py [ROUNDS] [CALLS_PER_ROUND]

The proxied server is a minimal JSON-RPC line server (written below: one
json.loads and one json.dumps per call). Two rows, measured in interleaved
rounds with the same lean client as bench/serve_bench.py: `echo` on that
server called directly over stdio, and `lean_echo` through `toolnexus serve
--stdio` aggregating it; a third, the gateway with two I/O worker
threads (`--io-threads 2`, the library's default) instead of its one; and
a fourth, the same server behind a 10-line blocking Python relay, the least
a gateway can do. On a VM where waking an idle vCPU costs tens of us, the
rows move with where the scheduler puts the three processes: run it under
`taskset -c 0` too, which puts them on one CPU, to see the gateway's own
cost.
Medians over every call of every round, in microseconds; the difference is
the gateway's overhead per call.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TOOLNEXUS_BIN", os.path.join(ROOT, "target", "release", "toolnexus"))

LEAN_SERVER = r"""
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        # As the official SDK's server (mcp 2.3.0) answers: the version asked
        # for if it is one with an initialize handshake, else the newest such
        # (2026-07-28 sessions have no initialize).
        asked = m["params"].get("protocolVersion")
        known = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
        r = {"protocolVersion": asked if asked in known else known[-1],
             "capabilities": {"tools": {}}, "serverInfo": {"name": "lean", "version": "0"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "echo", "description": "Echo the text argument.",
                        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": m["params"]["arguments"].get("text", "")}]}
    else:
        r = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}).encode() + b"\n")
    out.flush()
"""

# The least a gateway can do: pass each line on and block for the answer.
RELAY = r"""
import subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for line in sys.stdin.buffer:
    p.stdin.write(line)
    p.stdin.flush()
    if b'"id"' in line:
        sys.stdout.buffer.write(p.stdout.readline())
        sys.stdout.buffer.flush()
"""


class Stdio:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.p.stdin.flush()

    def request(self, method, params):
        self.id += 1
        msg = {"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            answer = json.loads(self.p.stdout.readline())
            if answer.get("id") == self.id:
                return answer

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    per_round = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    tmp = tempfile.mkdtemp()
    server = os.path.join(tmp, "lean_server.py")
    with open(server, "w") as f:
        f.write(LEAN_SERVER)
    cfg = os.path.join(tmp, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"lean": {"command": [sys.executable, server]}}}, f)
    relay = os.path.join(tmp, "relay.py")
    with open(relay, "w") as f:
        f.write(RELAY)
    rows = [("lean server direct (stdio)", Stdio([sys.executable, server]), "echo"),
            ("through toolnexus serve --stdio", Stdio([BIN, "serve", "--stdio", "--config", cfg]),
             "lean_echo"),
            ("through serve --stdio --io-threads 2",
             Stdio([BIN, "serve", "--stdio", "--config", cfg, "--io-threads", "2"]), "lean_echo"),
            ("through a blocking Python line relay",
             Stdio([sys.executable, relay, sys.executable, server]), "echo")]
    args = {"text": "ping"}
    samples = {label: [] for label, _, _ in rows}
    for label, c, tool in rows:  # warm-up
        for _ in range(50):
            c.request("tools/call", {"name": tool, "arguments": args})
    for _ in range(rounds):
        for label, c, tool in rows:
            for _ in range(per_round):
                t0 = time.perf_counter()
                answer = c.request("tools/call", {"name": tool, "arguments": args})
                samples[label].append(time.perf_counter() - t0)
                result = answer.get("result")
                if not result or result.get("isError"):
                    raise SystemExit(f"{label}: {answer}")
    med = {label: statistics.median(v) * 1e6 for label, v in samples.items()}
    for label, _, _ in rows:
        print(f"{label:40s} median {med[label]:8.1f} us  (n={len(samples[label])})")
    print(f"gateway overhead per proxied call: {med[rows[1][0]] - med[rows[0][0]]:.1f} us"
          f" (with --io-threads 2: {med[rows[2][0]] - med[rows[0][0]]:.1f} us;"
          f" the Python relay's: {med[rows[3][0]] - med[rows[0][0]]:.1f} us)")
    for _, c, _ in rows:
        c.close()


if __name__ == "__main__":
    main()
