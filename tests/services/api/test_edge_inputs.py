"""Inputs that answered 500 (found by hand fuzzing): each is now refused at the edge with a stable code,
and nothing is created before it is validated."""

from __future__ import annotations

import pytest

from shared.stores import sessions
from shared.files import skills as skill_files
from shared.files.skills import SkillRoots
from tests.services.api.helpers import error_of, openai_error_of
from tests.support.factories import make_session, make_user

SKILL_MD = "---\nname: {name}\ndescription: Brewing notes for a test.\n---\nSteep for three minutes.\n"
JSON = {"Content-Type": "application/json"}


def roots(settings, user) -> SkillRoots:
    return SkillRoots.for_user(settings.data_dir, settings.bundled_skills_dir, user.id)


def test_message_paging_after_beyond_the_database_integer_range_is_422(client, db, user):
    """Finding: `GET /v1/sessions/{id}/messages?after=9223372036854775808` (2^63) answered 500:
    SQLite cannot bind an integer that large (OverflowError), and on Postgres anything over 2^31 - 1 was
    "integer out of range" against the INTEGER id column. `after` is now bounded by 2^63 - 1 (422 past it)
    and compared as BIGINT, so any value up to that is simply after every message."""
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": "hello"}])
    url = f"/v1/sessions/{session.id}/messages"
    too_big = client.get(url, headers=user.headers, params={"after": 2**63})
    assert too_big.status_code == 422 and error_of(too_big)["code"] == "invalid_request"
    for after in (2**31, 2**63 - 1):
        page = client.get(url, headers=user.headers, params={"after": after})
        assert page.status_code == 200 and page.json()["data"] == [], page.text


@pytest.mark.parametrize("path, body", [
    ("/v1/memory", '{"target": "memory", "action": "add", "content": "likes tea \\ud800"}'),
    ("/v1/sessions", '{"title": "plans \\udfff"}'),
    ("/v1/skills", '{"name": "brew-tea", "content": "---\\nname: brew-tea\\ndescription: Tea.\\n---\\nSteep \\ud83d"}'),
    ("/v1/skills", '{"name": "brew-tea", "content": "x", "files": {"references/a.md": "\\udc00"}}'),
])
def test_lone_surrogates_are_refused_with_422(client, settings, user, path, body):
    """Finding: a JSON body with an escaped lone surrogate (`"\\ud800"`) in a memory entry or a skill body
    answered 500 (the file write could not encode it). One rule everywhere: 422 invalid_text, nothing written."""
    response = client.post(path, headers={**user.headers, **JSON}, content=body)
    assert response.status_code == 422, response.text
    assert error_of(response)["code"] == "invalid_text"
    assert not (settings.data_dir / "users" / user.id).exists()  # no memory file, no skill folder, no lock


def test_a_lone_surrogate_in_a_chat_completion_is_refused_in_openai_shape(client, db, user):
    """Finding: `POST /v1/chat/completions` with `"content": "hi \\udc00"` answered 500. Now 400 invalid_text
    in OpenAI's error shape, and no session is opened for it."""
    body = '{"model": "scripted", "messages": [{"role": "user", "content": "hi \\udc00"}]}'
    response = client.post("/v1/chat/completions", headers={**user.headers, **JSON}, content=body)
    assert response.status_code == 400
    assert openai_error_of(response)["code"] == "invalid_text"
    assert sessions.list_sessions(db, user.id, cursor=None, limit=5)[0] == []


def test_nul_characters_are_refused_in_bodies_paths_and_queries(client, db, user):
    """Finding: Postgres refuses NUL in text, so `{"title": "a\\u0000"}` (and a NUL in an id or a search)
    answered 500 there while SQLite stored it. One rule for both databases: 422 invalid_text."""
    response = client.post("/v1/sessions", headers={**user.headers, **JSON}, content='{"title": "a\\u0000b"}')
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_text"
    for url in ("/v1/sessions/ses_%00x", "/v1/search?q=tea%00"):
        refused = client.get(url, headers=user.headers)
        assert refused.status_code == 422 and error_of(refused)["code"] == "invalid_text", url
    assert sessions.list_sessions(db, user.id, cursor=None, limit=5)[0] == []


@pytest.mark.parametrize("action", ["archive", "restore"])
@pytest.mark.parametrize("name", ["a" * 300, "tea%00notes"])
def test_invalid_skill_names_on_archive_and_restore_are_422_without_a_lock_file(client, settings, user, action,
                                                                                  name):
    """Finding: `POST /v1/skills/<300 x 'a'>/archive` (or a name with NUL) answered 500: the lock file was
    created from the unchecked name (ENAMETOOLONG / embedded NUL). Now the name is checked first: 422."""
    response = client.post(f"/v1/skills/{name}/{action}", headers=user.headers)
    assert response.status_code == 422, response.text
    assert error_of(response)["code"] in {"skill_name_invalid", "skill_name_too_long", "invalid_text"}
    assert not roots(settings, user).user.exists()


