"""The MCP elicitation bridge from Python (SPEC §2): a toolkit built with
``wait_for`` answers an official-SDK server (tests/mcp_servers/
sdk_elicit_server.py, whose tools call ``ctx.elicit``/``ctx.elicit_url``) in
the middle of a tool call; without one, elicitation is not advertised."""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

SERVER = str(HERE.parents[2] / "tests" / "mcp_servers" / "sdk_elicit_server.py")


def _toolkit(wait_for=None) -> "tn.Toolkit":
    # `python3` on PATH is the test environment's, the one with the MCP SDK.
    config = {
        "builtins": False,
        "mcpConfig": {"mcpServers": {"el": {"command": ["python3", SERVER, "stdio"], "timeout": 20000}}},
    }
    return tn.Toolkit(config, wait_for=wait_for)


def _text(r) -> str:
    """The tool's text (the SDK returns a str as ``{"result": text}``)."""
    try:
        v = json.loads(r.output)
    except ValueError:
        return r.output
    return v["result"] if isinstance(v, dict) and "result" in v else r.output


def test_form_and_url_questions_reach_wait_for_and_its_answers_reach_the_server():
    seen = []

    def wait_for(req):
        seen.append(req)
        if req.kind == "input":
            return tn.Answer(id=req.id, ok=True, data={"name": "Ada", "age": 36})
        return tn.Answer(id=req.id, ok=True)

    with _toolkit(wait_for) as tk:
        caps = json.loads(_text(tk.execute("el_client_caps")))
        assert "form" in caps or caps == {}, caps
        r = tk.execute("el_ask_name")
        assert not r.is_error and _text(r) == "accepted: name=Ada age=36", r
        form = seen[0]
        assert form.kind == "input" and form.prompt == "Who are you?"
        assert set(form.data["schema"]["properties"]) == {"name", "age"}
        r = tk.execute("el_login")
        if _text(r).startswith("unsupported"):
            pytest.skip("this MCP SDK has no URL-mode elicitation")
        assert _text(r) == "accept", r
        assert seen[1].kind == "authorization"
        assert seen[1].url == "https://auth.example/authorize?client=tn"


@pytest.mark.parametrize(
    "answer, want",
    [
        (lambda req: tn.answer_declined(req.id), "decline"),
        (lambda req: tn.Answer(id=req.id, ok=False, reason="cancelled"), "cancel"),
        (lambda req: None, "wait_for returned None"),
        (lambda req: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_refusals_and_failures_are_what_the_server_sees(answer, want):
    with _toolkit(answer) as tk:
        r = tk.execute("el_ask_name")
        assert want in _text(r) and not r.is_error, r
        # The toolkit still works after a failing wait_for.
        assert not _text(tk.execute("el_ask_name")).startswith("accepted")


def test_without_wait_for_elicitation_is_not_advertised():
    with _toolkit() as tk:
        assert _text(tk.execute("el_client_caps")) == "none"
        assert "without a waitFor" in tk.execute("el_ask_name").output


def test_abandoned_turns_true_when_the_call_is_cancelled():
    ended = threading.Event()

    def wait_for(req):
        deadline = time.monotonic() + 15
        while not req.abandoned() and time.monotonic() < deadline:
            time.sleep(0.01)
        if req.abandoned():
            ended.set()
        return tn.Answer(id=req.id, ok=True, data={"name": "too late"})

    with _toolkit(wait_for) as tk:
        token = tn.CancelToken()
        threading.Timer(0.3, token.cancel).start()
        r = tk.execute("el_ask_name", cancel=token)
        assert r.is_error and "cancelled" in r.output, r
        assert ended.wait(10), "wait_for never saw abandoned()"
        ended.clear()
        r = tk.execute("el_ask_name", timeout=0.4)
        assert r.is_error and "timeout" in r.output, r
        assert ended.wait(10)


def test_wait_for_must_be_callable():
    with pytest.raises(TypeError, match="wait_for must be callable"):
        tn.Toolkit({"builtins": False}, wait_for="yes")
