"""Search at scale: bulk ingest rate, then search latency p50/p95 by query kind, as the history grows.

    python -m bench.search [--sizes 10000,100000,1000000] [--databases sqlite,postgres] [--queries 100]
    python -m bench.search --messages 100000 --postgres        # one size, one database
    python -m bench.search --keep /tmp/search-1m               # keep the databases; the next run reuses them

Synthetic chat: words drawn from a Zipf-distributed vocabulary (so a few words are everywhere and
most are rare, as in real text), sessions of 100 messages. One "heavy" user owns 90% of the
messages (the worst case for one user's search) and nine light users share the rest. One database
per backend grows through the sizes: each step bulk-stores the messages that take it to the next
size through `sessions.bulk_insert_messages` (search index maintained on every row), then times
every query kind for both users. With `--keep DIR` the databases outlive the run (bench/search_keep.py):
a later run with the same DIR measures the sizes already stored without storing them again (their
ingest rate is the one recorded when they were grown) and grows only past them. Query kinds: single
words, quoted phrases, natural questions, and words that match nothing. Prints a p50/p95 table per
size and, for the largest size, every p95 and the ingest rates as figures against their targets;
asserts nothing. `bench.search_profile` times a kept database's statements one query kind at a time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field

from pathlib import Path

from bench.locomo import database
from bench.report import figure, summary
from bench.search_keep import load_state, open_kept, save_state
from shared.stores import sessions, users
from shared.search.engine import search_messages

TARGET_P95_MS = {"sqlite": 20.0, "postgres": 50.0}
TARGET_INGEST_PER_S = {"sqlite": 9_000, "postgres": 5_000}
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
VOCABULARY = 30_000
SESSION_MESSAGES = 100
SAMPLE_RATE = 0.001  # share of messages kept as sources of phrase queries
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
QUESTION_FRAMES = ["When did we talk about {} and {}?", "What did I say about the {} {}?",
                   "Do you remember the {} with the {}?", "How did the {} go after the {}?"]
KINDS = ("single word", "phrase", "question", "no hit")
WHO = ("heavy", "light")


def vocabulary(rng: random.Random, n: int) -> list[str]:
    """n distinct pronounceable words, most frequent first."""
    words: dict[str, None] = {}
    while len(words) < n:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


class Corpus:
    """Random messages with Zipf word frequencies; the same seed gives the same messages."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng, VOCABULARY)
        weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
        self.cumulative = list(_accumulate(weights))

    def message(self) -> str:
        n = self.rng.randint(6, 40)
        picked = self.rng.choices(self.words, cum_weights=self.cumulative, k=n)
        return " ".join(picked).capitalize() + "."


def _accumulate(values):
    total = 0.0
    for v in values:
        total += v
        yield total


