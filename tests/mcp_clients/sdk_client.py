#!/usr/bin/env python3
"""An MCP client built on the official MCP Python SDK, for the gateway tests.

usage: sdk_client.py PLAN_JSON http URL
       sdk_client.py PLAN_JSON stdio COMMAND [ARGS...]

PLAN is {"steps": [STEP...]}; each step's outcome is one element of the
JSON array printed on stdout:
  {"op": "init"}                       -> {"serverInfo", "capabilities"}
  {"op": "list"}                       -> {"tools": [{name, description, inputSchema}]}
  {"op": "call", "name", "arguments"}  -> {"isError", "content"} or {"error": {code, message}}
  {"op": "parallel", "calls": [...]}   -> [outcome of each call], run at once
  {"op": "cancel", "name", "arguments", "waitFile"}
      starts the call, waits for waitFile to exist, cancels it
                                       -> {"cancelled": true}
  {"op": "resources"} / {"op": "templates"} / {"op": "prompts"}
                                       -> the list result, or {"error"}
  {"op": "read", "uri"}                -> the resources/read result, or {"error"}
  {"op": "prompt", "name", "arguments"} -> the prompts/get result, or {"error"}
  {"op": "complete", "ref", "argument"} -> the completion/complete result, or {"error"}
  {"op": "setLevel", "level"} / {"op": "subscribe", "uri"} / {"op": "unsubscribe", "uri"}
                                       -> {} or {"error"}
  {"op": "notified", "name", "arguments"}
      a call with a progress callback -> {"isError", "content", "progress": [params...],
                                          "logs": [params of notifications/message during it]}
  {"op": "vanish", "name", "arguments", "waitFile"}
      starts the call, waits for waitFile, prints what it has and leaves
      at once (os._exit), dropping the connection mid-call
  {"op": "asked"}                      -> [{"method", "params"}...] the server's requests so far
  {"op": "changed", "method", "limit"} waits (up to LIMIT s, default 60) for the
      server's notification METHOD (a notifications/*/list_changed)
                                       -> {"came": bool, "changed": [methods so far]}

PLAN's optional "answers" makes the client declare sampling and/or
elicitation and answer the server's requests: {"sampling": RESULT,
"elicitation": RESULT}, RESULT being the result to answer with as JSON, or
{"sleep": SECONDS} to answer nothing for that long (then an error).

Works with mcp 1.x and 2.x.
"""
import json
import os
import sys
import time

import anyio
from mcp import ClientSession

try:
    from mcp.client.streamable_http import streamable_http_client as http_client
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client as http_client
from mcp.client.stdio import StdioServerParameters, stdio_client


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def call(session, step):
    try:
        r = await session.call_tool(step["name"], step.get("arguments") or {})
    except Exception as e:  # an error answer
        err = getattr(e, "error", None)
        code = getattr(err, "code", None)
        if code is None:
            code = getattr(e, "code", None)
        message = getattr(err, "message", None) or str(e)
        return {"error": {"code": code, "message": message}}
    d = dump(r)
    return {"isError": bool(d.get("isError", False)), "content": d.get("content", [])}


def error_of(e):
    err = getattr(e, "error", None)
    code = getattr(err, "code", None)
    if code is None:
        code = getattr(e, "code", None)
    return {"error": {"code": code, "message": getattr(err, "message", None) or str(e)}}


LOGS = []
ASKED = []


def answering(method, answer):
    from mcp import types

    async def callback(context, params):
        ASKED.append({"method": method, "params": dump(params)})
        if "sleep" in answer:
            await anyio.sleep(answer["sleep"])
            return types.ErrorData(code=-32603, message="the test client never answered")
        if method == "sampling/createMessage":
            return types.CreateMessageResult.model_validate(answer)
        return types.ElicitResult.model_validate(answer)

    return callback


def callbacks(plan):
    answers = plan.get("answers") or {}
    kw = {}
    if "sampling" in answers:
        kw["sampling_callback"] = answering("sampling/createMessage", answers["sampling"])
    if "elicitation" in answers:
        kw["elicitation_callback"] = answering("elicitation/create", answers["elicitation"])
    return kw


