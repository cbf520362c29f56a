"""Workspace file tools: what they show, their caps, and the paths they refuse."""

from __future__ import annotations

import json
import os

import pytest

from shared.errors import InvalidInput, NotFound
from shared.security.paths import resolve_inside
from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.tools import file_search, files
from services.worker.tools.registry import ToolContext
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished


@pytest.fixture
def ctx(settings, tmp_data_dir):
    return ToolContext(user_id="usr_files", session_id="ses_x", turn_id="turn_x",
                       settings=settings.model_copy(update={"data_dir": tmp_data_dir}))


def test_written_files_read_back_with_line_numbers(ctx):
    result = files.write_file(ctx, {"path": "notes/today.md", "content": "first\nsecond\n"})

    assert result == {"path": "notes/today.md", "bytes_written": 13}
    assert files.read_file(ctx, {"path": "notes/today.md"}) == "     1|first\n     2|second"
    assert os.listdir(ctx.workspace / "notes") == ["today.md"]  # no temp file left behind
    assert ctx.workspace == ctx.settings.data_dir / "users" / "usr_files" / "workspace"


def test_reading_pages_and_caps_long_output(ctx):
    files.write_file(ctx, {"path": "long.txt", "content": "\n".join(f"line {n}" for n in range(1, 3001))})
    files.write_file(ctx, {"path": "wide.txt", "content": "x" * 5000})
    files.write_file(ctx, {"path": "huge.txt", "content": "\n".join("y" * 1500 for _ in range(100))})

    page = files.read_file(ctx, {"path": "long.txt", "offset": 2999, "limit": 5})
    first = files.read_file(ctx, {"path": "long.txt"})
    wide = files.read_file(ctx, {"path": "wide.txt"})
    huge = files.read_file(ctx, {"path": "huge.txt"})

    assert page == "  2999|line 2999\n  3000|line 3000"
    assert first.endswith("[Showing lines 1-2000 of 3000. Use offset=2001 to read on.]")
    assert wide.endswith("x … [line truncated]") and len(wide) < 2100
    assert len(huge) <= 100_200 and "[Output cut at 100,000 characters after line" in huge
    past_end = files.read_file(ctx, {"path": "long.txt", "offset": 9000})
    assert past_end == "long.txt has 3000 lines; offset 9000 is past the end."


def test_listing_and_searching(ctx):
    files.write_file(ctx, {"path": "a.md", "content": "alpha\nTODO: tea\n"})
    files.write_file(ctx, {"path": "src/b.py", "content": "print('TODO (later)')\n"})

    assert files.list_files(ctx, {}) == "a.md\nsrc/\nsrc/b.py"
    assert files.list_files(ctx, {"pattern": "*.py"}) == "src/b.py"
    assert files.search_files(ctx, {"pattern": r"TODO:\s\w+"}) == "a.md:2: TODO: tea"
    found, note = files.search_files(ctx, {"pattern": "TODO (later"}).split("\n")
    assert found == "src/b.py:1: print('TODO (later)')" and note.startswith("[Searched as plain text")
    assert files.search_files(ctx, {"pattern": "absent"}) == "No matches for 'absent'."


@pytest.mark.parametrize("attack", ["../x", "../../hstack.db", "/etc/passwd", "~/secrets", "notes/../../x"])
def test_paths_outside_the_workspace_are_refused(ctx, attack):
    for call in (lambda: files.read_file(ctx, {"path": attack}),
                 lambda: files.write_file(ctx, {"path": attack, "content": "pwned"}),
                 lambda: files.list_files(ctx, {"path": attack})):
        with pytest.raises(InvalidInput):
            call()


