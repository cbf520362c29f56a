"""The memory tool's rules on a list of entries: checks, matching, add/replace/remove, batches, the limit.

Pure functions over lists; `shared.stores.memory` runs them on the file under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.security.fences import neutralise
from shared.files.memory import DELIMITER, render

ACTIONS = ("add", "replace", "remove")
PREVIEW_CHARS = 80
LABELS = {"memory": "memory", "user": "user profile"}
CONSOLIDATE = ("Consolidate now: use replace to merge related entries or remove to prune stale ones, then "
               "retry — all in this turn.")
BATCH_ABORTED = "No operations were applied (batch is all-or-nothing)."


class RuleError(Exception):
    """A write the rules refuse; `code` is stable and `extra` joins the tool's error payload."""

    def __init__(self, code: str, message: str, *, show_state: bool = False, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.show_state = show_state  # the payload should list the entries so the model can pick one
        self.extra = extra


@dataclass(frozen=True)
class Op:
    """One change: `content` stripped and neutralised (no fence tag or system-note marker can be stored),
    `old_text` stripped ("" when absent)."""

    action: str
    content: str = ""
    old_text: str = ""

    @classmethod
    def of(cls, action: Any, content: Any = None, old_text: Any = None) -> "Op":
        return cls(str(action or ""), neutralise(_text(content)), _text(old_text))


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def chars(entries: list[str]) -> int:
    """What the limit counts: the entries joined by their 3-char delimiters."""
    return len(render(entries))


def usage(entries: list[str], limit: int) -> str:
    return f"{chars(entries):,}/{limit:,}"


def percent(used: int, limit: int) -> int:
    return min(100, int(used / limit * 100))


def preview(entry: str) -> str:
    return entry if len(entry) <= PREVIEW_CHARS else entry[:PREVIEW_CHARS] + "..."


def check(op: Op) -> None:
    """Refuse an operation that lacks what its action needs, before any file is touched."""
    if not op.action:
        raise RuleError("memory_invalid", "An action is required: add, replace or remove (or a list of operations).")
    if op.action not in ACTIONS:
        raise RuleError("memory_invalid", f"Unknown action '{op.action}'. Use: add, replace, remove")
    if op.action in ("replace", "remove") and not op.old_text:
        raise RuleError("memory_invalid", f"old_text is required for {op.action}: reissue the call with a short "
                                          "substring that appears in exactly one entry.", show_state=True)
    if op.action in ("add", "replace") and not op.content:
        raise RuleError("memory_invalid", "Content cannot be empty." if op.action == "add" else
                        "New content cannot be empty; use 'remove' to delete an entry.")
    if DELIMITER in op.content:
        raise RuleError("memory_invalid", "Content cannot contain a line holding only '§' (the entry delimiter); "
                                          "save separate entries instead.")


def find(entries: list[str], old_text: str) -> int:
    """The index of the one entry containing `old_text` (as typed, or as it was stored: neutralised);
    identical duplicates resolve to the first."""
    stored = neutralise(old_text)
    hits = [i for i, entry in enumerate(entries) if old_text in entry or stored in entry]
    if not hits:
        raise RuleError("memory_no_match", f"No entry matched '{old_text}'.")
    if len({entries[i] for i in hits}) > 1:
        raise RuleError("memory_ambiguous", f"Multiple entries matched '{old_text}'. Be more specific.",
                        matches=[preview(entries[i]) for i in hits])
    return hits[0]


def apply(entries: list[str], op: Op) -> list[str]:
    """The entries after one operation (a new list); an exact duplicate add leaves them as they are."""
    if op.action == "add":
        return entries if op.content in entries else [*entries, op.content]
    index = find(entries, op.old_text)
    if op.action == "replace":
        return [*entries[:index], op.content, *entries[index + 1:]]
    return [*entries[:index], *entries[index + 1:]]


def apply_one(entries: list[str], op: Op, limit: int, target: str) -> list[str]:
    """One operation, refused when an add or replace would leave the store over its limit."""
    after = apply(entries, op)
    if op.action == "remove" or after is entries or chars(after) <= limit:
        return after
    label = LABELS[target]
    if op.action == "add":
        message = (f"{label.capitalize()} at {chars(entries):,}/{limit:,} chars. Adding this entry "
                   f"({len(op.content):,} chars) would exceed the limit. {CONSOLIDATE}")
    else:
        message = f"Replacement would put {label} at {chars(after):,}/{limit:,} chars, over the limit. {CONSOLIDATE}"
    raise RuleError("memory_over_limit", message)


def apply_batch(entries: list[str], ops: list[Op], limit: int, target: str) -> list[str]:
    """Every operation in order on a copy; the limit is checked on the final state only."""
    after = entries
    for number, op in enumerate(ops, start=1):
        try:
            after = apply(after, op)
        except RuleError as err:
            raise RuleError(err.code, f"Operation {number} ({op.action}): {err.message} {BATCH_ABORTED}",
                            **err.extra) from err
    if chars(after) > limit:
        raise RuleError("memory_over_limit", f"After applying all {len(ops)} operations, {LABELS[target]} would be "
                                             f"at {chars(after):,}/{limit:,} chars -- over the limit. "
                                             f"{BATCH_ABORTED} {CONSOLIDATE}")
    return after
