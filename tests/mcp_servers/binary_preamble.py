#!/usr/bin/env python3
"""Writes a 6,176,768-byte binary preamble to stdout before its first
JSON-RPC line, then serves normally (raw JSON-RPC lines).

The preamble is 6,032 lines of 1,024 bytes, each a digit, then 1,022 bytes
that are no newline and mostly not UTF-8. Every line starts like a JSON
value without being a message: a client that answers each with an error
before it reads on writes ~430 KB into a stdin this server does not read
until the preamble is out, and both sides block (issue 14's stall; the
probe that found it used random bytes, where only the count of such lines
decided, which made one length stall and the next not)."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

FILLER = bytes(b for b in range(256) if b != 0x0A)
LINES = 6032
out = sys.stdout.buffer
for i in range(LINES):
    line = str(i % 10).encode() + (FILLER * 5)[: 1022] + b"\n"
    out.write(line)
out.flush()
serve()
