"""Pieces of `hstack run` that must hold on a fresh machine: the admin key, the embedded Redis."""

from __future__ import annotations

import io
import os
import stat

import pytest
import redis

from services.cli.children import Console
from services.cli.redis_embedded import EmbeddedRedis
from services.cli import run as run_module
from services.cli.run import check_sandbox, ensure_admin_key, ensure_gateway_key
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


def test_the_embedded_redis_keeps_queued_work_across_a_restart(tmp_data_dir):
    console = Console(io.StringIO())
    first = EmbeddedRedis(tmp_data_dir, dict(os.environ), console)
    try:
        redis.Redis.from_url(first.start()).rpush("turns", "a queued task")
    finally:
        first.stop()
    assert not first.child.alive()

    second = EmbeddedRedis(tmp_data_dir, dict(os.environ), console)
    try:
        assert redis.Redis.from_url(second.start()).lrange("turns", 0, -1) == [b"a queued task"]
    finally:
        second.stop()


def test_a_missing_bwrap_is_one_console_line_naming_the_install(monkeypatch):
    settings = load_settings()
    out = io.StringIO()
    monkeypatch.setattr(run_module.shutil, "which", lambda name: None)

    assert check_sandbox(settings.model_copy(update={"terminal_sandbox": "bwrap"}), Console(out)) is False
    assert check_sandbox(settings.model_copy(update={"terminal_sandbox": "none"}), Console(out)) is True

    assert out.getvalue().count("\n") == 1 and "apt-get install bubblewrap" in out.getvalue()


def test_an_installed_bwrap_says_nothing(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(run_module.shutil, "which", lambda name: "/usr/bin/bwrap")

    assert check_sandbox(load_settings().model_copy(update={"terminal_sandbox": "bwrap"}), Console(out)) is True
    assert out.getvalue() == ""
