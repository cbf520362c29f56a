"""Where context compression cuts: token estimates, the verbatim head and tail, and the middle to summarise.

The cut works on groups, so an assistant message with tool calls and its results are never split.
The head is pinned on a session's first compaction only; later compactions fold it into the summary.
The tail is the newest groups within a token budget (at least a few messages), and always holds the
last user message and the last assistant message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from shared.config import Settings
from shared.models.compactions import Compaction
from shared.models.sessions import Message
from services.worker.agent.history import to_wire

CHARS_PER_TOKEN = 4
SOFT_CEILING = 1.5  # the tail may pass its budget by half rather than cut inside a large message
MIN_TAIL_FLOOR, MIN_TAIL_CAP = 3, 8


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(message: dict) -> int:
    """The estimate for one wire message: its text and its tool calls."""
    calls = message.get("tool_calls")
    return text_tokens(str(message.get("content") or "")) + (text_tokens(json.dumps(calls)) if calls else 0)


def prompt_tokens(system_prompt: str, messages: list[dict], tools: list[dict] | None) -> int:
    """What a model call would cost in tokens, estimated at four characters a token."""
    schemas = text_tokens(json.dumps(tools)) if tools else 0
    return text_tokens(system_prompt) + sum(message_tokens(m) for m in messages) + schemas


LARGE_WINDOW = 512_000  # below this, the threshold is never under COMPRESSION_SMALL_WINDOW_SHARE
DEGENERATE_SHARE = 0.85  # when the floor does not fit in the window


def threshold_tokens(settings: Settings) -> int:
    """The prompt size past which the session's context is compressed (Hermes Agent's arithmetic).

    The share of the window left after the answer's max_tokens, raised to 75% for windows under 512K
    tokens, and never under the 64K-token floor; a window the floor does not fit in uses 85% of it.
    """
    window = settings.llm_context_window
    usable = max(1, window - max(0, settings.llm_max_tokens))
    share = settings.compression_threshold
    if window < LARGE_WINDOW:
        share = max(share, settings.compression_small_window_share)
    floor = settings.compression_floor_tokens
    if floor >= usable:
        return int(usable * DEGENERATE_SHARE)
    return max(int(usable * share), floor)


def tail_budget(settings: Settings) -> int:
    """The tokens the verbatim tail may hold."""
    return int(threshold_tokens(settings) * settings.compression_target_ratio)


@dataclass
class Group:
    """One message, or an assistant message with its tool calls' results."""

    rows: list[Message] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(message_tokens(to_wire(m)) for m in self.rows)

    def has(self, role: str) -> bool:
        return any(m.role == role for m in self.rows)


def grouped(rows: list[Message]) -> list[Group]:
    """Rows in call/result groups; a result never starts a group while a call message precedes it."""
    groups: list[Group] = []
    for row in rows:
        if row.role == "tool" and groups and groups[-1].rows[0].role == "assistant" and groups[-1].rows[0].tool_calls:
            groups[-1].rows.append(row)
        else:
            groups.append(Group([row]))
    return groups


def rows_of(groups: list[Group]) -> list[Message]:
    return [m for g in groups for m in g.rows]


@dataclass(frozen=True)
class Window:
    """The compaction to make: `head` and `tail` stay verbatim, `middle` is summarised."""

    head: list[Message]
    middle: list[Message]
    tail: list[Message]
    previous: Compaction | None

    def summarized_through(self) -> int:
        last = self.middle[-1].id if self.middle else 0
        return max(last, self.previous.summarized_through_id if self.previous else 0)


def plan(stored: list[Message], previous: Compaction | None, settings: Settings) -> Window:
    """Split the working context of a session; an empty middle means there is nothing to compress."""
    if previous is None:
        head, rest = split_head(grouped(stored), settings.compression_protect_first_n)
        pinned = 0
    else:
        kept = previous.head_through_id
        head = []
        rest = grouped([m for m in stored if kept is not None and m.id <= kept])
        pinned = len(rest)
        rest += grouped([m for m in stored if m.id > previous.summarized_through_id])
    cut = tail_start(rest, tail_budget(settings), settings.compression_protect_last_n)
    if cut < pinned:  # the tail would reach into the old head: keep the window as it is
        cut = 0
    return Window(rows_of(head), rows_of(rest[:cut]), rows_of(rest[cut:]), previous)


def split_head(groups: list[Group], first_n: int) -> tuple[list[Group], list[Group]]:
    """The first groups holding at least `first_n` messages, and the rest."""
    count = index = 0
    while index < len(groups) and count < first_n:
        count += len(groups[index].rows)
        index += 1
    return groups[:index], groups[index:]


def tail_start(groups: list[Group], budget: int, protect_last_n: int) -> int:
    """The index of the first group of the verbatim tail (0: everything stays, nothing to summarise)."""
    total = sum(len(g.rows) for g in groups)
    min_tail = min(max(MIN_TAIL_FLOOR, min(protect_last_n, MIN_TAIL_CAP)), max(3, total - 2), total)
    start = walk_back(groups, int(budget * SOFT_CEILING), min_tail)
    if start == 0:  # it all fits under the soft ceiling: hold to the budget itself so something is compacted
        start = walk_back(groups, budget, min_tail)
    for role in ("user", "assistant"):
        start = min(start, last_with(groups, role))
    return start


def walk_back(groups: list[Group], ceiling: int, min_tail: int) -> int:
    tokens = count = 0
    start = len(groups)
    for index in range(len(groups) - 1, -1, -1):
        size = groups[index].tokens
        if tokens + size > ceiling and count >= min_tail:
            break
        tokens += size
        count += len(groups[index].rows)
        start = index
    return start


def last_with(groups: list[Group], role: str) -> int:
    """The index of the last group holding a message of `role` (past the end when there is none)."""
    for index in range(len(groups) - 1, -1, -1):
        if groups[index].has(role):
            return index
    return len(groups)
