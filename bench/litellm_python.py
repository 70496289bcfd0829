"""Translate beside LiteLLM (issue 29), in one run, rounds interleaved.

    cargo build --release --example litellm_peer
    python3 bench/litellm_python.py [--peer target/release/examples/litellm_peer] [--rounds 7]

with a `python3` that has the pinned LiteLLM (tests/requirements.txt;
scripts/setup.sh installs it into .venv: `.venv/bin/python3`).

Conversion per request: the OpenAI-shaped request of benches/translate.rs
(20 messages with parallel tool calls and results, 20 tools, tool_choice
auto, max_tokens) to a provider body, for each style LiteLLM has a pure
transform of:
- anthropic: `AnthropicConfig.map_openai_params` then `.transform_request`
- gemini: `GoogleAIStudioGeminiConfig.map_openai_params` then
  `vertex_ai.gemini.transformation.transform_request_body`
- responses: LiteLLM's chat → Responses bridge,
  `LiteLLMResponsesTransformationHandler.transform_request`
LiteLLM's figure is its transform alone, Python dicts in and out (no JSON
parsing of the request, no encoding of the body; its own `completion()`
adds both and more). Ours (bench/litellm_peer.rs, a Rust example built
against the release library; the Python binding has no pure conversion
entry point) is JSON text in and JSON bytes out: the request parsed,
validated, the body built and encoded, as tn_translate does it. A second
row per style, "(text)", gives LiteLLM the same work: `json.loads` of the
request text, its transform, `json.dumps` of the body (the target is read
on the first row, which favours LiteLLM).

Streaming: one recorded SSE replay per style (Anthropic: 400 text deltas,
2 tool calls of 40 argument fragments each, thinking; Gemini: 400 text
chunks and 2 function calls), the same bytes for both:
- ours: streaming translate's SSE parser, the style's stream assembler and
  the OpenAI chunk writer (`data: {chat.completion.chunk}` text) into a
  sink, no socket;
- LiteLLM: its provider stream iterator (`anthropic.chat.handler.
  ModelResponseIterator`, `vertex_and_google_ai_studio_gemini.
  ModelResponseIterator`) over the replay's lines, each chunk it yields
  encoded as LiteLLM's proxy sends it (`data: ` + `model_dump_json(
  exclude_none=True)`); without `CustomStreamWrapper` (its logging and
  callbacks would only add to LiteLLM's figure).
Per-chunk overhead = the replay's time / its upstream events.

Each round times LiteLLM's batch of every item, then ours of the same
item, then the next item; medians over the rounds. Target (issue 29):
ours >= 20x LiteLLM per conversion; per-chunk overhead under 2 us.
"""

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# LiteLLM never touches the network here: its local model cost map, no
# telemetry, and every socket connect and name lookup of this process
# refused (the peer is driven through pipes).
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _refuse(*args, **kwargs):
    raise OSError("bench/litellm_python.py: no network for LiteLLM")


socket.socket.connect = socket.socket.connect_ex = _refuse
socket.create_connection = socket.getaddrinfo = _refuse

MODELS = {"anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash", "responses": "gpt-4.1"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workload():
    """benches/translate_workload's request, in OpenAI chat shape."""
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
    return messages[:20], tools


def anthropic_replay():
    ev = []

    def e(d):
        ev.append(f"event: {d['type']}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n")
    e({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
       "model": "claude-sonnet-4-5", "usage": {"input_tokens": 812, "cache_read_input_tokens": 100, "output_tokens": 1}}})
    e({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})
    for i in range(20):
        e({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": f"step {i}. "}})
    e({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}})
    e({"type": "content_block_stop", "index": 0})
    e({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    for i in range(400):
        e({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": f"word{i} "}})
    e({"type": "content_block_stop", "index": 1})
    for t in range(2):
        b = 2 + t
        e({"type": "content_block_start", "index": b, "content_block": {"type": "tool_use", "id": f"toolu_{t}", "name": "tool_1", "input": {}}})
        e({"type": "content_block_delta", "index": b, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \""}})
        for i in range(38):
            e({"type": "content_block_delta", "index": b, "delta": {"type": "input_json_delta", "partial_json": "ab"}})
        e({"type": "content_block_delta", "index": b, "delta": {"type": "input_json_delta", "partial_json": "\", \"days\": 2}"}})
        e({"type": "content_block_stop", "index": b})
    e({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 600}})
    e({"type": "message_stop"})
    return "".join(ev)


def gemini_replay():
    ev = []

    def e(d):
        ev.append(f"data: {json.dumps(d, separators=(',', ':'))}\n\n")
    for i in range(400):
        e({"candidates": [{"content": {"role": "model", "parts": [{"text": f"word{i} "}]}, "index": 0}],
           "modelVersion": "gemini-2.5-flash"})
    e({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "tool_1", "args": {"city": "Paris", "days": 2}}, "thoughtSignature": "U0lH"},
        {"functionCall": {"name": "tool_2", "args": {"city": "Paris"}}}]}, "finishReason": "STOP", "index": 0}],
       "usageMetadata": {"promptTokenCount": 812, "candidatesTokenCount": 600, "totalTokenCount": 1412},
       "modelVersion": "gemini-2.5-flash"})
    return "".join(ev)


