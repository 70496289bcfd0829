#!/usr/bin/env python3
"""Gateway instructions per served tools/call, counted by callgrind: a
figure that stays put on a shared, noisy machine where wall time does not.

    cargo build --release --bin toolnexus
    python3 bench/serve_callgrind_stdio.py [BIN]   # or TOOLNEXUS_BIN=...

Runs `toolnexus serve --stdio` under `valgrind --tool=callgrind` (the
gateway process only; the proxied server is not traced) for 50 and for 250
calls of one tool, with the same lean client as bench/serve_overhead.py,
and prints (Ir(250) - Ir(50)) / 200: the instructions one more call costs,
start-up and shutdown cancelled out. Two tools: the builtin `read` of a
60-byte file, and `lean_echo`, proxied to the minimal JSON-RPC line server
of bench/serve_overhead.py.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_overhead import LEAN_SERVER  # noqa: E402

BIN = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
    "TOOLNEXUS_BIN", os.path.join(ROOT, "target", "release", "toolnexus"))


def run(cfg, tool, args, calls, out):
    p = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
         BIN, "serve", "--stdio", "--config", cfg],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ident = 0

    def request(method, params):
        nonlocal ident
        ident += 1
        msg = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        p.stdin.write(json.dumps(msg).encode() + b"\n")
        p.stdin.flush()
        while True:
            answer = json.loads(p.stdout.readline())
            if answer.get("id") == ident:
                return answer

    request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    p.stdin.flush()
    for _ in range(calls):
        answer = request("tools/call", {"name": tool, "arguments": args})
        result = answer.get("result")
        if not result or result.get("isError"):
            raise SystemExit(f"{tool}: {answer}")
    p.stdin.close()
    p.wait(timeout=120)
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"no instruction total in {out}")


def main():
    tmp = tempfile.mkdtemp()
    small = os.path.join(tmp, "small.txt")
    with open(small, "w") as f:
        f.write("a small file of sixty bytes, read by the builtin read tool.\n")
    server = os.path.join(tmp, "lean_server.py")
    with open(server, "w") as f:
        f.write(LEAN_SERVER)
    cfg = os.path.join(tmp, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"lean": {"command": [sys.executable, server]}}}, f)
    for tool, args in (("read", {"path": small}), ("lean_echo", {"text": "ping"})):
        few = run(cfg, tool, args, 50, os.path.join(tmp, f"{tool}.50.out"))
        many = run(cfg, tool, args, 250, os.path.join(tmp, f"{tool}.250.out"))
        print(f"{tool:10s} {(many - few) / 200:10.0f} instructions per call"
              f"  (Ir 50 calls: {few}, 250 calls: {many})")


if __name__ == "__main__":
    main()
