"""Reading a Hermes Agent home directory (read-only): state.db sessions, memory files, agent-created skills.

What counts as a session's history follows Hermes Agent's own flags: rows the user took back (rewound:
active=0, compacted=0) are left out; rows an in-place compaction archived (compacted=1) are the
originals and are kept; the summary row it inserted is left out, and so are the copies of kept rows it
re-inserted (the same role, content and timestamp as a row already kept).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from services.cli.client import CliError

MEMORY_DELIMITER = "\n§\n"
MEMORY_FILES = {"memory": "MEMORY.md", "user": "USER.md"}
SUMMARY_MARKERS = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")
JSON_CONTENT = "\x00json:"
HIDDEN_SOURCES = {"subagent", "tool"}  # Hermes Agent's delegated and tool-internal sessions, not conversations
ROLES = {"user", "assistant", "tool"}
SKIPPED_DIRS = {".archive", ".hub", ".curator_backups", ".git"}


@dataclass(frozen=True)
class SourceMessage:
    id: int
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    at: datetime


@dataclass
class SourceSession:
    id: str
    title: str | None
    source: str
    started_at: datetime
    messages: list[SourceMessage] = field(default_factory=list)
    left_out: int = 0  # rewound rows, compaction summaries and copies, other roles


@dataclass(frozen=True)
class SourceSkill:
    name: str
    path: Path
    agent_created: bool


def when(seconds: float | None) -> datetime:
    return datetime.fromtimestamp(seconds or 0, timezone.utc)


def check_home(home: Path) -> Path:
    if not home.is_dir():
        raise CliError(f"{home} is not a directory: pass a Hermes Agent home (usually ~/.hermes).")
    if not any((home / name).exists() for name in ("state.db", "memories", "skills")):
        raise CliError(f"{home} holds no state.db, memories/ or skills/: it does not look like a Hermes Agent home.")
    return home


def read_sessions(home: Path) -> tuple[list[SourceSession], int]:
    """The conversations in state.db, oldest first, and how many sessions were left out as internal."""
    path = home / "state.db"
    if not path.exists():
        return [], 0
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise CliError(f"cannot open {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM sessions ORDER BY started_at, id").fetchall()
        found = [s for s in (_session(conn, row) for row in rows) if s.source not in HIDDEN_SOURCES]
    except sqlite3.Error as exc:
        raise CliError(f"{path} is not a Hermes Agent session database this importer can read: {exc}") from exc
    finally:
        conn.close()
    return found, len(rows) - len(found)


def _get(row: sqlite3.Row, column: str, default: Any = None) -> Any:
    """A column older schema versions may lack (Hermes Agent adds columns without migrations)."""
    return row[column] if column in row.keys() else default


def _session(conn: sqlite3.Connection, row: sqlite3.Row) -> SourceSession:
    session = SourceSession(row["id"], _get(row, "title"), row["source"] or "", when(row["started_at"]))
    seen: set[tuple] = set()
    for message in conn.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (row["id"],)):
        rewound = not _get(message, "active", 1) and not _get(message, "compacted", 0)
        content = _content(message["content"])
        identity = (message["role"], content, _get(message, "tool_call_id"), message["timestamp"])
        if rewound or message["role"] not in ROLES or _is_summary(content) or identity in seen:
            session.left_out += 1
            continue
        seen.add(identity)
        session.messages.append(SourceMessage(
            id=message["id"], role=message["role"], content=content,
            tool_calls=_tool_calls(_get(message, "tool_calls")), tool_call_id=_get(message, "tool_call_id"),
            name=_get(message, "tool_name"), at=when(message["timestamp"])))
    return session


def _content(raw: Any) -> str | None:
    """Text content; Hermes Agent stores multimodal parts as a JSON list behind a NUL-prefixed marker."""
    if not isinstance(raw, str) or not raw.startswith(JSON_CONTENT):
        return raw if raw is None else str(raw)
    try:
        parts = json.loads(raw[len(JSON_CONTENT):])
    except ValueError:
        return raw[len(JSON_CONTENT):]
    if not isinstance(parts, list):
        return str(parts)
    texts = [p.get("text", "") if isinstance(p, dict) and p.get("type") == "text" else "[image]" for p in parts]
    return "\n".join(t for t in texts if t)


def _is_summary(content: str | None) -> bool:
    return bool(content) and content.lstrip().startswith(SUMMARY_MARKERS)


def _tool_calls(raw: str | None) -> list[dict[str, Any]] | None:
    """Calls in the OpenAI shape our history replays (Hermes Agent may key them by `call_id`)."""
    if not raw:
        return None
    try:
        calls = json.loads(raw)
    except ValueError:
        return None
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") or {}
        out.append({"id": call.get("id") or call.get("call_id") or "", "type": "function",
                    "function": {"name": function.get("name") or call.get("name") or "",
                                 "arguments": function.get("arguments") or call.get("arguments") or "{}"}})
    return out or None


def read_memory(home: Path, target: str) -> list[str]:
    """The entries of MEMORY.md or USER.md as Hermes Agent reads them: split, stripped, de-duplicated."""
    path = home / "memories" / MEMORY_FILES[target]
    if not path.is_file():
        return []
    entries: list[str] = []
    for entry in path.read_text(encoding="utf-8", errors="replace").split(MEMORY_DELIMITER):
        entry = entry.strip()
        if entry and entry not in entries:
            entries.append(entry)
    return entries


def read_skills(home: Path) -> list[SourceSkill]:
    """Every local skill folder (flat or under a category), marked agent-created as `.usage.json` says."""
    root = home / "skills"
    if not root.is_dir():
        return []
    usage = _usage(root / ".usage.json")
    skills = []
    for skill_md in sorted(root.rglob("SKILL.md")):
        relative = skill_md.relative_to(root).parts
        if any(part in SKIPPED_DIRS for part in relative):
            continue
        name = _front_matter_name(skill_md) or skill_md.parent.name
        record = usage.get(name) if isinstance(usage.get(name), dict) else {}
        agent = record.get("created_by") == "agent" or record.get("agent_created") is True
        skills.append(SourceSkill(name, skill_md.parent, agent))
    return skills


def _usage(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _front_matter_name(skill_md: Path) -> str | None:
    lines = skill_md.read_text(encoding="utf-8", errors="replace")[:4000].split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            return None
        if line.strip().startswith("name:"):
            return line.split(":", 1)[1].strip().strip("\"'") or None
    return None


def skill_files(skill: SourceSkill) -> tuple[dict[str, str], list[str]]:
    """The folder's text files by relative path, and the paths left out (binary or unreadable)."""
    files, left_out = {}, []
    for path in sorted(p for p in skill.path.rglob("*") if p.is_file()):
        relative = path.relative_to(skill.path).as_posix()
        if relative.endswith(".lock") or any(part.startswith(".") for part in Path(relative).parts):
            continue
        try:
            files[relative] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            left_out.append(relative)
    return files, left_out
