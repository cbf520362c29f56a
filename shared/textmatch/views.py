"""Normalised copies of a text that remember where each of their characters came from."""

from __future__ import annotations

import re
from bisect import bisect_right

from shared.textmatch.lines import Span

# Typographic characters a model types as ASCII (Hermes Agent's table): quotes, dashes, ellipsis, spaces.
UNICODE_ASCII = {
    "\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'",
    "\u2014": "--", "\u2013": "-", "\u2212": "-", "\u2026": "...",
    "\u00a0": " ", "\u2000": " ", "\u2001": " ", "\u2002": " ", "\u2003": " ", "\u2004": " ", "\u2005": " ",
    "\u2006": " ", "\u2007": " ", "\u2008": " ", "\u2009": " ", "\u200a": " ", "\u202f": " ", "\u205f": " ",
    "\u3000": " ",
}
_UNICODE_TABLE = str.maketrans(UNICODE_ASCII)
_UNICODE_CHARS = re.compile("[" + "".join(UNICODE_ASCII) + "]")
_BLANK_RUN = re.compile(r"[ \t]{2,}|\t")


def unicode_ascii(text: str) -> str:
    return text.translate(_UNICODE_TABLE)


def collapse_blanks(text: str) -> str:
    """Runs of spaces and tabs as one space (newlines kept)."""
    return _BLANK_RUN.sub(" ", text)


class View:
    """`text` with some pieces replaced; maps offsets in the copy back to the original."""

    def __init__(self, original: str, pattern: re.Pattern[str], replace) -> None:
        self.original = original
        pieces: list[str] = []
        self._norm_starts: list[int] = []
        self._edits: list[tuple[int, int, int, int]] = []  # norm start, norm end, orig start, orig end
        orig = norm = 0
        for found in pattern.finditer(original):
            pieces.append(original[orig:found.start()])
            norm += found.start() - orig
            new = replace(found.group())
            pieces.append(new)
            self._norm_starts.append(norm)
            self._edits.append((norm, norm + len(new), found.start(), found.end()))
            norm += len(new)
            orig = found.end()
        pieces.append(original[orig:])
        self.text = "".join(pieces)

    def _start(self, pos: int) -> int:
        at = bisect_right(self._norm_starts, pos) - 1
        if at < 0:
            return pos
        n_start, n_end, o_start, o_end = self._edits[at]
        return o_start if pos < n_end else o_end + (pos - n_end)

    def _end(self, pos: int) -> int:
        if pos == 0:
            return 0
        at = bisect_right(self._norm_starts, pos - 1) - 1
        if at >= 0:
            n_start, n_end, o_start, o_end = self._edits[at]
            if pos - 1 < n_end:
                return o_end  # the last character is part of a replaced piece: take all of it
        return self._start(pos - 1) + 1

    def original_span(self, span: Span) -> Span:
        return self._start(span[0]), self._end(span[1])


def blank_view(text: str) -> View:
    return View(text, _BLANK_RUN, lambda _: " ")


def unicode_view(text: str) -> View:
    return View(text, _UNICODE_CHARS, lambda ch: UNICODE_ASCII[ch])
