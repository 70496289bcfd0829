#!/usr/bin/env bash
# Installs what the tests need beyond Rust, Go, Python and a C compiler:
# Debian's libcjson-dev (the C parity harness) and valgrind, and the official
# MCP Python SDK (the test MCP servers). Idempotent; skips what is present.
set -euo pipefail

need_apt=()
[ -f /usr/include/cjson/cJSON.h ] || need_apt+=(libcjson-dev)
command -v valgrind >/dev/null || need_apt+=(valgrind)
command -v cc >/dev/null || need_apt+=(build-essential)
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
# cargo-fuzz, for the short fuzz run of .ci/run (scripts/fuzz.sh); only where
# a nightly toolchain is installed, which libFuzzer builds need.
if rustup run nightly rustc --version >/dev/null 2>&1 && ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --quiet --locked cargo-fuzz
fi
