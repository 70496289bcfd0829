"""The sub-agent runtime (SPEC §7D) over ``tn_agents_*``: agents defined as
data, run as a tree of handles under ``root`` — spawned, woken, waited on,
interrupted and closed by id.

    from toolnexus_rs import Agents

    def model(event):                       # {model, messages, tools, turn}
        return "hello"                      # or {"content": ...} / {"toolCalls": [...]}

    with Agents({"agents": {"greeter": {"does": "greets"}}}, generate=model) as rt:
        handle, result = rt.run("greeter", "hi")
        print(result.status, result.text)   # done hello
"""
from __future__ import annotations

import ctypes
import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from . import CancelToken, InvalidArgumentError, Toolkit, ToolnexusError, _error, _mainthread, _native, _off_loop_cancellable, _text_arg
from . import _keep_callback, _RELEASE_PTR
from .client import Request, _adapt_generate, _answer_json

__all__ = ["Agents", "TaskResult"]


@dataclass
class TaskResult:
    """What :meth:`Agents.wait` (and :meth:`Agents.resume`) give: the
    handle's result. ``status`` is ``"done"``, ``"incomplete"``,
    ``"pending"`` (``pending`` holds the Request), ``"error"``,
    ``"timeout"``, ``"interrupted"`` or ``"closed"``; ``raw`` the JSON as
    the library gave it."""

    text: str
    is_error: bool
    status: str
    turns: int = 0
    total_tokens: int = 0
    own_tokens: int = 0
    limit: Optional[str] = None
    pending: Optional[Request] = None
    raw: Optional[dict[str, Any]] = None

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> "TaskResult":
        pending = v.get("pending")
        return cls(
            text=v.get("text", ""),
            is_error=bool(v.get("isError", False)),
            status=v.get("status", ""),
            turns=int(v.get("turns", 0)),
            total_tokens=int(v.get("totalTokens", 0)),
            own_tokens=int(v.get("ownTokens", 0)),
            limit=v.get("limit"),
            pending=Request.from_json(pending) if isinstance(pending, dict) else None,
            raw=v,
        )


class _Core:
    """The native runtime and its bookkeeping, apart from :class:`Agents` so
    that the generate callback never keeps the Agents alive.

    The native runtime is a reference-counted handle: each call holds it
    while it runs and ``tn_agents_free`` does not wait. What must not happen
    is a call *starting* after the last reference is gone, so calls are
    counted here and the free is made by :meth:`close` when none is in
    flight, or else by the last call to return. :meth:`close` never waits:
    the generate callback may call it."""

    def __init__(self, lib: ctypes.CDLL, ptr: int) -> None:
        self.lib = lib
        self.ptr: Optional[int] = ptr
        self.lock = threading.Lock()
        self.in_flight = 0
        self.closing = False
        # The tokens of the waits in flight: close() cancels them.
        self.tokens: set[CancelToken] = set()

    def acquire(self, token: Optional[CancelToken] = None) -> int:
        with self.lock:
            if self.closing or not self.ptr:
                raise InvalidArgumentError("invalid_argument", 5, "the agents runtime is closed")
            self.in_flight += 1
            if token is not None:
                self.tokens.add(token)
            return self.ptr

    def release(self, token: Optional[CancelToken] = None) -> None:
        with self.lock:
            self.in_flight -= 1
            if token is not None:
                self.tokens.discard(token)
            ptr = self._take_if_idle()
        if ptr:
            self.lib.tn_agents_free(ptr)

    def _take_if_idle(self) -> Optional[int]:
        if not self.closing or self.in_flight > 0 or not self.ptr:
            return None
        ptr, self.ptr = self.ptr, None
        return ptr

    def raw_call(self, ptr: int, verb: str, args: bytes, token: Optional[CancelToken]) -> Any:
        out = ctypes.c_void_p()
        status = self.lib.tn_agents_call(
            ptr, verb.encode("utf-8"), args, token.handle if token is not None else None, ctypes.byref(out)
        )
        text = _native.take(self.lib, out)
        if status != 0:
            raise _error(status, text)
        return json.loads(text) if text else None

    def close(self) -> None:
        with self.lock:
            if self.closing or not self.ptr:
                return
            self.closing = True
            # close's own turn as a call in flight: the pointer stays valid
            # for the force-close below, whoever frees it.
            self.in_flight += 1
            ptr = self.ptr
            tokens = list(self.tokens)
        try:
            for t in tokens:
                t.cancel()
            # What tn_agents_free does first, done now: the free may wait
            # for the last call in flight, but no handle runs on meanwhile.
            # A durable suspension stays in the store, for a later runtime.
            try:
                self.raw_call(ptr, "shutdown", b'{"reason":"runtime closed"}', None)
            except ToolnexusError:
                pass
        finally:
            self.release()


