"""`search_files`: lines matching a pattern in workspace text files, with every cost bounded.

The pattern runs on RE2 (services.worker.tools.patterns). Around it, file sizes, bytes and lines
read, entries walked, matches and output are capped, and the whole search has a deadline and
stops when the turn is cancelled; a search cut short returns what it found with a note saying why.
"""

from __future__ import annotations

import io
import os
import time
from typing import Any

from shared.errors import HermesError
from services.worker.tools.beneath import Beneath
from services.worker.tools.patterns import line_pattern
from services.worker.tools.registry import ToolContext
from services.worker.tools.workspace import looks_binary, open_regular, opened, walk

MAX_SEARCH_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024
MAX_SEARCH_TOTAL_BYTES = 32 * 1024 * 1024
MAX_SEARCH_LINES = 1_000_000
MAX_SEARCH_ENTRIES = 20_000
MAX_SEARCH_OUTPUT_CHARS = 60_000
MAX_MATCH_CHARS = 300
SEARCH_DEADLINE_SECONDS = 10.0
CHECK_EVERY_LINES = 2000  # how often a long file looks at the clock and the cancel flag


class SearchStopped(Exception):
    """The search hit one of its limits; the message says which, for the model."""


class FileSearch:
    """One search: the pattern, what was found so far, and what it has spent."""

    def __init__(self, ctx: ToolContext, pattern: str) -> None:
        self.ctx = ctx
        self.pattern = line_pattern(pattern)
        self.matches: list[str] = []
        self.chars = 0
        self.bytes = 0
        self.lines = 0
        self.entries = 0
        self.skipped_large = 0
        self.deadline = time.monotonic() + SEARCH_DEADLINE_SECONDS

    def run(self, ws: Beneath, start: str) -> str | None:
        """Search every text file under `start`; returns why the search stopped early, or None."""
        try:
            for name, kind in walk(ws, start):
                self.spend_entry()
                if kind == "file":
                    self.search_file(ws, name)
        except SearchStopped as stop:
            return str(stop)
        return None

    def spend_entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_SEARCH_ENTRIES:
            raise SearchStopped(f"[Stopped after {MAX_SEARCH_ENTRIES:,} files and directories; narrow the path.]")
        self.check()

    def check(self) -> None:
        """Stop at the deadline or when the turn is cancelled."""
        if self.ctx.cancelled():
            raise SearchStopped("[Search stopped: the turn was cancelled.]")
        if time.monotonic() >= self.deadline:
            raise SearchStopped(f"[Search stopped after {SEARCH_DEADLINE_SECONDS:g} s; these are the matches found "
                                "so far. Narrow the pattern or path.]")

    def search_file(self, ws: Beneath, name: str) -> None:
        try:
            fh = open_regular(ws, name)
        except HermesError:  # replaced by a link or removed since it was listed
            return
        with fh:
            self.search_open(name, fh)

    def search_open(self, name: str, fh) -> None:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_SEARCH_FILE_BYTES:
            self.skipped_large += 1
            return
        if looks_binary(fh):
            return
        if self.bytes + size > MAX_SEARCH_TOTAL_BYTES:
            raise SearchStopped(f"[Stopped after reading {_size(MAX_SEARCH_TOTAL_BYTES)}; narrow the path.]")
        self.bytes += size
        text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace")
        for number, line in enumerate(text, start=1):
            self.search_line(name, number, line.rstrip("\r\n"))

    def search_line(self, name: str, number: int, line: str) -> None:
        self.lines += 1
        if self.lines > MAX_SEARCH_LINES:
            raise SearchStopped(f"[Stopped after {MAX_SEARCH_LINES:,} lines; narrow the path.]")
        if self.lines % CHECK_EVERY_LINES == 0:
            self.check()
        if self.pattern.search(line) is None:
            return
        found = f"{name}:{number}: {line.rstrip()[:MAX_MATCH_CHARS]}"
        if len(self.matches) == MAX_SEARCH_MATCHES:
            raise SearchStopped(f"[Stopped after {MAX_SEARCH_MATCHES} matches; narrow the pattern or path.]")
        if self.chars + len(found) + 1 > MAX_SEARCH_OUTPUT_CHARS:
            raise SearchStopped(f"[Output cut at {MAX_SEARCH_OUTPUT_CHARS:,} characters; narrow the pattern or path.]")
        self.matches.append(found)
        self.chars += len(found) + 1

    def notes(self, stopped: str | None) -> list[str]:
        notes = [n for n in (self.pattern.note, stopped) if n]
        if self.skipped_large:
            notes.append(f"[Skipped {self.skipped_large} file(s) over {_size(MAX_SEARCH_FILE_BYTES)}.]")
        return notes


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def search_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Lines matching a regular expression (or plain text) in workspace text files."""
    search = FileSearch(ctx, args["pattern"])
    with opened(ctx) as ws:
        stopped = search.run(ws, args.get("path") or ".")
    lines = search.matches or [f"No matches for {args['pattern']!r}."]
    return "\n".join(lines + search.notes(stopped))
