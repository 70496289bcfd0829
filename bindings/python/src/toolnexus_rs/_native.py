"""The shared library and the C signatures of every function this package calls.

Every function gets its ``argtypes`` and ``restype`` here, once: a ctypes call
without a ``restype`` truncates a returned pointer to a C ``int``.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Optional

ABI_VERSION = 1

c_char_p_p = ctypes.POINTER(ctypes.c_char_p)
#: Out-parameters that receive library-owned strings are read as raw pointers
#: (``c_void_p``) so the exact pointer can be handed back to ``tn_string_free``.
c_void_p_p = ctypes.POINTER(ctypes.c_void_p)

TOOL_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
#: ``tn_callback``: a client slot (and an in-process client's generate):
#: user_data, the event JSON, the ``tn_reply *`` to answer through.
CLIENT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
#: ``tn_log_callback``: user_data, level, target, message.
LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p)
#: ``tn_user_data_free`` (a host tool's, a slot's or the logger's).
USER_DATA_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# int on_chunk(void *user_data, const char *chunk): 0 to go on (tn_translate_stream).
CHUNK_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_char_p)

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def _candidates(explicit: Optional[str]) -> list[str]:
    found: list[str] = []
    if explicit:
        return [explicit]
    here = Path(__file__).resolve()
    # A wheel carries the library inside the package (setup.py's build hook).
    bundled = here.parent / "libtoolnexus.so"
    if bundled.exists():
        return [str(bundled)]
    env = os.environ.get("TOOLNEXUS_LIB")
    if env:
        return [env]
    # A checkout: bindings/python/src/toolnexus_rs/_native.py -> repo root.
    for parent in here.parents:
        lib = parent / "target" / "release" / "libtoolnexus.so"
        if lib.exists():
            found.append(str(lib))
            break
    name = ctypes.util.find_library("toolnexus")
    if name:
        found.append(name)
    for prefix in ("/usr/local/lib", "/usr/lib"):
        for so in ("libtoolnexus.so", "libtoolnexus.so.0"):
            p = Path(prefix) / so
            if p.exists():
                found.append(str(p))
    return found


def load(path: Optional[str] = None) -> ctypes.CDLL:
    """The library, loaded once per process: ``path`` if given, else the
    copy bundled in the package (a wheel), else ``$TOOLNEXUS_LIB``, else a
    checkout's ``target/release``, else the installed location. Raises
    ``OSError`` naming every place tried."""
    global _lib
    with _lock:
        if _lib is not None and path is None:
            return _lib
        tried = _candidates(path)
        errors = []
        for candidate in tried:
            try:
                lib = ctypes.CDLL(candidate)
            except OSError as e:
                errors.append(f"{candidate}: {e}")
                continue
            _declare(lib)
            got = lib.tn_abi_version()
            if got != ABI_VERSION:
                raise OSError(f"{candidate} speaks ABI {got}; this package needs {ABI_VERSION}")
            if path is None:
                _lib = lib
            return lib
        where = "; ".join(errors) if errors else "no candidate (set TOOLNEXUS_LIB)"
        raise OSError(f"cannot load libtoolnexus: {where}")


def _declare(lib: ctypes.CDLL) -> None:
    status = ctypes.c_int32
    sig = {
        "tn_version": ([], ctypes.c_char_p),
        "tn_abi_version": ([], ctypes.c_uint32),
        "tn_set_io_threads": ([ctypes.c_uint32, c_void_p_p], status),
        "tn_string_free": ([ctypes.c_void_p], None),
        "tn_toolkit_build": ([ctypes.c_char_p, c_void_p_p, c_void_p_p], status),
        "tn_toolkit_free": ([ctypes.c_void_p], None),
        "tn_render": ([ctypes.c_void_p, ctypes.c_char_p, c_void_p_p], status),
        "tn_execute": (
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, c_void_p_p],
            status,
        ),
        "tn_translate": (
            [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_count_tokens": (
            [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_translate_stream": (
            [
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                CHUNK_CALLBACK,
                ctypes.c_void_p,
                c_void_p_p,
            ],
            status,
        ),
        "tn_helper": ([ctypes.c_char_p, ctypes.c_char_p, c_void_p_p], status),
        "tn_mcp_list_tools": ([ctypes.c_char_p, c_void_p_p], status),
        "tn_toolkit_add_agent": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, c_void_p_p], status),
        "tn_execute_with_cancel": (
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_call_cancelled": ([ctypes.c_void_p], ctypes.c_bool),
        "tn_call_deadline_ms": ([ctypes.c_void_p], ctypes.c_int64),
        "tn_cancel_new": ([], ctypes.c_void_p),
        "tn_cancel_trigger": ([ctypes.c_void_p], None),
        "tn_cancel_free": ([ctypes.c_void_p], None),
        "tn_call_set_output": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool], status),
        "tn_call_set_result_json": ([ctypes.c_void_p, ctypes.c_char_p], status),
        "tn_toolkit_register": (
            [
                ctypes.c_void_p,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_char_p,
                TOOL_CALLBACK,
                ctypes.c_void_p,
                # The finalizer (a USER_DATA_FREE cast to a plain pointer,
                # or NULL).
                ctypes.c_void_p,
                c_void_p_p,
            ],
            status,
        ),
        # The client loop (src/ffi/client.rs, client_ext.rs).
        "tn_client_new": ([ctypes.c_char_p, c_void_p_p, c_void_p_p], status),
        "tn_client_new_in_process": (
            [ctypes.c_char_p, CLIENT_CALLBACK, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p, c_void_p_p],
            status,
        ),
        "tn_client_new_acp": ([ctypes.c_char_p, c_void_p_p, c_void_p_p], status),
        "tn_client_free": ([ctypes.c_void_p], None),
        "tn_client_set_callback": (
            [ctypes.c_void_p, ctypes.c_char_p, CLIENT_CALLBACK, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_reply_set_json": ([ctypes.c_void_p, ctypes.c_char_p], status),
        "tn_reply_set_error": ([ctypes.c_void_p, ctypes.c_char_p], status),
        "tn_reply_run_data": ([ctypes.c_void_p], ctypes.c_void_p),
        "tn_run": (
            [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_run_resume": (
            [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_ask": (
            [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_char_p,
                ctypes.c_bool,
                ctypes.c_void_p,
                ctypes.c_void_p,
                c_void_p_p,
            ],
            status,
        ),
        "tn_client_metrics": ([ctypes.c_void_p, c_void_p_p], status),
        # The sub-agent runtime (src/ffi/agents.rs). The generate callback
        # and its finalizer travel as plain pointers (NULL for none).
        "tn_agents_new": (
            [
                ctypes.c_char_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                c_void_p_p,
                c_void_p_p,
            ],
            status,
        ),
        "tn_agents_call": (
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_agents_free": ([ctypes.c_void_p], None),
        "tn_agents_set_callback": (
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, c_void_p_p],
            status,
        ),
        "tn_log_set": ([ctypes.c_int32, LOG_CALLBACK, ctypes.c_void_p, USER_DATA_FREE], None),
        # Host stores (src/ffi/store.rs).
        "tn_store_register": (
            [ctypes.c_char_p, CLIENT_CALLBACK, ctypes.c_void_p, USER_DATA_FREE, c_void_p_p],
            status,
        ),
        "tn_store_register_with": (
            [ctypes.c_char_p, ctypes.c_char_p, CLIENT_CALLBACK, ctypes.c_void_p, USER_DATA_FREE, c_void_p_p],
            status,
        ),
        "tn_store_unregister": ([ctypes.c_char_p, c_void_p_p], status),
        # Serving (src/ffi/serve.rs). The hooks and their finalizer travel
        # as plain pointers (NULL for none).
        "tn_serve_with_client": (
            [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_char_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                c_void_p_p,
                c_void_p_p,
            ],
            status,
        ),
        "tn_serve_wait": ([ctypes.c_void_p, ctypes.c_int64], ctypes.c_bool),
        "tn_serve_stop": ([ctypes.c_void_p], None),
    }
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res


def take(lib: ctypes.CDLL, ptr: ctypes.c_void_p) -> Optional[str]:
    """Copies a library-owned string into Python and frees it."""
    if not ptr.value:
        return None
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        lib.tn_string_free(ptr)


def cstr(value: Any, what: str) -> bytes:
    """A Python value as the NUL-terminated UTF-8 JSON text the ABI takes; a
    ``str`` is taken as JSON text already, anything else is encoded."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    data = text.encode("utf-8")
    if b"\0" in data:
        raise ValueError(f"{what}: JSON text cannot hold a NUL byte")
    return data


