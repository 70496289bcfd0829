"""toolnexus-rs for Python: one toolkit of uniform LLM tools (skills, builtins,
MCP servers, HTTP endpoints, Python functions), rendered for OpenAI, Anthropic
or Gemini, executed by name, and one-call translation to a provider — over the
native library through ctypes.

    from toolnexus_rs import Toolkit

    with Toolkit({"skillsDir": "examples/skills"}) as tk:
        tools = tk.render("openai")
        result = tk.execute("skill", {"name": "hello-world"})
"""
from __future__ import annotations

import asyncio
import ctypes
import json
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from . import _build, _mainthread, _native

__all__ = [
    "Agents",
    "Answer",
    "CallbackError",
    "CancelToken",
    "Client",
    "ConversationStore",
    "HTTPRequest",
    "HTTPResponse",
    "Hooks",
    "InMemoryStore",
    "Request",
    "RunResult",
    "Server",
    "TaskResult",
    "ToolCall",
    "Usage",
    "answer_declined",
    "answer_output",
    "RELAY_KIND",
    "relay_answer",
    "relay_calls_of",
    "set_io_threads",
    "set_logger",
    "Store",
    "register_store",
    "unregister_store",
    "Toolkit",
    "ToolResult",
    "ToolnexusError",
    "ProviderError",
    "TimeoutError",
    "CancelledError",
    "InvalidConfigError",
    "InvalidArgumentError",
    "InvalidJsonError",
    "UnknownFormatError",
    "InternalError",
    "call_cancelled",
    "helper",
    "list_mcp_tools",
    "translate",
    "count_tokens",
    "translate_stream",
    "atranslate",
    "version",
    "load",
]

load = _native.load


class ToolnexusError(Exception):
    """An ABI error: ``code`` is the snake_case code (``invalid_config``,
    ``provider_error``, …), ``status`` its number, ``message`` the sentence."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.status = status
        self.message = message


class InvalidJsonError(ToolnexusError):
    pass


class InvalidConfigError(ToolnexusError):
    pass


class InvalidArgumentError(ToolnexusError):
    pass


class UnknownFormatError(ToolnexusError):
    pass


class ProviderError(ToolnexusError):
    pass


class TimeoutError(ToolnexusError):  # noqa: A001 — the ABI's own word
    pass


class CancelledError(ToolnexusError):
    pass


class InternalError(ToolnexusError):
    pass


class CallbackError(ToolnexusError):
    """A host callback of the client loop failed; ``__cause__`` is the
    exception it raised, when it was a Python one."""


_BY_CODE = {
    "invalid_json": InvalidJsonError,
    "invalid_config": InvalidConfigError,
    "invalid_argument": InvalidArgumentError,
    "unknown_format": UnknownFormatError,
    "provider_error": ProviderError,
    "timeout": TimeoutError,
    "cancelled": CancelledError,
    "internal": InternalError,
    "callback_error": CallbackError,
}


def _error(status: int, text: Optional[str]) -> ToolnexusError:
    try:
        err = json.loads(text or "")["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "internal", text or f"status {status} with no message"
    return _BY_CODE.get(code, ToolnexusError)(code, status, message)


def _call(fn: Callable[..., int], *args: Any, interrupt: Optional[Callable[[], None]] = None) -> str:
    """Runs an ABI call whose last argument is the out-string and returns that
    string, or raises the typed error it carries. With ``interrupt`` the call
    runs on the main-thread worker (:mod:`._mainthread`): Ctrl-C calls
    ``interrupt`` (which cancels the call) and is raised once it ended."""
    lib = _native.load()
    out = ctypes.c_void_p()
    if interrupt is None:
        status = fn(*args, ctypes.byref(out))
    else:
        try:
            status = _mainthread.call(lambda: fn(*args, ctypes.byref(out)), interrupt)
        except KeyboardInterrupt:
            _native.take(lib, out)  # what the ended call gave back
            raise
    text = _native.take(lib, out)
    if status != 0:
        raise _error(status, text)
    return text or ""


def set_io_threads(threads: int) -> None:
    """How many worker threads the library's I/O runtime (MCP sessions,
    HTTP, served toolkits) starts with: 1 to 64, 1 when never set. It starts
    with the first call that needs it (a build with MCP servers, an HTTP
    tool, ``translate``, a client run), so call this first; once it runs
    this raises :class:`InvalidArgumentError` naming the count running, and
    changes nothing."""
    lib = _native.load()
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= 0xFFFFFFFF:
        raise InvalidArgumentError("invalid_argument", 5, f"threads must be 1 to 64, got {threads!r}")
    err = ctypes.c_void_p()
    status = lib.tn_set_io_threads(threads, ctypes.byref(err))
    text = _native.take(lib, err)
    if status != 0:
        raise _error(status, text)


def version() -> str:
    """The library's version (``tn_version``)."""
    v = _native.load().tn_version()
    return v.decode("utf-8") if v else ""


