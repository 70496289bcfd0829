"""Cancelling ``Toolkit.execute`` from another thread (issue 17), through a
``CancelToken`` or a ``timeout``: the call comes back with the cancelled (or
timed-out) ToolResult long before the tool would have finished, what the tool
started is ended (bash's processes, the HTTP request), a late answer of a
Python tool is dropped, and the toolkit stays usable."""
from __future__ import annotations

import asyncio
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from parity import REPO, tn  # noqa: E402  (the package, installed or from src)
from proc_helpers import GONE_WITHIN, hung_up, running, state, wait_for  # noqa: E402

# Far below every "would have finished" time used here (30 s commands, a 20 s
# MCP timeout, a 10 s HTTP answer): a call that took longer ran its tool out.
PROMPTLY = 8.0


def cancel_when(token: tn.CancelToken, ready) -> threading.Thread:
    def run():
        wait_for(ready)
        token.cancel()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def execute_cancelled(tk, name, args, ready):
    token = tn.CancelToken()
    trigger = cancel_when(token, ready)
    start = time.monotonic()
    r = tk.execute(name, args, cancel=token)
    took = time.monotonic() - start
    trigger.join()
    token.close()
    assert took < PROMPTLY, f"{name}: the cancelled call took {took:.1f} s"
    return r


def assert_cancelled(r, want):
    assert r.is_error, r
    assert (r.metadata or {}).get("error") == "cancelled", r
    assert want in r.output, r


def read_pids(d: Path, names):
    pids = []
    for n in names:
        try:
            pids.append(int((d / n).read_text().strip()))
        except (OSError, ValueError):
            return None
    return pids


@pytest.fixture
def tk():
    with tn.Toolkit({}) as t:
        yield t


@pytest.mark.parametrize(
    "command,names",
    [
        ("echo $$ > {d}/sh; sleep 30 & echo $! > {d}/job; wait", ["sh", "job"]),
        (
            "echo $$ > {d}/sh; sleep 30 & echo $! > {d}/job; "
            "( sleep 30 & echo $! > {d}/gc; wait ) & echo $! > {d}/sub; sleep 30",
            ["sh", "job", "sub", "gc"],
        ),
    ],
    ids=["sleep-30", "background-job-and-grandchild"],
)
def test_cancel_ends_bash_and_everything_it_started(tk, tmp_path, command, names):
    r = execute_cancelled(
        tk, "bash", {"command": command.format(d=tmp_path)}, lambda: read_pids(tmp_path, names) is not None
    )
    assert_cancelled(r, "command cancelled")
    pids = read_pids(tmp_path, names)
    assert pids is not None
    for pid in pids:
        # A grandchild re-parented to init may take a moment to be reaped.
        assert wait_for(lambda: not running(pid), GONE_WITHIN), f"process {pid} is still running ({state(pid)})"
    assert tk.execute("bash", {"command": "echo again"}).output == "again\n"


def test_timeout_ends_bash_too(tk, tmp_path):
    start = time.monotonic()
    r = tk.execute("bash", {"command": f"echo $$ > {tmp_path}/sh; exec sleep 30"}, timeout=0.3)
    assert time.monotonic() - start < PROMPTLY
    assert r.is_error and "command timed out after 300ms" in r.output, r
    pids = read_pids(tmp_path, ["sh"])
    if pids:
        assert wait_for(lambda: not running(pids[0]), GONE_WITHIN), state(pids[0])


def test_a_token_triggered_before_the_call_stops_it_at_once(tk, tmp_path):
    token = tn.CancelToken()
    token.cancel()
    r = tk.execute("bash", {"command": f"touch {tmp_path}/ran"}, cancel=token)
    token.close()
    assert_cancelled(r, "bash: cancelled")
    assert not (tmp_path / "ran").exists()


class _Slow(BaseHTTPRequestHandler):
    arrived = 0
    ended_early = 0

    def do_GET(self):  # noqa: N802 — the stdlib's name
        type(self).arrived += 1
        if self.path != "/slow":
            body = b"fast"
        else:
            # Wait for the client to hang up (EOF on the socket), 10 s at most.
            if hung_up(self.connection):
                type(self).ended_early += 1
                return
            body = b"late"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_cancel_ends_a_slow_http_request():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        cfg = {"builtins": False, "httpTools": [{"name": "slow", "url": base + "/slow"}, {"name": "fast", "url": base + "/fast"}]}
        with tn.Toolkit(cfg) as tk:
            r = execute_cancelled(tk, "slow", {}, lambda: _Slow.arrived > 0)
            assert_cancelled(r, "slow: cancelled")
            assert wait_for(lambda: _Slow.ended_early == 1, 3.0), "the server never saw the request ended"
            assert tk.execute("fast").output == "fast"
    finally:
        srv.shutdown()
        srv.server_close()


