#!/usr/bin/env python3
"""A scripted ACP agent for tests/acp.rs: JSON-RPC 2.0, one object per line,
on its own stdin and stdout (standard library only). `--scenario NAME` picks
what a `session/prompt` does:

  default     one agent_message_chunk "echo:<prompt text>", then the reply
  noisy       the answer split over two message chunks, with thought chunks,
              tool narration and a user chunk around them
  permission  asks session/request_permission, waits for the answer, and
              says "PERMITTED:<optionId>" (or "DENIED" when cancelled)
  ask_other   asks fs/read_text_file (no ACP client would do it for us)
              and says "OTHER:<the result as JSON>"
  hang        never replies
  stale       answers the question the marker line names ("FRESH:<q>"),
              or without a marker the first question it ever saw
              ("STALE:<q>")
  serialize   notes a prompt that arrives while another is running, takes
              0.2 s per prompt
  exit        exits in the middle of the turn (after one chunk)
  error       replies with a JSON-RPC error -32603 "agent exploded"
  big_line    writes a line of 2 MiB of garbage, then answers as default
  late        the first prompt is answered late: after a session/cancel (or
              1.2 s) and 0.2 s more, a chunk "LATE-" and the reply
              (stopReason "cancelled" after a cancel); later ones as default
              after 0.5 s
  stubborn    answers as default, but ignores SIGTERM and outlives the end
              of its stdin (only SIGKILL ends it)

`x/diagnostics` (not ACP) answers what the agent saw. With ACP_PID_FILE in
the environment the agent writes its pid there first.
"""
import json
import os
import signal
import sys
import threading
import time

out_lock = threading.Lock()


def send(msg):
    data = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


