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
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
VECTORS = os.path.join(ROOT, "tests", "conformance", "vectors")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")

# The order of the pick byte in fuzz_targets/execute.rs and helper.rs.
EXECUTE_TOOLS = ["skill", "read", "grep", "glob", "todowrite", "question"]
# The order of the style bits (toolnexus::provider::Style::ALL).
STYLES = ["openai", "anthropic", "gemini", "responses"]
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


def style_of(case):
    """The index in STYLES of a case's client style (openai when none)."""
    name = (case.get("client") or {}).get("style") or "openai"
    return STYLES.index(name) if name in STYLES else 0


def json_literals(*paths):
    """The JSON values written literally in Rust sources: each `json!(...)`
    and raw string `r#"..."#` whose text parses as JSON (those that
    interpolate Rust expressions do not, and are skipped)."""
    found = []
    for rel in paths:
        with open(os.path.join(ROOT, rel)) as f:
            src = f.read()
        i = 0
        while True:
            i = src.find("json!(", i)
            if i < 0:
                break
            j, depth, in_str = i + 6, 1, False
            while j < len(src) and depth:
                c = src[j]
                if in_str:
                    if c == "\\":
                        j += 1
                    elif c == '"':
                        in_str = False
                elif c == '"':
                    in_str = True
                elif c in "([{":
                    depth += 1
                elif c in ")]}":
                    depth -= 1
                j += 1
            try:
                found.append(json.loads(src[i + 6:j - 1]))
            except ValueError:
                pass
            i = j
        for m in re.finditer(r'r#"(.*?)"#', src, re.S):
            try:
                v = json.loads(m.group(1))
            except ValueError:
                continue
            if isinstance(v, (dict, list)):
                found.append(v)
    return found


def walk(v):
    """Every value inside v, v first."""
    yield v
    if isinstance(v, dict):
        for x in v.values():
            yield from walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from walk(x)


def cases(name):
    with open(os.path.join(VECTORS, name)) as f:
        return json.load(f)["cases"]


