"""Patterns a model supplies (regular expressions, globs), compiled for RE2: linear time, never Python's `re`.

Python's `re` backtracks: `(a+)+$` over 30 bytes runs for seconds holding the GIL, which stalls every
turn of the worker. RE2 matches in time linear in the text, releases the GIL while it does, and
refuses what it cannot do in linear time (backreferences, lookaround) instead of trying.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import re2

from shared.errors import InvalidInput

MAX_PATTERN_CHARS = 1000
MAX_GLOB_CHARS = 255
PATTERN_MEMORY_BYTES = 8 * 1024 * 1024


def _options(*, dot_nl: bool = False) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a bad pattern is the model's mistake, answered in the result, not logged
    options.never_capture = True  # without submatches RE2 stays on its DFA: linear even for wide matches
    options.max_mem = PATTERN_MEMORY_BYTES
    options.dot_nl = dot_nl
    return options


def _reason(exc: Exception) -> str:
    message = exc.args[0] if exc.args else ""
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)


@dataclass(frozen=True)
class LinePattern:
    """A compiled search pattern, and a note for the model when it was searched as plain text."""

    search: Callable[[str], object]
    note: str | None = None


def line_pattern(pattern: str) -> LinePattern:
    """`pattern` as an RE2 regular expression, or as plain text (with a note) when RE2 cannot compile it."""
    if not pattern:
        raise InvalidInput("pattern must not be empty.")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidInput(f"pattern is {len(pattern):,} characters; the limit is {MAX_PATTERN_CHARS:,}.")
    try:
        return LinePattern(re2.compile(pattern, _options()).search)
    except re2.error as exc:
        note = (f"[Searched as plain text: the pattern is not a regular expression this search supports "
                f"({_reason(exc)}). Backreferences and lookaround are not supported.]")
        return LinePattern(re2.compile(re2.escape(pattern), _options()).search, note)


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test of whole names against a shell glob (`*`, `?`, `[abc]`, `[!abc]`), as `fnmatch` reads it."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise InvalidInput(f"pattern is {len(pattern):,} characters; the limit is {MAX_GLOB_CHARS}.")
    try:
        regex = re2.compile(glob_to_regex(pattern), _options(dot_nl=True))
    except re2.error as exc:
        raise InvalidInput(f"pattern {pattern!r} is not a valid glob: {_reason(exc)}.") from exc
    return lambda name: regex.fullmatch(name) is not None


def glob_to_regex(pattern: str) -> str:
    """The RE2 syntax for a glob; runs of `*` collapse into one."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        i += 1
        if char == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = _class_end(pattern, i)
            if end is None:
                out.append(re2.escape(char))
            else:
                out.append(_char_class(pattern[i:end]))
                i = end + 1
        else:
            out.append(re2.escape(char))
    return "".join(out)


def _class_end(pattern: str, start: int) -> int | None:
    """Where the bracket class opened before `start` closes; a `]` first (after any `!`) is a member."""
    j = start
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    end = pattern.find("]", j)
    return None if end < 0 else end


def _char_class(members: str) -> str:
    negate = members.startswith("!")
    if negate:
        members = members[1:]
    escaped = "".join("\\" + c if c in "\\^[]" else c for c in members)
    return f"[{'^' if negate else ''}{escaped}]"
