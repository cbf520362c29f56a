"""Planning a tool batch: read-only runs in parallel, every other call a barrier, order kept."""

from __future__ import annotations

from shared.llm import ToolCall
from services.worker.agent.toolcalls import plan_segments, prepare
from services.worker.tools.registry import ToolRegistry
from tests.services.worker.helpers import tool

REGISTRY = ToolRegistry([
    tool("read_file", lambda c, a: "", read_only=True),
    tool("search_files", lambda c, a: "", read_only=True),
    tool("terminal", lambda c, a: ""),
])


def plan(*names: str) -> list[tuple[str, list[str]]]:
    prepared = [prepare(ToolCall(f"c{n}", name, "{}"), REGISTRY) for n, name in enumerate(names)]
    return [("par" if parallel else "seq", [p.call.name for p in group]) for parallel, group in plan_segments(prepared)]


def test_reads_around_a_barrier_never_cross_it():
    assert plan("read_file", "terminal", "read_file", "search_files", "terminal", "read_file") == [
        ("seq", ["read_file", "terminal"]), ("par", ["read_file", "search_files"]), ("seq", ["terminal", "read_file"]),
    ]


def test_a_lone_read_joins_the_sequential_calls_next_to_it():
    assert plan("terminal", "read_file", "terminal") == [("seq", ["terminal", "read_file", "terminal"])]
    assert plan("read_file", "read_file", "read_file") == [("par", ["read_file"] * 3)]
    assert plan("read_file") == [("seq", ["read_file"])]
