"""The memory provider in the worker: recall on the user's message, syncs after the turn, its tools.

- turn start: `on_turn_start`, then the provider's prefetch for the incoming message starts on its own thread;
- turn context: that prefetch's result, fenced in `<memory-context>`,
  rides on that user message (stored once as api_content and replayed byte-identical), never in
  the system prompt;
- prompt part (ORDER_PROVIDER): the provider's own system prompt block, when it has one;
- after a turn: its committed memory writes are mirrored, then a completed turn is synced and the
  next turn's recall prepared (`queue_prefetch`), both queued off the turn's path;
- before compression: what the provider wants the summary to keep, then the session-end hook;
- tools: the configured provider's tools join the built-in registry (none may shadow a built-in).
One manager per distinct configuration, shared by every turn of the process.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Iterator

from shared.config import Settings
from shared.db import get_database
from shared.providers import ProviderContext, ProviderManager, build_manager, provider_class
from shared.security.fences import fence_memory_context, strip_fences
from shared.security.scanner import scan
from shared.stores import sessions
from services.worker.agent.context import TurnContext
from services.worker.agent.prompt import PromptContext
from services.worker.tools.registry import Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

_MANAGERS: dict[tuple[str, object], ProviderManager] = {}
_LOCK = threading.Lock()
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


def manager_for(settings: Settings) -> ProviderManager:
    """The manager for this configuration, built on first use."""
    key = (settings.model_dump_json(), provider_class(settings.memory_provider))
    with _LOCK:
        manager = _MANAGERS.get(key)
        if manager is None:
            manager = _MANAGERS[key] = build_manager(settings)
        return manager


def turn_provider_context(ctx: TurnContext) -> ProviderContext:
    return ProviderContext(ctx.settings, ctx.db, ctx.turn.user_id, ctx.turn.session_id, ctx.turn.id,
                           ctx.session.source)


def start_recall(ctx: TurnContext) -> None:
    """As the turn begins: tell the provider, and start its recall search for the message on its own thread."""
    manager = manager_for(ctx.settings)
    if not manager.active:
        return
    pctx = turn_provider_context(ctx)
    manager.on_turn_start(ctx.session.turn_count, ctx.turn.input, pctx)
    manager.start_prefetch(ctx.turn.input, pctx)


def recalled_context(ctx: TurnContext) -> str | None:
    """The provider's recall for this turn's message, fenced; None when it had nothing (or took too long).

    The search `start_recall` began is collected; a turn that did not start one (a resumed attempt)
    tells the provider the turn began and searches now.
    """
    manager = manager_for(ctx.settings)
    if not manager.active:
        return None
    pctx = turn_provider_context(ctx)
    if not manager.prefetch_started(ctx.turn.input, pctx):
        manager.on_turn_start(ctx.session.turn_count, ctx.turn.input, pctx)
    raw = manager.prefetch(ctx.turn.input, pctx)
    return fence_memory_context(raw) if raw else None


def provider_prompt_block(ctx: PromptContext) -> str | None:
    """The provider's system prompt block; a block the threat scanner flags is left out."""
    manager = manager_for(ctx.settings)
    if not manager.active:
        return None
    db = ctx.db or get_database(ctx.settings.sqlalchemy_url)
    pctx = ProviderContext(ctx.settings, db, ctx.session.user_id, ctx.session.id, None, ctx.session.source)
    block = manager.system_prompt_block(pctx)
    finding = scan(block) if block else None
    if finding is not None:
        log.warning("memory provider system prompt block left out: %s", finding.pattern_id)
        return None
    return block


def sync_after_turn(ctx: TurnContext, status: str, output: str | None) -> None:
    """Mirror the turn's committed memory writes (whatever its end), then sync it if it completed."""
    manager = manager_for(ctx.settings)
    if not manager.active:
        return
    pctx = turn_provider_context(ctx)
    if manager.wants_memory_writes():
        for action, target, content in committed_memory_writes(ctx.db, ctx.turn.id):
            manager.on_memory_write(action, target, content, pctx)
    if status == "completed" and output:  # an interrupted or failed turn teaches nothing
        manager.sync_turn(ctx.turn.input, output, pctx)
        manager.queue_prefetch(ctx.turn.input, output, pctx)


def committed_memory_writes(db, turn_id: str) -> Iterator[tuple[str, str, str | None]]:
    """(action, target, content) of each memory write the turn applied; staged and failed ones are not."""
    rows = sessions.turn_messages(db, turn_id)
    results = {m.tool_call_id: _json(m.content) for m in rows if m.role == "tool" and m.tool_call_id}
    for row in rows:
        for call in row.tool_calls or []:
            function = call.get("function") or {}
            result = results.get(call.get("id"))
            if function.get("name") != "memory" or not result or result.get("success") is not True:
                continue
            if result.get("staged"):
                continue
            args = _json(function.get("arguments"))
            target = args.get("target") or "memory"
            for op in args.get("operations") or [args]:
                if isinstance(op, dict) and op.get("action") in {"add", "replace", "remove"}:
                    yield op["action"], target, op.get("content")


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def provider_pre_compress(ctx: TurnContext, messages: list[dict]) -> str | None:
    manager = manager_for(ctx.settings)
    if not manager.active:
        return None
    text = manager.on_pre_compress(messages, turn_provider_context(ctx))
    return strip_fences(text) if text else None


def install_tools(registry: ToolRegistry, manager: ProviderManager) -> list[str]:
    """Add the provider's tools to `registry`; one named like an existing tool is dropped with a warning."""
    added = []
    for schema in manager.tool_schemas():
        name = schema["name"]
        if name in registry:
            log.warning("memory provider tool %r dropped: a tool of that name already exists", name)
            continue
        registry.add(Tool(name=name, description=schema.get("description") or "",
                          parameters=schema.get("parameters") or EMPTY_PARAMETERS,
                          handler=_tool_handler(manager, name)), toolset="memory_provider")
        added.append(name)
    return added


def _tool_handler(manager: ProviderManager, name: str):
    def handle(ctx: ToolContext, args: dict[str, Any]) -> str:
        db = get_database(ctx.settings.sqlalchemy_url)
        return manager.handle_tool_call(name, args, ProviderContext(ctx.settings, db, ctx.user_id, ctx.session_id,
                                                                    ctx.turn_id))
    return handle


def shutdown_managers() -> None:
    """Let every manager drain its queued syncs briefly and shut its provider down."""
    with _LOCK:
        managers = list(_MANAGERS.values())
        _MANAGERS.clear()
    for manager in managers:
        manager.shutdown()

