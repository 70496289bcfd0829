#!/usr/bin/env python3
"""Lists tools without description or inputSchema, over three pages."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from hostile_base import serve

PAGES = {None: ({"name": "bare"}, "c2"), "c2": ({"name": "keep", "description": "d"}, "c3"),
         "c3": ({"name": "drop", "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}}}, None)}

def page(params):
    tool, nxt = PAGES[params.get("cursor")]
    out = {"tools": [tool]}
    if nxt:
        out["nextCursor"] = nxt
    return out

serve(list_page=page)
