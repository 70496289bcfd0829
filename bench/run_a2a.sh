#!/usr/bin/env bash
# The A2A benchmark (issue 27), in interleaved rounds. Not run by CI or
# scripts/test.sh: it installs the Python port from PyPI and takes minutes.
#
# Both agents are served by bench/a2a_server.py with the same in-process mock
# model (a Python function answering "Hello."), and driven by one client in C,
# bench/c/a2a_client.c, sending the same JSON-RPC bytes to both (upstream's
# "toolnexus" profile, which both speak):
#
#   round trip   SendMessage, then GetTask at once and again until the task
#                is completed; the time of the whole, per task
#                  toolnexus-rs         Toolkit.serve(a2a=..., client=Client(
#                                       generate=...)) of bindings/python over
#                                       target/release/libtoolnexus.so, memory store
#                  Python port 0.21.0   its Toolkit.serve -> start_a2a_server with
#                                       create_in_process_client, memory store
#   outbound     a toolkit calling one of our served agents (memory store)
#                through its agent tool, pollEvery 1 ms on both, timed per call
#                from Python (bench/a2a_outbound.py): our Toolkit.add_agent +
#                execute vs the port's agent_tools + Tool.execute; OUT_RUNS calls
#   GetTask      TASKS completed tasks, then CALLS GetTask calls for them on one
#                keep-alive connection, and on 4 connections at once; per store:
#                memory, sqlite:<tmp file>, postgres (when TN_TEST_POSTGRES is a
#                URL, or with PG=1: a throwaway cluster from scripts/postgres.sh
#                on TN_PG_PORT, default 55442, stopped at the end), and the
#                port's memory store beside them, and a floor: the same bytes
#                to bench/c/overhead_mock_llm.c (C, thread per connection, no
#                JSON parsed), the least a loopback round trip costs here
#
#   bench/run_a2a.sh [ROUNDS] [RUNS]     (defaults 5 rounds of 300 round trips)
#   TASKS=200 CALLS=5000                 the GetTask part's sizes
#   RS_BEFORE=path/libtoolnexus.so       also an earlier build of ours (round
#                                        trip and memory GetTask), in the same
#                                        rounds: a before/after beside the port
#
# Every round runs each case once, in an order rotated from round to round,
# each against a fresh server process; the tables are medians over rounds
# with the range.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
runs=${2:-300}
warmup=${WARMUP:-30}
tasks=${TASKS:-200}
out_runs=${OUT_RUNS:-200}
calls=${CALLS:-5000}
work=$(mktemp -d)
pg_started=
server_pid=
mock_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null
  [ -n "$pg_started" ] && TN_PG_DIR="$work/pg" TN_PG_PORT=${TN_PG_PORT:-55442} scripts/postgres.sh stop
  rm -rf "$work"
}
trap cleanup EXIT

[ -n "${NO_BUILD:-}" ] || cargo build --release --lib --quiet
cc -O2 -Wall -Wextra -pthread bench/c/a2a_client.c -o "$work/a2a_client"
cc -O2 -Wall -Wextra -pthread bench/c/overhead_mock_llm.c -o "$work/floor_server"
"$work/floor_server" 0 > "$work/floor_port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/floor_port" ] && break; sleep 0.05; done
floor_url="http://127.0.0.1:$(head -1 "$work/floor_port")"
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet toolnexus==0.21.0
fi
export TOOLNEXUS_LIB=${CARGO_TARGET_DIR:-$PWD/target}/release/libtoolnexus.so
export PYTHONPATH=$PWD/bindings/python/src
py=bench/.venv/bin/python

pg=${TN_TEST_POSTGRES:-}
if [ -z "$pg" ] && [ -n "${PG:-}" ]; then
  mkdir -p "$work/pg"
  [ "$(id -u)" -ne 0 ] || chown postgres "$work" "$work/pg"
  pg=$(TN_PG_DIR="$work/pg" TN_PG_PORT=${TN_PG_PORT:-55442} scripts/postgres.sh start)
  pg_started=1
fi

mkfifo "$work/in"
exec 3<>"$work/in"
start() { # IMPL STORE: a fresh server; its base URL in $base
  : > "$work/url"
  $py bench/a2a_server.py "$@" < "$work/in" > "$work/url" 2> "$work/server.err" &
  server_pid=$!
  for _ in $(seq 200); do [ -s "$work/url" ] && break; sleep 0.05; done
  [ -s "$work/url" ] || { echo "server $* did not start:" >&2; cat "$work/server.err" >&2; exit 1; }
  base=$(head -1 "$work/url")
}
stop() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=; }
record() { # KIND NAME JSON
  printf '{"kind":"%s","name":"%s","round":%d,"result":%s}\n' "$1" "$2" "$round" "$3" >> "$work/all.jsonl"
}

