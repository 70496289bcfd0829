# Sourced by the scripts that need npm packages at pinned versions (setup.sh,
# mcp_conformance.sh, mcp_everything.sh, bench/mcp_conformance_peers.sh):
# one place that checks what a prefix holds and installs what it lacks.
#
#   npm_pinned PREFIX SPEC...
#
# Each SPEC is NAME@VERSION (NAME may be scoped, @scope/pkg) or an npm alias,
# ALIAS@npm:NAME@VERSION. A package counts as present when
# PREFIX/node_modules/<NAME or ALIAS>/package.json has that version (or one
# of its line: "22" takes any 22.x.y). When any is missing, every SPEC is
# installed in one npm call, quietly; npm's own failure is the script's.
npm_pinned() {
  local prefix=$1 spec dir version missing=
  shift
  for spec in "$@"; do
    version=${spec##*@}
    dir=${spec%@*}
    dir=${dir%%@npm:*}
    if ! grep -qsE "\"version\": \"${version//./\\.}(\"|\\.)" \
      "$prefix/node_modules/$dir/package.json"; then
      missing=1
    fi
  done
  if [ -n "$missing" ]; then
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$@" >/dev/null
  fi
}