def test_cancel_returns_from_slow_python_tools():
    started, finished, watcher_started, watcher_saw = (threading.Event() for _ in range(4))
    tk = tn.Toolkit({"builtins": False})

    @tk.register("sleepy", "Sleeps, never looking at its call.")
    def sleepy(args):
        started.set()
        time.sleep(1.0)
        finished.set()
        return "late answer"

    @tk.register("watcher", "Returns once its call is cancelled.")
    def watcher(args):
        watcher_started.set()
        end = time.monotonic() + 10
        while not tn.call_cancelled() and time.monotonic() < end:
            time.sleep(0.005)
        if tn.call_cancelled():
            watcher_saw.set()
        return "watcher stopped"

    @tk.register("echo")
    def echo(args):
        return f"cancelled={tn.call_cancelled()} n={args.get('n')}"

    r = execute_cancelled(tk, "sleepy", {}, started.is_set)
    assert_cancelled(r, "sleepy: cancelled")
    assert not finished.is_set(), "the caller waited for the late answer"

    r = execute_cancelled(tk, "watcher", {}, watcher_started.is_set)
    assert_cancelled(r, "watcher: cancelled")
    assert watcher_saw.wait(3.0), "call_cancelled() never turned true"

    # Still usable, with and without a token; a timeout works the same way.
    assert tk.execute("echo", {"n": 1}).output == "cancelled=False n=1"
    token = tn.CancelToken()
    assert tk.execute("echo", {"n": 2}, cancel=token).output == "cancelled=False n=2"
    token.close()
    started.clear()
    finished.clear()
    r = tk.execute("sleepy", timeout=0.1)
    assert r.is_error and r.output == "sleepy: timed out after 100 ms (timeoutMs)", r
    assert not finished.is_set()
    assert not tn.call_cancelled(), "outside a tool call"
    # Closed while sleepy still runs: its callback stays alive until it returns.
    tk.close()
    assert finished.wait(3.0)
    time.sleep(0.05)


def test_cancelling_the_task_cancels_aexecute(tmp_path):
    async def main(tk):
        task = asyncio.ensure_future(tk.aexecute("bash", {"command": f"echo $$ > {tmp_path}/sh; exec sleep 30"}))
        while read_pids(tmp_path, ["sh"]) is None:
            await asyncio.sleep(0.01)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    with tn.Toolkit({}) as tk:
        assert asyncio.run(main(tk)) < PROMPTLY
        pid = read_pids(tmp_path, ["sh"])[0]
        assert wait_for(lambda: not running(pid), 3.0), f"bash's sleep {pid} survived the cancelled task"
        assert tk.execute("bash", {"command": "echo again"}).output == "again\n"


def test_cancel_returns_from_a_hung_mcp_call():
    script = str(REPO / "tests" / "mcp_servers" / "hang_call.py")
    cfg = {"builtins": False, "mcpConfig": {"mcpServers": {"hang": {"command": [sys.executable, script], "timeout": 20000}}}}
    with tn.Toolkit(cfg) as tk:
        for _ in range(2):
            token = tn.CancelToken()
            threading.Timer(0.2, token.cancel).start()
            start = time.monotonic()
            r = tk.execute("hang_ping", cancel=token)
            assert time.monotonic() - start < PROMPTLY
            assert_cancelled(r, 'mcp server "hang" failed at tools/call: cancelled')
            assert tk.status["statuses"]["hang"] == "connected"


class _SlowTrigger:
    """The native library with a trigger that takes its time, and a free
    that notes whether it came while a trigger was still running (a use
    after free in the real library; here the late trigger is skipped)."""

    def __init__(self, lib):
        self._lib = lib
        self.triggering = threading.Event()
        self.busy = False
        self.freed = False
        self.freed_while_triggering = False

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def tn_cancel_trigger(self, ptr):
        self.busy = True
        self.triggering.set()
        time.sleep(0.2)
        if not self.freed:
            self._lib.tn_cancel_trigger(ptr)
        self.busy = False

    def tn_cancel_free(self, ptr):
        self.freed_while_triggering |= self.busy
        self.freed = True
        self._lib.tn_cancel_free(ptr)


def test_a_token_is_never_freed_while_another_thread_triggers_it():
    # What a linked token meets: the call it ends returns, and its owner
    # closes it, while the thread that cancelled is still in the trigger.
    token = tn.CancelToken()
    slow = _SlowTrigger(token._lib)
    token._lib = slow
    canceller = threading.Thread(target=token.cancel)
    canceller.start()
    assert slow.triggering.wait(5.0)
    token.close()
    canceller.join()
    assert slow.freed and not slow.freed_while_triggering
    assert token.cancelled and token.handle is None