def main():
    seeds = {t: set() for t in
             ["toolkit_build", "render", "execute", "translate", "helper", "frontmatter",
              "sse_assemble", "served_request", "client_answer",
              "gemini_schema", "a2a_serve", "a2a_client", "oauth", "mcp_answer"]}
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
        style = style_of(c)
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
        style = style_of(c)
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
    # Gemini and Responses (issue 25): the answers and stream events their
    # tests send, as answers (client_answer, translate) and as streams.
    gemini = json_literals("tests/gemini_style.rs", "src/provider/gemini.rs")
    responses = json_literals("tests/responses_style.rs", "src/provider/responses.rs")
    gemini_answers = [v for v in gemini if isinstance(v, dict) and "candidates" in v]
    responses_answers = [v for v in responses if isinstance(v, dict) and
                         (v.get("object") == "response" or isinstance(v.get("output"), list))]
    responses_events = [v for v in responses if isinstance(v, dict) and
                        str(v.get("type", "")).startswith("response.")]
    for style, answers in ((2, gemini_answers), (3, responses_answers)):
        for a in answers:
            seeds["client_answer"].add(bytes([style]) + enc(a))
            seeds["translate"].add(bytes([style]) + enc(a))
            seeds["translate"].add(bytes([style | 8]) + enc(a))
    if gemini_answers:
        stream = b"".join(b"data: " + enc(a) + b"\r\n\r\n" for a in gemini_answers)
        seeds["sse_assemble"].add(bytes([2, 13]) + stream)
        for a in gemini_answers:
            seeds["sse_assemble"].add(bytes([2, 64]) + b"data: " + enc(a) + b"\n\n")
    if responses_events:
        stream = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + enc(e) + b"\n\n"
                          for e in responses_events)
        seeds["sse_assemble"].add(bytes([3, 17]) + stream)
    seeds["sse_assemble"].add(bytes([2, 5]) + b'data: {"candidates":[{"content":{"role":"model","parts":'
                              b'[{"text":"Hel"}]}}]}\r\n\r\ndata: {"candidates":[{"content":{"parts":'
                              b'[{"text":"lo","thoughtSignature":"c2ln"},{"functionCall":{"name":"add",'
                              b'"args":{"a":1}}}]},"finishReason":"STOP"}],"usageMetadata":'
                              b'{"promptTokenCount":3,"candidatesTokenCount":2}}\r\n\r\n')
    # The Gemini schema sanitizer: the schemas its tests and the vectors hold.
    schema_sources = json_literals("tests/gemini_schema.rs", "tests/gemini_style.rs",
                                   "src/provider/gemini_schema.rs")
    for c in everything:
        schema_sources.append(c)
    for top in schema_sources:
        for v in walk(top):
            if isinstance(v, dict) and any(k in v for k in ("type", "properties", "$ref", "$defs",
                                                          "anyOf", "oneOf", "allOf")):
                seeds["gemini_schema"].add(enc(v))
    # A server's lines as the MCP client reads them: answers to initialize,
    # tools/list and tools/call, errors, notifications and requests.
    for line in [
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"d","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}],"nextCursor":"c"}}',
        b'{"jsonrpc":"2.0","id":1000000000,"result":{"content":[{"type":"text","text":"Paris: sunny"}],"isError":false}}',
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":{"k":1}}}',
        b'{"jsonrpc":"2.0","id":2,"result":{}}',
        b'{"jsonrpc":"2.0","id":"s","result":{"resources":[{"uri":"u","name":"n"}]}}',
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad","data":{"k":1}}}',
        b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"total":2}}',
        b'{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}',
        b'{"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"s","version":"1"}}}',
    ]:
        seeds["mcp_answer"].add(line)

    # The served A2A agent: the requests its tests send, on each header.
    bodies = [v for v in json_literals("tests/a2a_serve.rs", "src/a2a/mod.rs", "src/a2a/profile.rs")
              if isinstance(v, dict) and "method" in v]
    hello = {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hello"}]}
    hello10 = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}
    bodies += [
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": hello}},
        {"jsonrpc": "2.0", "id": "a", "method": "message/send",
         "params": {"message": dict(hello, kind="message", contextId="c1")}},
        {"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": {"message": hello}},
        {"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
         "params": {"message": hello10, "configuration": {"returnImmediately": True}}},
        {"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage",
         "params": {"message": dict(hello10, parts=[{"text": "pending: more?"}])}},
        {"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {"id": "nope"}},
        {"jsonrpc": "2.0", "id": 6, "method": "CancelTask", "params": {"id": "nope"}},
    ]
    follow = [{"jsonrpc": "2.0", "id": 7, "method": m, "params": {"id": "$TASK"}}
              for m in ("GetTask", "tasks/get", "CancelTask", "tasks/cancel")]
    for b in bodies:
        for header in range(4):
            seeds["a2a_serve"].add(bytes([header]) + enc(b))
        for f in follow:
            seeds["a2a_serve"].add(bytes([1]) + enc(b) + b"\0" + enc(f) + b"\0" + enc(f))
    seeds["a2a_serve"].add(bytes([0]) + b"{not json")
    # The A2A client: the cards and answers of its stub agent
    # (tests/a2a_stub/mod.rs), on each wire.
    skill = lambda i, d: {"id": i, "name": i, "description": d}
    cards = [
        {"name": "reviewer", "url": "http://127.0.0.1:9/",
         "skills": [skill("review", "Reviews a text"), skill("plan", "Plans work")]},
        {"name": "reviewer", "url": "http://127.0.0.1:9/",
         "skills": [skill("re view", "first"), skill("re.view", "second"), skill("re_view", "third")]},
        {"name": "empty", "url": "http://127.0.0.1:9/"},
        {"name": "v1", "supportedInterfaces": [{"url": "http://127.0.0.1:9/rpc",
                                                "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
         "skills": [{"name": "only name"}, {"description": "none"}]},
    ]
    cards += [v for v in json_literals("tests/a2a_outbound.rs", "src/a2a_tool.rs", "src/a2a/mod.rs")
              if isinstance(v, dict) and "skills" in v]
    answers = [
        {"jsonrpc": "2.0", "id": "1", "result": {"id": "t1", "status": {"state": "submitted"}}},
        {"jsonrpc": "2.0", "id": "1", "result": {"id": "t1", "status": {"state": "completed"},
                                                 "artifacts": [{"parts": [{"kind": "text", "text": "done"}]}]}},
        {"jsonrpc": "2.0", "id": "1", "result": {"id": "t1", "status": {"state": "failed", "message":
                                                 {"role": "agent", "parts": [{"kind": "text", "text": "why"}]}}}},
        {"jsonrpc": "2.0", "id": "1", "result": {"task": {"id": "t1", "status":
                                                 {"state": "TASK_STATE_INPUT_REQUIRED", "message":
                                                  {"role": "ROLE_AGENT", "parts": [{"text": "more?"}]}},
                                                 "history": [{"role": "ROLE_AGENT", "parts": [{"text": "hi"}]}]}}},
        {"jsonrpc": "2.0", "id": "1", "error": {"code": -32001, "message": "Task not found: t1"}},
        {"jsonrpc": "2.0", "id": "1", "error": {"code": -32603}},
    ]
    for card in cards:
        for a in answers:
            for wire in range(4):
                seeds["a2a_client"].add(bytes([wire]) + enc(card) + b"\0" + enc(a))
    seeds["a2a_client"].add(bytes([0]) + b"<html>not a card</html>\0{}")
    # OAuth: the challenge, documents and token answers of the hostile
    # authorization server (tests/mcp_servers/oauth_hostile.py), as the
    # server at http://mcp.test/mcp would send them.
    base = "http://mcp.test"
    challenges = ['Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp"' % base,
                  'Bearer error="insufficient_scope", scope="mcp files:read", resource_metadata="/x"',
                  'Bearer realm="' + "a" * 4200 + '"', ""]
    resource = {"resource": base + "/mcp", "authorization_servers": [base], "scopes_supported": ["mcp"]}
    server = {"issuer": base, "authorization_endpoint": base + "/authorize",
              "token_endpoint": base + "/token", "registration_endpoint": base + "/register",
              "response_types_supported": ["code"],
              "grant_types_supported": ["authorization_code", "refresh_token"],
              "token_endpoint_auth_methods_supported": ["none"],
              "code_challenge_methods_supported": ["S256"],
              "scopes_supported": ["mcp", "offline_access"],
              "client_id_metadata_document_supported": True}
    no_pkce = {k: v for k, v in server.items() if k != "code_challenge_methods_supported"}
    tokens = [{"token_type": "Bearer", "expires_in": 3600, "access_token": "at-1", "refresh_token": "rt-1"},
              {"token_type": "Bearer", "expires_in": 1, "refresh_token": "rt-2"},
              {"error": "invalid_grant"}]
    for ch in challenges:
        for srv in (server, no_pkce):
            for t in tokens:
                seeds["oauth"].add(ch.encode() + b"\0" + enc(resource) + b"\0" + enc(srv) + b"\0" + enc(t))
    seeds["oauth"].add(b"Bearer\0not json\0{}\0{")
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
