#!/usr/bin/env python3
"""Writes the SigBlk line of its own /proc status (the signal mask it was
started with; CPython leaves the mask alone) to argv[1], then serves."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

with open("/proc/self/status") as f:
    line = next(l for l in f if l.startswith("SigBlk:"))
with open(sys.argv[1], "w") as out:
    out.write(line)
serve()
