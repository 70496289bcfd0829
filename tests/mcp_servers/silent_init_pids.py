#!/usr/bin/env python3
"""Never answers initialize, ignores SIGTERM, and leaves a grandchild in its
process group that ignores SIGTERM too: only SIGKILL to the group ends the
tree. Once both run, writes "SERVER_PID GRANDCHILD_PID" to argv[1] (through
a temporary file renamed into place, so a reader never sees half of it)."""
import os, signal, subprocess, sys, time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    f.write(f"{os.getpid()} {grandchild.pid}")
os.rename(tmp, sys.argv[1])
for _ in sys.stdin:
    pass
while True:
    time.sleep(60)
