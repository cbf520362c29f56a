"""`hstack search backfill-embeddings`: embeds the stored history on this machine's database, with a progress bar."""

from __future__ import annotations

import pytest

from services.cli.main import main
from shared.stores import message_embeddings, sessions
from tests.fakes.embeddings import FakeEmbeddings
from tests.support.factories import make_session, make_user


@pytest.fixture
def provider():
    fake = FakeEmbeddings().start()
    yield fake
    fake.stop()


def test_backfill_embeds_every_stored_message_once_and_draws_its_progress(db, provider, monkeypatch, capsys):
    user = make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": f"message number {n}"} for n in range(7)])
    monkeypatch.setenv("EMBEDDINGS_MODEL", "fake-backfill")
    monkeypatch.setenv("EMBEDDINGS_BASE_URL", provider.base_url)
    monkeypatch.setenv("EMBEDDINGS_BATCH_SIZE", "3")

    assert main(["search", "backfill-embeddings"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("embedded ") and "with fake-backfill" in out
    assert "[" + "#" * 30 + "]" in err and "messages" in err and "100%" in err
    assert message_embeddings.count_missing(db, "fake-backfill") == 0
    assert {f"message number {n}" for n in range(7)} <= set(provider.inputs())

    assert main(["search", "backfill-embeddings"]) == 0
    assert capsys.readouterr().out == "embedded 0 message(s) with fake-backfill\n"


def test_backfill_without_a_model_or_with_a_dead_provider_says_so(db, provider, monkeypatch, capsys):
    monkeypatch.delenv("EMBEDDINGS_MODEL", raising=False)
    assert main(["search", "backfill-embeddings"]) == 1
    assert "EMBEDDINGS_MODEL is not set" in capsys.readouterr().err

    user = make_user(db)
    sessions.append_messages(db, make_session(db, user.id).id, [{"role": "user", "content": "hello there"}])
    monkeypatch.setenv("EMBEDDINGS_MODEL", "fake-dead")
    monkeypatch.setenv("EMBEDDINGS_BASE_URL", provider.base_url)
    monkeypatch.setenv("EMBEDDINGS_API_KEY", "sk-never-printed-777")
    provider.fail_next(401, times=50)
    assert main(["search", "backfill-embeddings"]) == 1
    err = capsys.readouterr().err
    assert "401" in err and "run it again" in err and "sk-never-printed-777" not in err
