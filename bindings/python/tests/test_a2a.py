"""Remote A2A agents as tools (SPEC §7A) through ``Toolkit.add_agent``,
against a stub agent on loopback: one tool per card skill, the task sent and
polled to completion, the ``${ENV}`` header expanded at the call, the first
name winning, and an unreachable card raising."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from parity import tn  # noqa: E402  (the package, installed or from src)


class Stub(BaseHTTPRequestHandler):
    seen: list = []
    polls: dict = {}

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        base = f"http://{self.headers['Host']}/"
        self._answer({"name": "reviewer", "url": base,
                      "skills": [{"id": "review", "description": "Reviews"}, {"id": "plan"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append((req["method"], self.headers.get("Authorization")))
        if req["method"] == "SendMessage":
            Stub.polls["t1"] = 0
            result = {"id": "t1", "status": {"state": "submitted"}}
        else:
            Stub.polls["t1"] += 1
            result = {"id": "t1", "status": {"state": "working"}}
            if Stub.polls["t1"] >= 2:
                result = {"id": "t1", "status": {"state": "completed"},
                          "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "REVIEWED"}]}]}
        self._answer({"jsonrpc": "2.0", "id": req["id"], "result": result})


@pytest.fixture()
def agent_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/agent-card.json"
    server.shutdown()


def test_add_agent_registers_and_runs_the_remote_skills(agent_url, monkeypatch):
    monkeypatch.setenv("TN_PY_A2A_TOKEN", "py-secret")
    tk = tn.Toolkit({"builtins": False})
    try:
        added = tk.add_agent(agent_url, headers={"Authorization": "Bearer ${TN_PY_A2A_TOKEN}"},
                             poll_every=0.01)
        assert added["added"] == ["reviewer_review", "reviewer_plan"]
        assert tk.render("toolNames") == ["reviewer_plan", "reviewer_review"]
        r = tk.execute("reviewer_review", {"task": "look"})
        assert (r.output, r.is_error) == ("REVIEWED", False)
        assert r.metadata["state"] == "completed" and r.metadata["agent"] == "reviewer"
        assert ("SendMessage", "Bearer py-secret") in Stub.seen
        again = tk.add_agent({"card": agent_url})
        assert again["added"] == [] and len(again["skipped"]) == 2
        with pytest.raises(tn.ToolnexusError) as e:
            tk.add_agent("http://127.0.0.1:1/none")
        assert e.value.code == "invalid_argument"
    finally:
        tk.close()
