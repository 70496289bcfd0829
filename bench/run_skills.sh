#!/usr/bin/env bash
# The issue-2 benchmark, side by side in one run: this library through the C
# ABI and the Python toolnexus 0.21.0 port on the same 1,000-skill tree, plus
# the peak RSS of each process (GNU time) and the cold start of each (issue
# 15: load, build the builtins and examples/skills, render, exit; whole
# processes in interleaved rounds, /bin/true beside them). The
# `floor_walk_read_1000` row is the syscall floor of the build, measured by
# bench_skills itself. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 bench/gen_skills.py "$work/skills" 1000
cargo build --release --quiet
# The shared library as installed (its soname needs the libtoolnexus.so.X link).
PREFIX="$work/prefix" scripts/install.sh
cc -O2 -Wall -Wextra bench/c/bench_skills.c \
   $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs toolnexus) \
   -Wl,-rpath,"$work/prefix/lib" -o "$work/bench_skills"
cc -O2 -Wall -Wextra bench/c/bench_cold.c \
   $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs toolnexus) \
   -Wl,-rpath,"$work/prefix/lib" -o "$work/bench_cold"
cc -O2 -Wall -Wextra bench/c/bench_spawn.c -o "$work/bench_spawn"
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet toolnexus==0.21.0
fi
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || true; }

"$work/bench_skills" "$work/skills" > "$work/rust.txt"
bench/.venv/bin/python bench/skills_python.py "$work/skills" > "$work/python.txt"
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print $2}'; }
rust_rss=$(rss "$work/bench_skills" "$work/skills" rss)
py_rss=$(rss bench/.venv/bin/python bench/skills_python.py "$work/skills" rss)
"$work/bench_spawn" 41 true /bin/true \
  -- rust "$work/bench_cold" examples/skills \
  -- python bench/.venv/bin/python bench/skills_python.py examples/skills cold > "$work/cold.txt"

python3 - "$work/rust.txt" "$work/python.txt" "$rust_rss" "$py_rss" "$work/cold.txt" <<'PY'
import sys
def load(p): return {l.split()[0]: float(l.split()[1]) for l in open(p) if l.strip()}
r, p, cold = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[5])
def fmt(s): return f"{s*1e3:.3f} ms" if s >= 1e-3 else f"{s*1e6:.1f} µs"
print("| work | toolnexus-rs (C ABI) | Python 0.21.0 | ratio |")
print("|---|---|---|---|")
for k in r:
    if k in p:
        print(f"| {k} | {fmt(r[k])} | {fmt(p[k])} | {p[k]/r[k]:.1f}× |")
    else:
        print(f"| {k} | {fmt(r[k])} | | |")
print(f"| cold start (load, build builtins + examples/skills, render, exit) | {fmt(cold['rust'])} "
      f"| {fmt(cold['python'])} | {cold['python']/cold['rust']:.1f}× |")
print(f"| `/bin/true` as a process, same rounds | {fmt(cold['true'])} | | |")
print(f"| peak RSS, build 1,000 skills | {int(sys.argv[3])/1024:.1f} MB | {int(sys.argv[4])/1024:.1f} MB | |")
PY
