#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, conformance), the Go
# package with its parity harness (-race, and once with GOGC=1), and the C
# layer (warnings as errors, valgrind, ASan+UBSan, C++ header compile, the C
# parity harness), the demo of the README, the installed library used from
# outside the repository (scripts/install_check.sh) and by every runnable code
# block of README.md and docs/ (scripts/doc_blocks.py). scripts/setup.sh installs
# what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
# Every `python3` a test spawns (the MCP servers of the Rust, Go and C tests
# and of the vectors) is the pinned virtual environment's (tests/requirements.txt).
export PATH="$PWD/.venv/bin:$PATH"

echo "== [${SECONDS}s] cargo test"
# Benchmarks are not run here (timing belongs to bench/); CI's clippy
# --all-targets compiles them.
cargo test --lib --bins --tests -- --nocapture 2>&1 | grep -E '^(test result|FAIL|.*parity:)|^test .* ignored|panicked|^error' ; test "${PIPESTATUS[0]}" -eq 0

echo "== [${SECONDS}s] demo (the README's first command, against its bundled mock provider)"
# The same debug build as the tests above: nothing is compiled again.
cargo run --quiet --example demo > /dev/null

echo "== [${SECONDS}s] install (scripts/install.sh: the release build under a temporary PREFIX)"
prefix_root=$(mktemp -d)
trap 'rm -rf "$prefix_root"' EXIT
PREFIX="$prefix_root/prefix" scripts/install.sh
# The Go tests below link the installed shared library through pkg-config,
# as a user's module does (docs/bindings.md, "Go").
export PKG_CONFIG_PATH="$prefix_root/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix_root/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Part of Go's cache key (pkg-config's answer is not): see install_check.sh.
export CGO_LDFLAGS="-L$prefix_root/prefix/lib"

echo "== [${SECONDS}s] the installed library from outside the repository (C shared, C static, a Go module)"
scripts/install_check.sh "$prefix_root/prefix"

echo "== [${SECONDS}s] the docs' runnable code blocks, against the installed library (scripts/doc_blocks.py)"
python3 scripts/doc_blocks.py "$prefix_root/prefix"

if [ -d bindings/go ] && [ -f bindings/go/go.mod ]; then
  echo "== [${SECONDS}s] go vet and staticcheck (shared and toolnexus_static builds)"
  (cd bindings/go && go vet ./... && go vet -tags toolnexus_static ./...)
  if [ -x target/test-tools/go-bin/staticcheck ]; then
    (cd bindings/go && ../../target/test-tools/go-bin/staticcheck ./... \
      && ../../target/test-tools/go-bin/staticcheck -tags toolnexus_static ./...)
  else
    echo "staticcheck: skipped (scripts/setup.sh could not install it)"
  fi
  echo "== [${SECONDS}s] go test -race"
  (cd bindings/go && go test -race -count=1 -v ./... 2>&1 | grep -E '^(parity|--- FAIL|FAIL|ok|PASS)' ; test "${PIPESTATUS[0]}" -eq 0)
  echo "== [${SECONDS}s] go test GOGC=1"
  (cd bindings/go && GOGC=1 go test -count=1 ./...)
fi

if [ -f bindings/python/pyproject.toml ]; then
  echo "== [${SECONDS}s] python binding (a wheel with the library inside, in a fresh venv, no TOOLNEXUS_LIB)"
  # The wheel's build hook runs the release build the install step made (a
  # no-op) and bundles it; the pytest suite and parity harness run against it.
  scripts/python_wheel_check.sh
fi

if [ -f bindings/c/Makefile ]; then
  echo "== [${SECONDS}s] C layer (its programs two or more at a time: valgrind runs one thread)"
  make -j"$(nproc)" -C bindings/c ci
fi
echo "all tests passed"
