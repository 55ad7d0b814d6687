#!/bin/bash
# Entrypoint of the postgres-db image (tools/images/build.sh): PostgreSQL 15 from Debian.
# First start: initdb in $PGDATA (default /var/lib/postgresql/data, meant to be a volume) with the
# superuser `postgres` whose password is $POSTGRES_PASSWORD (required then; later starts keep the
# database's password). Then the server runs in the foreground, listening on 0.0.0.0:5432 with
# password (scram-sha-256) logins from anywhere; arguments go to `postgres` (e.g. -c key=value).
# Started as root it prepares $PGDATA's ownership and drops to the postgres user (uid 999).
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [[ $(id -u) == 0 ]]; then
  mkdir -p "$PGDATA"
  # A fresh volume is root's: hand it (and what a previous uid left in it) to postgres.
  find "$PGDATA" \! -user postgres -exec chown postgres:postgres {} +
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
  if [[ -z "${POSTGRES_PASSWORD:-}" ]]; then
    echo "postgres-db: $PGDATA has no database yet: set POSTGRES_PASSWORD (the password of the postgres user)" >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  "$bin/initdb" --username=postgres --pwfile="$pwfile" --encoding=UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  # initdb lets TCP in from localhost only.
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
fi

exec "$bin/postgres" -c listen_addresses='*' -c port=5432 -c unix_socket_directories=/var/run/postgresql "$@"
