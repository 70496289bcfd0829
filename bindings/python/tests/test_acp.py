"""Client.acp (tn_client_new_acp; docs/client-loop.md, "ACP agents as
models") against tests/acp_agents/sdk_echo_agent.py, an echo agent on the
official ACP Python SDK, and a bad config as InvalidConfigError."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

REPO = HERE.parents[2]
AGENT = str(REPO / "tests" / "acp_agents" / "sdk_echo_agent.py")


def _python() -> str:
    """$TOOLNEXUS_PYTHON, else the repository's .venv python (as
    tests/acp.rs finds it), else python3 on PATH; it must have the
    agent-client-protocol package."""
    python = os.environ.get("TOOLNEXUS_PYTHON")
    if not python:
        venv = REPO / ".venv" / "bin" / "python3"
        python = str(venv) if venv.exists() else "python3"
    probe = subprocess.run([python, "-c", "import acp"], capture_output=True, text=True)
    assert probe.returncode == 0, (
        f"the agent-client-protocol package is missing from {python}: run scripts/setup.sh "
        f"(or .venv/bin/pip install -r tests/requirements.txt): {probe.stderr}"
    )
    return python


def test_acp_client_runs_on_the_sdk_agent():
    with tn.Client.acp({"command": _python(), "args": [AGENT], "permissionTimeoutMs": 10000}) as client:
        for prompt in ("hi there", "and again"):
            r = client.run(None, prompt)
            # The thought chunk the agent sends first is not in the answer.
            assert (r.text, r.status) == (f"ECHO[SUPERSEDES-ALL-PRIOR: {prompt}]", "done")
    with pytest.raises(tn.ToolnexusError) as e:
        client.run(None, "after close")
    assert e.value.code == "invalid_argument"


@pytest.mark.parametrize(
    "config, names",
    [
        ({"command": "x", "baseUrl": "http://x"}, "unknown key 'baseUrl'"),
        ({}, "acp.command is required"),
        ('{"command": "x", "args": "a b"}', "acp.args must be an array"),
    ],
)
def test_acp_bad_config_is_invalid_config(config, names):
    with pytest.raises(tn.InvalidConfigError) as e:
        tn.Client.acp(config)
    assert names in e.value.message
