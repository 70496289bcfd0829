"""The client loop (SPEC §8, §10) over ``tn_client_*``, ``tn_run``,
``tn_run_resume``, ``tn_ask``, ``tn_stream`` and ``tn_client_metrics``.

    with tn.Client({"baseUrl": url, "style": "openai", "model": "gpt-4o-mini"},
                   wait_for=lambda req: tn.answer_output(req.id, "Ada")) as client:
        result = client.run(tk, "Ask me my name, then greet me.")
        print(result.text, result.status)

Every callback (``wait_for``, the hooks, ``on_error``, ``on_metric``, a
store, an in-process ``generate``) may be called on any thread, and
concurrently (the tool calls of one turn run in parallel). An exception it
raises never crosses into the library: it becomes the callback's error,
which ends the run with :class:`CallbackError` whose ``__cause__`` is the
exception (``on_metric``'s are ignored: observing never fails a run).
"""
from __future__ import annotations

import asyncio
import ctypes
import itertools
import json
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterator, Optional, Protocol, Union

from . import _mainthread, _native
from . import (
    CancelToken,
    Toolkit,
    ToolnexusError,
    ToolResult,
    _error,
    _off_loop_cancellable,
    _text_arg,
    helper,
)
from . import TimeoutError as _TimeoutError

__all__ = [
    "Answer",
    "Client",
    "ConversationStore",
    "HTTPRequest",
    "HTTPResponse",
    "Hooks",
    "InMemoryStore",
    "Request",
    "RunResult",
    "ToolCall",
    "Usage",
    "answer_declined",
    "answer_output",
]

_TN_CANCELLED = 9
_TN_CALLBACK_ERROR = 11


# ---------------------------------------------------------------- values
@dataclass
class Request:
    """A suspension's question (SPEC §10). ``raw`` is the Request exactly as
    the library sent it (what :meth:`Client.resume` hands back)."""

    id: str
    kind: str
    prompt: str
    url: Optional[str] = None
    data: Any = None
    expires_at: Optional[str] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    #: For a toolkit's ``wait_for`` (MCP elicitation): true once nobody
    #: waits for the answer any more. Always false elsewhere.
    abandoned: Callable[[], bool] = field(default=lambda: False, repr=False, compare=False)

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> "Request":
        return cls(
            id=str(v.get("id", "")),
            kind=str(v.get("kind", "")),
            prompt=str(v.get("prompt", "")),
            url=v.get("url"),
            data=v.get("data"),
            expires_at=v.get("expiresAt"),
            raw=dict(v),
        )

    def to_json(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = self.data
        if self.expires_at is not None:
            out["expiresAt"] = self.expires_at
        return out


@dataclass
class Answer:
    """The host's resolution of a :class:`Request` (SPEC §10). ``id`` must
    echo the Request's (left empty, the Request's is used); ``reason``
    (``declined``, ``cancelled``, ``expired``) only when ``ok`` is false."""

    id: str
    ok: bool
    data: Any = None
    reason: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "ok": bool(self.ok)}
        if self.data is not None:
            out["data"] = self.data
        if not self.ok and self.reason:
            out["reason"] = self.reason
        return out


def answer_output(id: str, output: str) -> Answer:  # noqa: A002 — the Request's id
    """The Answer that supplies ``output`` as the result of Request ``id``
    (data ``{"output": output}``, the spelling the library reads)."""
    if not isinstance(output, str):
        raise TypeError(f"answer_output: output must be a str, got {type(output).__name__}")
    return Answer(id=id, ok=True, data={"output": output})


def answer_declined(id: str, reason: str = "declined") -> Answer:  # noqa: A002
    """The Answer that refuses Request ``id``: ``reason`` is ``declined``,
    ``cancelled`` or ``expired`` (anything else is an
    :class:`InvalidArgumentError`)."""
    v = helper("answerDeclined", [id, reason])
    return Answer(id=str(v["id"]), ok=False, reason=str(v.get("reason") or reason))


#: The Request kind of a relay tool's call.
RELAY_KIND = "tool_call"


