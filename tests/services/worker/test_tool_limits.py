"""No tool stalls the worker: model patterns run in linear time, cancel stops waiting for any tool, tools time out."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from shared.messaging import cancels
from shared.stores import sessions, turns
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import event_types, post_turn, tool, wait_finished, wait_until
from tests.support.factories import make_session, make_user

REPO = Path(__file__).resolve().parents[3]
EVIL_PATTERN = "(a+)+$"
EVIL_FILE = "a" * 29 + "!"  # 30 bytes: Python's backtracking `re` needs about 2^29 steps to give up
SEARCH_IN_A_CHILD = """
import sys
from pathlib import Path
from shared.config import get_settings
from services.worker.tools import files
from services.worker.tools.registry import ToolContext

settings = get_settings().model_copy(update={"data_dir": Path(sys.argv[1])})
ctx = ToolContext(user_id="usr_evil", session_id="ses_x", turn_id="turn_x", settings=settings)
(ctx.workspace / "evil.txt").write_text(sys.argv[2])
print(files.search_files(ctx, {"pattern": sys.argv[3]}))
"""


def test_a_backtracking_pattern_returns_promptly(tmp_data_dir):
    """Reproduction: search_files with `(a+)+$` over the 30-byte file 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'
    froze the whole worker for 21 s: Python's `re` backtracked while holding the GIL, so every user's turns
    waited and cancel did nothing.

    The search runs in a child process because a thread cannot be watched from inside the same process while
    `re` holds the GIL: even a bounded `join` only returns once the regex gives up.
    """
    # 40 bytes: a backtracking engine would need about 2^39 steps (hours), so a generous bound that allows
    # for a loaded machine's interpreter start-up still tells linear time from backtracking.
    child = subprocess.run([sys.executable, "-c", SEARCH_IN_A_CHILD, str(tmp_data_dir), "a" * 39 + "!", EVIL_PATTERN],
                           cwd=REPO, capture_output=True, text=True, timeout=90)

    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == f"No matches for {EVIL_PATTERN!r}."


def test_another_users_turn_completes_beside_a_backtracking_search(db, user, session, model, make_runtime, settings):
    """Reproduction: while one user's search_files ran `(a+)+$` over a 30-byte file, every other
    user's turn on the worker waited for it (21 s)."""
    workspace = Path(settings.data_dir) / "users" / user.id / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "evil.txt").write_text(EVIL_FILE)
    other = make_user(db)
    other_session = make_session(db, other.id)
    model.on("search my files", tool_call([("search_files", {"pattern": EVIL_PATTERN}, "c1")]), text("Nothing."))
    model.on("say hello", text("Hello."))
    searching = post_turn(db, user.id, session.id, "search my files")
    greeting = post_turn(db, other.id, other_session.id, "say hello")
    runtime = make_runtime()

    worker = threading.Thread(target=drain_session, args=(runtime, session.id), daemon=True)
    worker.start()
    drain_session(runtime, other_session.id)

    assert wait_finished(db, greeting.id).output == "Hello."
    assert wait_finished(db, searching.id).output == "Nothing."
    worker.join(10)
    [result] = [m.content for m in sessions.turn_messages(db, searching.id) if m.role == "tool"]
    assert result == f"No matches for {EVIL_PATTERN!r}."


