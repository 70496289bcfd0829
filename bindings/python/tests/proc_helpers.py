"""What the cancellation tests share: waiting for a condition, and telling
whether a process still runs."""
from __future__ import annotations

import time
from pathlib import Path


def wait_for(pred, limit=10.0):
    """Polls ``pred`` until it holds or ``limit`` seconds pass; its last value."""
    end = time.monotonic() + limit
    while not pred() and time.monotonic() < end:
        time.sleep(0.01)
    return pred()


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is neither a zombie nor dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(") ") + 2] not in "ZX"


def hung_up(connection, limit=10.0) -> bool:
    """For a test server holding a request: waits up to ``limit`` seconds
    for the client to close the connection (EOF); whether it did."""
    connection.settimeout(limit)
    try:
        return connection.recv(1) == b""
    except OSError:
        return False
