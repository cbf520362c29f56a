"""Rebuild this Hermes Agent home with Hermes Agent's own code (run it with the hermes-agent venv's python).

    python3 -m venv /tmp/hermes-venv && /tmp/hermes-venv/bin/pip install hermes-agent==0.19.0
    rm -rf /tmp/hermes_home && /tmp/hermes-venv/bin/python tests/data/hermes_home/make_fixture.py /tmp/hermes_home

then copy state.db, memories/ and skills/ from /tmp/hermes_home here. Everything goes through
hermes-agent's own APIs (SessionDB, MemoryStore, skill_manage), so the files have the real format.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

T0 = 1_767_258_000.0  # 2026-01-01 09:00:00 UTC: fixed message times, so the importer's test can check them
TRIP, PACKAGING = "20260101_090000_a1b2c3", "20260102_140000_d4e5f6"
SKILL = """---
name: city-weekend-planning
description: Plan a two-day city trip around opening hours and walking distance.
---
# City weekend planning

1. Search the city's main sights and note their opening hours.
2. Group sights by neighbourhood; one neighbourhood per half day.
3. Put the museum that opens first at the start of day one.
"""
OWN_SKILL = """---
name: my-packing-list
description: The user's own packing list, written at their request.
---
# Packing list

Passport, charger, rain jacket.
"""


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def trip_session(db) -> None:
    """A CLI chat with a tool round; the user rewound (took back) one question."""
    db.create_session(TRIP, "cli", model="anthropic/claude-sonnet-4")
    db.set_session_title(TRIP, "Weekend in Oslo")
    add = lambda role, t, **kw: db.append_message(TRIP, role, timestamp=T0 + t, **kw)  # noqa: E731
    add("user", 0, content="Plan a weekend in Oslo for me.")
    add("assistant", 5, content="Let me look up what is open.",
        tool_calls=[call("call_oslo_1", "web_search", {"query": "Oslo weekend sights opening hours"})])
    add("tool", 7, content="Vigeland park (always open); Munch museum 10:00-18:00; Opera house roof.",
        tool_call_id="call_oslo_1", tool_name="web_search")
    add("assistant", 12, content="Day 1: Munch museum at 10, then the Opera house roof. Day 2: Vigeland park.")
    taken_back = add("user", 60, content="Actually, make it Bergen.")
    db.rewind_to_message(TRIP, taken_back)
    add("user", 90, content="Which museum should I see first?")
    add("assistant", 95, content="The Munch museum: it opens at 10:00, before the others.")
    db.end_session(TRIP, "user_exit")


def packaging_session(db) -> None:
    """A Telegram chat Hermes Agent compacted in place: originals archived, a summary and copies inserted."""
    from agent.context_compressor import SUMMARY_PREFIX

    db.create_session(PACKAGING, "telegram", model="anthropic/claude-sonnet-4", user_id="tg-4242")
    db.set_session_title(PACKAGING, "Python packaging")
    day = T0 + 86_400 + 5 * 3600
    turns = [("user", "How do I publish a package to PyPI?"),
             ("assistant", "Build with `python -m build`, then upload with `twine upload dist/*`."),
             ("user", "What goes in pyproject.toml?"),
             ("assistant", "A [build-system] table and a [project] table with name and version."),
             ("user", "And the version number, where do I bump it?"),
             ("assistant", "In [project] version, or let setuptools-scm read it from git tags.")]
    for index, (role, text) in enumerate(turns):
        db.append_message(PACKAGING, role, content=text, timestamp=day + 30 * index)
    live = db.get_messages_as_conversation(PACKAGING)
    summary = f"{SUMMARY_PREFIX}\n\n## Goal\nPublish a Python package to PyPI."
    db.archive_and_compact(PACKAGING, [live[0], {"role": "user", "content": summary}, *live[-2:]])
    db.append_message(PACKAGING, "user", content="Thanks! Is TestPyPI worth it?", timestamp=day + 600)
    db.append_message(PACKAGING, "assistant", content="Yes: try the upload there first.", timestamp=day + 610)


def memories() -> None:
    from tools.memory_tool import MemoryStore

    store = MemoryStore()
    store.load_from_disk()
    for entry in ("The user's projects live in ~/code; tests run with `make test`.",
                  "Prefers trains to planes in Europe.",
                  "Publishes Python packages with twine; TestPyPI first."):
        assert store.add("memory", entry)["success"]
    for entry in ("Name: Ada. Lives in Oslo.", "Likes short answers with one example."):
        assert store.add("user", entry)["success"]


def skills() -> None:
    """One skill the background review created (marked agent-created) and one the user asked for."""
    from tools.skill_manager_tool import skill_manage
    from tools.skill_provenance import reset_current_write_origin, set_current_write_origin

    token = set_current_write_origin("background_review")
    try:
        assert json.loads(skill_manage("create", "city-weekend-planning", content=SKILL))["success"]
    finally:
        reset_current_write_origin(token)
    assert json.loads(skill_manage("create", "my-packing-list", content=OWN_SKILL))["success"]


def build(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HERMES_HOME"] = str(home.resolve())
    from hermes_state import SessionDB

    db = SessionDB(home / "state.db")
    trip_session(db)
    packaging_session(db)
    db.close()
    shrink(home / "state.db")
    memories()
    skills()


def shrink(path: Path) -> None:
    """Small pages and a rollback journal: the same schema and rows in a file a fifth the size, which a
    read-only reader opens without creating -wal/-shm files next to it (Hermes Agent's own fallback mode)."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA page_size=1024")
    conn.execute("VACUUM")
    conn.close()


if __name__ == "__main__":
    build(Path(sys.argv[1]))
