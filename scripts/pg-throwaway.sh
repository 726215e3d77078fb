#!/usr/bin/env bash
# A throwaway PostgreSQL for scripts (make bench's registry row, make demo-postgres), as the
# registry tests start theirs (Tests/PushSealRegistryTests/PostgresServer.swift): `initdb` into a
# new directory under /tmp, a Unix socket there and no TCP listener, trust authentication for
# the one user `pushseal`; as root the server runs as the system user pushseal-test
# (scripts/install-deps.sh creates it: PostgreSQL refuses to run as root).
#
# The server runs without fsync (-F) unless PG_THROWAWAY_FSYNC=on (make bench-gateway's latency
# rows: a commit then waits for the disk, as in production). PG_THROWAWAY_SETTINGS: more server
# options (`-c name=value …`, word-split; make bench-gateway's production settings).
#
# Source it, then: pg_throwaway_start (sets PG_DIR and PG_CONNINFO, a libpq connection string
# for database pushseal), pg_throwaway_stop (stops the server, removes PG_DIR; safe to call twice,
# put it in an EXIT trap).
pg_throwaway_start() {
  local bin='' d
  for d in /usr/lib/postgresql/*/bin; do [[ -x $d/initdb ]] && bin=$d; done
  [[ -x $bin/initdb ]] || { echo "pg-throwaway: error: PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin" >&2; echo "hint: scripts/install-deps.sh (Debian package postgresql)" >&2; return 69; }
  PG_BIN=$bin
  PG_AS=()
  if [[ $(id -u) -eq 0 ]]; then
    id pushseal-test >/dev/null 2>&1 || { echo "pg-throwaway: error: running as root, PostgreSQL needs the user pushseal-test" >&2; echo "hint: scripts/install-deps.sh" >&2; return 69; }
    PG_AS=(/usr/sbin/runuser -u pushseal-test --)
  fi
  PG_DIR=$(mktemp -d /tmp/pushseal-pg-script.XXXXXX)
  chmod 700 "$PG_DIR"
  [[ ${#PG_AS[@]} -gt 0 ]] && chown pushseal-test: "$PG_DIR"
  "${PG_AS[@]}" "$bin/initdb" -D "$PG_DIR/data" -U pushseal --auth=trust -E UTF8 --no-sync --no-instructions >/dev/null
  local fsync=-F
  [[ ${PG_THROWAWAY_FSYNC:-} == on ]] && fsync=
  "${PG_AS[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 60 \
    -o "-k $PG_DIR -c listen_addresses= -c port=5432 $fsync -c max_connections=200 ${PG_THROWAWAY_SETTINGS:-}" start >/dev/null
  "$bin/psql" -X -q -h "$PG_DIR" -p 5432 -U pushseal -d postgres -c "CREATE DATABASE pushseal" >/dev/null
  export PG_CONNINFO="host=$PG_DIR port=5432 user=pushseal dbname=pushseal"
}

pg_throwaway_stop() {
  [[ -n ${PG_DIR:-} && -d $PG_DIR ]] || return 0
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -t 60 -m fast stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=
}