# ------------------------------------------------ thread states kept
# The library calls back into Python on threads of its own (the I/O
# runtime's blocking pool, its pooled threads for agent turns and A2A tasks,
# and others). On such a thread ctypes makes a Python thread state for each
# call and deletes it on return; making one maps its frame stack and
# deleting it unmaps that again, a TLB flush on every CPU each time: about
# 7 us a callback, where the call itself takes under 1. So the first
# callback on a thread keeps that state (one more PyGILState_Ensure, never
# matched on the callback's path; the GIL is still released between
# callbacks) and stores it under a pthread key whose destructor frees it
# when the thread ends:
# - the key holds the kept state's id (ids are never reused), and the
#   destructor looks it up among the interpreter's live states, so a state
#   that Python deleted itself (a thread Python started ends that way) is
#   left alone;
# - if Python's own key for the thread still names the kept state, ctypes
#   resumes it for the destructor's call; the matching PyGILState_Release
#   then lets ctypes' release delete it;
# - if the C library cleared Python's key first (glibc clears every key of
#   an ending thread before it calls any destructor), ctypes runs the
#   destructor under a new state, and the kept one is cleared and deleted.
# At interpreter exit the key is deleted first, so that no thread ending
# later calls into a finalized interpreter; the states still kept are then
# the interpreter's to free, as any thread's.

