#!/usr/bin/env bash
# The issue-3 benchmark side by side in one run: read / grep / glob through
# the C ABI (JSON in and out) against cat, rg, GNU grep and find on the same
# tree, and the Python toolnexus 0.21.0 port in process.
# Needs hyperfine and ripgrep (apt-get install -y hyperfine ripgrep).
# TN_PYTHON names a python that has the port; by default bench/.venv, made
# here when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${TN_BENCH_TREE:-target/bench-tree}
[ -f "$OUT/read-1mib.txt" ] || python3 bench/gen_tree.py "$OUT"
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The shared library as installed (its soname needs the libtoolnexus.so.X link).
PREFIX="$work/prefix" scripts/install.sh
cc -O2 -Wall -Wextra bench/c/bench_builtins.c \
   $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs toolnexus) \
   -Wl,-rpath,"$work/prefix/lib" -o "$work/bench_builtins"
PY=${TN_PYTHON:-bench/.venv/bin/python}
if [ -z "${TN_PYTHON:-}" ] && [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv && bench/.venv/bin/pip install --quiet toolnexus==0.21.0
fi
"$work/bench_builtins" "$OUT"
PAT='TNX_NEEDLE_[0-9]+_ZQ'
hyperfine -N --warmup 3 --runs 20 --export-json "$work/h.json" \
  -n "cat" "cat $OUT/read-1mib.txt" \
  -n "rg -n" "rg -n $PAT $OUT/tree" -n "grep -rEn" "grep -rEn $PAT $OUT/tree" \
  -n "find -name" "find $OUT/tree -name '*.txt'" >/dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']} {r['median']:.6f}")
PY
"$PY" bench/python_port.py "$OUT" 15
