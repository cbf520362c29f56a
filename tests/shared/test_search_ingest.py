"""Bulk ingest: messages stored by `bulk_insert_messages` are indexed and found exactly like messages stored
one at a time (same previous-message context), and migration 0018 (Postgres: inserts indexed by a statement
trigger) upgrades a database holding messages and downgrades cleanly. SQLite runs the same checks unchanged."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from shared.db import Database
from shared.migrate import alembic_config, upgrade
from shared.stores import sessions, turns
from shared.search.engine import search_messages
from tests.support.factories import make_session, make_user, make_user_of_revision

# (session, role, content) in the order stored: two sessions interleaved, with messages that are not indexed.
CONVERSATION = [
    (0, "user", "Where did the heron nest this spring?"),
    (0, "assistant", "By the old mill, under the second arch."),
    (1, "user", "Which kettle should I buy for the cabin?"),
    (0, "tool", "weather: rain all week"),
    (0, "user", "And the otters, where do they swim?"),
    (1, "assistant", "A copper kettle suits a wood stove."),
    (1, "user", "   "),
    (0, "assistant", "The otters swim below the weir at dawn."),
    (1, "user", "Does copper need polishing often?"),
    (1, "assistant", "Twice a year, with lemon and salt."),
    (0, "user", "Could the heron scare the otters away?"),
    (0, "assistant", "No: herons leave grown otters alone."),
]
QUERIES = ["heron", "otters swim", "copper kettle", "cabin", "where do they swim", "lemon salt", "mill"]


def _stored_one_by_one(db: Database, chats: list[str]) -> None:
    for n, role, content in CONVERSATION:
        sessions.append_messages(db, chats[n], [{"role": role, "content": content}])


def _stored_in_bulk(db: Database, chats: list[str], *, first_alone: int = 0, batch: int = 20_000) -> None:
    """The first `first_alone` messages one at a time, the rest by bulk_insert_messages in batches of `batch`."""
    for n, role, content in CONVERSATION[:first_alone]:
        sessions.append_messages(db, chats[n], [{"role": role, "content": content}])
    rows = [{"session_id": chats[n], "role": role, "content": content}
            for n, role, content in CONVERSATION[first_alone:]]
    assert sessions.bulk_insert_messages(db, rows, batch=batch) == len(rows)


def _index(db: Database, user_id: str) -> dict[str, tuple]:
    """The user's search index keyed by message text: the context's texts and (Postgres) the stored document.
    Every text must be the user's only message with it: rows come in no set order, so with two alike
    whichever came last would stand for both (a comparison that passed or failed by the heap's layout)."""
    with db.read() as s:
        texts = dict(s.execute(text(
            "SELECT m.id, m.content FROM messages AS m JOIN sessions AS s ON s.id = m.session_id WHERE s.user_id = :u"
        ), {"u": user_id}).all())
        assert len(set(texts.values())) == len(texts), "two of the user's messages have the same text"
        if db.is_sqlite:
            rows = s.execute(text("SELECT rowid, prev_id, prev2_id, body, prev, prev2 FROM messages_fts "
                                  "WHERE rowid IN (SELECT value FROM json_each(:ids))"),
                             {"ids": "[" + ",".join(map(str, texts)) + "]"}).all()
        else:
            rows = s.execute(text("SELECT message_id, prev_id, prev2_id, doc_len, document::text, user_id "
                                  "FROM message_search WHERE message_id = ANY(:ids)"), {"ids": list(texts)}).all()
    if db.is_sqlite:
        return {texts[r[0]]: (texts.get(r[1]), texts.get(r[2]), *r[3:]) for r in rows}
    assert {r[-1] for r in rows} == {user_id}
    return {texts[r[0]]: (texts.get(r[1]), texts.get(r[2]), *r[3:-1]) for r in rows}


def _found(db: Database, user_id: str, chats: list[str]) -> dict[tuple[str, str], list[tuple]]:
    """Every query's hits, ranked and newest first, as (session number, role, text, score). Scores depend on
    the whole index: compare users' hits read at one moment."""
    number = {chat: i for i, chat in enumerate(chats)}
    return {(q, sort): [(number[h.session_id], h.role, h.content, round(h.score, 6))
                        for h in search_messages(db, user_id, q, limit=50, sort=sort)]
            for q in QUERIES for sort in ("rank", "newest")}


def _twin(db: Database) -> tuple[str, list[str]]:
    user = make_user_of_revision(db)
    return user.id, [make_session(db, user.id).id, make_session(db, user.id).id]


def test_bulk_stored_messages_are_indexed_and_found_like_messages_stored_one_at_a_time(db, monkeypatch):
    alone_user, alone = _twin(db)
    _stored_one_by_one(db, alone)
    expected_index = _index(db, alone_user)
    assert len(expected_index) == 10  # the tool result and the blank message are not indexed
    assert expected_index["A copper kettle suits a wood stove."][:2] == (
        "Which kettle should I buy for the cabin?", None)
    assert expected_index["The otters swim below the weir at dawn."][:2] == (
        "And the otters, where do they swim?", "By the old mill, under the second arch.")

    # one batch spanning both sessions; small batches continuing sessions that already hold messages
    bulk = []
    for first_alone, batch in ((0, 20_000), (2, 3), (5, 4)):
        user_id, chats = _twin(db)
        _stored_in_bulk(db, chats, first_alone=first_alone, batch=batch)
        assert _index(db, user_id) == expected_index, (first_alone, batch)
        bulk.append((user_id, chats))
    monkeypatch.setattr(sessions, "STATEMENT_BYTES", 300)  # a batch too big for one statement (Postgres)
    user_id, chats = _twin(db)
    _stored_in_bulk(db, chats)
    assert _index(db, user_id) == expected_index
    bulk.append((user_id, chats))
    expected_hits = _found(db, alone_user, alone)
    assert all(expected_hits[(q, "rank")] for q in QUERIES)
    for user_id, chats in bulk:
        assert _found(db, user_id, chats) == expected_hits


def test_messages_updated_afterwards_are_indexed_as_if_inserted_so(db):
    """An update re-indexes the message (its own row trigger) with the context a fresh insert would give."""
    expected_user, expected = _twin(db)
    _stored_one_by_one(db, expected)
    user_id, chats = _twin(db)
    _stored_in_bulk(db, chats)
    with db.write() as s:
        s.execute(text("UPDATE messages SET content = content WHERE session_id IN (:a, :b)"),
                  {"a": chats[0], "b": chats[1]})
    assert _index(db, user_id) == _index(db, expected_user)


def test_a_turns_messages_stored_twice_are_indexed_once_with_their_context(db):
    user = make_user(db)
    chat = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, chat.id, "Where did the heron nest?")
    rows = [{"role": "user", "content": "Where did the heron nest?", "turn_id": turn.id, "turn_position": 0},
            {"role": "assistant", "content": "By the old mill.", "turn_id": turn.id, "turn_position": 1},
            {"role": "user", "content": "And the kingfisher?", "turn_id": turn.id, "turn_position": 2}]
    for _ in range(2):  # a retried turn stores its rows again: nothing new is stored or indexed
        with db.write() as s:
            sessions.add_turn_messages(s, chat.id, rows)
    index = _index(db, user.id)
    assert {content: entry[:2] for content, entry in index.items()} == {
        "Where did the heron nest?": (None, None),
        "By the old mill.": ("Where did the heron nest?", None),
        "And the kingfisher?": ("By the old mill.", "Where did the heron nest?"),
    }
    assert [h.content for h in search_messages(db, user.id, "heron OR mill OR kingfisher", sort="newest")] == [
        "And the kingfisher?", "By the old mill.", "Where did the heron nest?"]



