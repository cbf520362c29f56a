"""`hstack import hermes PATH --user NAME` on a Hermes Agent home made by the real hermes-agent package."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from shared.config import load_settings
from shared.stores import sessions
from shared.stores.memory import MemoryStore
from shared.stores.skills import SkillStore
from services.cli.main import main
from services.worker.agent.drain import drain_session
from services.worker.runtime import Runtime
from services.worker.tools.registry import ToolRegistry
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_user

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "hermes_home"
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc).timestamp()
MEMORY = ["The user's projects live in ~/code; tests run with `make test`.", "Prefers trains to planes in Europe.",
          "Publishes Python packages with twine; TestPyPI first."]


@pytest.fixture
def home(tmp_path) -> Path:
    """A copy of the fixture, so a test may change it."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "hermes"))


@pytest.fixture
def hstack_import(capsys):
    def run(home: Path, user: str) -> tuple[int, str, str]:
        code = main(["import", "hermes", str(home), "--user", user])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def imported_sessions(db, user_id: str) -> list:
    page, _ = sessions.list_sessions(db, user_id, cursor=None, limit=50)
    return sorted(page, key=lambda s: s.created_at)


def source_started_at() -> dict[str, datetime]:
    with sqlite3.connect(f"{(FIXTURE / 'state.db').as_uri()}?mode=ro", uri=True) as conn:
        return {title: at(started) for title, started in conn.execute("SELECT title, started_at FROM sessions")}


def test_the_import_brings_sessions_messages_memory_and_every_local_skill(db, home, hstack_import):
    user = make_user(db)
    code, out, err = hstack_import(home, user.name)

    assert code == 0, err
    trip, packaging = imported_sessions(db, user.id)
    assert (trip.title, trip.source, packaging.title, packaging.source) == \
        ("Weekend in Oslo", "hermes-cli", "Python packaging", "hermes-telegram")
    assert {s.title: s.created_at for s in (trip, packaging)} == source_started_at()

    messages = sessions.list_messages(db, trip.id)
    assert [(m.role, m.content[:24], m.created_at) for m in messages] == [
        ("user", "Plan a weekend in Oslo f", at(T0)),
        ("assistant", "Let me look up what is o", at(T0 + 5)),
        ("tool", "Vigeland park (always op", at(T0 + 7)),
        ("assistant", "Day 1: Munch museum at 1", at(T0 + 12)),
        ("user", "Which museum should I se", at(T0 + 90)),  # "make it Bergen" was taken back in Hermes
        ("assistant", "The Munch museum: it ope", at(T0 + 95)),
    ]
    assert messages[1].tool_calls[0]["function"]["name"] == "web_search"
    assert (messages[2].tool_call_id, messages[2].name) == (messages[1].tool_calls[0]["id"], "web_search")
    # The in-place compaction's summary and re-inserted copies are left out; every original is kept once.
    packaging_texts = [m.content for m in sessions.list_messages(db, packaging.id)]
    assert len(packaging_texts) == 8 and len(set(packaging_texts)) == 8
    assert packaging_texts[0] == "How do I publish a package to PyPI?"
    assert packaging_texts[-1] == "Yes: try the upload there first."
    assert not any("CONTEXT COMPACTION" in t for t in packaging_texts)

    memory = MemoryStore.for_user(load_settings(), user.id)
    assert memory.entries("memory") == MEMORY
    assert memory.entries("user") == ["Name: Ada. Lives in Oslo.", "Likes short answers with one example."]

    skills = {s.name: s for s in SkillStore.for_user(db, load_settings(), user.id).summaries()}
    assert skills["city-weekend-planning"].origin == "agent"
    assert skills["my-packing-list"].origin == "user"  # not agent-created in Hermes Agent: the user's own
    assert [line[:5] for line in out.splitlines() if line.startswith("[")] == ["[1/3]", "[2/3]", "[3/3]"]
    assert ("Done: sessions 2 imported / 0 skipped; messages 14 imported / 5 skipped; memory entries 5 imported "
            "/ 0 skipped / 0 not fitting; skills 2 imported / 0 skipped.") in out


