"""Ctrl-C on the main thread: a KeyboardInterrupt ends a build, an execute
of a tool that waits on the world, and a translate, instead of waiting for
them, and leaves nothing running (SIGINT sent to this process while the
call is inside the library)."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from parity import REPO, tn  # noqa: E402  (the package, installed or from src)
from proc_helpers import GONE_WITHIN, hung_up, running, state, wait_for  # noqa: E402

# Far below the time the interrupted calls would otherwise take (30 s
# commands and servers, a 20 s MCP timeout, a 10 s provider answer).
PROMPTLY = 8.0


def read_pid(path: Path):
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@pytest.fixture
def ctrl_c():
    """``ctrl_c(ready)``: SIGINT to this process once ``ready()`` holds, as a
    terminal's Ctrl-C. Python's own SIGINT handler is installed for the
    test: a process a non-interactive shell starts in the background
    inherits SIGINT ignored."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threads = []

    def arm(ready):
        def fire():
            wait_for(ready, 30)
            os.kill(os.getpid(), signal.SIGINT)

        t = threading.Thread(target=fire, daemon=True)
        t.start()
        threads.append(t)

    try:
        yield arm
    finally:
        for t in threads:
            t.join(35)
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_ends_a_bash_call_and_its_background_job(ctrl_c, tmp_path):
    sh, job = tmp_path / "sh", tmp_path / "job"
    command = f"echo $$ > {sh}; sleep 30 & echo $! > {job}; wait"
    with tn.Toolkit({}) as tk:
        ctrl_c(lambda: read_pid(sh) is not None and read_pid(job) is not None)
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            tk.execute("bash", {"command": command})
        assert time.monotonic() - start < PROMPTLY
        for pid in (read_pid(sh), read_pid(job)):
            assert pid is not None
            assert wait_for(lambda: not running(pid), GONE_WITHIN), f"process {pid} is still running ({state(pid)})"
        assert tk.execute("bash", {"command": "echo again"}).output == "again\n"


def test_ctrl_c_ends_a_hung_mcp_call(ctrl_c):
    script = str(REPO / "tests" / "mcp_servers" / "hang_call.py")
    cfg = {"builtins": False, "mcpConfig": {"mcpServers": {"hang": {"command": [sys.executable, script], "timeout": 20000}}}}
    with tn.Toolkit(cfg) as tk:
        begun = time.monotonic()
        ctrl_c(lambda: time.monotonic() - begun > 0.3)
        with pytest.raises(KeyboardInterrupt):
            tk.execute("hang_ping")
        assert time.monotonic() - begun < PROMPTLY
        assert tk.status["statuses"]["hang"] == "connected"
        # The toolkit goes on: the next call times out on its own.
        r = tk.execute("hang_ping", timeout=0.2)
        assert r.is_error and "timeout (no answer within 200 ms)" in r.output, r


def test_ctrl_c_ends_a_build_stuck_on_an_mcp_server(ctrl_c, tmp_path):
    pidfile = tmp_path / "server.pid"
    never_answers = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(30)"
    cfg = {"builtins": False, "mcpConfig": {"mcpServers": {"mute": {
        "command": [sys.executable, "-c", never_answers, str(pidfile)], "timeout": 20000}}}}
    ctrl_c(lambda: read_pid(pidfile) is not None)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        tn.Toolkit(cfg)
    assert time.monotonic() - start < PROMPTLY
    pid = read_pid(pidfile)
    assert pid is not None
    assert wait_for(lambda: not running(pid), GONE_WITHIN), f"the server {pid} is still running ({state(pid)})"
    with tn.Toolkit({"builtins": False, "skills": [{"name": "s", "content": "c"}]}) as tk:
        assert tk.render("toolNames") == ["skill"]


class _Provider(BaseHTTPRequestHandler):
    """A provider that takes the request and answers only after 10 s,
    unless the client hangs up first."""

    arrived = 0
    hung_up = 0

    def do_POST(self):  # noqa: N802 — the stdlib's name
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).arrived += 1
        if hung_up(self.connection):
            type(self).hung_up += 1
            return
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "late"}, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_ctrl_c_ends_a_translate_and_its_request(ctrl_c):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    client = {"baseUrl": f"http://127.0.0.1:{srv.server_address[1]}", "style": "openai", "model": "m",
              "apiKey": "k", "retries": 0, "timeoutMs": 20000}
    request = {"messages": [{"role": "user", "content": "hi"}]}
    try:
        ctrl_c(lambda: _Provider.arrived > 0)
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            tn.translate(client, request)
        assert time.monotonic() - start < PROMPTLY
        assert wait_for(lambda: _Provider.hung_up == 1, 3.0), "the provider never saw the request ended"
    finally:
        srv.shutdown()
        srv.server_close()


def test_quick_tools_stay_on_the_calling_thread(ctrl_c):
    # Nothing is interrupted: with the handler installed, a Python tool
    # and a skill still run on the main thread (no handoff).
    with tn.Toolkit({"skills": [{"name": "s", "content": "body"}]}) as tk:
        seen = []

        @tk.register("who", "Which thread runs me.")
        def who(_args):
            seen.append(threading.get_ident())
            return "me"

        assert tk.execute("who").output == "me"
        assert seen == [threading.get_ident()]
        assert "body" in tk.execute("skill", {"name": "s"}).output
