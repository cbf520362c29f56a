"""`make test`: the whole suite, split into three pytest processes that run at once.

- SQLite: every test not marked `once`, on a fresh SQLite database.
- Postgres: the same on the real Postgres server, less `sqlite_only`; the api fuzz test draws fewer random
  examples there (HSTACK_FUZZ_MAX_EXAMPLES=10; schemathesis' examples and coverage phases run whole).
- once: the tests marked `once` (backend-independent: process behaviour, the browser, parsing, files), on
  SQLite. Most of their time is spent waiting on real processes, so they overlap well with the two others.
Each one's output goes to a file and is printed whole when it ends, with its summary line. They share nothing:
separate databases, data dirs, Redis key prefixes and Redis dbs (13/14, 11/12, 9/10), free ports.
TEST_PASSES=serial runs them one after the other, streaming the output. Without a Postgres server the
Postgres pass is skipped (and CI=true fails instead)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

POSTGRES_MARKERS = "not sqlite_only and not once"
SQLITE_MARKERS = "not once"
NOTHING_SELECTED = 5  # pytest's exit code when every test collected was deselected


def postgres_reachable(host: str = "127.0.0.1", port: int = 5432) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@dataclass
class Pass:
    label: str
    env: dict[str, str]
    args: list[str]

    narrowed: bool = False  # the caller named tests (`python -m tests.run_all tests/shared/test_ids.py`)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pytest", *self.args]

    def outcome(self, returncode: int) -> int:
        """Its exit code for the whole run: a narrowed run may hold nothing for this pass, which is no failure."""
        return 0 if self.narrowed and returncode == NOTHING_SELECTED else returncode


def passes(args: list[str], with_postgres: bool) -> list[Pass]:
    narrowed = bool(args)
    args = ["--durations=8", *args]  # each pass names its slowest tests (a later --durations wins)
    once = {**os.environ, "TEST_DATABASE": "sqlite", "HSTACK_TEST_REDIS_DB": "9", "HSTACK_E2E_REDIS_DB": "10"}
    chosen = [Pass("SQLite", {**os.environ, "TEST_DATABASE": "sqlite"}, [*args, "-m", SQLITE_MARKERS]),
              Pass("backend-independent tests (once)", once, [*args, "-m", "once"])]
    if with_postgres:
        env = {**os.environ, "TEST_DATABASE": "postgres", "HSTACK_TEST_REDIS_DB": "11", "HSTACK_E2E_REDIS_DB": "12",
               "HSTACK_FUZZ_MAX_EXAMPLES": os.environ.get("HSTACK_FUZZ_MAX_EXAMPLES", "10")}
        chosen.append(Pass("Postgres", env, [*args, "-m", POSTGRES_MARKERS]))
    for p in chosen:
        p.narrowed = narrowed
    return chosen


def run_serially(chosen: list[Pass]) -> int:
    code = 0
    for p in chosen:
        print(f"\n=== test suite on {p.label} ===", flush=True)
        code = p.outcome(subprocess.call(p.command(), env=p.env)) or code
    return code


def run_concurrently(chosen: list[Pass]) -> int:
    """Start every pass, then print each one's whole output as it finishes (first finished, first printed)."""
    print(f"=== test suite: {', '.join(p.label for p in chosen)}, at once (TEST_PASSES=serial to run "
          "them one by one) ===", flush=True)
    running = []
    for p in chosen:
        out = tempfile.TemporaryFile(mode="w+b")
        running.append((p, subprocess.Popen(p.command(), env=p.env, stdout=out, stderr=subprocess.STDOUT), out,
                        time.monotonic()))
    code = 0
    while running:
        for item in list(running):
            p, proc, out, started = item
            if proc.poll() is None:
                continue
            running.remove(item)
            out.seek(0)
            print(f"\n=== test suite on {p.label} (exit {proc.returncode}, {time.monotonic() - started:.0f} s) ===",
                  flush=True)
            sys.stdout.buffer.write(out.read())
            sys.stdout.flush()
            out.close()
            code = p.outcome(proc.returncode) or code
        time.sleep(0.2)
    return code


def main() -> int:
    args = sys.argv[1:]
    with_postgres = postgres_reachable()
    chosen = passes(args, with_postgres)
    try:
        if os.environ.get("TEST_PASSES", "concurrent") == "serial":
            code = run_serially(chosen)
        else:
            code = run_concurrently(chosen)
    except KeyboardInterrupt:
        return 130
    if not with_postgres and os.environ.get("CI"):
        print("Postgres is not reachable at 127.0.0.1:5432 and CI=true: failing.", flush=True)
        code = code or 1
    elif not with_postgres:
        print("SKIPPED the Postgres pass: nothing listens on 127.0.0.1:5432.", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
