#!/usr/bin/env python3
"""Answers `ping` with pong, except a call with {"hang": true, "started":
PATH, "cancelled": PATH}: it writes PATH `started`, never answers, and
writes the `cancelled` file when a notifications/cancelled names that call."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import answer

hanging = {}
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "notifications/cancelled":
        path = hanging.pop(str(params.get("requestId")), None)
        if path:
            with open(path + ".tmp", "w") as f:
                f.write(str(params.get("requestId")))
            os.rename(path + ".tmp", path)
        continue
    mid = msg.get("id")
    if mid is None:
        continue
    args = params.get("arguments") or {}
    if method == "tools/call" and args.get("hang"):
        hanging[str(mid)] = args["cancelled"]
        with open(args["started"], "w") as f:
            f.write("started")
        continue
    answer(mid, method, params)
