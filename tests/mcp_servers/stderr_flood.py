#!/usr/bin/env python3
"""Writes 256 KB to stderr before every answer: a client that does not drain
stderr deadlocks once the pipe buffer (64 KB) is full."""
import sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
from hostile_base import serve

def flood(mid, method, params):
    for _ in range(256):
        sys.stderr.write("e" * 1023 + "\n")
    sys.stderr.flush()
    return False

serve(flood)
