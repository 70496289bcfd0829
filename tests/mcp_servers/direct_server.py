#!/usr/bin/env python3
"""A line server for the direct tools/call path (src/mcp/direct_tests.rs).
Its protocol (2024-11-05) has an initialize handshake, so the client's
tools/calls go direct. Tools, by name:

- echo {text}: answers the text.
- shaped {result}: answers `result` as the whole JSON-RPC result.
- fail {code, message, data?}: answers with that JSON-RPC error object.
- late {ms, text}: answers after ms milliseconds.
- stray {text}: first writes answers that must be ignored (the id as a
  non-numeric string, an id never sent, no id), then the real one.
- numeric_string {text}: answers with its numeric id written as a string.
- gather {i, n}: answers nothing until n gather calls and one tools/list
  came in, then asks the client for a ping, and once the client answered
  it, answers every gathered call, newest first, with its i.
- raw: answers the tools/call line as it came, its id written ID.
- hang: never answers.
- deaf {ms}: answers "deaf", then reads nothing for ms milliseconds (a
  client's long line fills the pipe meanwhile).
- report: answers a JSON list of every notifications/cancelled seen for a
  call that was waiting (hang, late, gather), as [requestId, reason].
- hostile {writes}: writes what a hostile or buggy server might answer, on a
  thread of its own: each string of `writes` is written as one write, as
  UTF-8 with @ID@ replaced by the call's id and each @xHH@ by the raw byte
  0xHH (no newline added); each number is a pause of that many
  milliseconds; {"exit": n} ends the server with status n.
"""
import json
import re
import sys
import threading
import time

out_lock = threading.Lock()


def write_raw(data):
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def hostile(mid, writes):
    import os
    for w in writes:
        if isinstance(w, str):
            data = w.replace("@ID@", str(mid)).encode("utf-8")
            write_raw(re.sub(rb"@x([0-9a-f]{2})@",
                             lambda m: bytes([int(m.group(1), 16)]), data))
        elif isinstance(w, dict):
            os._exit(w["exit"])
        else:
            time.sleep(w / 1000.0)


def send(msg):
    data = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def text(mid, value):
    send({"jsonrpc": "2.0", "id": mid,
          "result": {"content": [{"type": "text", "text": str(value)}]}})


TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}}
         for n in ["echo", "shaped", "fail", "late", "stray", "numeric_string",
                   "gather", "raw", "hang", "report", "deaf", "hostile"]]

waiting = {}       # id -> name, for calls not answered yet
cancelled = []     # [id, reason]
gathered = []      # (id, i)
hostile_thread = None  # the last hostile call's writer
gather_n = None
listed = False
ping_sent = False


def release_gather():
    global ping_sent
    if gather_n is None or ping_sent or len(gathered) < gather_n or not listed:
        return
    ping_sent = True
    send({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method = msg.get("method")
    params = msg.get("params") or {}
    mid = msg.get("id")
    if method is None:
        # The client's answer to our ping: release the gathered calls.
        if mid == "srv-ping" and "result" in msg:
            for gid, i in reversed(gathered):
                waiting.pop(gid, None)
                text(gid, i)
            gathered.clear()
        continue
    if method == "notifications/cancelled":
        rid = params.get("requestId")
        if rid in waiting:
            waiting.pop(rid)
            cancelled.append([rid, params.get("reason")])
        continue
    if mid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
            "serverInfo": {"name": "direct", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        if gather_n is not None:
            listed = True
            release_gather()
    elif method == "tools/call":
        # A hostile call's writes (its answer, then lines after it) end
        # before the next call is taken, so a slow write of one case never
        # lands in the middle of the next one's answer.
        if hostile_thread is not None:
            hostile_thread.join()
            hostile_thread = None
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            text(mid, args.get("text", ""))
        elif name == "shaped":
            send({"jsonrpc": "2.0", "id": mid, "result": args["result"]})
        elif name == "fail":
            err = {"code": args["code"], "message": args["message"]}
            if "data" in args:
                err["data"] = args["data"]
            send({"jsonrpc": "2.0", "id": mid, "error": err})
        elif name == "late":
            waiting[mid] = name

            def later(mid=mid, value=args.get("text", "")):
                # Answers even a call that was cancelled meanwhile.
                waiting.pop(mid, None)
                text(mid, value)
            threading.Timer(args["ms"] / 1000.0, later).start()
        elif name == "stray":
            send({"jsonrpc": "2.0", "id": "x-%s" % mid,
                  "result": {"content": [{"type": "text", "text": "stray"}]}})
            send({"jsonrpc": "2.0", "id": mid + 7777,
                  "result": {"content": [{"type": "text", "text": "stray"}]}})
            send({"jsonrpc": "2.0", "id": None,
                  "error": {"code": -32000, "message": "stray"}})
            send({"jsonrpc": "2.0", "id": mid + 7777,
                  "error": {"code": -32000, "message": "stray"}})
            text(mid, args.get("text", ""))
        elif name == "numeric_string":
            send({"jsonrpc": "2.0", "id": str(mid),
                  "result": {"content": [{"type": "text", "text": args.get("text", "")}]}})
        elif name == "gather":
            waiting[mid] = name
            gather_n = args["n"]
            gathered.append((mid, args["i"]))
            release_gather()
        elif name == "raw":
            text(mid, re.sub(r'"id": ?\d+,', '"id":ID,', line, count=1))
        elif name == "hang":
            waiting[mid] = name
        elif name == "hostile":
            hostile_thread = threading.Thread(target=hostile, args=(mid, args["writes"]))
            hostile_thread.start()
        elif name == "report":
            text(mid, json.dumps(cancelled))
        elif name == "deaf":
            text(mid, "deaf")
            time.sleep(args["ms"] / 1000.0)
        else:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32602, "message": "unknown tool"}})
    else:
        send({"jsonrpc": "2.0", "id": mid,
              "error": {"code": -32601, "message": "Method not found"}})
