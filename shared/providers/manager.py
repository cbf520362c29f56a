"""The provider manager: at most one external provider, every hook guarded, recall bounded in time.

- `add_provider` accepts one provider; a second is refused with a warning (two recall sources
  would double the injected text and fight over what the model is told).
- `prefetch` runs the provider on its own thread and waits at most PROVIDER_PREFETCH_TIMEOUT_SECONDS;
  while a session's previous prefetch is still running, the session's next one is skipped.
  `start_prefetch` starts that thread early (as the turn begins), so the search runs alongside the
  turn's other pre-call work and `prefetch` only collects it.
- `sync_turn` queues; one session's syncs run in the order the turns finished; `queue_prefetch`
  queues behind them (Hermes Agent's single FIFO), so neither ever holds up a turn.
- Every other hook runs inline inside a try/except: a failing provider costs only its contribution.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Callable

from shared.config import Settings
from shared.providers.base import MemoryProvider, ProviderContext
from shared.concurrency.daemon_threads import DaemonThreads
from shared.providers.registry import import_modules, provider_class, registered_names
from shared.providers.session_queue import SessionQueue

log = logging.getLogger(__name__)

DISABLED = {"", "none", "off"}
SHUTDOWN_DRAIN_SECONDS = 5.0
TRACKED_SESSIONS = 10_000  # sessions remembered as initialised; an evicted one is simply initialised again
PRE_COMPRESS_HEAD, PRE_COMPRESS_TAIL = 4000, 1500
PRE_COMPRESS_CUT = "\n...[memory provider context truncated]...\n"


class _Pending:
    """One prefetch on its thread: which (turn, query) it serves and, once done, what it recalled."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.done: threading.Event | None = None
        self.text: str | None = None


