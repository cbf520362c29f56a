"""The approval gate's decision for one command: floor, then the operator's deny list, then the mode."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from hashlib import sha256
from typing import Callable

from .hardline import RAW_TOKENS, floor
from .parse import analyse
from .guardian import guardian_messages, parse_verdict
from .patterns import matches as matches_in
from .scripts import Workspace

MAX_COMMAND_CHARS = 10_000
# Deeply nested substitutions are where the parser's cost grows fastest; no daily command needs this many.
MAX_SUBSTITUTIONS = 64
MAX_KEY = 255  # the approvals table's key column
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
    found = _matches(analyse(command))
    return found[0][0] if found else None


def _matches(analysis) -> list[tuple[str, str]]:
    """(description, subject) for every dangerous pattern in the line; an unparsed mention counts too."""
    found = matches_in(analysis)
    if not found and analysis.unparsed:
        m = next((m for t in analysis.texts if (m := RAW_TOKENS.search(t))), None)
        if m:
            found = [(f"could not be fully parsed and mentions {m.group(0)!r}", "\n".join(analysis.texts))]
    return found


def key_of(desc: str, subject: str) -> str:
    """What a session approval remembers: the pattern and what it matched (its targets), at most 255 characters."""
    key = subject if subject.startswith(desc + " (") else f"{desc}: {subject}"
    return key if len(key) <= MAX_KEY else f"{desc[:120]}: sha256:{sha256(subject.encode()).hexdigest()}"


def combined_key(keys: list[str]) -> str:
    joined = " | ".join(keys)
    if len(joined) <= MAX_KEY:
        return joined
    return f"{keys[0][:100]} and {len(keys) - 1} more: sha256:{sha256(joined.encode()).hexdigest()}"


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
           allowed_kinds: frozenset[str] = frozenset(), max_chars: int = MAX_COMMAND_CHARS,
           reader: Workspace | None = None) -> Decision:
    """Hard-line floor, then the deny list, then the mode (off / manual / smart).

    `session_approved` holds keys of a kind and its targets; `allowed_kinds` whole kinds ("recursive delete"),
    as a scheduled job's owner allows them. With a `reader`, the workspace files the line runs are read and
    judged as part of it.
    """
    too_big = _too_big(command, max_chars)
    if too_big:
        return Decision("refuse", too_big, "hardline")
    analysis = analyse(command, reader)
    reason = floor(analysis)
    if reason:
        return Decision("refuse", f"never allowed: {reason}", "hardline")
    matched = deny_list(command, deny)
    if matched:
        return Decision("refuse", f"refused by the operator's deny list ({matched})", "deny_list")
    if mode == "off":
        return Decision("run", "approvals are off", "mode")
    found = _matches(analysis)
    if not found:
        return Decision("run", "no dangerous pattern", "safe")
    keys = [key_of(desc, subject) for desc, subject in found]
    key = combined_key(keys)
    unapproved = [(d, s) for (d, s), k in zip(found, keys) if k not in session_approved and d not in allowed_kinds]
    if key in session_approved or not unapproved:
        return Decision("run", f"{found[0][0]}: approved for this session", "session", key)
    reason = shown_reason(*unapproved[0])
    if mode == "smart":
        verdict = _ask_guardian(guardian, command, reason, analysis)
        if verdict == "low":
            return Decision("run", f"{reason}: the guardian rated it low risk", "guardian", key)
        if verdict == "high":
            return Decision("refuse", f"{reason}: the guardian rated it high risk", "guardian", key)
    if not interactive:
        return Decision("refuse", f"{reason}: needs a human's approval and none can be asked here", "unattended", key)
    return Decision("ask", reason, "dangerous", key)


def shown_reason(desc: str, subject: str) -> str:
    """What the human is told: the pattern, or the finding itself when it names the file and why."""
    return subject if subject.startswith(desc + " (") else desc


def _ask_guardian(guardian: Guardian | None, command: str, reason: str, analysis) -> str:
    """low / high / uncertain; a missing or failing guardian is uncertain (a human decides)."""
    if guardian is None:
        return "uncertain"
    scripts = [(seen.name, seen.text) for seen in analysis.scripts if seen.text is not None]
    try:
        return parse_verdict(guardian(guardian_messages(command, reason, scripts)))
    except Exception:
        return "uncertain"