def test_archiving_missing_skills_leaves_no_lock_files(client, settings, user):
    """Finding: each archive or restore of a skill that does not exist left an empty lock file
    (200 calls, 200 files). Now a missing skill is 404 before any lock is taken, and locks are a fixed
    set of striped files however many names are tried."""
    for i in range(20):
        for action in ("archive", "restore"):
            response = client.post(f"/v1/skills/no-such-skill-{i}/{action}", headers=user.headers)
            assert response.status_code == 404 and error_of(response)["code"] == "skill_not_found"
    assert not roots(settings, user).user.exists()

    for i in range(5):
        name = f"tea-{i}"
        installed = client.post("/v1/skills", headers=user.headers, json={"name": name,
                                                                          "content": SKILL_MD.format(name=name)})
        assert installed.status_code == 201, installed.text
        assert client.post(f"/v1/skills/{name}/archive", headers=user.headers).status_code == 200
    locks = {p.name for p in (roots(settings, user).user / skill_files.LOCK_DIR).iterdir()}
    assert locks <= {skill_files.lock_file(f"tea-{i}") for i in range(5)}
    assert len({skill_files.lock_file(f"skill-{i}") for i in range(10_000)}) == skill_files.LOCK_STRIPES


def test_a_curator_restore_of_an_invalid_name_is_422_without_a_lock_file(client, settings, user):
    """The curator's rollback route takes a skill name too: it is checked before the curator lock is taken."""
    response = client.post(f"/v1/curator/skills/{'b' * 300}/restore", headers=user.headers)
    assert response.status_code == 422 and error_of(response)["code"] == "skill_name_too_long"
    assert not roots(settings, user).user.exists()


def test_supporting_file_names_over_255_bytes_are_422(client, settings, user):
    """Finding: installing a skill with a supporting file `references/<300 x 'a'>.md` answered 500
    (OSError: file name too long). Now 422 skill_path_too_long, and no folder is left behind."""
    body = {"name": "brew-tea", "content": SKILL_MD.format(name="brew-tea"),
            "files": {f"references/{'a' * 300}.md": "notes"}}
    response = client.post("/v1/skills", headers=user.headers, json=body)
    assert response.status_code == 422 and error_of(response)["code"] == "skill_path_too_long"
    multibyte = {**body, "files": {f"references/{'é' * 130}.md": "notes"}}  # 130 chars, 260 bytes
    assert client.post("/v1/skills", headers=user.headers, json=multibyte).status_code == 422
    assert not (roots(settings, user).user / "brew-tea").exists()


def test_a_history_tool_call_without_an_id_is_refused_before_anything_is_stored(client, db, user):
    """Finding: a chat completion whose client history held an assistant `tool_calls` entry without `id`
    was accepted, then its turn crashed in the worker (KeyError 'id') and the client got 502. Now the
    request is 400 invalid_request naming the field, and no session or turn is created."""
    body = {"model": "scripted", "messages": [
        {"role": "user", "content": "what is the weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "content": "thanks, and tomorrow?"},
    ]}
    response = client.post("/v1/chat/completions", headers=user.headers, json=body)
    assert response.status_code == 400
    error = openai_error_of(response)
    assert error["code"] == "invalid_request" and "tool_calls" in error["param"]
    assert sessions.list_sessions(db, user.id, cursor=None, limit=5)[0] == []


def test_a_tool_message_without_its_tool_call_id_is_refused(client, user):
    body = {"messages": [{"role": "tool", "content": "sunny"}, {"role": "user", "content": "and tomorrow?"}]}
    response = client.post("/v1/chat/completions", headers=user.headers, json=body)
    assert response.status_code == 400 and openai_error_of(response)["code"] == "invalid_request"


def test_an_empty_idempotency_key_counts_as_absent_and_poisons_nothing(client, db, enqueued):
    """Finding: `Idempotency-Key: ` (empty) was stored as the key "", so every later empty-key request
    from that user collided with it: 500, forever. Empty now means absent: each request is its own turn."""
    owner = make_user(db)
    session = make_session(db, owner.id)
    url = f"/v1/sessions/{session.id}/turns"
    first = client.post(url, headers={**owner.headers, "Idempotency-Key": ""}, json={"input": "one"})
    second = client.post(url, headers={**owner.headers, "Idempotency-Key": ""}, json={"input": "two"})
    assert first.status_code == second.status_code == 202, second.text
    assert first.json()["id"] != second.json()["id"]
    keyed = [client.post(url, headers={**owner.headers, "Idempotency-Key": "k-1"}, json={"input": "three"})
             for _ in range(2)]
    assert [r.status_code for r in keyed] == [202, 202] and keyed[0].json()["id"] == keyed[1].json()["id"]