def test_a_second_import_adds_nothing(db, home, hstack_import):
    user = make_user(db)
    hstack_import(home, user.name)
    before = {s.id: len(sessions.list_messages(db, s.id)) for s in imported_sessions(db, user.id)}
    code, out, _ = hstack_import(home, user.id)

    assert code == 0
    assert {s.id: len(sessions.list_messages(db, s.id)) for s in imported_sessions(db, user.id)} == before
    assert len(MemoryStore.for_user(load_settings(), user.id).entries("memory")) == 3
    assert ("Done: sessions 0 imported / 2 skipped; messages 0 imported / 19 skipped; memory entries 0 imported "
            "/ 5 skipped / 0 not fitting; skills 0 imported / 2 skipped.") in out


def test_a_later_import_adds_only_what_hermes_stored_since(db, home, hstack_import):
    user = make_user(db)
    hstack_import(home, user.name)
    with sqlite3.connect(home / "state.db") as conn:  # the user kept chatting in Hermes meanwhile
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                     ("20260101_090000_a1b2c3", "And on Sunday?", T0 + 3600))
    code, out, _ = hstack_import(home, user.name)

    trip = imported_sessions(db, user.id)[0]
    assert code == 0 and "messages: 1 imported" in out
    assert [m.content for m in sessions.list_messages(db, trip.id)][-2:] == [
        "The Munch museum: it opens at 10:00, before the others.", "And on Sunday?"]


def test_memory_that_does_not_fit_is_reported_in_full_and_imported_once_there_is_room(
        db, home, hstack_import, monkeypatch):
    user = make_user(db)
    monkeypatch.setenv("MEMORY_CHAR_LIMIT", "120")
    code, out, _ = hstack_import(home, user.name)

    assert code == 0
    assert MemoryStore.for_user(load_settings(), user.id).entries("memory") == MEMORY[:2]
    assert "MEMORY.md entry does not fit" in out and f"      {MEMORY[2]}" in out
    assert "memory entries 4 imported / 0 skipped / 1 not fitting" in out

    monkeypatch.setenv("MEMORY_CHAR_LIMIT", "2200")
    _, again, _ = hstack_import(home, user.name)
    assert MemoryStore.for_user(load_settings(), user.id).entries("memory") == MEMORY
    assert "memory entries 1 imported / 4 skipped / 0 not fitting" in again


def test_a_path_that_is_not_a_hermes_home_or_an_unknown_user_is_a_readable_error(db, tmp_path, home,
                                                                                  hstack_import):
    user = make_user(db)
    code, out, err = hstack_import(tmp_path / "nowhere", user.name)
    assert code == 1 and "is not a directory" in err and "Traceback" not in err

    (tmp_path / "empty").mkdir()
    code, _, err = hstack_import(tmp_path / "empty", user.name)
    assert code == 1 and "does not look like a Hermes Agent home" in err

    code, _, err = hstack_import(home, "nobody-by-this-name")
    assert code == 1 and "No user 'nobody-by-this-name'" in err


def test_an_imported_session_continues_with_its_history_in_front_of_the_model(db, home, hstack_import, model,
                                                                               settings):
    user = make_user(db)
    hstack_import(home, user.name)
    trip = imported_sessions(db, user.id)[0]
    turn = post_turn(db, user.id, trip.id, "And where do I eat?")
    runtime = Runtime.build(settings, tools=ToolRegistry(), worker_id="worker@test:import")
    try:
        drain_session(runtime, trip.id)
    finally:
        runtime.leases.stop()

    assert wait_finished(db, turn.id).status == "completed"
    sent = model.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant",
                                         "user"]
    assert sent[1]["content"] == "Plan a weekend in Oslo for me." and sent[-1]["content"] == "And where do I eat?"
