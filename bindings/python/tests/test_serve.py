"""Serving from Python (SPEC §7B, §7C): Toolkit.serve as an MCP server and,
with an a2a block and a client, an A2A agent beside it — the card, SendMessage
then GetTask to completion on the three wires, on_task, failed and
input-required tasks, refusals; the client's callbacks kept alive while a
server holds it, the hooks released when it stops."""
from __future__ import annotations

import gc
import json
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402
from proc_helpers import wait_for  # noqa: E402
from toolnexus_rs import store as tn_store  # noqa: E402
from toolnexus_rs import serve as tn_serve  # noqa: E402


def generate(ev):
    """An in-process model: "shout" asks for the shout tool, "ask" for the
    question builtin, "boom" fails; a tool result is echoed back."""
    last = ev["messages"][-1]
    text = last.get("content") if isinstance(last.get("content"), str) else ""
    if last.get("role") == "tool":
        return f"The tool said: {text}"
    if "boom" in text:
        raise RuntimeError("model down")
    if "shout" in text:
        return {"toolCalls": [{"id": "c1", "name": "shout", "arguments": {"text": "hi"}}]}
    if "ask" in text:
        return {"toolCalls": [{"id": "c1", "name": "question",
                               "arguments": {"questions": [{"question": "Your name?"}]}}]}
    return f"served: {text}"


OFF = {k: False for k in ("bash", "read", "write", "edit", "grep", "glob", "webfetch", "apply_patch", "todowrite")}


@pytest.fixture
def tk():
    toolkit = tn.Toolkit({"builtins": {"tools": OFF}, "skills": [
        {"name": "haiku", "description": "Write a haiku.", "content": "Three lines."},
        {"name": "limerick", "description": "Write a limerick.", "content": "Five lines."},
    ]})
    toolkit.register_function("shout", lambda args: args["text"].upper(), "Upper-case the text.")
    yield toolkit
    toolkit.close()


def post(url, method, params, version=None, rid=1):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if version:
        headers["A2A-Version"] = version
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.loads(res.read())


def card_of(base):
    with urllib.request.urlopen(f"{base}/.well-known/agent-card.json", timeout=30) as res:
        return json.loads(res.read())


def send(base, text):
    r = post(f"{base}/", "SendMessage", {"message": {"role": "user", "messageId": "m1",
                                                     "parts": [{"kind": "text", "text": text}]}})
    assert r["result"]["status"]["state"] == "submitted", r
    return r["result"]["id"]


def settled(base, tid, method="GetTask", version=None, running=("submitted", "working")):
    deadline = time.monotonic() + 30
    while True:
        r = post(f"{base}/", method, {"id": tid}, version)
        task = r["result"]
        if task["status"]["state"] not in running:
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.01)


def artifact_text(task):
    return task["artifacts"][0]["parts"][0]["text"]


def wait_until(cond, what):
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_serve_mcp_tools_call_and_on_call(tk):
    heard = []
    with tk.serve("127.0.0.1:0", name="py-gw", version="3.0.0", tools=["shout", "ghost"],
                  on_call=heard.append) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        init = post(server.url, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "py", "version": "1"}})
        assert init["result"]["serverInfo"] == {"name": "py-gw", "version": "3.0.0"}
        names = [t["name"] for t in post(server.url, "tools/list", {}, rid=2)["result"]["tools"]]
        assert names == ["shout"]
        call = post(server.url, "tools/call", {"name": "shout", "arguments": {"text": "hey"}}, rid=3)
        assert call["result"]["content"][0]["text"] == "HEY"
        assert server.wait(0.05) is False
        wait_until(lambda: heard, "on_call never heard")
        assert heard[0]["name"] == "shout" and heard[0]["source"] == "native" and heard[0]["isError"] is False
    assert server.wait(0) is True
    assert tn_serve._hooks_live() == 0
    server.close()  # idempotent


