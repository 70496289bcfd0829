#!/usr/bin/env python3
"""Connects normally, then exits with status 7 in the middle of tools/call."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

def on_request(mid, method, params):
    if method == "tools/call":
        sys.stdout.flush()
        os._exit(7)
    return False

serve(on_request)
