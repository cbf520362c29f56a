"""Message search: natural questions find the right message, only the caller's, on SQLite and Postgres."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from shared.stores import sessions
from shared.search import postgres as search_postgres, sqlite as search_sqlite
from shared.search.engine import search_messages
from tests.shared.test_search_query import HOSTILE
from tests.support.factories import make_session, make_user

CHAT = [
    ("user", "Priya: I went to an evening choir rehearsal yesterday; it was calmer than I expected."),
    ("assistant", "Tomas: Good for you. I am sketching lighthouses along the coast these days."),
    ("user", "Priya: My rehearsal is every Tuesday; singing calms me."),
    ("assistant", "Tomas: We are deploying the new chat-send service to staging on Friday."),
    ("user", "Priya: What should I cook for dinner?"),
    ("assistant", "Tomas: A mushroom risotto, slowly stirred."),
    ("tool", "tool output that mentions a choir rehearsal and risotto"),
    ("user", "Priya: 我们上周去桂林旅游了，山水很美。"),
]


@pytest.fixture
def chat(db, user):
    """A session of the test user holding CHAT; messages by their text's first words."""
    session = make_session(db, user.id)
    stored = sessions.append_messages(db, session.id, [{"role": r, "content": c} for r, c in CHAT])
    return session, {m.content.split(":", 1)[-1].split()[0].strip(",.!"): m for m in stored if m.role != "tool"}


def found(db, user_id, query, **kwargs) -> list[str]:
    return [h.content for h in search_messages(db, user_id, query, **kwargs)]


def test_a_natural_question_finds_the_message_that_answers_it(db, user, chat):
    hits = search_messages(db, user.id, "When did Priya go to the evening choir rehearsal?")
    assert hits[0].content == CHAT[0][1]
    assert hits[0].role == "user" and hits[0].score > 0 and hits[0].coverage == 1.0


def test_words_are_found_by_their_stem_and_irregular_forms(db, user, chat):
    assert found(db, user.id, "sketched lighthouse")[0] == CHAT[1][1]
    assert found(db, user.id, "go choir")[0] == CHAT[0][1]


def test_every_hit_holds_a_term_itself(db, user, chat):
    assert all(h.coverage > 0 for h in search_messages(db, user.id, "dinner risotto tuesday lighthouse"))


def test_a_quoted_phrase_must_appear_as_written(db, user, chat):
    assert found(db, user.id, '"choir rehearsal"') == [CHAT[0][1]]


def test_prefix_and_operators_are_honoured(db, user, chat):
    assert found(db, user.id, "deploy*") == [CHAT[3][1]]
    assert found(db, user.id, "chat-send") == [CHAT[3][1]]
    assert found(db, user.id, "rehearsal AND tuesday") == [CHAT[2][1]]
    assert CHAT[0][1] not in found(db, user.id, "rehearsal NOT yesterday")
    assert found(db, user.id, "rehearsal NOT yesterday")[0] == CHAT[2][1]


@pytest.mark.parametrize("query", HOSTILE)
def test_no_text_is_a_syntax_error(db, user, chat, query):
    assert isinstance(search_messages(db, user.id, query), list)


def test_cjk_text_is_findable_by_short_and_long_runs(db, user, chat):
    assert found(db, user.id, "桂林") == [CHAT[7][1]]
    assert found(db, user.id, "桂林旅游") == [CHAT[7][1]]
    assert found(db, user.id, "山水 risotto")[:2] == [CHAT[7][1], CHAT[5][1]] or \
        found(db, user.id, "山水 risotto")[:2] == [CHAT[5][1], CHAT[7][1]]


def test_tool_results_are_not_indexed(db, user, chat):
    assert all(h.role in ("user", "assistant") for h in search_messages(db, user.id, "tool output risotto"))
    assert found(db, user.id, '"tool output"') == []


def test_another_users_messages_never_appear(db, user, chat):
    other = make_user(db)
    theirs = make_session(db, other.id)
    sessions.append_messages(db, theirs.id, [{"role": "user", "content": "evening choir rehearsal secret notes"}])
    assert "evening choir rehearsal secret notes" not in found(db, user.id, "evening choir rehearsal secret")
    assert found(db, other.id, "secret") == ["evening choir rehearsal secret notes"]
    assert found(db, other.id, "risotto") == []


