"""The library's diagnostics to a Python callable or a ``logging.Logger``
(``tn_log_set``): off by default, process-wide, never a header value, key or
``${ENV}`` expansion."""
from __future__ import annotations

import atexit
import itertools
import logging
import threading
from typing import Any, Callable, Optional, Union

from . import _native

__all__ = ["set_logger", "LOG_OFF", "LOG_ERROR", "LOG_WARN", "LOG_INFO", "LOG_DEBUG"]

LOG_OFF = 0
LOG_ERROR = 1
LOG_WARN = 2
LOG_INFO = 3  # MCP servers' stderr lines come at this level
LOG_DEBUG = 4

_NAMES = {"off": LOG_OFF, "error": LOG_ERROR, "warn": LOG_WARN, "warning": LOG_WARN, "info": LOG_INFO,
          "debug": LOG_DEBUG}
_TO_LOGGING = {LOG_ERROR: logging.ERROR, LOG_WARN: logging.WARNING, LOG_INFO: logging.INFO, LOG_DEBUG: logging.DEBUG}

#: The ctypes callbacks handed to the library, by user_data, until the
#: library releases them (``_release``, from any thread).
_live: dict[int, Any] = {}
_ids = itertools.count(1)
_lock = threading.Lock()


def _release(user_data: Optional[int]) -> None:
    with _lock:
        _live.pop(user_data or 0, None)


_RELEASE = _native.callback(_native.USER_DATA_FREE, _release)
_registered_exit = False


def _off() -> None:
    # NULL function pointers (ctypes takes no None for a CFUNCTYPE argument).
    _native.load().tn_log_set(0, _native.LOG_CALLBACK(), None, _native.USER_DATA_FREE())


def _level_of(level: Union[int, str]) -> int:
    if isinstance(level, str):
        if level.lower() not in _NAMES:
            raise ValueError(f"log level {level!r}: expected one of {', '.join(_NAMES)} (or 0-4)")
        return _NAMES[level.lower()]
    if not isinstance(level, int) or not 0 <= level <= 4:
        raise ValueError(f"log level {level!r}: expected 0 (off) to 4 (debug)")
    return level


def set_logger(
    logger: Union[Callable[[int, str, str], Any], logging.Logger, None],
    level: Union[int, str] = LOG_INFO,
) -> None:
    """Sends the library's messages at ``level`` and more severe ones
    (``"error"``, ``"warn"``, ``"info"``, ``"debug"``, or 1-4) to ``logger``:
    a callable ``(level, target, message)`` — ``target`` the subsystem
    (``mcp``, ``http``, ``translate``, ``skills``, ``client``) — or a
    ``logging.Logger`` (``"toolnexus.<target>: message"`` at the matching
    level). ``None`` or level ``"off"`` turns logging off (the default).
    It may be called on any thread; an exception it raises is dropped."""
    global _registered_exit
    lib = _native.load()
    lvl = _level_of(level)
    if logger is None or lvl == LOG_OFF:
        _off()
        return
    fn: Callable[[int, str, str], Any]
    if isinstance(logger, logging.Logger):
        target_logger = logger

        def to_logging(level: int, target: str, message: str) -> None:
            target_logger.log(_TO_LOGGING.get(level, logging.INFO), "%s: %s", target, message)

        fn = to_logging
    elif callable(logger):
        fn = logger
    else:
        raise TypeError(f"set_logger: expected a callable or a logging.Logger, got {type(logger).__name__}")

    def deliver(_user_data: Any, level: int, target: Optional[bytes], message: Optional[bytes]) -> None:
        try:
            fn(int(level), (target or b"").decode("utf-8", "replace"), (message or b"").decode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001 — a logger never fails the library
            pass

    cb = _native.callback(_native.LOG_CALLBACK, deliver)
    with _lock:
        ident = next(_ids)
        _live[ident] = cb
        if not _registered_exit:
            # No message may reach Python while the interpreter goes away.
            atexit.register(_off)
            _registered_exit = True
    lib.tn_log_set(lvl, cb, ident, _RELEASE)