def test_every_symlink_is_refused_whether_it_leads_out_or_stays_inside(ctx, tmp_path):
    """File tools never follow a link: one checked now may be swapped for another before it is opened."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (ctx.workspace / "escape").symlink_to(outside)
    (ctx.workspace / "real.txt").write_text("fine")
    (ctx.workspace / "alias.txt").symlink_to(ctx.workspace / "real.txt")

    for path in ("escape/secret.txt", "alias.txt"):
        with pytest.raises(InvalidInput, match="symbolic link or passes through one; file tools do not follow links"):
            files.read_file(ctx, {"path": path})
        with pytest.raises(InvalidInput, match="do not follow links"):
            files.write_file(ctx, {"path": path, "content": "x"})
    with pytest.raises(InvalidInput, match="do not follow links"):
        files.write_file(ctx, {"path": "escape/new.txt", "content": "x"})
    assert files.list_files(ctx, {}) == "real.txt"
    assert "top secret" not in files.search_files(ctx, {"pattern": "secret"})
    assert not (outside / "new.txt").exists() and (outside / "secret.txt").read_text() == "top secret"
    assert (ctx.workspace / "alias.txt").is_symlink() and (ctx.workspace / "real.txt").read_text() == "fine"


def test_inner_dot_dot_is_fine_and_missing_files_are_named(ctx, tmp_path):
    assert resolve_inside(tmp_path, "a/../b.txt") == (tmp_path / "b.txt").resolve()
    with pytest.raises(InvalidInput):
        resolve_inside(tmp_path, "")
    with pytest.raises(NotFound, match="gone.txt"):
        files.read_file(ctx, {"path": "gone.txt"})


def test_the_model_gets_a_refusal_it_can_read(db, user, session, model, make_runtime):
    model.script(tool_call([("read_file", {"path": "/etc/passwd"}, "c1"), ("read_file", {"path": "gone.txt"}, "c2")]),
                 text("I cannot read that."))
    turn = post_turn(db, user.id, session.id, "show me /etc/passwd")

    drain_session(make_runtime(), session.id)

    assert wait_finished(db, turn.id).output == "I cannot read that."
    results = [json.loads(m.content)["error"] for m in sessions.turn_messages(db, turn.id) if m.role == "tool"]
    assert results[0].startswith("Absolute paths are not allowed")
    assert results[1] == "No such file or directory: gone.txt"


def test_globs_match_names_like_fnmatch_without_pythons_regex_engine(ctx):
    for name in ("a.md", "b.py", "c.txt", "]odd", "x[1].md"):
        files.write_file(ctx, {"path": name, "content": "x"})

    assert files.list_files(ctx, {"pattern": "[!a]*.md"}) == "x[1].md"
    assert files.list_files(ctx, {"pattern": "?.py"}) == "b.py"
    assert files.list_files(ctx, {"pattern": "[]]*"}) == "]odd"
    assert files.list_files(ctx, {"pattern": "*" * 40 + "z"}) == "No entries match."
    with pytest.raises(InvalidInput, match="limit"):
        files.list_files(ctx, {"pattern": "*" * 300})


def test_patterns_re2_cannot_run_are_searched_as_plain_text_with_a_note(ctx):
    """Backreferences and lookaround have no linear-time match: they never reach Python's `re`."""
    files.write_file(ctx, {"path": "a.txt", "content": "abab\nliteral (a)\\1 here\n"})

    found, note = files.search_files(ctx, {"pattern": r"(a)\1"}).split("\n")

    assert found == r"a.txt:2: literal (a)\1 here"
    assert note.startswith("[Searched as plain text") and "Backreferences" in note


def test_searches_stop_at_their_deadline_or_cancel_with_what_they_found(ctx, monkeypatch):
    files.write_file(ctx, {"path": "a.txt", "content": "needle\n"})
    cancelled = ToolContext(user_id=ctx.user_id, session_id="ses_x", turn_id="turn_x", settings=ctx.settings,
                            cancelled=lambda: True)

    assert files.search_files(cancelled, {"pattern": "needle"}).endswith("[Search stopped: the turn was cancelled.]")
    monkeypatch.setattr(file_search, "SEARCH_DEADLINE_SECONDS", 0.0)
    assert "[Search stopped after 0 s" in files.search_files(ctx, {"pattern": "needle"})


def test_searches_skip_large_files_and_cap_output(ctx, monkeypatch):
    files.write_file(ctx, {"path": "big.txt", "content": "needle\n" * 100})
    files.write_file(ctx, {"path": "small.txt", "content": "needle " + "x" * 250 + "\n"})
    monkeypatch.setattr(file_search, "MAX_SEARCH_FILE_BYTES", 500)
    monkeypatch.setattr(file_search, "MAX_SEARCH_OUTPUT_CHARS", 100)

    result = files.search_files(ctx, {"pattern": "needle"})

    assert result.startswith("No matches") and "[Output cut at 100 characters" in result
    assert "[Skipped 1 file(s) over 500 bytes.]" in result
    with pytest.raises(InvalidInput, match="limit"):
        files.search_files(ctx, {"pattern": "a" * 1001})


def test_a_path_longer_than_the_kernel_reads_is_refused_before_anything_is_made(ctx):
    """Reproduction: write_file('a/' * 2500 + 'f') made 2,500 nested folders one by one (3.7 s) and wrote a
    file that read_file then refused as too long."""
    with pytest.raises(InvalidInput, match="too long"):
        files.write_file(ctx, {"path": "a/" * 2500 + "f", "content": "x"})
    assert not (ctx.workspace / "a").exists()


def test_a_fifo_or_socket_is_refused_at_once_instead_of_holding_the_tool(ctx):
    """Reproduction: `mkfifo pipe` in the workspace, then read_file('pipe'): the tool opened it to sniff for
    binary content and blocked until a writer came, holding its thread for good."""
    import socket
    import threading

    os.mkfifo(ctx.workspace / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(ctx.workspace / "sock"))
        answers = {}

        def read_both():
            for name in ("pipe", "sock"):
                try:
                    files.read_file(ctx, {"path": name})
                except InvalidInput as exc:
                    answers[name] = exc.message

        reader = threading.Thread(target=read_both, daemon=True)
        reader.start()
        reader.join(10)

    assert answers == {"pipe": "pipe is not a regular file.", "sock": "sock is not a regular file."}