def test_session_role_and_exclusion_filters(db, user, chat):
    session, _ = chat
    later = make_session(db, user.id)
    sessions.append_messages(db, later.id, [{"role": "assistant", "content": "Another choir rehearsal story."}])
    assert {h.session_id for h in search_messages(db, user.id, "rehearsal", session_id=later.id)} == {later.id}
    assert later.id not in {h.session_id for h in search_messages(db, user.id, "rehearsal", exclude_session_id=later.id)}
    assert {h.role for h in search_messages(db, user.id, "choir rehearsal", role="assistant")} == {"assistant"}
    assert search_messages(db, user.id, "rehearsal", role="tool") == []
    assert {h.role for h in search_messages(db, user.id, "rehearsal", role="user, nonsense")} == {"user"}


def test_limit_and_time_order(db, user):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": f"kayak trip number {i}"} for i in range(8)])
    assert len(search_messages(db, user.id, "kayak", limit=3)) == 3
    newest = search_messages(db, user.id, "kayak", limit=20, sort="newest")
    assert [h.content for h in newest] == [f"kayak trip number {i}" for i in reversed(range(8))]
    oldest = search_messages(db, user.id, "kayak", limit=20, sort="oldest")
    assert [h.message_id for h in oldest] == sorted(h.message_id for h in newest)


def test_the_index_follows_the_message_transaction(db, user):
    session = make_session(db, user.id)
    with pytest.raises(RuntimeError):
        with db.write() as s:
            sessions.insert_messages(s, session.id, [{"role": "user", "content": "rolled back zeppelin"}])
            raise RuntimeError("the turn failed")
    assert found(db, user.id, "zeppelin") == []
    (message,) = sessions.append_messages(db, session.id, [{"role": "user", "content": "a zeppelin ride"}])
    assert found(db, user.id, "zeppelin") == ["a zeppelin ride"]
    with db.write() as s:
        s.execute(text("UPDATE messages SET content = 'a hot air balloon ride' WHERE id = :id"), {"id": message.id})
    assert found(db, user.id, "zeppelin") == [] and found(db, user.id, "balloon") == ["a hot air balloon ride"]
    with db.write() as s:
        s.execute(text("DELETE FROM messages WHERE id = :id"), {"id": message.id})
    assert found(db, user.id, "balloon") == []


def test_an_answer_ranks_by_the_words_of_its_question(db, user):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [
        {"role": "user", "content": "I once read about risotto in a magazine."},
        {"role": "assistant", "content": "Magazines are fun."},
        {"role": "user", "content": "What should I cook for dinner tonight?"},
        {"role": "assistant", "content": "A mushroom risotto, slowly stirred."},
    ])
    ranked = found(db, user.id, "risotto dinner")
    assert ranked.index("A mushroom risotto, slowly stirred.") < ranked.index("I once read about risotto in a magazine.")


def test_a_query_of_required_terms_only_lists_matches_newest_first(db, user):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": f"the blue kayak, trip {i}"} for i in range(5)])
    hits = search_messages(db, user.id, '"blue kayak"')
    assert [h.content for h in hits] == [f"the blue kayak, trip {i}" for i in reversed(range(5))]


def test_bulk_inserted_messages_are_indexed_too(db, user):
    first, second = make_session(db, user.id), make_session(db, user.id)
    rows = [{"session_id": sid, "role": "user", "content": f"bulk walrus number {i}"}
            for sid in (first.id, second.id) for i in range(30)]
    assert sessions.bulk_insert_messages(db, rows, batch=25) == 60
    assert len(search_messages(db, user.id, "walrus", limit=100)) == 60
    assert {h.session_id for h in search_messages(db, user.id, "walrus", session_id=second.id, limit=100)} == {second.id}


def test_a_broad_query_ranks_its_rare_terms_and_fills_with_the_newest_matches(db, user, monkeypatch):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": f"coffee break number {i}"} for i in range(12)]
                             + [{"role": "assistant", "content": "coffee with the narwhal"}]
                             + [{"role": "user", "content": f"more coffee {i}"} for i in range(3)])
    for backend in (search_sqlite, search_postgres):
        monkeypatch.setattr(backend, "BUDGET", 5)  # every "coffee" query is now too broad to rank whole

    assert found(db, user.id, "coffee narwhal")[0] == "coffee with the narwhal"
    broad = search_messages(db, user.id, "coffee", limit=3)
    assert [h.content for h in broad] == ["more coffee 2", "more coffee 1", "more coffee 0"]


