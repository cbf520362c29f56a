"""Pieces of `hstack run` that must hold on a fresh machine: the admin key, the embedded Redis."""

from __future__ import annotations

import io
import os
import stat

import psutil
import pytest
import redis

from services.cli.children import Console
from services.cli.redis_embedded import EmbeddedRedis
from services.cli import run as run_module
from services.cli.run import check_sandbox, ensure_admin_key, ensure_gateway_key, ensure_redis_password
from shared.config import load_settings

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_a_missing_admin_key_is_generated_into_a_private_env_file(tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    monkeypatch.setenv("HSTACK_DOTENV", str(dotenv))
    monkeypatch.delenv("ADMIN_API_KEY")
    out = io.StringIO()

    ensure_admin_key(Console(out))
    key = load_settings().admin_api_key.get_secret_value()
    ensure_admin_key(Console(out))

    assert len(key) >= 32
    assert dotenv.read_text() == f"ADMIN_API_KEY={key}\n"
    assert stat.S_IMODE(dotenv.stat().st_mode) == 0o600
    assert out.getvalue().count("Generated an admin key") == 1


def test_the_gateway_gets_its_own_key_distinct_from_the_admin_key(tmp_path, monkeypatch):
    """GATEWAY_API_KEY is generated into `.env` like the admin key, once, and is not the admin key."""
    dotenv = tmp_path / ".env"
    monkeypatch.setenv("HSTACK_DOTENV", str(dotenv))
    monkeypatch.delenv("ADMIN_API_KEY")
    monkeypatch.delenv("GATEWAY_API_KEY")
    ensure_admin_key(Console(io.StringIO()))
    ensure_gateway_key(Console(io.StringIO()))
    ensure_gateway_key(Console(io.StringIO()))
    settings = load_settings()
    gateway = settings.gateway_api_key.get_secret_value()
    assert len(gateway) >= 32 and gateway != settings.admin_api_key.get_secret_value()
    assert dotenv.read_text().count("GATEWAY_API_KEY=") == 1 and stat.S_IMODE(dotenv.stat().st_mode) == 0o600


def test_an_existing_env_file_keeps_its_lines(tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    dotenv.write_text("LOG_LEVEL=DEBUG")
    monkeypatch.setenv("HSTACK_DOTENV", str(dotenv))
    monkeypatch.delenv("ADMIN_API_KEY")

    ensure_admin_key(Console(io.StringIO()))

    lines = dotenv.read_text().splitlines()
    assert lines[0] == "LOG_LEVEL=DEBUG" and lines[1].startswith("ADMIN_API_KEY=hsk_")


PASSWORD = "test-redis-password-5b1e"


def test_the_embedded_redis_keeps_queued_work_across_a_restart(tmp_data_dir):
    """DATA_DIR is a fresh 0700 folder: when the test runs as root the server still reaches its own folder
    after dropping to its unprivileged uid."""
    console = Console(io.StringIO())
    first = EmbeddedRedis(tmp_data_dir, dict(os.environ), console, password=PASSWORD)
    try:
        redis.Redis.from_url(first.start()).rpush("turns", "a queued task")
    finally:
        first.stop()
    assert not first.child.alive()

    second = EmbeddedRedis(tmp_data_dir, dict(os.environ), console, password=PASSWORD)
    try:
        assert redis.Redis.from_url(second.start()).lrange("turns", 0, -1) == [b"a queued task"]
    finally:
        second.stop()


def test_the_embedded_redis_wants_its_password_and_denies_config_to_the_app(tmp_data_dir):
    """Reproduction (the exploit): the embedded Redis had no password and ran as root, so any local process
    could `KEYS *`, read and forge every user's turn stream, and `CONFIG SET dir /etc/cron.d` + `SAVE` a
    root-owned file anywhere. Now a client without the password is refused, the app's own user may not run
    CONFIG, SAVE, FLUSHALL, SHUTDOWN or ACL, and the server is not root."""
    server = EmbeddedRedis(tmp_data_dir, dict(os.environ), Console(io.StringIO()), password=PASSWORD,
                           sandbox_uid=65534)
    try:
        url = server.start()
        anonymous = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
        with pytest.raises(redis.AuthenticationError):
            anonymous.keys("*")
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=server.port, password="guess", socket_timeout=5).ping()
        app = redis.Redis.from_url(url, socket_timeout=5)
        app.xadd("turn:t1:events", {"type": "message.delta"})
        assert app.keys("*") == [b"turn:t1:events"]
        for denied in (("CONFIG", "SET", "dir", "/tmp"), ("CONFIG", "GET", "dir"), ("SAVE",), ("BGSAVE",),
                       ("FLUSHALL",), ("FLUSHDB",), ("SHUTDOWN",), ("ACL", "LIST"), ("MODULE", "LIST"),
                       ("DEBUG", "SLEEP", "0"), ("REPLICAOF", "127.0.0.1", "1"), ("MONITOR",)):
            with pytest.raises(redis.exceptions.NoPermissionError):
                app.execute_command(*denied)
        uids = psutil.Process(server.child.pid).uids()
        if os.geteuid() == 0:
            assert uids.real != 0 and uids.effective != 0 and uids.real != 65534
    finally:
        server.stop()
    assert all(PASSWORD not in arg for arg in server.child.argv)  # only its hash is on the command line


def test_a_missing_redis_password_is_generated_into_the_env_file_once(tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    monkeypatch.setenv("HSTACK_DOTENV", str(dotenv))
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    out = io.StringIO()
    first = ensure_redis_password(Console(out))
    assert ensure_redis_password(Console(out)) == first and len(first) >= 32
    assert dotenv.read_text() == f"REDIS_PASSWORD={first}\n" and stat.S_IMODE(dotenv.stat().st_mode) == 0o600
    assert out.getvalue().count("REDIS_PASSWORD") == 1
    assert first in load_settings().secret_values()


def test_a_missing_bwrap_is_one_console_line_naming_the_install(monkeypatch):
    settings = load_settings()
    out = io.StringIO()
    monkeypatch.setattr(run_module.shutil, "which", lambda name: None)

    assert check_sandbox(settings.model_copy(update={"terminal_sandbox": "bwrap"}), Console(out)) is False
    assert check_sandbox(settings.model_copy(update={"terminal_sandbox": "none"}), Console(out)) is True

    assert out.getvalue().count("\n") == 1 and "apt-get install bubblewrap" in out.getvalue()


def test_the_install_line_for_root_has_no_sudo(monkeypatch):
    """A root install (Debian's /root, no sudo installed) was told to run `sudo apt-get install bubblewrap`."""
    out = io.StringIO()
    monkeypatch.setattr(run_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(run_module.os, "geteuid", lambda: 0)

    check_sandbox(load_settings().model_copy(update={"terminal_sandbox": "bwrap"}), Console(out))

    assert ": apt-get install bubblewrap" in out.getvalue() and "sudo" not in out.getvalue()


def test_an_installed_bwrap_says_nothing(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(run_module.shutil, "which", lambda name: "/usr/bin/bwrap")

    assert check_sandbox(load_settings().model_copy(update={"terminal_sandbox": "bwrap"}), Console(out)) is True
    assert out.getvalue() == ""
