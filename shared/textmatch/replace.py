"""Find-and-replace with Hermes Agent's fuzzy matching: strategies in order, the first that matches decides.

At every strategy the match must be unique unless `replace_all`; a similarity strategy never
replaces several blocks. After a non-exact match the replacement is re-indented to the matched
block, and Hermes Agent's guards refuse what is almost surely a transport artefact.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable

from shared.textmatch.lines import Cancelled, Span
from shared.textmatch.similar import SIMILAR, Budget, closest_lines
from shared.textmatch.strategies import PRECISE, Pattern, Subject
from shared.textmatch.views import unicode_ascii, unicode_view

MAX_LOCATIONS = 5
MAX_PRESERVE_CHARS = 20_000  # difflib aligns old and new to keep the file's typography only up to this size


class MatchFailure(Exception):
    """Why nothing was replaced; `kind` is a stable word callers turn into an error code."""

    def __init__(self, kind: str, message: str, *, count: int = 0) -> None:
        super().__init__(message)
        self.kind, self.message, self.count = kind, message, count


@dataclass(frozen=True)
class Replacement:
    """The new text, how many places changed, the strategy that found them, and where they were."""

    content: str
    count: int
    strategy: str
    spans: tuple[Span, ...]


def find_and_replace(content: str, old: str, new: str, *, replace_all: bool = False,
                     cancelled: Callable[[], bool] = lambda: False) -> Replacement:
    """Replace old with new in content, tolerating whitespace, indentation, escapes and typography."""
    if not old:
        raise MatchFailure("empty", "old_string may not be empty.")
    if not old.strip():
        raise MatchFailure("empty", "old_string is only whitespace; give non-blank text to match.")
    if old == new:
        raise MatchFailure("identical", "old_string and new_string are identical; nothing to change.")
    subject, pattern = Subject(content, cancelled), Pattern(old)
    budget = Budget()
    try:
        for name, found in _candidates(subject, pattern, budget):
            if found:
                return _replace(subject, pattern, new, name, found, replace_all)
        hint = closest_lines(subject, pattern)
    except Cancelled:
        raise MatchFailure("cancelled", "Matching stopped: the turn was cancelled.") from None
    message = "Could not find old_string in the file, even ignoring whitespace, indentation and typography."
    if budget.exhausted:
        message += " (The approximate search stopped early on this large file; send the exact text.)"
    if hint:
        message += "\nClosest lines:\n" + hint
    raise MatchFailure("no_match", message)


def _candidates(subject: Subject, pattern: Pattern, budget: Budget):
    for name, strategy in PRECISE:
        yield name, strategy(subject, pattern)
    for name, strategy in SIMILAR:
        yield name, strategy(subject, pattern, budget)


def _replace(subject: Subject, pattern: Pattern, new: str, strategy: str, spans: list[Span],
             replace_all: bool) -> Replacement:
    content = subject.text
    if len(spans) > 1 and not replace_all:
        raise MatchFailure("ambiguous", f"Found {len(spans)} matches for old_string ({strategy}). Add surrounding "
                           "lines to make it unique, or set replace_all.\n" + locations(subject, spans),
                           count=len(spans))
    if len(spans) > 1 and strategy in dict(SIMILAR):
        raise MatchFailure("ambiguous", f"Found {len(spans)} approximate matches ({strategy}); replace_all only "
                           "applies to exact or whitespace-tolerant matches. Send the precise text.", count=len(spans))
    spans = _without_overlaps(spans)
    regions = "".join(content[a:b] for a, b in spans)
    if strategy != "exact":
        _refuse_escape_drift(regions, pattern.text, new)
        _refuse_rogue_indent(pattern.text, new)
    new = _unescaped_controls(new, regions)
    if "\r\n" in content and content.count("\r\n") == content.count("\n") and "\r" not in new:
        new = new.replace("\n", "\r\n")  # keep a CRLF file CRLF
    pieces, at = [], 0
    for n, (a, b) in enumerate(spans):
        if n % 4096 == 0 and subject.cancelled():
            raise Cancelled()
        region = content[a:b]
        piece = new
        if strategy == "unicode_normalized":
            piece = _keep_typography(region, pattern.text, piece)
        if strategy != "exact":
            piece = reindent(region, pattern.text, piece)
        pieces += [content[at:a], piece]
        at = b
    pieces.append(content[at:])
    return Replacement("".join(pieces), len(spans), strategy, tuple(spans))


def _without_overlaps(spans: list[Span]) -> list[Span]:
    kept: list[Span] = []
    for span in sorted(spans):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def locations(subject: Subject, spans: list[Span]) -> str:
    """'  L<line>: <text>' for the first few matches."""
    index = subject.index
    rows = []
    for start, _ in spans[:MAX_LOCATIONS]:
        n = index.line_of(start)
        text = index.lines[n].strip()
        rows.append(f"  L{n + 1}: {text[:77] + '...' if len(text) > 80 else text}")
    if len(spans) > MAX_LOCATIONS:
        rows.append(f"  ... and {len(spans) - MAX_LOCATIONS} more")
    return "\n".join(rows)


def _leading(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _first_meaningful(text: str) -> str | None:
    return next((line for line in text.split("\n") if line.strip()), None)


def reindent(region: str, old: str, new: str) -> str:
    """new_string moved from old_string's indentation to the matched block's, relative nesting kept.

    When old_string and the block have the same lines, each indentation old_string used maps to the
    block's indentation on the same line (2-space nesting becomes the file's 4-space); other lines
    move by the base indentation, as Hermes Agent does.
    """
    old_first, file_first = _first_meaningful(old), _first_meaningful(region)
    if not new or old_first is None or file_first is None:
        return new
    old_indent, file_indent = _leading(old_first), _leading(file_first)
    mapped = _indent_map(region, old)
    if old_indent == file_indent and not mapped:
        return new
    out = []
    for line in new.split("\n"):
        lead = _leading(line)
        if not line.strip():
            out.append(line)
        elif lead in mapped or _scaled(mapped, lead) is not None:
            out.append(mapped.get(lead, _scaled(mapped, lead)) + line[len(lead):])
        elif line.startswith(old_indent):
            out.append(file_indent + line[len(old_indent):])
        else:
            out.append(file_indent + line.lstrip(" \t"))
    return "\n".join(out)


def _scaled(mapped: dict[str, str], lead: str) -> str | None:
    """An indentation the map lacks, when the map is a steady spaces-only shift and factor (2 → 4 makes 4 → 8)."""
    pairs = sorted((len(k), len(v)) for k, v in mapped.items())
    if not pairs or lead.strip(" ") or any(k.strip(" ") or v.strip(" ") for k, v in mapped.items()):
        return None
    (base_old, base_new), rest = pairs[0], pairs[1:]
    factors = {(new - base_new) / (old - base_old) for old, new in rest} or {1.0}
    if len(factors) != 1 or len(lead) < base_old:
        return None
    width = base_new + (len(lead) - base_old) * factors.pop()
    return " " * int(width) if width >= 0 and float(width).is_integer() else None


def _indent_map(region: str, old: str) -> dict[str, str]:
    """old_string's indentations → the block's, line by line; empty when the lines do not pair up or disagree."""
    old_lines, file_lines = old.rstrip("\n").split("\n"), region.rstrip("\r\n").split("\n")
    if len(old_lines) != len(file_lines):
        return {}
    mapped: dict[str, str] = {}
    for mine, theirs in zip(old_lines, file_lines):
        if not mine.strip() or not theirs.strip():
            continue
        if mapped.setdefault(_leading(mine), _leading(theirs)) != _leading(theirs):
            return {}
    return {} if all(k == v for k, v in mapped.items()) else mapped


def _refuse_escape_drift(regions: str, old: str, new: str) -> None:
    """\\' or \\" in both strings but not in the file: the transport added backslashes; writing them corrupts."""
    for suspect in ("\\'", '\\"'):
        if suspect in new and suspect in old and suspect not in regions:
            raise MatchFailure("escape_drift", f"old_string and new_string contain {suspect!r} but the matched text "
                               f"does not: a serialisation artefact. Send {suspect[1]!r} without the backslash.")


