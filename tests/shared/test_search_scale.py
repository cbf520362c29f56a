"""Search at scale: bulk imports are indexed exactly like single inserts, and migration 0016 carries an
existing database's index over (and back) on both backends."""

from __future__ import annotations

import uuid

import pytest
from alembic import command
from sqlalchemy import text

from shared.db import Database
from shared.migrate import alembic_config, upgrade
from shared.stores import sessions
from shared.search import budget as search_budget, postgres as search_postgres, sqlite as search_sqlite
from shared.search.engine import search_messages
from shared.search.scope import INDEXED_ROLES, Scope
from tests.support.factories import make_session, make_user, make_user_of_revision


def _index_rows(db: Database, user_id: str) -> dict:
    """The user's search index as stored: per message its context ids and document (and length, owner)."""
    mine = "IN (SELECT m.id FROM messages AS m JOIN sessions AS s ON s.id = m.session_id WHERE s.user_id = :u)"
    with db.read() as s:
        if db.is_sqlite:
            sql = f"SELECT rowid, prev_id, prev2_id, body, prev, prev2 FROM messages_fts WHERE rowid {mine}"
        else:
            sql = ("SELECT message_id, prev_id, prev2_id, doc_len, document::text, user_id FROM message_search "
                   f"WHERE message_id {mine}")
        rows = s.execute(text(sql), {"u": user_id}).all()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_a_bulk_import_is_indexed_as_if_each_message_were_stored_alone(db):
    """Across batch boundaries a message's context is the two messages before it, whichever batch held them."""
    user = make_user(db)
    first, second = make_session(db, user.id), make_session(db, user.id)
    sessions.append_messages(db, first.id, [{"role": "user", "content": "Where did the heron nest?"}])
    rows = []
    for i in range(9):
        for chat in (first, second):
            rows.append({"session_id": chat.id, "role": "assistant" if i % 2 else "user",
                         "content": f"Reply {i}: the heron nested by the old mill, number {i}."})
    rows.insert(3, {"session_id": first.id, "role": "tool", "content": "tool output, not indexed"})
    sessions.bulk_insert_messages(db, rows, batch=4)
    bulk = _index_rows(db, user.id)

    with db.write() as s:  # re-index the messages one at a time, through the per-row triggers
        s.execute(text("UPDATE messages SET content = content WHERE session_id IN (:a, :b)"),
                  {"a": first.id, "b": second.id})
    assert _index_rows(db, user.id) == bulk
    assert len(bulk) == 19  # the tool output is not indexed
    hits = search_messages(db, user.id, "heron nest", limit=50)
    assert {h.session_id for h in hits} == {first.id, second.id}



def test_migration_0016_keeps_an_existing_history_searchable_and_downgrades(blank_url):
    upgrade(blank_url, "0014_hooks")
    db = Database(blank_url)
    try:
        user = make_user_of_revision(db)
        chat = make_session(db, user.id)
        other = make_user_of_revision(db)
        sessions.append_messages(db, chat.id, [{"role": "user", "content": "my otter is called Pebble"},
                                               {"role": "assistant", "content": "Pebble the otter, lovely"}])
        sessions.append_messages(db, make_session(db, other.id).id, [{"role": "user", "content": "otter facts"}])
        upgrade(blank_url)
        assert {h.content for h in search_messages(db, user.id, "otter")} == {
            "my otter is called Pebble", "Pebble the otter, lovely"}
        assert [h.content for h in search_messages(db, user.id, '"otter"', sort="newest")] == [
            "Pebble the otter, lovely", "my otter is called Pebble"]
        sessions.bulk_insert_messages(db, [{"session_id": chat.id, "role": "user", "content": "otter again"}])
        assert len(search_messages(db, user.id, "otter")) == 3
        assert [h.content for h in search_messages(db, other.id, "otter")] == ["otter facts"]

        command.downgrade(alembic_config(blank_url), "0014_hooks")
        sessions.append_messages(db, chat.id, [{"role": "user", "content": "an otter once more"}])
        upgrade(blank_url)
        assert len(search_messages(db, user.id, "otter")) == 4
    finally:
        db.dispose()


def test_a_large_bulk_load_leaves_postgres_with_fresh_statistics(db, monkeypatch):
    """Right after a bulk load Postgres planned a 100,000-message history from statistics saying a few hundred
    rows: the recall search sorted a user's every message on disk (430 ms instead of 30 ms per search) until
    autovacuum came round. A large load now ends with VACUUM (ANALYZE) of what it grew: statistics, and the
    GIN indexes' pending lists (which every GIN search reads through) moved into the indexes."""
    if db.is_sqlite:
        pytest.skip("Postgres' planner statistics; SQLite has no autovacuum lag to cover")
    monkeypatch.setattr(sessions, "ANALYZE_AFTER_ROWS", 40)
    chat = make_session(db, make_user(db).id)
    sessions.bulk_insert_messages(db, [{"session_id": chat.id, "role": "user", "content": f"line {i}"}
                                       for i in range(40)])
    with db.read() as s:
        analyzed = dict(s.execute(text(
            "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname IN ('messages', 'message_search')"
        )).all())
    assert set(analyzed) == {"messages", "message_search"} and all(analyzed.values())
    with db.write() as s:  # and the GIN indexes' pending lists were moved into the indexes: nothing left to clean
        left = s.execute(text("SELECT gin_clean_pending_list(indexname::regclass) FROM pg_indexes "
                              "WHERE tablename = 'message_search' AND indexdef LIKE '%USING gin%'")).scalars().all()
    assert len(left) == 2 and not any(left)