def relay_calls_of(request: Union[Request, dict, None]) -> list[dict[str, Any]]:
    """The calls a relay Request (kind ``"tool_call"``) carries, in call
    order: ``[{"id", "name", "input", "arguments"}]`` (``id`` the provider's
    call id, ``arguments`` the model's raw JSON text). ``[]`` for any other
    Request."""
    if request is None:
        return []
    r = request.to_json() if isinstance(request, Request) else request
    if r.get("kind") != RELAY_KIND or not isinstance(r.get("data"), dict):
        return []
    calls = r["data"].get("calls")
    return [dict(c) for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def relay_answer(request_id: str, results: Any) -> Answer:
    """The Answer to a relay Request giving one result per call, for
    :meth:`Client.run_with_answer`: ``results`` is a list of
    ``{"id", "output", "isError"?}`` or a ``{call id: output}`` dict."""
    if isinstance(results, dict):
        items = [{"id": k, "output": v, "isError": False} for k, v in results.items()]
    else:
        items = [
            {"id": str(r["id"]), "output": r["output"], "isError": bool(r.get("isError", False))}
            for r in results
        ]
    for r in items:
        if not isinstance(r["output"], str):
            raise TypeError(f"relay_answer: output of {r['id']} must be a str, got {type(r['output']).__name__}")
    return Answer(id=request_id, ok=True, data={"results": items})


def _answer_json(answer: Any, request_id: str, what: str) -> dict[str, Any]:
    if isinstance(answer, Answer):
        out = answer.to_json()
    elif isinstance(answer, dict):
        out = dict(answer)
    else:
        raise TypeError(f"{what} must be an Answer or an Answer dict {{id, ok, data?, reason?}}, "
                        f"got {type(answer).__name__}")
    if not out.get("id"):
        out["id"] = request_id
    return out


@dataclass
class ToolCall:
    """One executed call of a run."""

    name: str
    args: Any
    output: str
    is_error: bool
    metadata: Optional[dict[str, Any]] = None


@dataclass
class Usage:
    """Token usage summed over a run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass
class RunResult:
    """The outcome of a run (SPEC §8, §10). ``messages`` is the whole
    transcript in the provider's shape (pass it back as ``history``);
    ``status`` is ``done``, ``pending`` (``pending`` holds the Request) or
    ``incomplete`` (``limit`` says which). ``raw`` is the RunResult JSON as
    the library gave it."""

    text: str
    messages: list[Any]
    tool_calls: list[ToolCall]
    tool_call_count: int
    turns: int
    usage: Usage
    model: str
    status: str
    limit: Optional[str] = None
    pending: Optional[Request] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> "RunResult":
        u = v.get("usage") or {}
        return cls(
            text=v.get("text") or "",
            messages=list(v.get("messages") or []),
            tool_calls=[
                ToolCall(
                    name=c.get("name", ""),
                    args=c.get("args"),
                    output=c.get("output", ""),
                    is_error=bool(c.get("isError", False)),
                    metadata=c.get("metadata"),
                )
                for c in v.get("toolCalls") or []
            ],
            tool_call_count=int(v.get("toolCallCount") or 0),
            turns=int(v.get("turns") or 0),
            usage=Usage(
                int(u.get("promptTokens") or 0), int(u.get("completionTokens") or 0), int(u.get("totalTokens") or 0)
            ),
            model=v.get("model") or "",
            status=v.get("status") or "",
            limit=v.get("limit"),
            pending=Request.from_json(v["pending"]) if isinstance(v.get("pending"), dict) else None,
            raw=v,
        )

    def to_json(self) -> dict[str, Any]:
        return self.raw


@dataclass
class Hooks:
    """The SPEC §8 hooks, each a callable taking the event dict (or None):

    - ``before_llm({messages, tools, model, turn})`` → ``None`` or
      ``{"messages"?, "tools"?}`` (replacements for the rest of the run)
    - ``after_llm({response, model, turn})`` → observes
    - ``before_tool({name, args, id, turn})`` → ``None``, a
      :class:`ToolResult` (or ``{"result": ...}``: the tool never runs; a
      result with ``metadata["pending"]`` is a suspension) or ``{"args": ...}``
    - ``after_tool({name, args, result, id, turn})`` → ``None`` or the
      replacement result (a :class:`ToolResult`, its dict, or text)
    - ``on_error({status?, error, attempt, retryable})`` → ``None`` (the
      default policy), ``"retry"`` or ``"fail"``, bounded by ``retries``
    - ``on_metric({event: llm|tool|run, ...})`` → observes
    """

    before_llm: Optional[Callable[[dict[str, Any]], Any]] = None
    after_llm: Optional[Callable[[dict[str, Any]], Any]] = None
    before_tool: Optional[Callable[[dict[str, Any]], Any]] = None
    after_tool: Optional[Callable[[dict[str, Any]], Any]] = None
    on_error: Optional[Callable[[dict[str, Any]], Any]] = None
    on_metric: Optional[Callable[[dict[str, Any]], Any]] = None


_HOOK_SLOTS = {
    "before_llm": "beforeLLM",
    "after_llm": "afterLLM",
    "before_tool": "beforeTool",
    "after_tool": "afterTool",
    "on_error": "onError",
    "on_metric": "onMetric",
}


def _hooks_of(hooks: Union[Hooks, dict, None]) -> dict[str, Callable[[Any], Any]]:
    """The slot name → callable of a Hooks, or of a dict keyed by either
    spelling (``before_tool`` or ``beforeTool``)."""
    if hooks is None:
        return {}
    if isinstance(hooks, Hooks):
        items = {k: getattr(hooks, k) for k in _HOOK_SLOTS}
    elif isinstance(hooks, dict):
        items = dict(hooks)
    else:
        raise TypeError(f"hooks must be a Hooks or a dict, got {type(hooks).__name__}")
    by_slot = {v: v for v in _HOOK_SLOTS.values()}
    by_slot.update(_HOOK_SLOTS)
    out: dict[str, Callable[[Any], Any]] = {}
    for k, fn in items.items():
        slot = by_slot.get(k)
        if slot is None:
            known = ", ".join(_HOOK_SLOTS)
            raise ValueError(f"hooks: unknown hook {k!r} (known: {known}, or their camelCase names)")
        if fn is None:
            continue
        if not callable(fn):
            raise TypeError(f"hooks: {k} must be callable, got {type(fn).__name__}")
        out[slot] = _ADAPT[slot](fn)
    return out


def _result_json(v: Any, what: str) -> dict[str, Any]:
    if isinstance(v, ToolResult):
        return v.to_json()
    if isinstance(v, str):
        return {"output": v, "isError": False}
    if isinstance(v, dict):
        return v
    raise TypeError(f"{what} must be a ToolResult, its dict or a str, got {type(v).__name__}")


def _adapt_before_llm(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return fn


def _adapt_observer(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def observe(ev: Any) -> None:
        fn(ev)
        return None

    return observe


def _adapt_before_tool(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def before(ev: Any) -> Any:
        r = fn(ev)
        if r is None:
            return None
        if isinstance(r, ToolResult):
            return {"result": r.to_json()}
        if isinstance(r, dict) and "result" in r and r["result"] is not None:
            return {**r, "result": _result_json(r["result"], "before_tool's result")}
        return r

    return before


def _adapt_after_tool(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def after(ev: Any) -> Any:
        r = fn(ev)
        if r is None:
            return None
        if isinstance(r, dict) and "result" in r and "output" not in r:
            return {"result": _result_json(r["result"], "after_tool's result") if r["result"] is not None else None}
        return {"result": _result_json(r, "after_tool's answer")}

    return after


def _adapt_on_error(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def classify(ev: Any) -> Any:
        r = fn(ev)
        if r is None or r == "":
            return None
        if r not in ("retry", "fail"):
            raise ValueError(f"on_error must return 'retry', 'fail' or None, got {r!r}")
        return r

    return classify


def _adapt_on_metric(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return _adapt_observer(fn)


_ADAPT: dict[str, Callable[[Callable[[Any], Any]], Callable[[Any], Any]]] = {
    "beforeLLM": _adapt_before_llm,
    "afterLLM": _adapt_observer,
    "beforeTool": _adapt_before_tool,
    "afterTool": _adapt_after_tool,
    "onError": _adapt_on_error,
    "onMetric": _adapt_on_metric,
}


def _adapt_wait_for(fn: Callable[[Request], Any]) -> Callable[[Any], Any]:
    def wait(ev: Any) -> Any:
        req = Request.from_json(ev if isinstance(ev, dict) else {})
        answer = fn(req)
        if answer is None:
            raise TypeError("wait_for returned None; it must return an Answer (answer_output, answer_declined)")
        return _answer_json(answer, req.id, "wait_for's answer")

    return wait


def _adapt_generate(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Any]:
    def generate(ev: Any) -> Any:
        r = fn(ev)
        if isinstance(r, str):
            return {"content": r}
        if not isinstance(r, dict):
            raise TypeError(
                "generate must return the assistant message: a str, {'content': ...} or {'toolCalls': [...]}, "
                f"got {type(r).__name__}"
            )
        return r

    return generate


# The most of an answer HTTPRequest.send reads: the library's own cap on a
# provider's answer (src/limits.rs RESPONSE_BODY_BYTES).
_MAX_HTTP_RESPONSE_BYTES = 64 << 20


@dataclass
class HTTPResponse:
    """What the provider answered an :class:`HTTPRequest`, read as the
    library reads a socket's answer: a 429 or 5xx ``status`` is retried
    within the client's ``retries`` (a ``Retry-After`` header honoured),
    any other error status is the run's :class:`ProviderError`, and a 2xx
    ``body`` is the provider's answer in the client's style (for a streamed
    request its whole server-sent-events text). ``body`` is text, bytes
    (read as UTF-8) or a JSON value (sent on as its text); ``status`` must
    be 100 to 599."""

    status: int
    body: Any = ""
    headers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        body = self.body
        if isinstance(body, (bytes, bytearray)):
            body = bytes(body).decode("utf-8", errors="replace")
        out: dict[str, Any] = {"status": self.status, "body": body}
        if self.headers:
            out["headers"] = dict(self.headers)
        return out


@dataclass
class HTTPRequest:
    """One LLM call a run would make (the ``httpClient`` slot's event, SPEC
    §8 Gap 2): a POST of ``body``, the request's JSON text, to ``url`` with
    ``headers`` (lower-case names; the client's credentials among them).
    ``stream`` is true for a streamed run, whose answer is the provider's
    whole server-sent-events text. ``raw`` is the event as the library sent
    it. :meth:`send` makes it with ``urllib``; change a copy first
    (``dataclasses.replace``) to send it elsewhere."""

    method: str
    url: str
    headers: dict[str, str]
    body: str
    stream: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> "HTTPRequest":
        return cls(
            method=v.get("method") or "POST",
            url=v.get("url") or "",
            headers={str(k): str(x) for k, x in (v.get("headers") or {}).items()},
            body=v.get("body") or "",
            stream=bool(v.get("stream")),
            raw=v,
        )

    def json(self) -> Any:
        """The body, parsed."""
        return json.loads(self.body)

    def send(self, timeout: Optional[float] = None, opener: Any = None) -> HTTPResponse:
        """Makes the request with ``urllib.request`` (``opener``: an
        ``OpenerDirector`` to use instead of ``urlopen``'s, e.g. one without
        the environment's proxies) and gives the answer: every status is an
        answer (the library decides what an error status means); a header
        sent several times is joined with ``", "``. An answer past 64 MiB,
        the library's cap, raises ``ValueError``."""
        import urllib.error
        import urllib.request

        req = urllib.request.Request(
            self.url, data=self.body.encode("utf-8"), headers=dict(self.headers), method=self.method or "POST"
        )
        open_ = opener.open if opener is not None else urllib.request.urlopen
        try:
            resp = open_(req, timeout=timeout) if timeout is not None else open_(req)
        except urllib.error.HTTPError as e:
            resp = e
        with resp:
            body = resp.read(_MAX_HTTP_RESPONSE_BYTES + 1)
            if len(body) > _MAX_HTTP_RESPONSE_BYTES:
                raise ValueError(f"{self.url} answered more than {_MAX_HTTP_RESPONSE_BYTES >> 20} MiB")
            headers = {k: ", ".join(resp.headers.get_all(k) or []) for k in dict.fromkeys(resp.headers.keys())}
            return HTTPResponse(status=resp.status if hasattr(resp, "status") else resp.code, body=body,
                                headers=headers)


def _adapt_http_client(fn: Callable[[HTTPRequest], Any]) -> Callable[[Any], Any]:
    def transport(ev: Any) -> Any:
        r = fn(HTTPRequest.from_json(ev if isinstance(ev, dict) else {}))
        if isinstance(r, HTTPResponse):
            return r.to_json()
        if isinstance(r, dict):
            return r
        raise TypeError(
            f"http_client must return an HTTPResponse or a {{status, headers?, body}} dict, got {type(r).__name__}"
        )

    return transport


class ConversationStore(Protocol):
    """Where :meth:`Client.ask` keeps conversations: ``get`` gives the
    messages saved under ``id`` (``None`` for an id never saved)."""

    def get(self, id: str) -> Optional[list[Any]]: ...  # noqa: A002

    def save(self, id: str, messages: list[Any]) -> None: ...  # noqa: A002


class InMemoryStore:
    """The default :class:`ConversationStore`: a dict, for the client's life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, list[Any]] = {}

    def get(self, id: str) -> Optional[list[Any]]:  # noqa: A002
        with self._lock:
            got = self._data.get(id)
            return list(got) if got is not None else None

    def save(self, id: str, messages: list[Any]) -> None:  # noqa: A002
        with self._lock:
            self._data[id] = list(messages)


def _names_a_store(config: Union[dict, str, None]) -> bool:
    """Whether a client config has a ``"store"`` selector of its own."""
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            return False
    return isinstance(config, dict) and config.get("store") not in (None, "", "memory")


def _store_slots(store: ConversationStore) -> dict[str, Callable[[Any], Any]]:
    def get(ev: Any) -> Any:
        return store.get(str((ev or {}).get("id", "")))

    def save(ev: Any) -> None:
        ev = ev or {}
        store.save(str(ev.get("id", "")), list(ev.get("messages") or []))
        return None

    return {"storeGet": get, "storeSave": save}


# ---------------------------------------------------------------- runs
class _Run:
    """One call's state, found by the callbacks through its run_data: the
    slots it overrides, its stream sink, the first exception raised."""

    def __init__(self, slots: dict[str, Callable[[Any], Any]]) -> None:
        self.slots = slots
        self.error: Optional[BaseException] = None
        self._lock = threading.Lock()

    def fail(self, e: BaseException) -> None:
        with self._lock:
            if self.error is None:
                self.error = e


_RUNS: dict[int, _Run] = {}
_RUN_IDS = itertools.count(1)


class _StreamStopped(Exception):
    def __str__(self) -> str:
        return "the stream's consumer stopped"


def _message(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class _Core:
    """The native client and what its callbacks reach. Apart from
    :class:`Client` so that the callbacks never keep the Client alive."""

    def __init__(self, lib: ctypes.CDLL, defaults: dict[str, Callable[[Any], Any]]) -> None:
        self.lib = lib
        self.defaults = defaults
        self.ptr: Optional[int] = None
        # ctypes callback objects: alive until tn_client_free has returned.
        self.callbacks: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.in_flight = 0
        self.closing = False

    def trampoline(self, slot: str) -> Any:
        lib, defaults = self.lib, self.defaults

        def callback(_user_data: Any, event: Optional[bytes], reply: int) -> None:
            # Nothing may raise through the C frames below.
            run: Optional[_Run] = None
            try:
                run = _RUNS.get(lib.tn_reply_run_data(reply) or 0)
                fn = run.slots.get(slot) if run is not None else None
                if fn is None:
                    fn = defaults.get(slot)
                if fn is None:
                    return
                ev = json.loads(event.decode("utf-8")) if event else None
                answer = fn(ev)
                if answer is None:
                    return
                text = json.dumps(answer, ensure_ascii=False)
                if lib.tn_reply_set_json(reply, _text_arg(text)) != 0:
                    raise ValueError(f"the {slot} answer is not JSON the library reads: {text[:200]}")
            except BaseException as e:  # noqa: BLE001 — a callback's failure is the run's error
                if run is not None and slot != "onMetric":
                    run.fail(e)
                try:
                    lib.tn_reply_set_error(reply, _text_arg(_message(e)))
                except BaseException:  # noqa: BLE001
                    pass

        return _native.callback(_native.CLIENT_CALLBACK, callback)

    def register(self, slot: str) -> None:
        """Puts this slot's trampoline on the native client (once)."""
        with self.lock:
            if slot in self.callbacks or self.ptr is None:
                return
            cb = self.trampoline(slot)
            err = ctypes.c_void_p()
            status = self.lib.tn_client_set_callback(
                self.ptr, slot.encode("utf-8"), cb, None, None, ctypes.byref(err)
            )
            text = _native.take(self.lib, err)
            if status != 0:
                raise _error(status, text)
            self.callbacks[slot] = cb

    def acquire(self) -> int:
        with self.lock:
            if self.closing or not self.ptr:
                raise ToolnexusError("invalid_argument", 5, "the client is closed")
            self.in_flight += 1
            return self.ptr

    def release(self) -> None:
        with self.lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.notify_all()

    def free(self, wait: bool = True) -> None:
        """Frees the native client once no run uses it. ``wait=False`` (a
        finalizer, perhaps at interpreter exit with a daemon thread frozen
        in a run) leaves a client that is still in use alone instead."""
        with self.lock:
            self.closing = True
            if not wait and self.in_flight > 0:
                return
            while self.in_flight > 0:
                self.idle.wait()
            ptr, self.ptr = self.ptr, None
        if ptr:
            self.lib.tn_client_free(ptr)
        # A new dict, not the old one emptied: a server still holding the
        # native client keeps the old one (serve.py).
        self.callbacks = {}


def _history_of(history: Any) -> Any:
    if isinstance(history, RunResult):
        return history.messages
    if isinstance(history, str):
        return json.loads(history)
    return history


class Client:
    """A client of the SPEC §8 loop, built once and shared by many threads
    and runs. ``config`` is the client JSON (a dict or its text): the
    translate keys (``baseUrl``, ``style``, ``model``, ``apiKey``,
    ``headers``, ``systemPrompt``, ``retries``, ``retryBaseMs``,
    ``timeoutMs`` — the whole run —, ``requestParams``, or ``upstreams``
    for ordered failover, docs/providers.md) plus ``maxTurns``.

    - ``wait_for(Request) -> Answer`` resolves suspensions inline; without
      one a suspension halts the run with ``status == "pending"``.
    - ``hooks``: a :class:`Hooks` (or a dict of the same callables);
      ``on_error`` and ``on_metric`` may also be given on their own.
    - ``store``: where :meth:`ask` keeps conversations (default in memory,
      or, when ``config`` has a ``"store"`` key — a store selector such as
      ``"sqlite:<path>"`` or ``"host:<name>"`` for a store registered with
      :func:`register_store` —, that store; :attr:`store` is then ``None``).
    - ``generate``: an in-process model instead of an HTTP endpoint
      (``tn_client_new_in_process``): called once per turn with ``{model,
      messages, tools, turn, params?}`` (OpenAI-shaped), it returns the
      assistant message — text, ``{"content": ...}`` or ``{"toolCalls":
      [{"id"?, "name", "arguments"}]}``, with an optional ``"usage"``.
      ``config`` then holds only ``model``, ``systemPrompt``, ``maxTurns``,
      ``retries``, ``timeoutMs``, ``requestParams``.
    - ``http_client(HTTPRequest) -> HTTPResponse`` makes the runs' LLM
      calls in the library's stead (the ``httpClient`` slot, SPEC §8 Gap 2;
      docs/client-loop.md, "Request transforms"): it may send the request
      anywhere (:meth:`HTTPRequest.send` is ``urllib``) or answer it
      itself; it is called once per attempt, and an exception ends the run
      with :class:`CallbackError`. MCP servers and HTTP tools keep their own
      transport.
    - :meth:`Client.acp` builds a client whose model is an ACP agent (a
      child process over stdio) instead.

    A call made on the main thread runs on a helper thread while the main
    thread waits, so that Ctrl-C cancels the run (its tools included) and
    raises ``KeyboardInterrupt`` once it has ended.

    Use it as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        config: Union[dict, str, None] = None,
        *,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
        on_error: Optional[Callable[[dict[str, Any]], Any]] = None,
        on_metric: Optional[Callable[[dict[str, Any]], Any]] = None,
        store: Optional[ConversationStore] = None,
        generate: Optional[Callable[[dict[str, Any]], Any]] = None,
        http_client: Optional[Callable[[HTTPRequest], Any]] = None,
    ) -> None:
        self._open(config, wait_for, hooks, on_error, on_metric, store, generate, acp=False, http_client=http_client)

    @classmethod
    def acp(
        cls,
        config: Union[dict, str],
        *,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
        on_error: Optional[Callable[[dict[str, Any]], Any]] = None,
        on_metric: Optional[Callable[[dict[str, Any]], Any]] = None,
        store: Optional[ConversationStore] = None,
    ) -> "Client":
        """A client whose model is an Agent Client Protocol agent, a child
        process spoken to in JSON-RPC over its stdin and stdout
        (``tn_client_new_acp``; docs/client-loop.md, "ACP agents as
        models"). ``config`` is ``{command, args?, cwd?, env?,
        protocolVersion?, permissionTimeoutMs?, mode?, model?, systemPrompt?,
        maxTurns?}`` (docs/config.md); the agent is started and its session
        opened here. An unknown key or a value of the wrong type raises
        :class:`InvalidConfigError`; an agent that cannot start or fails the
        handshake :class:`ProviderError` (:class:`TimeoutError` when a
        handshake call takes too long). Each turn of a run is one prompt on
        that session; :meth:`stream` is refused. :meth:`close` ends the
        agent. The keyword arguments are :class:`Client`'s (but
        ``generate`` and ``http_client``: an agent is neither)."""
        client = cls.__new__(cls)
        client._open(config, wait_for, hooks, on_error, on_metric, store, None, acp=True)
        return client

    def _open(
        self,
        config: Union[dict, str, None],
        wait_for: Optional[Callable[[Request], Any]],
        hooks: Union[Hooks, dict, None],
        on_error: Optional[Callable[[dict[str, Any]], Any]],
        on_metric: Optional[Callable[[dict[str, Any]], Any]],
        store: Optional[ConversationStore],
        generate: Optional[Callable[[dict[str, Any]], Any]],
        *,
        acp: bool,
        http_client: Optional[Callable[[HTTPRequest], Any]] = None,
    ) -> None:
        lib = _native.load()
        defaults = _hooks_of(hooks)
        if http_client is not None:
            if generate is not None:
                raise ValueError("http_client does not apply to an in-process client (generate): it makes no HTTP call")
            if not callable(http_client):
                raise TypeError(f"http_client must be callable, got {type(http_client).__name__}")
            defaults["httpClient"] = _adapt_http_client(http_client)
        if on_error is not None:
            defaults["onError"] = _adapt_on_error(on_error)
        if on_metric is not None:
            defaults["onMetric"] = _adapt_on_metric(on_metric)
        if wait_for is not None:
            defaults["waitFor"] = _adapt_wait_for(wait_for)
        # A "store" key in the config (a selector: "sqlite:<path>",
        # "host:<name>", ...) names the store the library keeps ask's
        # conversations in; a Python store would take its place, so there is
        # none unless one is given.
        self.store: Optional[ConversationStore] = store
        if store is None and not _names_a_store(config):
            self.store = InMemoryStore()
        if self.store is not None:
            defaults.update(_store_slots(self.store))
        if generate is not None:
            defaults["generate"] = _adapt_generate(generate)
        core = _Core(lib, defaults)
        cfg = _native.cstr(config if config is not None else {}, "client config")
        out = ctypes.c_void_p()
        err = ctypes.c_void_p()
        if generate is not None:
            gen_cb = core.trampoline("generate")
            status = lib.tn_client_new_in_process(cfg, gen_cb, None, None, ctypes.byref(out), ctypes.byref(err))
        elif acp:
            gen_cb = None
            status = lib.tn_client_new_acp(cfg, ctypes.byref(out), ctypes.byref(err))
        else:
            gen_cb = None
            status = lib.tn_client_new(cfg, ctypes.byref(out), ctypes.byref(err))
        text = _native.take(lib, err)
        if status != 0:
            raise _error(status, text)
        core.ptr = out.value
        if gen_cb is not None:
            core.callbacks["generate"] = gen_cb
        self._core = core
        self._has_wait_for = wait_for is not None
        try:
            # onEvent is only called on a streamed run; the store on an ask
            # with an id; the hooks as given.
            for slot in [s for s in defaults if s != "generate"] + ["onEvent"]:
                core.register(slot)
        except BaseException:
            core.free()
            raise

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Frees the client, waiting for the runs in flight; idempotent. A
        callback must not close its own client."""
        core = getattr(self, "_core", None)
        if core is not None:
            core.free()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        try:
            if core is not None:
                core.free(wait=False)
        except Exception:  # noqa: BLE001 — interpreter shutdown
            pass

    # -- runs ------------------------------------------------------------
    def _slots(
        self,
        wait_for: Optional[Callable[[Request], Any]],
        hooks: Union[Hooks, dict, None],
    ) -> dict[str, Callable[[Any], Any]]:
        slots = _hooks_of(hooks)
        if wait_for is not None:
            if not self._has_wait_for:
                raise ValueError(
                    "wait_for given to a run of a Client built without one: pass wait_for to Client(...) "
                    "(a client without it halts a suspended run with status 'pending')"
                )
            slots["waitFor"] = _adapt_wait_for(wait_for)
        for slot in slots:
            self._core.register(slot)
        return slots

    def _call(
        self,
        mode: str,
        toolkit: Optional[Toolkit],
        request: dict[str, Any],
        *,
        cancel: Optional[CancelToken],
        timeout: Optional[float],
        slots: dict[str, Callable[[Any], Any]],
    ) -> RunResult:
        core = self._core
        lib = core.lib
        text = _native.cstr(request, "run request")
        ptr = core.acquire()
        # On the main thread the run goes to a worker so that Ctrl-C (a
        # KeyboardInterrupt, which Python delivers only between bytecodes of
        # the main thread) cancels it instead of waiting for it to end.
        interruptible = _mainthread.wanted()
        token, timer, unlink, own = cancel, None, None, None
        if timeout is not None or interruptible:
            # A token of this call's own, cancelled by the timer, Ctrl-C or
            # the caller's token (which other calls may share).
            own = CancelToken()
            token = own
            if timeout is not None:
                timer = threading.Timer(max(0.0, timeout), own.cancel)
                timer.daemon = True
            if cancel is not None:
                unlink = cancel._link(own.cancel)
        run = _Run(slots)
        rid = next(_RUN_IDS)
        _RUNS[rid] = run
        out = ctypes.c_void_p()
        try:
            tk = toolkit.handle if toolkit is not None else None
            handle = token.handle if token is not None else None

            def invoke() -> int:
                if mode == "resume":
                    return int(lib.tn_run_resume(ptr, tk, text, handle, rid, ctypes.byref(out)))
                if mode in ("ask", "stream"):
                    return int(lib.tn_ask(ptr, tk, text, mode == "stream", handle, rid, ctypes.byref(out)))
                return int(lib.tn_run(ptr, tk, text, handle, rid, ctypes.byref(out)))

            if timer is not None:
                timer.start()
            if interruptible and own is not None:
                try:
                    status = _mainthread.call(invoke, own.cancel)
                except KeyboardInterrupt:
                    # The run has ended (cancelled): free what it gave back.
                    _native.take(lib, out)
                    own.close()
                    raise
            else:
                status = invoke()
            body = _native.take(lib, out)
        finally:
            if timer is not None:
                timer.cancel()
            if unlink is not None:
                unlink()
            core.release()
            _RUNS.pop(rid, None)
        timed_out = own is not None and own.cancelled and not (cancel is not None and cancel.cancelled)
        if own is not None:
            own.close()
        cause = run.error
        if cause is not None and not isinstance(cause, Exception):
            raise cause  # KeyboardInterrupt, SystemExit raised in a callback
        if status != 0:
            if timed_out and status == _TN_CANCELLED:
                raise _TimeoutError("timeout", 8, f"the run did not finish within its timeout of {timeout} s")
            err = _error(status, body)
            if cause is not None and status == _TN_CALLBACK_ERROR:
                raise err from cause
            raise err
        return RunResult.from_json(json.loads(body or "{}"))

    def run(
        self,
        toolkit: Optional[Toolkit],
        prompt: str,
        *,
        history: Any = None,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
    ) -> RunResult:
        """Runs the loop for ``prompt`` against ``toolkit`` (``None``: no
        tools). ``history`` continues a transcript (a RunResult's
        ``messages``, or the RunResult). ``cancel`` cancels it from any
        thread (:class:`CancelledError`); ``timeout`` (seconds) bounds it
        (:class:`TimeoutError`), as does the client's ``timeoutMs``.
        ``wait_for`` and ``hooks`` override the client's for this run."""
        req: dict[str, Any] = {"prompt": prompt}
        if history is not None:
            req["history"] = _history_of(history)
        return self._call("run", toolkit, req, cancel=cancel, timeout=timeout, slots=self._slots(wait_for, hooks))

    def resume(
        self,
        toolkit: Optional[Toolkit],
        history: Any,
        pending: Union[Request, dict, None],
        answer: Union[Answer, dict],
        *,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
    ) -> RunResult:
        """Continues a run that halted with ``status == "pending"`` (SPEC
        §10 durable resume): ``history`` is its ``messages`` (or the halted
        RunResult itself, whose ``pending`` is then used when ``pending`` is
        None), ``answer`` the resolution, whose id must echo the Request's
        (empty: the Request's)."""
        if pending is None and isinstance(history, RunResult):
            pending = history.pending
        if pending is None:
            raise ValueError("resume needs the pending Request (the halted RunResult's pending)")
        p = pending.to_json() if isinstance(pending, Request) else dict(pending)
        req = {
            "history": _history_of(history),
            "pending": p,
            "answer": _answer_json(answer, str(p.get("id", "")), "answer"),
        }
        return self._call("resume", toolkit, req, cancel=cancel, timeout=timeout, slots=self._slots(wait_for, hooks))

    def run_with_answer(
        self,
        toolkit: Optional[Toolkit],
        history: Any,
        pending: Union[Request, dict, None],
        answer: Union[Answer, dict],
        *,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
        hooks: Union[Hooks, dict, None] = None,
    ) -> RunResult:
        """Continues a halted run by filling, not re-running (the §10
        addendum's ``runWithAnswer``, resume mode ``"fill"``): every open
        tool-result slot of the halted turn takes its result from
        ``answer`` — ``data.results`` (:func:`relay_answer`) by call id, or
        the one-call shorthand ``data.output`` — and no tool runs again; a
        slot left without one gets ``no result supplied on resume for
        <name>``. The resume of relay tools; :meth:`resume` re-runs the
        halted call instead."""
        if pending is None and isinstance(history, RunResult):
            pending = history.pending
        if pending is None:
            raise ValueError("run_with_answer needs the pending Request (the halted RunResult's pending)")
        p = pending.to_json() if isinstance(pending, Request) else dict(pending)
        req = {
            "history": _history_of(history),
            "pending": p,
            "answer": _answer_json(answer, str(p.get("id", "")), "answer"),
            "mode": "fill",
        }
        return self._call("resume", toolkit, req, cancel=cancel, timeout=timeout, slots=self._slots(None, hooks))

    def ask(
        self,
        toolkit: Optional[Toolkit],
        id: Optional[str],  # noqa: A002 — SPEC §8 ask's own word
        prompt: str,
        *,
        store: Optional[ConversationStore] = None,
        on_text: Optional[Callable[[str], Any]] = None,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
    ) -> RunResult:
        """SPEC §8 ``ask``: with an ``id`` the conversation kept under it
        (in ``store``, else the client's) is the run's history and the run's
        messages are saved back; ``None`` is a stateless :meth:`run`.
        ``on_text`` streams the answer and gets each piece of text."""
        slots = self._slots(wait_for, hooks)
        if store is not None:
            slots.update(_store_slots(store))
        req: dict[str, Any] = {"prompt": prompt}
        if id is not None:
            req["id"] = id
        if on_text is None:
            return self._call("ask", toolkit, req, cancel=cancel, timeout=timeout, slots=slots)

        def sink(ev: Any) -> None:
            if isinstance(ev, dict) and ev.get("type") == "text":
                on_text(ev.get("delta", ""))

        slots["onEvent"] = sink
        return self._call("stream", toolkit, req, cancel=cancel, timeout=timeout, slots=slots)

    def stream(
        self,
        toolkit: Optional[Toolkit],
        prompt: str,
        *,
        id: Optional[str] = None,  # noqa: A002
        history: Any = None,
        on_event: Optional[Callable[[dict[str, Any]], Any]] = None,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
        wait_for: Optional[Callable[[Request], Any]] = None,
        hooks: Union[Hooks, dict, None] = None,
    ) -> Any:
        """SPEC §8 ``stream``: the loop with the provider's answers streamed.
        Events are dicts: ``{"type": "text", "delta"}``, ``tool_call`` (id,
        name, args), ``tool_progress`` (id, name, progress, total?,
        message?: an MCP tool's progress), ``tool_result`` (id, name,
        output, isError),
        ``pending`` (``request``, a :class:`Request`), ``usage`` (usage),
        then ``done`` whose ``result`` is the :class:`RunResult`.

        With ``on_event`` each event goes to it, in order and one at a
        time, while the call runs (from the main thread, on a helper
        thread, so that Ctrl-C can cancel the run), and the
        RunResult is returned; without, an iterator of the events is
        returned (the run goes on in a worker thread; leaving the loop early
        cancels it). ``id`` makes it stateful, as for :meth:`ask`."""
        slots = self._slots(wait_for, hooks)
        req: dict[str, Any] = {"prompt": prompt}
        if id is not None:
            req["id"] = id
        if history is not None:
            req["history"] = _history_of(history)
        if on_event is not None:

            def sink(ev: Any) -> None:
                on_event(_stream_event(ev))

            slots["onEvent"] = sink
            return self._call("stream", toolkit, req, cancel=cancel, timeout=timeout, slots=slots)
        return self._stream_iter(toolkit, req, cancel, timeout, slots)

    def _stream_iter(
        self,
        toolkit: Optional[Toolkit],
        req: dict[str, Any],
        cancel: Optional[CancelToken],
        timeout: Optional[float],
        slots: dict[str, Callable[[Any], Any]],
    ) -> Iterator[dict[str, Any]]:
        events: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        stopped = threading.Event()

        def sink(ev: Any) -> None:
            if stopped.is_set():
                raise _StreamStopped()
            events.put(("event", ev))

        def work(token: CancelToken) -> None:
            try:
                self._call("stream", toolkit, req, cancel=token, timeout=timeout, slots={**slots, "onEvent": sink})
                events.put(("end", None))
            except BaseException as e:  # noqa: BLE001 — handed to the consumer
                events.put(("error", e))

        # The run starts when iteration does (a generator's body).
        def iterate() -> Iterator[dict[str, Any]]:
            token = CancelToken()
            unlink = cancel._link(token.cancel) if cancel is not None else None
            worker = threading.Thread(target=work, args=(token,), name="toolnexus-stream", daemon=True)
            worker.start()
            finished = False
            try:
                while True:
                    kind, v = events.get()
                    if kind == "event":
                        yield _stream_event(v)
                    elif kind == "error":
                        finished = True
                        raise v
                    else:
                        finished = True
                        return
            finally:
                if not finished:
                    stopped.set()
                    token.cancel()
                worker.join()
                if unlink is not None:
                    unlink()
                token.close()

        return iterate()

    def metrics(self) -> str:
        """The client's metrics as Prometheus text (SPEC §8 Observability),
        byte for byte as every toolnexus port renders it."""
        core = self._core
        ptr = core.acquire()
        try:
            out = ctypes.c_void_p()
            status = core.lib.tn_client_metrics(ptr, ctypes.byref(out))
            text = _native.take(core.lib, out)
        finally:
            core.release()
        if status != 0:
            raise _error(status, text)
        return text or ""

    # -- asyncio -----------------------------------------------------------
    async def _off_loop(self, fn: Callable[..., Any], *args: Any, cancel: Optional[CancelToken] = None,
                        **kw: Any) -> Any:
        token = CancelToken()
        unlink = cancel._link(token.cancel) if cancel is not None else None
        try:
            return await _off_loop_cancellable(fn, token, *args, **kw)
        finally:
            if unlink is not None:
                unlink()

    async def arun(self, toolkit: Optional[Toolkit], prompt: str, **kw: Any) -> RunResult:
        """:meth:`run` off the event loop; cancelling the task cancels the run."""
        return await self._off_loop(self.run, toolkit, prompt, **kw)

    async def aresume(self, toolkit: Optional[Toolkit], history: Any, pending: Any, answer: Any,
                      **kw: Any) -> RunResult:
        """:meth:`resume` off the event loop; cancelling the task cancels it."""
        return await self._off_loop(self.resume, toolkit, history, pending, answer, **kw)

    async def aask(self, toolkit: Optional[Toolkit], id: Optional[str], prompt: str,  # noqa: A002
                   **kw: Any) -> RunResult:
        """:meth:`ask` off the event loop; cancelling the task cancels it."""
        return await self._off_loop(self.ask, toolkit, id, prompt, **kw)

    async def astream(self, toolkit: Optional[Toolkit], prompt: str, **kw: Any) -> AsyncIterator[dict[str, Any]]:
        """:meth:`stream` as an async iterator: the run goes on in a worker
        thread; closing the iterator early (``aclose()``, or ``async with
        contextlib.aclosing(...)`` around the loop), or cancelling the task,
        cancels it."""
        if kw.get("on_event") is not None:
            raise ValueError("astream yields the events; on_event is for stream()")
        loop = asyncio.get_running_loop()
        events: "asyncio.Queue[tuple[str, Any]]" = asyncio.Queue()
        stopped = threading.Event()
        user_cancel: Optional[CancelToken] = kw.pop("cancel", None)
        token = CancelToken()
        unlink = user_cancel._link(token.cancel) if user_cancel is not None else None

        def on_event(ev: dict[str, Any]) -> None:
            if stopped.is_set():
                raise _StreamStopped()
            loop.call_soon_threadsafe(events.put_nowait, ("event", ev))

        def work() -> None:
            try:
                self.stream(toolkit, prompt, on_event=on_event, cancel=token, **kw)
                loop.call_soon_threadsafe(events.put_nowait, ("end", None))
            except BaseException as e:  # noqa: BLE001 — handed to the consumer
                loop.call_soon_threadsafe(events.put_nowait, ("error", e))

        worker = asyncio.ensure_future(asyncio.to_thread(work))
        finished = False
        try:
            while True:
                kind, v = await events.get()
                if kind == "event":
                    yield v
                elif kind == "error":
                    finished = True
                    raise v
                else:
                    finished = True
                    return
        finally:
            if not finished:
                stopped.set()
                token.cancel()
            try:
                await asyncio.shield(worker)
            except BaseException:  # noqa: BLE001
                pass
            if unlink is not None:
                unlink()
            token.close()


def _stream_event(ev: Any) -> dict[str, Any]:
    if not isinstance(ev, dict):
        return {"type": "unknown", "value": ev}
    if ev.get("type") == "done" and isinstance(ev.get("result"), dict):
        return {**ev, "result": RunResult.from_json(ev["result"])}
    if ev.get("type") == "pending" and isinstance(ev.get("request"), dict):
        return {**ev, "request": Request.from_json(ev["request"])}
    return ev
