"""MCP authorization from Python (docs/mcp.md, "MCP authorization"): a
toolkit built with ``authorize`` completes the browser step for an
OAuth-protected server on the official MCP Python SDK
(tests/mcp_servers/sdk_oauth_server.py, which consents at once: fetching the
authorization URL without following redirects gives the redirect URL)."""
from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

SERVER = str(HERE.parents[2] / "tests" / "mcp_servers" / "sdk_oauth_server.py")


@pytest.fixture
def oauth_server():
    # `python3` on PATH is the test environment's, the one with the MCP SDK.
    proc = subprocess.Popen(["python3", SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), url
        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(url.rsplit("/mcp", 1)[0] + "/_stats", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.time() < deadline, "the OAuth server did not start"
                time.sleep(0.1)
        yield url
    finally:
        proc.kill()
        proc.wait()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _headless(event: dict) -> str:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(event["url"], timeout=10)
    except urllib.error.HTTPError as e:
        if e.code in (301, 302, 303, 307, 308):
            return e.headers["Location"]
        raise
    raise RuntimeError("the authorization URL did not redirect")


def _toolkit(url: str, authorize=None) -> "tn.Toolkit":
    config = {"builtins": False, "mcpConfig": {"mcpServers": {"s": {"url": url, "timeout": 20000}}}}
    return tn.Toolkit(config, authorize=authorize)


def test_authorize_completes_the_browser_step_once(oauth_server):
    seen = []

    def authorize(event):
        seen.append({k: v for k, v in event.items() if k != "abandoned"})
        assert event["abandoned"]() is False
        return _headless(event)

    with _toolkit(oauth_server, authorize) as tk:
        assert tk.status["statuses"]["s"] == "connected", tk.status
        for _ in range(2):
            r = tk.execute("s_whoami")
            assert not r.is_error and "ok " in r.output, r
    assert len(seen) == 1, seen
    ev = seen[0]
    assert ev["server"] == "s" and ev["resource"] == oauth_server
    assert "code_challenge_method=S256" in ev["url"] and "resource=" in ev["url"]


def test_an_authorize_that_raises_fails_the_server_with_its_message(oauth_server):
    def authorize(event):
        raise PermissionError("the user closed the browser")

    with _toolkit(oauth_server, authorize) as tk:
        status = tk.status
        assert status["statuses"]["s"] == "failed"
        assert "the user closed the browser" in status["errors"]["s"], status


def test_without_authorize_a_401_says_so(oauth_server):
    with _toolkit(oauth_server) as tk:
        status = tk.status
        assert status["statuses"]["s"] == "failed"
        assert "http-status (401)" in status["errors"]["s"], status
