"""The client loop from Python (SPEC §8, §10) against a mock provider on
127.0.0.1: tool calls through the toolkit, waitFor and durable resume, the
hooks, onError, metrics, ask with a store, streaming (iterator, callback,
on_text), cancel and timeout, the in-process client, asyncio, the logger."""
from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import MockServer, tn  # noqa: E402

QUESTION_ONLY = {"builtins": {"tools": {n: False for n in (
    "apply_patch", "bash", "edit", "glob", "grep", "read", "todowrite", "webfetch", "write")}}}
ASK_NAME = json.dumps({"questions": [{"question": "What is your name?"}]})


def tool_calls(*calls):
    """An OpenAI chat completion asking for tool calls (id, name, arguments)."""
    return {"status": 200, "body": {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]}}]}}


def text(t, prompt_tokens=3, completion_tokens=2):
    return {"status": 200, "body": {"choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": t}}],
                                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                              "total_tokens": prompt_tokens + completion_tokens}}}


def sse(*events):
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return {"status": 200, "bodyText": body, "headers": {"content-type": "text/event-stream"}}


@pytest.fixture
def srv():
    s = MockServer()
    yield s
    s.close()


def config(srv, **extra):
    return {"baseUrl": srv.base, "style": "openai", "model": "m", "apiKey": "k", "retries": 0, **extra}


def sent(srv, i):
    """The body of provider request i, parsed."""
    return json.loads(srv.requests[i]["body"])


@pytest.fixture
def adder():
    with tn.Toolkit({"builtins": False}) as tk:
        calls = []

        @tk.register("add", "Add two integers.", {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}})
        def add(args):
            calls.append((args, threading.get_ident()))
            return str(args["a"] + args["b"])

        tk.calls = calls
        yield tk


def test_run_executes_the_tool_calls_and_feeds_the_results_back(srv, adder):
    srv.responses += [tool_calls(("c1", "add", '{"a":1,"b":2}'), ("c2", "add", '{"a":40,"b":2}')), text("3 and 42")]
    with tn.Client(config(srv, systemPrompt="Be brief.")) as client:
        r = client.run(adder, "Add 1+2 and 40+2.")
    assert isinstance(r, tn.RunResult)
    assert (r.text, r.status, r.turns, r.tool_call_count, r.model) == ("3 and 42", "done", 2, 2, "m")
    assert [(c.name, c.args, c.output, c.is_error) for c in r.tool_calls] == [
        ("add", {"a": 1, "b": 2}, "3", False), ("add", {"a": 40, "b": 2}, "42", False)]
    assert r.usage == tn.Usage(3, 2, 5)
    first, second = sent(srv, 0), sent(srv, 1)
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    # Results go back in call order, in OpenAI's tool-message shape.
    assert [(m["tool_call_id"], m["content"]) for m in second["messages"] if m["role"] == "tool"] == [
        ("c1", "3"), ("c2", "42")]
    assert r.messages[-1] == {"role": "assistant", "content": "3 and 42"}
    # The transcript continues as history: no second system message.
    srv.responses.append(text("again"))
    with tn.Client(config(srv)) as client:
        again = client.run(adder, "Once more?", history=r)
    third = sent(srv, 2)["messages"]
    assert third[:-1] == r.messages and third[-1] == {"role": "user", "content": "Once more?"}
    assert again.text == "again"
    with pytest.raises(tn.ToolnexusError) as closed:
        client.run(adder, "after close")
    assert "closed" in closed.value.message


def test_wait_for_answers_a_suspension_inline(srv):
    srv.responses += [tool_calls(("q1", "question", ASK_NAME)), text("Hello, Ada.")]
    seen = []

    def wait_for(req):
        seen.append(req)
        # A callback may call back into the library.
        assert "toolnexus_llm_requests_total" in client.metrics()
        assert tk.render("toolNames") == ["question"]
        return tn.answer_output(req.id, "Ada")

    with tn.Toolkit(QUESTION_ONLY) as tk, tn.Client(config(srv), wait_for=wait_for) as client:
        r = client.run(tk, "Greet me by name.")
    assert r.status == "done" and r.text == "Hello, Ada."
    assert len(seen) == 1 and seen[0].kind == "question" and "What is your name?" in seen[0].prompt
    fed = [m for m in sent(srv, 1)["messages"] if m["role"] == "tool"]
    assert len(fed) == 1 and "Ada" in fed[0]["content"]