class ProviderManager:
    """The memory provider of one worker process (or none)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.timeout = settings.provider_prefetch_timeout_seconds
        self.provider: MemoryProvider | None = None
        self._lock = threading.Lock()
        self._prefetching: OrderedDict[str, _Pending] = OrderedDict()
        self._initialised: OrderedDict[str, None] = OrderedDict()
        self._syncs = SessionQueue()
        self._prefetches = DaemonThreads("prefetch")

    @property
    def active(self) -> bool:
        return self.provider is not None

    def add_provider(self, provider: MemoryProvider) -> bool:
        """Use `provider`; refused (False, with a warning) when one is already in use or it is unavailable."""
        if self.provider is not None:
            log.warning("memory provider %r refused: %r is already in use and only one external provider is "
                        "allowed", provider.name, self.provider.name)
            return False
        if not _guarded(provider.is_available, f"{provider.name}.is_available", default=False):
            log.warning("memory provider %r is not available (configuration or dependencies missing)", provider.name)
            return False
        self.provider = provider
        return True

    def system_prompt_block(self, ctx: ProviderContext) -> str | None:
        if not self._ready(ctx):
            return None
        return _guarded(lambda: self.provider.system_prompt_block(ctx), "system_prompt_block")

    def on_turn_start(self, turn_number: int, message: str, ctx: ProviderContext) -> None:
        """Tell the provider a turn begins, before its recall is asked for."""
        if self._ready(ctx):
            _guarded(lambda: self.provider.on_turn_start(turn_number, message, ctx), "on_turn_start")

    def start_prefetch(self, query: str, ctx: ProviderContext) -> bool:
        """Begin the provider's prefetch for this turn's message now, on its own thread, so it runs
        alongside the turn's other pre-call work; `prefetch` with the same turn and query then takes its result.

        False when nothing started: no provider, an empty query, or the session's previous prefetch still runs.
        """
        if self.provider is None or not query.strip():
            return False
        with self._lock:
            pending = self._prefetching.get(ctx.session_id)
            if pending is not None and not pending.done.is_set():
                return pending.key == (ctx.turn_id, query)
            pending = _Pending((ctx.turn_id, query))
            self._prefetching[ctx.session_id] = pending
            self._prefetching.move_to_end(ctx.session_id)
            while len(self._prefetching) > TRACKED_SESSIONS:
                self._prefetching.popitem(last=False)
            pending.done = self._prefetches.run(lambda: self._prefetch_into(query, ctx, pending))
        return True

    def prefetch_started(self, query: str, ctx: ProviderContext) -> bool:
        """Whether `start_prefetch` began this turn's prefetch for `query` (its result not yet taken)."""
        with self._lock:
            pending = self._prefetching.get(ctx.session_id)
        return pending is not None and ctx.turn_id is not None and pending.key == (ctx.turn_id, query)

    def prefetch(self, query: str, ctx: ProviderContext) -> str | None:
        """What the provider recalls for `query`, or None: nothing relevant, too slow, or still busy.

        A prefetch `start_prefetch` began for this turn and query is waited for, never run twice.
        """
        if self.provider is None or not query.strip():
            return None
        key = (ctx.turn_id, query)
        with self._lock:
            pending = self._prefetching.get(ctx.session_id)
        if pending is None or pending.key != key:
            if not self.start_prefetch(query, ctx):
                log.info("memory prefetch skipped: the previous one of this session is still running")
                return None
            with self._lock:
                pending = self._prefetching.get(ctx.session_id)
        if not pending.done.wait(self.timeout):
            log.warning("memory prefetch took longer than %.1f s; the turn goes on without it", self.timeout)
            return None
        with self._lock:
            if self._prefetching.get(ctx.session_id) is pending:
                del self._prefetching[ctx.session_id]
        text = pending.text
        return text if text and text.strip() else None

    def _prefetch_into(self, query: str, ctx: ProviderContext, pending: "_Pending") -> None:
        if self._ready(ctx):
            pending.text = _guarded(lambda: self.provider.prefetch(query, ctx), "prefetch")

    def sync_turn(self, user_text: str, assistant_text: str, ctx: ProviderContext) -> None:
        """Queue the provider's learning from a completed turn behind the session's earlier ones."""
        if self._overrides("sync_turn"):
            self._queue(ctx, lambda: self.provider.sync_turn(user_text, assistant_text, ctx))

    def queue_prefetch(self, user_text: str, assistant_text: str, ctx: ProviderContext) -> None:
        """Queue the preparation of the session's next recall behind its syncs."""
        if self._overrides("queue_prefetch"):
            self._queue(ctx, lambda: self.provider.queue_prefetch(user_text, assistant_text, ctx))

    def on_session_end(self, ctx: ProviderContext) -> None:
        """The session really ended; the caller makes sure this happens once per session."""
        if self._ready(ctx):
            _guarded(lambda: self.provider.on_session_end(ctx), "on_session_end")
        with self._lock:
            self._initialised.pop(ctx.session_id, None)

    def on_memory_write(self, action: str, target: str, content: str | None, ctx: ProviderContext) -> None:
        """Mirror a committed built-in memory write, in order with the session's syncs."""
        if self.provider is not None:
            self._queue(ctx, lambda: self.provider.on_memory_write(action, target, content, ctx))

    def wants_memory_writes(self) -> bool:
        """Whether the provider overrides `on_memory_write` (reading the turn's writes costs a query)."""
        return self._overrides("on_memory_write")

    def _overrides(self, hook: str) -> bool:
        """Whether the provider does anything on this hook: a no-op is not queued on a sync thread every turn."""
        return self.provider is not None and getattr(type(self.provider), hook) is not getattr(MemoryProvider, hook)

    def _queue(self, ctx: ProviderContext, job: Callable[[], None]) -> None:
        def run() -> None:
            if self._ready(ctx):
                job()

        if not self._syncs.submit(ctx.session_id, run):
            log.warning("memory provider is shutting down; a post-turn sync was dropped")

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The provider's tool schemas as bare functions (`{name, description, parameters}`)."""
        if self.provider is None:
            return []
        schemas = _guarded(self.provider.tool_schemas, "tool_schemas", default=[]) or []
        bare = [s.get("function", s) if s.get("type") == "function" else s for s in schemas]
        return [s for s in bare if isinstance(s, dict) and s.get("name")]

    def handle_tool_call(self, name: str, args: dict[str, Any], ctx: ProviderContext) -> str:
        """Run a provider tool; its errors reach the model as the tool's error result."""
        self._ready(ctx)
        return self.provider.handle_tool_call(name, args, ctx)

    def on_pre_compress(self, messages: list[dict[str, Any]], ctx: ProviderContext) -> str | None:
        """What the provider wants the summary to keep, capped; then the session's context ends."""
        if not self._ready(ctx):
            return None
        text = _guarded(lambda: self.provider.on_pre_compress(messages, ctx), "on_pre_compress")
        _guarded(lambda: self.provider.on_session_end(ctx), "on_session_end")
        if not text or not text.strip():
            return None
        text = text.strip()
        if len(text) > PRE_COMPRESS_HEAD + PRE_COMPRESS_TAIL:
            text = text[:PRE_COMPRESS_HEAD] + PRE_COMPRESS_CUT + text[-PRE_COMPRESS_TAIL:]
        return text

    def flush(self, timeout: float) -> bool:
        """Wait until every queued sync ran; False when some were still waiting after `timeout` s."""
        return self._syncs.wait_idle(timeout)

    def shutdown(self) -> None:
        """Give queued syncs a few seconds, then shut the provider down."""
        abandoned = self._syncs.close(SHUTDOWN_DRAIN_SECONDS)
        if abandoned:
            log.warning("memory provider shut down with %d post-turn sync(s) not run", abandoned)
        if self.provider is not None:
            _guarded(self.provider.shutdown, "shutdown")

    def _ready(self, ctx: ProviderContext) -> bool:
        """Initialise the provider for this session on first contact; False when there is no provider."""
        if self.provider is None:
            return False
        with self._lock:
            first = ctx.session_id not in self._initialised
            self._initialised[ctx.session_id] = None
            self._initialised.move_to_end(ctx.session_id)
            while len(self._initialised) > TRACKED_SESSIONS:
                self._initialised.popitem(last=False)
        if first:
            _guarded(lambda: self.provider.initialize(ctx), "initialize")
        return True


def build_manager(settings: Settings) -> ProviderManager:
    """The manager with the provider MEMORY_PROVIDER names (none when it says "none" or names no provider)."""
    manager = ProviderManager(settings)
    import_modules(settings.memory_provider_modules)
    name = settings.memory_provider.strip().lower()
    if name in DISABLED:
        return manager
    cls = provider_class(name)
    if cls is None:
        log.error("MEMORY_PROVIDER=%r names no registered memory provider (known: %s); running without one",
                  name, ", ".join(registered_names()) or "none")
        return manager
    provider = _guarded(lambda: cls(settings), f"{name} constructor")
    if provider is not None:
        manager.add_provider(provider)
    return manager


def _guarded(call: Callable[[], Any], what: str, default: Any = None) -> Any:
    try:
        return call()
    except Exception:
        log.exception("memory provider hook %s failed", what)
        return default
