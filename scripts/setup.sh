#!/usr/bin/env bash
# Installs what the tests need beyond Rust, Go, Python and a C compiler:
# Debian's libcjson-dev (the C parity harness) and valgrind, and the official
# MCP Python SDK (the test MCP servers). Idempotent; skips what is present.
set -euo pipefail

need_apt=()
[ -f /usr/include/cjson/cJSON.h ] || need_apt+=(libcjson-dev)
command -v valgrind >/dev/null || need_apt+=(valgrind)
command -v cc >/dev/null || need_apt+=(build-essential)
command -v npm >/dev/null || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if ! python3 -c 'import mcp.server' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check mcp
fi

# MCP Inspector's command-line mode (tests/mcp_inspector.rs), pinned, in a
# prefix of the repo's own under target/.
INSPECTOR_VERSION=2.12.0
INSPECTOR_PREFIX="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools/inspector"
if ! grep -qs "\"version\": \"$INSPECTOR_VERSION\"" \
    "$INSPECTOR_PREFIX/node_modules/@modelcontextprotocol/inspector/package.json"; then
  mkdir -p "$INSPECTOR_PREFIX"
  npm install --prefix "$INSPECTOR_PREFIX" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null
fi
