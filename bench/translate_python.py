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
- conversion with images (issue 12): the same with three more messages — a
  user turn holding text and two §1B image parts, an assistant tool call,
  and its tool result carrying an image (32 KiB each) — which reach
  Anthropic as native image blocks (the port's openai_messages_to_anthropic
  does that mapping).
- whole call: Client.translate() against a mock provider on 127.0.0.1 (run in
  a separate process so it does not share this interpreter's GIL), result
  encoded to JSON.

Prints the median time per operation.

    translate_python.py --check-images BODY
                                  checks that the port's provider body for
                                  the image workload equals BODY (written by
                                  benches/translate.rs with
                                  TN_TRANSLATE_DUMP_IMAGES), as JSON values.
    translate_python.py --serve   only runs the mock provider (printing its
                                  port), for bench/run_translate.sh to point
                                  the Rust whole-call benchmark at the same
                                  server.
"""

import asyncio
import base64
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


IMAGE_BYTES = 32 * 1024


def image_base64(n, seed):
    """n bytes of a fake PNG (the signature, then a fixed pattern), base64,
    as benches/translate.rs builds them."""
    head = b"\x89PNG\r\n\x1a\n"
    body = bytes((i * 31 + seed * 7) % 251 for i in range(len(head), n))
    return base64.b64encode(head + body).decode()


def workload_images():
    request = workload()

    def image(seed):
        return {"type": "image", "mimeType": "image/png", "data": image_base64(IMAGE_BYTES, seed)}

    request["messages"] += [
        {"role": "user", "content": [
            {"type": "text", "text": "Which of these two charts shows more rain?"}, image(1), image(2)]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_img", "type": "function",
             "function": {"name": "tool_3", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_img", "content": [
            {"type": "text", "text": "the rain chart for Paris"}, image(3)]},
    ]
    return request


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
    images_text = json.dumps(workload_images())
    conv_images = median_us(lambda: conversion(images_text, reply_text))
    print(f"python toolnexus 0.21.0 translate/conversion_images: median {conv_images:.1f} us")

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


def check_images(path):
    ours = json.load(open(path))
    body, _ = conversion(json.dumps(workload_images()), json.dumps(REPLY))
    theirs = json.loads(body)
    if ours != theirs:
        for key in sorted(set(ours) | set(theirs)):
            if ours.get(key) != theirs.get(key):
                print(f"image workload: provider bodies differ at {key!r}", file=sys.stderr)
        sys.exit(1)
    images = sum(1 for m in theirs["messages"] if isinstance(m["content"], list)
                 for b in m["content"]
                 for x in ([b] + (b.get("content") if isinstance(b.get("content"), list) else []))
                 if x.get("type") == "image")
    print(f"image workload: the same provider body from both ports ({images} image blocks)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check-images"]:
        check_images(sys.argv[2])
    elif sys.argv[1:] == ["--serve"]:
        sys.argv = [sys.argv[0], json.dumps(REPLY, separators=(",", ":"))]
        exec(MOCK)
    else:
        main()
