"""The precise matching strategies, tried in Hermes Agent's order; each returns every span it matches.

Each one is a normal form applied to both sides and searched in one pass (see lines.py); a match
is mapped back to the original text's offsets. Hermes Agent's `indentation_flexible` and
`trimmed_boundary` are not repeated here: whatever they match, `line_trimmed` (strip every line)
has already matched. `line_collapsed` (strip and collapse blanks per line) is ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from shared.textmatch.lines import LineIndex, Span, find_all, line_runs
from shared.textmatch.views import blank_view, collapse_blanks, unicode_ascii, unicode_view


@dataclass
class Pattern:
    """old_string as lines; a final '\\n' is matched as the end of the last line, not as an empty line."""

    text: str
    lines: list[str] = field(init=False)
    newline: bool = field(init=False)

    def __post_init__(self) -> None:
        lines = self.text.split("\n")
        self.newline = len(lines) > 1 and lines[-1] == ""
        self.lines = lines[:-1] if self.newline else lines


@dataclass
class Subject:
    """The content being searched, with the derived forms strategies share (built once, when first used)."""

    text: str
    cancelled: Callable[[], bool]

    @cached_property
    def index(self) -> LineIndex:
        return LineIndex(self.text)

    @cached_property
    def stripped(self) -> list[str]:
        return list(map(str.strip, self.index.lines))

    @cached_property
    def ascii_stripped(self) -> list[str]:
        """Lines stripped after typography became ASCII (no newline is ever replaced, so lines stay aligned)."""
        return list(map(str.strip, unicode_ascii(self.text).split("\n")))


def _runs(subject: Subject, index: LineIndex, keys: list[str], pattern: Pattern,
          key: Callable[[str], str]) -> list[Span]:
    starts = line_runs(keys, [key(line) for line in pattern.lines], subject.cancelled)
    return [index.span(first, len(pattern.lines), newline=pattern.newline) for first in starts]


def exact(subject: Subject, pattern: Pattern) -> list[Span]:
    return [(pos, pos + len(pattern.text)) for pos in find_all(subject.text, pattern.text, subject.cancelled)]


def line_trimmed(subject: Subject, pattern: Pattern) -> list[Span]:
    """Every line compared with leading and trailing whitespace stripped (indentation, trailing blanks, CR)."""
    return _runs(subject, subject.index, subject.stripped, pattern, str.strip)


def whitespace_normalized(subject: Subject, pattern: Pattern) -> list[Span]:
    """Runs of spaces and tabs count as one space, anywhere (a match may start or end mid-line)."""
    needle = collapse_blanks(pattern.text)
    view = blank_view(subject.text)
    return [view.original_span((pos, pos + len(needle))) for pos in find_all(view.text, needle, subject.cancelled)]


def _collapsed(line: str) -> str:
    return " ".join(line.split())


def line_collapsed(subject: Subject, pattern: Pattern) -> list[Span]:
    """Whole lines compared stripped and with inner whitespace collapsed: both kinds of drift at once."""
    return _runs(subject, subject.index, list(map(_collapsed, subject.index.lines)), pattern, _collapsed)


def _unescaped(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")


def escape_normalized(subject: Subject, pattern: Pattern) -> list[Span]:
    """old_string sent with literal \\n, \\t, \\r where the file has the characters."""
    needle = _unescaped(pattern.text)
    if needle == pattern.text:
        return []
    return [(pos, pos + len(needle)) for pos in find_all(subject.text, needle, subject.cancelled)]


def unicode_normalized(subject: Subject, pattern: Pattern) -> list[Span]:
    """Smart quotes, dashes, ellipses and typographic spaces as their ASCII spellings; exact, then line-trimmed."""
    needle = unicode_ascii(pattern.text)
    view = unicode_view(subject.text)
    if view.text == subject.text and needle == pattern.text:
        return []
    spans = [(pos, pos + len(needle)) for pos in find_all(view.text, needle, subject.cancelled)]
    if not spans:
        spans = _runs(subject, LineIndex(view.text), subject.ascii_stripped, Pattern(needle), str.strip)
    return [view.original_span(span) for span in spans]


PRECISE: list[tuple[str, Callable[[Subject, Pattern], list[Span]]]] = [
    ("exact", exact),
    ("line_trimmed", line_trimmed),
    ("whitespace_normalized", whitespace_normalized),
    ("line_collapsed", line_collapsed),
    ("escape_normalized", escape_normalized),
    ("unicode_normalized", unicode_normalized),
]
