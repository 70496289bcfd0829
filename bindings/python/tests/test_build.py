"""Toolkit builds with host extensions (issue 17): a build hung on an MCP
server that never answers ends through ``timeout`` or a ``CancelToken``
triggered from another thread, with no process left behind, and a
``skill_provider`` supplies skills at build time."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

REPO = HERE.parents[2]
MUTE = str(REPO / "tests" / "mcp_servers" / "silent_init_pids.py")


def _mute_config(pid_file: Path) -> dict:
    return {
        "builtins": False,
        "mcpConfig": {"mcpServers": {"mute": {"command": [sys.executable, MUTE, str(pid_file)], "timeout": 20000}}},
    }


def _read_pids(path: Path) -> tuple[int, int]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            server, grandchild = path.read_text().split()
            return int(server), int(grandchild)
        except (OSError, ValueError):
            time.sleep(0.02)
    raise AssertionError(f"{path} never held the pids")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _assert_tree_gone(pid_file: Path) -> None:
    server, grandchild = _read_pids(pid_file)
    # The server the build started is reaped by the time the build returns.
    assert not os.path.exists(f"/proc/{server}"), f"server {server} not reaped"
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(grandchild), f"grandchild {grandchild} still alive"


def test_a_hung_mcp_build_ends_at_its_timeout(tmp_path):
    pid_file = tmp_path / "mute.pids"
    # Long enough for the server to start and write its pids, far shorter
    # than its 20 s MCP timeout.
    with pytest.raises(tn.TimeoutError) as e:
        tn.Toolkit(_mute_config(pid_file), timeout=3.0)
    assert e.value.code == "timeout" and "within 3 s" in e.value.message
    assert "MCP" in e.value.message
    _assert_tree_gone(pid_file)


def test_a_hung_mcp_build_ends_when_its_token_is_cancelled(tmp_path):
    pid_file = tmp_path / "mute.pids"
    token = tn.CancelToken()

    def cancel_once_started() -> None:
        _read_pids(pid_file)
        token.cancel()

    t = threading.Thread(target=cancel_once_started)
    t.start()
    try:
        with pytest.raises(tn.CancelledError) as e:
            tn.Toolkit(_mute_config(pid_file), cancel=token)
    finally:
        t.join()
        token.close()
    assert e.value.code == "cancelled" and e.value.status == 9
    _assert_tree_gone(pid_file)


def test_cancel_and_timeout_together_are_refused():
    token = tn.CancelToken()
    try:
        with pytest.raises(ValueError, match="either cancel or timeout"):
            tn.Toolkit({}, cancel=token, timeout=1)
    finally:
        token.close()


def test_a_build_within_its_timeout_is_a_plain_build():
    with tn.Toolkit({"builtins": False, "skills": [{"name": "s", "content": "c"}]}, timeout=30) as tk:
        assert tk.render("toolNames") == ["skill"]


def test_skill_provider_skills_render_and_execute():
    calls = []

    def provider():
        calls.append(threading.get_ident())
        return [
            {"name": "from-py", "description": "kept by Python", "content": "PY BODY", "resources": ["guide.md"]},
            {"name": "dup", "content": "PROVIDER COPY"},
        ]

    config = {"builtins": False, "skills": [{"name": "dup", "content": "CONFIG COPY"}]}
    with tn.Toolkit(config, skill_provider=provider) as tk:
        assert calls == [threading.get_ident()], "called once, on the building thread"
        assert "kept by Python" in tk.render("skillsPrompt")
        r = tk.execute("skill", {"name": "from-py"})
        assert not r.is_error and "PY BODY" in r.output and "guide.md" in r.output
        r = tk.execute("skill", {"name": "dup"})
        assert "CONFIG COPY" in r.output and "PROVIDER COPY" not in r.output


def test_a_provider_alone_is_a_skill_source():
    with tn.Toolkit({"builtins": False}, skill_provider=lambda: [{"name": "only", "content": "x"}]) as tk:
        assert [s["name"] for s in tk.render("skills")["skills"]] == ["only"]


@pytest.mark.parametrize(
    "provider, want",
    [
        (lambda: (_ for _ in ()).throw(RuntimeError("store down")), "RuntimeError: store down"),
        (lambda: {"name": "not a list"}, "expected an array of skill objects, got an object"),
        (lambda: [{"name": "ok"}, 5], "skills[1]: expected an object, got a number"),
        (lambda: [object()], "not JSON serializable"),
    ],
)
def test_a_failing_provider_is_isolated_in_the_status(provider, want):
    config = {"builtins": False, "skills": [{"name": "kept", "content": "still here"}]}
    with tn.Toolkit(config, skill_provider=provider) as tk:
        message = tk.status["errors"]["skillProvider"]
        assert "skill provider" in message and want in message, message
        assert [s["name"] for s in tk.render("skills")["skills"]] == ["kept"]
        assert "still here" in tk.execute("skill", {"name": "kept"}).output
