"""Planning a tool batch: Hermes Agent's planner — parallel-safe runs, path overlap, barriers, order kept."""

from __future__ import annotations

import json
import posixpath
import random

import pytest

from shared.llm import ToolCall
from services.worker.agent.toolcalls import _overlaps, plan_segments, prepare
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolRegistry
from tests.services.worker.helpers import tool

REGISTRY = register_tools()  # this module's own registry of the built-in tools

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

REGISTRY_FOR_TESTS = ToolRegistry([
    tool("read_file", lambda c, a: "", read_only=True, path_arg="path"),
    tool("write_file", lambda c, a: "", path_arg="path"),
    tool("patch", lambda c, a: "", path_arg="path"),
    tool("search_files", lambda c, a: "", read_only=True),
    tool("memory", lambda c, a: ""),
    tool("terminal", lambda c, a: "", read_only=True, exclusive=True),  # exclusive wins over read_only
])


def prepared(*calls):
    """Calls given as a name or (name, path)."""
    out = []
    for n, call in enumerate(calls):
        name, path = (call, None) if isinstance(call, str) else call
        args = {} if path is None else {"path": path}
        out.append(prepare(ToolCall(f"c{n}", name, json.dumps(args)), REGISTRY_FOR_TESTS))
    return out


def plan(*calls, root=None) -> list[tuple[str, list[str]]]:
    segments = plan_segments(prepared(*calls), root)
    return [("par" if parallel else "seq",
             [p.call.name + (f":{p.args['path']}" if "path" in p.args else "") for p in group])
            for parallel, group in segments]


def test_reads_around_a_barrier_never_cross_it():
    assert plan("search_files", "terminal", "search_files", "search_files", "terminal", "search_files") == [
        ("seq", ["search_files", "terminal"]), ("par", ["search_files", "search_files"]),
        ("seq", ["terminal", "search_files"]),
    ]


def test_a_lone_read_joins_the_sequential_calls_next_to_it():
    assert plan("terminal", "search_files", "terminal") == [("seq", ["terminal", "search_files", "terminal"])]
    assert plan(("read_file", "a"), ("read_file", "b"), ("read_file", "c")) == \
        [("par", ["read_file:a", "read_file:b", "read_file:c"])]
    assert plan(("read_file", "a")) == [("seq", ["read_file:a"])]


def test_calls_on_the_same_path_are_ordered_and_different_paths_run_together():
    """read_file("a") beside patch("a") ran in one parallel group before; the read could see either version."""
    assert plan(("read_file", "a"), ("patch", "a")) == [("seq", ["read_file:a", "patch:a"])]
    assert plan(("write_file", "a"), ("write_file", "b"), ("patch", "c")) == \
        [("par", ["write_file:a", "write_file:b", "patch:c"])]
    assert plan(("write_file", "a"), ("read_file", "b"), ("patch", "./x/../a"), ("read_file", "c")) == [
        ("par", ["write_file:a", "read_file:b"]), ("par", ["patch:./x/../a", "read_file:c"]),
    ]


def test_a_folder_and_a_file_inside_it_overlap_as_in_the_anchor():
    assert plan(("read_file", "a"), ("read_file", "a/b.txt")) == [("seq", ["read_file:a", "read_file:a/b.txt"])]
    assert plan(("read_file", "ab"), ("write_file", "a/b")) == [("par", ["read_file:ab", "write_file:a/b"])]


def test_the_anchors_example_batch():
    assert plan(("read_file", "x"), "terminal", ("read_file", "y"), ("read_file", "z")) == [
        ("seq", ["read_file:x", "terminal"]), ("par", ["read_file:y", "read_file:z"]),
    ]


def test_a_symlink_alias_is_the_same_path_under_the_workspace(tmp_path):
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")

    assert plan(("write_file", "alias.txt"), ("patch", "real.txt"), root=tmp_path) == \
        [("seq", ["write_file:alias.txt", "patch:real.txt"])]
    assert plan(("write_file", "alias.txt"), ("patch", "other.txt"), root=tmp_path)[0][0] == "par"


def test_calls_without_a_usable_path_and_other_writers_are_barriers():
    assert plan(("write_file", "a"), "write_file", ("write_file", "b")) == \
        [("seq", ["write_file:a", "write_file", "write_file:b"])]
    assert plan(("read_file", "a"), "memory", ("read_file", "b"))[0] == ("seq", ["read_file:a", "memory", "read_file:b"])


def test_random_batches_never_put_overlapping_paths_or_an_exclusive_tool_in_a_parallel_group():
    rng = random.Random(10)
    names = ["read_file", "write_file", "patch", "search_files", "memory", "terminal"]
    paths = ["a", "a/b", "b", "./a", "c/../b", "c"]
    for _ in range(500):
        calls = [rng.choice(names) for _ in range(rng.randint(1, 9))]
        calls = [(name, rng.choice(paths)) if name in {"read_file", "write_file", "patch"} else name for name in calls]
        batch = prepared(*calls)
        segments = plan_segments(batch)
        assert [p for _, group in segments for p in group] == batch  # order kept, nothing lost
        for parallel, group in segments:
            if not parallel:
                continue
            assert len(group) > 1 and not any(p.tool.exclusive for p in group)
            touched = ["/" + p.args["path"] for p in group if "path" in p.args]
            touched = [posixpath.normpath(t) for t in touched]
            assert not any(_overlaps(a, b) for i, a in enumerate(touched) for b in touched[i + 1:])


def test_the_built_in_file_tools_say_which_path_they_touch():
    assert REGISTRY.get("read_file").path_arg == "path" and REGISTRY.get("read_file").read_only
    assert REGISTRY.get("write_file").path_arg == "path" and REGISTRY.get("patch").path_arg == "path"
    assert REGISTRY.get("search_files").path_arg is None and REGISTRY.get("search_files").read_only
