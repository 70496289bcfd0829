"""Consumes a chat-completions stream with the official openai SDK.

argv[1] is the base URL of a gateway that answers every chat request with
tn_translate_stream's output. Prints one JSON object: what stream=True gave
(chunk ids, roles, content, reasoning, tool calls accumulated by index,
every finish_reason seen, usage) and what the SDK's own accumulating
helper, client.chat.completions.stream(), made of the same stream.
"""
import json
import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="not-used", max_retries=0)
messages = [{"role": "user", "content": "go"}]

raw = {"ids": [], "roles": [], "content": "", "reasoning": "", "calls": {},
       "finish": [], "usage": None, "chunks": 0}
stream = client.chat.completions.create(
    model="m", messages=messages, stream=True, stream_options={"include_usage": True})
for chunk in stream:
    raw["chunks"] += 1
    raw["ids"].append(chunk.id)
    if chunk.usage is not None:
        raw["usage"] = chunk.usage.model_dump(exclude_none=True)
    for choice in chunk.choices:
        d = choice.delta
        if d.role:
            raw["roles"].append(d.role)
        if d.content:
            raw["content"] += d.content
        reasoning = getattr(d, "reasoning_content", None)
        if reasoning:
            raw["reasoning"] += reasoning
        for tc in d.tool_calls or []:
            slot = raw["calls"].setdefault(str(tc.index), {"id": None, "name": "", "arguments": "", "extra": None})
            if tc.id:
                slot["id"] = tc.id
            if tc.function and tc.function.name:
                slot["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
            extra = getattr(tc, "extra_content", None)
            if extra:
                slot["extra"] = extra
        raw["finish"].append(choice.finish_reason)

helper = {}
with client.chat.completions.stream(model="m", messages=messages) as s:
    for _ in s:
        pass
    final = s.get_final_completion()
message = final.choices[0].message
helper["id"] = final.id
helper["content"] = message.content
helper["finish"] = final.choices[0].finish_reason
helper["calls"] = [
    {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
    for c in (message.tool_calls or [])
]
print(json.dumps({"raw": raw, "helper": helper}))
