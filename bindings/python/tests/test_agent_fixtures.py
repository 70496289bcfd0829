"""Upstream's cross-port runtime fixture subagent-fanout
(``toolnexus-subagent-fixture/v1``) through the Python layer, read in place
(``TN_AGENT_FIXTURES``, else ``../shared/upstream-fixtures`` beside the
repository; a clear skip line when absent); the mock model is this file's
own, after the fixture's scripts (contract notes §12.3). Then the host
callbacks of ``Agents.set_callback`` (a verify judge, a guardrail)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402

USAGE = {"promptTokens": 30, "completionTokens": 10}


def fixture_dir() -> tuple[Path | None, str]:
    env = os.environ.get("TN_AGENT_FIXTURES")
    if env:
        p = Path(env)
        return (p, "") if p.is_dir() else (None, f"TN_AGENT_FIXTURES={env} is not a directory")
    p = (HERE / "../../../../shared/upstream-fixtures").resolve()
    if p.is_dir():
        return p, ""
    return None, f"no {p} (set TN_AGENT_FIXTURES to upstream's fixture directory)"


def fixture_model(event):
    tools = [m["content"] for m in event["messages"] if m.get("role") == "tool"]
    model = event["model"]

    def call(name, args):
        return {"name": name, "arguments": args}

    if model == "m-coordinator" and not tools:
        return {"usage": USAGE, "toolCalls": [call("task", {"agent": "explore", "prompt": "find A"}),
                                              call("task", {"agent": "explore", "prompt": "find B"})]}
    if model == "m-coordinator":
        return {"usage": USAGE, "content": "synthesis: " + " + ".join(tools)}
    if model == "m-explore" and not tools:
        return {"usage": USAGE, "toolCalls": [call("lookup", {"q": "x"})]}
    if model == "m-explore":
        return {"usage": USAGE, "content": "found:" + tools[0]}
    return {"usage": USAGE, "content": "ok"}


def transitions(trace, hid):
    out = []
    for line in trace:
        if not line.startswith(hid + ": "):
            continue
        word = line[len(hid) + 2:].split(" ", 1)[0]
        frm, arrow, to = word.partition("→")
        if arrow and frm.isalpha() and to.isalpha():
            out.append(word)
    return out


def test_upstream_fixture_subagent_fanout():
    d, why = fixture_dir()
    if d is None:
        pytest.skip(f"agent fixtures: skipped — {why}")
    path = d / "subagent-fanout" / "fixture.json"
    if not path.is_file():
        pytest.skip(f"agent fixtures: skipped — no {path}")
    fx = json.loads(path.read_text())
    exp = fx["expect"]
    tk = tn.Toolkit({"builtins": False})

    @tk.register("lookup", "looks up", {"type": "object", "properties": {"q": {"type": "string"}}})
    def lookup(args):
        return f"data({args['q']})"

    with tk, tn.Agents({"clock": "manual", "agents": fx["registry"]}, toolkit=tk, generate=fixture_model) as rt:
        hid, r = rt.run(fx["run"]["entry"], fx["run"]["prompt"])
        assert r.status == exp["status"]
        for s in exp["textContains"]:
            assert s in r.text
        for s, n in exp["textOccurrences"].items():
            assert r.text.count(s) == n, r.text
        assert r.turns == exp["parentTurns"]
        assert r.total_tokens == exp["parentUsageTotal"]
        states = {v["id"]: v["state"] for v in rt.list()}
        for c in exp["childIds"]:
            assert states[c] == ("closed" if exp["childrenClosedAfterTask"] else states[c])
        trace = rt.trace()
        for h, want in exp["transitions"].items():
            got = transitions(trace, h)
            assert len(got) == len(want), (h, got, want)
            for g, w in zip(got, want):
                assert g == w or (w.startswith("→") and g.endswith(w)), (h, got, want)
        assert hid == "root/" + fx["run"]["entry"] + ".1"


def test_host_callbacks_judge_and_guard_an_agent():
    tk = tn.Toolkit({"builtins": False})

    @tk.register("shout", "shouts")
    def shout(args):
        return "HI"

    def model(event):
        text = json.dumps(event)
        if "Your work did not verify: unchecked" in text:
            return "checked"
        if "denied: no shouting" in text:
            return "first try"
        return {"toolCalls": [{"name": "shout", "arguments": {}}]}

    cfg = {"clock": "manual", "callbacks": ["guardrail:w"],
           "agents": {"w": {"does": "works", "tools": ["shout"],
                            "completion": {"verify": "callback", "maxAttempts": 2}}}}
    judged, spawned = [], []
    with tk, tn.Agents(cfg, toolkit=tk, generate=model) as rt:
        rt.set_callback("verify:w", lambda r: judged.append(1) or (
            {"ok": False, "reason": "unchecked"} if len(judged) == 1 else {"ok": True}))
        rt.set_callback("guardrail:w", lambda ev: "no shouting" if ev["name"] == "shout" else "")
        rt.set_callback("onSpawn", lambda ev: spawned.append(ev["id"]))
        with pytest.raises(tn.InvalidArgumentError, match="verify:w"):
            rt.set_callback("summarize", lambda ev: "")
        _, r = rt.run("w", "do it")
        assert (r.status, r.text) == ("done", "checked")
        assert len(judged) == 2 and spawned == ["root/w.1"]
        rt.set_callback("onSpawn", None)
