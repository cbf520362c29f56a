"""The `MemoryProvider` interface: Hermes Agent's lifecycle, made per-user for a multi-user service.

One provider instance serves a whole worker process, so every call carries a `ProviderContext`
naming the user and session it is about. Every hook has a do-nothing default; a provider overrides
what it needs. The manager calls each hook inside its own try/except, so a failing provider costs
only its own contribution, never the turn.

Lifecycle, per worker process:
- `__init__(settings)` once, when the manager is built: read settings, no network.
- `is_available()` right after: False (missing config or dependency) and the provider is skipped.
- `initialize(ctx)` the first time this process serves a session, before any other call for it.
- per turn: `on_turn_start(turn_number, message, ctx)` then `prefetch(query, ctx)` before the first
  model call (bounded in time; what it returns is fenced and rides on the user's message), then
  `sync_turn(user, assistant, ctx)` and `queue_prefetch(user, assistant, ctx)` after a completed turn
  (queued, off the turn's path; one session's jobs run in order), and `on_memory_write` for every
  memory write the turn committed.
- `system_prompt_block(ctx)` when a session's system prompt is built (once, then frozen).
- `tool_schemas()` / `handle_tool_call(name, args, ctx)` for the provider's own tools.
- `on_pre_compress(messages, ctx)` then `on_session_end(ctx)` before a session's context is compressed,
  and `on_session_end(ctx)` once more, exactly once, when the session really ends (`POST
  /v1/sessions/{id}/end`, which /new clients call, or SESSION_IDLE_END_HOURS without a turn).
- `shutdown()` when the worker stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.config import Settings
from shared.db import Database


@dataclass(frozen=True)
class ProviderContext:
    """Who and what a provider call is about."""

    settings: Settings
    db: Database
    user_id: str
    session_id: str
    turn_id: str | None = None
    platform: str = "api"  # the session's source: api, telegram, …


class MemoryProvider:
    """Base class of memory providers; subclass it, set `name`, and `register` the class."""

    name: str = ""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def is_available(self) -> bool:
        """Whether configuration and dependencies are present; must not touch the network."""
        return True

    def initialize(self, ctx: ProviderContext) -> None:
        """Prepare for a session this process has not served before."""

    def system_prompt_block(self, ctx: ProviderContext) -> str | None:
        """Text for the session's system prompt (frozen for the whole session)."""
        return None

    def on_turn_start(self, turn_number: int, message: str, ctx: ProviderContext) -> None:
        """A turn begins: `message` is the user's text, `turn_number` the session's count of turns so far."""

    def prefetch(self, query: str, ctx: ProviderContext) -> str | None:
        """Background context for the incoming user message `query`; None when nothing is relevant."""
        return None

    def sync_turn(self, user_text: str, assistant_text: str, ctx: ProviderContext) -> None:
        """Learn from a completed turn."""

    def queue_prefetch(self, user_text: str, assistant_text: str, ctx: ProviderContext) -> None:
        """Prepare the next turn's recall from the exchange that just ended (runs in the background)."""

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of the provider's own tools."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], ctx: ProviderContext) -> str:
        """Run one of the provider's tools; the text returned is the tool result."""
        raise NotImplementedError(f"The {self.name} memory provider has no tool named {name!r}.")

    def on_session_end(self, ctx: ProviderContext) -> None:
        """The session's context is about to be rewritten (compressed), or the session ended: flush what it holds."""

    def on_pre_compress(self, messages: list[dict[str, Any]], ctx: ProviderContext) -> str | None:
        """Text the summary of the messages about to be compressed should keep."""
        return None

    def on_memory_write(self, action: str, target: str, content: str | None, ctx: ProviderContext) -> None:
        """A committed write of the built-in memory tool (add, replace or remove on memory or user)."""

    def shutdown(self) -> None:
        """Release what the provider holds; the worker is stopping."""
