"""Shared plumbing for the hostile test servers: a minimal line-delimited
JSON-RPC MCP server whose behaviour each script bends in one way."""
import json
import sys

TOOLS = [{"name": "ping", "description": "Answers pong.", "inputSchema": {"type": "object"}}]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer(mid, method, params, call=None, tools=None, list_page=None):
    """The default answer to one request."""
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"}}})
    elif method == "tools/list":
        if list_page is not None:
            send({"jsonrpc": "2.0", "id": mid, "result": list_page(params)})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools or TOOLS}})
    elif method == "tools/call":
        result = call(params) if call else {"content": [{"type": "text", "text": "pong"}]}
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


def serve(on_request=None, **kw):
    """Reads requests until EOF; on_request(mid, method, params) may return
    True when it handled the request itself."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        mid = msg.get("id")
        if mid is None:
            continue
        method = msg.get("method")
        params = msg.get("params") or {}
        if on_request and on_request(mid, method, params):
            continue
        answer(mid, method, params, **kw)
