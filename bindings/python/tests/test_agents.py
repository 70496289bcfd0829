"""The sub-agent runtime from Python (SPEC §7D, ``toolnexus_rs.Agents``): a
3-level tree on an in-process model with a Python tool, its result, usage
and trace; waits ended by a token, by the manual clock, by Ctrl-C and by
close(); close() from inside the model; agents over the HTTP mock
provider; the error cases."""
from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import MockServer, tn  # noqa: E402
from proc_helpers import wait_for  # noqa: E402

CONFIG = {
    "clock": "manual",
    "client": {"model": "local"},
    "agents": {
        "coordinator": {"does": "splits work", "soul": "You coordinate.", "team": ["explore"]},
        "explore": {"does": "read-only research", "soul": "You explore.", "tools": ["lookup"]},
    },
}
ONE_AGENT = {"client": {"model": "local"}, "agents": {"g": {"does": "d"}}}
USAGE = {"promptTokens": 3, "completionTokens": 2}


def tree_model(calls):
    """The coordinator delegates "find A" and "find B" in one turn, then sums
    up; an explorer looks its question up once, then reports it."""

    def model(event):
        calls.append(event)
        ev = json.dumps(event)
        if "You explore." in ev:
            if event["turn"] == 0:
                q = "B" if "find B" in ev else "A"
                return {"toolCalls": [{"name": "lookup", "arguments": {"q": q}}], "usage": USAGE}
            for q in ("A", "B"):
                if f"looked up {q}" in ev:
                    return {"content": f"found {q}", "usage": USAGE}
            raise RuntimeError("the lookup result is missing")
        if "You coordinate." in ev:
            if event["turn"] == 0:
                return {"toolCalls": [
                    {"name": "task", "arguments": {"agent": "explore", "prompt": "find A"}},
                    {"name": "task", "arguments": {"agent": "explore", "prompt": "find B"}},
                ], "usage": USAGE}
            got = ["A" if "found A" in ev else "-", "B" if "found B" in ev else "-"]
            return {"content": f"summary: {got[0]} + {got[1]}", "usage": USAGE}
        raise RuntimeError("no such agent in this model")

    return model


@pytest.fixture
def toolkit():
    tk = tn.Toolkit({"builtins": False})

    @tk.register("lookup", "Looks a question up.")
    def lookup(args):
        return f"looked up {args['q']}"

    yield tk
    tk.close()


def live_callbacks():
    with tn._live_lock:
        return len(tn._live)


def test_a_tree_runs_with_a_python_tool_and_model(toolkit):
    calls = []
    before = live_callbacks()
    with tn.Agents(CONFIG, toolkit=toolkit, generate=tree_model(calls)) as rt:
        # The runtime holds its own reference to the toolkit.
        toolkit.close()
        hid, r = rt.run("coordinator", "survey A and B")
        assert hid == "root/coordinator.1"
        assert (r.status, r.text, r.is_error) == ("done", "summary: A + B", False)
        # Two coordinator calls and two per explorer, 5 tokens each.
        assert (r.total_tokens, r.own_tokens, r.turns) == (30, 10, 2)
        assert len(calls) == 6
        trace = "\n".join(rt.trace())
        assert "root/coordinator.1: idle→running (wake)" in trace
        assert "root/coordinator.1/explore." in trace
        assert "root/coordinator.1: running→idle (done, turns=2, tokens=30)" in trace
        views = rt.list()
        assert [v["id"] for v in views][0] == "root/coordinator.1" and len(views) == 3
        assert rt.inspect(hid)["tokens"] == 30
        transcript = json.dumps(rt.transcript(hid))
        assert "survey A and B" in transcript and "found B" in transcript
        rt.close_handle(hid)
        assert rt.inspect(hid)["state"] == "closed"
    # The model's callback goes once the last turn thread lets it go.
    assert wait_for(lambda: live_callbacks() <= before, 20)
    with pytest.raises(tn.InvalidArgumentError, match="closed"):
        rt.list()
    rt.close()  # idempotent


def test_a_wait_ends_by_its_token_and_by_the_manual_clock(toolkit):
    with tn.Agents(CONFIG, toolkit=toolkit, generate=tree_model([])) as rt:
        hid = rt.spawn("explore")
        # Never woken: the wait ends only by its token.
        token = tn.CancelToken()
        got = []
        t = threading.Thread(target=lambda: got.append(rt.wait(hid, cancel=token)))
        t.start()
        token.cancel()
        t.join(20)
        assert not t.is_alive() and got[0].status == "interrupted"
        token.close()
        # A timeout on the manual clock is virtual: it ends when the clock moves.
        got.clear()
        t = threading.Thread(target=lambda: got.append(rt.wait(hid, timeout_ms=500)))
        t.start()
        deadline = time.monotonic() + 20
        while t.is_alive() and time.monotonic() < deadline:
            rt.advance(100)
            t.join(0.002)
        assert not t.is_alive() and got[0].status == "timeout"