def test_migration_0018_keeps_a_stored_history_indexed_alike_and_downgrades(blank_url):
    upgrade(blank_url, "0017_cache_usage")
    db = Database(blank_url)
    try:
        before_user, before = _twin(db)
        _stored_one_by_one(db, before)  # indexed by the row trigger of 0003/0016
        expected_index, expected_hits = _index(db, before_user), _found(db, before_user, before)

        upgrade(blank_url)
        assert _index(db, before_user) == expected_index
        assert _found(db, before_user, before) == expected_hits
        after_user, after = _twin(db)
        _stored_in_bulk(db, after, first_alone=2, batch=3)
        assert _index(db, after_user) == expected_index
        assert _found(db, after_user, after) == _found(db, before_user, before)

        command.downgrade(alembic_config(blank_url), "0017_cache_usage")
        down_user, down = _twin(db)
        _stored_in_bulk(db, down, first_alone=5, batch=4)
        assert _index(db, down_user) == expected_index
        sessions.append_messages(db, after[0], [{"role": "user", "content": "Where do herons winter?"}])
        assert [h.content for h in search_messages(db, after_user, "herons", sort="newest")][0] == (
            "Where do herons winter?")
        assert _index(db, after_user)["Where do herons winter?"][:2] == (
            "No: herons leave grown otters alone.", "Could the heron scare the otters away?")

        upgrade(blank_url)
        again_user, again = _twin(db)
        _stored_in_bulk(db, again)
        assert _index(db, again_user) == expected_index
    finally:
        db.dispose()