@dataclass
class History:
    """One database's users and what has been stored so far."""

    heavy: str
    light: list[str]
    stored: int = 0
    sessions: int = 0
    samples: list[str] = field(default_factory=list)

    rates: dict[int, float] = field(default_factory=dict)  # ingest rate of the step that reached each size

    def owner(self, n: int) -> str:
        return self.heavy if n % 10 < 9 else self.light[(n // 10) % len(self.light)]

    def state(self, corpus: Corpus) -> dict:
        """All of it as JSON-ready values, with the corpus generator's state (see bench/search_keep.py)."""
        return {"heavy": self.heavy, "light": self.light, "stored": self.stored, "sessions": self.sessions,
                "samples": self.samples, "rates": {str(k): v for k, v in self.rates.items()},
                "rng": _jsonable(corpus.rng.getstate())}


def restored(state: dict, corpus: Corpus) -> History:
    """The History saved by `History.state`; `corpus` continues where that run's generator stopped."""
    version, internal, gauss = state["rng"]
    corpus.rng.setstate((version, tuple(internal), gauss))
    return History(state["heavy"], state["light"], state["stored"], state["sessions"], state["samples"],
                   {int(k): v for k, v in state["rates"].items()})


def _jsonable(value):
    return [_jsonable(v) for v in value] if isinstance(value, tuple) else value


def new_history(db) -> History:
    heavy = users.create_user(db, f"heavy-{uuid.uuid4().hex[:6]}").id
    return History(heavy, [users.create_user(db, f"light-{i}-{uuid.uuid4().hex[:6]}").id for i in range(9)])


def grow(db, corpus: Corpus, history: History, total: int) -> float:
    """Bulk-store messages until the history holds `total`; returns the ingest rate (messages/s)."""
    rows = []
    while history.stored + len(rows) < total:
        chat = sessions.create_session(db, history.owner(history.sessions))
        history.sessions += 1
        for i in range(SESSION_MESSAGES):
            text = corpus.message()
            rows.append({"session_id": chat.id, "role": "user" if i % 2 == 0 else "assistant", "content": text})
            if corpus.rng.random() < SAMPLE_RATE:
                history.samples.append(text)
    start = time.perf_counter()
    sessions.bulk_insert_messages(db, rows)
    history.stored += len(rows)
    return len(rows) / (time.perf_counter() - start)


def queries(corpus: Corpus, samples: list[str], n: int) -> dict[str, list[str]]:
    rng = random.Random(11)
    mid = corpus.words[50:3000]
    phrases = []
    for text in rng.sample(samples, min(n, len(samples))):
        words = text.rstrip(".").lower().split()
        i = rng.randrange(len(words) - 1)
        phrases.append(f'"{words[i]} {words[i + 1]}"')
    return {
        "single word": [rng.choice(corpus.words[:3000]) for _ in range(n)],
        "phrase": phrases,
        "question": [rng.choice(QUESTION_FRAMES).format(rng.choice(mid), rng.choice(mid)) for _ in range(n)],
        "no hit": [f"zyx{uuid.uuid4().hex[:8]}" for _ in range(n)],
    }


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


def measure(db, user_id: str, kinds: dict[str, list[str]]) -> dict[str, tuple[float, float, float]]:
    """p50, p95 (ms) and mean hits per query kind."""
    out = {}
    for kind, texts in kinds.items():
        for text in texts[:5]:  # warm the page cache for this kind
            search_messages(db, user_id, text)
        times, hits = [], []
        for text in texts:
            start = time.perf_counter()
            hits.append(len(search_messages(db, user_id, text)))
            times.append((time.perf_counter() - start) * 1000)
        out[kind] = (statistics.median(times), percentile(times, 95), statistics.mean(hits))
    return out


def run(backend: str, sizes: list[int], n_queries: int, keep: Path | None = None) -> list[tuple[int, float, dict]]:
    """Grow one database through `sizes`; per size: the ingest rate of that step and the timings."""
    corpus = Corpus()
    postgres = backend == "postgres"
    db, close = open_kept(keep, postgres) if keep else database(postgres)
    state = load_state(keep, backend) if keep else None
    rows = []
    try:
        history = restored(state, corpus) if state else new_history(db)
        for size in sizes:
            started = time.perf_counter()
            if size < history.stored:
                print(f"{backend} {size:,}: skipped, the kept history already holds {history.stored:,}", flush=True)
                continue
            if size > history.stored:
                history.rates[size] = grow(db, corpus, history, size)
                if keep:
                    save_state(keep, backend, history.state(corpus))
            rate = history.rates.get(size, 0.0)
            grown = time.perf_counter() - started
            kinds = queries(corpus, history.samples, n_queries)
            timings = {who: measure(db, uid, kinds) for who, uid in (("heavy", history.heavy),
                                                                      ("light", history.light[0]))}
            rows.append((history.stored, rate, timings))
            print_size(backend, history.stored, rate, timings)
            print(f"    step took {time.perf_counter() - started:,.0f} s ({grown:,.0f} s generating and storing "
                  "the messages)", flush=True)
    finally:
        close()
    return rows


def print_size(backend: str, size: int, rate: float, timings: dict) -> None:
    print(f"{backend} {size:>9,} messages: ingest {rate:,.0f}/s", flush=True)
    for who in WHO:
        cells = "  ".join(f"{kind} {timings[who][kind][0]:.1f}/{timings[who][kind][1]:.1f}" for kind in KINDS)
        print(f"    {who:<5} p50/p95 ms: {cells}  (mean hits "
              f"{', '.join(f'{timings[who][k][2]:.0f}' for k in KINDS)})", flush=True)


def table(backend: str, rows: list[tuple[int, float, dict]]) -> None:
    """p50/p95 per size, user and kind, so growth with the history is visible at a glance."""
    print(f"\n{backend}: p50 / p95 ms by size (heavy user 90% of messages, light user 1%)")
    header = f"  {'messages':>9}  {'ingest/s':>8}  " + "  ".join(f"{w + ' ' + k:>20}" for w in WHO for k in KINDS)
    print(header)
    for size, rate, timings in rows:
        cells = "  ".join(f"{timings[w][k][0]:>9.1f} /{timings[w][k][1]:>8.1f}" for w in WHO for k in KINDS)
        print(f"  {size:>9,}  {rate:>8,.0f}  {cells}")


def figures(backend: str, rows: list[tuple[int, float, dict]]) -> None:
    """The largest size's p95 per user and kind, and the ingest rate of its step, against the targets."""
    size, rate, timings = rows[-1]
    name = "SQLite" if backend == "sqlite" else "Postgres"
    for who in WHO:
        for kind in KINDS:
            figure(f"search p95 {name} {size:,} msgs, {who} user, {kind}", timings[who][kind][1], "ms",
                   target=TARGET_P95_MS[backend], better="lower")
    figure(f"bulk ingest {name} (step to {size:,} msgs)", rate, "msg/s", target=TARGET_INGEST_PER_S[backend],
           better="higher", digits=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="comma-separated history sizes the database grows through")
    parser.add_argument("--messages", type=int, help="one size only (instead of --sizes)")
    parser.add_argument("--databases", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--postgres", action="store_true", help="Postgres only (same as --databases postgres)")
    parser.add_argument("--queries", type=int, default=100, help="queries per kind")
    parser.add_argument("--keep", type=Path, help="keep the databases in (and reuse them from) this folder")
    args = parser.parse_args(argv)
    sizes = [args.messages] if args.messages else sorted(int(s) for s in args.sizes.split(","))
    backends = ["postgres"] if args.postgres else [b.strip() for b in args.databases.split(",") if b.strip()]
    results = {}
    for backend in backends:
        started = time.perf_counter()
        results[backend] = run(backend, sizes, args.queries, args.keep)
        print(f"{backend}: {time.perf_counter() - started:,.0f} s for the whole run", flush=True)
    for backend, rows in results.items():
        table(backend, rows)
    print()
    for backend, rows in results.items():
        figures(backend, rows)
    summary("search at scale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
