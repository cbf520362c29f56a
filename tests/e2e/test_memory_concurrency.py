"""Two real processes, each making 200 concurrent adds to one user's MEMORY.md: nothing torn, nothing lost."""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shared.stores.memory import MemoryRequest, MemoryStore
from shared.files.memory import read_raw, render, split_entries

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

ADDS_PER_PROCESS = 200
THREADS_PER_PROCESS = 32
ENTRY = re.compile(r"^[AB]-\d{3} payload-x{20}$")


def entry(tag: str, number: int) -> str:
    return f"{tag}-{number:03d} payload-" + "x" * 20


def add_concurrently(data_dir: str, user_id: str, limit: int, tag: str, start, results) -> None:
    """One writer process: wait for the start signal, then 200 adds from a pool of threads."""
    store = MemoryStore(Path(data_dir), user_id, {"memory": limit, "user": limit})
    start.wait(60)

    def add(number: int) -> tuple[str, str | None]:
        content = entry(tag, number)
        return content, store.write(MemoryRequest(target="memory", action="add", content=content)).code

    with ThreadPoolExecutor(THREADS_PER_PROCESS) as pool:
        outcomes = list(pool.map(add, range(ADDS_PER_PROCESS)))
    results.put((tag, os.getpid(), outcomes))


class Reader(threading.Thread):
    """Reads the file without a lock, as the prompt does, the whole time the writers run."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.reads = 0
        self.torn: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            raw = read_raw(self.path)
            entries = split_entries(raw)
            if render(entries) != raw or not all(ENTRY.match(e) for e in entries):
                self.torn.append(raw)
            self.reads += 1


def run_two_writers(data_dir: Path, user_id: str, limit: int) -> tuple[MemoryStore, list[tuple], Reader]:
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=add_concurrently, args=(str(data_dir), user_id, limit, tag, start, results))
             for tag in "AB"]
    for proc in procs:
        proc.start()
    store = MemoryStore(data_dir, user_id, {"memory": limit, "user": limit})
    reader = Reader(store.path("memory"))
    reader.start()
    start.set()
    try:
        reports = [results.get(timeout=120) for _ in procs]
    finally:
        for proc in procs:
            proc.join(30)
        reader.stop.set()
        reader.join(10)
    assert all(proc.exitcode == 0 for proc in procs)
    assert len({pid for _, pid, _ in reports}) == 2  # two processes really wrote
    return store, [outcome for _, _, outcomes in reports for outcome in outcomes], reader


def assert_intact(store: MemoryStore, reader: Reader) -> None:
    raw = read_raw(store.path("memory"))
    assert render(split_entries(raw)) == raw
    assert reader.reads > 0 and reader.torn == []
    assert not list(store.directory.glob("MEMORY.md.bak.*")) and not list(store.directory.glob(".mem_*.tmp"))


def test_400_concurrent_adds_from_two_processes_all_land(tmp_data_dir):
    store, outcomes, reader = run_two_writers(tmp_data_dir, "usr_concurrent", limit=1_000_000)

    assert [code for _, code in outcomes] == [None] * 2 * ADDS_PER_PROCESS
    assert sorted(store.entries("memory")) == sorted(entry(t, n) for t in "AB" for n in range(ADDS_PER_PROCESS))
    assert_intact(store, reader)


def test_when_the_limit_cuts_exactly_the_reported_successes_are_kept(tmp_data_dir):
    limit = 5_000
    store, outcomes, reader = run_two_writers(tmp_data_dir, "usr_cut", limit=limit)

    saved = {content for content, code in outcomes if code is None}
    refused = {code for _, code in outcomes if code is not None}
    assert refused == {"memory_over_limit"}
    assert set(store.entries("memory")) == saved and len(store.entries("memory")) == len(saved)
    assert limit - len("\n§\n" + entry("A", 0)) < len(render(store.entries("memory"))) <= limit
    assert_intact(store, reader)