def test_documents_past_tsvector_limits_are_measured_as_the_row_trigger_measures_them(db):
    """Migration 0019 counts a document's positions from its three messages' counts, where the sum is exact;
    a lexeme past 256 positions or a position past 16,383 across the three (where tsvector drops
    positions) is counted from the document itself, as the row trigger does."""
    user_id, chats = _twin(db)
    crowded = "pebble " * 120  # three such messages in a row: 360 positions of one lexeme, 256 kept
    endless = " ".join(f"word{i}" for i in range(9_000)) + " pebble pebble"  # two in a row: positions past 16,383
    texts = [crowded + "one", crowded + "two", crowded + "three", endless + " four", endless + " five",
             "a short reply", endless + " seven"]
    sessions.bulk_insert_messages(db, [{"session_id": chats[0], "role": "user", "content": t} for t in texts])
    bulk = _index(db, user_id)
    with db.write() as s:  # re-index through the per-row trigger, which measures each document by unnesting it
        s.execute(text("UPDATE messages SET content = content WHERE session_id = :a"), {"a": chats[0]})
    rows = _index(db, user_id)
    assert rows.keys() == bulk.keys()
    # named by their last words: a failing == over 9,000-word documents has pytest diff them for minutes
    assert [t[-12:] for t in texts if rows[t] != bulk[t]] == []
    if not db.is_sqlite:  # below the sum of its messages' own counts: "pebble" keeps 256; one, two, three
        assert bulk[crowded + "three"][2] == 256 + 3 < 3 * 121
        assert bulk["a short reply"][2] < 2 + 2 * 9_003  # past 16,383 a lexeme keeps one position


def test_migration_0019_keeps_a_stored_history_indexed_alike_and_downgrades(blank_url):
    upgrade(blank_url, "0018_pg_ingest")
    db = Database(blank_url)
    try:
        before_user, before = _twin(db)
        _stored_in_bulk(db, before, first_alone=2, batch=3)  # indexed by 0018's statement trigger
        expected_index, expected_hits = _index(db, before_user), _found(db, before_user, before)

        upgrade(blank_url)
        assert _index(db, before_user) == expected_index
        assert _found(db, before_user, before) == expected_hits
        if not db.is_sqlite:
            with db.read() as s:
                assert s.execute(text("SELECT count(*) FROM pg_indexes WHERE indexname = 'ix_message_search_body'")
                                 ).scalar() == 1
        after_user, after = _twin(db)
        _stored_in_bulk(db, after, first_alone=5, batch=4)
        assert _index(db, after_user) == expected_index
        assert _found(db, after_user, after) == _found(db, before_user, before)
        assert [h.content for h in search_messages(db, after_user, '"grown otters"', sort="rank")] == [
            "No: herons leave grown otters alone."]
        sessions.append_messages(db, after[1], [{"role": "user", "content": "我们上周去桂林旅游了"},
                                                {"role": "user", "content": "Café au lait, s'il vous plaît"}])
        assert [h.content for h in search_messages(db, after_user, "桂林")] == ["我们上周去桂林旅游了"]
        if db.is_sqlite:  # the trigram table holds CJK text only, whatever else is not plain ASCII
            with db.read() as s:
                assert s.execute(text("SELECT body FROM messages_cjk")).scalars().all() == ["我们上周去桂林旅游了"]

        command.downgrade(alembic_config(blank_url), "0018_pg_ingest")
        down_user, down = _twin(db)
        _stored_in_bulk(db, down)
        assert _index(db, down_user) == expected_index
        upgrade(blank_url)
        again_user, again = _twin(db)
        _stored_in_bulk(db, again, batch=5)
        assert _index(db, again_user) == expected_index
    finally:
        db.dispose()
