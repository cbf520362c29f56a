"""`python -m bench.recall`: what the `recall` provider adds to a turn, on a SQLite store with history.

One user with 200 earlier sessions of 10 messages (2,000 messages), plus 20 other users of the same
size; each timed prefetch is one incoming message. Prints figures, asserts nothing.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from shared.config import load_settings
from shared.db import get_database
from shared.migrate import upgrade
from shared.providers import ProviderContext
from shared.providers.recall import RecallProvider
from shared.stores import sessions, users

WORDS = ("deploy staging redis postgres migration lock timeout helm ingress cache docker compose worker queue "
         "celery backup restore token rotation nginx certificate renewal latency dashboard grafana alert "
         "python upgrade dependency lockfile pytest flaky retry budget invoice customer report export").split()
SESSIONS, MESSAGES, OTHER_USERS, QUERIES = 200, 10, 20, 200


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + "."


def seed(db, rng: random.Random, user_id: str) -> None:
    for _ in range(SESSIONS):
        session = sessions.create_session(db, user_id)
        sessions.append_messages(db, session.id, [
            {"role": "user" if n % 2 == 0 else "assistant", "content": sentence(rng)} for n in range(MESSAGES)
        ])


def main() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="hstack-bench-recall-"))
    try:
        settings = load_settings(DATA_DIR=str(data_dir), DATABASE_URL=f"sqlite:///{data_dir / 'bench.db'}")
        upgrade(settings.sqlalchemy_url)
        db = get_database(settings.sqlalchemy_url)
        rng = random.Random(7)
        me = users.create_user(db, "bench-me")
        seed(db, rng, me.id)
        for n in range(OTHER_USERS):
            seed(db, rng, users.create_user(db, f"bench-other-{n}").id)
        current = sessions.create_session(db, me.id)
        provider = RecallProvider(settings)
        ctx = ProviderContext(settings, db, me.id, current.id)
        timings, recalled, chars = [], 0, []
        for _ in range(QUERIES):
            query = "how did we handle the " + " ".join(rng.sample(WORDS, 4)) + " last time?"
            start = time.perf_counter()
            text = provider.prefetch(query, ctx)
            timings.append((time.perf_counter() - start) * 1000)
            if text:
                recalled += 1
                chars.append(len(text))
        timings.sort()
        total = SESSIONS * MESSAGES * (OTHER_USERS + 1)
        print(f"store: {total:,} messages ({SESSIONS * MESSAGES:,} of this user)")
        print(f"recall prefetch: p50 {statistics.median(timings):.1f} ms, p95 {timings[int(0.95 * len(timings))]:.1f} ms")
        print(f"recalled something for {recalled}/{QUERIES} messages; chars per recall: "
              f"max {max(chars, default=0)} (limit {settings.recall_max_chars})")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