class BlockingTool:
    """A tool that never returns on its own (it ignores ctx.cancelled) until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self, ctx, args):
        self.threads.append(threading.current_thread())
        self.started.set()
        self.release.wait()
        return "released at last"


def test_cancel_ends_a_turn_whose_tool_never_returns(db, user, session, model, make_runtime, redis_client):
    """Reproduction: cancel did nothing while a tool was running; the turn only noticed the cancel
    after the tool returned, so a tool that never returns kept the turn (and its worker thread) forever."""
    blocking = BlockingTool()
    runtime = make_runtime(tools=ToolRegistry([tool("block", blocking)]), turn_heartbeat_seconds=0.05)
    model.script(tool_call([("block", {}, "c1")]))
    turn = post_turn(db, user.id, session.id, "block forever")
    worker = threading.Thread(target=drain_session, args=(runtime, session.id), daemon=True)
    worker.start()
    try:
        assert blocking.started.wait(10)
        turns.request_cancel(db, user.id, turn.id)

        cancelled = wait_finished(db, turn.id)
        assert (cancelled.status, cancelled.error_code) == ("cancelled", "cancelled")
        assert blocking.threads[0].is_alive()  # the turn ended without waiting for the tool
        [result] = [m.content for m in sessions.turn_messages(db, turn.id) if m.role == "tool"]
        assert result.startswith("[cancelled] block was still running")
        wait_until(lambda: event_types(redis_client, turn.id)[-1] == "turn.cancelled",  # published after the row
                   what="turn.cancelled on the event stream")
        worker.join(10)
        assert not worker.is_alive() and len(model.requests) == 1
    finally:
        blocking.release.set()


def test_a_pushed_cancel_ends_the_turn_without_waiting_for_a_heartbeat(db, user, session, model, make_runtime, settings):
    """Reproduction: a worker learned of a cancel only on its next lease heartbeat (every
    TURN_HEARTBEAT_SECONDS), so cancel could not take effect within a second. The api now pushes the cancel
    through Redis; here heartbeats are an hour apart, so only the push can end the turn."""
    blocking = BlockingTool()
    runtime = make_runtime(tools=ToolRegistry([tool("block", blocking)]), turn_heartbeat_seconds=3600)
    model.script(tool_call([("block", {}, "c1")]))
    turn = post_turn(db, user.id, session.id, "block until cancelled")
    worker = threading.Thread(target=drain_session, args=(runtime, session.id), daemon=True)
    worker.start()
    try:
        assert blocking.started.wait(10)
        turns.request_cancel(db, user.id, turn.id)
        cancels.announce(runtime.redis, runtime.settings, turn.id)

        cancelled = wait_finished(db, turn.id)
        assert (cancelled.status, cancelled.error_code) == ("cancelled", "cancelled")
        assert blocking.threads[0].is_alive()
        worker.join(10)
    finally:
        blocking.release.set()


def test_a_tool_past_its_time_limit_becomes_an_error_and_the_turn_goes_on(db, user, session, model, make_runtime):
    """Reproduction: a tool call had no time limit; one that hung held its turn forever."""
    blocking = BlockingTool()
    registry = ToolRegistry([tool("block", blocking), tool("echo", lambda ctx, args: "echoed")])
    runtime = make_runtime(tools=registry, tool_timeout_seconds=0.5)
    model.script(tool_call([("block", {}, "c1"), ("echo", {}, "c2")]), text("Moved on."))
    turn = post_turn(db, user.id, session.id, "try the slow tool")
    worker = threading.Thread(target=drain_session, args=(runtime, session.id), daemon=True)
    worker.start()
    try:
        finished = wait_finished(db, turn.id)
        assert (finished.status, finished.output) == ("completed", "Moved on.")
        assert blocking.threads[0].is_alive()
        results = {m.tool_call_id: m.content for m in sessions.turn_messages(db, turn.id) if m.role == "tool"}
        assert json.loads(results["c1"])["error"].startswith("Tool 'block' did not finish within 0.5 s")
        assert results["c2"] == "echoed"
        worker.join(10)
    finally:
        blocking.release.set()


def test_a_cooperative_tool_sees_the_abandonment(db, user, session, model, make_runtime):
    """A tool abandoned at its time limit finds `ctx.cancelled()` true, so a loop that checks it can stop."""
    stopped = threading.Event()

    def polite(ctx, args):
        wait_until(ctx.cancelled, timeout=30, what="the call to be abandoned")
        stopped.set()
        return "stopped"

    runtime = make_runtime(tools=ToolRegistry([tool("polite", polite)]), tool_timeout_seconds=0.2)
    model.script(tool_call([("polite", {}, "c1")]), text("Done."))
    turn = post_turn(db, user.id, session.id, "be polite")

    drain_session(runtime, session.id)

    assert wait_finished(db, turn.id).output == "Done."
    assert stopped.wait(10)
