#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests (toolchain.md, PostgreSQL row).
#   .ci/postgres.sh start DIR   prints the superuser URL (postgres://envkeep@127.0.0.1:PORT/postgres)
#   .ci/postgres.sh stop DIR    stops the cluster (DIR is left for the caller to remove)
# The server runs as the `postgres` user (it refuses root) in DIR, which that user owns;
# trust authentication is fine because it listens on 127.0.0.1 only, with its socket in DIR.
set -euo pipefail
cmd="${1:?usage: postgres.sh start|stop DIR}"
dir="${2:?usage: postgres.sh start|stop DIR}"

bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
export PATH="${bindir:+$bindir:}$PATH"
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
    as_postgres initdb -D "$dir/data" -A trust -U envkeep >"$dir/initdb.log" 2>&1
    as_postgres pg_ctl -D "$dir/data" -w -l "$dir/log" \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
    echo "postgres://envkeep@127.0.0.1:$port/postgres"
    ;;
  stop)
    [ -d "$dir/data" ] && as_postgres pg_ctl -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *)
    echo "usage: postgres.sh start|stop DIR" >&2
    exit 2
    ;;
esac