class Agent:
    def __init__(self, scenario):
        self.scenario = scenario
        self.lock = threading.Lock()
        self.seen = {
            "initialize": None,
            "session_new": [],
            "set_mode": None,
            "prompts": [],
            "ids": [],
            "cancels": 0,
            "overlap": False,
            "answers": {},
            "cwd": os.getcwd(),
            "env_probe": os.environ.get("ACP_PROBE"),
        }
        self.running = 0
        self.waiting = {}
        self.cond = threading.Condition(self.lock)
        self.counter = 0
        self.cancelled = threading.Event()

    def chunk(self, sid, kind, text):
        send({"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": sid,
                         "update": {"sessionUpdate": kind,
                                    "content": {"type": "text", "text": text}}}})

    def ask(self, method, params):
        with self.lock:
            self.counter += 1
            rid = "agent-%d" % self.counter
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.cond:
            while rid not in self.waiting:
                self.cond.wait()
            return self.waiting.pop(rid)

    def prompt(self, rid, sid, text):
        with self.lock:
            if self.running:
                self.seen["overlap"] = True
            self.running += 1
            self.seen["prompts"].append(text)
            first = self.seen["prompts"][0]
        try:
            reply = self.turn(rid, sid, text, first)
        finally:
            # Done before the reply leaves: the client may send its next
            # prompt as soon as it has it.
            with self.lock:
                self.running -= 1
        if reply is not None:
            send(reply)

    def turn(self, rid, sid, text, first):
        s = self.scenario
        if s == "hang":
            return None
        if s == "late" and len(self.seen["prompts"]) == 1:
            self.cancelled.wait(1.2)
            time.sleep(0.2)
            self.chunk(sid, "agent_message_chunk", "LATE-")
            stop = "cancelled" if self.cancelled.is_set() else "end_turn"
            return {"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}}
        if s == "exit":
            self.chunk(sid, "agent_message_chunk", "half an ans")
            os._exit(3)
        if s == "error":
            return {"jsonrpc": "2.0", "id": rid,
                    "error": {"code": -32603, "message": "agent exploded"}}
        if s == "permission":
            answer = self.ask("session/request_permission", {
                "sessionId": sid,
                "toolCall": {"toolCallId": "t1", "title": "rm -rf build"},
                "options": [
                    {"optionId": "no-way", "name": "Reject", "kind": "reject_once"},
                    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "allow-always", "name": "Always", "kind": "allow_always"},
                ]})
            outcome = answer.get("result", {}).get("outcome", {})
            with self.lock:
                self.seen["answers"]["permission"] = outcome
            said = ("PERMITTED:" + outcome["optionId"]) if outcome.get("outcome") == "selected" else "DENIED"
            self.chunk(sid, "agent_message_chunk", said)
        elif s == "ask_other":
            answer = self.ask("fs/read_text_file", {"sessionId": sid, "path": "/etc/hostname"})
            self.chunk(sid, "agent_message_chunk", "OTHER:" + json.dumps(answer.get("result"), sort_keys=True))
        elif s == "noisy":
            self.chunk(sid, "agent_thought_chunk", "Hmm, I should think. ")
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": sid, "update": {"sessionUpdate": "tool_call", "toolCallId": "t9",
                                                          "title": "grep the repo", "status": "pending"}}})
            self.chunk(sid, "agent_message_chunk", '{"answer":')
            self.chunk(sid, "user_message_chunk", "an echo of the user")
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": sid, "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t9",
                                                          "status": "completed"}}})
            self.chunk(sid, "agent_thought_chunk", "checking twice. ")
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": sid, "update": {"sessionUpdate": "plan", "entries": []}}})
            last = text.rsplit("SUPERSEDES-ALL-PRIOR: ", 1)[-1]
            self.chunk(sid, "agent_message_chunk", json.dumps(last) + "}")
        elif s == "stale":
            marker = "SUPERSEDES-ALL-PRIOR: "
            if marker in text:
                self.chunk(sid, "agent_message_chunk", "FRESH:" + text.rsplit(marker, 1)[1])
            else:
                self.chunk(sid, "agent_message_chunk", "STALE:" + first)
        elif s == "late":
            time.sleep(0.5)
            self.chunk(sid, "agent_message_chunk", "echo:" + text.rsplit("SUPERSEDES-ALL-PRIOR: ", 1)[-1])
        elif s == "serialize":
            time.sleep(0.2)
            self.chunk(sid, "agent_message_chunk", "echo:" + text.rsplit("SUPERSEDES-ALL-PRIOR: ", 1)[-1])
        else:
            if s == "big_line":
                with out_lock:
                    sys.stdout.write("x" * (2 << 20) + "\n")
                    sys.stdout.flush()
            self.chunk(sid, "agent_message_chunk", "echo:" + text.rsplit("SUPERSEDES-ALL-PRIOR: ", 1)[-1])
        return {"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}}

    def serve(self):
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            method, rid = msg.get("method"), msg.get("id")
            params = msg.get("params") or {}
            if rid is not None:
                with self.lock:
                    self.seen["ids"].append(rid)
            if method is None:
                with self.cond:
                    self.waiting[rid] = msg
                    self.cond.notify_all()
            elif method == "initialize":
                with self.lock:
                    self.seen["initialize"] = params
                send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
            elif method == "session/new":
                with self.lock:
                    self.seen["session_new"].append(params)
                send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s-%d" % len(self.seen["session_new"])}})
            elif method == "session/set_mode":
                with self.lock:
                    self.seen["set_mode"] = params
                send({"jsonrpc": "2.0", "id": rid, "result": {}})
            elif method == "session/prompt":
                text = "".join(b.get("text", "") for b in params.get("prompt", []))
                threading.Thread(target=self.prompt, args=(rid, params.get("sessionId"), text), daemon=True).start()
            elif method == "session/cancel":
                with self.lock:
                    self.seen["cancels"] += 1
                self.cancelled.set()
            elif method == "x/diagnostics":
                with self.lock:
                    send({"jsonrpc": "2.0", "id": rid, "result": json.loads(json.dumps(self.seen))})
            elif rid is not None:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


def main():
    scenario = "default"
    if "--scenario" in sys.argv:
        scenario = sys.argv[sys.argv.index("--scenario") + 1]
    pid_file = os.environ.get("ACP_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    if scenario == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Agent(scenario).serve()
    if scenario == "stubborn":
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
