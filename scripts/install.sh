#!/usr/bin/env bash
# Installs libtoolnexus with the layout cargo-c's `cargo cinstall` gives a Rust
# C library, without needing cargo-c itself (docs/install.md, "Installing the library"):
#
#   $LIBDIR/libtoolnexus.so.X.Y.Z        the shared library, stripped; soname libtoolnexus.so.X
#   $LIBDIR/libtoolnexus.so.X            -> libtoolnexus.so.X.Y.Z (what programs load)
#   $LIBDIR/libtoolnexus.so              -> libtoolnexus.so.X     (what -ltoolnexus finds)
#   $LIBDIR/libtoolnexus.a               the static archive
#   $LIBDIR/pkgconfig/toolnexus.pc       Cflags, Libs, and Libs.private for static linking
#   $INCLUDEDIR/toolnexus/toolnexus.h    the header
#   $INCLUDEDIR/toolnexus/module.modulemap  its clang module (Swift, -fmodules)
#   $BINDIR/toolnexus                    the command, stripped
#   $DATADIR/bash-completion/completions/toolnexus, $DATADIR/zsh/site-functions/_toolnexus,
#   $DATADIR/fish/vendor_completions.d/toolnexus.fish   its shell completions
#   $DATADIR/man/man1/toolnexus.1, toolnexus-<command>.1  its man pages
#
#   scripts/install.sh                   PREFIX=/usr/local
#   PREFIX=$HOME/.local scripts/install.sh
#   DESTDIR=/tmp/stage PREFIX=/usr scripts/install.sh   (packaging: files under the stage,
#                                                        paths in toolnexus.pc without it)
#
# PREFIX (default /usr/local), LIBDIR (default $PREFIX/lib), INCLUDEDIR
# (default $PREFIX/include), BINDIR (default $PREFIX/bin), DATADIR (default
# $PREFIX/share), DESTDIR (default empty). It runs
# `cargo build --release` first (a no-op when the build is current); set
# TN_INSTALL_NO_BUILD=1 to install the release build as it is.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
BINDIR=${BINDIR:-$PREFIX/bin}
DATADIR=${DATADIR:-$PREFIX/share}
DESTDIR=${DESTDIR:-}
case "$PREFIX$LIBDIR$INCLUDEDIR$BINDIR$DATADIR" in
  *[[:space:]]*) echo "install.sh: PREFIX, LIBDIR, INCLUDEDIR, BINDIR and DATADIR must not contain blanks" >&2; exit 2 ;;
esac
for v in PREFIX LIBDIR INCLUDEDIR BINDIR DATADIR; do
  case "${!v}" in
    /*) ;;
    *) echo "install.sh: $v must be an absolute path (got '${!v}')" >&2; exit 2 ;;
  esac
done

if [ "${TN_INSTALL_NO_BUILD:-0}" != 1 ]; then
  cargo build --release --quiet
fi
target=${CARGO_TARGET_DIR:-$root/target}
so="$target/release/libtoolnexus.so"
archive="$target/release/libtoolnexus.a"
header="$root/include/toolnexus.h"
for f in "$so" "$archive" "$header"; do
  [ -f "$f" ] || { echo "install.sh: $f is missing (run cargo build --release)" >&2; exit 1; }
done

# The version and the soname come from the build itself: the header's
# TOOLNEXUS_VERSION (generated from Cargo.toml) and the library's SONAME.
version=$(sed -n 's/^#define TOOLNEXUS_VERSION "\(.*\)"$/\1/p' "$header")
major=${version%%.*}
soname="libtoolnexus.so.$major"
if command -v readelf >/dev/null; then
  got=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$got" = "$soname" ] || { echo "install.sh: $so has soname '$got', expected $soname" >&2; exit 1; }
fi

# What a program linking the static archive must add: the native libraries
# Rust's standard library needs (rustc's own list for a staticlib; no
# dependency of the crate links a system library of its own; ring's C code is
# inside the archive). CI links a C program statically with exactly this list.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
: > "$probe/probe.rs"
native=$("${RUSTC:-rustc}" --crate-type staticlib --crate-name tn_probe --edition 2021 \
  --print native-static-libs -o "$probe/libtn_probe.a" "$probe/probe.rs" 2>&1 \
  | sed -n 's/^note: native-static-libs: //p')
[ -n "$native" ] || { echo "install.sh: rustc printed no native-static-libs" >&2; exit 1; }

lib="$DESTDIR$LIBDIR"
inc="$DESTDIR$INCLUDEDIR/toolnexus"
mkdir -p "$lib/pkgconfig" "$inc"
install -m 0755 "$so" "$lib/libtoolnexus.so.$version"
strip --strip-unneeded "$lib/libtoolnexus.so.$version"
ln -sf "libtoolnexus.so.$version" "$lib/$soname"
ln -sf "$soname" "$lib/libtoolnexus.so"
# The archive without what no C or Go link uses: the LLVM bitcode every
# object carries for the release profile's thin LTO (.llvmbc/.llvmcmd, about
# half the archive) and the standard library's debug info.
install -m 0644 "$archive" "$lib/libtoolnexus.a"
objcopy --remove-section=.llvmbc --remove-section=.llvmcmd --strip-debug "$lib/libtoolnexus.a"
install -m 0644 "$header" "$inc/toolnexus.h"
# The clang module of the header (bindings/swift/module.modulemap): with it
# the include directory pkg-config names is a module directory, for Swift
# (`import toolnexus`) and for clang's -fmodules (`@import toolnexus;`).
install -m 0644 "$root/bindings/swift/module.modulemap" "$inc/module.modulemap"

# Paths in the .pc file are relative to ${prefix} when they lie under it, so
# the file stays right when a packager relocates the tree.
rel() { case "$1" in "$PREFIX"/*) echo "\${prefix}${1#"$PREFIX"}" ;; *) echo "$1" ;; esac; }
cat > "$lib/pkgconfig/toolnexus.pc" <<EOF
prefix=$PREFIX
libdir=$(rel "$LIBDIR")
includedir=$(rel "$INCLUDEDIR")

Name: toolnexus
Description: toolnexus: skills, builtins, MCP, HTTP and host tools in one toolkit, as a C library
Version: $version
Libs: -L\${libdir} -ltoolnexus
Libs.private: $native
Cflags: -I\${includedir}/toolnexus
EOF
# The `toolnexus` command, stripped, with what it generates itself: shell
# completions where bash-completion, zsh and fish look for a package's, and
# one man page per command (toolnexus.1, toolnexus-tools.1, ...).
cli="$target/release/toolnexus"
if [ -x "$cli" ]; then
  share="$DESTDIR$DATADIR"
  mkdir -p "$DESTDIR$BINDIR" "$share/bash-completion/completions" "$share/zsh/site-functions" \
    "$share/fish/vendor_completions.d" "$share/man/man1"
  install -m 0755 "$cli" "$DESTDIR$BINDIR/toolnexus"
  strip --strip-unneeded "$DESTDIR$BINDIR/toolnexus"
  "$cli" completions bash > "$share/bash-completion/completions/toolnexus"
  "$cli" completions zsh > "$share/zsh/site-functions/_toolnexus"
  "$cli" completions fish > "$share/fish/vendor_completions.d/toolnexus.fish"
  "$cli" man --out-dir "$share/man/man1"
else
  echo "install.sh: $cli is missing (cargo build --release builds it): the command, its completions and man pages are not installed" >&2
fi
echo "installed libtoolnexus $version under $DESTDIR$PREFIX" >&2
