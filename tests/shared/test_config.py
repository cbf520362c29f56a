"""Settings: the environment overrides `.env`; secrets are checked outside development."""

from __future__ import annotations

import pytest

from shared.config import load_settings

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_environment_wins_over_dotenv_and_dotenv_fills_gaps(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("LLM_MODEL=from-dotenv\nAPI_PORT=9000\n")
    monkeypatch.setenv("HSTACK_DOTENV", str(env_file))
    monkeypatch.setenv("LLM_MODEL", "from-environment")
    monkeypatch.delenv("API_PORT", raising=False)
    settings = load_settings()
    assert settings.llm_model == "from-environment"
    assert settings.api_port == 9000


def test_the_database_defaults_to_sqlite_under_data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = load_settings(DATA_DIR=str(tmp_path))
    assert settings.sqlalchemy_url == f"sqlite:///{tmp_path / 'hstack.db'}"


@pytest.mark.parametrize("key", ["", "change-me", "short"])
def test_production_refuses_a_missing_or_placeholder_admin_key(key):
    settings = load_settings(HSTACK_ENV="production", ADMIN_API_KEY=key)
    with pytest.raises(RuntimeError, match="ADMIN_API_KEY"):
        settings.check_secrets()


@pytest.mark.parametrize("token", ["change-me", "short"])
def test_production_refuses_a_placeholder_metrics_token(token):
    """A METRICS_TOKEN opens /metrics, so it is held to the admin key's standard; empty means unset."""
    strong = "a-strong-admin-key-0123456789"
    assert load_settings(HSTACK_ENV="production", ADMIN_API_KEY=strong, METRICS_TOKEN="").check_secrets() is None
    with pytest.raises(RuntimeError, match="METRICS_TOKEN"):
        load_settings(HSTACK_ENV="production", ADMIN_API_KEY=strong, METRICS_TOKEN=token).check_secrets()


def test_an_unknown_approval_mode_is_refused():
    with pytest.raises(ValueError):
        load_settings(APPROVAL_MODE="yolo")
