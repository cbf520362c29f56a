"""Helpers for terminal tests: a DATA_DIR under a closed folder, and one-turn runs of the real tools."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import psutil
import pytest

from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.sandbox import Limits, Sandbox
from services.worker.tools.registry import ToolContext
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session

HAVE_BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP and not os.environ.get("CI"), reason="apt-get install bubblewrap")
SECRET = "hstack-terminal-secret-5d1e"


def closed_data_dir() -> Path:
    """A fresh DATA_DIR under a 0700 folder, as a root install's home folder is: the sandbox uid cannot pass it."""
    base = Path(tempfile.mkdtemp(prefix="hstack-terminal-"))
    base.chmod(0o700)
    data = base / "data"
    data.mkdir()
    return data


def calls(*specs: tuple[str, dict]) -> list[tuple[str, dict, str]]:
    """(tool, args) pairs as one assistant message's tool calls, ids c1, c2, …"""
    return [(name, args, f"c{n}") for n, (name, args) in enumerate(specs, start=1)]


def one_turn(db, runtime, user_id: str, *replies, text_in: str = "run it", session_id: str | None = None):
    """Run one turn of a fresh (or the given) session to its end; (turn, tool results by call id)."""
    session_id = session_id or make_session(db, user_id).id
    turn = post_turn(db, user_id, session_id, text_in)
    drain_session(runtime, session_id)
    finished = wait_finished(db, turn.id)
    return finished, tool_results(db, turn.id)


def tool_results(db, turn_id: str) -> dict[str, dict]:
    """Each tool message of the turn, parsed when it is JSON."""
    out = {}
    for message in sessions.turn_messages(db, turn_id):
        if message.role == "tool":
            try:
                out[message.tool_call_id] = json.loads(message.content)
            except json.JSONDecodeError:
                out[message.tool_call_id] = {"text": message.content}
    return out


def script_calls(model, *specs: tuple[str, dict], answer: str = "done") -> None:
    """The scripted model calls the tools once, then answers."""
    model.script(tool_call(calls(*specs)), text(answer))


def sleepers(marker: str) -> list[psutil.Process]:
    """Processes whose command line carries `marker` (a unique sleep length)."""
    return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] and marker in p.info["cmdline"]]


def limited(**limits) -> Sandbox:
    """A bwrap sandbox with these Limits (TERMINAL_* values)."""
    return Sandbox(limits=Limits(**limits))


def alice_context(settings, workspace: Path, **overrides) -> ToolContext:
    """A tool context for alice whose workspace is `workspace` (DATA_DIR/users/alice/workspace)."""
    return ToolContext(user_id="alice", session_id="ses_limits", turn_id="turn_limits",
                       settings=settings.model_copy(update={"data_dir": workspace.parents[2], **overrides}))
