#!/usr/bin/env python3
"""Serves normally, but ignores stdin EOF and SIGTERM, and leaves a
grandchild in its process group: only SIGKILL to the group ends the tree.
Writes the grandchild's pid to argv[1]."""
import os, signal, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open(sys.argv[1], "w") as f:
    f.write(str(grandchild.pid))
serve()
while True:
    time.sleep(60)
