"""The worker's hooks in one object, filled by services/worker/registrations.py at start-up, never on import.

Five lists, one per extension point of a turn: system-prompt parts (by order), turn-start hooks, context
builders for the user's message, after-turn hooks and pre-compress hooks. The process runs one installed
`Hooks`; a test installs its own (`install`) instead of patching module lists.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

Hook = Callable[..., Any]


@dataclass
class Hooks:
    """Every hook a turn calls, each list in registration order (prompt parts by order first)."""

    prompt_parts: list[tuple[int, Hook]] = field(default_factory=list)
    turn_start: list[Hook] = field(default_factory=list)
    turn_context: list[Hook] = field(default_factory=list)
    after_turn: list[Hook] = field(default_factory=list)
    pre_compress: list[Hook] = field(default_factory=list)

    def add_prompt_part(self, part: Hook, order: int = 50) -> None:
        """A system-prompt part; parts run by `order`, then registration order, and empty results are left out."""
        if all(p is not part for _, p in self.prompt_parts):
            self.prompt_parts.append((order, part))
            self.prompt_parts.sort(key=lambda entry: entry[0])

    def add_turn_start(self, hook: Hook) -> None:
        """`hook(ctx)` as each turn begins: it starts background work and returns without waiting."""
        _add(self.turn_start, hook)

    def add_turn_context(self, builder: Hook) -> None:
        """`builder(ctx)` returns a block for the turn's user message, or None."""
        _add(self.turn_context, builder)

    def add_after_turn(self, hook: Hook) -> None:
        """`hook(ctx, status, output)` after every turn this worker finishes (status: completed, failed, …)."""
        _add(self.after_turn, hook)

    def add_pre_compress(self, hook: Hook) -> None:
        """`hook(ctx, messages)` before a session's context is compressed; text it returns reaches the summary."""
        _add(self.pre_compress, hook)


def _add(hooks: list[Hook], hook: Hook) -> None:
    if hook not in hooks:
        hooks.append(hook)


_installed: Hooks | None = None
_lock = threading.Lock()


def install(hooks: Hooks | None) -> Hooks | None:
    """Make `hooks` the process's hooks (None: the built-in set at next use); returns the ones it replaces."""
    global _installed
    with _lock:
        previous, _installed = _installed, hooks
    return previous


def current() -> Hooks:
    """The process's hooks; the built-in set, registered on first use, when none was installed."""
    global _installed
    installed = _installed
    if installed is not None:  # every hook call reads it: no lock once installed
        return installed
    with _lock:
        if _installed is None:
            # Imported here: the call list imports the features, whose agent modules import this one.
            from services.worker.registrations import built_in_hooks

            _installed = built_in_hooks()
        return _installed
