"""The tuning folds' LoCoMo misses at 10, one by one: what a ranking change has to find (`bench.locomo --misses`).

Only tuning-fold questions are listed: reading the held-out folds' misses would be tuning on them.
Each miss shows its category, where its best evidence turn ranks in the top 100 (or that it is not
there), the query's terms as parsed, the evidence turns and the three best hits; a closing count
sorts the misses by that rank.
"""

from __future__ import annotations

from collections import Counter

from shared.db import Database
from shared.search.engine import search_messages
from shared.search.query import parse_query
from shared.search.vectors import embed_missing

DEPTH = 100  # how far down a miss's evidence is looked for
SHOWN = 3  # best hits printed beside each miss
CLIP = 160  # characters of a message printed


def list_misses(db: Database, stored: list, hybrid: bool, is_tuning, answerable: tuple[int, ...],
                evidence_of) -> Counter:
    """Print every answerable tuning-fold question whose evidence is not in the top 10; returns the rank bands."""
    bands: Counter = Counter()
    for conv in (c for c in stored if is_tuning(c.sample)):
        if hybrid:
            embed_missing(db, conv.user_id)
        texts = _texts(conv.sample["conversation"])
        for qa in conv.sample["qa"]:
            evidence = evidence_of(qa)
            if not evidence or qa["category"] not in answerable:
                continue
            hits = search_messages(db, conv.user_id, qa["question"], limit=DEPTH, hybrid=hybrid)
            ranked = [conv.dia_ids.get(h.message_id) for h in hits]
            best = min((ranked.index(e) + 1 for e in evidence if e in ranked), default=None)
            if best is not None and best <= 10:
                continue
            bands[_band(best)] += 1
            _print_miss(qa, best, evidence, texts, hits)
    print(f"\nmisses at 10 by the best evidence rank: {dict(sorted(bands.items()))}")
    return bands


def _band(rank: int | None) -> str:
    if rank is None:
        return f"not in top {DEPTH}"
    return "11-20" if rank <= 20 else "21-50" if rank <= 50 else f"51-{DEPTH}"


def _texts(conversation: dict) -> dict[str, str]:
    """dia_id -> the stored text, and what LoCoMo says an image shows (the search never sees that)."""
    out = {}
    for key, turns in conversation.items():
        if not isinstance(turns, list):
            continue
        for t in turns:
            image = f"  [image, not stored: {t['blip_caption']}]" if t.get("blip_caption") else ""
            out[t["dia_id"]] = f"{t['speaker']}: {t['text']}"[:CLIP] + image
    return out


def _print_miss(qa: dict, best: int | None, evidence: set[str], texts: dict[str, str], hits: list) -> None:
    terms = [" ".join(a.text for a in t.atoms) for t in parse_query(qa["question"]).terms]
    where = f"rank {best}" if best else f"not in top {DEPTH}"
    print(f"\n[{qa['category']}] {qa['question']}  ({where}; answer: {qa.get('answer')})")
    print(f"    terms: {terms}")
    for e in sorted(evidence):
        print(f"    evidence {e}: {texts.get(e, '(no such turn)')}")
    for h in hits[:SHOWN]:
        print(f"    hit {h.score:.3f}: {h.content[:CLIP]}")