def test_a_scope_holding_most_of_the_index_is_ranked_as_if_every_match_were_scored(db, monkeypatch):
    """SQLite ranks such a scope from the whole index's best matches first (no join per match), and
    falls back to scoring the scope's every match when those may not hold its best; the hits are the
    same either way, and never another user's. (Postgres ranks as before: the same assertions hold.)"""
    user, other = make_user(db), make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": f"otter {'pebble ' * (i % 4)}note {i}"}
                                           for i in range(14)])
    sessions.append_messages(db, make_session(db, other.id).id, [{"role": "user", "content": "otter otter otter"}
                                                                 for _ in range(3)])
    queries = ["otter", "otter pebble", "pebble note"]

    def hits(pool):
        return {q: [(h.message_id, round(h.score, 6)) for h in search_messages(db, user.id, q, limit=8, pool=pool)]
                for q in queries}

    monkeypatch.setattr(search_sqlite, "_top", lambda s, scope, pool: 0)
    expected = {pool: hits(pool) for pool in (2, 3, 100)}
    mine = {m.id for m in sessions.list_messages(db, chat.id)}
    assert all(h for by_query in expected.values() for h in by_query.values())
    assert {i for by_query in expected.values() for h in by_query.values() for i, _ in h} <= mine

    tried = []
    best_of_top = search_sqlite._best_of_top
    monkeypatch.setattr(search_sqlite, "_best_of_top", lambda *a: tried.append(best_of_top(*a)) or tried[-1])
    for factor in (1, 2, 50):  # the other user's three best rows fill a top of 2 or 3; a top of 100+ holds all
        monkeypatch.setattr(search_sqlite, "_top", lambda s, scope, pool, factor=factor: pool * factor)
        assert {pool: hits(pool) for pool in (2, 3, 100)} == expected, factor
    if db.is_sqlite:
        assert any(found is None for found in tried) and any(found is not None for found in tried)


@pytest.mark.parametrize("walk", [5, 10_000], ids=["windows-below-the-walk", "walk-ends-with-the-scope"])
def test_a_phrase_whose_newest_matches_lie_past_the_walk_is_listed_whole(db, monkeypatch, walk):
    """Postgres walks the user's newest documents as far as should find the phrase, then reads the body
    index below where the walk stopped, a window of ids at a time (or stops: the walk reached the scope's
    oldest document). The user's newest matches come back, never another user's or the excluded
    session's, however the windows fall among other users' messages."""
    user, other = make_user(db), make_user(db)
    trips, excluded = make_session(db, user.id), make_session(db, user.id)
    theirs = make_session(db, other.id)
    for i in range(6):
        sessions.append_messages(db, trips.id, [{"role": "user", "content": f"the red canoe, trip {i}"}])
        sessions.append_messages(db, theirs.id, [{"role": "user", "content": f"the red canoe, not yours {i}"}])
    sessions.append_messages(db, trips.id, [{"role": "assistant", "content": f"paddle note {i}"} for i in range(30)])
    sessions.append_messages(db, excluded.id, [{"role": "user", "content": "the red canoe, excluded"}])
    for backend in (search_sqlite, search_postgres):
        monkeypatch.setattr(backend, "OWN_MAX", 1)  # past the own-scope plan
    # windows of a few ids: the first ones hold no match, the matches fall across several
    for name, value in (("READ_ALL", 0), ("WALK", walk), ("MIN_WALK", walk), ("WIDER", 2), ("PHRASE_SHARE", 1e6)):
        monkeypatch.setattr(search_postgres, name, value)
    windows = []
    real_windows = search_postgres._windows
    monkeypatch.setattr(search_postgres, "_windows", lambda *a: windows.append(a) or real_windows(*a))
    gin_reads = []
    real_gin = search_postgres._gin_newest
    monkeypatch.setattr(search_postgres, "_gin_newest", lambda *a: gin_reads.append(a) or real_gin(*a))

    hits = search_messages(db, user.id, '"red canoe"', limit=4, exclude_session_id=excluded.id)
    assert [h.content for h in hits] == [f"the red canoe, trip {i}" for i in (5, 4, 3, 2)]
    assert [h.content for h in search_messages(db, other.id, '"red canoe"', limit=2)] == [
        "the red canoe, not yours 5", "the red canoe, not yours 4"]
    if not db.is_sqlite:
        assert bool(windows) == (walk == 5)
        assert len(gin_reads) > 2 if walk == 5 else not gin_reads


