#!/bin/sh
# Side-by-side medians on the same tree, in the same run: this library's
# builtins (as a process, through examples/tn_builtin) against `rg -n`,
# `grep -rEn`, `find -name` and `cat`, with hyperfine; then the in-process
# criterion figures (cargo bench --bench builtins) and, when installed, the
# Python port's.
#
#   bench/builtins_compare.sh            # tree under target/bench-tree
#   TN_BENCH_TREE=/tmp/t bench/builtins_compare.sh
#
# Needs python3 and hyperfine (apt-get install -y hyperfine ripgrep). TN_PYTHON
# names a python with the Python port installed (pip install toolnexus==0.21.0).
set -eu
cd "$(dirname "$0")/.."
OUT=${TN_BENCH_TREE:-target/bench-tree}
RUNS=${RUNS:-30}
[ -f "$OUT/read-1mib.txt" ] || python3 bench/gen_tree.py "$OUT"
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
cargo build --quiet --release --example tn_builtin
TN=target/release/examples/tn_builtin
TREE=$OUT/tree
PAT='TNX_NEEDLE_[0-9]+_ZQ'
JSON=$(mktemp -d)
trap 'rm -rf "$JSON"' EXIT

run() { # name, then hyperfine -n/command pairs
    file=$JSON/$1.json; shift
    hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$file" "$@" >/dev/null
}
run grep -n "toolnexus grep" "$TN grep '{\"pattern\":\"$PAT\",\"path\":\"$TREE\"}'" \
         -n "rg -n" "rg -n $PAT $TREE" \
         -n "grep -rEn" "grep -rEn $PAT $TREE"
run glob -n "toolnexus glob" "$TN glob '{\"pattern\":\"**/*.txt\",\"path\":\"$TREE\"}'" \
         -n "find -name" "find $TREE -name '*.txt'"
run read -n "toolnexus read" "$TN read '{\"path\":\"$OUT/read-1mib.txt\"}'" \
         -n "cat" "cat $OUT/read-1mib.txt"

python3 - "$JSON" <<'PY'
import json, os, sys
d = sys.argv[1]
print("process medians (hyperfine, process start included):")
for name in ("grep", "glob", "read"):
    res = json.load(open(os.path.join(d, name + ".json")))["results"]
    base = res[0]["median"]
    for r in res:
        ratio = "" if r is res[0] else f"  (toolnexus = {base / r['median']:.2f}x this)"
        print(f"  {r['command']:<16} {r['median'] * 1000:8.2f} ms{ratio}")
PY
${TN_PYTHON:-python3} bench/python_port.py "$OUT" 15
if [ "${SKIP_CRITERION:-}" = "" ]; then
    TN_BENCH_TREE=$OUT cargo bench --quiet --bench builtins 2>/dev/null | grep -E "^[a-z].*|time:"
fi
