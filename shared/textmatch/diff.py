"""Unified diffs: a bounded one of one edit (only the changed stretch of lines is handed to difflib), and a
whole one of two texts for a write staged for approval."""

from __future__ import annotations

import difflib
import re

MAX_DIFF_CHARS = 6_000
MAX_DIFF_LINES = 4_000  # a changed stretch longer than this is summarised, not diffed
CONTEXT = 3
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", re.M)


def unified_diff(before: str, after: str, name: str) -> str:
    """`diff -u` of before→after for `name`, cut to MAX_DIFF_CHARS."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    skip = max(0, head - CONTEXT)
    old_mid, new_mid = old[skip:len(old) - max(0, tail - CONTEXT)], new[skip:len(new) - max(0, tail - CONTEXT)]
    if len(old_mid) + len(new_mid) > MAX_DIFF_LINES:
        return (f"--- a/{name}\n+++ b/{name}\n[diff omitted: lines {head + 1}-{len(old) - tail} changed "
                f"({len(old_mid)} lines became {len(new_mid)})]\n")
    text = "".join(_terminated(difflib.unified_diff(old_mid, new_mid, f"a/{name}", f"b/{name}", n=CONTEXT)))
    text = _HUNK.sub(lambda m: _shifted(m, skip), text)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS].rsplit("\n", 1)[0] + f"\n[diff cut at {MAX_DIFF_CHARS:,} characters]\n"
    return text


def whole_diff(before: str, after: str, source: str, target: str) -> str:
    """`diff -u` of two whole texts under the given file names, uncut; every line ends in a newline."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=source, tofile=target)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _terminated(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _shifted(m: re.Match[str], skip: int) -> str:
    """A hunk header of the stretch, renumbered for the whole file (difflib's numbers are stretch-relative)."""
    return f"@@ -{int(m.group(1)) + skip}{m.group(2) or ''} +{int(m.group(3)) + skip}{m.group(4) or ''} @@"
