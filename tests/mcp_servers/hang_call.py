#!/usr/bin/env python3
"""Connects normally but never answers tools/call."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

serve(lambda mid, method, params: method == "tools/call")
