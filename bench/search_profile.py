"""Where one query kind's time goes, statement by statement, on a database kept by `bench.search --keep`.

    python -m bench.search_profile --keep /tmp/search-1m --backend postgres --who heavy --kind phrase
    python -m bench.search_profile --keep /tmp/search-1m --backend sqlite --kind question --slowest 3

Runs bench.search's queries of one kind for one user (warmed as bench.search warms them) and times
every SQL statement with SQLAlchemy's cursor-execute events. Prints wall and CPU p50/p95 per search
(on SQLite the CPU is the search's own; on Postgres mostly the server's, not counted), then each
statement shape's calls, total and worst time, and the slowest searches with their statements. Wall
times on a shared machine are noisy: compare CPU, calls and rows, or run under --explain.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from sqlalchemy import event

from bench.search import KINDS, Corpus, percentile, queries, restored
from bench.search_keep import load_state, open_kept
from shared.search.engine import search_messages


class Statements:
    """Every statement's time while listening, grouped by the search that ran it."""

    def __init__(self, engine) -> None:
        self.current: list[tuple[str, float]] = []
        self._started: dict[int, float] = {}
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def _before(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self._started[id(cursor)] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context, executemany) -> None:
        started = self._started.pop(id(cursor), None)
        if started is not None:
            self.current.append((shape(statement), (time.perf_counter() - started) * 1000))

    def take(self) -> list[tuple[str, float]]:
        taken, self.current = self.current, []
        return taken


def shape(statement: str) -> str:
    """A statement's first words, whitespace folded: enough to tell the search's statements apart."""
    return re.sub(r"\s+", " ", statement).strip()[:110]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True, help="the folder given to bench.search --keep")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--who", choices=("heavy", "light"), default="heavy")
    parser.add_argument("--kind", choices=KINDS, default="question")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--slowest", type=int, default=2, help="searches whose statements are listed")
    args = parser.parse_args(argv)
    state = load_state(args.keep, args.backend)
    if state is None:
        print(f"nothing kept for {args.backend} in {args.keep}", file=sys.stderr)
        return 2
    corpus = Corpus()
    history = restored(state, corpus)
    texts = queries(corpus, history.samples, args.queries)[args.kind]
    user = history.heavy if args.who == "heavy" else history.light[0]
    db, close = open_kept(args.keep, args.backend == "postgres")
    try:
        for text in texts[:5]:
            search_messages(db, user, text)
        listener = Statements(db.engine)
        runs = []
        for text in texts:
            wall, cpu = time.perf_counter(), time.process_time()
            hits = len(search_messages(db, user, text))
            runs.append((text, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, hits,
                         listener.take()))
    finally:
        close()
    report(args, history.stored, runs)
    return 0


def report(args, stored: int, runs: list) -> None:
    walls, cpus = [r[1] for r in runs], [r[2] for r in runs]
    print(f"{args.backend} {stored:,} messages, {args.who} user, {args.kind}: {len(runs)} searches")
    print(f"  wall p50/p95 {statistics.median(walls):.1f} / {percentile(walls, 95):.1f} ms, "
          f"CPU p50/p95 {statistics.median(cpus):.1f} / {percentile(cpus, 95):.1f} ms, "
          f"mean hits {statistics.mean(r[3] for r in runs):.1f}")
    by_shape: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for statement, ms in run[4]:
            by_shape[statement].append(ms)
    print(f"  {'calls':>6} {'total ms':>9} {'mean':>7} {'max':>7}  statement")
    for statement, times in sorted(by_shape.items(), key=lambda item: -sum(item[1])):
        print(f"  {len(times):>6} {sum(times):>9.1f} {statistics.mean(times):>7.2f} {max(times):>7.2f}  {statement}")
    for text, wall, cpu, hits, statements in sorted(runs, key=lambda r: -r[1])[:args.slowest]:
        print(f"\n  slow: {text!r} wall {wall:.1f} ms, CPU {cpu:.1f} ms, {hits} hits")
        for statement, ms in statements:
            print(f"    {ms:>8.2f}  {statement}")


if __name__ == "__main__":
    sys.exit(main())
