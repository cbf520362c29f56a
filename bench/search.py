"""Search at scale: bulk ingest rate, then search latency p50/p95 by query kind.

    python -m bench.search [--messages 1000000] [--postgres] [--queries 200]

Synthetic chat: words drawn from a Zipf-distributed vocabulary (so a few words are everywhere and
most are rare, as in real text), sessions of 100 messages. One "heavy" user owns 90% of the
messages (the worst case for one user's search) and nine light users share the rest. Ingest goes
through `sessions.bulk_insert_messages`, with the search index triggers running on every row.
Query kinds: single words, quoted phrases, natural questions, and words that match nothing.
Prints figures and ratios to the targets; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid

from bench.locomo import database
from shared.stores import sessions, users
from shared.stores.search import search_messages

TARGET_P95_MS = 20.0
TARGET_INGEST_PER_S = 5_000
ANCHOR_INGEST_PER_S = 780
VOCABULARY = 30_000
SESSION_MESSAGES = 100
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
QUESTION_FRAMES = ["When did we talk about {} and {}?", "What did I say about the {} {}?",
                   "Do you remember the {} with the {}?", "How did the {} go after the {}?"]


def vocabulary(rng: random.Random, n: int) -> list[str]:
    """n distinct pronounceable words, most frequent first."""
    words: dict[str, None] = {}
    while len(words) < n:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


class Corpus:
    """Random messages with Zipf word frequencies."""

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


def ingest(db, corpus: Corpus, total: int) -> tuple[str, str, float, list[str]]:
    """Bulk-store `total` messages; returns the heavy and a light user's ids, the rate, sample texts."""
    heavy = users.create_user(db, f"heavy-{uuid.uuid4().hex[:6]}").id
    light = [users.create_user(db, f"light-{i}-{uuid.uuid4().hex[:6]}").id for i in range(9)]
    owners = [heavy] * 9 + light
    rows, samples = [], []
    for n in range(total // SESSION_MESSAGES):
        chat = sessions.create_session(db, owners[n % len(owners)])
        for i in range(SESSION_MESSAGES):
            text = corpus.message()
            rows.append({"session_id": chat.id, "role": "user" if i % 2 == 0 else "assistant", "content": text})
            if corpus.rng.random() < 0.001:
                samples.append(text)
    start = time.perf_counter()
    sessions.bulk_insert_messages(db, rows)
    return heavy, light[0], len(rows) / (time.perf_counter() - start), samples


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200, help="queries per kind")
    parser.add_argument("--postgres", action="store_true", help="run on the local Postgres server")
    args = parser.parse_args(argv)
    corpus = Corpus()
    db, close = database(args.postgres)
    try:
        heavy, light, rate, samples = ingest(db, corpus, args.messages)
        kinds = queries(corpus, samples, args.queries)
        results = {"heavy user (90%)": measure(db, heavy, kinds), "light user (1%)": measure(db, light, kinds)}
    finally:
        close()
    backend = "Postgres" if args.postgres else "SQLite"
    print(f"Search bench on {backend}: {args.messages:,} messages, {args.queries} queries per kind")
    print(f"bulk ingest: {rate:,.0f} messages/s (target {TARGET_INGEST_PER_S:,}: ratio {rate / TARGET_INGEST_PER_S:.2f}; "
          f"anchor ~{ANCHOR_INGEST_PER_S}/s: {rate / ANCHOR_INGEST_PER_S:.1f}x)")
    for who, figures in results.items():
        print(who)
        for kind, (p50, p95, hits) in figures.items():
            print(f"  {kind:<12} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  (target p95 {TARGET_P95_MS:.0f} ms: "
                  f"ratio {p95 / TARGET_P95_MS:.2f})  mean hits {hits:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