async def on_log(params):
    LOGS.append(dump(params))


CHANGED = []


async def on_message(message):
    m = getattr(message, "root", message)
    method = getattr(m, "method", None)
    if isinstance(method, str) and method.endswith("/list_changed"):
        CHANGED.append(method)


async def changed(step):
    until = time.monotonic() + float(step.get("limit", 60))
    while step["method"] not in CHANGED:
        if time.monotonic() > until:
            return {"came": False, "changed": list(CHANGED)}
        await anyio.sleep(0.02)
    return {"came": True, "changed": list(CHANGED)}


async def notified(session, step):
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message})

    LOGS.clear()
    r = await session.call_tool(step["name"], step.get("arguments") or {}, progress_callback=on_progress)
    d = dump(r)
    return {"isError": bool(d.get("isError", False)), "content": d.get("content", []),
            "progress": progress, "logs": list(LOGS)}


async def other(session, step):
    from mcp import types

    op = step["op"]
    try:
        if op == "resources":
            r = await session.list_resources()
        elif op == "templates":
            r = await session.list_resource_templates()
        elif op == "prompts":
            r = await session.list_prompts()
        elif op == "read":
            r = await session.read_resource(step["uri"])
        elif op == "prompt":
            r = await session.get_prompt(step["name"], step.get("arguments"))
        elif op == "complete":
            ref = step["ref"]
            if ref["type"] == "ref/prompt":
                ref = types.PromptReference(type="ref/prompt", name=ref["name"])
            else:
                ref = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
            r = await session.complete(ref, step["argument"])
        elif op == "setLevel":
            r = await session.set_logging_level(step["level"])
        elif op == "subscribe":
            r = await session.subscribe_resource(step["uri"])
        elif op == "unsubscribe":
            r = await session.unsubscribe_resource(step["uri"])
        else:
            raise ValueError(f"unknown op {op}")
    except ValueError:
        raise
    except Exception as e:  # an error answer
        return error_of(e)
    return dump(r) if r is not None else {}


async def wait_file(path, limit=20.0):
    until = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > until:
            raise TimeoutError(f"{path} never appeared")
        await anyio.sleep(0.02)


async def run(session, plan, out):
    init = await session.initialize()
    for step in plan["steps"]:
        op = step["op"]
        if op == "init":
            d = dump(init)
            out.append({"serverInfo": d.get("serverInfo"), "capabilities": d.get("capabilities")})
        elif op == "list":
            tools = (await session.list_tools()).tools
            out.append({"tools": [dump(t) for t in tools]})
        elif op == "call":
            out.append(await call(session, step))
        elif op == "notified":
            out.append(await notified(session, step))
        elif op == "asked":
            out.append(list(ASKED))
        elif op == "changed":
            out.append(await changed(step))
        elif op == "parallel":
            results = [None] * len(step["calls"])

            async def one(i, c):
                results[i] = await call(session, c)

            async with anyio.create_task_group() as tg:
                for i, c in enumerate(step["calls"]):
                    tg.start_soon(one, i, c)
            out.append(results)
        elif op == "cancel":
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, session, step)
                await wait_file(step["waitFile"])
                tg.cancel_scope.cancel()
            out.append({"cancelled": True})
        elif op == "vanish":
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, session, step)
                await wait_file(step["waitFile"])
                print(json.dumps(out), flush=True)
                os._exit(0)
        else:
            out.append(await other(session, step))


async def main():
    plan = json.loads(sys.argv[1])
    transport = sys.argv[2]
    out = []
    if transport == "http":
        async with http_client(sys.argv[3]) as streams:
            async with ClientSession(streams[0], streams[1], logging_callback=on_log, message_handler=on_message, **callbacks(plan)) as session:
                await run(session, plan, out)
    elif transport == "stdio":
        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], env=dict(os.environ))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1], logging_callback=on_log, message_handler=on_message, **callbacks(plan)) as session:
                await run(session, plan, out)
    else:
        raise ValueError(f"unknown transport {transport}")
    print(json.dumps(out), flush=True)


anyio.run(main)
