"""The worker's transcript cache: each turn reads only the newest messages, and never loses older ones."""

from __future__ import annotations

from sqlalchemy import event

from shared.models.compactions import Compaction
from shared.stores import sessions
from services.worker.agent.history import build_history
from services.worker.agent.transcripts import TranscriptCache
from tests.support.factories import make_session
from tests.support.statements import statements_of


def say(db, session_id: str, *texts: str) -> None:
    sessions.append_messages(db, session_id, [{"role": "user", "content": t} for t in texts])


def test_a_cached_transcript_picks_up_what_another_worker_stored_meanwhile(db, user):
    chat = make_session(db, user.id)
    say(db, chat.id, "one", "two")
    cache = TranscriptCache()
    assert [m.content for m in cache.load(db, chat.id)] == ["one", "two"]

    say(db, chat.id, "three")  # as another worker's turn would

    assert [m.content for m in cache.load(db, chat.id)] == ["one", "two", "three"]


def test_a_transcript_dropped_for_room_between_two_reads_is_read_whole_again(db, user):
    chat, other = make_session(db, user.id), make_session(db, user.id)
    say(db, chat.id, "one", "two")
    say(db, other.id, "elsewhere")
    cache = TranscriptCache(capacity=1)
    cache.load(db, chat.id)
    after = cache.last_id(chat.id)
    say(db, chat.id, "three")
    newer = sessions.turn_start(db, chat.id, after).messages
    cache.load(db, other.id)  # takes the only place: the first session's messages are dropped

    assert cache.extend(chat.id, after, newer) is None  # the newest alone would not be the transcript
    assert [m.content for m in cache.load(db, chat.id)] == ["one", "two", "three"]


def test_the_history_built_a_turn_at_a_time_is_the_whole_transcripts_history(db, user):
    """Each turn builds only its own messages on what earlier turns built; the model must be sent exactly what a
    build of the whole transcript gives, a call its worker never answered (closed as interrupted) included."""
    chat = make_session(db, user.id)
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}
    turns = [
        [{"role": "user", "content": "list files"}, {"role": "assistant", "content": None, "tool_calls": [call]},
         {"role": "tool", "content": "a.txt", "tool_call_id": "c1", "name": "terminal"},
         {"role": "assistant", "content": "One file."}],
        [{"role": "user", "content": "again"}, {"role": "assistant", "content": None,
                                               "tool_calls": [{**call, "id": "c2"}]}],  # its worker died here
        [{"role": "user", "content": "and now?"}, {"role": "assistant", "content": "Done."}],
    ]
    cache = TranscriptCache()
    for rows in turns:
        sessions.append_messages(db, chat.id, rows)
        stored = cache.load(db, chat.id)

        assert cache.history(chat.id, stored) == build_history(stored)
        assert cache.history(chat.id, stored) is not cache.history(chat.id, stored)  # the caller's own list


def test_the_turn_start_read_hands_over_the_session_before_it_reads_the_messages(db, user):
    """The turn's background work (the recall search) starts on the session row, while the rest is still read."""
    chat = make_session(db, user.id)
    say(db, chat.id, "one", "two")
    seen: list[str] = []

    def session_read(session):
        seen.append(f"session {session.id}")

    def statement(conn, cursor, sql, *args):
        seen.append("messages read" if "FROM messages" in sql else "other read")

    event.listen(db.engine, "before_cursor_execute", statement)
    try:
        start = sessions.turn_start(db, chat.id, None, session_read)
    finally:
        event.remove(db.engine, "before_cursor_execute", statement)
    assert [m.content for m in start.messages] == ["one", "two"]
    assert seen.index(f"session {chat.id}") < seen.index("messages read")


def test_the_turn_start_read_brings_the_latest_applied_compaction_and_reads_none_for_a_session_never_compacted(
        db, user):
    """The compaction's id comes with the session row: a session never compacted costs no third statement."""
    chat = make_session(db, user.id)
    say(db, chat.id, "one")
    with statements_of(db) as statements:
        assert sessions.turn_start(db, chat.id, None).compaction is None
    assert not [s for s in statements if s.lstrip().startswith("SELECT compactions")]
    for outcome in ("compacted", "nothing", "insufficient", "aborted"):
        sessions.record_compaction(db, Compaction(session_id=chat.id, outcome=outcome, tokens_before=9,
                                                  tokens_after=3))
    latest = sessions.turn_start(db, chat.id, None).compaction
    assert latest.outcome == "insufficient"  # the newest that was applied, not the newest attempt
