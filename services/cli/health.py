"""`hstack health SERVICE`: exit 0 while this host's SERVICE announces itself in Redis (compose's healthcheck)."""

from __future__ import annotations

import argparse
import socket
import time
from typing import TextIO

from services.cli.client import CliError


def add_parser(commands) -> None:
    health = commands.add_parser("health", help="exit 0 when SERVICE on this host has a fresh heartbeat in Redis "
                                 "(worker, reviewer, curator, api); for healthchecks")
    health.add_argument("service", help="the service name it announces (HSTACK_SERVICE)")
    health.add_argument("--host", default=None, help="the host to look for (default: this one)")


def fresh_heartbeat(entries: list[dict], service: str, host: str) -> dict | None:
    """The newest heartbeat of `service` from `host`, if any."""
    mine = [e for e in entries if e.get("service") == service and e.get("host") == host]
    return max(mine, key=lambda e: e.get("seen", 0), default=None)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Look the heartbeat up; a missing one or an unreachable Redis is unhealthy (CliError, exit 1)."""
    import redis

    from shared.config import load_settings
    from shared.ops.heartbeats import alive

    settings = load_settings()
    if not settings.redis_url:
        raise CliError("REDIS_URL is not set: nothing to read heartbeats from")
    host = args.host or socket.gethostname()
    client = redis.Redis.from_url(settings.redis_url, decode_responses=True, socket_connect_timeout=3,
                                  socket_timeout=3)
    try:
        entry = fresh_heartbeat(alive(client), args.service, host)
    except redis.RedisError as exc:
        raise CliError(f"unhealthy: Redis does not answer ({type(exc).__name__})") from exc
    finally:
        client.close()
    if entry is None:
        raise CliError(f"unhealthy: no heartbeat from {args.service} on {host}")
    out.write(f"{args.service} on {host} is healthy (pid {entry.get('pid')}, "
              f"seen {max(0.0, time.time() - float(entry.get('seen', 0))):.0f}s ago)\n")
    return 0
