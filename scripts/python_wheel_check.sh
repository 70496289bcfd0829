#!/usr/bin/env bash
# The Python binding as a user installs it: a platform wheel with
# libtoolnexus.so inside (bindings/python/setup.py), installed into a fresh
# virtual environment and used with no TOOLNEXUS_LIB and no LD_LIBRARY_PATH:
#   1. `pip wheel ./bindings/python`: the build hook runs `cargo build
#      --release --lib` (a no-op after scripts/install.sh's release build, in
#      the same CARGO_TARGET_DIR) and bundles the library, stripped;
#   2. the wheel's tag is py3-none-manylinux_2_X_<arch> and it holds the library;
#   3. the README's one-liner builds, renders and executes, and the library it
#      loaded is the bundled one;
#   4. the pytest suite, the parity harness included, runs against the wheel.
# scripts/test.sh runs it (Python section).
#
#   scripts/python_wheel_check.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv="$work/venv"
python3 -m venv "$venv"
pip=("$venv/bin/pip" --disable-pip-version-check)

start=$SECONDS
"${pip[@]}" wheel -q --no-deps -w "$work/dist" "$root/bindings/python"
wheel=$(ls "$work"/dist/toolnexus_rs-*.whl)
echo "python: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $((SECONDS - start)) s"
case "$(basename "$wheel")" in
  toolnexus_rs-*-py3-none-manylinux_2_*_"$(uname -m)".whl) ;;
  *) echo "python: the wheel is not tagged py3-none-manylinux_2_*_$(uname -m)" >&2; exit 1 ;;
esac
"$venv/bin/python" - "$wheel" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "toolnexus_rs/libtoolnexus.so" in names, names
EOF
"${pip[@]}" install -q "$wheel" "pytest==8.3.4"

# No library but the bundled one: nothing in the environment points at one,
# and the run happens outside the checkout.
run=(env -u TOOLNEXUS_LIB -u LD_LIBRARY_PATH)
cd "$venv"
"${run[@]}" "$venv/bin/python" -c "import toolnexus_rs as tn; tk=tn.Toolkit({}); print(tk.render('openai')[:1]); print(tk.execute('todowrite', {'todos': []}))" \
  > "$work/oneliner.txt"
head -c 300 "$work/oneliner.txt"; echo
grep -q '"type": "function"\|'"'type': 'function'" "$work/oneliner.txt" \
  || { echo "python: render('openai') gave no function declaration" >&2; exit 1; }
loaded=$("${run[@]}" "$venv/bin/python" -c "import toolnexus_rs as tn; print(tn.load()._name)")
case "$loaded" in
  "$venv"/*) echo "python: loaded $loaded" ;;
  *) echo "python: loaded $loaded, not the wheel's library" >&2; exit 1 ;;
esac

# The summary lines here; the whole output, failures' tracebacks included,
# when a test fails.
pylog="$work/pytest.log"
pyrc=0
"${run[@]}" "$venv/bin/python" -m pytest -q -s -p no:cacheprovider "$root/bindings/python/tests" >"$pylog" 2>&1 || pyrc=$?
grep -E '^(parity|FAIL|FAILED|ERROR)|passed|failed' "$pylog" || true
if [ "$pyrc" -ne 0 ]; then
  tail -n 150 "$pylog"
  exit "$pyrc"
fi
