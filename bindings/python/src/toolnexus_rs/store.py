"""Host stores (issue 27) over ``tn_store_register`` / ``tn_store_unregister``:
a Python object keeping the library's durable records — a served A2A
agent's tasks, the conversations :meth:`Client.ask` keeps, checkpoints —
registered under a name, then named by the store selector ``"host:<name>"``
wherever one is accepted (a client config's ``"store"``, an A2A block's
``"store"``).

    class Records:
        def get(self, kind, id): ...          # the record, or None
        def save(self, kind, id, record): ... # keep it (durably) before returning
        def delete(self, kind, id): ...       # True when there was one

    tn.register_store("records", Records())
    client = tn.Client({"model": "local", "store": "host:records"}, generate=...)

``kind`` is ``"task"``, ``"conversation"`` or ``"checkpoint"``; a record is
any JSON value. The methods may be called on any thread, concurrently. An
exception (or an answer that is not JSON) fails the operation that needed
the store with an error naming it: ``store "host:<name>": save failed:
<message>`` (a :class:`CallbackError` from :meth:`Client.ask`). An
operation waits for a method at most 30 s (``register_store``'s
``timeout``), then fails with ``store "host:<name>": get did not answer
within 30000 ms``; the method's late answer is dropped.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import threading
from typing import Any, Optional, Protocol

from . import _native

__all__ = ["Store", "register_store", "unregister_store"]


class Store(Protocol):
    """What :func:`register_store` takes."""

    def get(self, kind: str, id: str) -> Optional[Any]: ...  # noqa: A002

    def save(self, kind: str, id: str, record: Any) -> None: ...  # noqa: A002

    def delete(self, kind: str, id: str) -> bool: ...  # noqa: A002


# The stores the library holds, by the key passed as user_data: one entry
# from registration until the library releases the store (after
# unregister_store and the end of its last user), so that a store in use is
# never collected under the library.
_LIVE: dict[int, Any] = {}
_LIVE_LOCK = threading.Lock()
_KEYS = itertools.count(1)


def _message(e: BaseException) -> str:
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _answer(store: Any, ev: dict[str, Any]) -> Any:
    op, kind, rid = ev.get("op"), str(ev.get("kind", "")), str(ev.get("id", ""))
    if op == "get":
        return store.get(kind, rid)
    if op == "save":
        store.save(kind, rid, ev.get("record"))
        return None
    if op == "delete":
        return bool(store.delete(kind, rid))
    raise ValueError(f"unknown store operation {op!r}")


def _call(user_data: Optional[int], event: Optional[bytes], reply: int) -> None:
    # Nothing may raise through the C frames below.
    try:
        lib = _native.load()
        with _LIVE_LOCK:
            store = _LIVE.get(user_data or 0)
        try:
            if store is None:
                raise LookupError("the Python store is gone")
            ev = json.loads(event.decode("utf-8")) if event else {}
            answer = _answer(store, ev)
            if answer is None and ev.get("op") == "save":
                return
            text = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except BaseException as e:  # noqa: BLE001 — the store's failure is the operation's error
            lib.tn_reply_set_error(reply, _message(e).replace("\0", "\ufffd").encode("utf-8", "replace"))
            return
        if lib.tn_reply_set_json(reply, text) != 0:
            lib.tn_reply_set_error(reply, f"the Python store's answer is not JSON the library reads: {text[:200]!r}"
                                   .encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        pass


def _release(user_data: Optional[int]) -> None:
    try:
        with _LIVE_LOCK:
            _LIVE.pop(user_data or 0, None)
    except BaseException:  # noqa: BLE001
        pass


# One trampoline and one finalizer for every store: alive for the process.
_CALLBACK = _native.callback(_native.CLIENT_CALLBACK, _call)
_RELEASE = _native.callback(_native.USER_DATA_FREE, _release)


def register_store(name: str, store: Store, *, timeout: Optional[float] = None) -> None:
    """Makes ``store`` the one ``"host:<name>"`` names, in this process. A
    name already registered raises :class:`InvalidArgumentError`
    (:func:`unregister_store` it first), as does an empty one.

    ``timeout`` (seconds; default 30, at most a day) is how long an
    operation waits for one of the store's methods: past it the operation
    fails naming the store, the operation and the wait, and a method still
    running keeps its thread until it returns, its answer dropped."""
    from . import _error

    for method in ("get", "save", "delete"):
        if not callable(getattr(store, method, None)):
            raise TypeError(f"register_store: the store has no {method}(kind, id...) method")
    lib = _native.load()
    cname = _native.cstr(name, "store name")
    options = None
    if timeout is not None:
        ms = int(timeout * 1000)
        options = json.dumps({"timeoutMs": 1 if ms == 0 and timeout > 0 else ms}).encode()
    key = next(_KEYS)
    with _LIVE_LOCK:
        _LIVE[key] = store
    err = ctypes.c_void_p()
    # The library owns the entry from here: _release drops it, at once when
    # the registration is refused.
    status = lib.tn_store_register_with(cname, options, _CALLBACK, key, _RELEASE, ctypes.byref(err))
    text = _native.take(lib, err)
    if status != 0:
        raise _error(status, text)


def unregister_store(name: str) -> None:
    """Forgets the store registered as ``name``: ``"host:<name>"`` is refused
    from now on, while the clients and servers already using the store keep
    it until they are closed. An unknown name raises
    :class:`InvalidArgumentError`."""
    from . import _error

    lib = _native.load()
    err = ctypes.c_void_p()
    status = lib.tn_store_unregister(_native.cstr(name, "store name"), ctypes.byref(err))
    text = _native.take(lib, err)
    if status != 0:
        raise _error(status, text)


def _live_count() -> int:
    """How many stores the library still holds (for tests)."""
    with _LIVE_LOCK:
        return len(_LIVE)
