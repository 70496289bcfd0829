#!/usr/bin/env python3
"""Tallies cancelled calls (src/mcp/direct_tests.rs). Its protocol
(2024-11-05) has an initialize handshake, so the client's tools/calls go
direct. Every tools/call but `tally` hangs (never answered); a
notifications/cancelled naming one is `followed` when its request came
first, an `orphan` otherwise. `tally` answers {requests, followed,
orphans}: every request seen for a cancelled call is followed by its cancel
when requests == followed and orphans == 0."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import answer, send

seen = set()
followed = set()
orphans = 0
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method = msg.get("method")
    params = msg.get("params") or {}
    mid = msg.get("id")
    if method == "notifications/cancelled":
        rid = params.get("requestId")
        if rid in seen and rid not in followed:
            followed.add(rid)
        else:
            orphans += 1
        continue
    if mid is None:
        continue
    if method == "tools/call" and params.get("name") == "tally":
        report = {"requests": len(seen), "followed": len(followed), "orphans": orphans}
        send({"jsonrpc": "2.0", "id": mid,
              "result": {"content": [{"type": "text", "text": json.dumps(report)}]}})
    elif method == "tools/call":
        seen.add(mid)
    else:
        answer(mid, method, params)
