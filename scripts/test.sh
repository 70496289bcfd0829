#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, conformance), the Go
# package with its parity harness (-race, and once with GOGC=1), and the C
# layer (warnings as errors, valgrind, ASan+UBSan, C++ header compile, the C
# parity harness), and the demo of the README. scripts/setup.sh installs what
# it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

echo "== cargo test"
# Benchmarks are not run here (timing belongs to bench/); CI's clippy
# --all-targets compiles them.
cargo test --lib --bins --tests -- --nocapture 2>&1 | grep -E '^(test result|FAIL|.*parity:)|panicked|^error' ; test "${PIPESTATUS[0]}" -eq 0

echo "== release library"
cargo build --release --quiet

echo "== demo (the README's first command, against its bundled mock provider)"
cargo run --release --quiet --example demo > /dev/null

if [ -d bindings/go ] && [ -f bindings/go/go.mod ]; then
  echo "== go test -race"
  (cd bindings/go && go test -race -count=1 -v ./... 2>&1 | grep -E '^(parity|--- FAIL|FAIL|ok|PASS)' ; test "${PIPESTATUS[0]}" -eq 0)
  echo "== go test GOGC=1"
  (cd bindings/go && GOGC=1 go test -count=1 ./...)
fi

if [ -f bindings/python/pyproject.toml ]; then
  echo "== python binding (installed into a fresh venv, against the release library)"
  venv="$(mktemp -d)/venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check ./bindings/python "pytest==8.3.4"
  (cd "$venv" && TOOLNEXUS_LIB="$OLDPWD/target/release/libtoolnexus.so" \
    "$venv/bin/python" -m pytest -q -s -p no:cacheprovider "$OLDPWD/bindings/python/tests" 2>&1 \
    | grep -E '^(parity|FAIL|FAILED|ERROR)|passed|failed' ; test "${PIPESTATUS[0]}" -eq 0)
  rm -rf "$(dirname "$venv")"
fi

if [ -f bindings/c/Makefile ]; then
  echo "== C layer"
  make -C bindings/c ci
fi
echo "all tests passed"
