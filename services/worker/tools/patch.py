"""The `patch` tool: Hermes Agent's fuzzy find-and-replace on one workspace file, answered with a diff."""

from __future__ import annotations

from typing import Any

from services.worker.sandbox import quota
from services.worker.tools.beneath import Beneath, explained
from services.worker.tools.registry import Tool, ToolContext
from services.worker.tools.workspace import open_regular, opened, shown
from shared.errors import InvalidInput, NotFound, PayloadTooLarge
from shared.security.paths import relative_parts
from shared.textmatch import MatchFailure, find_and_replace, unified_diff

MAX_PATCH_FILE_BYTES = 2 * 1024 * 1024
MAX_OLD_STRING_CHARS = 100_000
MAX_NEW_STRING_CHARS = 1_000_000
_BOM = "\ufeff"

GUIDANCE = (
    "To change part of a file use patch (old_string → new_string): copy old_string from read_file without the "
    "line numbers, with enough surrounding lines to match once; use write_file only for new files or full rewrites."
)


def _already_applied(content: str, old: str, new: str) -> bool:
    """Hermes Agent's no-op rule: new_string (non-trivial) is there verbatim and old_string is gone."""
    return len(new.strip()) >= 8 and new in content and (old == new or old not in content)


def _read(ws: Beneath, path: str) -> str:
    """The file's text; refuses what is not a small UTF-8 text file."""
    try:
        fh = open_regular(ws, path)
    except NotFound:
        raise NotFound(f"No such file: {path}. Create it with write_file.") from None
    with fh:
        raw = fh.read(MAX_PATCH_FILE_BYTES + 1)
    if len(raw) > MAX_PATCH_FILE_BYTES:
        raise PayloadTooLarge(f"{path} is larger than {MAX_PATCH_FILE_BYTES // (1024 * 1024)} MiB; patch edits "
                              "smaller files (rewrite it in parts or use write_file).", code="file_too_large")
    if b"\x00" in raw[:8192]:
        raise InvalidInput(f"{path} looks like a binary file; patch only edits text.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; patch only edits UTF-8 files.") from None


def _string(args: dict[str, Any], name: str, limit: int) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise InvalidInput(f"patch needs {name} as a string.")
    if len(value) > limit:
        raise PayloadTooLarge(f"{name} is longer than {limit:,} characters; patch a smaller piece at a time.",
                              code="patch_argument_too_large")
    return value


def patch(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any] | str:
    """Replace old_string with new_string in one file (fuzzy, unique unless replace_all) and show the diff."""
    parts = relative_parts(args["path"])
    old = _string(args, "old_string", MAX_OLD_STRING_CHARS)
    new = _string(args, "new_string", MAX_NEW_STRING_CHARS)
    name = shown(parts)
    root = ctx.workspace  # made (as the worker) before this thread acts as the sandbox's uid
    with opened(ctx) as ws:
        content = _read(ws, args["path"])
        bom = content.startswith(_BOM)
        body = content[1:] if bom else content
        try:
            result = find_and_replace(body, old, new, replace_all=bool(args.get("replace_all")),
                                      cancelled=ctx.cancelled)
        except MatchFailure as failure:
            if failure.kind == "cancelled":
                return "[patch stopped: the turn was cancelled; the file was not changed.]"
            if failure.kind == "no_match" and _already_applied(body, old, new):
                return {"success": True, "path": name, "replacements": 0, "note": "The edit is already in the "
                        "file; nothing was changed."}
            raise InvalidInput(f"{name}: {failure.message}", code=f"patch_{failure.kind}") from None
    data = ((_BOM if bom else "") + result.content).encode("utf-8")
    # The old file and its replacement are both on disk until the rename: the write needs all of its size.
    # Measured as the worker, which reads every folder the sandbox may have closed to itself.
    quota.ensure_room(root, len(data), ctx.settings.terminal_workspace_quota_mb)
    with opened(ctx) as ws, explained(args["path"]):
        ws.replace_file(parts, data)
    return {"success": True, "path": name, "replacements": result.count, "strategy": result.strategy,
            "diff": unified_diff(body, result.content, name)}


PATCH = Tool(
    name="patch",
    description=(
        "Replace old_string with new_string in a workspace file and return the diff. Matching tolerates "
        "differences in whitespace, indentation, escapes and typographic quotes, but old_string must match exactly "
        "one place unless replace_all is true. On no match the closest lines are shown."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string"},
        "old_string": {"type": "string", "description": "The text to find, copied from the file (no line numbers)."},
        "new_string": {"type": "string", "description": "The replacement text; may be empty to delete."},
        "replace_all": {"type": "boolean", "description": "Replace every match instead of exactly one.",
                        "default": False},
    }, "required": ["path", "old_string", "new_string"]},
    handler=patch,
    guidance=(GUIDANCE,),
)
