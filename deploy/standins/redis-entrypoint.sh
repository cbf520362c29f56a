#!/bin/sh
# As the official image: a bare `redis-server` listens for other containers (protected mode off).
set -e
if [ "${1#-}" != "$1" ]; then
    set -- redis-server "$@"
fi
if [ "$1" = "redis-server" ]; then
    shift
    set -- redis-server --protected-mode no "$@"
fi
exec "$@"
