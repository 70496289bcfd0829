#!/usr/bin/env bash
# Uses an installed libtoolnexus the way a user outside the repository does:
#   - bindings/c/examples/quickstart.c, copied out, compiled with
#     `pkg-config --cflags --libs toolnexus` (the shared library), then again
#     statically (the archive plus `pkg-config --static`'s Libs.private);
#   - tests/install/go, a Go module outside the repository that imports the
#     binding (cgo finds the library through pkg-config; a `replace` points the
#     unpublished module at this checkout), linked shared, then built again
#     with `-tags toolnexus_static` (the archive; ldd shows no libtoolnexus);
#   - the module maps of bindings/swift, imported by clang from C and
#     Objective-C (`@import toolnexus;`), linked and run;
#   - the `toolnexus` command with its completions and man pages.
# All of them run. scripts/test.sh calls it with the temporary PREFIX it
# installed to; without an argument it installs to a temporary PREFIX itself.
#
#   scripts/install_check.sh [PREFIX]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=${1:-}
if [ -z "$prefix" ]; then
  prefix="$work/prefix"
  PREFIX="$prefix" "$root/scripts/install.sh"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# Go's build cache keys a cgo package on CGO_* but not on what pkg-config
# answers: a package built against another (since deleted) prefix would be
# reused with that prefix's -L. Naming the prefix here makes it part of the key.
export CGO_LDFLAGS="-L$prefix/lib"
cd "$work"

echo "pkg-config: $(pkg-config --modversion toolnexus): $(pkg-config --cflags --libs toolnexus)"
cp "$root/bindings/c/examples/quickstart.c" .

# Shared: the program records the soname and loads it from LD_LIBRARY_PATH.
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o quickstart_shared quickstart.c \
  $(pkg-config --cflags --libs toolnexus)
needed=$(readelf -d quickstart_shared | sed -n 's/.*(NEEDED).*\[\(libtoolnexus[^]]*\)\]/\1/p')
[ "$needed" = "libtoolnexus.so.$(pkg-config --modversion toolnexus | cut -d. -f1)" ] \
  || { echo "quickstart_shared needs '$needed', not the soname" >&2; exit 1; }
LD_LIBRARY_PATH="$prefix/lib" ./quickstart_shared > shared.txt
echo "C, shared ($needed): $(head -1 shared.txt)"

# Static: the archive by name, then Libs.private.
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Wl,--gc-sections -o quickstart_static quickstart.c \
  $(pkg-config --cflags toolnexus) \
  $(pkg-config --static --libs toolnexus | sed 's/-ltoolnexus\b/-l:libtoolnexus.a/')
if readelf -d quickstart_static | grep -q 'NEEDED.*libtoolnexus'; then
  echo "quickstart_static still needs the shared library" >&2; exit 1
fi
env -u LD_LIBRARY_PATH ./quickstart_static > static.txt
cmp -s shared.txt static.txt || { echo "the static and the shared quickstart differ" >&2; diff shared.txt static.txt >&2; exit 1; }
echo "C, static: same output"

# Go, outside the repository and outside go.work.
cp -r "$root/tests/install/go" gomod
(cd gomod && go mod edit -replace "github.com/toolnexus/toolnexus-rs/bindings/go=$root/bindings/go" \
  && GOWORK=off GOFLAGS=-mod=mod LD_LIBRARY_PATH="$prefix/lib" go run . "$root/examples/skills")

# Go, statically: `-tags toolnexus_static` links libtoolnexus.a through
# `pkg-config --static` (bindings/go/link_static.go); the program needs no
# libtoolnexus at run time.
(cd gomod && GOWORK=off GOFLAGS=-mod=mod go build -tags toolnexus_static -o go_static .)
if ldd gomod/go_static | grep -q libtoolnexus; then
  echo "go_static (-tags toolnexus_static) still needs the shared library:" >&2; ldd gomod/go_static >&2; exit 1
fi
env -u LD_LIBRARY_PATH gomod/go_static "$root/examples/skills" | sed 's/^go:/go, static (-tags toolnexus_static):/'

# Swift's C layer, checked with clang (no Swift toolchain here): the module
# map install.sh put beside the header (module `toolnexus`) and the SwiftPM
# system-library target's (module `CToolnexus`, bindings/swift) are imported
# by a C file (`#pragma clang module import`, C's spelling of @import) and by
# Objective-C files (`@import`), which are linked and run. Clang on ELF does
# not autolink a module's `link`, so the link flags come from pkg-config.
if command -v clang >/dev/null; then
  cat > mod_c.c <<'C'
#pragma clang module import toolnexus
#include <stdio.h>
int main(void) { printf("%s abi %u\n", tn_version(), tn_abi_version()); return tn_abi_version() == 1 ? 0 : 1; }
C
  cat > mod_objc.m <<'OBJC'
@import toolnexus;
#include <stdio.h>
int main(void) {
  tn_toolkit *tk = NULL;
  char *out = NULL;
  if (tn_toolkit_build("{}", &tk, &out) != TN_OK) { fprintf(stderr, "%s\n", out); return 1; }
  tn_status st = tn_execute(tk, "todowrite", "{\"todos\":[]}", NULL, &out);
  printf("%s\n", out);
  tn_string_free(out);
  tn_toolkit_free(tk);
  return st == TN_OK ? 0 : 1;
}
OBJC
  sed 's/^@import toolnexus;/@import CToolnexus;/' mod_objc.m > mod_swiftpm.m
  flags=(-fmodules -fmodules-cache-path="$work/modules" -Wall -Werror $(pkg-config --cflags toolnexus))
  libs=($(pkg-config --libs toolnexus))
  clang "${flags[@]}" -o mod_c mod_c.c "${libs[@]}"
  clang "${flags[@]}" -o mod_objc mod_objc.m "${libs[@]}"
  clang "${flags[@]}" -fmodule-map-file="$root/bindings/swift/Sources/CToolnexus/module.modulemap" \
    -o mod_swiftpm mod_swiftpm.m "${libs[@]}"
  for p in mod_c mod_objc mod_swiftpm; do
    LD_LIBRARY_PATH="$prefix/lib" "./$p" > "$p.txt" || { echo "$p failed:" >&2; cat "$p.txt" >&2; exit 1; }
  done
  grep -q '"isError":false' mod_objc.txt && cmp -s mod_objc.txt mod_swiftpm.txt \
    || { echo "the module programs' outputs differ or failed" >&2; exit 1; }
  echo "clang modules (Swift's C layer): C '$(cat mod_c.txt)', Objective-C @import toolnexus and @import CToolnexus: same result"
else
  echo "clang modules: skipped (no clang; scripts/setup.sh installs it)"
fi

# The command and what install.sh generated with it: completions (the bash
# one parses) and man pages.
if [ -x "$prefix/bin/toolnexus" ]; then
  "$prefix/bin/toolnexus" --version >/dev/null
  share="$prefix/share"
  for f in bash-completion/completions/toolnexus zsh/site-functions/_toolnexus \
           fish/vendor_completions.d/toolnexus.fish man/man1/toolnexus.1 man/man1/toolnexus-run.1; do
    [ -s "$share/$f" ] || { echo "install.sh did not install $share/$f" >&2; exit 1; }
  done
  bash -n "$share/bash-completion/completions/toolnexus"
  echo "CLI: $("$prefix/bin/toolnexus" --version), completions (bash, zsh, fish) and $(ls "$share/man/man1" | wc -l) man pages"
fi
