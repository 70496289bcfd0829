#!/usr/bin/env bash
# Instruction counts (callgrind) of four headline rows, for one checkout:
#
#   translate_conversion  instructions per conversion (20 messages, 20 tools),
#                         benches/translate.rs with TN_TRANSLATE_ITERS, the
#                         (1100 - 100) difference over 1,000
#   run_overhead          instructions of the host process per tn_run of the
#                         overhead scenario (bench/c/bench_overhead.c: 2 LLM
#                         round trips, 2 MCP tool calls), the (60 - 10) runs
#                         difference over 50; the mock provider and the MCP
#                         server are not traced
#   serve_stdio_read      gateway instructions per served stdio tools/call of
#                         the builtin `read` (bench/serve_callgrind.py)
#   build_1000_skills     the whole process of `bench_skills DIR rss`: load,
#                         one build of 1,000 generated skills, exit
#
# Instruction counts repeat from run to run on this shared machine, where
# wall-clock figures do not, so two checkouts can be compared at any load:
#
#   bench/house_callgrind.sh [CHECKOUT] [TARGET_DIR]
#
# CHECKOUT defaults to this repository, TARGET_DIR to its target/. Prints one
# `name instructions` line per row.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "${1:-$here/..}" && pwd)
target=${2:-$repo/target}
export CARGO_TARGET_DIR=$target
work=$(mktemp -d)
mock_pid=
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

command -v valgrind >/dev/null || { echo "house_callgrind: needs valgrind" >&2; exit 1; }
(cd "$repo" && cargo build --release --quiet --lib --bin toolnexus \
  && cargo bench --bench translate --no-run --quiet 2>/dev/null)
bench_bin=$(ls -t "$target"/release/deps/translate-* 2>/dev/null | grep -v '\.d$' | head -1)

# The shared library carries the soname libtoolnexus.so.0: link a copy by it.
mkdir -p "$work/lib"
cp "$target/release/libtoolnexus.so" "$work/lib/libtoolnexus.so.0"
ln -s libtoolnexus.so.0 "$work/lib/libtoolnexus.so"
cflags="-O2 -I$repo/include -L$work/lib -Wl,-rpath,$work/lib"
cc -std=c11 -D_POSIX_C_SOURCE=200809L $cflags "$repo/bench/c/bench_overhead.c" -ltoolnexus -o "$work/bench_overhead"
cc $cflags "$repo/bench/c/bench_skills.c" -ltoolnexus -o "$work/bench_skills"
cc -O2 -pthread "$repo/bench/c/overhead_mock_llm.c" -o "$work/mock_llm"
cc -O2 "$repo/bench/c/overhead_mcp_server.c" -o "$work/mcp_server"

# Total instructions of one traced process (callgrind's "summary:" line).
count() {
  local out="$work/cg.out"
  rm -f "$out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"
}
per() { echo $(( ($1 - $2) / $3 )); }

a=$(TN_TRANSLATE_ITERS=1100 count "$bench_bin" --bench)
b=$(TN_TRANSLATE_ITERS=100 count "$bench_bin" --bench)
echo "translate_conversion $(per "$a" "$b" 1000)"

"$work/mock_llm" 0 > "$work/port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(head -1 "$work/port")"
a=$(count "$work/bench_overhead" --url "$url" --mcp "$work/mcp_server" --runs 60 --warmup 0)
b=$(count "$work/bench_overhead" --url "$url" --mcp "$work/mcp_server" --runs 10 --warmup 0)
echo "run_overhead $(per "$a" "$b" 50)"

serve=$(PATH="${VENV_BIN:-$repo/.venv/bin}:$PATH" TOOLNEXUS_BIN="$target/release/toolnexus" python3 "$repo/bench/serve_callgrind.py" 250 50 2>/dev/null \
  | awk '/read/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9][0-9,.]*$/) {gsub(",", "", $i); print $i; exit}}')
echo "serve_stdio_read ${serve:-?}"

python3 "$repo/bench/gen_skills.py" "$work/skills" 1000 >/dev/null
echo "build_1000_skills $(count "$work/bench_skills" "$work/skills" rss)"
