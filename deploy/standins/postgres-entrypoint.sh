#!/bin/sh
# As the official image: a first start creates the cluster, the user and the database, with a password.
set -e
if [ "$1" = "postgres" ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
    user="${POSTGRES_USER:-postgres}"
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    db="${POSTGRES_DB:-$user}"
    if [ "$db" != "postgres" ]; then
        pg_ctl -w -o "-c listen_addresses=''" start >/dev/null
        createdb --username="$user" "$db"
        pg_ctl -w stop >/dev/null
    fi
fi
if [ "$1" = "postgres" ]; then
    shift
    set -- postgres -c listen_addresses='*' "$@"
fi
exec "$@"
