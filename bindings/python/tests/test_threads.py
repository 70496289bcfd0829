"""Python thread states on the library's threads: a callback the library
makes on a thread of its own runs under a Python thread state kept for that
thread's life, instead of one made and deleted around every call (which
cost about 7 us a call, most of it unmapping the state's frame stack), and
the kept state is freed when the thread ends."""
from __future__ import annotations

import ctypes
import gc
import os
import threading
import weakref

import pytest

from parity import tn  # noqa: E402  (the package, installed or from src)
from toolnexus_rs import _native

def test_a_library_thread_keeps_its_python_state_from_call_to_call():
    # A threading.local lives in the thread state: one made afresh for each
    # callback would show every callback a count of 1.
    local = threading.local()
    seen: dict[int, list[int]] = {}
    lock = threading.Lock()

    def generate(_request):
        local.calls = getattr(local, "calls", 0) + 1
        with lock:
            seen.setdefault(threading.get_ident(), []).append(local.calls)
        return "Hello."

    # An agent's turns run on the library's pooled threads, one callback
    # each: the same thread takes turn after turn.
    with tn.Agents({"client": {"model": "m"}, "agents": {"g": {"does": "d"}}}, generate=generate) as rt:
        for _ in range(20):
            handle = rt.spawn("g")
            rt.wake(handle, "go")
            assert rt.wait(handle).status == "done"
    assert sum(len(v) for v in seen.values()) == 20
    assert threading.get_ident() not in seen, "generate ran on the library's threads"
    for ident, counts in seen.items():
        assert counts == list(range(1, len(counts) + 1)), (ident, counts)
    assert max(len(v) for v in seen.values()) > 1, seen


@pytest.mark.skipif(os.name != "posix", reason="pthreads")
def test_the_kept_state_is_freed_when_its_thread_ends():
    # A thread Python did not start (made here with pthread_create, as the
    # library makes its own) runs a callback three times and ends: what
    # the callbacks left in its thread-local storage is freed with it.
    libc = ctypes.CDLL(None)
    start_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
    local = threading.local()
    refs: list[weakref.ref] = []
    counts: list[int] = []

    class Held:
        pass

    def body(_arg):
        if not hasattr(local, "held"):
            local.held = Held()
            refs.append(weakref.ref(local.held))
        local.calls = getattr(local, "calls", 0) + 1
        counts.append(local.calls)
        return None

    run = _native.callback(start_type, body)
    create = libc["pthread_create"]
    create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    join = libc["pthread_join"]
    join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]

    def in_a_foreign_thread(times: int) -> None:
        # One pthread calling `run` `times` times: a C loop is not at hand,
        # so the thread's start routine is a callback calling the others.
        def start(_arg):
            for _ in range(times):
                run(None)
            return None

        starter = _native.callback(start_type, start)
        handle = ctypes.c_ulong()
        assert create(ctypes.byref(handle), None, ctypes.cast(starter, ctypes.c_void_p), None) == 0
        assert join(handle, None) == 0

    for _ in range(5):
        in_a_foreign_thread(3)
    gc.collect()
    assert counts == [1, 2, 3] * 5, counts
    assert len(refs) == 5
    assert [r() for r in refs] == [None] * 5, "a kept thread state outlived its thread"


def test_a_python_thread_calling_back_is_left_to_python():
    # Threads Python started delete their own state when they end; the
    # destructor must then find nothing of theirs to free (and not crash).
    calls = []
    fn = _native.callback(ctypes.CFUNCTYPE(None, ctypes.c_int), lambda n: calls.append(n))
    for round_ in range(20):
        threads = [threading.Thread(target=fn, args=(round_,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    fn(-1)
    assert len(calls) == 81
