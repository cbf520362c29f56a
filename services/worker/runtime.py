"""What a worker process runs turns with: settings, database, Redis, model client, tools, leases."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Callable

import redis
from pydantic import BaseModel

from shared.config import Settings, get_settings
from shared.db import Database, get_database
from shared.ops.holders import holder_id
from shared.llm import LLMClient, get_llm
from shared.models.turns import Turn
from shared.queue.app import enqueue
from shared.queue.turns import send_turn
from shared.messaging.connections import get_redis
from services.worker.agent.transcripts import TranscriptCache
from services.worker.leases import LeaseKeeper
from services.worker.recovery import DeadHolderSweep
from services.worker.sandbox import stop_background
from services.worker.shutdown import Shutdown
from services.worker.hooks import current
from services.worker.registrations import built_in_tools
from services.worker.tools.registry import ToolRegistry


def service_name() -> str:
    """The name this process announces itself under (worker, reviewer, …)."""
    return os.environ.get("HSTACK_SERVICE", "worker")


@dataclass
class Runtime:
    """Built once per process; every turn of the process shares it."""

    settings: Settings
    db: Database
    redis: redis.Redis
    llm: LLMClient
    tools: ToolRegistry
    worker_id: str
    leases: LeaseKeeper
    transcripts: TranscriptCache = field(default_factory=TranscriptCache)
    shutdown: Shutdown = field(default_factory=Shutdown)
    enqueue: Callable[[str, BaseModel], None] = enqueue

    @classmethod
    def build(cls, settings: Settings, *, tools: ToolRegistry | None = None, worker_id: str | None = None) -> "Runtime":
        """A runtime for these settings; tests pass their own tools and worker id."""
        db = get_database(settings.sqlalchemy_url)
        r = get_redis(settings)
        service = service_name()
        worker_id = worker_id or holder_id(service)
        leases = LeaseKeeper(db, r, worker_id, interval=settings.turn_heartbeat_seconds, service=service,
                             settings=settings)
        current()  # the hooks are in place before the first turn
        tools = tools if tools is not None else built_in_tools(settings)
        runtime = cls(settings, db, r, get_llm(settings, r), tools, worker_id, leases)
        leases.sweep = DeadHolderSweep(db, worker_id, runtime.send_all, lease_seconds=settings.turn_lease_seconds)
        return runtime

    def send_all(self, ready: list[Turn]) -> None:
        """Enqueue turns already marked sent (a lost send is left to the sweeper, which re-sends them)."""
        for turn in ready:
            send_turn(self.enqueue, turn.id, turn.session_id)


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()
SHUTDOWN = Shutdown()  # the process's stop flag, set by the worker's SIGTERM handler


def get_runtime() -> Runtime:
    """The process's runtime, built on first use."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = Runtime.build(get_settings())
            _runtime.shutdown = SHUTDOWN
        return _runtime


def current_runtime() -> Runtime | None:
    """The process's runtime if a task ever built it."""
    return _runtime


def stop_runtime() -> None:
    """Stop the process runtime's lease keeper (if it was ever built) and its background processes."""
    if _runtime is not None:
        _runtime.leases.stop()
    stop_background()  # background processes belong to this worker process and end with it
