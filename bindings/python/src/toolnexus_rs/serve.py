"""Serving a toolkit (SPEC §7C) and, with an ``a2a`` block and a client, an
A2A agent beside it (SPEC §7B), over ``tn_serve_with_client``:
:meth:`Toolkit.serve` returns a :class:`Server`.

    with tn.Client({"baseUrl": ..., "model": ...}) as client:
        server = tk.serve("127.0.0.1:0", a2a={"name": "helper", "store": "sqlite:a2a.db"},
                          client=client, on_task=print)
        # GET  <base>/.well-known/agent-card.json, POST <base>/ (JSON-RPC)
        ...
        server.close()
"""
from __future__ import annotations

import ctypes
import itertools
import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _native

if TYPE_CHECKING:
    from . import Toolkit
    from .client import Client

__all__ = ["Server"]

# The hooks the library holds, by the key passed as user_data: one entry
# from tn_serve_with_client until the library's user_data_free (when the
# server is stopped, or at once when serving failed).
_HOOKS: dict[int, tuple[Optional[Callable[[dict], Any]], Optional[Callable[[dict], Any]]]] = {}
_HOOKS_LOCK = threading.Lock()
_KEYS = itertools.count(1)


def _hear(which: int) -> Callable[[Optional[int], Optional[bytes]], None]:
    def hear(user_data: Optional[int], event: Optional[bytes]) -> None:
        # Nothing may raise through the C frames below: a hook's exception
        # is dropped, as its return value is.
        try:
            with _HOOKS_LOCK:
                hooks = _HOOKS.get(user_data or 0)
            fn = hooks[which] if hooks is not None else None
            if fn is None or not event:
                return
            fn(json.loads(event.decode("utf-8")))
        except BaseException:  # noqa: BLE001
            pass

    return hear


def _release(user_data: Optional[int]) -> None:
    try:
        with _HOOKS_LOCK:
            _HOOKS.pop(user_data or 0, None)
    except BaseException:  # noqa: BLE001
        pass


# One trampoline per hook and one finalizer for every server: alive for the
# process, handed to the library as plain pointers.
_SERVE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_ON_CALL = _native.callback(_SERVE_CALLBACK, _hear(0))
_ON_TASK = _native.callback(_SERVE_CALLBACK, _hear(1))
_RELEASE = _native.callback(_native.USER_DATA_FREE, _release)
_ON_CALL_PTR = ctypes.cast(_ON_CALL, ctypes.c_void_p)
_ON_TASK_PTR = ctypes.cast(_ON_TASK, ctypes.c_void_p)
_RELEASE_PTR = ctypes.cast(_RELEASE, ctypes.c_void_p)


def _hooks_live() -> int:
    """How many servers' hooks the library still holds (for tests)."""
    with _HOOKS_LOCK:
        return len(_HOOKS)


class Server:
    """A running server from :meth:`Toolkit.serve`: :attr:`url` is its MCP
    endpoint (``http://127.0.0.1:PORT/mcp``; ``None`` for stdio), and an A2A
    agent, when served, answers beside it at :attr:`base`. :meth:`close`
    (or leaving a ``with`` block, or closing the toolkit) stops it."""

    def __init__(self, lib: ctypes.CDLL, ptr: int, url: Optional[str], keep: Any) -> None:
        self._lib = lib
        self._ptr: Optional[int] = ptr
        self._lock = threading.Lock()
        self.url = url
        # What the library may still call until the server is stopped: the
        # client's callback objects (the server holds the native client).
        self._keep = keep
        self._toolkit: Optional["Toolkit"] = None

    @property
    def base(self) -> Optional[str]:
        """The address without ``/mcp``: ``<base>/.well-known/agent-card.json``
        is an A2A agent's card, and ``<base>/`` takes its JSON-RPC."""
        return self.url[: -len("/mcp")] if self.url and self.url.endswith("/mcp") else self.url

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits for the server to end (a stdio server ends when its input
        closes; an HTTP one when stopped), at most ``timeout`` seconds (None:
        without limit). Returns whether it has ended."""
        with self._lock:
            ptr = self._ptr
        if not ptr:
            return True
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        return bool(self._lib.tn_serve_wait(ptr, ms))

    def close(self) -> None:
        """Stops the server: no new request is taken, calls and A2A tasks in
        flight are cancelled, the port is closed. Idempotent."""
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib.tn_serve_stop(ptr)
        self._keep = None
        tk, self._toolkit = self._toolkit, None
        if tk is not None:
            tk._forget_server(self)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(
    toolkit: "Toolkit",
    addr: Optional[str],
    *,
    stdio: bool,
    name: Optional[str],
    version: Optional[str],
    tools: Optional[list[str]],
    a2a: Optional[dict[str, Any]],
    client: Optional["Client"],
    on_call: Optional[Callable[[dict], Any]],
    on_task: Optional[Callable[[dict], Any]],
) -> Server:
    from . import _error

    lib = _native.load()
    cfg: dict[str, Any] = {"transport": "stdio"} if stdio else {"transport": "http", "addr": addr}
    profile: dict[str, Any] = {}
    if name is not None:
        profile["name"] = name
    if version is not None:
        profile["version"] = version
    if tools is not None:
        profile["tools"] = list(tools)
    cfg["mcp"] = profile
    if a2a is not None:
        cfg["a2a"] = a2a
    text = _native.cstr(cfg, "serve options")
    core = client._core if client is not None else None
    cptr = core.acquire() if core is not None else None
    try:
        key = 0
        if on_call is not None or on_task is not None:
            key = next(_KEYS)
            with _HOOKS_LOCK:
                _HOOKS[key] = (on_call, on_task)
        out = ctypes.c_void_p()
        out_json = ctypes.c_void_p()
        # The library owns the hooks' entry from here: _release drops it,
        # at once when serving fails.
        status = lib.tn_serve_with_client(
            toolkit.handle,
            cptr,
            text,
            _ON_CALL_PTR if on_call is not None else None,
            _ON_TASK_PTR if on_task is not None else None,
            key or None,
            _RELEASE_PTR if key else None,
            ctypes.byref(out),
            ctypes.byref(out_json),
        )
        body = _native.take(lib, out_json)
        if status != 0:
            raise _error(status, body)
        # The server holds the native client past Client.close(): its
        # callback objects must live as long (Client.close drops its own
        # reference to this dict without emptying it).
        keep = core.callbacks if core is not None else None
    finally:
        if core is not None:
            core.release()
    url = (json.loads(body or "{}") or {}).get("url")
    return Server(lib, out.value, url, keep)
