#!/usr/bin/env bash
# Runs the Rust, Go and Python suites N times while a second copy of the Rust
# suite keeps both cores busy, and counts the failures: a test that fails once
# in twenty runs under load is a defect of the product or of the test.
#
#   scripts/flake_hunt.sh N          (default 10)
#
# Prints one line per failing run (the suite, the run, each failing test's
# name) and last `flake hunt: N runs, F failures`. Exits 1 when F > 0. The
# load is the same test binaries run again in a loop (no second build), so
# every test here also competes with itself for ports, pids and files.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
scripts/setup.sh >/dev/null
export PATH="$PWD/.venv/bin:$PATH"
work=$(mktemp -d)
load_pid=
cleanup() {
  [ -n "$load_pid" ] && kill -- -"$load_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build (debug tests, release library for Go and Python)"
cargo test --lib --bins --tests --no-run --quiet || exit 1
PREFIX="$work/prefix" scripts/install.sh >/dev/null || exit 1
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CGO_LDFLAGS="-L$work/prefix/lib"
venv="$work/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check ./bindings/python "pytest==8.3.4" || exit 1

# The load: the Rust suite again and again, in its own process group.
set -m
( while :; do cargo test --lib --bins --tests --quiet >/dev/null 2>&1; done ) &
load_pid=$!
set +m

failures=0
note() { # suite run log: the failing tests' names from a runner's log
  local names
  names=$(grep -E '^test .* FAILED$|^--- FAIL: |^FAILED ' "$3" \
    | sed -E 's/^test (.*) \.\.\. FAILED$/\1/; s/^--- FAIL: ([^ ]*).*/\1/; s/^FAILED ([^ ]*).*/\1/' \
    | sort -u | tr '\n' ' ')
  echo "flake: $1 run $2: ${names:-(no test named)}"
  # The log goes with the work folder: what the failure said is kept here.
  tail -n 60 "$3"
  failures=$((failures + 1))
}
for i in $(seq "$runs"); do
  log="$work/rust.$i.log"
  cargo test --lib --bins --tests --no-fail-fast >"$log" 2>&1 || note rust "$i" "$log"
  log="$work/go.$i.log"
  (cd bindings/go && go test -count=1 ./...) >"$log" 2>&1 || note go "$i" "$log"
  log="$work/py.$i.log"
  (cd "$work" && TOOLNEXUS_LIB="$work/prefix/lib/libtoolnexus.so" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/bindings/python/tests") >"$log" 2>&1 \
    || note python "$i" "$log"
  echo "flake hunt: run $i of $runs done, $failures failures so far"
done
echo "flake hunt: $runs runs, $failures failures"
[ "$failures" -eq 0 ]