def test_a_date_in_the_question_ranks_what_was_said_that_day_first(db, user):
    session = make_session(db, user.id)
    said = [("I baked a lemon cake for the party.", datetime(2021, 3, 4, tzinfo=timezone.utc)),
            ("I baked a lemon cake again, with more sugar.", datetime(2021, 11, 20, tzinfo=timezone.utc))]
    sessions.append_messages(db, session.id, [{"role": "user", "content": c, "created_at": t} for c, t in said])
    assert found(db, user.id, "What did I bake on 4 March 2021?")[0] == said[0][0]
    assert found(db, user.id, "What did I bake in November 2021?")[0] == said[1][0]
    assert found(db, user.id, "What did I bake on November 20?")[0] == said[1][0]


def test_a_verb_form_finds_its_irregular_forms(db, user):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": "She drew a lighthouse at dusk."}])
    assert found(db, user.id, "Who was drawing?") == ["She drew a lighthouse at dusk."]


def test_a_negation_is_not_a_verb_form(db, user):
    """"won't" is "will not", never "won" as in "win": a won game is no hit for a question about a promise."""
    session = make_session(db, user.id)
    said = ["We won the chess tournament on Sunday!", "I promised my landlord I will never paint the hallway."]
    sessions.append_messages(db, session.id, [{"role": "user", "content": c} for c in said])
    assert found(db, user.id, "What did I promise my landlord I won't do?") == [said[1]]
    assert found(db, user.id, "Which tournament have we won?") == [said[0]]


def test_a_word_said_more_often_ranks_higher_in_the_message_and_in_its_context(db, user):
    """Term frequencies count every occurrence, in the message (weight 1) and the one before it (0.5)."""
    for said in ("heron heron heron pond", "heron heron pond mill", "heron pond mill reed"):
        sessions.append_messages(db, make_session(db, user.id).id, [{"role": "user", "content": said}])
    assert found(db, user.id, "heron") == ["heron heron heron pond", "heron heron pond mill", "heron pond mill reed"]

    filler = [{"role": "user", "content": f"nothing to see, note {i}"} for i in range(12)]  # herons stay rare
    sessions.append_messages(db, make_session(db, user.id).id, filler)
    for asked, answer in (("heron heron heron heron?", "by the weir one"), ("heron egret stork ibis?", "by the weir two")):
        sessions.append_messages(db, make_session(db, user.id).id, [{"role": "user", "content": asked},
                                                                    {"role": "assistant", "content": answer}])
    ranked = found(db, user.id, "heron weir", limit=20)
    assert ranked.index("by the weir one") < ranked.index("by the weir two")


@pytest.mark.parametrize("walk", [20_000, 3], ids=["found-by-walking", "walk-too-short"])
def test_a_common_phrase_lists_the_users_newest_matches_outside_the_excluded_session(db, user, monkeypatch, walk):
    """Past the budget the newest matches come from walking the newest documents, or on Postgres (when
    the walk of the user's finds too few) from every match after all; never another user's, never the
    excluded session's."""
    kept, excluded = make_session(db, user.id), make_session(db, user.id)
    sessions.append_messages(db, kept.id, [{"role": "user", "content": f"the blue kayak, trip {i}"} for i in range(8)])
    sessions.append_messages(db, excluded.id, [{"role": "user", "content": "the blue kayak, excluded"}])
    other = make_user(db)
    sessions.append_messages(db, make_session(db, other.id).id, [{"role": "user", "content": "the blue kayak, not yours"}])
    for backend in (search_sqlite, search_postgres):
        monkeypatch.setattr(backend, "BUDGET", 5)
        monkeypatch.setattr(backend, "OWN_MAX", 1)  # past the own-scope plan
    monkeypatch.setattr(search_postgres, "WALK", walk)  # SQLite's walk bounds the whole index's matches instead

    hits = search_messages(db, user.id, '"blue kayak"', limit=6, exclude_session_id=excluded.id)
    assert [h.content for h in hits] == [f"the blue kayak, trip {i}" for i in reversed(range(2, 8))]
