#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from the conformance vectors.

    fuzz/seeds.py [OUT]      (default OUT: fuzz/corpus)

One directory per target under OUT, one file per seed, named by a hash of its
bytes (so re-running adds nothing twice). Paths under ${ROOT} become relative
(the targets run in a scratch directory) and ${BASE} becomes a closed port on
127.0.0.1. Nothing here is committed but this script: the corpora are made
fresh by scripts/fuzz.sh.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "tests", "conformance", "vectors")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")

# The order of the pick byte in fuzz_targets/execute.rs and helper.rs.
EXECUTE_TOOLS = ["skill", "read", "grep", "glob", "todowrite", "question"]
HELPERS = ["sanitize", "finishReasonFor", "contentText", "argsObject", "argsString",
           "toolCallsOf", "hasSystemMessage", "openaiToolChoiceToAnthropic",
           "openaiToolsToAnthropic", "toolCallsJson", "openaiMessagesToAnthropic"]


def localize(v):
    """${ROOT}/x -> x, ${ROOT} -> ., ${BASE} -> a closed local port."""
    if isinstance(v, str):
        return (v.replace("${ROOT}/", "").replace("${ROOT}", ".")
                 .replace("${BASE}", "http://127.0.0.1:9"))
    if isinstance(v, list):
        return [localize(x) for x in v]
    if isinstance(v, dict):
        return {localize(k): localize(x) for k, x in v.items()}
    return v


def enc(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()


def cases(name):
    with open(os.path.join(VECTORS, name)) as f:
        return json.load(f)["cases"]


def main():
    seeds = {t: set() for t in
             ["toolkit_build", "render", "execute", "translate", "helper", "frontmatter",
              "sse_assemble", "served_request", "client_answer"]}
    everything = [c for n in sorted(os.listdir(VECTORS)) if n.endswith(".json")
                  for c in cases(n)]
    for c in everything:
        if isinstance(c.get("toolkit"), dict):
            seeds["toolkit_build"].add(enc(localize(c["toolkit"])))
        for path, text in (c.get("files") or {}).items():
            if path.endswith(".md") and isinstance(text, str):
                seeds["frontmatter"].add(text.encode())
    for c in cases("render.json"):
        f = c.get("format")
        seeds["render"].add(f.encode() if isinstance(f, str) else enc(f))
    # Shapes no vector holds: a format as JSON, a question answered.
    seeds["render"].add(b'{"format":"anthropic","tools":["read","skill","users"]}')
    seeds["render"].add(b'{"format":"gemini","tools":[]}')
    seeds["execute"].add(bytes([5]) + b'{"questions":[{"question":"Go?","options":["yes","no"]}]}'
                        + b'\0{"answer":{"id":"q1","ok":true,"data":{"Go?":"yes"}}}')
    seeds["execute"].add(bytes([0]) + b'{"name":"hello"}')
    for c in cases("execute.json"):
        if c.get("name") in EXECUTE_TOOLS and "args" in c:
            seed = bytes([EXECUTE_TOOLS.index(c["name"])]) + enc(localize(c["args"]))
            if c.get("ctx") is not None:
                seed += b"\0" + enc(c["ctx"])
            seeds["execute"].add(seed)
    for c in cases("translate_helpers.json"):
        if c.get("fn") in HELPERS:
            seeds["helper"].add(bytes([HELPERS.index(c["fn"])]) + enc(c.get("args", [])))
    for c in cases("translate.json") + cases("run.json"):
        style = 1 if (c.get("client") or {}).get("style") == "anthropic" else 0
        if isinstance(c.get("request"), dict):
            seeds["translate"].add(bytes([style]) + enc(c["request"]))
        answers = c.get("providerResponses") or [c.get("providerResponse")]
        for a in answers:
            if isinstance(a, dict) and "body" in a:
                body = a["body"]
                raw = body.encode() if isinstance(body, str) else enc(body)
                seeds["translate"].add(bytes([style]) + raw)
    # The provider stream (issue 25): the recorded answers as the events a
    # stream of each style would carry them in, plus hand-made deltas.
    for c in cases("run.json") + cases("translate.json"):
        style = 1 if (c.get("client") or {}).get("style") == "anthropic" else 0
        answers = c.get("providerResponses") or [c.get("providerResponse")]
        for a in answers:
            if isinstance(a, dict) and isinstance(a.get("body"), dict):
                seeds["client_answer"].add(bytes([style]) + enc(a["body"]))
                seeds["sse_assemble"].add(bytes([style, 7]) + b"data: " + enc(a["body"]) + b"\n\n")
    seeds["sse_assemble"].add(bytes([0, 3]) + b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
                              b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
                              b'"function":{"name":"read","arguments":"{\\"pa"}}]}}]}\n\n'
                              b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
                              b'"function":{"arguments":"th\\":1}"}}]},"finish_reason":"tool_calls"}]}\n\n'
                              b'data: [DONE]\n\n')
    seeds["sse_assemble"].add(bytes([1, 5]) + b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","role":"assistant","content":[]}}\n\n'
                              b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
                              b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n'
                              b'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"read","input":{}}}\n\n'
                              b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":1}"}}\n\n'
                              b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"}}\n\n'
                              b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    # The served request reader: the requests the served-toolkit tests send.
    for line in [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"text":"a\\"b"}}}',
        b'{"jsonrpc":"2.0","id":"s","method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":["shout",{"text":"x"}]}',
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"x"}]',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    ]:
        seeds["served_request"].add(line)
        seeds["served_request"].add(line + b"\r\n" + line + b"\n")
    total = 0
    for target, items in seeds.items():
        d = os.path.join(OUT, target)
        os.makedirs(d, exist_ok=True)
        for s in items:
            with open(os.path.join(d, hashlib.sha1(s).hexdigest()[:16]), "wb") as f:
                f.write(s)
        total += len(items)
        print(f"{target}: {len(items)} seeds", file=sys.stderr)
    print(f"{total} seeds under {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