_kept = threading.local()
_key_lock = threading.Lock()
_key: Optional[Any] = None  # (libc, the pthread_key_t), once made
_keeping = os.name == "posix"
_PYGILSTATE_LOCKED = 0


def _pyapi(name: str, args: list[Any], res: Any) -> Any:
    # Indexing gives a function object of our own: pythonapi's attributes
    # are shared with every other user of ctypes in the process.
    fn = ctypes.pythonapi[name]
    fn.argtypes = args
    fn.restype = res
    return fn


_state_get = _pyapi("PyThreadState_Get", [], ctypes.c_void_p)
_state_id = _pyapi("PyThreadState_GetID", [ctypes.c_void_p], ctypes.c_uint64)
_interpreter = _pyapi("PyInterpreterState_Get", [], ctypes.c_void_p)
_first_state = _pyapi("PyInterpreterState_ThreadHead", [ctypes.c_void_p], ctypes.c_void_p)
_next_state = _pyapi("PyThreadState_Next", [ctypes.c_void_p], ctypes.c_void_p)
_state_clear = _pyapi("PyThreadState_Clear", [ctypes.c_void_p], None)
_state_delete = _pyapi("PyThreadState_Delete", [ctypes.c_void_p], None)
_gil_ensure = _pyapi("PyGILState_Ensure", [], ctypes.c_int)
_gil_release = _pyapi("PyGILState_Release", [ctypes.c_int], None)


def _give_back(value: Optional[int]) -> None:
    """The pthread key's destructor, on the thread that ends; ``value`` is
    the kept state's id plus one."""
    try:
        if not value:
            return
        state = _first_state(_interpreter())
        while state and _state_id(state) != value - 1:
            state = _next_state(state)
        if not state:
            return
        if _state_get() == state:
            _gil_release(_PYGILSTATE_LOCKED)
        else:
            _state_clear(state)
            _state_delete(state)
    except BaseException:  # noqa: BLE001 — nothing may raise into C
        pass


_GIVE_BACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_give_back)


def _thread_key() -> Optional[Any]:
    global _key, _keeping
    with _key_lock:
        if _key is None and _keeping:
            try:
                libc = ctypes.CDLL(None)
                key = (ctypes.c_ulong if sys.platform == "darwin" else ctypes.c_uint)()
                create = libc["pthread_key_create"]
                create.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
                if create(ctypes.byref(key), ctypes.cast(_GIVE_BACK, ctypes.c_void_p)) != 0:
                    _keeping = False
                    return None
                set_value = libc["pthread_setspecific"]
                set_value.argtypes = [type(key), ctypes.c_void_p]
                delete = libc["pthread_key_delete"]
                delete.argtypes = [type(key)]
                _key = (set_value, delete, key)
                atexit.register(_stop_keeping)
            except (OSError, AttributeError):
                _keeping = False
        return _key if _keeping else None


def _stop_keeping() -> None:
    global _keeping
    with _key_lock:
        if _key is not None and _keeping:
            _keeping = False
            _, delete, key = _key
            delete(key)


def keep_thread_state() -> None:
    """Called first by every callback this package hands the library: on
    a thread (a thread state) seen for the first time, keeps that state for
    the thread's life (above). Never raises."""
    try:
        if getattr(_kept, "seen", False):
            return
        _kept.seen = True
        found = _thread_key()
        if found is None:
            return
        set_value, _, key = found
        if set_value(key, _state_id(_state_get()) + 1) != 0:
            return
        _gil_ensure()
    except BaseException:  # noqa: BLE001 — nothing may raise into C
        pass


def callback(ctype: Any, fn: Any) -> Any:
    """``fn`` as a C function pointer of ``ctype`` for the library to call,
    on any thread: every callback this package hands the library is made
    here, so that each keeps its thread's Python state (above)."""

    def entry(*args: Any) -> Any:
        keep_thread_state()
        return fn(*args)

    return ctype(entry)
