#!/usr/bin/env bash
# Regenerates link/symbol-order.txt (the functions a client run executes, which
# build.rs has lld place together; bench/README.md, "Resident memory").
#
#   bench/gen_symbol_order.sh
#
# Builds the release library without the current order (TN_NO_SYMBOL_ORDER=1),
# runs bench/c/bench_overhead against it under valgrind's callgrind (plain, then
# with --on-metric --render) and lists every function of the library those runs
# executed, then rebuilds the release library with the new order. Run it after
# changes to the loop, the MCP client or the dependencies; a stale list only
# loses some of the benefit (link/cc-order matches the names to each build's,
# whose hashes differ; names a build no longer has are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "gen_symbol_order.sh: valgrind is needed" >&2; exit 1; }
work=$(mktemp -d)
mock_pid=
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

TN_NO_SYMBOL_ORDER=1 cargo build --release --lib --quiet
# The runner loads the library by its soname, as from an install.
mkdir -p "$work/lib"
cp target/release/libtoolnexus.so "$work/lib/libtoolnexus.so"
soname=$(readelf -d "$work/lib/libtoolnexus.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
ln -s libtoolnexus.so "$work/lib/$soname"
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude bench/c/bench_overhead.c \
   -L "$work/lib" -ltoolnexus -Wl,-rpath,"$work/lib" -o "$work/bench_overhead"
cc -O2 -pthread bench/c/overhead_mock_llm.c -o "$work/mock_llm"
cc -O2 bench/c/overhead_mcp_server.c -o "$work/mcp_server"
"$work/mock_llm" 0 > "$work/port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(head -1 "$work/port")"
n=0
for extra in "" "--on-metric --render"; do
  n=$((n + 1))
  # shellcheck disable=SC2086 # $extra is a list of flags
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.$n" \
    "$work/bench_overhead" --url "$url" --mcp "$work/mcp_server" --runs 20 --warmup 5 $extra \
    > "$work/out.$n" 2> "$work/err.$n" || { tail -5 "$work/err.$n" >&2; exit 1; }
  grep -q '"final_ok":true' "$work/out.$n" || { echo "gen_symbol_order.sh: run $n did not answer" >&2; exit 1; }
done
python3 bench/gen_symbol_order.py "$work/lib/libtoolnexus.so" "$work"/cg.* > link/symbol-order.txt
echo "link/symbol-order.txt: $(grep -vc '^#' link/symbol-order.txt) functions" >&2
cargo build --release --lib --quiet
