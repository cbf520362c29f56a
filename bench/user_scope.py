"""A user's recall search must cost what their own history costs, not what everyone else's does.

    python -m bench.user_scope [--databases sqlite,postgres] [--queries 40] [--other 100000]

One database per backend: one user holds 100,000 messages (bench.recall's vocabulary: 40 words, each
in a good share of them), and users with 0, 50 and 2,000 messages of their own from the same
vocabulary. Each user asks the questions bench.turns' recall turns ask ("how did we handle the
<four words> last time?") the way the recall provider searches (limit 10, pool 40, the current
session excluded). Prints the median ms per user and, as figures, each smaller user's median over
the 100k user's. Target for the new users (0 and 50 messages): at most 1, a new user never pays for
another user's history. The 2,000-message user has none: below the budget a history's matches are
all ranked by BM25 (cost in proportion to it; SQLite caps this at 500 rows, see search_sqlite.OWN_MAX),
while the 100k user's common words list only their newest matches, unranked.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from bench.locomo import database
from bench.recall import questions, seed
from bench.report import figure, summary
from shared.providers.recall import SEARCH_LIMIT, SEARCH_POOL
from shared.stores import sessions, users
from shared.search.engine import search_messages

OTHER = 100_000
OWN = (0, 50, 2_000)
NEW_USERS = (0, 50)  # the ones with a target
WARM = 5


def seed_user(db, rng: random.Random, name: str, messages: int) -> str:
    """A user with `messages` messages of their own, PER_SESSION to a session, stored in bulk."""
    user_id = users.create_user(db, f"{name}-{rng.randrange(10**8)}").id
    seed(db, rng, user_id, messages)
    return user_id


def median_ms(db, user_id: str, texts: list[str]) -> float:
    """Median wall time of the recall provider's search for each text, from a new session of the user."""
    current = sessions.create_session(db, user_id).id
    times = []
    for i, text in enumerate(texts):
        start = time.perf_counter()
        search_messages(db, user_id, text, limit=SEARCH_LIMIT, exclude_session_id=current, pool=SEARCH_POOL)
        if i >= WARM:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(backend: str, other: int, n_queries: int) -> dict[int, float]:
    """Median ms per own-history size (the `other` user's own included) on one fresh database."""
    db, close = database(backend == "postgres")
    rng = random.Random(5)
    try:
        started = time.perf_counter()
        owners = {other: seed_user(db, rng, "heavy", other)}
        owners.update({n: seed_user(db, rng, f"own-{n}", n) for n in OWN})
        print(f"{backend}: stored {other + sum(OWN):,} messages in {time.perf_counter() - started:.0f} s", flush=True)
        texts = questions(2, n_queries + WARM)
        return {n: median_ms(db, owners[n], texts) for n in sorted(owners)}
    finally:
        close()


def report(backend: str, medians: dict[int, float], other: int) -> None:
    name = "SQLite" if backend == "sqlite" else "Postgres"
    print(f"{name}: median ms of a recall search, another user holding {other:,} messages")
    for n, ms in medians.items():
        print(f"  {n:>9,} own messages: {ms:8.1f} ms", flush=True)
    for n in OWN:
        figure(f"user search, {n:,} own vs {other:,} own msgs ({name})", medians[n] / medians[other], "x",
               target=1.0 if n in NEW_USERS else None, digits=2,
               note=f"{medians[n]:.1f} ms vs {medians[other]:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--databases", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--queries", type=int, default=40, help="timed searches per user")
    parser.add_argument("--other", type=int, default=OTHER, help="messages of the one heavy user")
    args = parser.parse_args(argv)
    results = {b.strip(): run(b.strip(), args.other, args.queries) for b in args.databases.split(",") if b.strip()}
    for backend, medians in results.items():
        report(backend, medians, args.other)
    summary("user scope")
    return 0


if __name__ == "__main__":
    sys.exit(main())