@dataclass
class ToolResult:
    """What a tool hands back (SPEC §1): a failing tool is a value, not an
    exception. ``parts`` are §1B content parts (images, files, audio)."""

    output: str
    is_error: bool = False
    metadata: Optional[dict[str, Any]] = None
    parts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_json(cls, text: str) -> "ToolResult":
        v = json.loads(text)
        return cls(
            output=v.get("output", ""),
            is_error=bool(v.get("isError", False)),
            metadata=v.get("metadata"),
            parts=list(v.get("parts") or []),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"output": self.output, "isError": self.is_error}
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.parts:
            out["parts"] = self.parts
        return out

    @property
    def pending(self) -> Optional[dict[str, Any]]:
        """The §10 Request when the tool suspended, else ``None``."""
        return (self.metadata or {}).get("pending")


class CancelToken:
    """Aborts a ``translate`` (and the calls that accept one) from any thread."""

    def __init__(self) -> None:
        self._lib = _native.load()
        self._ptr: Optional[int] = self._lib.tn_cancel_new()
        self._cancelled = False
        self._on_cancel: list[Callable[[], None]] = []
        # Held while the native token is triggered, and taken by close()
        # before it frees it: a cancel from another thread (a Timer, a
        # linked token) may come while the call it ends is returning and
        # its owner closes the token.
        self._lock = threading.RLock()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._ptr:
                self._lib.tn_cancel_trigger(self._ptr)
            callbacks = list(self._on_cancel)
        for fn in callbacks:
            fn()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled

    def _link(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Calls ``fn`` when this token is cancelled (at once if it already
        is); gives the function that undoes the link. The client loop uses
        it to cancel its own per-call token (a run with a timeout)."""
        self._on_cancel.append(fn)
        if self._cancelled:
            fn()

        def unlink() -> None:
            try:
                self._on_cancel.remove(fn)
            except ValueError:
                pass

        return unlink

    def close(self) -> None:
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib.tn_cancel_free(ptr)

    def __del__(self) -> None:  # a safety net; close() is the way
        try:
            self.close()
        except Exception:  # noqa: BLE001 — interpreter shutdown
            pass

    @property
    def handle(self) -> Optional[int]:
        return self._ptr


#: What a registered Python function may return: text, a ToolResult, or a
#: ToolResult-shaped dict (``{"output", "isError"?, "metadata"?, "parts"?}``).
ToolReturn = Union[str, ToolResult, dict]


async def _off_loop_cancellable(fn: Callable[..., Any], token: "CancelToken", *args: Any, **kw: Any) -> Any:
    """``fn(*args, cancel=token, **kw)`` in a worker thread. Cancelling the
    awaiting task triggers ``token`` and waits for the call to end (it
    returns promptly once cancelled), so nothing of it outlives the task."""
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args, cancel=token, **kw))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        token.cancel()
        try:
            await work
        except BaseException:  # noqa: BLE001 — the task is cancelled either way
            pass
        raise


class Toolkit:
    """A toolkit built from a config (a dict, or its JSON text; keys as in
    docs/config.md, "Toolkit config"). Use it as a context manager, or call
    :meth:`close`. Safe to use from many threads at once."""

    def __init__(
        self,
        config: Union[dict, str, None] = None,
        *,
        cancel: Optional["CancelToken"] = None,
        timeout: Optional[float] = None,
        skill_provider: Optional[Callable[[], Optional[list]]] = None,
        wait_for: Optional[Callable[[Any], Any]] = None,
        authorize: Optional[Callable[[dict], str]] = None,
        tools_changed: Optional[Callable[[dict], Any]] = None,
    ) -> None:
        """``cancel`` (triggered from another thread) or ``timeout`` (seconds)
        ends a build that hangs, on an MCP server say: it raises
        :class:`CancelledError` or :class:`TimeoutError`, and leaves no process
        it started running. ``skill_provider`` is called once during the build,
        on the calling thread, and returns skills as data (a list of dicts
        shaped like the ``skills`` key); an exception in it is reported in
        ``status["errors"]["skillProvider"]`` and fails nothing else.

        On the main thread, Ctrl-C ends a build (as ``cancel`` would) and
        raises KeyboardInterrupt, as it does ``execute`` of a tool that waits
        on a process, a server or the network, ``translate`` and a client
        run; the call is over when the KeyboardInterrupt is raised. (A build
        with a ``skill_provider`` stays on the calling thread, and Ctrl-C
        waits for it.)

        ``wait_for(Request) -> Answer`` answers an MCP server that asks the
        user something in the middle of a tool call (SPEC §2, elicitation).
        With it, every MCP server is told the client supports elicitation; a
        form-mode question is a Request of kind ``"input"`` with the form's
        JSON schema in ``data["schema"]``, a URL-mode one kind
        ``"authorization"`` with ``url``. ``answer_output``-style Answers
        with ``ok=True`` accept (form mode: ``data``, a dict, is what the
        user entered), ``answer_declined(id)`` declines, any other refusal
        cancels; an exception makes the server's request fail and the tool
        call still ends with a result. It runs on library threads, several
        at once when calls overlap; ``request.abandoned()`` turns true once
        nobody waits for the answer (the call's deadline or cancel, or the
        toolkit closing). Without it, elicitation is not advertised.

        ``authorize(event) -> str`` is the browser step of MCP authorization
        (OAuth 2.1, docs/mcp.md): when a remote MCP server needs one, the
        event is ``{"server", "url", "redirectUri", "resource"}`` (plus
        ``abandoned()``, true once nobody waits); show ``url`` to a human
        and return the URL the authorization server redirected the browser
        to (carrying ``code`` and ``state``). An exception fails the
        authorization. With it, every remote server without an ``auth``
        setting is authorized on a 401; without it only servers with
        ``auth`` are (and only ``client_credentials`` completes).

        ``tools_changed(event)`` hears that an MCP server's tools changed
        (it sent ``notifications/tools/list_changed``; the toolkit listed
        them again and serves the new list, docs/mcp.md): the event is
        ``{"server", "added", "removed", "tools", "generation"}`` (toolkit
        names). It runs on a library thread; what it returns or raises is
        ignored."""
        self._lib = _native.load()
        cfg = _native.cstr(config if config is not None else {}, "config")
        status, ptr, text, timed_out, kept = _build.build(
            self._lib, cfg, cancel, timeout, skill_provider, wait_for, authorize, tools_changed
        )
        if status != 0:
            if timed_out and timeout is not None:
                raise TimeoutError("timeout", 8, _build.timeout_message(timeout, text))
            raise _error(status, text)
        self._ptr: Optional[int] = ptr
        # The ctypes callback objects must outlive every call that may use
        # them: kept until the toolkit is freed.
        self._callbacks: list[Any] = kept
        self._close_lock = threading.Lock()
        # The servers still serving this toolkit, stopped by close().
        self._servers: set[Any] = set()
        # The tools that wait on the world (see _waits_on_the_world).
        self._waiting: Optional[frozenset[str]] = None

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Stops the toolkit's servers, closes MCP connections, ends child
        processes, frees the toolkit. Idempotent; no call may still be
        running on it."""
        with self._close_lock:
            servers, self._servers = list(getattr(self, "_servers", ())), set()
        for server in servers:
            server.close()
        with self._close_lock:
            ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib.tn_toolkit_free(ptr)
        self._callbacks.clear()

    def __enter__(self) -> "Toolkit":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 — interpreter shutdown
            pass

    def _handle(self) -> int:
        if not self._ptr:
            raise ToolnexusError("null_argument", 1, "the toolkit is closed")
        return self._ptr

    @property
    def handle(self) -> int:
        """The native ``tn_toolkit *`` (for translate and the client loop)."""
        return self._handle()

    # -- render ----------------------------------------------------------
    def render_json(self, format: str, tools: Optional[list[str]] = None) -> str:  # noqa: A002
        """The rendering as JSON text: ``openai``, ``anthropic``, ``gemini``,
        ``toolNames``, ``skillsPrompt``, ``tools``, ``status``, ``skills``,
        ``skillsInventory``; ``tools`` renders exactly those, in that order."""
        spec = format if tools is None else json.dumps({"format": format, "tools": tools})
        return _call(self._lib.tn_render, self._handle(), spec.encode("utf-8"))

    def render(self, format: str, tools: Optional[list[str]] = None) -> Any:  # noqa: A002
        """:meth:`render_json`, parsed."""
        return json.loads(self.render_json(format, tools))

    @property
    def status(self) -> dict[str, Any]:
        return self.render("status")

    # -- remote A2A agents (SPEC §7A) ---------------------------------------
    def add_agent(
        self,
        agent: Union[str, dict[str, Any]],
        *,
        headers: Optional[dict[str, str]] = None,
        timeout: Optional[float] = None,
        poll_every: Optional[float] = None,
        protocol: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
    ) -> dict[str, Any]:
        """Fetches a remote A2A agent's card and registers one tool per skill
        (source ``"a2a"``; the first tool of a name wins). ``agent`` is the
        card URL or an agent dict ``{card, headers?, timeout?, pollEvery?,
        protocol?}`` (milliseconds); the keywords, in seconds, override it.
        Header values expand ``${ENV}`` at each request. Returns ``{agent,
        added, skipped, warnings}``; an unreachable card raises."""
        spec: dict[str, Any] = {"card": agent} if isinstance(agent, str) else dict(agent)
        if headers is not None:
            spec["headers"] = headers
        if timeout is not None:
            spec["timeout"] = max(1, int(timeout * 1000))
        if poll_every is not None:
            spec["pollEvery"] = max(1, int(poll_every * 1000))
        if protocol is not None:
            spec["protocol"] = protocol
        text = _call(
            self._lib.tn_toolkit_add_agent,
            self._handle(),
            json.dumps(spec).encode("utf-8"),
            cancel.handle if cancel is not None else None,
        )
        return json.loads(text)

    # -- serving (SPEC §7B, §7C) -------------------------------------------
    def serve(
        self,
        addr: Optional[str] = "127.0.0.1:0",
        *,
        stdio: bool = False,
        name: Optional[str] = None,
        version: Optional[str] = None,
        tools: Optional[list[str]] = None,
        a2a: Optional[dict[str, Any]] = None,
        client: Optional["Client"] = None,
        on_call: Optional[Callable[[dict[str, Any]], Any]] = None,
        on_task: Optional[Callable[[dict[str, Any]], Any]] = None,
    ) -> "Server":
        """Serves the toolkit as an MCP server: streamable HTTP at
        ``http://<addr>/mcp`` (port 0 picks a free one; :attr:`Server.url`
        says which), or JSON-RPC lines on stdin/stdout with ``stdio=True``.
        ``name``/``version`` are the advertised ``serverInfo``; ``tools``
        exposes only those names (default every tool).

        ``a2a`` (with ``client``, which runs the tasks) serves an A2A agent
        beside ``/mcp`` (docs/a2a.md): a dict ``{name?, description?,
        version?, provider?: {organization, url}, skills?: [skill names],
        store?: "memory" | "file:<dir>" | "sqlite:<path>" | "postgres://…" |
        "host:<name>", protocol?: "toolnexus" | "0.3" | "1.0"}``. The server
        holds the client: it may be closed before the server.

        ``on_call(event)`` hears every ``tools/call`` (``{name, source, ms,
        isError}``); ``on_task(event)`` each A2A task once, when it is
        stored ``completed``, ``failed`` or ``input-required`` (``{id,
        task, state, result?}``, ``result`` the RunResult JSON). They run on
        library threads, possibly at once; what they return or raise is
        dropped. Closing the toolkit stops its servers."""
        from .serve import serve

        server = serve(
            self,
            None if stdio else addr,
            stdio=stdio,
            name=name,
            version=version,
            tools=tools,
            a2a=a2a,
            client=client,
            on_call=on_call,
            on_task=on_task,
        )
        with self._close_lock:
            self._servers.add(server)
            server._toolkit = self
        return server

    def _forget_server(self, server: Any) -> None:
        with self._close_lock:
            self._servers.discard(server)

    # -- execute ---------------------------------------------------------
    def execute_json(
        self,
        name: str,
        args: Union[dict, str, None] = None,
        *,
        timeout: Optional[float] = None,
        answer: Optional[dict[str, Any]] = None,
        cancel: Optional[CancelToken] = None,
    ) -> str:
        """Runs a tool and returns the ToolResult JSON text. ``timeout`` is in
        seconds; ``answer`` resolves a suspended tool (SPEC §10); ``cancel``
        (see :meth:`execute`) stops the call from another thread."""
        ctx: dict[str, Any] = {}
        if timeout is not None:
            ctx["timeoutMs"] = max(0, int(timeout * 1000))
        if answer is not None:
            ctx["answer"] = answer
        ctx_text = json.dumps(ctx).encode("utf-8") if ctx else None
        args_text = _native.cstr(args if args is not None else {}, "args")
        token, own, unlink = cancel, None, None
        if _mainthread.wanted() and self._waits_on_the_world(name):
            # A call that waits on a process, a server or the network, made
            # on the main thread: on a token of its own, so Ctrl-C ends it.
            own = CancelToken()
            unlink = cancel._link(own.cancel) if cancel is not None else None
            token = own
        outer_interrupt = getattr(_current, "interrupt", None)
        _current.interrupt = None
        try:
            if token is None:
                text = _call(self._lib.tn_execute, self._handle(), name.encode("utf-8"), args_text, ctx_text)
            else:
                text = _call(
                    self._lib.tn_execute_with_cancel,
                    self._handle(),
                    name.encode("utf-8"),
                    args_text,
                    ctx_text,
                    token.handle,
                    interrupt=own.cancel if own is not None else None,
                )
            # A Ctrl-C (or sys.exit) inside a Python tool that ran on this
            # thread: raised here, not swallowed into an error result.
            interrupted = getattr(_current, "interrupt", None)
            if interrupted is not None:
                raise interrupted
            return text
        finally:
            _current.interrupt = outer_interrupt
            if unlink is not None:
                unlink()
            if own is not None:
                own.close()

    #: Builtins that wait on a process or the network, or walk a tree.
    _WAITING_BUILTINS = frozenset({"bash", "webfetch", "grep", "glob"})

    def _waits_on_the_world(self, name: str) -> bool:
        """Whether ``name`` may wait on something outside this process (an
        MCP server, an HTTP endpoint, a shell command): such calls on the
        main thread go where Ctrl-C can end them. Skills, Python functions
        and the quick file builtins stay on the calling thread (a handoff
        costs ~11 us). Read from the tool list once, again after a
        registration."""
        waiting = self._waiting
        if waiting is None:
            waiting = frozenset(
                t["name"]
                for t in self.render("tools")
                if t.get("source") in ("mcp", "http")
                or (t.get("source") == "builtin" and t["name"] in self._WAITING_BUILTINS)
            )
            self._waiting = waiting
        return name in waiting

    def execute(
        self,
        name: str,
        args: Union[dict, str, None] = None,
        *,
        timeout: Optional[float] = None,
        answer: Optional[dict[str, Any]] = None,
        cancel: Optional[CancelToken] = None,
    ) -> ToolResult:
        """Runs a tool by name. A tool that fails is ``is_error``; an unknown
        name is too (``unknown tool: NAME``).

        ``timeout`` (seconds) and ``cancel`` (a :class:`CancelToken` another
        thread may trigger) stop the call early: it returns an ``is_error``
        result whose ``metadata["error"]`` is ``"timeout"`` or
        ``"cancelled"``, and what the tool started ends with it (bash's whole
        process group, an HTTP request, an MCP call). A Python tool that
        ignores it keeps running, but its late answer is dropped; one that
        looks at :func:`call_cancelled` can stop. The toolkit stays usable."""
        return ToolResult.from_json(
            self.execute_json(name, args, timeout=timeout, answer=answer, cancel=cancel)
        )

    async def aexecute(self, name: str, args: Union[dict, str, None] = None, **kw: Any) -> ToolResult:
        """:meth:`execute` off the event loop, in a worker thread. Cancelling
        the task cancels the call and waits for it to end (unless ``cancel=``
        names a token of the caller's own, which is then the caller's to
        trigger)."""
        if kw.get("cancel") is not None:
            return await asyncio.to_thread(self.execute, name, args, **kw)
        kw.pop("cancel", None)
        result: ToolResult = await _off_loop_cancellable(self.execute, CancelToken(), name, args, **kw)
        return result

    # -- host functions --------------------------------------------------
    def register(
        self,
        name: str,
        description: str = "",
        schema: Optional[dict[str, Any]] = None,
    ) -> Callable[[Callable[[dict[str, Any]], ToolReturn]], Callable[[dict[str, Any]], ToolReturn]]:
        """Registers a Python callable as the tool ``name`` (source ``native``):

            @tk.register("add", "Add two numbers.", {"type": "object", ...})
            def add(args):
                return str(args["a"] + args["b"])

        The function gets the arguments as a dict and returns text, a
        :class:`ToolResult` or a ToolResult dict. An exception becomes an
        ``is_error`` result with its message. It may be called on any thread,
        concurrently."""

        def decorate(fn: Callable[[dict[str, Any]], ToolReturn]) -> Callable[[dict[str, Any]], ToolReturn]:
            self.register_function(name, fn, description, schema)
            return fn

        return decorate

    def register_function(
        self,
        name: str,
        fn: Callable[[dict[str, Any]], ToolReturn],
        description: str = "",
        schema: Optional[dict[str, Any]] = None,
    ) -> None:
        lib = self._lib

        def trampoline(_user_data: Any, args_json: Optional[bytes], call: int) -> None:
            # Nothing may raise through the C frames below: every failure is
            # an is_error result.
            outer = getattr(_current, "call", None)
            _current.call = call
            try:
                args = json.loads(args_json.decode("utf-8")) if args_json else {}
                result = fn(args)
                if isinstance(result, str):
                    lib.tn_call_set_output(call, _text_arg(result), False)
                    return
                if isinstance(result, ToolResult):
                    result = result.to_json()
                if not isinstance(result, dict):
                    raise TypeError(
                        f"tool {name} returned {type(result).__name__}; expected str, ToolResult or dict"
                    )
                lib.tn_call_set_result_json(call, _native.cstr(result, "result"))
            except BaseException as e:  # noqa: BLE001 — a host tool's failure is a result
                message = str(e) or type(e).__name__
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    # Not a tool failure: the user (or the program) asked
                    # to stop. It cannot pass the C frames, so the call
                    # that made this one raises it once the library returns.
                    _current.interrupt = e
                    message = f"{name}: interrupted ({type(e).__name__})"
                try:
                    lib.tn_call_set_output(call, _text_arg(message), True)
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
            finally:
                _current.call = outer

        cb = _native.callback(_native.TOOL_CALLBACK, trampoline)
        # The library may still run the callback after close() (a call it
        # stopped waiting for): the callback object lives until the library's
        # user_data_free says the last call has returned — and no longer, so
        # registering a name again lets the old function go.
        key = _keep_callback(cb)
        err = ctypes.c_void_p()
        schema_text = json.dumps(schema).encode("utf-8") if schema is not None else None
        status = lib.tn_toolkit_register(
            self._handle(),
            name.encode("utf-8"),
            description.encode("utf-8"),
            schema_text,
            cb,
            key,
            _RELEASE_PTR,
            ctypes.byref(err),
        )
        text = _native.take(lib, err)
        # A host tool may now shadow a name (bash, an MCP tool): read again.
        self._waiting = None
        if status != 0:
            raise _error(status, text)


# -- the lifetime of host-tool callbacks, and the call a callback serves ------

_current = threading.local()
_live_lock = threading.Lock()
_live: dict[int, Any] = {}
_next_key = 1


def _keep_callback(cb: Any) -> int:
    global _next_key
    with _live_lock:
        key, _next_key = _next_key, _next_key + 1
        _live[key] = cb
    return key


def _release_callback(user_data: Optional[int]) -> None:
    with _live_lock:
        _live.pop(user_data or 0, None)


# Module-level, so it outlives every toolkit.
_RELEASE = _native.callback(_native.USER_DATA_FREE, _release_callback)
_RELEASE_PTR = ctypes.cast(_RELEASE, ctypes.c_void_p)


def call_cancelled() -> bool:
    """Inside a registered Python tool: whether its caller has stopped
    waiting (the call was cancelled or its timeout passed). Once true the
    tool's answer is dropped, so a long-running tool should return. False
    outside a tool call."""
    call = getattr(_current, "call", None)
    if not call:
        return False
    return bool(_native.load().tn_call_cancelled(call))


def _text_arg(text: str) -> bytes:
    # A NUL cannot cross as C text; U+FFFD stands in for it.
    return text.replace("\0", "\ufffd").encode("utf-8", errors="replace")


def _provider_call(
    name: str,
    client: Union[dict, str],
    request: Union[dict, str],
    toolkit: Optional[Toolkit],
    cancel: Optional[CancelToken],
) -> dict[str, Any]:
    """:func:`translate` and :func:`count_tokens`: one provider call by the
    ABI function ``name``, its JSON answer decoded."""
    lib = _native.load()
    fn = getattr(lib, name)
    client_text = _native.cstr(client, "client")
    request_text = _native.cstr(request, "request")
    tk = toolkit.handle if toolkit is not None else None
    if _mainthread.wanted():
        # On the main thread: a token of the call's own, so Ctrl-C ends
        # the provider call (the caller's token still does too).
        own = CancelToken()
        unlink = cancel._link(own.cancel) if cancel is not None else None
        try:
            text = _call(fn, client_text, request_text, tk, own.handle, interrupt=own.cancel)
        finally:
            if unlink is not None:
                unlink()
            own.close()
    else:
        text = _call(fn, client_text, request_text, tk, cancel.handle if cancel is not None else None)
    return json.loads(text)


def translate(
    client: Union[dict, str],
    request: Union[dict, str],
    toolkit: Optional[Toolkit] = None,
    cancel: Optional[CancelToken] = None,
) -> dict[str, Any]:
    """One OpenAI-shaped chat request, one provider call (SPEC §11):
    ``{text, toolCalls, finishReason, usage, model, raw}``. ``toolkit`` is
    declared (never executed). Raises :class:`ProviderError`,
    :class:`TimeoutError`, :class:`CancelledError`, …"""
    return _provider_call("tn_translate", client, request, toolkit, cancel)


def count_tokens(
    client: Union[dict, str],
    request: Union[dict, str],
    toolkit: Optional[Toolkit] = None,
    cancel: Optional[CancelToken] = None,
) -> dict[str, Any]:
    """How many input tokens :func:`translate`'s request would be, asked of
    the provider's counting endpoint (``tn_count_tokens``, CONTRACT §6A;
    docs/providers.md, "Token counting"): ``{inputTokens, style, model}``
    (and ``upstream`` with ``upstreams``). ``toolkit``'s tools are counted as
    declared. Raises as :func:`translate`: :class:`ProviderError`,
    :class:`TimeoutError`, :class:`CancelledError`, …"""
    return _provider_call("tn_count_tokens", client, request, toolkit, cancel)


def translate_stream(
    client: Union[dict, str],
    request: Union[dict, str],
    on_chunk: Callable[[str], Any],
    toolkit: Optional[Toolkit] = None,
    cancel: Optional[CancelToken] = None,
) -> dict[str, Any]:
    """:func:`translate` streamed: ``on_chunk`` gets each piece of the
    answer, from any provider style, as one OpenAI ``chat.completion.chunk``
    server-sent event (``"data: {...}\\n\\n"``, ``"data: [DONE]\\n\\n"``
    last), on the calling thread, as it arrives; returning ``False`` stops
    the stream (:class:`CancelledError`). An exception in ``on_chunk``
    stops it too and is raised here. Returns ``{id, finishReason, chunks}``."""
    lib = _native.load()
    client_text = _native.cstr(client, "client")
    request_text = _native.cstr(request, "request")
    tk = toolkit.handle if toolkit is not None else None
    raised: list[BaseException] = []

    def relay(_user_data: Any, chunk: bytes) -> int:
        try:
            return 1 if on_chunk(chunk.decode("utf-8")) is False else 0
        except BaseException as e:  # noqa: BLE001 - raised after the call
            raised.append(e)
            return 1

    callback = _native.callback(_native.CHUNK_CALLBACK, relay)
    try:
        text = _call(
            lib.tn_translate_stream,
            client_text,
            request_text,
            tk,
            cancel.handle if cancel is not None else None,
            callback,
            None,
        )
    except CancelledError:
        if raised:
            raise raised[0] from None
        raise
    return json.loads(text)


async def atranslate(
    client: Union[dict, str],
    request: Union[dict, str],
    toolkit: Optional[Toolkit] = None,
) -> dict[str, Any]:
    """:func:`translate` off the event loop; cancelling the task cancels the
    provider call."""
    token = CancelToken()
    try:
        return await asyncio.shield(asyncio.to_thread(translate, client, request, toolkit, token))
    except asyncio.CancelledError:
        # The worker thread still holds the token: it is freed with the
        # CancelToken object once nothing refers to it.
        token.cancel()
        raise


def helper(name: str, args: Optional[list[Any]] = None) -> Any:
    """A pure §11 translate helper by its conformance name (``tn_helper``)."""
    lib = _native.load()
    text = _call(lib.tn_helper, name.encode("utf-8"), _native.cstr(args or [], "args"))
    return json.loads(text)


def list_mcp_tools(config: Union[dict, str]) -> dict[str, Any]:
    """Connects to every enabled server of an MCP config, lists its tools and
    disconnects (SPEC §2 Gap 6): ``{"tools": {server: [{name, description,
    inputSchema}]}, "status": {server: ...}, "errors": {server: ...}}``.
    ``config`` is a dict, its JSON text, or a path to an ``mcp.json``."""
    if isinstance(config, str) and not config.lstrip().startswith("{"):
        config = json.dumps(config)  # a path travels as a JSON string
    lib = _native.load()
    return json.loads(_call(lib.tn_mcp_list_tools, _native.cstr(config, "config")))


# The client loop and the logger (their modules import what is above).
from .client import (  # noqa: E402
    Answer,
    Client,
    ConversationStore,
    HTTPRequest,
    HTTPResponse,
    Hooks,
    InMemoryStore,
    Request,
    RunResult,
    ToolCall,
    Usage,
    answer_declined,
    answer_output,
    RELAY_KIND,
    relay_answer,
    relay_calls_of,
)
from .log import set_logger  # noqa: E402
from .store import Store, register_store, unregister_store  # noqa: E402
from .agents import Agents, TaskResult  # noqa: E402
from .serve import Server  # noqa: E402
