"""A backup taken while 50 turns run on the real api and worker restores to the same data."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import select

from shared.backups.archive import create_backup
from shared.backups.restore import restore_backup
from shared.db import get_database
from shared.models.sessions import Message
from shared.models.turns import Turn
from tests.fakes.model import text
from tests.support.env import create_postgres_database
from tests.support.factories import SKILL
from tests.support.processes import Stack, wait_for_turn, wait_until
from tests.support.search_index import indexed_ids

pytestmark = pytest.mark.e2e

USERS, SESSIONS_EACH = 10, 5  # 50 turns at once, five per user (within MAX_RUNNING_TURNS_PER_USER)


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url, env_overrides={"MAX_RUNNING_TURNS_PER_USER": str(SESSIONS_EACH)})
    with s:
        s.start_api()
        s.start_worker(concurrency=50)
        yield s


def messages(db) -> dict[int, tuple]:
    with db.read() as s:
        rows = s.execute(select(Message.id, Message.session_id, Message.turn_id, Message.role, Message.content)).all()
    return {row[0]: tuple(row[1:]) for row in rows}


def files(data_dir: Path) -> dict[str, str]:
    root = Path(data_dir) / "users"
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_backup_during_50_running_turns_restores_sessions_search_memory_and_skills(stack, model, settings,
                                                                                   tmp_path, request):
    """Reproduction: there was no consistent backup while the stack runs (a copy of DATA_DIR can be torn)."""
    model.on("vault", *[text("the vault answer " * 100, chunk_delay=0.02)] * USERS * SESSIONS_EACH)
    clients, turns = [], []
    for n in range(USERS):
        client = stack.client(stack.create_user(f"e2e-backup-{n}"))
        clients.append(client)
        me = client.get("/v1/keys").json()["data"][0]["user_id"]
        memory = stack.data_dir / "users" / me / "memories"
        memory.mkdir(parents=True, exist_ok=True)
        (memory / "MEMORY.md").write_text(f"User {n} keeps a vault.\n")
        skill = stack.data_dir / "users" / me / "skills" / "vault"
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text(SKILL.format("vault"))
        for _ in range(SESSIONS_EACH):
            sid = client.post("/v1/sessions", json={}).json()["id"]
            turns.append((client, client.post(f"/v1/sessions/{sid}/turns", json={"input": "open the vault"}).json()))
    source = settings.model_copy(update={"data_dir": stack.data_dir, "database_url": stack.database_url})
    db = get_database(stack.database_url)

    def running() -> int:
        with db.read() as s:
            return len(s.execute(select(Turn.id).where(Turn.status == "running")).all())

    wait_until(lambda: running() >= 25, timeout=60, what="most of the 50 turns running")
    create_backup(source, tmp_path / "during.tar.gz")
    finished = [wait_for_turn(client, turn["id"], timeout=120) for client, turn in turns]
    for client in clients:
        client.close()

    target_url, drop = (None, None) if stack.database_url.startswith("sqlite") else create_postgres_database()
    if drop:
        request.addfinalizer(drop)
    target = settings.model_copy(update={"data_dir": tmp_path / "restored", "database_url": target_url})
    restore_backup(target, tmp_path / "during.tar.gz")

    restored_db = get_database(target.sqlalchemy_url)
    original, restored = messages(db), messages(restored_db)
    assert [t["status"] for t in finished] == ["completed"] * 50
    assert restored and {i: original[i] for i in restored} == restored  # each restored row as it is in the original
    for session_id in {row[0] for row in original.values()}:
        mine = sorted(i for i, row in original.items() if row[0] == session_id)
        kept = sorted(i for i, row in restored.items() if row[0] == session_id)
        assert kept == mine[:len(kept)], "a session restores to a prefix of its transcript, never with a gap"
        assert len(kept) != 1 or restored[kept[0]][2] == "user"
    with restored_db.read() as s:
        assert len(s.execute(select(Turn.id)).all()) == 50
    assert indexed_ids(restored_db, "vault") == set(restored)  # the index holds exactly the restored rows
    assert files(target.data_dir) == files(stack.data_dir)
