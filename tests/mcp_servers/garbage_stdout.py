#!/usr/bin/env python3
"""Prints garbage lines on stdout around every answer: non-JSON, JSON that is
not JSON-RPC, an answer to an id nobody asked for, binary noise."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

def noise(mid, method, params):
    sys.stdout.write("this is not json\n")
    sys.stdout.write("{\"half\": \n")
    sys.stdout.write("[1, 2, 3]\n")
    sys.stdout.write("{\"jsonrpc\": \"2.0\", \"id\": 987654, \"result\": {}}\n")
    sys.stdout.flush()
    sys.stdout.buffer.write(b"\x00\x01\x02 binary \xff\xfe\n")
    sys.stdout.buffer.flush()
    return False

serve(noise)
