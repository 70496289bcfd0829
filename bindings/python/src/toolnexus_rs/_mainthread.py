"""Native calls made on the main thread, kept open to Ctrl-C.

Python runs a signal's handler (a KeyboardInterrupt for SIGINT) only on the
main thread and only between bytecodes, so a main thread that waits inside a
native call hears Ctrl-C only once that call returns: a ``bash`` running
``sleep 30``, a hung MCP server, a slow provider would hold the terminal.
:func:`call` hands such a call to a worker thread and waits; a
KeyboardInterrupt meanwhile runs ``on_interrupt`` (which cancels the call's
token), waits until the call has ended (it does so promptly once cancelled:
the call may be using native objects the caller frees next) and is raised
again.

The worker is one daemon thread kept for the process (about 11 us a
handoff, against 44 us for a thread per call). Only the main thread
submits, and only one call at a time, so one worker is enough; a call that
the worker runs may itself call back into Python on the worker thread,
which never comes here.
"""
from __future__ import annotations

import queue
import signal
import threading
from typing import Any, Callable, Optional


def wanted() -> bool:
    """Whether a call made now should go to the worker: on the main thread,
    with a Python-level SIGINT handler installed (with ``SIG_IGN`` Ctrl-C
    does nothing, with ``SIG_DFL`` it ends the process anyway)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return callable(signal.getsignal(signal.SIGINT))
    except (ValueError, OSError):  # no signal module state (embedded)
        return False


class _Job:
    """One call and its hand-off. ``take`` (worker) and ``abandon`` (the
    interrupted main thread) decide under one lock who owns the call: it
    runs only if the worker took it before the caller gave up on it."""

    __slots__ = ("invoke", "done", "_lock", "_state", "status", "error")

    def __init__(self, invoke: Callable[[], Any]) -> None:
        self.invoke = invoke
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._state = "queued"
        self.status: Any = None
        self.error: Optional[BaseException] = None

    def take(self) -> bool:
        with self._lock:
            if self._state != "queued":
                return False
            self._state = "taken"
            return True

    def abandon(self) -> bool:
        """True if the call will never run (so there is nothing to wait
        for); False if the worker has it."""
        with self._lock:
            if self._state == "queued":
                self._state = "abandoned"
                return True
            return False

    def run(self) -> None:
        try:
            self.status = self.invoke()
        except BaseException as e:  # noqa: BLE001 — handed back to the caller
            self.error = e
        finally:
            self.done.set()


class _Worker:
    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[_Job]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, job: _Job) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            if not self._threads:
                # Appended before start: a start() cut short by Ctrl-C may
                # still leave a live thread, which then takes jobs too.
                t = threading.Thread(target=self._loop, name="toolnexus-main-calls", daemon=True)
                self._threads.append(t)
                t.start()
        self._jobs.put(job)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job.take():
                job.run()


_WORKER = _Worker()


def call(invoke: Callable[[], Any], on_interrupt: Callable[[], None]) -> Any:
    """``invoke()`` on the worker while this thread waits; see the module."""
    job = _Job(invoke)
    try:
        _WORKER.submit(job)
        job.done.wait()
    except KeyboardInterrupt:
        on_interrupt()
        if not job.abandon():
            while not job.done.is_set():
                try:
                    job.done.wait()
                except KeyboardInterrupt:
                    continue
        raise
    if job.error is not None:
        raise job.error
    return job.status
