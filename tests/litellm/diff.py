"""LiteLLM as a differential reference for translate's provider bodies
(issue 29; run by tests/litellm_diff.rs).

    python3 tests/litellm/diff.py OURS.json OUT.json

OURS.json is `{"anthropic": {id: body}, "gemini": {id: body}}`, the bodies
toolnexus's `provider_body` built for each request of
tests/litellm/requests.json. For the same requests this script asks the
pinned LiteLLM (tests/requirements.txt) what it would send, through
`litellm.utils.return_raw_request`: LiteLLM's own `completion()` path
(parameter mapping, then `AnthropicConfig.transform_request` or the
Gemini `transform_request_body`) stopped just before the HTTP call. Both
bodies are normalised (below) and compared field by field; every
difference goes to OUT.json as `{"id", "style", "path", "ours"?,
"theirs"?}` (a side without the field has no key). The Rust test matches
them against tests/litellm/accepted.json.

Without LiteLLM installed it prints `SKIPPED: litellm not installed` and
exits 0 (the test then passes).

The models: `anthropic/claude-sonnet-4-5` and `gemini/gemini-2.5-flash`
(LiteLLM's choices, such as its default `max_tokens`, come from its cost
map entry for them; ours are the same model names).

LiteLLM never touches the network here: the local model cost map
(LITELLM_LOCAL_MODEL_COST_MAP=True; without it LiteLLM fetches the map at
import), telemetry off, and every socket connect and DNS lookup of this
process refused, so a raw request that would need one fails and shows up
as a difference. The one fetch the corpus asks for, LiteLLM's Gemini path
downloading the https image of `image-https-url` to inline it, is
answered from LiteLLM's own image cache, filled beforehand with the 1x1
PNG the data: URL requests carry.

Normalisation: what the provider's documentation defines as the same
request written two ways, applied to both sides alike:
- Anthropic (https://docs.anthropic.com/en/api/messages): `system` as a
  string is one text block; a message's or a `tool_result`'s `content`
  string is one text block; a tool's `type: "custom"` is the default type
  of a client tool and is dropped.
- Gemini (https://ai.google.dev/api/generate-content, proto3 JSON mapping
  https://protobuf.dev/programming-guides/json/: "parsers accept both the
  lowerCamelCase name and the original proto field name"): field names in
  snake_case become lowerCamelCase (`system_instruction` →
  `systemInstruction`, `function_declarations` → `functionDeclarations`,
  `max_output_tokens` → `maxOutputTokens`), except inside user data
  (`functionCall.args`, `functionResponse.response` and a schema's
  `properties`, whose keys are names, not fields).
"""

import json
import os
import sys

MODELS = {"anthropic": "anthropic/claude-sonnet-4-5", "gemini": "gemini/gemini-2.5-flash"}
IMAGE_URL = "https://example.com/cat.png"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
HERE = os.path.dirname(os.path.abspath(__file__))


def no_network():
    """Refuses every connect and name lookup of this process."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("tests/litellm/diff.py: no network for LiteLLM")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def import_litellm():
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    no_network()
    try:
        import litellm  # noqa: F401
    except ImportError:
        return None
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # An https image is fetched and inlined by LiteLLM's Gemini path: its
    # own image cache answers for the corpus's one URL instead (the 1x1 PNG
    # of the data: URL requests), as if it had been fetched before.
    from litellm.litellm_core_utils.prompt_templates import image_handling

    image_handling.in_memory_cache.set_cache(IMAGE_URL, "data:image/png;base64," + PNG, ttl=3600)
    return litellm


def theirs(litellm, style, request):
    """LiteLLM's body for `request` sent to `style`, or `{"litellmError": …}`."""
    from litellm.types.utils import CallTypes
    from litellm.utils import return_raw_request

    kwargs = json.loads(json.dumps(request))
    kwargs["model"] = MODELS[style]
    raw = return_raw_request(CallTypes.completion, kwargs)
    body = raw.get("raw_request_body")
    if body is None:
        return {"litellmError": str(raw.get("error"))[:300]}
    return json.loads(json.dumps(body))


# --------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------


def text_blocks(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content


def norm_anthropic(body):
    if not isinstance(body, dict):
        return body
    body = dict(body)
    if "system" in body:
        body["system"] = text_blocks(body["system"])
    messages = []
    for m in body.get("messages", []):
        m = dict(m)
        m["content"] = text_blocks(m.get("content"))
        if isinstance(m["content"], list):
            blocks = []
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result" and "content" in b:
                    b = dict(b, content=text_blocks(b["content"]))
                blocks.append(b)
            m["content"] = blocks
        messages.append(m)
    if "messages" in body:
        body["messages"] = messages
    if "tools" in body:
        body["tools"] = [
            {k: v for k, v in t.items() if not (k == "type" and v == "custom")} for t in body["tools"]
        ]
    return body


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def norm_gemini(v):
    if isinstance(v, list):
        return [norm_gemini(x) for x in v]
    if not isinstance(v, dict):
        return v
    out = {}
    for k, x in v.items():
        k = k if k.startswith("$") else camel(k)
        if k in ("args", "response"):
            out[k] = x  # user data, as given
        elif k == "properties" and isinstance(x, dict):
            out[k] = {name: norm_gemini(s) for name, s in x.items()}  # names as given
        else:
            out[k] = norm_gemini(x)
    return out


NORMALISE = {"anthropic": norm_anthropic, "gemini": norm_gemini}

# --------------------------------------------------------------------------
# the field-by-field comparison
# --------------------------------------------------------------------------


def pointer(path, key):
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def compare(path, ours, theirs, out, have_ours=True, have_theirs=True):
    if have_ours and have_theirs:
        if isinstance(ours, dict) and isinstance(theirs, dict):
            for k in list(ours) + [k for k in theirs if k not in ours]:
                compare(pointer(path, k), ours.get(k), theirs.get(k), out, k in ours, k in theirs)
            return
        if isinstance(ours, list) and isinstance(theirs, list):
            for i in range(max(len(ours), len(theirs))):
                compare(pointer(path, i), ours[i] if i < len(ours) else None,
                        theirs[i] if i < len(theirs) else None, out, i < len(ours), i < len(theirs))
            return
        if ours == theirs and type(ours) is type(theirs):
            return
        if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and ours == theirs \
                and not isinstance(ours, bool) and not isinstance(theirs, bool):
            return
    d = {"path": path or "/"}
    if have_ours:
        d["ours"] = ours
    if have_theirs:
        d["theirs"] = theirs
    out.append(d)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    litellm = import_litellm()
    if litellm is None:
        print("SKIPPED: litellm not installed")
        return
    with open(sys.argv[1]) as f:
        ours = json.load(f)
    with open(os.path.join(HERE, "requests.json")) as f:
        requests = json.load(f)["requests"]
    diffs = []
    for style in ("anthropic", "gemini"):
        for r in requests:
            mine = NORMALISE[style](ours[style][r["id"]])
            other = NORMALISE[style](theirs(litellm, style, r["request"]))
            found = []
            compare("", mine, other, found)
            diffs += [dict(id=r["id"], style=style, **d) for d in found]
    with open(sys.argv[2], "w") as f:
        json.dump(diffs, f, indent=1, ensure_ascii=False)
    print(f"litellm {litellm_version()}: {len(requests)} requests x 2 styles, {len(diffs)} differences")


def litellm_version():
    from importlib.metadata import version

    return version("litellm")


if __name__ == "__main__":
    main()
