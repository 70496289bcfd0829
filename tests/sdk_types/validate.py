"""Validates provider request bodies against the official SDKs' types.

stdin: one JSON object per line, {"style": "gemini"|"anthropic", "body": {...}}.
Gemini bodies are checked piece by piece against google-genai's pydantic
types (which forbid unknown fields): every `contents` entry and the
`systemInstruction` as types.Content, every `tools` entry as types.Tool,
`toolConfig` as types.ToolConfig, `generationConfig` as
types.GenerationConfig, `safetySettings` entries as types.SafetySetting,
and no other top-level key. Anthropic bodies are checked against the
anthropic SDK's MessageCreateParams (streaming or not), with no top-level
key the type does not name. Prints {"valid": N} or the first failure, and
exits non-zero on a failure.
"""
import json
import sys
import typing

import pydantic
from google.genai import types as g
import anthropic.types as t
from anthropic.types import message_create_params as a

GEMINI = {
    "contents": lambda v: [g.Content.model_validate(c) for c in v],
    "systemInstruction": g.Content.model_validate,
    "tools": lambda v: [g.Tool.model_validate(t) for t in v],
    "toolConfig": g.ToolConfig.model_validate,
    "generationConfig": g.GenerationConfig.model_validate,
    "safetySettings": lambda v: [g.SafetySetting.model_validate(s) for s in v],
}


def check_gemini(body):
    for key, value in body.items():
        if key not in GEMINI:
            raise ValueError(f"unknown top-level key {key!r}")
        GEMINI[key](value)


BLOCK = pydantic.TypeAdapter(t.ContentBlockParam)
TEXT_BLOCK = pydantic.TypeAdapter(t.TextBlockParam)
TOOL = pydantic.TypeAdapter(a.ToolUnionParam)


def block(b):
    v = BLOCK.validate_python(b)
    # A tool_result's content list is validated as it is read.
    c = v.get("content") if isinstance(v, dict) else None
    if c is not None and not isinstance(c, str):
        list(c)


def check_anthropic(body):
    kind = a.MessageCreateParamsStreaming if body.get("stream") else a.MessageCreateParamsNonStreaming
    known = set(typing.get_type_hints(kind).keys())
    extra = set(body) - known
    if extra:
        raise ValueError(f"unknown top-level keys {sorted(extra)}")
    # The SDK's Iterable fields are validated lazily (and pydantic-core
    # cannot drain the recursive ones), so the lists are checked item by item.
    pydantic.TypeAdapter(kind).validate_python(body)
    for m in body["messages"]:
        if set(m) - {"role", "content"} or m.get("role") not in ("user", "assistant"):
            raise ValueError(f"bad message {m!r}")
        if not isinstance(m["content"], str):
            for b in m["content"]:
                block(b)
    if isinstance(body.get("system"), list):
        for b in body["system"]:
            TEXT_BLOCK.validate_python(b)
    for tool in body.get("tools", []):
        TOOL.validate_python(tool)


valid = 0
for n, line in enumerate(sys.stdin):
    if not line.strip():
        continue
    item = json.loads(line)
    try:
        {"gemini": check_gemini, "anthropic": check_anthropic}[item["style"]](item["body"])
    except Exception as e:  # noqa: BLE001 - reported, then a failing exit
        print(json.dumps({"failed": n, "style": item["style"], "error": str(e)[:2000],
                          "body": item["body"]}))
        sys.exit(1)
    valid += 1
print(json.dumps({"valid": valid}))