def test_a_declined_answer_is_fed_back_and_a_bad_reason_is_refused(srv):
    srv.responses += [tool_calls(("q1", "question", ASK_NAME)), text("Fine, stranger.")]
    with pytest.raises(tn.InvalidArgumentError) as e:
        tn.answer_declined("r1", "maybe")
    assert "maybe" in e.value.message
    with tn.Toolkit(QUESTION_ONLY) as tk, tn.Client(
            config(srv), wait_for=lambda req: tn.answer_declined(req.id, "expired")) as client:
        r = client.run(tk, "Greet me.")
    assert r.tool_calls[0].is_error and r.tool_calls[0].output.startswith("declined/expired: ")


def test_without_wait_for_the_run_halts_pending_and_resumes(srv):
    srv.responses += [tool_calls(("q1", "question", ASK_NAME)), text("Hello, Grace.")]
    with tn.Toolkit(QUESTION_ONLY) as tk, tn.Client(config(srv)) as client:
        halted = client.run(tk, "Greet me by name.")
        assert halted.status == "pending" and isinstance(halted.pending, tn.Request)
        assert len(srv.requests) == 1
        with pytest.raises(tn.InvalidArgumentError):
            client.resume(tk, halted, None, tn.answer_output("not-" + halted.pending.id, "Grace"))
        done = client.resume(tk, halted.messages, halted.pending, tn.Answer(id="", ok=True, data={"output": "Grace"}))
        with pytest.raises(ValueError):
            client.run(tk, "x", wait_for=lambda req: None)
    assert done.status == "done" and done.text == "Hello, Grace."
    fed = [m for m in sent(srv, 1)["messages"] if m["role"] == "tool"]
    assert len(fed) == 1 and "Grace" in fed[0]["content"]


def test_relay_tools_halt_as_one_request_and_run_with_answer_fills_every_slot(srv):
    srv.responses += [tool_calls(("c1", "alpha", '{"n":1}'), ("c2", "beta", "{}")), text("both answered")]
    cfg = {"builtins": False, "relayTools": [{"name": "alpha", "description": "run by the caller"}, {"name": "beta"}]}
    with tn.Toolkit(cfg) as tk, tn.Client(config(srv)) as client:
        halted = client.run(tk, "go")
        assert halted.status == "pending" and halted.pending.kind == tn.RELAY_KIND
        calls = tn.relay_calls_of(halted.pending)
        assert [(c["id"], c["name"], c["input"], c["arguments"]) for c in calls] == [
            ("c1", "alpha", {"n": 1}, '{"n":1}'), ("c2", "beta", {}, "{}")]
        answer = tn.relay_answer(halted.pending.id, [{"id": "c1", "output": "out-1"},
                                                     {"id": "c2", "output": "boom", "isError": True}])
        done = client.run_with_answer(tk, halted, None, answer)
        with pytest.raises(tn.ToolnexusError, match="collides with a built-in"):
            tn.Toolkit({"builtins": False, "relayTools": [{"name": "bash"}]})
    assert done.status == "done" and done.text == "both answered"
    fed = [(m["tool_call_id"], m["content"]) for m in sent(srv, 1)["messages"] if m["role"] == "tool"]
    assert fed == [("c1", "out-1"), ("c2", "boom")]
    assert tn.relay_calls_of(tn.Request(id="x", kind="question", prompt="?")) == []


