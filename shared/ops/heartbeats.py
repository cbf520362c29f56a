"""Service heartbeats in Redis, so `hstack status` and /readyz can list what is running."""

from __future__ import annotations

import json
import os
import socket
import time

import redis

PREFIX = "service:"


def instance_id(service: str) -> str:
    return f"{service}@{socket.gethostname()}:{os.getpid()}"


def announce(r: redis.Redis, service: str, ttl_seconds: int = 30, **info) -> None:
    """Say this process is alive for the next `ttl_seconds`."""
    payload = {"service": service, "pid": os.getpid(), "host": socket.gethostname(), "seen": time.time(), **info}
    r.set(PREFIX + instance_id(service), json.dumps(payload), ex=ttl_seconds)


def alive(r: redis.Redis) -> list[dict]:
    """Every service instance that announced itself recently."""
    keys = list(r.scan_iter(match=PREFIX + "*", count=500))
    if not keys:
        return []
    return sorted((json.loads(v) for v in r.mget(keys) if v), key=lambda d: (d["service"], d["host"], d["pid"]))
