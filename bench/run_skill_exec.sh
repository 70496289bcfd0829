#!/usr/bin/env bash
# Issue 15: the `skill` tool through the C ABI beside its syscall floor (the
# same three directory listings in C, bench/c/bench_skill_exec.c), and the
# Python toolnexus 0.21.0 port's execute on the same skill, in one run.
# usage: bench/run_skill_exec.sh [ROUNDS]   (TN_PYTHON names the port's python)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-21}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 bench/gen_skills.py "$work/skills" 1000
cargo build --release --quiet
PREFIX="$work/prefix" scripts/install.sh
cc -O2 -Wall -Wextra bench/c/bench_skill_exec.c \
   $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs toolnexus) \
   -Wl,-rpath,"$work/prefix/lib" -o "$work/bench_skill_exec"
"$work/bench_skill_exec" "$work/skills" "$rounds"
PY=${TN_PYTHON:-bench/.venv/bin/python}
if [ -x "$PY" ]; then
  "$PY" - "$work/skills" <<'PY'
import asyncio, statistics, sys, time
import toolnexus
tk = asyncio.run(toolnexus.create_toolkit(skills_dir=sys.argv[1]))
loop = asyncio.new_event_loop()
times = []
for _ in range(501):
    t0 = time.perf_counter()
    loop.run_until_complete(tk.execute("skill", {"name": "skill-0500"}))
    times.append(time.perf_counter() - t0)
print(f"execute_skill_python_0.21 {statistics.median(times):.9f}")
PY
fi
