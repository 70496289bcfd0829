#!/usr/bin/env python3
"""Answers initialize, then closes its stdin just before answering
tools/list, and keeps running: every later request is written into a pipe
nobody reads (EPIPE, and SIGPIPE for a host that does not ignore it)."""
import os, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import answer

for line in sys.stdin:
    import json
    msg = json.loads(line)
    mid = msg.get("id")
    if mid is None:
        continue
    if msg.get("method") == "tools/list":
        os.close(0)
        answer(mid, "tools/list", msg.get("params") or {})
        break
    answer(mid, msg.get("method"), msg.get("params") or {})
while True:
    time.sleep(60)
