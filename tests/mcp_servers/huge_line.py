#!/usr/bin/env python3
"""tools/call answers with one 5 MB line."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

SIZE = 5 * 1024 * 1024
serve(call=lambda params: {"content": [{"type": "text", "text": "a" * (SIZE - 1) + "z"}]})