def _refuse_rogue_indent(old: str, new: str) -> None:
    """new_string indented deeper than old_string with no block opened: almost always an indentation typo."""
    old_lines = [line for line in old.split("\n") if line.strip()]
    new_lines = [line for line in new.split("\n") if line.strip()]
    if not old_lines or not new_lines:
        return
    opens = (":", "{", "(")
    if any(line.rstrip().endswith(opens) for line in old_lines + new_lines):
        return
    deepest = max(len(_leading(line)) for line in old_lines)
    deeper = [line for line in new_lines if len(_leading(line)) > deepest]
    if deeper:
        raise MatchFailure("indentation", f"{len(deeper)} line(s) of new_string are indented deeper than any line of "
                           "old_string although no block is opened; check the indentation of: "
                           f"{deeper[0].strip()[:60]!r}")


def _unescaped_controls(new: str, regions: str) -> str:
    """Literal \\t / \\r in new_string become the characters when the replaced text has real ones."""
    if "\\t" in new and "\t" in regions:
        new = new.replace("\\t", "\t")
    if "\\r" in new and "\r" in regions:
        new = new.replace("\\r", "\r")
    return new


def _keep_typography(region: str, old: str, new: str) -> str:
    """Apply only the old→new edits to the file's own text, so its curly quotes and dashes survive."""
    view = unicode_view(region)
    norm_old = unicode_ascii(old)
    if view.text != norm_old or len(norm_old) + len(new) > MAX_PRESERVE_CHARS:
        return new
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, norm_old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            a, b = view.original_span((i1, i2))
            out.append(region[a:b])
        elif tag in ("replace", "insert"):
            out.append(new[j1:j2])
    return "".join(out)
