"""``tn_toolkit_build_with`` for :class:`toolnexus_rs.Toolkit`: a cancel token,
a timeout, a ``skillProvider`` callback (issue 17), a ``waitFor`` for the
MCP elicitation bridge (SPEC §2), an ``authorize`` for MCP authorization
(OAuth, docs/mcp.md) and a ``toolsChanged`` listener (MCP ``list_changed``).

The build-options signatures are declared here, once per loaded library, so
that this file is all the build options add to the package."""
from __future__ import annotations

import ctypes
import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _mainthread, _native

if TYPE_CHECKING:
    from . import CancelToken

#: ``tn_callback``: (user_data, event_json, tn_reply *).
REPLY_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)

_declared: set[int] = set()
_declare_lock = threading.Lock()


def _declare(lib: ctypes.CDLL) -> None:
    with _declare_lock:
        if id(lib) in _declared:
            return
        status = ctypes.c_int32
        vpp = _native.c_void_p_p
        sig = {
            "tn_build_options_new": ([], ctypes.c_void_p),
            "tn_build_options_free": ([ctypes.c_void_p], None),
            "tn_build_options_set_cancel": ([ctypes.c_void_p, ctypes.c_void_p], status),
            "tn_build_options_set_callback": (
                # The finalizer is always NULL: the callback object is kept
                # alive by the build that uses it.
                [ctypes.c_void_p, ctypes.c_char_p, REPLY_CALLBACK, ctypes.c_void_p, ctypes.c_void_p, vpp],
                status,
            ),
            "tn_toolkit_build_with": ([ctypes.c_char_p, ctypes.c_void_p, vpp, vpp], status),
            "tn_reply_set_json": ([ctypes.c_void_p, ctypes.c_char_p], status),
            "tn_reply_set_error": ([ctypes.c_void_p, ctypes.c_char_p], status),
            "tn_reply_cancelled": ([ctypes.c_void_p], ctypes.c_bool),
        }
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = res
        _declared.add(id(lib))


#: What a skill provider returns: a list of skill dicts, the shape of the
#: ``skills`` config key (``{"name", "description"?, "content"?,
#: "resources"?, "base"?}``), or ``None`` for no skill.
SkillProvider = Callable[[], Optional[list]]


def _provider_callback(lib: ctypes.CDLL, provider: SkillProvider) -> Any:
    def trampoline(_user_data: Any, _event: Optional[bytes], reply: int) -> None:
        # Nothing may raise through the C frames: a failure is reported.
        try:
            skills = provider()
            text = _native.cstr(skills if skills is not None else [], "skills")
            lib.tn_reply_set_json(reply, text)
        except BaseException as e:  # noqa: BLE001 — isolated by the library
            message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            lib.tn_reply_set_error(reply, message.replace("\0", "\ufffd").encode("utf-8", "replace"))

    return _native.callback(REPLY_CALLBACK, trampoline)


def _wait_for_callback(lib: ctypes.CDLL, wait_for: Callable[[Any], Any]) -> Any:
    # client.py imports this package: its Request/Answer are reached late.
    from .client import Request, _answer_json

    def trampoline(_user_data: Any, event: Optional[bytes], reply: int) -> None:
        # Nothing may raise through the C frames: a failure makes the
        # server's elicitation request fail, the tool call still ends.
        try:
            raw = json.loads(event.decode("utf-8")) if event else {}
            req = Request.from_json(raw if isinstance(raw, dict) else {})
            req.abandoned = lambda: bool(lib.tn_reply_cancelled(reply))
            answer = wait_for(req)
            if answer is None:
                raise TypeError("wait_for returned None; it must return an Answer (answer_output, answer_declined)")
            text = json.dumps(_answer_json(answer, req.id, "wait_for's answer"), ensure_ascii=False)
            if lib.tn_reply_set_json(reply, text.encode("utf-8", "surrogatepass")) != 0:
                raise ValueError(f"the waitFor answer is not JSON the library reads: {text[:200]}")
        except BaseException as e:  # noqa: BLE001 — isolated by the library
            message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            lib.tn_reply_set_error(reply, message.replace("\0", "\ufffd").encode("utf-8", "replace"))

    return _native.callback(REPLY_CALLBACK, trampoline)


def _authorize_callback(lib: ctypes.CDLL, authorize: Callable[[dict], str]) -> Any:
    def trampoline(_user_data: Any, event: Optional[bytes], reply: int) -> None:
        # Nothing may raise through the C frames: a failure fails the
        # authorization (and the connect or call that needed it).
        try:
            raw = json.loads(event.decode("utf-8")) if event else {}
            req = raw if isinstance(raw, dict) else {}
            req["abandoned"] = lambda: bool(lib.tn_reply_cancelled(reply))
            answer = authorize(req)
            if not isinstance(answer, str):
                raise TypeError(
                    f"authorize must return the redirect URL as a str, got {type(answer).__name__}"
                )
            lib.tn_reply_set_json(reply, json.dumps(answer).encode("utf-8", "surrogatepass"))
        except BaseException as e:  # noqa: BLE001 — isolated by the library
            message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            lib.tn_reply_set_error(reply, message.replace("\0", "\ufffd").encode("utf-8", "replace"))

    return _native.callback(REPLY_CALLBACK, trampoline)


