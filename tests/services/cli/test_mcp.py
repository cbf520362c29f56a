"""`hstack mcp` against a live api: the owner's servers with the admin key, a user's own with --mine."""

from __future__ import annotations

import argparse
import io

import pytest

from services.cli import mcp as mcp_cmd
from services.cli.client import CliError
from tests.support.factories import make_user


def test_the_owner_and_a_user_add_list_and_remove_servers(hstack, db):
    user = make_user(db)
    code, out, _ = hstack("mcp", "add", "owner-fs", "--command", "npx", "-y", "@mcp/fs", "/workspace")
    assert code == 0 and out.startswith("owner-fs") and "starting" in out and "global" in out
    try:
        code, out, _ = hstack("mcp", "add", "cal", "--server-url", "https://cal.example/mcp", "--header",
                              "Authorization=Bearer tok", "--mine", "--key", user.key)
        assert code == 0 and "cal.example" in out and "tok" not in out
        code, out, _ = hstack("mcp", "list", "--mine", "--key", user.key)
        assert code == 0
        assert [line.split()[0] for line in out.splitlines()] == ["owner-fs", "cal"]
        assert hstack("mcp", "remove", "owner-fs", "--mine", "--key", user.key)[0] != 0  # the owner's
        removed = hstack("mcp", "remove", "cal", "--mine", "--key", user.key)
        assert removed[1] == "removed cal\n", removed
    finally:
        assert hstack("mcp", "remove", "owner-fs")[0] == 0
    assert "owner-fs" not in hstack("mcp", "list")[1]


def test_add_needs_exactly_one_of_a_command_and_a_url(hstack):
    code, _, err = hstack("mcp", "add", "neither")
    assert code != 0 and "--server-url" in err
    code, _, err = hstack("mcp", "add", "both", "--server-url", "https://x.example/mcp", "--command", "npx")
    assert code != 0 and "not both" in err


class FakeApi:
    """The two routes `test` uses: the health before, then what a worker recorded."""

    def __init__(self, answers: list[dict]) -> None:
        self.answers = answers

    def post(self, path, body=None):
        return {"name": "web", "state": "ready", "tools": 3, "scope": "user", "checked_at": 1.0}

    def get(self, path):
        return [self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]]


def test_test_waits_for_a_fresh_check_and_says_when_no_worker_answers():
    fresh = {"name": "web", "state": "failed", "tools": 0, "scope": "user", "checked_at": 2.0,
             "last_error": "ConnectError: refused", "url": "http://x/mcp"}
    same = {**fresh, "state": "ready", "checked_at": 1.0, "last_error": None}
    out = io.StringIO()
    args = argparse.Namespace(action="test", name="web")
    ticks = iter(range(1000))
    code = mcp_cmd.run(FakeApi([same, same, fresh]), args, out, clock=lambda: next(ticks) * 0.1, pause=lambda s: None)
    assert code == 1 and "failed" in out.getvalue() and "last error: ConnectError: refused" in out.getvalue()

    with pytest.raises(CliError, match="no worker answered"):
        mcp_cmd.run(FakeApi([same]), args, io.StringIO(), clock=lambda: next(ticks) * 10.0, pause=lambda s: None)
