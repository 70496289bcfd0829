#!/usr/bin/env bash
# Host-call benchmarks in one run, ours against the Python port, as a
# Markdown table:
#   - trivial host tool round trip through the C ABI from C (bench/c/bench_host.c)
#   - the same from Go (BenchmarkGoToolRoundTrip), and 8 goroutines total calls/s
#     (BenchmarkGoToolParallel8)
#   - 8 C threads total calls/s
#   - an HTTP tool GET against a keep-alive server on 127.0.0.1 through the ABI
#   - the Python port (toolnexus 0.21.0 in bench/.venv) on the same work
#     (bench/host_python.py)
#
#   bench/run_host.sh [RUNS]     RUNS (default 3) runs of each; medians reported
#
# Set up the Python side once with:
#   python3 -m venv bench/.venv && bench/.venv/bin/pip install toolnexus==0.21.0
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet
cc -std=c11 -O2 -Wall -Wextra -Iinclude bench/c/bench_host.c target/release/libtoolnexus.a \
   -lpthread -ldl -lm -o "$work/bench_host"

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
pick() { awk -v k="$1" '$1==k {print $2}' "$2" | median; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in $(seq "$runs"); do
  "$work/bench_host" 200 >> "$work/c.txt"
done

# The Go binding links the installed library through pkg-config.
PREFIX="$work/prefix" scripts/install.sh
(cd bindings/go && PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" LD_LIBRARY_PATH="$work/prefix/lib" go test -run '^$' -bench 'GoToolRoundTrip$|GoToolParallel8$' \
   -benchtime 200000x -count "$runs") > "$work/go.txt"
go_rt=$(awk '/BenchmarkGoToolRoundTrip/ {print $3/1000}' "$work/go.txt" | median)
go_par=$(awk '/BenchmarkGoToolParallel8/ {printf "%.0f\n", 1e9/$3}' "$work/go.txt" | median)

py=bench/.venv/bin/python
have_py=0
if [ -x "$py" ] && "$py" -c 'import toolnexus' 2>/dev/null; then
  have_py=1
  for i in $(seq "$runs"); do
    "$py" bench/host_python.py 20 >> "$work/py.txt"
  done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

c_rt=$(pick host_round_trip_us "$work/c.txt")
c_par=$(pick host_parallel8_calls_per_s "$work/c.txt")
c_http=$(pick http_get_us "$work/c.txt")
if [ "$have_py" = 1 ]; then
  p_rt=$(pick host_round_trip_us "$work/py.txt")
  p_par=$(pick host_parallel8_calls_per_s "$work/py.txt")
  p_http=$(pick http_get_us "$work/py.txt")
else
  p_rt=NaN; p_par=NaN; p_http=NaN
fi

ratio_time() { awk -v o="$1" -v p="$2" 'BEGIN { if (p == "NaN" || o == 0) print "-"; else printf "%.0fx faster\n", p / o }'; }
ratio_rate() { awk -v o="$1" -v p="$2" 'BEGIN { if (p == "NaN" || p == 0) print "-"; else printf "%.0fx\n", o / p }'; }

echo
echo "| work | toolnexus-rs | Python port 0.21.0 | ratio | target |"
echo "|---|---|---|---|---|"
echo "| trivial host tool, C caller, per call | ${c_rt} µs | ${p_rt} µs | $(ratio_time "$c_rt" "$p_rt") | < 2 µs |"
echo "| trivial Go tool, Go caller, per call | ${go_rt} µs | ${p_rt} µs | $(ratio_time "$go_rt" "$p_rt") | - |"
echo "| trivial Go tool, 8 goroutines, total | ${go_par} calls/s | ${p_par} calls/s (8 threads) | $(ratio_rate "$go_par" "$p_par") | ≥ 326,250 calls/s (50x 6,525) |"
echo "| trivial host tool, 8 C threads, total | ${c_par} calls/s | ${p_par} calls/s (8 threads) | $(ratio_rate "$c_par" "$p_par") | - |"
echo "| HTTP tool GET, local keep-alive server, per call | ${c_http} µs | ${p_http} µs | $(ratio_time "$c_http" "$p_http") | < 200 µs |"
echo
echo "Medians of $runs runs; machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)."
