"""Workspace file tools: read, list, search and write files under the user's workspace only."""

from __future__ import annotations

import io
from typing import Any

from services.worker.sandbox import quota
from services.worker.tools.beneath import explained
from services.worker.tools.file_search import search_files
from services.worker.tools.patterns import glob_matcher
from services.worker.tools.registry import Tool, ToolContext
from services.worker.tools.workspace import looks_binary, open_regular, opened, shown, walk
from services.worker.web.readable import readable
from shared.errors import InvalidInput
from shared.http.fetch import FetchFailed, Page
from shared.security.paths import relative_parts

MAX_LINES_PER_READ = 2000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 100_000
MAX_PDF_CHARS = 2_000_000  # a PDF's extracted text kept for paging (read_file shows MAX_READ_CHARS at a time)
PDF_MAGIC = b"%PDF-"
MAX_LIST_ENTRIES = 500
MAX_LIST_WALK = 20_000  # entries looked at for one listing, matching or not
CANCEL_CHECK_LINES = 10_000  # counting the lines of a long file looks at the cancel flag this often

WORKSPACE_NOTE = (
    "File tools act in your private workspace: paths are relative to it, and absolute paths or paths "
    "leading outside it are refused."
)


def _numbered(line: str, number: int) -> str:
    line = line.rstrip("\r\n")
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + " … [line truncated]"
    return f"{number:>6}|{line}"


def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Numbered lines of one text file, a page at a time."""
    path = args["path"]
    offset = max(1, int(args.get("offset") or 1))
    limit = min(MAX_LINES_PER_READ, max(1, int(args.get("limit") or MAX_LINES_PER_READ)))
    with opened(ctx) as ws, open_regular(ws, path) as raw:
        if raw.read(len(PDF_MAGIC)) != PDF_MAGIC:
            raw.seek(0)
            if looks_binary(raw):
                raise InvalidInput(f"{path} looks like a binary file; read_file only shows text.")
            return _page(ctx, path, io.TextIOWrapper(raw, encoding="utf-8", errors="replace"), offset, limit)
        body = PDF_MAGIC + raw.read(ctx.settings.media_max_bytes + 1 - len(PDF_MAGIC))
    # parsed once the worker acts as itself again (the sandbox's uid may not start the parser)
    return _page(ctx, path, io.StringIO(pdf_text(ctx, path, body)), offset, limit)


def pdf_text(ctx: ToolContext, path: str, body: bytes) -> str:
    """A PDF's text, page after page, parsed as web_extract parses one: in a child process with a time limit."""
    cap = ctx.settings.media_max_bytes
    if len(body) > cap:
        raise InvalidInput(f"{path} is a PDF larger than {cap} bytes (MEDIA_MAX_BYTES); it cannot be read.")
    try:
        text = readable(Page(path, 200, "application/pdf", body, False), MAX_PDF_CHARS).text
    except FetchFailed as exc:
        raise InvalidInput(exc.message.replace("could not be read as PDF", "is a PDF whose text cannot be read")) from None
    return text or f"[{path} is a PDF with no text layer (a scan?): no text could be extracted.]"


def _page(ctx: ToolContext, path: str, fh: io.TextIOWrapper, offset: int, limit: int) -> str:
    shown_lines: list[str] = []
    size = 0
    cut_at = None
    total = 0
    for total, line in enumerate(fh, start=1):
        if total % CANCEL_CHECK_LINES == 0 and ctx.cancelled():
            return "[read_file stopped: the turn was cancelled.]"
        if total < offset or total >= offset + limit or cut_at is not None:
            continue
        entry = _numbered(line, total)
        if size + len(entry) + 1 > MAX_READ_CHARS:
            cut_at = total
            continue
        shown_lines.append(entry)
        size += len(entry) + 1
    return _page_text(path, shown_lines, offset, total, cut_at)


