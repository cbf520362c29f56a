"""`python -m bench.memory`: memory writes per second under 4 concurrent writers, and the system prompt
size with both memory stores full. Prints figures, asserts nothing.

Writers are real processes sharing one user's MEMORY.md (every write: scan, flock, re-read, fsync'd
atomic replace), then the same with each writer on its own user, which shows what the lock costs.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from shared.config import load_settings
from shared.stores.memory import MemoryRequest, MemoryStore

WRITERS = 4
WRITES_PER_WRITER = 250
PREFILL = ["Project builds with `make`; tests run with `make test`.", "Deploys go through staging first.",
           "The API listens on port 8642 behind nginx.", "Logs are JSON lines under /var/log/app/."]


def writer(data_dir: str, user_id: str, tag: str, ready) -> None:
    """Add and remove its own entries in turn, so the file stays the size of a real store."""
    store = MemoryStore(Path(data_dir), user_id, {"memory": 2200, "user": 1375})
    ready.wait(60)
    for number in range(WRITES_PER_WRITER // 2):
        content = f"Writer {tag} note {number}: the staging database is refreshed nightly."
        store.write(MemoryRequest(target="memory", action="add", content=content))
        store.write(MemoryRequest(target="memory", action="remove", old_text=f"Writer {tag} note {number}:"))


def writes_per_second(data_dir: Path, shared_file: bool) -> float:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Barrier(WRITERS + 1)  # the clock starts once every writer process has imported and is waiting
    users = ["usr_bench"] * WRITERS if shared_file else [f"usr_bench{n}" for n in range(WRITERS)]
    for user_id in set(users):
        store = MemoryStore(data_dir, user_id, {"memory": 2200, "user": 1375})
        store.write(MemoryRequest(target="memory", operations=[{"action": "add", "content": e} for e in PREFILL]))
    procs = [ctx.Process(target=writer, args=(str(data_dir), users[n], str(n), ready)) for n in range(WRITERS)]
    for proc in procs:
        proc.start()
    ready.wait(60)
    began = time.perf_counter()
    for proc in procs:
        proc.join()
    return WRITERS * (WRITES_PER_WRITER // 2) * 2 / (time.perf_counter() - began)


def fill(store: MemoryStore, target: str) -> None:
    """Entries of a realistic length until the next one would not fit."""
    number = 0
    while store.write(MemoryRequest(target=target, action="add",
                                    content=f"Fact {number}: a preference or convention of typical length.")).ok:
        number += 1


def prompt_sizes(data_dir: Path) -> tuple[int, int, int]:
    """(chars with both stores full, chars with both empty, UTF-8 bytes when full) of a new session's prompt."""
    from services.worker.agent.prompt import compose_system_prompt
    from services.worker.registrations import register_tools
    from shared.db import get_database
    from shared.migrate import upgrade
    from shared.stores import sessions, users

    url = f"sqlite:///{data_dir / 'bench.db'}"
    settings = load_settings(DATA_DIR=str(data_dir), DATABASE_URL=url)
    upgrade(url)
    db = get_database(url)

    def prompt(name: str, full: bool) -> str:
        user = users.create_user(db, name)
        if full:
            store = MemoryStore.for_user(settings, user.id)
            fill(store, "memory")
            fill(store, "user")
        session = sessions.create_session(db, user.id)
        return compose_system_prompt(session, register_tools(), settings, date.today(), db).text

    full, empty = prompt("full", True), prompt("empty", False)
    return len(full), len(empty), len(full.encode())


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="hstack-bench-memory-"))
    try:
        shared_rate = writes_per_second(root / "shared", shared_file=True)
        separate_rate = writes_per_second(root / "separate", shared_file=False)
        full, empty, full_bytes = prompt_sizes(root / "prompt")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"memory writes/s, {WRITERS} writer processes on one user's file: {shared_rate:,.0f}")
    print(f"memory writes/s, {WRITERS} writer processes on their own users' files: {separate_rate:,.0f}")
    print(f"system prompt with both stores full: {full:,} chars ({full_bytes:,} UTF-8 bytes, ~{full // 4:,} tokens); "
          f"empty stores: {empty:,} chars; memory blocks add {full - empty:,} chars")


if __name__ == "__main__":
    main()