@pytest.mark.sqlite_only
def test_sqlite_reads_each_rows_columns_from_the_fts5_content_table_in_the_index_order(db):
    """search_sqlite reads context ids (and a small scope's texts) from `messages_fts_content` by primary key:
    c0..c4 must be body, prev, prev2, prev_id, prev2_id as the virtual table returns them."""
    chat = make_session(db, make_user(db).id)
    stored = sessions.append_messages(db, chat.id, [{"role": "user", "content": f"line {i} of three"}
                                                    for i in range(3)])
    ids = {"ids": [m.id for m in stored]}
    with db.read() as s:
        through_fts = s.execute(text("SELECT rowid, body, prev, prev2, prev_id, prev2_id FROM messages_fts "
                                     "WHERE rowid IN (SELECT value FROM json_each(:ids)) ORDER BY rowid"),
                                {"ids": str(ids["ids"])}).all()
        direct = s.execute(text(f"SELECT id, c0, c1, c2, c3, c4 FROM {search_sqlite.CONTENT} "
                                "WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id"),
                           {"ids": str(ids["ids"])}).all()
    assert direct == through_fts and through_fts[2][3:] == ("line 0 of three", stored[1].id, stored[0].id)


def test_a_term_no_message_holds_is_left_out_of_a_broad_querys_ranking(db, monkeypatch):
    """Past the budget the rarest terms are ranked; one matching nothing anywhere adds nothing to any score,
    so it is not ranked at all (each backend evaluated it for every row ranked): same hits, same scores."""
    rare, nothing = (uuid.uuid4().hex.translate(str.maketrans("0123456789", "ghijklmnop")) for _ in range(2))
    user = make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": f"coffee break number {i}"} for i in range(12)]
                             + [{"role": "assistant", "content": f"coffee with the {rare}"},
                                {"role": "user", "content": f"the {rare} again"}])
    for backend in (search_sqlite, search_postgres):
        monkeypatch.setattr(backend, "BUDGET", 5)  # "coffee" is too broad to rank whole; the other word is rare
        monkeypatch.setattr(backend, "OWN_MAX", 1)
    ranked = []
    real_rarest = search_budget._rarest
    monkeypatch.setattr(search_budget, "_rarest", lambda terms, b: ranked.append(real_rarest(terms, b)) or ranked[-1])

    def scored(query):
        return [(h.content, round(h.score, 6)) for h in search_messages(db, user.id, query, limit=5)]

    assert scored(f"coffee {rare} {nothing}") == scored(f"coffee {rare}")
    assert [[a.words for t in terms for a in t.atoms] for terms in ranked] == [[(rare,)], [(rare,)]]


@pytest.mark.sqlite_only
def test_sqlite_ranks_from_the_whole_index_only_for_a_scope_holding_most_of_it(blank_url):
    upgrade(blank_url)
    db = Database(blank_url)
    try:
        most, few = make_user(db), make_user(db)
        chats = [make_session(db, most.id).id for _ in range(3)] + [make_session(db, few.id).id]
        with db.read() as s:
            assert search_sqlite._top(s, Scope(most.id, None, None, INDEXED_ROLES), 400) == int(400 * 1.3 / 0.75)
            assert search_sqlite._top(s, Scope(few.id, None, None, INDEXED_ROLES), 400) == 0
            assert search_sqlite._top(s, Scope(most.id, chats[0], None, INDEXED_ROLES), 400) == 0
            assert search_sqlite._top(s, Scope(most.id, None, None, ("user",)), 400) == 0
    finally:
        db.dispose()


@pytest.mark.sqlite_only
@pytest.mark.parametrize("first_span", [1, 3, 10_000], ids=["windows-of-one", "windows-of-three", "one-window"])
def test_sqlite_lists_the_newest_matches_window_by_window_within_the_whole_indexs_newest(db, monkeypatch,
                                                                                          first_span):
    """SQLite reads a newest listing's matches a window of rowids at a time (ascending within each); what it
    lists is still the scope's newest among the whole index's newest WALK matches, wherever the windows fall."""
    user, other = make_user(db), make_user(db)
    mine, theirs = make_session(db, user.id), make_session(db, other.id)
    for i in range(4):  # interleaved: user, other, user, other, ...
        sessions.append_messages(db, mine.id, [{"role": "user", "content": f"the green heron, mine {i}"}])
        sessions.append_messages(db, theirs.id, [{"role": "user", "content": f"the green heron, theirs {i}"}])
    monkeypatch.setattr(search_sqlite, "OWN_MAX", 1)  # past the own-scope plan
    monkeypatch.setattr(search_sqlite, "FIRST_SPAN", first_span)
    monkeypatch.setattr(search_sqlite, "WALK", 5)  # the index's newest five: theirs 3, mine 3, theirs 2, mine 2, ...
    assert [h.content for h in search_messages(db, user.id, '"green heron"', limit=10)] == [
        "the green heron, mine 3", "the green heron, mine 2"]
    monkeypatch.setattr(search_sqlite, "WALK", 10_000)
    assert [h.content for h in search_messages(db, user.id, '"green heron"', limit=3)] == [
        f"the green heron, mine {i}" for i in (3, 2, 1)]