def _page_text(path: str, shown: list[str], offset: int, total: int, cut_at: int | None) -> str:
    if total == 0:
        return f"{path} is empty."
    if not shown and cut_at is None:
        return f"{path} has {total} lines; offset {offset} is past the end."
    last = offset + len(shown) - 1
    body = "\n".join(shown)
    if cut_at is not None:
        return body + (
            f"\n[Output cut at {MAX_READ_CHARS:,} characters after line {last} of {total}. "
            f"Use offset={last + 1} to read on.]"
        )
    if last < total:
        return body + f"\n[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to read on.]"
    return body


def list_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Files and directories under a workspace path, recursively; directories end with '/'."""
    pattern = args.get("pattern")
    matches = glob_matcher(pattern) if pattern else None
    lines: list[str] = []
    with opened(ctx) as ws:
        for seen, (name, kind) in enumerate(walk(ws, args.get("path") or "."), start=1):
            if seen > MAX_LIST_WALK or ctx.cancelled():
                lines.append(f"[Listing stopped after looking at {seen - 1:,} entries; narrow it with path or pattern.]")
                break
            if matches is not None and not matches(name.rsplit("/", 1)[-1]):
                continue
            if len(lines) == MAX_LIST_ENTRIES:
                lines.append(f"[Listing cut at {MAX_LIST_ENTRIES} entries; narrow it with path or pattern.]")
                break
            lines.append(name + ("/" if kind == "dir" else ""))
    if not lines:
        return "No entries match." if pattern else "The directory is empty."
    return "\n".join(lines)


def write_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Replace (or create) a whole file atomically, creating parent directories."""
    parts = relative_parts(args["path"])
    data = args["content"].encode("utf-8")
    # The old file and its replacement are both on disk until the rename: the write needs all of its size.
    quota.ensure_room(ctx.workspace, len(data), ctx.settings.terminal_workspace_quota_mb)
    with opened(ctx) as ws, explained(args["path"]):
        ws.replace_file(parts, data)
    return {"path": shown(parts), "bytes_written": len(data)}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


# WORKSPACE_NOTE (read_file's guidance, in every prompt that offers file tools) says paths are workspace-relative:
# saying it again in each tool's schema cost the first call ~235 bytes.
_PATH = {"type": "string"}

READ_FILE = Tool(
    name="read_file",
    description="Read a text file from the workspace as numbered lines, up to 2,000 lines per call.",
    parameters=_schema({
        "path": _PATH,
        "offset": {"type": "integer", "description": "First line to show (1-based).", "default": 1},
        "limit": {"type": "integer", "description": "How many lines to show (max 2000).", "default": 2000},
    }, ["path"]),
    handler=read_file,
    guidance=(WORKSPACE_NOTE, "Read a file with read_file before you change it; long files page with offset."),
)
LIST_FILES = Tool(
    name="list_files",
    description="List files and directories under a workspace path, recursively; directories end with '/'.",
    parameters=_schema({
        "path": {**_PATH, "default": "."},
        "pattern": {"type": "string", "description": "Only names matching this glob, e.g. '*.md'."},
    }, []),
    handler=list_files,
    guidance=(WORKSPACE_NOTE, "Use list_files to see what exists instead of guessing paths."),
)
SEARCH_FILES = Tool(
    name="search_files",
    description="Search workspace text files for a regular expression (or plain text); returns path:line: text.",
    parameters=_schema({
        "pattern": {"type": "string", "description": "A regular expression or plain text."},
        "path": {**_PATH, "default": "."},
    }, ["pattern"]),
    handler=search_files,
    guidance=(WORKSPACE_NOTE, "Use search_files to find where something is mentioned."),
)
WRITE_FILE = Tool(
    name="write_file",
    description="Write a whole file in the workspace (created or replaced), creating parent directories.",
    parameters=_schema({
        "path": _PATH,
        "content": {"type": "string", "description": "The complete new content of the file."},
    }, ["path", "content"]),
    handler=write_file,
    guidance=(WORKSPACE_NOTE, "write_file replaces the whole file, so include everything it should keep."),
)