def test_serve_a2a_card_send_get_and_on_task(tk):
    client = tn.Client({"model": "m"}, generate=generate)
    tasks = []
    lock = threading.Lock()

    def on_task(ev):
        with lock:
            tasks.append(ev)
        raise RuntimeError("a host's on_task fails: dropped, the server keeps serving")

    server = tk.serve(
        a2a={"name": "py-agent", "description": "Serves from Python.", "version": "2.1.0",
             "provider": {"organization": "Acme", "url": "https://acme.example"},
             "skills": ["haiku"], "store": "memory"},
        client=client,
        on_task=on_task,
    )
    # The server holds the client (and keeps its generate callback alive).
    client.close()
    del client
    gc.collect()
    base = server.base
    assert server.url == f"{base}/mcp"

    card = card_of(base)
    assert card["name"] == "py-agent" and card["description"] == "Serves from Python."
    assert card["version"] == "2.1.0" and card["protocolVersion"] == "0.3.0" and card["url"] == f"{base}/"
    assert card["provider"] == {"organization": "Acme", "url": "https://acme.example"}
    assert [s["id"] for s in card["skills"]] == ["haiku"]
    assert list(card)[-1] == "provider"

    tid = send(base, "please shout")
    done = settled(base, tid)
    assert done["status"]["state"] == "completed", done
    assert artifact_text(done) == "The tool said: HI"

    failed = settled(base, send(base, "boom"))
    assert failed["status"]["state"] == "failed", failed
    asked = settled(base, send(base, "ask me"))
    assert asked["status"]["state"] == "input-required", asked
    assert "Your name?" in json.dumps(asked["status"])
    assert post(f"{base}/", "GetTask", {"id": "nope"})["error"]["code"] == -32001

    wait_until(lambda: len(tasks) == 3, f"on_task heard {len(tasks)}")
    by_id = {ev["id"]: ev for ev in tasks}
    ok = by_id[tid]
    assert ok["state"] == "completed" and ok["task"]["id"] == tid
    assert ok["result"]["text"] == "The tool said: HI" and ok["result"]["toolCallCount"] == 1
    assert by_id[failed["id"]]["state"] == "failed"
    assert by_id[asked["id"]]["state"] == "input-required"
    server.close()
    assert tn_serve._hooks_live() == 0


