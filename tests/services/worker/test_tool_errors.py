"""What a failing tool tells the model: workspace-relative paths, never DATA_DIR, a server path or a user id."""

from __future__ import annotations

import json
from pathlib import Path

from shared.security.paths import private_paths_hidden
from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, tool, wait_finished

REGISTRY = register_tools()  # this module's own registry of the built-in tools


def _errors_of(db, turn_id: str) -> dict[str, str]:
    return {m.tool_call_id: json.loads(m.content)["error"]
            for m in sessions.turn_messages(db, turn_id) if m.role == "tool"}


def test_tool_errors_show_workspace_relative_paths_only(db, user, session, model, make_runtime, settings):
    """Reproduction: write_file into 'a.txt/b.txt' where a.txt is a file answered the model
    "Tool 'write_file' failed: [Errno 17] File exists: '/…/data/users/usr_…/workspace/a.txt'", showing
    the server's DATA_DIR and the user's id; any OSError a tool raised passed its absolute path through."""
    data_dir = Path(settings.data_dir)
    memories = data_dir / "users" / user.id / "memories" / "absent.md"

    def open_outside(ctx, args):
        return memories.read_text()

    def library_failure(ctx, args):
        raise RuntimeError(f"cannot load /usr/lib/python3/secret.py for {ctx.user_id} under {data_dir.resolve()}")

    registry = ToolRegistry([REGISTRY.get("write_file"), REGISTRY.get("read_file"),
                             tool("open_outside", open_outside), tool("library_failure", library_failure)])
    workspace = data_dir / "users" / user.id / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "a.txt").write_text("a file, not a folder")
    (workspace / "folder").mkdir(exist_ok=True)
    model.script(tool_call([
        ("write_file", {"path": "a.txt/b.txt", "content": "x"}, "c1"),
        ("read_file", {"path": "missing.txt"}, "c2"),
        ("write_file", {"path": "folder", "content": "x"}, "c3"),
        ("open_outside", {}, "c4"),
        ("library_failure", {}, "c5"),
    ]), text("Reported."))
    turn = post_turn(db, user.id, session.id, "break things")

    drain_session(make_runtime(tools=registry), session.id)

    assert wait_finished(db, turn.id).output == "Reported."
    errors = _errors_of(db, turn.id)
    assert set(errors) == {"c1", "c2", "c3", "c4", "c5"}
    for message in errors.values():
        assert str(data_dir) not in message and str(data_dir.resolve()) not in message
        assert user.id not in message and "/usr/lib" not in message
    assert errors["c1"] == "a.txt/b.txt: a part of it is a file, not a folder."
    assert errors["c2"] == "No such file or directory: missing.txt"
    assert errors["c3"] == "folder is a directory."
    assert "'[your files]/memories/absent.md'" in errors["c4"]
    assert errors["c5"] == "Tool 'library_failure' failed: cannot load [path] for [user] under [data]"


def test_hiding_paths_keeps_workspace_names_readable(tmp_path):
    data_dir = tmp_path / "data"
    workspace = data_dir / "users" / "usr_1" / "workspace"
    hide = lambda message: private_paths_hidden(message, data_dir=data_dir, user_id="usr_1")  # noqa: E731

    assert hide(f"No such file: '{workspace}/notes/a.md'") == "No such file: 'notes/a.md'"
    assert hide(f"Cannot list {workspace}") == "Cannot list ."
    assert hide(f"Locked: {data_dir}/users/usr_1/skills/x/SKILL.md") == "Locked: [your files]/skills/x/SKILL.md"
    assert hide(f"Database {data_dir}/hstack.db is busy") == "Database [data]/hstack.db is busy"
    assert hide("Absolute paths are not allowed: '/etc/passwd'") == "Absolute paths are not allowed: '/etc/passwd'"
