"""What a session's model knows of memory: a note counts once its message is stored, else it is sent again."""

from __future__ import annotations

from shared.models.compactions import Compaction, CompactionOutcome
from shared.stores import memory_snapshots, sessions, turns
from tests.support.factories import make_session


def user_message(db, user_id: str, session_id: str, text: str) -> tuple[str, int]:
    """A turn and its stored user message, as the worker leaves them when it starts the turn."""
    turn, _ = turns.create_turn(db, user_id, session_id, text)
    [row] = sessions.append_messages(db, session_id, [{"role": "user", "content": text, "turn_id": turn.id,
                                                       "turn_position": 0}])
    return turn.id, row.id


def test_a_note_lost_before_its_message_was_stored_is_told_again(db, user):
    chat = make_session(db, user.id)
    sessions.freeze_system_prompt(db, chat.id, "prompt showing a", {"memory": ["a"]})
    live = {"memory": ["a", "b"]}

    first, _ = user_message(db, user.id, chat.id, "one")
    assert memory_snapshots.changes_to_tell(db, chat.id, first, live) == {"memory": ["a"]}
    # The worker stopped before storing the note on `first`: the same turn, or the next one, tells it again.
    assert memory_snapshots.changes_to_tell(db, chat.id, first, live) == {"memory": ["a"]}
    second, message = user_message(db, user.id, chat.id, "two")
    assert memory_snapshots.changes_to_tell(db, chat.id, second, live) == {"memory": ["a"]}

    sessions.set_api_content(db, message, "two\n\n<memory-update>…</memory-update>")
    third, _ = user_message(db, user.id, chat.id, "three")
    assert memory_snapshots.changes_to_tell(db, chat.id, third, live) == {}
    assert memory_snapshots.changes_to_tell(db, chat.id, third, {"memory": ["b"]}) == {"memory": ["a", "b"]}


def test_a_session_without_a_snapshot_starts_from_the_live_entries(db, user):
    chat = make_session(db, user.id)
    turn, _ = user_message(db, user.id, chat.id, "hi")
    assert memory_snapshots.changes_to_tell(db, chat.id, turn, {"memory": ["x"], "user": []}) == {}
    assert memory_snapshots.changes_to_tell(db, chat.id, turn, {"memory": ["x", "y"], "user": []}) == {"memory": ["x"]}


def test_a_rebuilt_prompt_resets_what_the_session_knows(db, user):
    chat = make_session(db, user.id)
    sessions.freeze_system_prompt(db, chat.id, "prompt showing old", {"user": ["old"]})
    turn, _ = user_message(db, user.id, chat.id, "hi")
    memory_snapshots.changes_to_tell(db, chat.id, turn, {"user": ["old", "new"]})

    compaction = Compaction(session_id=chat.id, outcome=CompactionOutcome.compacted.value, tokens_before=9,
                            tokens_after=3)
    sessions.record_compaction(db, compaction, "prompt showing old and new", {"user": ["old", "new"]})
    assert memory_snapshots.changes_to_tell(db, chat.id, turn, {"user": ["old", "new"]}) == {}


def test_only_the_prompt_that_froze_records_what_the_session_knows(db, user):
    """Two attempts build a session's prompt at once (a takeover): the one frozen second is not the session's
    prompt, so the entries it showed must not become what the session knows."""
    chat = make_session(db, user.id)
    first = sessions.freeze_system_prompt(db, chat.id, "prompt showing a", {"memory": ["a"]})
    second = sessions.freeze_system_prompt(db, chat.id, "prompt showing a and b", {"memory": ["a", "b"]})

    assert first.system_prompt == second.system_prompt == "prompt showing a"
    turn, _ = user_message(db, user.id, chat.id, "hi")
    assert memory_snapshots.changes_to_tell(db, chat.id, turn, {"memory": ["a", "b"]}) == {"memory": ["a"]}
