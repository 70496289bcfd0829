#!/usr/bin/env bash
# Installs what the tests need beyond Rust, Go, Python and a C compiler:
# Debian's libcjson-dev (the C parity harness), valgrind and clang (the Swift
# module maps), and the official
# MCP Python SDK (the test MCP servers) with its dependencies, pinned in
# tests/requirements.txt, in the virtual environment .venv (never the system
# Python). Idempotent; skips what is present.
set -euo pipefail

need_apt=()
[ -f /usr/include/cjson/cJSON.h ] || need_apt+=(libcjson-dev)
command -v valgrind >/dev/null || need_apt+=(valgrind)
command -v cc >/dev/null || need_apt+=(build-essential)
command -v npm >/dev/null || need_apt+=(nodejs npm)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
# The module maps of bindings/swift are checked by clang (install_check.sh).
command -v clang >/dev/null || need_apt+=(clang)
# The PostgreSQL store's tests (scripts/postgres.sh starts a throwaway server).
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
  || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
cd "$(dirname "$0")/.."
. scripts/npm_pinned.sh
if ! cmp -s tests/requirements.txt .venv/requirements.txt 2>/dev/null; then
  [ -x .venv/bin/python3 ] || python3 -m venv .venv
  .venv/bin/python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
  cp tests/requirements.txt .venv/requirements.txt
fi

# MCP Inspector's command-line mode (tests/mcp_inspector.rs), pinned, in a
# prefix of the repo's own under target/.
INSPECTOR_VERSION=2.12.0
INSPECTOR_PREFIX="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools/inspector"
npm_pinned "$INSPECTOR_PREFIX" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
# The A2A JavaScript SDK (@a2a-js/sdk) as a second client of the served agent
# (tests/a2a_js_sdk.rs), pinned, side by side under npm aliases: a2a-js-03 is
# the 0.3 line (speaks the A2A 0.3 wire), a2a-js-1 the 1.x line (speaks 1.0).
A2A_JS_03_VERSION=0.3.14
A2A_JS_1_VERSION=1.3.0
A2A_JS_PREFIX="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools/a2a-js"
npm_pinned "$A2A_JS_PREFIX" "a2a-js-03@npm:@a2a-js/sdk@$A2A_JS_03_VERSION" \
  "a2a-js-1@npm:@a2a-js/sdk@$A2A_JS_1_VERSION"
# cargo-fuzz, for the short fuzz run of .ci/run (scripts/fuzz.sh); only where
# a nightly toolchain is installed, which libFuzzer builds need.
if rustup run nightly rustc --version >/dev/null 2>&1 && ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --quiet --locked cargo-fuzz
fi
# staticcheck for the Go binding (scripts/test.sh), pinned, built from the Go
# module proxy into target/test-tools/go-bin; the Go checks say "skipped"
# when the proxy cannot be reached.
STATICCHECK_VERSION=v0.8.2
GO_TOOLS="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools/go-bin"
if command -v go >/dev/null \
    && ! "$GO_TOOLS/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
  GOBIN="$GO_TOOLS" GOFLAGS=-mod=mod go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" \
    || echo "setup: staticcheck $STATICCHECK_VERSION not installed (module proxy unreachable?)" >&2
fi
