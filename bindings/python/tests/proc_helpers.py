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


# How long a test waits for a process the library killed to be gone. A
# killed process ends only once it is scheduled, and one in uninterruptible
# sleep (paging its program in while the disk is busy, as when a second
# test suite builds beside this one) only once that read ends: the machine
# bounds that, not the library. The tests ask whether it was killed; the
# processes they start would otherwise run for 30 s.
GONE_WITHIN = 10.0


def state(pid: int) -> str:
    """Process ``pid``'s state letter from /proc (``-`` once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "-"
    return stat[stat.rindex(") ") + 2]


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is neither a zombie nor dead."""
    return state(pid) not in "-ZX"


def hung_up(connection, limit=10.0) -> bool:
    """For a test server holding a request: waits up to ``limit`` seconds
    for the client to close the connection (EOF); whether it did."""
    connection.settimeout(limit)
    try:
        return connection.recv(1) == b""
    except OSError:
        return False
