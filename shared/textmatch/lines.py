"""Line views of a text: where each line starts, and finding runs of lines equal under a normal form.

A run of pattern lines is found by giving every distinct normalised line one code point and
searching the pattern's code-point string in the content's with `str.find`, so a search costs
one pass over the text whatever the input (no window-by-window comparison).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable, Iterator

Span = tuple[int, int]

_SURROGATES = range(0xD800, 0xE000)
_MAX_IDS = 0x110000 - len(_SURROGATES)
CANCEL_EVERY = 4096  # loops over matches look at the cancel flag this often


class Cancelled(Exception):
    """The caller's cancel flag turned true while matching."""


def _code_point(n: int) -> str:
    return chr(n if n < _SURROGATES.start else n + len(_SURROGATES))


class LineIndex:
    """A text split on '\\n' with each line's start offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.starts: list[int] = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def line_of(self, offset: int) -> int:
        """0-based number of the line holding `offset`."""
        return bisect_right(self.starts, offset) - 1

    def span(self, first: int, count: int, *, newline: bool = False) -> Span:
        """Offsets of lines first..first+count-1; `newline` takes the last line's '\\n' too when it has one."""
        last = first + count - 1
        end = self.starts[last] + len(self.lines[last])
        if newline and last < len(self.lines) - 1:
            end += 1
        elif not newline and self.lines[last].endswith("\r"):
            end -= 1  # a CRLF line's CR belongs to its line ending, not to the matched text
        return self.starts[first], end


def find_all(haystack: str, needle: str, cancelled: Callable[[], bool], *, step: int | None = None) -> Iterator[int]:
    """Offsets of `needle` in `haystack`; `step` 1 yields overlapping hits, the default none that overlap."""
    if not needle:
        return
    advance = step or len(needle)
    pos = haystack.find(needle)
    seen = 0
    while pos != -1:
        yield pos
        seen += 1
        if seen % CANCEL_EVERY == 0 and cancelled():
            raise Cancelled()
        pos = haystack.find(needle, pos + advance)


def line_runs(keys: list[str], wanted: list[str], cancelled: Callable[[], bool]) -> list[int]:
    """Indexes where `wanted` occurs as a run in `keys` (overlapping runs included)."""
    table = dict.fromkeys(wanted)
    if len(table) > len(set(keys).intersection(table)):
        return []  # a pattern line no content line has
    if cancelled():
        raise Cancelled()
    distinct = dict.fromkeys(keys)
    if len(distinct) > _MAX_IDS:
        return _kmp_runs(keys, wanted, cancelled)
    for n, k in enumerate(distinct):
        distinct[k] = _code_point(n)
    haystack = "".join(map(distinct.__getitem__, keys))
    return list(find_all(haystack, "".join(map(distinct.__getitem__, wanted)), cancelled, step=1))


def _kmp_runs(keys: list[str], wanted: list[str], cancelled: Callable[[], bool]) -> list[int]:
    """The same search by Knuth-Morris-Pratt over the keys, for texts with more distinct lines than code points."""
    fail = [0] * len(wanted)
    k = 0
    for i in range(1, len(wanted)):
        while k and wanted[i] != wanted[k]:
            k = fail[k - 1]
        if wanted[i] == wanted[k]:
            k += 1
        fail[i] = k
    hits: list[int] = []
    k = 0
    for n, current in enumerate(keys):
        if n % CANCEL_EVERY == 0 and cancelled():
            raise Cancelled()
        while k and current != wanted[k]:
            k = fail[k - 1]
        if current == wanted[k]:
            k += 1
        if k == len(wanted):
            hits.append(n - k + 1)
            k = fail[k - 1]
    return hits
