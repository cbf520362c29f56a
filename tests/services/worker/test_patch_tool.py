"""The patch tool: fuzzy find-and-replace on workspace files, its diff, its refusals and its bounds."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from shared.errors import HermesError, InvalidInput, NotFound
from shared.llm import ToolCall
from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.agent.toolcalls import ToolBatch
from services.worker.tools import patch as patch_tool
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolContext
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished

REGISTRY = register_tools()  # this module's own registry of the built-in tools

CODE = "def total(items):\n    s = 0\n    for x in items:\n        s += x\n    return s\n"


@pytest.fixture
def ctx(settings, tmp_data_dir):
    return ToolContext(user_id="usr_patch", session_id="ses_x", turn_id="turn_x",
                       settings=settings.model_copy(update={"data_dir": tmp_data_dir}))


def put(ctx, name: str, content: str | bytes) -> Path:
    path = ctx.workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def patch(ctx, path="code.py", **args):
    return patch_tool.patch(ctx, {"path": path, **args})


def code_of(call) -> str:
    with pytest.raises(HermesError) as caught:
        call()
    return caught.value.code


def test_an_exact_match_is_replaced_and_the_result_shows_the_diff(ctx):
    file = put(ctx, "src/code.py", CODE)

    result = patch(ctx, "src/code.py", old_string="s += x", new_string="s += 2 * x")

    assert file.read_text() == CODE.replace("s += x", "s += 2 * x")
    assert result["success"] and result["path"] == "src/code.py" and result["replacements"] == 1
    assert result["strategy"] == "exact"
    assert result["diff"].startswith("--- a/src/code.py\n+++ b/src/code.py\n@@ -1,5 +1,5 @@\n")
    assert "-        s += x\n+        s += 2 * x\n" in result["diff"]
    assert os.listdir(file.parent) == ["code.py"]  # the atomic write left no temp file


def test_trailing_whitespace_and_indentation_drift_still_match(ctx):
    file = put(ctx, "code.py", CODE)

    trailing = patch(ctx, old_string="    s = 0  \n    for x in items:   ", new_string="    s = 1\n    for x in items:")
    indented = patch(ctx, old_string="for x in items:\n  s += x", new_string="for x in items:\n  if x:\n    s += x")

    assert trailing["strategy"] == indented["strategy"] == "line_trimmed"
    assert file.read_text() == ("def total(items):\n    s = 1\n    for x in items:\n        if x:\n"
                                "            s += x\n    return s\n")


def test_several_matches_are_refused_with_the_count_and_lines(ctx):
    file = put(ctx, "code.py", "a = 1\nb = 2\na = 1\n")

    with pytest.raises(InvalidInput) as caught:
        patch(ctx, old_string="a = 1", new_string="a = 9")

    assert caught.value.code == "patch_ambiguous"
    assert caught.value.message.startswith("code.py: Found 2 matches") and "L3: a = 1" in caught.value.message
    assert file.read_text() == "a = 1\nb = 2\na = 1\n"
    assert patch(ctx, old_string="a = 1", new_string="a = 9", replace_all=True)["replacements"] == 2
    assert file.read_text() == "a = 9\nb = 2\na = 9\n"


def test_no_match_shows_the_closest_lines(ctx):
    put(ctx, "code.py", CODE)

    with pytest.raises(InvalidInput) as caught:
        patch(ctx, old_string="    for x in things:\n        t -= 1", new_string="pass")

    assert caught.value.code == "patch_no_match"
    assert "Closest lines:" in caught.value.message and "     3|    for x in items:" in caught.value.message


def test_an_edit_already_in_the_file_is_a_no_op(ctx):
    file = put(ctx, "code.py", CODE.replace("s = 0", "s = 100 # start"))

    result = patch(ctx, old_string="s = 0", new_string="s = 100 # start")

    assert result["replacements"] == 0 and "already" in result["note"]
    assert file.read_text() == CODE.replace("s = 0", "s = 100 # start")


def test_permissions_a_byte_order_mark_and_crlf_endings_are_kept(ctx):
    file = put(ctx, "run.sh", "\ufeffecho one\r\necho two\r\n".encode())
    file.chmod(0o755)

    patch(ctx, "run.sh", old_string="echo one\necho two", new_string="echo 1\necho 2")

    assert file.read_bytes() == "\ufeffecho 1\r\necho 2\r\n".encode()
    assert stat.S_IMODE(file.stat().st_mode) == 0o755


@pytest.mark.parametrize("attack", ["../x.py", "../../hstack.db", "/etc/passwd", "~/x", "a/../../x"])
def test_paths_outside_the_workspace_are_refused(ctx, attack):
    with pytest.raises(InvalidInput):
        patch(ctx, attack, old_string="a", new_string="b")


def test_a_symlink_is_refused_whether_it_leads_out_or_stays_inside(ctx, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret = 1\n")
    (ctx.workspace / "escape.txt").symlink_to(outside)
    real = put(ctx, "real.txt", "value = 1\n")
    (ctx.workspace / "alias.txt").symlink_to(real)

    with pytest.raises(InvalidInput, match="do not follow links"):
        patch(ctx, "escape.txt", old_string="secret = 1", new_string="secret = 2")
    with pytest.raises(InvalidInput, match="do not follow links"):
        patch(ctx, "alias.txt", old_string="value = 1", new_string="value = 2")

    assert outside.read_text() == "secret = 1\n" and real.read_text() == "value = 1\n"
    assert (ctx.workspace / "alias.txt").is_symlink()


def test_sizes_and_kinds_of_file_are_bounded(ctx):
    put(ctx, "big.txt", b"x" * (patch_tool.MAX_PATCH_FILE_BYTES + 1))
    put(ctx, "blob.bin", b"\x00\x01abc")
    put(ctx, "latin.txt", "caf\u00e9\n".encode("latin-1"))
    put(ctx, "small.txt", "abc\n")
    (ctx.workspace / "folder").mkdir()

    assert code_of(lambda: patch(ctx, "big.txt", old_string="x", new_string="y")) == "file_too_large"
    assert code_of(lambda: patch(ctx, "small.txt", old_string="a" * 100_001, new_string="b")) \
        == "patch_argument_too_large"
    assert "binary" in _message(lambda: patch(ctx, "blob.bin", old_string="abc", new_string="x"))
    assert "UTF-8" in _message(lambda: patch(ctx, "latin.txt", old_string="caf", new_string="x"))
    assert "is a directory" in _message(lambda: patch(ctx, "folder", old_string="a", new_string="b"))
    with pytest.raises(NotFound):
        patch(ctx, "gone.txt", old_string="a", new_string="b")
    assert code_of(lambda: patch(ctx, "small.txt", old_string="", new_string="b")) == "patch_empty"
    assert code_of(lambda: patch(ctx, "small.txt", old_string="abc", new_string="abc")) == "patch_identical"


def _message(call) -> str:
    with pytest.raises(HermesError) as caught:
        call()
    return caught.value.message


def test_a_cancelled_turn_stops_the_match_and_leaves_the_file(ctx):
    file = put(ctx, "many.txt", "a\n" * 100_000)
    cancelled = ToolContext(user_id=ctx.user_id, session_id="ses_x", turn_id="turn_x", settings=ctx.settings,
                            cancelled=lambda: True)

    assert patch(cancelled, "many.txt", old_string="a\na\nb", new_string="c").startswith("[patch stopped")
    assert file.read_text() == "a\n" * 100_000


def test_errors_reach_the_model_without_server_paths(ctx):
    put(ctx, "code.py", CODE)
    batch = ToolBatch(REGISTRY, ctx, lambda: False)
    calls = [ToolCall("c1", "patch", json.dumps({"path": "code.py", "old_string": "nope nope", "new_string": "x"})),
             ToolCall("c2", "patch", json.dumps({"path": "../x", "old_string": "a", "new_string": "b"}))]

    results = batch.run(calls, lambda r: None)

    errors = [json.loads(r.content)["error"] for r in results]
    assert errors[0].startswith("code.py: Could not find old_string")
    assert "outside the workspace" in errors[1]
    assert not any(str(ctx.settings.data_dir) in e for e in errors)


def test_a_turn_patches_a_file_and_reads_it_before_and_after_in_one_batch(db, user, session, model, make_runtime,
                                                                          settings):
    """read_file, patch and read_file of one path in one assistant message run in call order, never together."""
    workspace = Path(settings.data_dir) / "users" / user.id / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "app.py").write_text(CODE)
    model.script(
        tool_call([
            ("read_file", {"path": "app.py"}, "c1"),
            ("patch", {"path": "app.py", "old_string": "for x in items:\n  s += x", "new_string":
                       "for x in items:\n  s += x * x"}, "c2"),
            ("read_file", {"path": "app.py", "offset": 1}, "c3"),
        ]),
        text("Squared."),
    )
    turn = post_turn(db, user.id, session.id, "square the items")

    drain_session(make_runtime(), session.id)

    assert wait_finished(db, turn.id).output == "Squared."
    results = {m.tool_call_id: m.content for m in sessions.turn_messages(db, turn.id) if m.role == "tool"}
    assert "     4|        s += x\n" in results["c1"]
    patched = json.loads(results["c2"])
    assert patched["success"] and patched["strategy"] == "line_trimmed"
    assert "-        s += x\n+        s += x * x\n" in patched["diff"]
    assert "     4|        s += x * x\n" in results["c3"]
    assert (workspace / "app.py").read_text() == CODE.replace("s += x", "s += x * x")
