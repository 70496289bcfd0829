#!/usr/bin/env python3
"""Reads everything and never answers, not even initialize."""
import sys
for _ in sys.stdin:
    pass
import time
while True:
    time.sleep(60)