def test_hooks_short_circuit_rewrite_replace_and_observe(srv, adder):
    srv.responses += [tool_calls(("c1", "add", '{"a":1,"b":2}'), ("c2", "add", '{"a":5,"b":5}'),
                                 ("c3", "add", '{"a":0,"b":0}')), text("ok")]
    events = {"before_llm": [], "after_llm": []}

    def before_tool(ev):
        if ev["id"] == "c1":
            return tn.ToolResult("cached: 3")            # the tool never runs
        if ev["id"] == "c3":
            return {"args": {"a": 20, "b": 22}}          # runs with these
        return None

    def after_tool(ev):
        return ev["result"]["output"] + "!" if ev["id"] == "c2" else None

    def before_llm(ev):
        events["before_llm"].append(ev)
        return {"tools": []} if ev["turn"] == 1 else None

    hooks = tn.Hooks(before_tool=before_tool, after_tool=after_tool, before_llm=before_llm,
                     after_llm=lambda ev: events["after_llm"].append(ev))
    with tn.Client(config(srv), hooks=hooks) as client:
        r = client.run(adder, "go")
    assert [c.output for c in r.tool_calls] == ["cached: 3", "10!", "42"]
    assert [c.args for c in r.tool_calls][2] == {"a": 20, "b": 22}
    assert sorted(a["a"] for a, _ in adder.calls) == [5, 20], "c1 was short-circuited"
    assert [e["turn"] for e in events["before_llm"]] == [0, 1]
    assert "choices" in events["after_llm"][0]["response"]
    assert "tools" in sent(srv, 0) and "tools" not in sent(srv, 1)


def test_a_raising_callback_ends_the_run_with_callback_error_never_a_crash(srv, adder):
    srv.responses += [tool_calls(("c1", "add", '{"a":1,"b":2}')), text("unused")]

    def explode(ev):
        raise KeyError("no such thing")

    with tn.Client(config(srv)) as client:
        with pytest.raises(tn.CallbackError) as e:
            client.run(adder, "go", hooks={"beforeTool": explode})
        assert e.value.code == "callback_error" and "beforeTool" in e.value.message
        assert isinstance(e.value.__cause__, KeyError)
        # The client is still usable; a per-run hook was for that run only.
        srv.responses[:] = [text("fine")]
        assert client.run(adder, "again").text == "fine"
    with pytest.raises(ValueError) as bad:
        tn.Client(config(srv), hooks={"beforeTol": explode})
    assert "beforeTol" in str(bad.value)
    with pytest.raises(tn.InvalidConfigError) as bad_key:
        tn.Client(config(srv, maxTurn=3))
    assert "maxTurn" in bad_key.value.message


def test_on_error_classifies_provider_failures(srv):
    fail = {"status": 500, "bodyText": "upstream down"}
    srv.responses += [fail, text("recovered")]
    infos = []

    def retry(info):
        infos.append(info)
        return "retry"

    with tn.Client(config(srv, retries=1, retryBaseMs=1), on_error=retry) as client:
        assert client.run(None, "hi").text == "recovered"
    assert infos[0]["status"] == 500 and "upstream down" in infos[0]["error"]
    srv.responses += [fail, text("never")]
    with tn.Client(config(srv, retries=1, retryBaseMs=1), on_error=lambda info: "fail") as client:
        with pytest.raises(tn.ProviderError) as e:
            client.run(None, "hi")
    assert "500" in e.value.message and "upstream down" in e.value.message
    assert len(srv.requests) == 3, "fail stopped the retries"


def test_metrics_and_on_metric(srv, adder):
    srv.responses += [tool_calls(("c1", "add", '{"a":1,"b":2}')), text("3")]
    seen = []
    with tn.Client(config(srv), on_metric=seen.append) as client:
        empty = client.metrics()
        client.run(adder, "go")
        text_ = client.metrics()
    assert empty.endswith("\n") and "# TYPE toolnexus_llm_requests_total counter" in empty
    assert 'toolnexus_llm_requests_total{model="m",status="ok"} 2' in text_
    assert 'toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1' in text_
    assert text_.endswith("\n")
    assert sorted({m["event"] for m in seen}) == ["llm", "run", "tool"]

    def broken(m):
        raise RuntimeError("an observer that fails")

    srv.responses.append(text("unharmed"))
    with tn.Client(config(srv), on_metric=broken) as client:
        assert client.run(None, "hi").text == "unharmed", "observing never fails a run"


