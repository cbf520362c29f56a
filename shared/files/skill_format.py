"""The skill folder format (agentskills.io): names, SKILL.md front matter, supporting-file paths, limits.

Pure checks with no I/O; each violation raises with its own stable code so a caller can tell them apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import yaml

from shared.errors import InvalidInput, PayloadTooLarge

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_SKILL_MD_CHARS = 100_000
MAX_SUPPORT_FILE_BYTES = 1024 * 1024
MAX_FILES_PER_SKILL = 100
MAX_PATH_PART_BYTES = 255  # a file name on every common filesystem (NAME_MAX)
MAX_SUPPORT_PATH_BYTES = 1024  # well under PATH_MAX once DATA_DIR and the skill folder are in front
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
INDEX_DESCRIPTION_CHARS = 60
_CLOSING = re.compile(r"\n---[ \t]*(?:\r?\n|$)")


@dataclass(frozen=True)
class FrontMatter:
    """What SKILL.md's YAML header says, plus the body after it."""

    name: str
    description: str
    version: str | None = None
    license: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    body: str = ""


def is_valid_name(name: str) -> bool:
    return len(name) <= MAX_NAME_CHARS and NAME_PATTERN.match(name) is not None


def check_name(name: Any) -> str:
    """A valid skill name, or a clear error: lowercase letters, digits, `.`, `_`, `-`; at most 64 chars."""
    if not isinstance(name, str) or not name:
        raise InvalidInput("A skill name is required.", code="skill_name_invalid")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"The skill name is {len(name)} characters; the limit is {MAX_NAME_CHARS}.",
                           code="skill_name_too_long")
    if not NAME_PATTERN.match(name):
        raise InvalidInput(
            f"Invalid skill name {name!r}: use lowercase letters, digits, '.', '_' and '-', starting with a "
            "letter or digit (no slashes, no spaces).", code="skill_name_invalid")
    return name


def check_skill_md_size(content: str) -> None:
    if len(content) > MAX_SKILL_MD_CHARS:
        raise PayloadTooLarge(f"SKILL.md is {len(content):,} characters; the limit is {MAX_SKILL_MD_CHARS:,}.",
                              code="skill_content_too_large")


def check_support_size(path: str, content: str) -> None:
    size = len(content.encode("utf-8"))
    if size > MAX_SUPPORT_FILE_BYTES:
        raise PayloadTooLarge(f"{path} is {size:,} bytes; a supporting file may be at most "
                              f"{MAX_SUPPORT_FILE_BYTES:,} bytes (1 MiB).", code="skill_file_too_large")


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="skill_frontmatter_invalid")


def split_front_matter(content: str) -> tuple[str, str]:
    """(YAML text, body) of a SKILL.md that starts with `---`; one leading BOM is tolerated."""
    text = content[1:] if content.startswith("\ufeff") else content
    if not text.startswith("---"):
        raise InvalidInput("SKILL.md must start with a YAML front matter block: '---', then name: and "
                           "description:, then '---'.", code="skill_frontmatter_missing")
    closing = _CLOSING.search(text, 3)
    if closing is None:
        raise InvalidInput("SKILL.md's front matter is not closed: add a line '---' after the YAML.",
                           code="skill_frontmatter_missing")
    return text[3:closing.start()], text[closing.end():]


def _optional_text(data: dict, key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _invalid(f"Front matter field {key!r} must be text.")
    return str(value)


@lru_cache(maxsize=256)
def parse_skill_md_cached(content: str, folder_name: str | None = None) -> FrontMatter:
    """parse_skill_md remembered by content (the result is frozen): every new session indexes every skill,
    and parsing the same YAML again was a fifth of a session's first turn. Errors are not remembered."""
    return parse_skill_md(content, folder_name)


def parse_skill_md(content: str, folder_name: str | None = None) -> FrontMatter:
    """Parse and check SKILL.md; with `folder_name`, the front matter name must equal it."""
    if not isinstance(content, str):
        raise InvalidInput("SKILL.md content must be text.", code="skill_frontmatter_missing")
    check_skill_md_size(content)
    header, body = split_front_matter(content)
    try:
        data = yaml.safe_load(header)
    except yaml.YAMLError as exc:
        raise _invalid(f"SKILL.md's front matter is not valid YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict):
        raise _invalid("SKILL.md's front matter must be a YAML mapping (key: value lines).")
    name = check_name(data.get("name"))
    if folder_name is not None and name != folder_name:
        raise InvalidInput(f"The front matter name {name!r} must match the skill's folder name {folder_name!r}.",
                           code="skill_name_mismatch")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput("SKILL.md's front matter needs a description: one line saying when to use the skill.",
                           code="skill_description_missing")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(f"The description is {len(description):,} characters; the limit is "
                           f"{MAX_DESCRIPTION_CHARS:,}.", code="skill_description_too_long")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _invalid("Front matter field 'metadata' must be a mapping (tags, required toolsets, ...).")
    if not body.strip():
        raise InvalidInput("SKILL.md needs instructions after the front matter.", code="skill_body_empty")
    return FrontMatter(name=name, description=description.strip(), version=_optional_text(data, "version"),
                       license=_optional_text(data, "license"), metadata=metadata, body=body)


def check_support_path(file_path: Any) -> str:
    """A supporting file's path, normalised: inside references/, templates/, scripts/ or assets/; never `..`.

    This is the textual check; the store also resolves the path and refuses symlinks.
    """
    if not isinstance(file_path, str) or not file_path.strip():
        raise InvalidInput("file_path is required, e.g. 'references/api.md'.", code="skill_path_invalid")
    if "\x00" in file_path or "\\" in file_path:
        raise InvalidInput(f"Invalid file_path {file_path!r}.", code="skill_path_invalid")
    path = PurePosixPath(file_path)
    if path.is_absolute() or file_path.startswith("~"):
        raise InvalidInput(f"file_path must be relative to the skill folder, not {file_path!r}.",
                           code="skill_path_invalid")
    parts = file_path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"file_path {file_path!r} may not contain '..', '.' or empty segments.",
                           code="skill_path_invalid")
    longest = max(len(part.encode("utf-8", "surrogatepass")) for part in parts)
    if longest > MAX_PATH_PART_BYTES or len(file_path.encode("utf-8", "surrogatepass")) > MAX_SUPPORT_PATH_BYTES:
        raise InvalidInput(f"file_path is too long: each name in it may be at most {MAX_PATH_PART_BYTES} bytes, "
                           f"the whole path {MAX_SUPPORT_PATH_BYTES} bytes.", code="skill_path_too_long")
    if parts[0] not in SUPPORT_DIRS or len(parts) < 2:
        raise InvalidInput(f"Supporting files live in {', '.join(d + '/' for d in SUPPORT_DIRS)}; "
                           f"{file_path!r} is not a file inside one of them.", code="skill_path_invalid")
    return "/".join(parts)


def index_description(description: str) -> str:
    """A description on one line, cut to 60 characters (57 + '...') for the prompt index."""
    flat = " ".join(description.split())
    if len(flat) <= INDEX_DESCRIPTION_CHARS:
        return flat
    return flat[: INDEX_DESCRIPTION_CHARS - 3] + "..."
