#!/usr/bin/env bash
# Checks that the dev-dependencies turn on no feature of a crate the library
# builds with (Cargo.toml, "Feature pins"). When they do, `cargo build` and
# `cargo test` (or `--example`) compile the library, and every crate between
# it and the one that differs, twice, each build undoing the other's: before
# zerocopy's pin the release build and the perf guard's example took about
# 4 minutes each, in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One after the other: two at once wait on cargo's package-cache lock.
cargo tree --locked -e normal,build -f '{p} [{f}]' --prefix none > "$tmp/normal"
cargo tree --locked -e normal,build,dev -f '{p} [{f}]' --prefix none > "$tmp/dev"
python3 - "$tmp/normal" "$tmp/dev" <<'PY'
import re, sys
def read(path):
    seen = {}
    for line in open(path):
        m = re.match(r"(\S+ v\S+)(?: \(proc-macro\))?(?: \([^)]*\))? \[(.*?)\]", line.strip())
        if m:
            seen.setdefault(m.group(1), set()).add(m.group(2))
    return seen
normal, with_dev = read(sys.argv[1]), read(sys.argv[2])
bad = [f"  {k}: [{' | '.join(sorted(normal[k]))}] becomes [{' | '.join(sorted(with_dev[k]))}]"
       for k in sorted(normal) if normal[k] != with_dev.get(k, normal[k])]
if bad:
    print("feature pins: the dev-dependencies change the features of crates the library builds with:")
    print("\n".join(bad))
    print('pin them in Cargo.toml\'s [dependencies] ("Feature pins")')
    sys.exit(1)
print(f"feature pins: ok ({len(normal)} crates keep one feature set with the dev-dependencies)")
PY
