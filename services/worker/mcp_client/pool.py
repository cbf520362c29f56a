"""Every MCP session of one worker process, on one event loop thread, behind a blocking API for tools.

A stdio server runs once per user (in that user's sandbox), an HTTP server once per configuration. A server
that fails to start or drops is tried again at the next call, then with backoff (MCP_RECONNECT_*): until then
a call gets at once a `ServerDown` naming the server and its last error. Every attempt and every drop is written to the server's
health in Redis, which `hstack mcp list`, the api and the console show.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import anyio
import mcp_types as types
import redis
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED

from shared.config import Settings
from shared.errors import Unavailable, HermesError
from shared.mcp import health
from shared.mcp.servers import McpServerIn
from services.worker.sandbox import Sandbox

from . import remote, sandboxed
from .connection import Connection, describe

POLL_SECONDS = 0.1
IDLE_SWEEP_SECONDS = 30.0


class ServerDown(Unavailable):
    """An MCP server cannot be reached now."""

    code = "mcp_server_down"


class ToolFailed(HermesError):
    """The server answered the call with an error of its own."""

    status_code = 502
    code = "mcp_tool_failed"


@dataclass(frozen=True)
class Target:
    """A server as one user calls it: where it is configured and the workspace its stdio process gets."""

    scope: str
    server: McpServerIn
    user_id: str
    workspace: Path

    @property
    def key(self) -> tuple[str, ...]:
        owner = self.user_id if self.server.transport == "stdio" else ""
        return (self.scope, self.server.name, owner, self.server.model_dump_json())


@dataclass
class Failure:
    count: int
    retry_at: float
    error: str


class Pool:
    """Sessions by target, each opened on demand and reused while it lives."""

    def __init__(self, settings: Settings, r: redis.Redis, sandbox: Sandbox | None = None) -> None:
        self.settings = settings
        self.redis = r
        self.sandbox = sandbox
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp-loop", daemon=True).start()
        self.conns: dict[tuple[str, ...], Connection] = {}
        self.failures: dict[tuple[str, ...], Failure] = {}
        self.locks: dict[tuple[str, ...], threading.Lock] = {}
        self.used: dict[tuple[str, ...], float] = {}
        self.guard = threading.Lock()
        self.sweep_every = min(IDLE_SWEEP_SECONDS, settings.mcp_idle_seconds / 2)
        self.loop.call_soon_threadsafe(self.loop.call_later, self.sweep_every, self.sweep_idle)

    def tools(self, target: Target, cancelled: Callable[[], bool] = lambda: False) -> list[types.Tool]:
        """The server's tools, connecting when it has no live session."""
        return self.connection(target, cancelled).tools

    def check(self, target: Target) -> list[types.Tool]:
        """Reach the server now (a live session is pinged, a dead one reopened) and record its health."""
        conn = self.connection(target, lambda: False)
        try:
            self.wait(conn.session.send_ping(), self.settings.mcp_connect_timeout_seconds, lambda: False)
        except Exception as exc:  # noqa: BLE001 - whatever failed, the session is no longer usable
            self.dropped(target, conn, conn.error or describe(exc))
            conn = self.connection(target, lambda: False)
        health.record(self.redis, target.scope, target.server.name, "ready", tools=len(conn.tools))
        return conn.tools

    def call(self, target: Target, tool: str, args: dict[str, Any],
             cancelled: Callable[[], bool] = lambda: False) -> types.CallToolResult:
        """Call one tool; ServerDown when the server cannot be reached or drops, ToolFailed when it refuses."""
        conn = self.connection(target, cancelled)
        timeout = self.settings.mcp_call_timeout_seconds
        try:
            return self.wait(conn.session.call_tool(tool, args, read_timeout_seconds=timeout), timeout + 5, cancelled)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED and conn.alive:
                raise ToolFailed(f"MCP server {target.server.name!r} refused the call: {exc.message}") from None
            error = describe(exc)
        except TimeoutError:
            error = f"it did not answer within {timeout:g} s"
        except HermesError:
            raise
        except Exception as exc:  # noqa: BLE001 - a transport fault: the session is gone
            error = describe(exc)
        self.dropped(target, conn, conn.error or error)
        raise self.down(target)

    def connection(self, target: Target, cancelled: Callable[[], bool]) -> Connection:
        """The target's live session, opened now unless a recent failure's backoff still runs."""
        with self.lock_for(target.key):
            self.used[target.key] = time.monotonic()
            conn = self.conns.get(target.key)
            if conn is not None and conn.alive:
                return conn
            if conn is not None:
                self.dropped(target, conn, conn.error or "the connection ended")
            failure = self.failures.get(target.key)
            if failure is not None and time.monotonic() < failure.retry_at:
                raise self.down(target)
            return self.open(target, cancelled)

    def open(self, target: Target, cancelled: Callable[[], bool]) -> Connection:
        name, scope = target.server.name, target.scope
        health.record(self.redis, scope, name, "starting")
        holder: dict[str, sandboxed.Server] = {}
        conn = Connection(self.opener(target, holder), self.settings.mcp_connect_timeout_seconds,
                          lambda: holder["server"].said() if "server" in holder else "",
                          on_drop=lambda error: self.loop.run_in_executor(None, self.noticed, target, error))
        asyncio.run_coroutine_threadsafe(conn.run(), self.loop)
        deadline = time.monotonic() + self.settings.mcp_connect_timeout_seconds + 10
        while not conn.settled.wait(POLL_SECONDS):
            if cancelled() or time.monotonic() > deadline:
                conn.closing = True
                self.loop.call_soon_threadsafe(conn.end, "it did not start in time")
                break
        if not conn.alive:
            self.failed(target, conn.error or "it did not start in time")
            raise self.down(target)
        self.failures.pop(target.key, None)
        self.conns[target.key] = conn
        health.record(self.redis, scope, name, "ready", tools=len(conn.tools))
        return conn

    def opener(self, target: Target, holder: dict):
        server, settings = target.server, self.settings
        if server.transport == "http":
            return lambda on_end: remote.streams(server.url, server.headers, settings)

        @asynccontextmanager
        async def stdio(on_end):
            sandbox = self.sandbox or Sandbox.from_settings(settings)
            process = await anyio.to_thread.run_sync(sandboxed.start, server.command, server.env,
                                                     target.workspace, sandbox)
            holder["server"] = process
            try:
                async with sandboxed.streams(process, lambda: on_end("the server process ended")) as pair:
                    yield pair
            finally:
                await anyio.to_thread.run_sync(process.stop)

        return stdio

    def noticed(self, target: Target, error: str) -> None:
        """A session ended by itself (its server died): the health says so at once, not at the next call."""
        health.record(self.redis, target.scope, target.server.name, "failed", error=error)

    def dropped(self, target: Target, conn: Connection, error: str) -> None:
        """A live session ended: forget it, end it on the loop and count a failure."""
        if self.conns.get(target.key) is conn:
            del self.conns[target.key]
        conn.closing = True
        self.loop.call_soon_threadsafe(conn.end, error)
        self.failed(target, error)

    def failed(self, target: Target, error: str) -> None:
        previous = self.failures.get(target.key)
        count = previous.count + 1 if previous else 1
        base, cap = self.settings.mcp_reconnect_base_seconds, self.settings.mcp_reconnect_max_seconds
        # The first failure is retried at the next call (a crashed stdio server just restarts); then backoff.
        delay = 0.0 if count == 1 else min(cap, base * 2 ** (count - 2))
        self.failures[target.key] = Failure(count, time.monotonic() + delay, error)
        health.record(self.redis, target.scope, target.server.name, "failed", error=error)

    def down(self, target: Target) -> ServerDown:
        failure = self.failures.get(target.key)
        error = failure.error if failure else "unknown"
        wait = max(0.0, failure.retry_at - time.monotonic()) if failure else 0.0
        retry = f"; it is tried again in {wait:.0f} s" if wait >= 1 else "; it is tried again at the next call"
        return ServerDown(f"MCP server {target.server.name!r} is down: {error}{retry}.")

    def wait(self, coro, timeout: float, cancelled: Callable[[], bool]):
        """Run `coro` on the loop and wait for it, giving up on a cancel or after `timeout`."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(POLL_SECONDS)
            except TimeoutError:
                if cancelled() or time.monotonic() > deadline:
                    future.cancel()
                    raise TimeoutError() from None

    def sweep_idle(self) -> None:
        """End sessions nobody called for MCP_IDLE_SECONDS (a user's stdio server stops; the next call restarts it)."""
        cutoff = time.monotonic() - self.settings.mcp_idle_seconds
        for key, conn in list(self.conns.items()):
            if self.used.get(key, 0.0) < cutoff and self.conns.get(key) is conn:
                del self.conns[key]
                conn.closing = True
                conn.end("idle")
        self.loop.call_later(self.sweep_every, self.sweep_idle)

    def lock_for(self, key: tuple[str, ...]) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(key, threading.Lock())

    def close(self) -> None:
        """End every session (their stdio processes are stopped)."""
        for conn in list(self.conns.values()):
            conn.closing = True
            self.loop.call_soon_threadsafe(conn.end, "the worker stopped")
        self.conns.clear()


_pools: dict[str, Pool] = {}
_pools_lock = threading.Lock()


def pool_for(settings: Settings, r: redis.Redis) -> Pool:
    """This process's pool for these settings (one per DATA_DIR and Redis, so tests with their own keep apart)."""
    key = json.dumps([str(settings.data_dir), settings.redis_url or "", settings.mcp_connect_timeout_seconds,
                      settings.mcp_reconnect_base_seconds, settings.mcp_allow, settings.terminal_sandbox])
    with _pools_lock:
        if key not in _pools:
            _pools[key] = Pool(settings, r)
        return _pools[key]
