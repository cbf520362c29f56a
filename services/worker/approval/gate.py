"""The approval gate's decision for one command: floor, then the operator's deny list, then the mode."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Callable

from .hardline import RAW_TOKENS, floor
from .parse import analyse
from .guardian import guardian_messages, parse_verdict
from .patterns import dangerous as dangerous_in

MAX_COMMAND_CHARS = 10_000
# Deeply nested substitutions are where the parser's cost grows fastest; no daily command needs this many.
MAX_SUBSTITUTIONS = 64
Guardian = Callable[[list[dict]], str]


@dataclass(frozen=True)
class Decision:
    """run, ask or refuse; `rule` says which step decided and `key` what a session approval remembers."""

    action: str
    reason: str
    rule: str
    key: str | None = None


def normalise(command: str) -> list[str]:
    """The simple commands the line really runs, in the canonical spelling patterns use."""
    return [cmd.text() for cmd in analyse(command).commands]


def hardline(command: str, max_chars: int = MAX_COMMAND_CHARS) -> str | None:
    """Why the command may never run, or None. Over-long commands cannot be checked, so they may not run."""
    return _too_big(command, max_chars) or floor(analyse(command))


def _too_big(command: str, max_chars: int) -> str | None:
    if len(command) > max_chars:
        return f"the command is longer than {max_chars} characters and cannot be checked"
    if command.count("$(") + command.count("`") // 2 + command.count("<(") > MAX_SUBSTITUTIONS:
        return f"the command nests more than {MAX_SUBSTITUTIONS} substitutions and cannot be checked"
    return None


def dangerous(command: str) -> str | None:
    """The dangerous-pattern description the command matches, or None."""
    return _dangerous(analyse(command))


def _dangerous(analysis) -> str | None:
    reason = dangerous_in(analysis)
    if reason is None and analysis.unparsed:
        m = next((m for t in analysis.texts if (m := RAW_TOKENS.search(t))), None)
        if m:
            return f"could not be fully parsed and mentions {m.group(0)!r}"
    return reason


def deny_list(command: str, patterns: list[str] | tuple[str, ...]) -> str | None:
    """The first operator glob (case-insensitive) matching the whole line or one of its simple commands."""
    if not patterns:
        return None
    candidates = [command.strip().lower(), *(c.lower() for c in normalise(command))]
    for pattern in patterns:
        if any(fnmatchcase(c, pattern.lower()) for c in candidates):
            return pattern
    return None


def deny_patterns(raw: str) -> tuple[str, ...]:
    """APPROVAL_DENY_PATTERNS: comma-separated globs, blanks dropped."""
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def decide(command: str, mode: str, *, deny: tuple[str, ...] = (), guardian: Guardian | None = None,
           interactive: bool = True, session_approved: frozenset[str] = frozenset(),
           max_chars: int = MAX_COMMAND_CHARS) -> Decision:
    """Hard-line floor, then the deny list, then the mode (off / manual / smart)."""
    too_big = _too_big(command, max_chars)
    if too_big:
        return Decision("refuse", too_big, "hardline")
    analysis = analyse(command)
    reason = floor(analysis)
    if reason:
        return Decision("refuse", f"never allowed: {reason}", "hardline")
    matched = deny_list(command, deny)
    if matched:
        return Decision("refuse", f"refused by the operator's deny list ({matched})", "deny_list")
    if mode == "off":
        return Decision("run", "approvals are off", "mode")
    reason = _dangerous(analysis)
    if reason is None:
        return Decision("run", "no dangerous pattern", "safe")
    if reason in session_approved:
        return Decision("run", f"{reason}: approved for this session", "session", reason)
    if mode == "smart":
        verdict = _ask_guardian(guardian, command, reason)
        if verdict == "low":
            return Decision("run", f"{reason}: the guardian rated it low risk", "guardian", reason)
        if verdict == "high":
            return Decision("refuse", f"{reason}: the guardian rated it high risk", "guardian", reason)
    if not interactive:
        return Decision("refuse", f"{reason}: needs a human's approval and none can be asked here", "unattended", reason)
    return Decision("ask", reason, "dangerous", reason)


def _ask_guardian(guardian: Guardian | None, command: str, reason: str) -> str:
    """low / high / uncertain; a missing or failing guardian is uncertain (a human decides)."""
    if guardian is None:
        return "uncertain"
    try:
        return parse_verdict(guardian(guardian_messages(command, reason)))
    except Exception:
        return "uncertain"