cases=(rt-rs rt-port out-rs out-port get-memory get-sqlite get-port get-floor)
[ -n "$pg" ] && cases+=(get-postgres)
[ -n "${RS_BEFORE:-}" ] && cases+=(rt-before get-before)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "$rounds"); do
  n=${#cases[@]}
  for k in $(seq 0 $((n - 1))); do
    c=${cases[$(((k + round) % n))]}
    case $c in
      rt-rs) start rs memory
             record rt toolnexus-rs "$("$work/a2a_client" "$base" rt "$runs" "$warmup")"; stop ;;
      rt-before) TOOLNEXUS_LIB=$RS_BEFORE start rs memory
             record rt "toolnexus-rs, before" "$("$work/a2a_client" "$base" rt "$runs" "$warmup")"; stop ;;
      rt-port) start port
             record rt "Python port 0.21.0" "$("$work/a2a_client" "$base" rt "$runs" "$warmup")"; stop ;;
      out-rs|out-port) start rs memory
             if [ $c = out-rs ]; then name=toolnexus-rs; else name="Python port 0.21.0"; fi
             record out "$name" "$($py bench/a2a_outbound.py "${c#out-}" "$base/.well-known/agent-card.json" \
               "$out_runs" "$warmup")"; stop ;;
      get-floor)
        record get "floor (C server), 1 connection" "$("$work/a2a_client" "$floor_url" floor "$calls" 1)"
        record get "floor (C server), 4 connections" "$("$work/a2a_client" "$floor_url" floor "$calls" 4)" ;;
      get-*)
        case $c in
          get-memory) name="toolnexus-rs, memory"; start rs memory ;;
          get-before) name="toolnexus-rs before, memory"; TOOLNEXUS_LIB=$RS_BEFORE start rs memory ;;
          get-sqlite) name="toolnexus-rs, sqlite"; rm -f "$work/tasks.db"*; start rs "sqlite:$work/tasks.db" ;;
          get-postgres) name="toolnexus-rs, postgres"; start rs "$pg" ;;
          get-port) name="Python port 0.21.0, memory"; start port ;;
        esac
        record get "$name, 1 connection" "$("$work/a2a_client" "$base" get "$tasks" "$calls" 1)"
        record get "$name, 4 connections" "$("$work/a2a_client" "$base" get "$tasks" "$calls" 4)"
        stop ;;
    esac
  done
  echo "round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$work/all.jsonl" "$rounds" "$runs" "$tasks" "$calls" "$out_runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds, runs, tasks, calls = sys.argv[2:6]

def order(kind):
    seen = []
    for r in rows:
        if r["kind"] == kind and r["name"] not in seen:
            seen.append(r["name"])
    return seen

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]

def span(v, fmt):
    lo, hi = min(v), max(v)
    return fmt(statistics.median(v)) + (f" ({fmt(lo)}–{fmt(hi)})" if len(v) > 1 else "")

ms = lambda x: f"{x:.3f}"
num = lambda x: f"{x:.0f}"
us = lambda x: f"{x:.1f}" if x < 1000 else f"{x:.0f}"
print(f"\nRound trip (SendMessage + GetTask until completed): {rounds} interleaved rounds of {runs} "
      f"round trips; median over rounds (range)\n")
print("| server | p50 ms | p90 ms | mean ms | SendMessage alone, p50 ms | GetTask calls per round trip (mean) "
      "| all completed |")
print("|---|---|---|---|---|---|---|")
p50 = {}
for name in order("rt"):
    res = [r["result"] for r in rows if r["kind"] == "rt" and r["name"] == name]
    lat = [x["latencies_ms"] for x in res]
    p50[name] = [pct(l, 50) for l in lat]
    print(f"| {name} | {span(p50[name], ms)} | {span([pct(l, 90) for l in lat], ms)} "
          f"| {span([statistics.mean(l) for l in lat], ms)} "
          f"| {span([pct(x['send_ms'], 50) for x in res], ms)} "
          f"| {span([statistics.mean(x['polls']) for x in res], lambda x: f'{x:.2f}')} "
          f"| {'yes' if all(x['ok'] for x in res) else 'NO'} |")
port = p50.get("Python port 0.21.0")
for name, ours in p50.items():
    if port and name != "Python port 0.21.0":
        ratios = [y / x for x, y in zip(ours, port)]
        print(f"\nPython port p50 / {name} p50, per round: median {statistics.median(ratios):.1f}x "
              f"(range {min(ratios):.1f}–{max(ratios):.1f}x)")
if order("out"):
    print(f"\nOutbound: an agent tool calling our agent (pollEvery 1 ms), {sys.argv[6]} calls per round; "
          "median over rounds (range)\n")
    print("| caller | p50 ms | p90 ms | mean ms | all answered |")
    print("|---|---|---|---|---|")
    for name in order("out"):
        res = [r["result"] for r in rows if r["kind"] == "out" and r["name"] == name]
        lat = [x["latencies_ms"] for x in res]
        print(f"| {name} | {span([pct(l, 50) for l in lat], ms)} | {span([pct(l, 90) for l in lat], ms)} "
              f"| {span([statistics.mean(l) for l in lat], ms)} | {'yes' if all(x['ok'] for x in res) else 'NO'} |")
print(f"\nGetTask on {tasks} completed tasks, {calls} calls per case; median over rounds (range)\n")
print("| server, store, connections | p50 µs | p50 minus the floor's p50 of the same round µs | p90 µs "
      "| p99 µs | calls/s | all answered completed |")
print("|---|---|---|---|---|---|---|")
floor = {(r["name"].split(", ")[-1], r["round"]): r["result"]["p50_us"]
         for r in rows if r["kind"] == "get" and r["name"].startswith("floor")}
for name in order("get"):
    sel = [r for r in rows if r["kind"] == "get" and r["name"] == name]
    res = [r["result"] for r in sel]
    over = [r["result"]["p50_us"] - floor[(name.split(", ")[-1], r["round"])] for r in sel
            if (name.split(", ")[-1], r["round"]) in floor]
    over_s = span(over, us) if over and not name.startswith("floor") else "—"
    print(f"| {name} | {span([x['p50_us'] for x in res], us)} | {over_s} | {span([x['p90_us'] for x in res], us)} "
          f"| {span([x['p99_us'] for x in res], us)} | {span([x['calls_per_s'] for x in res], num)} "
          f"| {'yes' if all(x['ok'] for x in res) else 'NO'} |")
PY
