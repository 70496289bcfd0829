"""The Python toolnexus port (0.21.0) on the same translate work as
benches/translate.rs, for a side-by-side figure.

Setup (once):
    python3 -m venv bench/.venv && bench/.venv/bin/pip install toolnexus==0.21.0
Run:
    bench/.venv/bin/python bench/translate_python.py

Workload: an OpenAI-shaped request of 20 messages (with tool calls and tool
results) and 20 tools, for an Anthropic-style provider that answers at once
with 2 tool_use blocks.

- conversion: the pure work with JSON text in and out: parse the request,
  convert messages/tools/tool_choice, encode the provider body; parse the
  provider's answer, build the OpenAI-shaped result, encode it.
- whole call: Client.translate() against a mock provider on 127.0.0.1 (run in
  a separate process so it does not share this interpreter's GIL), result
  encoded to JSON.

Prints the median time per operation.

    translate_python.py --serve   only runs the mock provider (printing its
                                  port), for bench/run_translate.sh to point
                                  the Rust whole-call benchmark at the same
                                  server.
"""

import asyncio
import json
import statistics
import subprocess
import sys
import time

from toolnexus.client import create_client
from toolnexus.translate import (
    finish_reason_for,
    openai_messages_to_anthropic,
    openai_tool_choice_to_anthropic,
    openai_tools_to_anthropic,
)


def workload():
    tools = [
        {"type": "function", "function": {
            "name": f"tool_{i}",
            "description": f"Tool number {i}: looks something up.",
            "parameters": {"type": "object",
                           "properties": {"city": {"type": "string", "description": "City name"},
                                          "days": {"type": "integer", "minimum": 1}},
                           "required": ["city"]}}}
        for i in range(20)
    ]
    messages = [{"role": "system", "content": "You are a terse assistant."}]
    r = 0
    while len(messages) < 20:
        messages.append({"role": "user", "content": f"Weather and time in city {r}?"})
        messages.append({"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": f"call_{r}_a", "type": "function",
             "function": {"name": "tool_1", "arguments": json.dumps({"city": f"C{r}", "days": 2}, separators=(",", ":"))}},
            {"id": f"call_{r}_b", "type": "function",
             "function": {"name": "tool_2", "arguments": json.dumps({"city": f"C{r}"}, separators=(",", ":"))}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{r}_a", "content": "18C sunny"})
        messages.append({"role": "tool", "tool_call_id": f"call_{r}_b", "content": "14:00"})
        messages.append({"role": "assistant", "content": f"City {r}: 18C, 14:00."})
        r += 1
    return {"messages": messages[:20], "tools": tools, "toolChoice": "auto", "maxTokens": 1024}


REPLY = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
         "content": [{"type": "text", "text": "Let me check both."},
                     {"type": "tool_use", "id": "toolu_1", "name": "tool_1", "input": {"city": "Paris", "days": 2}},
                     {"type": "tool_use", "id": "toolu_2", "name": "tool_2", "input": {"city": "Paris"}}],
         "stop_reason": "tool_use", "usage": {"input_tokens": 812, "output_tokens": 64}}

MOCK = r'''
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = sys.argv[1].encode()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # As real servers do: without it the body, written after the head, waits
    # for the client's delayed ACK (40 ms on Linux) on a reused connection.
    disable_nagle_algorithm = True
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'''


def conversion(request_text, reply_text, model="claude-test"):
    req = json.loads(request_text)
    msgs, system = openai_messages_to_anthropic(req["messages"])
    payload = {"model": model, "max_tokens": req.get("maxTokens") or 4096, "messages": msgs}
    if system:
        payload["system"] = system
    declared = openai_tools_to_anthropic(req.get("tools"))
    if declared:
        payload["tools"] = declared
    choice = openai_tool_choice_to_anthropic(req.get("toolChoice"))
    if choice is not None:
        payload["tool_choice"] = choice
    body = json.dumps(payload).encode("utf-8")

    data = json.loads(reply_text)
    text, calls = [], []
    for b in data.get("content") or []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            text.append(b.get("text") or "")
        elif b.get("type") == "tool_use":
            calls.append({"id": str(b.get("id") or ""), "name": str(b.get("name") or ""),
                          "arguments": json.dumps(b.get("input") or {}, separators=(",", ":"))})
    usage = data.get("usage") or {}
    p, c = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    result = {"text": "".join(text), "toolCalls": calls,
              "finishReason": finish_reason_for(bool(calls), data.get("stop_reason")),
              "usage": {"promptTokens": p, "completionTokens": c, "totalTokens": p + c},
              "model": model, "raw": data}
    return body, json.dumps(result)


def median_us(fn, batches=30, per_batch=None, budget_s=4.0):
    # Calibrate a batch size so the whole run takes about budget_s.
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    per_batch = per_batch or max(1, int(budget_s / batches / one))
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - t0) / per_batch * 1e6)
    return statistics.median(samples)


def main():
    request = workload()
    request_text = json.dumps(request)
    reply_text = json.dumps(REPLY)
    conv = median_us(lambda: conversion(request_text, reply_text))
    print(f"python toolnexus 0.21.0 translate/conversion: median {conv:.1f} us")

    mock = subprocess.Popen([sys.executable, "-c", MOCK, json.dumps(REPLY, separators=(",", ":"))],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(mock.stdout.readline())
        client = create_client(base_url=f"http://127.0.0.1:{port}", style="anthropic",
                               model="claude-test", api_key="bench-key")
        loop = asyncio.new_event_loop()

        def whole():
            r = loop.run_until_complete(client.translate(
                request["messages"], tools=request["tools"], tool_choice="auto", max_tokens=1024))
            return json.dumps({"text": r.text, "toolCalls": [tc.__dict__ for tc in r.tool_calls],
                               "finishReason": r.finish_reason, "usage": r.usage, "model": r.model, "raw": r.raw})

        assert json.loads(whole())["finishReason"] == "tool_calls"
        call = median_us(whole, batches=20)
        print(f"python toolnexus 0.21.0 translate/whole_call: median {call:.1f} us")
        loop.close()
    finally:
        mock.terminate()
        mock.wait()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.argv = [sys.argv[0], json.dumps(REPLY, separators=(",", ":"))]
        exec(MOCK)
    else:
        main()
