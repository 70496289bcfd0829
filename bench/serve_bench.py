#!/usr/bin/env python3
"""tools/call round trips through the served toolkit (issue 13), beside the
Python port 0.21.0's MCP serve and beside the proxied server called directly
(and through a 10-line blocking Python relay, the least a gateway can do).

    cargo build --release --bin toolnexus
    python3 -m venv /tmp/tn021 && /tmp/tn021/bin/pip install toolnexus==0.21.0 mcp
    python3 bench/serve_bench.py [ROUNDS] [CALLS_PER_ROUND]

TOOLNEXUS_BIN names another toolnexus binary (a before/after pair).

Every gateway aggregates the same two stdio servers plus the builtins: the
official SDK's (tests/mcp_servers/sdk_server.py; its tool `echo` is
`py_echo` through a gateway) and the minimal JSON-RPC line server of
bench/serve_overhead.py (`lean_echo`), which costs next to nothing, so its
rows compare the gateways' own cost without the SDK server's ~0.7 ms.

The client is the same lean one for every target (JSON-RPC over a pipe, or
HTTP/1.1 keep-alive POSTs with http.client), so differences between rows
are the servers'. Targets are measured in interleaved rounds (the machine is
shared); each wall figure is the median over every call of every round, in
microseconds. Beside it, the CPU time per call (every thread, from
/proc/PID/task/*/schedstat, over the same calls) of the gateway process
itself and of the servers it runs (or the server called directly): on a
small shared machine the wall figures move with whatever else runs, while
a gateway's CPU per call is what it costs whoever hosts it. TN_PORT_PYTHON names the venv python that has toolnexus 0.21.0
(default /tmp/tn021/bin/python; the row is skipped when it has none).
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_overhead import LEAN_SERVER, RELAY  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TOOLNEXUS_BIN", os.path.join(ROOT, "target", "release", "toolnexus"))
SDK = os.path.join(ROOT, "tests", "mcp_servers", "sdk_server.py")
PORT_PY = os.environ.get("TN_PORT_PYTHON", "/tmp/tn021/bin/python")
PY = sys.executable


PORT_SERVE = r"""
import asyncio, json, sys, toolnexus
async def main():
    cfg = json.loads(sys.argv[1])
    tk = await toolnexus.create_toolkit(mcp_config=cfg)
    h = await tk.serve("127.0.0.1:0", mcp={"name": "python-port"})
    print(h.url + "/mcp", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"""

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}


class Stdio:
    """JSON-RPC lines to a child's stdin, answers from its stdout."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.request("initialize", INIT)
        self.notify("notifications/initialized")

    def notify(self, method):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
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


class Http:
    """Stateless streamable-HTTP POSTs on one keep-alive connection."""

    def __init__(self, url):
        rest = url.split("//", 1)[1]
        hostport, self.path = rest.split("/", 1)
        self.path = "/" + self.path
        host, port = hostport.split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.id = 0
        self.request("initialize", INIT)

    def request(self, method, params):
        self.id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        self.conn.request("POST", self.path, body, {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
        })
        res = self.conn.getresponse()
        raw = res.read().decode()
        if res.getheader("content-type", "").startswith("text/event-stream"):
            raw = next(l[5:] for l in raw.splitlines() if l.startswith("data:"))
        return json.loads(raw)

    def close(self):
        self.conn.close()


def cpu_ns(pid):
    """CPU time of every thread of process `pid` so far, in ns
    (/proc/PID/task/*/schedstat: exact, where /proc/PID/stat counts 10 ms
    ticks). A thread that ends between two reads takes its time with it;
    the reads bracket one block of calls, so that is rare."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def children(pid):
    """The direct child processes of `pid` (the MCP servers a gateway
    started)."""
    kids = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return kids


def call_args(tool, small):
    if tool.endswith("echo"):
        return {"text": "ping"}
    return {"path": small}


def check(answer, label):
    result = answer.get("result")
    if not result or result.get("isError"):
        raise SystemExit(f"{label}: {answer}")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    per_round = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    tmp = tempfile.mkdtemp()
    small = os.path.join(tmp, "small.txt")
    with open(small, "w") as f:
        f.write("hello\n" * 10)
    lean = os.path.join(tmp, "lean_server.py")
    with open(lean, "w") as f:
        f.write(LEAN_SERVER)
    mcp = {"mcpServers": {"py": {"command": [PY, SDK, "stdio"], "timeout": 30000},
                          "lean": {"command": [PY, lean], "timeout": 30000}}}
    cfg_path = os.path.join(tmp, "mcp.json")
    with open(cfg_path, "w") as f:
        json.dump(mcp, f)

    procs = []
    clients = {}
    rs_stdio = Stdio([BIN, "serve", "--stdio", "--config", cfg_path])
    clients["toolnexus-rs stdio"] = rs_stdio
    gw = subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0", "--config", cfg_path],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    procs.append(gw)
    clients["toolnexus-rs http"] = Http(gw.stdout.readline().decode().strip())
    direct = Stdio([PY, SDK, "stdio"])
    lean_direct = Stdio([PY, lean])
    relay_py = os.path.join(tmp, "relay.py")
    with open(relay_py, "w") as f:
        f.write(RELAY)
    relay = Stdio([PY, relay_py, PY, SDK, "stdio"])
    port = None
    if os.path.exists(PORT_PY):
        port = subprocess.Popen([PORT_PY, "-c", PORT_SERVE, json.dumps(mcp)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        procs.append(port)
        clients["python port 0.21.0 http"] = Http(port.stdout.readline().decode().strip())

    # The process whose CPU each target's calls cost: the gateway (its MCP
    # servers counted apart), or the server called directly.
    owner = {"toolnexus-rs stdio": rs_stdio.p.pid, "toolnexus-rs http": gw.pid}
    if port is not None:
        owner["python port 0.21.0 http"] = port.pid
    rows = []  # (label, client, tool, gateway pid or None, server pid)
    for name, c in clients.items():
        rows.append((f"{name} builtin read", c, "read", owner[name], None))
        rows.append((f"{name} proxied py_echo", c, "py_echo", owner[name], None))
        rows.append((f"{name} proxied lean_echo", c, "lean_echo", owner[name], None))
    rows.append(("SDK server direct stdio echo", direct, "echo", None, direct.p.pid))
    rows.append(("SDK server through a Python line relay", relay, "echo", relay.p.pid, None))
    rows.append(("lean server direct stdio echo", lean_direct, "echo", None, lean_direct.p.pid))
    samples = {label: [] for label, *_ in rows}
    # CPU ns spent in each row's timed calls: the gateway's own, and its
    # servers' (every process it started).
    cpu_gw = {label: 0 for label, *_ in rows}
    cpu_srv = {label: 0 for label, *_ in rows}
    for label, c, tool, *_ in rows:  # warm-up
        for _ in range(20):
            check(c.request("tools/call", {"name": tool, "arguments": call_args(tool, small)}), label)
    servers = {label: ([srv] if srv else children(gwpid)) for label, _, _, gwpid, srv in rows}
    for r in range(rounds):
        for label, c, tool, gwpid, _ in rows:
            args = {"name": tool, "arguments": call_args(tool, small)}
            g0 = cpu_ns(gwpid) if gwpid else 0
            s0 = sum(cpu_ns(k) for k in servers[label])
            for _ in range(per_round):
                t0 = time.perf_counter()
                answer = c.request("tools/call", args)
                samples[label].append(time.perf_counter() - t0)
                check(answer, label)
            if gwpid:
                cpu_gw[label] += cpu_ns(gwpid) - g0
            cpu_srv[label] += sum(cpu_ns(k) for k in servers[label]) - s0
    med = {label: statistics.median(v) * 1e6 for label, v in samples.items()}
    print(f"{'':45s} {'wall median':>17s}  {'gateway CPU/call':>16s}  {'servers CPU/call':>16s}")
    for label, *_ in rows:
        n = len(samples[label])
        gw_cpu = f"{cpu_gw[label] / n / 1e3:13.1f} us" if cpu_gw[label] else f"{'':16s}"
        print(f"{label:45s} {med[label]:14.1f} us  {gw_cpu}  {cpu_srv[label] / n / 1e3:13.1f} us  (n={n})")
    for server, tool in (("SDK", "py_echo"), ("lean", "lean_echo")):
        direct_us = med[f"{server} server direct stdio echo"]
        print(f"gateway overhead over the {server} server, stdio (proxied - direct): "
              f"{med[f'toolnexus-rs stdio proxied {tool}'] - direct_us:.1f} us")
    if port is not None:
        for kind in ("builtin read", "proxied py_echo", "proxied lean_echo"):
            ratio = med[f"python port 0.21.0 http {kind}"] / med[f"toolnexus-rs http {kind}"]
            ours, theirs = cpu_gw[f"toolnexus-rs http {kind}"], cpu_gw[f"python port 0.21.0 http {kind}"]
            cpu = f", gateway CPU {theirs / ours:.1f}x" if ours else ""
            print(f"python port / toolnexus-rs, http {kind}: {ratio:.1f}x{cpu}")
    for c in clients.values():
        c.close()
    direct.close()
    lean_direct.close()
    relay.close()
    for p in procs:
        if p.stdin:
            p.stdin.close()
        p.terminate()
        p.wait(timeout=10)


if __name__ == "__main__":
    main()
