#!/usr/bin/env bash
# Translate benchmarks in one run, ours against the Python port (issue 6):
#   - conversion, JSON text in and out (criterion, benches/translate.rs)
#   - the whole call against the in-process Rust mock provider (keep-alive)
#   - the whole call against the Python port's mock provider process, the
#     very server the Python figure below is measured against
#   - the conversion of the same request with image parts (issue 12: a user
#     turn with two images, a tool result carrying one), after checking that
#     both ports build the same provider body for it
#   - the Python port (toolnexus 0.21.0 in bench/.venv): conversion, with
#     images, and whole call (bench/translate_python.py)
#
#   bench/run_translate.sh
#
# Set up the Python side once with:
#   python3 -m venv bench/.venv && bench/.venv/bin/pip install toolnexus==0.21.0
set -euo pipefail
cd "$(dirname "$0")/.."
py=bench/.venv/bin/python
work=$(mktemp -d)
mock_pid=
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cargo bench --bench translate --no-run --quiet 2>/dev/null
TN_TRANSLATE_DUMP_IMAGES="$work/images_body.json" cargo bench --bench translate --quiet 2>/dev/null
"$py" bench/translate_python.py --check-images "$work/images_body.json" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$py" bench/translate_python.py --serve > "$work/port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(head -1 "$work/port")

TN_TRANSLATE_BASE_URL="http://127.0.0.1:$port" \
  cargo bench --bench translate --quiet -- --warm-up-time 1 --measurement-time 4 \
  'conversion$|conversion_images|whole_call' 2>/dev/null | tee "$work/rust.txt" >&2
"$py" bench/translate_python.py | tee "$work/py.txt" >&2

# criterion prints "translate/NAME  time: [low median high]"; the median is
# the 2nd figure, with its unit.
crit() {
  awk -v k="translate/$1" '$1==k && /time:/ {print $5, $6; exit}
      $1==k {getline; print $4, $5; exit}' "$work/rust.txt"
}
pyfig() { awk -v k="$1:" '$0 ~ k {print $(NF-1), $NF}' "$work/py.txt"; }

echo
echo "| work | toolnexus-rs | Python 0.21.0 |"
echo "|---|---|---|"
echo "| conversion, JSON in and out | $(crit conversion) | $(pyfig 'translate/conversion') |"
echo "| conversion with 3 image parts (2 in a user turn, 1 in a tool result) | $(crit conversion_images) | $(pyfig 'translate/conversion_images') |"
echo "| whole call, Rust mock in process | $(crit whole_call) | — |"
echo "| whole call, the Python mock process | $(crit whole_call_external_mock) | $(pyfig 'translate/whole_call') |"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
