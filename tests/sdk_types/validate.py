"""Validates provider request bodies against the official SDKs' types.

stdin: one JSON object per line, {"style": "gemini"|"anthropic"|
"gemini_count"|"anthropic_count"|"responses_count", "body": {...}}.
Gemini bodies are checked piece by piece against google-genai's pydantic
types (which forbid unknown fields): every `contents` entry and the
`systemInstruction` as types.Content, every `tools` entry as types.Tool,
`toolConfig` as types.ToolConfig, `generationConfig` as
types.GenerationConfig, `safetySettings` entries as types.SafetySetting,
and no other top-level key. Anthropic bodies are checked against the
anthropic SDK's MessageCreateParams (streaming or not), with no top-level
key the type does not name. The token-counting bodies: Anthropic's
against MessageCountTokensParams the same way; Gemini's `countTokens`
body is one `generateContentRequest` whose `model` is `models/…` and
whose other keys are checked as a Gemini body's; the Responses
`input_tokens` body against the openai SDK's InputTokenCountParams (its
`input` items as ResponseInputItemParam, its tools as ToolParam). Prints
{"valid": N} or the first failure, and exits non-zero on a failure.
"""
import json
import sys
import typing

import pydantic
from google.genai import types as g
import anthropic.types as t
from anthropic.types import message_create_params as a
from anthropic.types import message_count_tokens_params as ac
from openai.types.responses import input_token_count_params as oc
from openai.types.responses import response_input_item_param as oi
from openai.types.responses import tool_param as ot

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


def check_gemini_count(body):
    if set(body) != {"generateContentRequest"}:
        raise ValueError(f"top-level keys {sorted(body)}, want only generateContentRequest")
    inner = dict(body["generateContentRequest"])
    model = inner.pop("model", None)
    if not isinstance(model, str) or not model.startswith("models/"):
        raise ValueError(f"generateContentRequest.model {model!r} is not models/...")
    if "generationConfig" in inner:
        raise ValueError("generationConfig in a count body")
    check_gemini(inner)


def check_responses_count(body):
    kind = oc.InputTokenCountParams
    extra = set(body) - set(typing.get_type_hints(kind).keys())
    if extra:
        raise ValueError(f"unknown top-level keys {sorted(extra)}")
    pydantic.TypeAdapter(kind).validate_python(body)
    item = pydantic.TypeAdapter(oi.ResponseInputItemParam)
    for i in body.get("input", []):
        item.validate_python(i)
    tool = pydantic.TypeAdapter(ot.ToolParam)
    for t_ in body.get("tools", []):
        # The SDK's FunctionToolParam marks `strict` Required (null
        # allowed); the responses dialect leaves it out unless the host's
        # declaration sets it (a choice of the dialect, not of the count
        # body), so a tool without it is checked with it null, every other
        # field as sent.
        if t_.get("type") == "function" and "strict" not in t_:
            t_ = {**t_, "strict": None}
        tool.validate_python(t_)


def check_anthropic_count(body):
    check_anthropic(body, ac.MessageCountTokensParams)


def check_anthropic(body, kind=None):
    if kind is None:
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
        {"gemini": check_gemini, "anthropic": check_anthropic,
         "gemini_count": check_gemini_count, "anthropic_count": check_anthropic_count,
         "responses_count": check_responses_count}[item["style"]](item["body"])
    except Exception as e:  # noqa: BLE001 - reported, then a failing exit
        print(json.dumps({"failed": n, "style": item["style"], "error": str(e)[:2000],
                          "body": item["body"]}))
        sys.exit(1)
    valid += 1
print(json.dumps({"valid": valid}))