def test_ask_remembers_a_conversation_in_the_default_and_a_host_store(srv):
    srv.responses += [text("Nice to meet you, Ada."), text("You are Ada.")]
    with tn.Client(config(srv)) as client:
        client.ask(None, "chat-1", "I am Ada.")
        r = client.ask(None, "chat-1", "Who am I?")
        assert r.text == "You are Ada."
        second = sent(srv, 1)["messages"]
        assert [m["content"] for m in second] == ["I am Ada.", "Nice to meet you, Ada.", "Who am I?"]
        assert client.store.get("chat-1") == r.messages

        class Store:
            def __init__(self):
                self.data, self.log = {"x": [{"role": "user", "content": "seeded"}]}, []

            def get(self, id):
                self.log.append(("get", id))
                return self.data.get(id)

            def save(self, id, messages):
                self.log.append(("save", id))
                self.data[id] = messages

        store = Store()
        srv.responses.append(text("from a store"))
        client.ask(None, "x", "next", store=store)
        assert store.log == [("get", "x"), ("save", "x")]
        assert [m["content"] for m in sent(srv, 2)["messages"]] == ["seeded", "next"]
        assert client.store.get("x") is None, "the per-call store was used, not the client's"


def _sse_tool_turn():
    return sse({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                                   "function": {"name": "add", "arguments": "{\"a\":"}}]}}]},
               {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "2,\"b\":3}"}}]}}]},
               {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}})


def _sse_text_turn():
    return sse({"choices": [{"index": 0, "delta": {"content": "The sum "}}]},
               {"choices": [{"index": 0, "delta": {"content": "is 5."}, "finish_reason": "stop"}]},
               {"choices": [], "usage": {"prompt_tokens": 6, "completion_tokens": 1, "total_tokens": 7}})


def test_stream_as_an_iterator_a_callback_and_ask_on_text(srv, adder):
    srv.responses += [_sse_tool_turn(), _sse_text_turn()]
    with tn.Client(config(srv)) as client:
        events = list(client.stream(adder, "2+3?"))
        kinds = [e["type"] for e in events]
        assert kinds == ["tool_call", "tool_result", "text", "text", "usage", "done"]
        assert events[0]["name"] == "add" and events[0]["args"] == {"a": 2, "b": 3}
        assert events[1]["output"] == "5"
        assert "".join(e["delta"] for e in events if e["type"] == "text") == "The sum is 5."
        done = events[-1]["result"]
        assert isinstance(done, tn.RunResult) and done.text == "The sum is 5." and done.usage.total_tokens == 16
        assert sent(srv, 0)["stream"] is True

        srv.responses += [_sse_tool_turn(), _sse_text_turn()]
        got = []
        r = client.stream(adder, "2+3?", on_event=got.append)
        assert r.text == "The sum is 5." and [e["type"] for e in got] == kinds

        srv.responses += [_sse_tool_turn(), _sse_text_turn()]
        pieces = []
        r = client.ask(adder, "s1", "2+3?", on_text=pieces.append)
        assert pieces == ["The sum ", "is 5."] and r.text == "The sum is 5."


def slow_bash(marker):
    """Arguments of a bash call that writes marker only if it is not stopped."""
    return json.dumps({"command": f"sleep 5; echo late > {marker}"})


def test_a_streamed_suspension_is_a_pending_event_with_its_request(srv):
    srv.responses.append(sse({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "id": "q1", "type": "function", "function": {"name": "question", "arguments": ASK_NAME}}]}}]}))
    with tn.Toolkit(QUESTION_ONLY) as tk, tn.Client(config(srv)) as client:
        events = list(client.stream(tk, "Greet me by name."))
    pending = [e for e in events if e["type"] == "pending"]
    assert len(pending) == 1 and isinstance(pending[0]["request"], tn.Request)
    assert pending[0]["request"].prompt == "What is your name?"
    done = events[-1]["result"]
    assert done.status == "pending" and done.pending.id == pending[0]["request"].id