def test_wait_async_is_cancelled_with_its_task(toolkit):
    with tn.Agents(CONFIG, toolkit=toolkit, generate=tree_model([])) as rt:
        hid = rt.spawn("explore")

        async def main():
            task = asyncio.ensure_future(rt.wait_async(hid))
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 20)

        asyncio.run(main())
        # The runtime is intact: the handle can still run.
        rt.wake(hid, "find A")
        r = asyncio.run(asyncio.wait_for(rt.wait_async(hid), 20))
        assert (r.status, r.text) == ("done", "found A")


def test_close_ends_waits_in_flight():
    entered = threading.Event()
    release = threading.Event()

    def model(event):
        entered.set()
        release.wait(20)
        return "late"

    rt = tn.Agents(ONE_AGENT, generate=model)
    running, idle = rt.spawn("g"), rt.spawn("g")
    rt.wake(running, "go")
    assert entered.wait(20)
    results = {}

    def waiter(hid):
        try:
            results[hid] = rt.wait(hid).status
        except tn.InvalidArgumentError:
            results[hid] = "refused"  # began after close()

    threads = [threading.Thread(target=waiter, args=(h,)) for h in (running, idle)]
    for t in threads:
        t.start()
    rt.close()
    for t in threads:
        t.join(20)
        assert not t.is_alive()
    release.set()
    assert set(results.values()) <= {"interrupted", "closed", "refused"}, results


def test_close_from_inside_the_model():
    before = live_callbacks()
    holder = {}
    seen = []

    def model(event):
        seen.append(event["turn"])
        holder["rt"].close()  # neither a deadlock nor a use-after-free
        return "after close"

    rt = tn.Agents(ONE_AGENT, generate=model)
    holder["rt"] = rt
    hid = rt.spawn("g")
    try:
        rt.wake(hid, "go")
        r = rt.wait(hid)
        assert r.status in ("interrupted", "closed"), r
    except tn.InvalidArgumentError:
        pass  # close() ran before the wait began
    assert seen == [0]
    del holder["rt"], rt
    gc.collect()
    assert wait_for(lambda: live_callbacks() <= before, 20)


@pytest.fixture
def ctrl_c():
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


def test_ctrl_c_ends_a_wait(ctrl_c):
    with tn.Agents(ONE_AGENT, generate=lambda ev: "hi") as rt:
        hid = rt.spawn("g")
        # A wait on a handle never woken ends only by Ctrl-C; the signal is
        # sent once the wait holds its token.
        ctrl_c(lambda: bool(rt._core.tokens))
        begun = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            rt.wait(hid)
        assert time.monotonic() - begun < 20
        assert not rt._core.tokens and rt._core.in_flight == 0
        # The runtime goes on.
        rt.wake(hid, "go")
        assert rt.wait(hid).text == "hi"


