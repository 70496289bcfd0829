"""Live MCP ``list_changed`` refresh from Python (issue 28): a toolkit built
with ``tools_changed`` over an official-SDK server whose tools change while
it runs (tests/mcp_servers/sdk_changing_server.py) serves the new tool and
hears ``{server, added, removed, tools, generation}``."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

PYTHON = os.environ.get("TOOLNEXUS_PYTHON", "python3")
SERVER = str(HERE.parents[2] / "tests" / "mcp_servers" / "sdk_changing_server.py")


def test_a_server_that_adds_a_tool_is_heard_and_served():
    events = []
    came = threading.Event()

    def heard(event):
        events.append(event)
        came.set()

    config = {
        "builtins": False,
        # $TOOLNEXUS_PYTHON, else `python3` on PATH: the one with the MCP SDK.
        "mcpConfig": {"mcpServers": {"live": {"command": [PYTHON, SERVER, "stdio"], "timeout": 20000}}},
    }
    with tn.Toolkit(config, tools_changed=heard) as tk:
        assert tk.status["statuses"]["live"] == "connected", tk.status
        assert "live_extra" not in tk.render("toolNames")
        r = tk.execute("live_add", {"name": "extra"})
        assert (r.is_error, r.output) == (False, "added extra")
        assert came.wait(60), "no toolsChanged event"
        assert events[0]["server"] == "live"
        assert events[0]["added"] == ["live_extra"]
        assert events[0]["removed"] == []
        assert events[0]["generation"] >= 1
        assert "live_extra" in tk.render("toolNames")
        assert tk.execute("live_extra", {}).output == "I am extra"
        deadline = time.monotonic() + 60
        while tk.status.get("toolsGeneration", 0) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
