"""A live api for the CLI tests, and `hstack` invoked as a user would (argv in, stdout out)."""

from __future__ import annotations

import pytest

from services.cli.main import main
from tests.support.live import serve_api


@pytest.fixture(scope="module")
def api_url():
    with serve_api() as url:
        yield url


@pytest.fixture
def hstack(api_url, monkeypatch, capsys):
    """Run `hstack ARGS…` against the live api; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("HSTACK_URL", api_url)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