def _tools_changed_callback(lib: ctypes.CDLL, tools_changed: Callable[[dict], Any]) -> Any:
    def trampoline(_user_data: Any, event: Optional[bytes], _reply: int) -> None:
        # Told, never asked: nothing may raise through the C frames, and
        # nothing it returns or raises changes anything.
        try:
            raw = json.loads(event.decode("utf-8")) if event else {}
            tools_changed(raw if isinstance(raw, dict) else {})
        except BaseException:  # noqa: BLE001 — isolated by the library
            pass

    return _native.callback(REPLY_CALLBACK, trampoline)


def _set_slot(lib: ctypes.CDLL, opts: int, slot: bytes, callback: Any) -> tuple[int, Optional[str]]:
    err = ctypes.c_void_p()
    status = lib.tn_build_options_set_callback(opts, slot, callback, None, None, ctypes.byref(err))
    return status, _native.take(lib, err)


def build(
    lib: ctypes.CDLL,
    config: bytes,
    cancel: Optional["CancelToken"],
    timeout: Optional[float],
    skill_provider: Optional[SkillProvider],
    wait_for: Optional[Callable[[Any], Any]] = None,
    authorize: Optional[Callable[[dict], str]] = None,
    tools_changed: Optional[Callable[[dict], Any]] = None,
) -> tuple[int, Optional[int], Optional[str], bool, list[Any]]:
    """Runs the build: ``(status, toolkit pointer, error text, timed out,
    callbacks the toolkit keeps)``. ``cancel`` is a live :class:`CancelToken` or
    ``None``; ``timeout`` (seconds) triggers a token of its own. The last
    item holds the ctypes objects the built toolkit may still call (the
    ``waitFor``): they must stay alive until ``tn_toolkit_free`` returns."""
    _declare(lib)
    opts = lib.tn_build_options_new()
    own_token: Optional[int] = None
    # Held while the build's own token is triggered (from the caller's
    # token, the timer or Ctrl-C), and taken before it is freed.
    own_lock = threading.Lock()

    def trigger_own() -> None:
        with own_lock:
            if own_token is not None:
                lib.tn_cancel_trigger(own_token)

    unlink: Optional[Callable[[], None]] = None
    timer: Optional[threading.Timer] = None
    fired = threading.Event()
    callback = None
    kept: list[Any] = []
    try:
        if skill_provider is not None:
            callback = _provider_callback(lib, skill_provider)
            status, text = _set_slot(lib, opts, b"skillProvider", callback)
            if status != 0:
                return status, None, text, False, []
        if wait_for is not None:
            if not callable(wait_for):
                raise TypeError(f"wait_for must be callable, got {type(wait_for).__name__}")
            waiter = _wait_for_callback(lib, wait_for)
            status, text = _set_slot(lib, opts, b"waitFor", waiter)
            if status != 0:
                return status, None, text, False, []
            kept.append(waiter)
        if authorize is not None:
            if not callable(authorize):
                raise TypeError(f"authorize must be callable, got {type(authorize).__name__}")
            authorizer = _authorize_callback(lib, authorize)
            status, text = _set_slot(lib, opts, b"authorize", authorizer)
            if status != 0:
                return status, None, text, False, []
            kept.append(authorizer)
        if tools_changed is not None:
            if not callable(tools_changed):
                raise TypeError(f"tools_changed must be callable, got {type(tools_changed).__name__}")
            listener = _tools_changed_callback(lib, tools_changed)
            status, text = _set_slot(lib, opts, b"toolsChanged", listener)
            if status != 0:
                return status, None, text, False, []
            kept.append(listener)
        # On the main thread a build goes where Ctrl-C can end it, unless a
        # skill provider is given: that is called on the building thread,
        # which then stays the caller's.
        interruptible = skill_provider is None and _mainthread.wanted()
        if timeout is not None and cancel is not None:
            # One token per build: the caller's is watched alongside.
            raise ValueError("give either cancel or timeout, not both")
        if timeout is not None or interruptible:
            # A token of the build's own: its timeout, Ctrl-C on the main
            # thread, or the caller's token trigger it.
            own_token = lib.tn_cancel_new()
            lib.tn_build_options_set_cancel(opts, own_token)
            if cancel is not None:
                unlink = cancel._link(trigger_own)
        elif cancel is not None:
            lib.tn_build_options_set_cancel(opts, cancel.handle)
        if timeout is not None:

            def expire() -> None:
                fired.set()
                trigger_own()

            timer = threading.Timer(max(0.0, timeout), expire)
            timer.daemon = True
            timer.start()
        out = ctypes.c_void_p()
        err = ctypes.c_void_p()

        def invoke() -> int:
            return int(lib.tn_toolkit_build_with(config, opts, ctypes.byref(out), ctypes.byref(err)))

        if interruptible:
            try:
                status = _mainthread.call(invoke, trigger_own)
            except KeyboardInterrupt:
                # The build has ended; one that finished before the cancel
                # took is closed again.
                _native.take(lib, err)
                if out.value:
                    lib.tn_toolkit_free(out.value)
                raise
        else:
            status = invoke()
        text = _native.take(lib, err)
        return status, out.value, text, fired.is_set(), kept
    finally:
        if unlink is not None:
            unlink()
        if timer is not None:
            timer.cancel()
            timer.join()
        lib.tn_build_options_free(opts)
        with own_lock:
            ptr, own_token = own_token, None
        if ptr is not None:
            lib.tn_cancel_free(ptr)
        del callback


def timeout_message(timeout: float, text: Optional[str]) -> str:
    try:
        detail = json.loads(text or "")["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = text or ""
    return f"the toolkit build did not finish within {timeout:g} s ({detail})"
