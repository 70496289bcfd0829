#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (issue 14), each for SECONDS (default
# 60), seeded from the conformance vectors by fuzz/seeds.py:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600
#
# Targets: toolkit_build render execute translate helper frontmatter
# sse_assemble served_request client_answer gemini_schema a2a_serve
# a2a_client oauth mcp_answer (all when none is named). Needs the nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`). A crash stops the run; libFuzzer writes the
# input under fuzz/artifacts/<target>/ and prints how to replay it
# (`cargo +nightly fuzz run <target> fuzz/artifacts/<target>/crash-...`).
# TN_FUZZ_DEV=1 builds without optimisation (`cargo fuzz build --dev`):
# a quicker build and slower runs, which is what a short CI run wants.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(toolkit_build render execute translate helper frontmatter
                                    sse_assemble served_request client_answer
                                    gemini_schema a2a_serve a2a_client oauth mcp_answer)

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz is missing (cargo install cargo-fuzz)" >&2
  exit 2
fi

mode=()
[ -z "${TN_FUZZ_DEV:-}" ] || mode=(--dev)

python3 fuzz/seeds.py fuzz/corpus
start=$(date +%s)
# One build of every target (a separate build of the crate, with sanitizer
# coverage, under fuzz/target).
mkdir -p fuzz/target
if ! cargo +nightly fuzz build "${mode[@]}" >fuzz/target/build.log 2>&1; then
  tail -n 60 fuzz/target/build.log
  echo "fuzz: the build failed (log: fuzz/target/build.log)" >&2
  exit 1
fi
echo "fuzz: build $(( $(date +%s) - start )) s"

# The targets run TN_FUZZ_JOBS at a time (default: the cores), each
# bounded by its own -max_total_time; reported in their order.
jobs="${TN_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
run_one() {
  local t=$1 log="fuzz/target/fuzz-$1.log" t0
  t0=$(date +%s)
  # Absolute: the targets work in a scratch directory of their own.
  if cargo +nightly fuzz run "${mode[@]}" "$t" "$PWD/fuzz/corpus/$t" -- \
      -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    echo $(( $(date +%s) - t0 )) > "fuzz/target/fuzz-$t.ok"
  else
    echo $(( $(date +%s) - t0 )) > "fuzz/target/fuzz-$t.failed"
  fi
}
rm -f fuzz/target/fuzz-*.ok fuzz/target/fuzz-*.failed
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" &
done
wait
for t in "${targets[@]}"; do
  log="fuzz/target/fuzz-$t.log"
  if [ ! -f "fuzz/target/fuzz-$t.ok" ]; then
    tail -n 60 "$log"
    echo "fuzz: $t FAILED (log: $log, input under fuzz/artifacts/$t/)" >&2
    exit 1
  fi
  runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo '?')
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "fuzz: $t ok, $runs runs in $(cat "fuzz/target/fuzz-$t.ok") s ($cov)"
done
# The targets' scratch directories (fuzz/src/lib.rs makes one per process).
rm -rf "${TMPDIR:-/tmp}"/tn-fuzz-[0-9]*
