"""How `hstack run` knows a service is ready: the api's /readyz, a worker's heartbeat in Redis, a listening port."""

from __future__ import annotations

import socket
from typing import Callable

import httpx
import redis

from services.cli.children import Child
from services.cli.redis_embedded import answers_ping
from shared.ops import heartbeats

Probe = Callable[[Child], bool]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def port_probe(port: int) -> Probe:
    """Ready when something accepts connections on 127.0.0.1:port."""
    return lambda _child: listening(port)


def redis_probe(url: str) -> Probe:
    """Ready when the Redis at `url` answers PING."""
    def probe(_child: Child) -> bool:
        return answers_ping(url, timeout=0.5)
    return probe


def api_probe(base_url: str) -> Probe:
    """Ready when /readyz answers 200 (database and Redis reachable from the api)."""
    def probe(_child: Child) -> bool:
        try:
            return httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
    return probe


def heartbeat_probe(redis_url: str, service: str) -> Probe:
    """Ready when this very process (its pid) announced `service` in Redis: a worker does once it consumes."""
    def probe(child: Child) -> bool:
        client = redis.Redis.from_url(redis_url, decode_responses=True, socket_connect_timeout=0.5, socket_timeout=1)
        try:
            return any(s.get("service") == service and s.get("pid") == child.pid for s in heartbeats.alive(client))
        except (redis.RedisError, OSError, ValueError):
            return False
        finally:
            client.close()
    return probe
