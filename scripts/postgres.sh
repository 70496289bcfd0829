#!/usr/bin/env bash
# A throwaway PostgreSQL for the store tests (src/store.rs, tests/a2a_serve.rs):
#   scripts/postgres.sh start   initialises a cluster in $TN_PG_DIR (default
#                               /tmp/toolnexus-pg), listens on 127.0.0.1:$TN_PG_PORT
#                               (default 55432), prints the URL to give the tests
#                               as TN_TEST_POSTGRES
#   scripts/postgres.sh stop    stops it and removes the folder
# Debian's postgresql package provides the binaries (scripts/setup.sh installs
# it). As root the server runs as the package's `postgres` user.
set -euo pipefail
dir=${TN_PG_DIR:-/tmp/toolnexus-pg}
port=${TN_PG_PORT:-55432}
bin=""
for cand in "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
  [ -x "$cand/initdb" ] && [ -x "$cand/pg_ctl" ] && { bin=$cand; break; }
done
[ -n "$bin" ] || { echo "postgres: no initdb/pg_ctl found" >&2; exit 1; }
as() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "${1:-}" in
  start)
    if ! as "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
      rm -rf "$dir"
      mkdir -p "$dir"
      [ "$(id -u)" -ne 0 ] || chown postgres "$dir"
      as "$bin/initdb" -D "$dir" -A trust -U postgres >/dev/null
      as "$bin/pg_ctl" -D "$dir" -w -l "$dir/log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    as "$bin/pg_ctl" -D "$dir" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
