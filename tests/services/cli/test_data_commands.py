"""`hstack sessions`, `hstack export`, `hstack backup` and `hstack restore`, run as a user or operator would."""

from __future__ import annotations

import json
import tarfile

import pytest

from shared.stores import sessions
from tests.support.factories import make_session, make_user


def test_sessions_export_and_delete_with_a_users_key(hstack, db):
    """Reproduction: `hstack sessions` did not exist; a conversation could be neither taken away nor deleted."""
    user = make_user(db)
    chat = make_session(db, user.id, title="groceries")
    sessions.append_messages(db, chat.id, [{"role": "user", "content": "buy oat milk"}])

    code, out, _ = hstack("sessions", "list", "--key", user.key)
    assert code == 0 and chat.id in out and "groceries" in out
    code, out, _ = hstack("sessions", "export", chat.id, "--format", "md", "--key", user.key)
    assert code == 0 and out.startswith("# groceries") and "buy oat milk" in out

    code, out, _ = hstack("sessions", "delete", chat.id, "--yes", "--key", user.key)
    assert code == 0 and "1 messages" in out and "Memory entries and skills" in out
    code, _, err = hstack("sessions", "export", chat.id, "--key", user.key)
    assert code == 1 and "No such session" in err


@pytest.mark.once
def test_backup_then_restore_into_an_empty_data_dir(hstack, tmp_path, monkeypatch):
    """Operator commands: a backup of a stack restores into another DATA_DIR; a second restore is refused."""
    source, target = tmp_path / "source", tmp_path / "target"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATA_DIR", str(source))
    from shared.config import load_settings
    from shared.db import get_database

    code, _, err = hstack("migrate")
    assert code == 0, err
    owner = make_user(get_database(load_settings().sqlalchemy_url), "alice")
    (source / "users" / owner.id / "memories").mkdir(parents=True)
    (source / "users" / owner.id / "memories" / "MEMORY.md").write_text("Alice likes tea.\n")

    code, out, err = hstack("export", "--user", "alice", "--out", str(tmp_path / "alice.tar.gz"))
    assert code == 0, err
    with tarfile.open(tmp_path / "alice.tar.gz") as tar:
        assert json.load(tar.extractfile("user.json"))["name"] == "alice"
        assert tar.extractfile("memories/MEMORY.md").read() == b"Alice likes tea.\n"
    code, out, err = hstack("backup", str(tmp_path / "all.tar.gz"))
    assert code == 0 and "sqlite database" in out, err

    monkeypatch.setenv("DATA_DIR", str(target))
    code, out, err = hstack("restore", str(tmp_path / "all.tar.gz"))
    assert code == 0, err
    assert (target / "users" / owner.id / "memories" / "MEMORY.md").read_text() == "Alice likes tea.\n"
    code, _, err = hstack("restore", str(tmp_path / "all.tar.gz"))
    assert code == 1 and "is not empty" in err and "--force" in err