class Agents:
    """A sub-agent runtime (SPEC §7D) built from ``config``, a dict or its
    JSON text: ``{"agents": {name: {"does", "soul"?, "model"?, "tools"?,
    "team"?, "budget"?, ...}}, "client"?, "clock"?: "manual"|"system",
    "inboxCap"?, "maxConcurrentTurns"?, "shutdownMs"?, "store"?}`` (``store``:
    a store selector; transcripts and checkpoints are written through to it).

    - ``toolkit``: where the tools agents name in ``"tools"`` come from (the
      runtime holds its own reference: the Toolkit may be closed first).
    - ``generate``: an in-process model for every agent's LLM calls, called
      on library threads with ``{model, messages, tools, turn}``; it returns
      the assistant message — text, ``{"content": ...}`` or ``{"toolCalls":
      [{"name", "arguments"}]}``, with an optional ``"usage"``. An exception
      fails that call (the turn ends with an error result). Without it,
      ``config["client"]`` is the HTTP client config and is required.

    Every verb is :meth:`call`; the methods below wrap the common ones. A
    :meth:`wait` made on the main thread is open to Ctrl-C (the wait ends
    and KeyboardInterrupt is raised). Use it as a context manager, or call
    :meth:`close`. Safe to use from many threads at once."""

    def __init__(
        self,
        config: Union[dict, str],
        toolkit: Optional[Toolkit] = None,
        generate: Optional[Callable[[dict[str, Any]], Any]] = None,
    ) -> None:
        lib = _native.load()
        cfg = _native.cstr(config, "agents config")
        out = ctypes.c_void_p()
        err = ctypes.c_void_p()
        gen_ptr, key, release = None, None, None
        if generate is not None:
            cb = _native.callback(_native.CLIENT_CALLBACK, _generate_trampoline(lib, _adapt_generate(generate)))
            # Alive until the library's user_data_free: a turn thread may
            # still call it after the runtime is freed.
            key = _keep_callback(cb)
            gen_ptr, release = ctypes.cast(cb, ctypes.c_void_p), _RELEASE_PTR
        tk = toolkit.handle if toolkit is not None else None
        if toolkit is not None and not tk:
            raise ToolnexusError("null_argument", 1, "the toolkit is closed")
        # The library releases key (user_data_free) once, also on failure.
        status = lib.tn_agents_new(cfg, tk, gen_ptr, key, release, ctypes.byref(out), ctypes.byref(err))
        text = _native.take(lib, err)
        if status != 0:
            raise _error(status, text)
        self._core = _Core(lib, out.value)

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Closes every handle (running turns are cancelled, waits in flight
        end with ``"interrupted"`` or ``"closed"``) and frees the runtime
        once no call uses it. Does not wait, so ``generate`` may call it;
        idempotent."""
        core = getattr(self, "_core", None)
        if core is not None:
            core.close()

    def __enter__(self) -> "Agents":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 — interpreter shutdown
            pass

    def set_callback(self, slot: str, fn: Optional[Callable[[Any], Any]]) -> None:
        """Sets (``None``: clears) one of the runtime's host callbacks by
        slot (``tn_agents_set_callback``): ``"onSpawn"`` (event ``{id}``),
        ``"onClose"`` (``{id, reason}``) and ``"onBeat"`` (``{text}``)
        always; the hooks (``"beforeLLM"`` … ``"onMetric"``; ``"<hook>:<agent>"``
        for one agent's own, which replaces the runtime's on its turns),
        ``"waitFor:<agent>"``, ``"guardrail:<agent>"`` (return ``""`` or
        ``"allow"`` to allow, any other string denies), ``"summarize"``
        (``{older}`` → the summary text) and ``"countTokens"``
        (``{messages}`` → a number) when the config's ``"callbacks"``
        declares them; ``"verify:<agent>"`` (the RunResult → ``{"ok",
        "reason"?}``) for an agent whose ``completion.verify`` is
        ``"callback"``. ``fn`` gets the event, parsed, on a library thread
        and returns the reply; an exception fails that call. One called
        during a turn does not hold an interrupt or a close."""
        core = self._core
        lib = core.lib
        cb_ptr, key, release = None, None, None
        if fn is not None:
            cb = _native.callback(_native.CLIENT_CALLBACK, _generate_trampoline(lib, fn))
            key = _keep_callback(cb)
            cb_ptr, release = ctypes.cast(cb, ctypes.c_void_p), _RELEASE_PTR
        err = ctypes.c_void_p()
        ptr = core.acquire()
        try:
            # The library releases key (user_data_free) once, also on failure.
            status = lib.tn_agents_set_callback(
                ptr, slot.encode("utf-8"), cb_ptr, key, release, ctypes.byref(err)
            )
        finally:
            core.release()
        text = _native.take(lib, err)
        if status != 0:
            raise _error(status, text)

    # -- verbs -----------------------------------------------------------
    def call(self, verb: str, args: Any = None, *, cancel: Optional[CancelToken] = None) -> Any:
        """Runs one verb — ``spawn``, ``post``, ``wake``, ``wait``,
        ``interrupt``, ``close``, ``resume``, ``list``, ``inspect``,
        ``trace``, ``transcript``, ``advance`` — with ``args`` (a dict, its
        JSON text, or None for ``{}``) and gives its answer, parsed.
        ``cancel`` (triggered from any thread) ends a ``wait`` with an
        ``"interrupted"`` result. A verb the runtime refuses raises
        :class:`InvalidArgumentError`."""
        core = self._core
        text = _native.cstr(args if args is not None else {}, f"agents {verb} args")
        if "\0" in verb:
            raise ValueError("agents verb: cannot hold a NUL byte")
        waits = verb == "wait"
        interruptible = waits and _mainthread.wanted()
        # A wait gets a token of its own: cancelled by close(), Ctrl-C or
        # the caller's token.
        own = CancelToken() if waits else None
        unlink = cancel._link(own.cancel) if own is not None and cancel is not None else None
        ptr = core.acquire(own)
        try:

            def invoke() -> Any:
                return core.raw_call(ptr, verb, text, own)

            if interruptible and own is not None:
                return _mainthread.call(invoke, own.cancel)
            return invoke()
        finally:
            if unlink is not None:
                unlink()
            core.release(own)
            if own is not None:
                own.close()

    def spawn(self, agent: str, parent: Optional[str] = None, budget: Optional[dict[str, Any]] = None) -> str:
        """Starts a handle of the definition ``agent`` under ``parent``
        (default ``"root"``); its id (``"root/explore.1"``)."""
        args: dict[str, Any] = {"agent": agent}
        if parent is not None:
            args["parent"] = parent
        if budget is not None:
            args["budget"] = budget
        return str(self.call("spawn", args)["id"])

    def post(self, id: str, text: str, *, sender: str = "host", channel: str = "message") -> None:  # noqa: A002
        """Puts ``{from, channel, text}`` in the handle's inbox."""
        self.call("post", {"id": id, "item": {"from": sender, "channel": channel, "text": text}})

    def wake(self, id: str, prompt: Optional[str] = None) -> None:  # noqa: A002
        """Starts a turn of the handle (a no-op on a busy one)."""
        args: dict[str, Any] = {"id": id}
        if prompt is not None:
            args["prompt"] = prompt
        self.call("wake", args)

    def wait(
        self, id: str, timeout_ms: Optional[int] = None, *, cancel: Optional[CancelToken] = None  # noqa: A002
    ) -> TaskResult:
        """Blocks until the handle settles and gives its result; ``timeout_ms``
        bounds it on the runtime's clock (status ``"timeout"``), ``cancel``
        and :meth:`close` end it (``"interrupted"`` or ``"closed"``)."""
        args: dict[str, Any] = {"id": id}
        if timeout_ms is not None:
            args["timeoutMs"] = timeout_ms
        return TaskResult.from_json(self.call("wait", args, cancel=cancel))

    async def wait_async(self, id: str, timeout_ms: Optional[int] = None) -> TaskResult:  # noqa: A002
        """:meth:`wait` off the event loop; cancelling the task ends the wait."""
        return await _off_loop_cancellable(self.wait, CancelToken(), id, timeout_ms)

    def interrupt(self, id: str) -> None:  # noqa: A002
        """Cancels the handle's running turn (or drops its pending request)."""
        self.call("interrupt", {"id": id})

    def close_handle(self, id: str, force: bool = False, reason: Optional[str] = None) -> None:  # noqa: A002
        """Closes the handle and its subtree: gracefully (a running turn may
        finish within ``shutdownMs``) or, with ``force``, at once."""
        args: dict[str, Any] = {"id": id, "force": force}
        if reason is not None:
            args["reason"] = reason
        self.call("close", args)

    def resume(self, answer: Any) -> TaskResult:
        """Answers the parked tree's pending Request (SPEC §10) and gives the
        resumed tree's result."""
        a = _answer_json(answer, "", "resume's answer")
        if not a.get("id"):
            a.pop("id", None)  # the Request's own id
        return TaskResult.from_json(self.call("resume", {"answer": a}))

    def list(self) -> list[dict[str, Any]]:
        """Every handle's view, root first."""
        return list(self.call("list"))

    def inspect(self, id: str) -> dict[str, Any]:  # noqa: A002
        return dict(self.call("inspect", {"id": id}))

    def trace(self) -> list[str]:
        """The transitions so far (``"<id>: from→to (why)"``)."""
        return [str(line) for line in self.call("trace")]

    def transcript(self, id: str) -> list[Any]:  # noqa: A002
        return list(self.call("transcript", {"id": id}))

    def advance(self, ms: int) -> None:
        """Moves the manual clock (config ``"clock": "manual"``) on."""
        self.call("advance", {"ms": ms})

    def run(self, agent: str, prompt: str, *, cancel: Optional[CancelToken] = None) -> tuple[str, TaskResult]:
        """Spawns ``agent`` under the root, wakes it with ``prompt`` and
        waits: the handle's id and its result."""
        id = self.spawn(agent)  # noqa: A001
        self.wake(id, prompt)
        return id, self.wait(id, cancel=cancel)


def _generate_trampoline(lib: ctypes.CDLL, fn: Callable[[Any], Any]) -> Callable[[Any, Optional[bytes], int], None]:
    def callback(_user_data: Any, event: Optional[bytes], reply: int) -> None:
        # Nothing may raise through the C frames below.
        try:
            ev = json.loads(event.decode("utf-8")) if event else None
            text = json.dumps(fn(ev), ensure_ascii=False)
            if lib.tn_reply_set_json(reply, _text_arg(text)) != 0:
                raise ValueError(f"the generate answer is not JSON the library reads: {text[:200]}")
        except BaseException as e:  # noqa: BLE001 — the turn's error
            try:
                msg = str(e)
                lib.tn_reply_set_error(reply, _text_arg(f"{type(e).__name__}: {msg}" if msg else type(e).__name__))
            except BaseException:  # noqa: BLE001
                pass

    return callback