def test_leaving_a_stream_early_cancels_its_run(srv, tmp_path):
    marker = tmp_path / "late"
    srv.responses += [sse({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": slow_bash(marker)}}]}}]}),
        text("never asked for")]
    with tn.Toolkit({}) as tk, tn.Client(config(srv)) as client:
        seen = []
        for ev in client.stream(tk, "run it"):
            seen.append(ev["type"])
            break  # the iterator is dropped here, which closes it
        assert seen == ["tool_call"]
        assert not marker.exists(), "the bash call was ended with the run"
        assert len(srv.requests) == 1, "the run stopped before its next turn"
        srv.responses[:] = [text("still usable")]
        assert client.run(tk, "hi").text == "still usable"


def test_cancel_from_another_thread_and_a_timeout(srv):
    srv.responses += [{"status": 200, "delayMs": 5000, "body": text("slow")["body"]}] * 4
    with tn.Client(config(srv)) as client:
        token = tn.CancelToken()
        threading.Timer(0.2, token.cancel).start()
        with pytest.raises(tn.CancelledError):
            client.run(None, "hi", cancel=token)
        with pytest.raises(tn.TimeoutError) as e:
            client.run(None, "hi", timeout=0.2)
        assert e.value.code == "timeout"
        # The caller's token still cancels a run that has a timeout too.
        both = tn.CancelToken()
        threading.Timer(0.2, both.cancel).start()
        with pytest.raises(tn.CancelledError):
            client.run(None, "hi", cancel=both, timeout=30)
        # And a stream iterator.
        streamed = tn.CancelToken()
        threading.Timer(0.2, streamed.cancel).start()
        with pytest.raises(tn.CancelledError):
            list(client.stream(None, "hi", cancel=streamed))
        for t in (token, both, streamed):
            t.close()


def test_ctrl_c_on_the_main_thread_cancels_the_run(srv, tmp_path):
    import os
    import signal
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    marker, started = tmp_path / "late", tmp_path / "started"
    bash = json.dumps({"command": f"touch {started}; sleep 5; echo late > {marker}"})
    srv.responses += [tool_calls(("s1", "bash", bash)), text("never asked for")]

    def interrupt_once_bash_runs() -> None:
        # Ctrl-C while the run is in its tool call, however slow the
        # machine is to get there.
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    # A process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and Python then leaves it so: give this test
    # Python's own handler, as an interactive host has it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with tn.Toolkit({}) as tk, tn.Client(config(srv)) as client:
            threading.Thread(target=interrupt_once_bash_runs, daemon=True).start()
            with pytest.raises(KeyboardInterrupt):
                client.run(tk, "run it")
            assert not marker.exists(), "the bash call was ended with the run"
            assert len(srv.requests) == 1
            srv.responses[:] = [text("still usable")]
            assert client.run(tk, "hi").text == "still usable"
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_in_process_client_runs_the_loop_with_no_http(adder):
    def generate(ev):
        if not any(m.get("role") == "tool" for m in ev["messages"]):
            assert ev["tools"][0]["function"]["name"] == "add"
            return {"toolCalls": [{"id": "g1", "name": "add", "arguments": {"a": 20, "b": 22}}],
                    "usage": {"promptTokens": 4, "completionTokens": 1}}
        return "the answer is " + [m for m in ev["messages"] if m.get("role") == "tool"][-1]["content"]

    with tn.Client({"model": "local"}, generate=generate) as client:
        r = client.run(adder, "What is 20+22?")
        assert r.text == "the answer is 42" and r.turns == 2 and r.model == "local"

        # Many runs at once on one client, from many threads.
        results, errors = [], []

        def worker():
            try:
                results.append(client.run(adder, "again").text)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and results == ["the answer is 42"] * 8

        # Each run's own hooks see only that run's calls.
        seen: dict[int, list] = {n: [] for n in range(6)}

        def hooked(n):
            def after_tool(ev):
                seen[n].append(ev["result"]["output"])
                return f"{ev['result']['output']} (run {n})"

            results.append(client.run(adder, "again", hooks={"after_tool": after_tool}).text)

        threads = [threading.Thread(target=hooked, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(seen[n] == ["42"] for n in seen)
        assert sorted(results[8:]) == sorted(f"the answer is 42 (run {n})" for n in range(6))
        with pytest.raises(tn.InvalidArgumentError):
            list(client.stream(adder, "no streaming in process"))

    def broken(ev):
        raise RuntimeError("model fell over")

    with tn.Client({"model": "local"}, generate=broken) as client:
        with pytest.raises(tn.CallbackError) as e:
            client.run(None, "hi")
    assert isinstance(e.value.__cause__, RuntimeError) and "model fell over" in e.value.message


def test_asyncio_wrappers_and_cancelling_the_task(srv, adder, tmp_path):
    srv.marker = str(tmp_path / "late")
    marker = Path(srv.marker)
    srv.responses += [tool_calls(("c1", "add", '{"a":1,"b":2}')), text("3"),
                      tool_calls(("s1", "bash", slow_bash(marker))),
                      _sse_tool_turn(), _sse_text_turn()]

    async def main():
        with tn.Client(config(srv)) as client:
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.01)

            t = asyncio.ensure_future(ticker())
            r = await client.arun(adder, "go")
            with tn.Toolkit({}) as tk:
                slow = asyncio.ensure_future(client.arun(tk, "slow"))
                await asyncio.sleep(0.3)
                slow.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await slow
            assert not marker.exists(), "cancelling the task ended the run and its bash call"
            kinds = [ev["type"] async for ev in client.astream(adder, "2+3?")]
            t.cancel()
            return r, kinds, ticks

    r, kinds, ticks = asyncio.run(main())
    assert r.text == "3" and kinds[-1] == "done" and "text" in kinds
    assert ticks >= 3, "the event loop kept running during the calls"


def test_set_logger_delivers_diagnostics_to_a_callable_and_a_logging_logger(caplog):
    gone = {"builtins": False, "mcpConfig": {"mcpServers": {"gone": {"command": ["/nonexistent/tn-server"]}}}}
    lines = []
    tn.set_logger(lambda level, target, message: lines.append((level, target, message)), level="warn")
    try:
        tn.Toolkit(gone).close()
        assert any(t == "mcp" and "gone" in m and lvl <= tn.log.LOG_WARN for lvl, t, m in lines), lines

        def raising(level, target, message):
            raise RuntimeError("a broken logger is dropped")

        tn.set_logger(raising, level="debug")
        tn.Toolkit(gone).close()

        logger = logging.getLogger("toolnexus-test")
        with caplog.at_level(logging.DEBUG, logger="toolnexus-test"):
            tn.set_logger(logger, level=tn.log.LOG_INFO)
            tn.Toolkit(gone).close()
        assert any("mcp: " in r.getMessage() and "gone" in r.getMessage() for r in caplog.records)
    finally:
        tn.set_logger(None)
    before = len(lines)
    tn.Toolkit(gone).close()
    assert len(lines) == before, "nothing arrives once logging is off"
    with pytest.raises(ValueError):
        tn.set_logger(print, level="loud")


def test_closing_an_astream_early_cancels_its_run(srv, tmp_path):
    marker = tmp_path / "late"
    srv.responses += [sse({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": slow_bash(marker)}}]}}]}),
        text("never asked for")]

    async def main():
        with tn.Toolkit({}) as tk, tn.Client(config(srv)) as client:
            events = client.astream(tk, "run it")
            first = await events.__anext__()
            await events.aclose()
            return first

    assert asyncio.run(main())["type"] == "tool_call"
    assert not marker.exists(), "the bash call was ended with the run"
    assert len(srv.requests) == 1


def test_cancelling_an_aexecute_task_cancels_the_call(tmp_path):
    import inspect
    if "cancel" not in inspect.signature(tn.Toolkit.execute).parameters:
        pytest.skip("Toolkit.execute takes no CancelToken on this branch")
    marker = tmp_path / "late"

    async def main():
        with tn.Toolkit({}) as tk:
            task = asyncio.ensure_future(tk.aexecute("bash", json.loads(slow_bash(marker))))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    assert not marker.exists(), "the bash call was ended with the task"


def test_a_client_with_upstreams_fails_over():
    """Issue 29: a 503 from the first upstream moves the run to the next,
    which gets its own model; the result names the serving upstream."""
    a, b = MockServer(), MockServer()
    try:
        a.responses = [{"status": 503, "bodyText": "busy"}]
        b.responses = [text("from b")]
        client = tn.Client({"upstreams": [
            {"baseUrl": a.base, "model": "model-a", "apiKey": "ka"},
            {"baseUrl": b.base, "model": "model-b", "apiKey": "kb"}],
            "retries": 0, "cooldownMs": 0})
        res = client.run(None, "hi")
        assert res.text == "from b"
        assert res.model == "model-b"
        assert res.raw["upstream"]["index"] == 1
        assert len(a.requests) == 1
        assert json.loads(b.requests[0]["body"])["model"] == "model-b"
    finally:
        a.close()
        b.close()
