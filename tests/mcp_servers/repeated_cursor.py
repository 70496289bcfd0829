#!/usr/bin/env python3
"""tools/list pages forever by handing back the same cursor."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve, TOOLS

serve(list_page=lambda params: {"tools": TOOLS, "nextCursor": "again"})
