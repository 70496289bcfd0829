#!/usr/bin/env python3
"""The gateway's own instructions per proxied tools/call (issue 13), counted
by callgrind, which is repeatable on a noisy shared machine where wall-clock
figures are not.

    cargo build --release --bin toolnexus
    python3 bench/serve_callgrind.py [LONG] [SHORT]   # TOOLNEXUS_BIN=... for another binary

Runs `toolnexus serve --stdio` under `valgrind --tool=callgrind` (the
proxied servers themselves are not traced) twice per tool, sending LONG and
SHORT tools/calls (default 250 and 50) with the lean client of
bench/serve_overhead.py, and prints (instructions of the LONG run minus the
SHORT run) / (LONG - SHORT): start-up, connect and shutdown cancel out. The
tools: the builtin `read` of a 60-byte file, `py_echo` of the official SDK's
server (tests/mcp_servers/sdk_server.py) and `lean_echo` of the minimal
line server of bench/serve_overhead.py. Then the two proxied tools again
with progress forwarding on (each call's `_meta.progressToken` set, so the
gateway watches the proxied server's progress for the client: issue 28).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_overhead  # noqa: E402  (LEAN_SERVER, Stdio, BIN)

ROOT = os.path.dirname(HERE)


def instructions(out_file):
    with open(out_file) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"no totals in {out_file}")


def run(cfg, tool, args, calls, tmp, progress=False):
    out = os.path.join(tmp, f"cg.{tool}.{calls}.{int(progress)}")
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            serve_overhead.BIN, "serve", "--stdio", "--config", cfg]
    c = serve_overhead.Stdio(argv)
    for i in range(calls):
        params = {"name": tool, "arguments": args}
        if progress:
            params["_meta"] = {"progressToken": f"p{i}"}
        answer = c.request("tools/call", params)
        result = answer.get("result")
        if not result or result.get("isError"):
            raise SystemExit(f"{tool}: {answer}")
    c.close()
    return instructions(out)


def main():
    long_n = int(sys.argv[1]) if len(sys.argv) > 1 else 250
    short_n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    tmp = tempfile.mkdtemp()
    small = os.path.join(tmp, "small.txt")
    with open(small, "w") as f:
        f.write("a small file of sixty bytes, read by the builtin read tool.\n")
    lean = os.path.join(tmp, "lean_server.py")
    with open(lean, "w") as f:
        f.write(serve_overhead.LEAN_SERVER)
    cfg = os.path.join(tmp, "mcp.json")
    sdk = os.path.join(ROOT, "tests", "mcp_servers", "sdk_server.py")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"lean": {"command": [sys.executable, lean]},
                                  "py": {"command": [sys.executable, sdk]}}}, f)
    tools = (("read", {"path": small}), ("py_echo", {"text": "ping"}), ("lean_echo", {"text": "ping"}))
    rows = [(t, a, False) for t, a in tools] + [(t, a, True) for t, a in tools[1:]]
    for tool, args, progress in rows:
        many = run(cfg, tool, args, long_n, tmp, progress)
        few = run(cfg, tool, args, short_n, tmp, progress)
        per_call = (many - few) / (long_n - short_n)
        label = tool + (" +progress" if progress else "")
        print(f"{label:20s} {per_call:10.0f} instructions per call "
              f"({many} for {long_n} calls, {few} for {short_n})")


if __name__ == "__main__":
    main()
