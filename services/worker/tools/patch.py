"""The `patch` tool: the anchor's fuzzy find-and-replace on one workspace file, answered with a diff."""

from __future__ import annotations

import os
from typing import Any

from services.worker.tools.registry import Tool, ToolContext
from shared.files.atomic import atomic_write
from shared.errors import InvalidInput, NotFound, PayloadTooLarge
from shared.security.paths import relative_name, resolve_inside
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
    """The anchor's no-op rule: new_string (non-trivial) is there verbatim and old_string is gone."""
    return len(new.strip()) >= 8 and new in content and (old == new or old not in content)


def _read(target, path: str) -> tuple[str, int]:
    """The file's text (no BOM) and mode; refuses what is not a small UTF-8 text file."""
    if not target.exists():
        raise NotFound(f"No such file: {path}. Create it with write_file.")
    if not target.is_file():
        raise InvalidInput(f"{path} is not a regular file.")
    try:  # the path is already resolved: a link appearing there now was swapped in, so refuse to follow it
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        raise InvalidInput(f"{path} could not be opened for patching.") from None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_PATCH_FILE_BYTES + 1)
        mode = os.fstat(fh.fileno()).st_mode
    if len(raw) > MAX_PATCH_FILE_BYTES:
        raise PayloadTooLarge(f"{path} is larger than {MAX_PATCH_FILE_BYTES // (1024 * 1024)} MiB; patch edits "
                              "smaller files (rewrite it in parts or use write_file).", code="file_too_large")
    if b"\x00" in raw[:8192]:
        raise InvalidInput(f"{path} looks like a binary file; patch only edits text.")
    try:
        return raw.decode("utf-8"), mode
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
    root = ctx.workspace.resolve()
    target = resolve_inside(root, args["path"])
    old = _string(args, "old_string", MAX_OLD_STRING_CHARS)
    new = _string(args, "new_string", MAX_NEW_STRING_CHARS)
    shown = relative_name(root, target)
    content, mode = _read(target, args["path"])
    bom = content.startswith(_BOM)
    body = content[1:] if bom else content
    try:
        result = find_and_replace(body, old, new, replace_all=bool(args.get("replace_all")), cancelled=ctx.cancelled)
    except MatchFailure as failure:
        if failure.kind == "cancelled":
            return "[patch stopped: the turn was cancelled; the file was not changed.]"
        if failure.kind == "no_match" and _already_applied(body, old, new):
            return {"success": True, "path": shown, "replacements": 0, "note": "The edit is already in the file; "
                    "nothing was changed."}
        raise InvalidInput(f"{shown}: {failure.message}", code=f"patch_{failure.kind}") from None
    atomic_write(target, (_BOM if bom else "") + result.content)
    os.chmod(target, mode & 0o7777)  # the temp file was 0600; keep the file's own permissions
    return {"success": True, "path": shown, "replacements": result.count, "strategy": result.strategy,
            "diff": unified_diff(body, result.content, shown)}


PATCH = Tool(
    name="patch",
    description=(
        "Replace old_string with new_string in a workspace file and return the diff. Matching tolerates "
        "differences in whitespace, indentation, escapes and typographic quotes, but old_string must match exactly "
        "one place unless replace_all is true. On no match the closest lines are shown."),
    parameters={"type": "object", "properties": {
        "path": {"type": "string", "description": "Path relative to the workspace."},
        "old_string": {"type": "string", "description": "The text to find, copied from the file (no line numbers)."},
        "new_string": {"type": "string", "description": "The replacement text; may be empty to delete."},
        "replace_all": {"type": "boolean", "description": "Replace every match instead of exactly one.",
                        "default": False},
    }, "required": ["path", "old_string", "new_string"]},
    handler=patch,
    guidance=(GUIDANCE,),
)