def test_agents_over_the_http_mock_provider():
    srv = MockServer()
    try:
        srv.responses = [{"status": 200, "body": {
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hello from the wire"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}}]
        cfg = {"client": {"baseUrl": srv.base, "style": "openai", "model": "m", "apiKey": "k", "retries": 0},
               "agents": {"greeter": {"does": "greets", "soul": "You greet."}}}
        with tn.Agents(cfg) as rt:
            _, r = rt.run("greeter", "hi")
        assert (r.status, r.text, r.total_tokens) == ("done", "hello from the wire", 5)
        assert len(srv.requests) == 1 and b"You greet." in srv.requests[0]["body"]
    finally:
        srv.close()


def test_errors(toolkit):
    before = live_callbacks()
    with pytest.raises(tn.InvalidConfigError, match="ghost"):
        tn.Agents({"agents": {"x": {"does": "d", "team": ["ghost"]}}}, generate=lambda ev: "x")
    assert live_callbacks() == before, "a failed build keeps the model's callback"
    with pytest.raises(tn.InvalidConfigError, match="client"):
        tn.Agents({"agents": {}})
    with pytest.raises(tn.InvalidJsonError):
        tn.Agents("{not json", generate=lambda ev: "x")
    with tn.Agents(CONFIG, toolkit=toolkit, generate=tree_model([])) as rt:
        with pytest.raises(tn.InvalidArgumentError, match="ghost"):
            rt.spawn("ghost")
        with pytest.raises(tn.InvalidArgumentError, match="unknown verb"):
            rt.call("dance")
        with pytest.raises(tn.InvalidArgumentError, match="root/nobody.9"):
            rt.wait("root/nobody.9")
        with pytest.raises(tn.InvalidJsonError):
            rt.call("spawn", '{"agent":')
    # A model that raises fails the turn, not the runtime.

    def broken(ev):
        raise RuntimeError("model down")

    with tn.Agents(ONE_AGENT, generate=broken) as rt:
        _, r = rt.run("g", "go")
        assert r.is_error and r.status == "error" and "model down" in r.text
        # A system clock has no advance.
        with pytest.raises(tn.InvalidArgumentError, match="manual"):
            rt.advance(1)


def test_a_runtime_on_a_file_store_leaves_its_transcripts_there(tmp_path):
    """``"store"`` in the config: the transcript is a JSON file of the store
    once the runtime is closed, and a new runtime on the store carries the
    conversation on (the model sees the first turn)."""
    config = dict(ONE_AGENT, store=f"file:{tmp_path}")
    seen = []

    def model(event):
        seen.append(len(event["messages"]))
        return {"content": f"turn {len(seen)}", "usage": USAGE}

    with tn.Agents(config, generate=model) as rt:
        hid, result = rt.run("g", "hello")
        assert (hid, result.status, result.text) == ("root/g.1", "done", "turn 1")
    saved = json.loads((tmp_path / "conversations" / "root_g_1.json").read_text())
    assert [m["role"] for m in saved] == ["user", "assistant"]
    assert saved[1]["content"] == "turn 1"
    with tn.Agents(config, generate=model) as rt:
        hid, result = rt.run("g", "again")
        assert (hid, result.text) == ("root/g.1", "turn 2")
    assert seen == [1, 3]


def test_a_new_runtime_on_the_store_resumes_what_a_freed_one_parked(tmp_path):
    """The parent delegates to the asker, whose tool waits for an approval
    and nobody answers: the tree parks. The runtime is freed (a process that
    exits); a new one on the same store, with the same agents, holds the
    parked tree and resumes it, reattaching the parent's task to the same
    asker."""
    config = {
        "client": {"model": "local"},
        "store": f"sqlite:{tmp_path}/agents.db",
        "agents": {
            "parent": {"does": "delegates", "soul": "You delegate.", "team": ["asker"]},
            "asker": {"does": "asks first", "soul": "You ask.", "tools": ["check"]},
        },
    }

    def model(event):
        done = [m["content"] for m in event["messages"] if m["role"] == "tool"]
        if "You ask." in json.dumps(event):
            if done:
                return {"content": f"asker-done: {done[-1]}", "usage": USAGE}
            return {"toolCalls": [{"name": "check", "arguments": {}}], "usage": USAGE}
        if done:
            return {"content": f"parent-final: {done[-1]}", "usage": USAGE}
        return {"toolCalls": [{"name": "task", "arguments": {"agent": "asker", "prompt": "get it"}}],
                "usage": USAGE}

    def toolkit_with(check):
        tk = tn.Toolkit({"builtins": False})
        tk.register("check", "needs an approval")(check)
        return tk

    parked = {"output": "approve?", "isError": True,
              "metadata": {"pending": {"id": "r1", "kind": "approval", "prompt": "approve?"}}}
    asker = "root/parent.1/asker.1"
    tk = toolkit_with(lambda args: parked)
    with tn.Agents(config, toolkit=tk, generate=model) as rt:
        hid, r = rt.run("parent", "go")
        assert (hid, r.status, r.pending.kind) == ("root/parent.1", "pending", "approval")
    tk.close()

    # The next process: its tool gets the approval it was waiting for (the
    # asker's own tool runs again on resume).
    tk = toolkit_with(lambda args: "secret-token")
    with tn.Agents(config, toolkit=tk, generate=model) as rt:
        assert [(v["id"], v["state"]) for v in rt.list()] == [
            ("root/parent.1", "suspended"), (asker, "suspended")]
        r = rt.resume({"ok": True})
        assert (r.status, r.text) == ("done", "parent-final: asker-done: secret-token")
        assert [v["id"] for v in rt.list()] == ["root/parent.1", asker]
        assert f"root/parent.1: task replay → REATTACH to {asker} (state idle)" in rt.trace()
    with tn.Agents(config, toolkit=tk, generate=model) as rt:
        with pytest.raises(tn.ToolnexusError, match="no suspended handle"):
            rt.resume({"ok": True})
    tk.close()


def test_an_unknown_store_selector_is_the_pinned_error():
    with pytest.raises(tn.InvalidConfigError) as e:
        tn.Agents(dict(ONE_AGENT, store="redis://x"), generate=lambda ev: "hi")
    assert str(e.value).endswith(
        'unknown A2A store: "redis://x" (expected "memory" or "file:<dir>")'), str(e.value)