class Peer:
    """bench/litellm_peer.rs, one command a line."""

    def __init__(self, path, files):
        self.p = subprocess.Popen([path, *files], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline().strip()
        if not answer or answer.startswith("error"):
            sys.exit(f"litellm_peer: {line!r} -> {answer!r}")
        return answer

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        self.p.wait()


def litellm_converters(messages, tools):
    """{style: fn(messages) -> body}: LiteLLM's pure transforms."""
    import litellm
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.llms.vertex_ai.gemini.transformation import transform_request_body

    non_default = {"tools": tools, "tool_choice": "auto", "max_tokens": 1024}
    out = {}

    anthropic = AnthropicConfig()

    def conv_anthropic(msgs):
        params = anthropic.map_openai_params(copy.copy(non_default), {}, MODELS["anthropic"], False)
        return anthropic.transform_request(MODELS["anthropic"], msgs, params, {}, {})
    out["anthropic"] = conv_anthropic

    gemini = litellm.GoogleAIStudioGeminiConfig()

    def conv_gemini(msgs):
        params = gemini.map_openai_params(copy.copy(non_default), {}, MODELS["gemini"], False)
        return transform_request_body(msgs, MODELS["gemini"], params, "gemini", {}, None)
    out["gemini"] = conv_gemini

    try:
        from litellm.completion_extras.litellm_responses_transformation.transformation import (
            LiteLLMResponsesTransformationHandler,
        )
        responses = LiteLLMResponsesTransformationHandler()
        log = logging_obj(MODELS["responses"])

        def conv_responses(msgs):
            params = responses.map_openai_params(copy.copy(non_default), {}, MODELS["responses"], False) \
                if hasattr(responses, "map_openai_params") else copy.copy(non_default)
            return responses.transform_request(MODELS["responses"], msgs, params,
                                               {"custom_llm_provider": "openai"}, {}, log)
        conv_responses(copy.deepcopy(messages))
        out["responses"] = conv_responses
    except Exception as e:  # noqa: BLE001 - reported, the other rows still run
        print(f"responses: LiteLLM's chat->Responses transform did not run ({type(e).__name__}: {e}); row skipped",
              file=sys.stderr)
    return out


def logging_obj(model):
    from datetime import datetime

    from litellm.litellm_core_utils.litellm_logging import Logging
    log = Logging(model=model, messages=[], stream=True, call_type="completion", litellm_call_id="bench",
                  start_time=datetime.now(), function_id="bench")
    log.optional_params = {}
    log.litellm_params = {}
    return log


def litellm_streamers():
    """{style: fn(lines) -> (events, chunks)}: LiteLLM's stream iterators."""
    from litellm.llms.anthropic.chat.handler import ModelResponseIterator as AnthropicIterator
    from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import (
        ModelResponseIterator as GeminiIterator,
    )
    log = logging_obj(MODELS["gemini"])

    def run(iterator):
        chunks = 0
        for chunk in iterator:
            # The empty placeholders it yields for `event:` and blank lines
            # (plain dicts) are what CustomStreamWrapper drops.
            if hasattr(chunk, "model_dump_json"):
                "data: " + chunk.model_dump_json(exclude_none=True) + "\n\n"
                chunks += 1
        return chunks

    return {
        "anthropic": lambda lines: run(AnthropicIterator(iter(lines), sync_stream=True)),
        "gemini": lambda lines: run(GeminiIterator(iter(lines), sync_stream=True, logging_obj=log)),
    }


# What the Responses bridge hands to `litellm.responses()` beside the body
# (not sent).
LITELLM_INTERNAL = ("litellm_logging_obj", "custom_llm_provider", "client")


def encode(body):
    """A LiteLLM body as the JSON text it sends."""
    return json.dumps({k: v for k, v in body.items() if k not in LITELLM_INTERNAL})


def timed(fn, inputs):
    start = time.perf_counter_ns()
    for x in inputs:
        fn(x)
    return time.perf_counter_ns() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", default=os.path.join(ROOT, "target/release/examples/litellm_peer"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="few iterations (a check that it runs)")
    args = ap.parse_args()
    try:
        import litellm
    except ImportError:
        sys.exit("litellm is not installed in this python (tests/requirements.txt pins it)")
    from importlib.metadata import version
    litellm.suppress_debug_info = True

    messages, tools = workload()
    work = tempfile.mkdtemp(prefix="tn-litellm-bench-")
    files = [os.path.join(work, n) for n in ("workload.json", "anthropic.sse", "gemini.sse")]
    request = {"messages": messages, "tools": tools, "toolChoice": "auto", "maxTokens": 1024}
    client = {"baseUrl": "http://127.0.0.1:9", "model": "bench-model", "apiKey": "k"}
    sse = {"anthropic": anthropic_replay(), "gemini": gemini_replay()}
    with open(files[0], "w") as f:
        json.dump({"client": client, "request": request}, f)
    for style, name in (("anthropic", files[1]), ("gemini", files[2])):
        with open(name, "w") as f:
            f.write(sse[style])
    lines = {s: sse[s].split("\n") for s in sse}
    events = {s: sse[s].count("data:") for s in sse}

    converters = litellm_converters(messages, tools)
    streamers = litellm_streamers()
    peer = Peer(args.peer, files)

    n_py_conv, n_rs_conv = (20, 200) if args.quick else (200, 20000)
    n_py_stream, n_rs_stream = (2, 20) if args.quick else (20, 2000)
    results = {}  # item -> {"litellm": [ns/op], "ours": [ns/op]}
    request_text = json.dumps(request, separators=(",", ":"))
    for style, conv in converters.items():  # a warm-up, and a check that each runs
        body = conv(copy.deepcopy(messages))
        assert body, style
        assert encode(conv(json.loads(request_text)["messages"])), style
        assert json.loads(peer.ask(f"body {style}")), style
    print(f"LiteLLM {version('litellm')}, Python {sys.version.split()[0]}; ours: {args.peer}", file=sys.stderr)
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    for rnd in range(args.rounds):
        for style, conv in converters.items():
            inputs = [copy.deepcopy(messages) for _ in range(n_py_conv)]
            py = timed(conv, inputs) / n_py_conv
            rs = int(peer.ask(f"convert {style} {n_rs_conv}").split()[0]) / n_rs_conv
            r = results.setdefault(f"conversion/{style}", {"litellm": [], "ours": []})
            r["litellm"].append(py)
            r["ours"].append(rs)
            # Like for like: LiteLLM given the request as JSON text and its
            # body encoded, as ours is (the row above times its transform
            # alone, on a dict made before the clock starts).
            py = timed(lambda t, conv=conv: encode(conv(json.loads(t)["messages"])),
                       [request_text] * n_py_conv) / n_py_conv
            r = results.setdefault(f"conversion/{style} (text)", {"litellm": [], "ours": []})
            r["litellm"].append(py)
            r["ours"].append(rs)
        for style, stream in streamers.items():
            py = timed(stream, [lines[style]] * n_py_stream) / n_py_stream
            ns, ev, chunks = peer.ask(f"stream {style} {n_rs_stream}").split()
            rs = int(ns) / n_rs_stream
            r = results.setdefault(f"stream/{style}", {"litellm": [], "ours": [], "events": int(ev),
                                                        "chunks": int(chunks)})
            r["litellm"].append(py)
            r["ours"].append(rs)
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    peer.close()
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)

    def us(ns):
        return f"{ns / 1000:.2f} us" if ns < 1e6 else f"{ns / 1e6:.2f} ms"
    print()
    print(f"| work (median of {args.rounds} interleaved rounds) | toolnexus-rs | LiteLLM {version('litellm')} | ratio |")
    print("|---|---|---|---|")
    for item, r in results.items():
        ours, theirs = statistics.median(r["ours"]), statistics.median(r["litellm"])
        if item.startswith("conversion/"):
            what = "JSON text in, text out on both sides" if item.endswith("(text)") else "20 messages, 20 tools, per request"
            print(f"| {item}: {what} | {us(ours)} | {us(theirs)} | {theirs / ours:.1f}x |")
        else:
            ev = events[item.split("/")[1]]
            print(f"| {item}: {ev} events, per replay | {us(ours)} | {us(theirs)} | {theirs / ours:.1f}x |")
            print(f"| {item}: per upstream event (chunk overhead) | {ours / ev:.0f} ns | {theirs / ev:.0f} ns | |")
            print(f"| {item}: chunks/s | {ev / ours * 1e9:,.0f} | {ev / theirs * 1e9:,.0f} | |")


if __name__ == "__main__":
    main()
