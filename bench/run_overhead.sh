#!/usr/bin/env bash
# The client-loop overhead benchmark (issue 11), in interleaved rounds.
#
# The scenario of upstream's overhead benchmark, with this repository's own
# mock provider and MCP server (both in C, so that what a run costs is the
# runner's work): one question answered by two parallel tool calls through a
# stdio MCP server, then a final answer — 2 LLM round trips and 2 MCP tool
# calls per run. Each runner is its own process under GNU time (peak RSS) and
# prints its init time and per-run latencies; this script takes medians.
#
#   toolnexus-rs            bench/c/bench_overhead.c against the installed
#                           library (tn_toolkit_build + tn_client_new, tn_run);
#                           it also leaves the client idle for a second after
#                           its runs and reports the CPU time spent meanwhile
#   toolnexus-rs + metrics  the same with an onMetric callback set and
#                           tn_client_metrics rendered after every run (the
#                           rendering timed apart, outside the run's clock)
#   floor                   bench/c/overhead_floor.c: the same bytes over the
#                           same wire (two HTTP/1.1 POSTs, two tools/call lines)
#                           with no client library at all
#   Python port 0.21.0      bench/overhead_python.py (its create_toolkit /
#                           create_client / client.run)
#   Go port (optional)      GO_BIN=path of a runner built from upstream's
#                           benchmarks/run_toolnexus_go; this script never builds
#                           it. It is run as upstream runs it (-config mcp), with
#                           MCP_PYTHON pointing at our MCP server.
#
#   bench/run_overhead.sh [ROUNDS] [RUNS]      (defaults 5 rounds of 500 runs)
#
# The Python side is installed on first use into bench/.venv
# (toolnexus==0.21.0), as the other bench scripts do.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
runs=${2:-500}
warmup=${WARMUP:-50}
work=$(mktemp -d)
mock_pid=
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cargo build --release --lib --quiet
PREFIX="$work/prefix" TN_INSTALL_NO_BUILD=1 scripts/install.sh >/dev/null
pc() { PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config "$@" toolnexus; }
cc -std=c11 -O2 -Wall -Wextra -D_POSIX_C_SOURCE=200809L bench/c/bench_overhead.c $(pc --cflags --libs) \
   -Wl,-rpath,"$work/prefix/lib" -o "$work/bench_overhead"
cc -O2 -Wall -Wextra -pthread bench/c/overhead_mock_llm.c -o "$work/mock_llm"
cc -O2 -Wall -Wextra bench/c/overhead_mcp_server.c -o "$work/mcp_server"
cc -O2 -Wall -Wextra bench/c/overhead_floor.c -o "$work/floor"
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet toolnexus==0.21.0
fi
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || true; }

"$work/mock_llm" 0 > "$work/port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(head -1 "$work/port")"
mcp="$work/mcp_server"

run_one() { # NAME CMD...: one process, its JSON line and its peak RSS (kB)
  local name=$1; shift
  /usr/bin/time -f '%M' -o "$work/rss" "$@" > "$work/out" 2> "$work/err" || {
    echo "$name failed:" >&2; tail -5 "$work/err" >&2; return 0; }
  printf '{"name":"%s","round":%d,"peak_rss_kb":%s,"result":%s}\n' \
    "$name" "$round" "$(tail -1 "$work/rss")" "$(tail -1 "$work/out")" >> "$work/all.jsonl"
}

names=(rs rs-metrics floor python)
[ -n "${GO_BIN:-}" ] && names+=(go)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "$rounds"); do
  # Rotate the order from round to round so no runner always goes first.
  n=${#names[@]}
  for k in $(seq 0 $((n - 1))); do
    r=${names[$(((k + round) % n))]}
    case $r in
      rs) run_one toolnexus-rs "$work/bench_overhead" --url "$url" --mcp "$mcp" \
            --runs "$runs" --warmup "$warmup" --idle-ms 1000 ;;
      rs-metrics) run_one "toolnexus-rs + metrics" "$work/bench_overhead" --url "$url" --mcp "$mcp" \
            --runs "$runs" --warmup "$warmup" --on-metric --render ;;
      floor) run_one floor "$work/floor" --url "$url" --mcp "$mcp" --runs "$runs" --warmup "$warmup" ;;
      python) run_one "Python port 0.21.0" bench/.venv/bin/python bench/overhead_python.py \
            --url "$url" --mcp "$mcp" --runs "$runs" --warmup "$warmup" ;;
      go) run_one "Go port (upstream runner)" env BENCH_REPO="$work" MCP_PYTHON="$mcp" MOCK_URL="$url" \
            OPENAI_API_KEY=sk-mock "$GO_BIN" -config mcp -runs "$runs" -warmup "$warmup" ;;
    esac
  done
  echo "round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

python3 - "$work/all.jsonl" "$rounds" "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = []
for r in rows:
    if r["name"] not in order:
        order.append(r["name"])

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]

def span(v, fmt):
    lo, hi = min(v), max(v)
    return fmt(statistics.median(v)) + (f" ({fmt(lo)}–{fmt(hi)})" if len(v) > 1 else "")

ms = lambda x: f"{x:.3f}"
ms1 = lambda x: f"{x:.1f}"
mb = lambda x: f"{x / 1024:.1f}"
print(f"\n{sys.argv[2]} interleaved rounds of {sys.argv[3]} runs; median over rounds (range)\n")
print("| runner | p50 ms | p95 ms | mean ms | init ms | peak RSS MB | all runs correct |")
print("|---|---|---|---|---|---|---|")
extra = []
for name in order:
    rs = [r for r in rows if r["name"] == name]
    res = [r["result"] for r in rs]
    lat = [x["latencies_ms"] for x in res]
    ok = all(x.get("final_ok", str(x.get("final_text", "")).startswith("The weather in Paris is sunny"))
             for x in res)
    init = [x["init_ms"] for x in res if "init_ms" in x]
    print(f"| {name} | {span([pct(l, 50) for l in lat], ms)} | {span([pct(l, 95) for l in lat], ms)} "
          f"| {span([statistics.mean(l) for l in lat], ms)} | {span(init, ms1) if init else '—'} "
          f"| {span([r['peak_rss_kb'] for r in rs], mb)} | {'yes' if ok else 'NO'} |")
    for x in res:
        if "render_us" in x:
            extra.append(("tn_client_metrics render, µs (p50)", pct(x["render_us"], 50)))
            extra.append(("metrics text, bytes", x["metrics_bytes"]))
        if "idle_cpu_ms" in x:
            extra.append((f"CPU time of an idle client over {x['idle_ms']} ms, ms", x["idle_cpu_ms"]))
        if "rss_end_kb" in x:
            extra.append(("toolnexus-rs resident after the runs, file-backed part, MB", x["rss_file_end_kb"] / 1024))
            extra.append(("toolnexus-rs resident after the runs, the rest (heap, stacks), MB",
                          (x["rss_end_kb"] - x["rss_file_end_kb"]) / 1024))
if extra:
    print("\n| also measured | median over rounds (range) |\n|---|---|")
    seen = []
    for k, _ in extra:
        if k not in seen:
            seen.append(k)
    for k in seen:
        v = [x for kk, x in extra if kk == k]
        print(f"| {k} | {span(v, lambda x: f'{x:.3f}' if x < 100 else f'{x:.0f}')} |")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
