"""`python -m bench.recall`: what the `recall` provider adds to a turn, new user against a long history.

Store level (the provider against a real database, no api or worker): one user with HISTORY messages in
earlier sessions (100 messages each) and a new user with none; each timed call is the provider's
`prefetch` for one incoming message in a fresh session, exactly what a turn waits for when the search
did not get a head start. SQLite by default, `TEST_DATABASE=postgres` for Postgres. Prints figures
(bench.report), asserts nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.report import figure, summary
from shared.config import load_settings
from shared.db import get_database
from shared.migrate import upgrade
from shared.providers import ProviderContext
from shared.providers.recall import RecallProvider
from shared.stores import sessions, users

WORDS = ("deploy staging redis postgres migration lock timeout helm ingress cache docker compose worker queue "
         "celery backup restore token rotation nginx certificate renewal latency dashboard grafana alert "
         "python upgrade dependency lockfile pytest flaky retry budget invoice customer report export").split()
FILLER = ("the a we it then so and but was is on in for to of with after before today yesterday maybe "
          "think said told look check again later soon please thanks").split()
HISTORY = int(os.environ.get("RECALL_HISTORY", "100000"))
PER_SESSION, QUERIES = 100, 100
TARGET_ADDED_MS = 5.0


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS if rng.random() < 0.4 else FILLER) for _ in range(rng.randint(8, 30))]
    return " ".join(words) + "."


def seed(db, rng: random.Random, user_id: str, messages: int) -> None:
    """`messages` messages of this user, PER_SESSION to a session, stored in bulk."""
    rows = []
    for start in range(0, messages, PER_SESSION):
        sid = sessions.create_session(db, user_id).id
        rows += [{"session_id": sid, "role": "user" if n % 2 == 0 else "assistant", "content": sentence(rng)}
                 for n in range(min(PER_SESSION, messages - start))]
    sessions.bulk_insert_messages(db, rows)


def question(rng: random.Random) -> str:
    """A returning user's question about four of the history's words."""
    return "how did we handle the " + " ".join(rng.sample(WORDS, 4)) + " last time?"


def questions(seed: int, n: int) -> list[str]:
    """`n` questions from a fixed seed (bench.turns' and bench.user_scope's recall turns)."""
    rng = random.Random(seed)
    return [question(rng) for _ in range(n)]


def timed_prefetch(provider: RecallProvider, ctx: ProviderContext, rng: random.Random) -> tuple[list[float], int]:
    """ms of each prefetch for QUERIES incoming messages; and how many recalled something."""
    timings, recalled = [], 0
    for _ in range(QUERIES):
        query = question(rng)
        start = time.perf_counter()
        text = provider.prefetch(query, ctx)
        timings.append((time.perf_counter() - start) * 1000)
        recalled += bool(text)
    return timings, recalled


def database_url(data_dir: Path) -> tuple[str, callable]:
    if os.environ.get("TEST_DATABASE", "sqlite") == "postgres":
        from tests.support.env import create_postgres_database
        return create_postgres_database()
    return f"sqlite:///{data_dir / 'bench.db'}", lambda: None


def main() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="hstack-bench-recall-"))
    url, drop = database_url(data_dir)
    kind = "Postgres" if url.startswith("postgres") else "SQLite"
    try:
        settings = load_settings(DATA_DIR=str(data_dir), DATABASE_URL=url)
        upgrade(settings.sqlalchemy_url)
        db = get_database(settings.sqlalchemy_url)
        rng = random.Random(7)
        heavy, new = users.create_user(db, "bench-heavy"), users.create_user(db, "bench-new")
        started = time.perf_counter()
        seed(db, rng, heavy.id, HISTORY)
        print(f"recall, store level ({kind}): seeded {HISTORY:,} messages in {time.perf_counter() - started:.1f} s")
        provider = RecallProvider(settings)
        results = {}
        for name, user in (("new user", new), (f"{HISTORY:,}-message user", heavy)):
            ctx = ProviderContext(settings, db, user.id, sessions.create_session(db, user.id).id)
            timed_prefetch(provider, ctx, random.Random(1))  # warm caches
            timings, recalled = timed_prefetch(provider, ctx, random.Random(2))
            results[name] = statistics.median(timings)
            figure(f"recall prefetch p50, {name} ({kind})", results[name], "ms",
                   note=f"recalled for {recalled}/{QUERIES}; p95 {sorted(timings)[int(0.95 * len(timings))]:.1f} ms")
        added = results[f"{HISTORY:,}-message user"] - results["new user"]
        figure(f"recall's added time at {HISTORY:,} messages, p50 ({kind})", added, "ms", target=TARGET_ADDED_MS)
        summary()
    finally:
        drop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
