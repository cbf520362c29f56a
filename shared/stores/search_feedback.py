"""Query expansion from the user's own words (pseudo-relevance feedback), for questions worded
differently from the messages that answer them.

People rarely ask with the words they wrote: "what did we do while camping?" is answered by "we
roasted marshmallows around the campfire". The best keyword hits for the question are, most of
the time, about its topic, and the words they share with each other ("campfire", "marshmallows")
are the user's own vocabulary for it. So, after the keyword ranking:
1. the top FEEDBACK_DOCS hits vote for their words, each by its score (scaled to the best) and
   the word's share of its text, weighted by how rare the word is among the ranked candidates;
   the question's own words and stop words do not vote; the FEEDBACK_TERMS strongest are kept;
2. `expansion` names them, so the backend can add the messages holding them (found through the
   user's words alone, never the question's);
3. `rerank` rescores the top RESCORE_DEPTH candidates: keyword score scaled to the best, plus
   FEEDBACK_WEIGHT x the share of the feedback words' weight the message holds.
Constants chosen on the LoCoMo tuning folds only (bench/locomo.py, bench/README.md).
Pure Python over texts already read: no extra query except the expansion's one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace
from typing import Protocol, Sequence

from shared.stores.search_words import STOP_WORDS, stem

FEEDBACK_DOCS = 8  # top hits whose words vote
FEEDBACK_TERMS = 6  # words kept
FEEDBACK_WEIGHT = 0.0  # off: +1 question of 231 at best on the tuning folds (bench/README.md); was swept 0.1-0.5
RESCORE_DEPTH = 100  # candidates rescored; the rest keep their keyword order below them
MIN_WORD_CHARS = 3
_WORD = re.compile(r"[^\W\d_]+")


class Scored(Protocol):
    content: str
    score: float


def words(text: str) -> list[str]:
    """The content words of a text, lowercased and stemmed (stop words and short words dropped)."""
    found = (w for w in _WORD.findall(text.lower()) if len(w) >= MIN_WORD_CHARS and w not in STOP_WORDS)
    return [stem(w) for w in found]


def feedback(hits: Sequence[Scored], asked: set[str]) -> dict[str, float]:
    """The feedback words and their weights (summing to 1), from the best hits; `asked` are the
    question's own stems, which never vote."""
    head = hits[:RESCORE_DEPTH]
    if len(head) < 2:
        return {}
    bags = [Counter(words(h.content)) for h in head]
    df = Counter(t for bag in bags for t in bag)
    best = max((h.score for h in head[:FEEDBACK_DOCS]), default=0.0) or 1.0
    votes: Counter = Counter()
    for hit, bag in zip(head[:FEEDBACK_DOCS], bags):
        size = sum(bag.values()) or 1
        for term, count in bag.items():
            if term not in asked:
                votes[term] += (hit.score / best) * count / size
    weights = {t: v * math.log(1 + len(bags) / df[t]) for t, v in votes.items() if df[t] > 1}
    chosen = sorted(weights, key=lambda t: (-weights[t], t))[:FEEDBACK_TERMS]
    total = sum(weights[t] for t in chosen) or 1.0
    return {t: weights[t] / total for t in chosen}


def surface_forms(hits: Sequence[Scored], terms: dict[str, float]) -> list[str]:
    """One written form per feedback stem (its most common one in the hits), to search the index with."""
    forms: dict[str, Counter] = {t: Counter() for t in terms}
    for hit in hits[:FEEDBACK_DOCS]:
        for word in _WORD.findall(hit.content.lower()):
            if len(word) >= MIN_WORD_CHARS and word not in STOP_WORDS and stem(word) in forms:
                forms[stem(word)][word] += 1
    return [forms[t].most_common(1)[0][0] for t in terms if forms[t]]


def rerank(hits: list, terms: dict[str, float], weight: float = FEEDBACK_WEIGHT) -> list:
    """The hits rescored with the feedback words (see the module doc), best first."""
    if not terms or not hits:
        return hits
    head, tail = hits[:RESCORE_DEPTH], hits[RESCORE_DEPTH:]
    best = max(h.score for h in head) or 1.0
    rescored = []
    for position, hit in enumerate(head):
        held = set(words(hit.content))
        bonus = sum(w for t, w in terms.items() if t in held)
        rescored.append((hit.score / best + weight * bonus, -position, hit))
    rescored.sort(key=lambda item: item[:2], reverse=True)
    return ([replace(hit, score=round(score, 6)) for score, _, hit in rescored]
            + [replace(hit, score=round(hit.score / best, 6)) for hit in tail])


def asked_words(texts: Sequence[str]) -> set[str]:
    """The stems of the question's own words (they rank already; feedback looks for others)."""
    return {w for text in texts for w in words(text)} | {stem(t.lower()) for t in texts}
