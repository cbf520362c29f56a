"""LoCoMo retrieval: recall@5/10/20 of `search_messages` with each question exactly as asked.

    python -m bench.locomo [--postgres] [--hybrid] [--data PATH]

Each conversation becomes one user; each LoCoMo session one session whose messages read
"<speaker>: <text>", dated by the session's date. A question is found at k when any of its evidence
turns is among the top k messages. Categories 1-4 are answerable (multi-hop, temporal, open-domain,
single-hop); 5 (adversarial) is printed apart. The data stays outside the repository (CC BY-NC 4.0);
the default path is the development split beside the repository. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

from shared.db import Database
from shared.migrate import upgrade
from shared.stores import search_vectors, sessions, users
from shared.stores.search import search_messages
from shared.stores.search_vectors import embed_missing

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TARGET_RECALL_AT_10 = 0.80


def session_keys(conversation: dict) -> list[str]:
    keys = [k for k in conversation if re.fullmatch(r"session_\d+", k)]
    return sorted(keys, key=lambda k: int(k.split("_")[1]))


def session_start(conversation: dict, key: str) -> datetime:
    """The session's "7:48 pm on 21 May, 2023" as UTC; a fixed date when it does not parse."""
    raw = conversation.get(f"{key}_date_time", "")
    try:
        return datetime.strptime(raw, "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return datetime(2023, 1, 1, tzinfo=timezone.utc)


def ingest(db: Database, sample: dict) -> tuple[str, dict[int, str]]:
    """Store one conversation as a new user's sessions; returns the user id and message id -> dia_id."""
    user = users.create_user(db, f"locomo-{uuid.uuid4().hex[:8]}")
    conversation = sample["conversation"]
    dia_ids: dict[int, str] = {}
    for key in session_keys(conversation):
        start = session_start(conversation, key)
        turns = conversation[key]
        chat = sessions.create_session(db, user.id, title=f"{sample.get('sample_id', 'locomo')} {key}")
        stored = sessions.append_messages(db, chat.id, [
            {"role": "user", "content": f"{t['speaker']}: {t['text']}", "created_at": start + timedelta(seconds=i)}
            for i, t in enumerate(turns)
        ])
        dia_ids.update({m.id: t['dia_id'] for m, t in zip(stored, turns)})
    return user.id, dia_ids


def evaluate(db: Database, samples: list[dict], hybrid: bool = False) -> tuple[dict[int, Counter], float]:
    """Found-at-k counts per category, and the mean search time in ms (hybrid: after embedding)."""
    found: dict[int, Counter] = defaultdict(Counter)
    timings: list[float] = []
    for sample in samples:
        user_id, dia_ids = ingest(db, sample)
        if hybrid:
            embed_missing(db, user_id)
        for qa in sample["qa"]:
            evidence = set(qa.get("evidence") or [])
            if not evidence:
                continue
            start = time.perf_counter()
            hits = search_messages(db, user_id, qa["question"], limit=max(KS), hybrid=hybrid)
            timings.append((time.perf_counter() - start) * 1000)
            ranked = [dia_ids.get(h.message_id) for h in hits]
            counts = found[qa["category"]]
            counts["n"] += 1
            for k in KS:
                counts[k] += bool(evidence & set(ranked[:k]))
    return found, sum(timings) / max(1, len(timings))


def report(found: dict[int, Counter], backend: str, mean_ms: float) -> None:
    """One row per category, the overall figure, and its ratio to the target."""
    def row(label: str, c: Counter) -> str:
        recalls = "  ".join(f"{c[k] / max(1, c['n']):.3f}" for k in KS)
        return f"{label:<22} {c['n']:>5}  {recalls}"

    print(f"LoCoMo retrieval on {backend} (question as asked; any evidence turn in the top k)")
    print(f"{'category':<22} {'n':>5}  r@5    r@10   r@20")
    overall = Counter()
    for cat in (1, 2, 3, 4):
        print(row(f"{cat} {CATEGORIES[cat]}", found[cat]))
        overall.update(found[cat])
    print(row("overall (1-4)", overall))
    print(row(f"5 {CATEGORIES[5]}", found[5]))
    at10 = overall[10] / max(1, overall["n"])
    print(f"recall@10 overall {at10:.3f} vs target {TARGET_RECALL_AT_10:.2f} "
          f"(ratio {at10 / TARGET_RECALL_AT_10:.2f}); mean search {mean_ms:.1f} ms")


def database(postgres: bool) -> tuple[Database, callable]:
    """A fresh, migrated database: a temporary SQLite file, or a new database on the local Postgres."""
    if postgres:
        from tests.support.env import create_postgres_database

        url, drop = create_postgres_database()
    else:
        folder = tempfile.TemporaryDirectory(prefix="hstack-locomo-")
        url, drop = f"sqlite:///{folder.name}/locomo.db", folder.cleanup
    upgrade(url)
    db = Database(url)

    def close() -> None:
        db.dispose()
        drop()

    return db, close


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true", help="run on the local Postgres server")
    parser.add_argument("--hybrid", action="store_true", help="fuse embeddings in (needs the hybrid extra)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path of locomo-dev.json")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}", file=sys.stderr)
        return 2
    if args.hybrid and not search_vectors.available():
        print("--hybrid needs the hybrid extra: see requirements-hybrid.txt", file=sys.stderr)
        return 2
    samples = json.loads(args.data.read_text())
    db, close = database(args.postgres)
    try:
        found, mean_ms = evaluate(db, samples, args.hybrid)
    finally:
        close()
    label = ("Postgres" if args.postgres else "SQLite") + (", hybrid" if args.hybrid else "")
    report(found, label, mean_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