def test_serve_a2a_profiles_on_one_endpoint(tk):
    with tn.Client({"model": "m"}, generate=generate) as client, \
            tk.serve(a2a={"protocol": "1.0", "skills": []}, client=client) as server:
        base = server.base
        card = card_of(base)
        assert card["name"] == "toolnexus-agent" and card["skills"] == []
        assert card["supportedInterfaces"][0]["protocolVersion"] == "1.0"

        r = post(f"{base}/", "SendMessage", {"message": {"role": "ROLE_USER", "messageId": "m",
                                                         "parts": [{"text": "one oh"}]}}, "1.0")
        task = r["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_SUBMITTED", r
        done = settled(base, task["id"], version="1.0",
                       running=("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
        assert artifact_text(done) == "served: one oh"

        r = post(f"{base}/", "message/send", {"message": {"role": "user", "messageId": "m", "kind": "message",
                                                          "parts": [{"kind": "text", "text": "zero three"}]}})
        assert r["result"]["kind"] == "task", r
        done = settled(base, r["result"]["id"], method="tasks/get")
        assert done["status"]["state"] == "completed" and artifact_text(done) == "served: zero three"

        # /mcp is still the MCP server.
        assert "tools" in post(server.url, "tools/list", {})["result"]


def test_serve_a2a_refusals_and_closing_the_toolkit_stops_its_servers(tk):
    with pytest.raises(tn.InvalidConfigError) as e:
        tk.serve(a2a={}, on_task=print)
    assert "needs a client" in e.value.message
    with tn.Client({"model": "m"}, generate=generate) as client:
        with pytest.raises(tn.InvalidConfigError) as e:
            tk.serve(a2a={"protocol": "2.0"}, client=client)
        assert "a2a.protocol" in e.value.message
        with pytest.raises(tn.InvalidConfigError) as e:
            tk.serve(a2a={"store": "redis://x"}, client=client)
        assert "unknown A2A store" in e.value.message
        with pytest.raises(tn.InvalidConfigError):
            tk.serve("not-an-address")
        server = tk.serve(a2a={}, client=client, on_call=print)
    with pytest.raises(tn.ToolnexusError) as e:
        tk.serve(a2a={}, client=client)
    assert "closed" in e.value.message
    assert tn_serve._hooks_live() == 1
    tk.close()  # stops the server first
    assert server.wait(0) is True
    assert tn_serve._hooks_live() == 0


def stream(base, method, text, version=None):
    """A streaming send read as server-sent events with urllib: the results
    of the JSON-RPC answers, in order, once the server ended the stream."""
    part = {"text": text} if version == "1.0" else {"kind": "text", "text": text}
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": method,
                       "params": {"message": {"role": "user", "messageId": "m", "parts": [part]}}}).encode()
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if version:
        headers["A2A-Version"] = version
    req = urllib.request.Request(f"{base}/", data=body, headers=headers, method="POST")
    results = []
    with urllib.request.urlopen(req, timeout=30) as res:
        assert res.status == 200 and res.headers["content-type"].startswith("text/event-stream")
        for line in res:  # ends when the server ends the stream
            line = line.decode("utf-8").rstrip("\r\n")
            if line.startswith("data:"):
                answer = json.loads(line[len("data:"):])
                assert answer["id"] == 9 and "result" in answer, answer
                results.append(answer["result"])
    return results


def test_serve_a2a_streamed_send_is_server_sent_events_on_both_wires(tk):
    with tn.Client({"model": "m"}, generate=generate) as client, \
            tk.serve(a2a={}, client=client) as server:
        base = server.base
        # A2A 0.3: message/stream; the task, then its status and artifact updates.
        got = stream(base, "message/stream", "stream me")
        assert [r["kind"] for r in got] == ["task", "status-update", "artifact-update", "status-update"], got
        assert [r["status"]["state"] for r in got if "status" in r] == ["submitted", "working", "completed"]
        tid = got[0]["id"]
        assert got[2]["artifact"]["parts"] == [{"kind": "text", "text": "served: stream me"}]
        assert (got[1]["taskId"], got[1]["final"], got[3]["taskId"], got[3]["final"]) == (tid, False, tid, True)
        assert artifact_text(settled(base, tid)) == "served: stream me"

        # A2A 1.0: SendStreamingMessage with the header; wrapped results.
        got = stream(base, "SendStreamingMessage", "stream one oh", version="1.0")
        assert [next(iter(r)) for r in got] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"], got
        states = [got[0]["task"]["status"]["state"], got[1]["statusUpdate"]["status"]["state"],
                  got[3]["statusUpdate"]["status"]["state"]]
        assert states == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
        assert got[2]["artifactUpdate"]["artifact"]["parts"] == [{"text": "served: stream one oh"}]


def test_serve_a2a_cancel_task_of_a_running_task(tk):
    arrived, release, returned = threading.Event(), threading.Event(), threading.Event()

    def held(ev):
        arrived.set()
        release.wait(60)
        returned.set()
        return "too late"

    with tn.Client({"model": "m"}, generate=held) as client, tk.serve(a2a={}, client=client) as server:
        base = server.base
        try:
            tid = send(base, "hold on")
            assert arrived.wait(30), "the task's run never asked the model"
            assert post(f"{base}/", "GetTask", {"id": tid})["result"]["status"]["state"] == "working"
            r = post(f"{base}/", "CancelTask", {"id": tid})
            assert r["result"]["id"] == tid and r["result"]["status"]["state"] == "canceled", r
            assert settled(base, tid)["status"]["state"] == "canceled"
        finally:
            release.set()
        assert returned.wait(30)
        # The model's late answer changes nothing.
        assert settled(base, tid)["status"]["state"] == "canceled"
        assert post(f"{base}/", "CancelTask", {"id": tid})["error"] == {
            "code": -32002, "message": f"Task cannot be canceled: {tid} is canceled"}
        for method, version in (("CancelTask", None), ("tasks/cancel", None), ("CancelTask", "1.0")):
            assert post(f"{base}/", method, {"id": "nope"}, version)["error"] == {
                "code": -32001, "message": "Task not found: nope"}, (method, version)


class HangingRecords:
    """Records in a dict whose get of the id "hang" blocks until released."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: dict[tuple[str, str], object] = {}
        self.release = threading.Event()

    def get(self, kind, id):  # noqa: A002
        if id == "hang":
            self.release.wait(60)
        with self.lock:
            return self.records.get((kind, id))

    def save(self, kind, id, record):  # noqa: A002
        with self.lock:
            self.records[(kind, id)] = record

    def delete(self, kind, id):  # noqa: A002
        with self.lock:
            return self.records.pop((kind, id), None) is not None


def test_serve_a2a_on_a_host_store_that_hangs_answers_at_its_timeout(tk):
    records = HangingRecords()
    before = tn_store._live_count()
    with pytest.raises(tn.InvalidArgumentError) as e:
        tn.register_store("py-hang", records, timeout=-1)
    assert "timeoutMs" in e.value.message
    tn.register_store("py-hang", records, timeout=0.2)
    try:
        with tn.Client({"model": "m"}, generate=generate) as client, \
                tk.serve(a2a={"store": "host:py-hang"}, client=client) as server:
            base = server.base
            assert post(f"{base}/", "GetTask", {"id": "hang"})["error"] == {
                "code": -32603, "message": 'store "host:py-hang": get did not answer within 200 ms'}
            # The server goes on serving: a task runs to completion in the store.
            tid = send(base, "after the hang")
            assert artifact_text(settled(base, tid)) == "served: after the hang"
            assert ("task", tid) in records.records
    finally:
        records.release.set()
        tn.unregister_store("py-hang")
    # The abandoned get returns once released, and the store goes with it
    # (no later test sees it live).
    assert wait_for(lambda: tn_store._live_count() == before, 20)
