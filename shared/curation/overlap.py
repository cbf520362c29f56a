"""Which of a user's agent-made skills overlap: pure, no model call, so the model is asked only about likely groups.

Two skills overlap when a background review named them together in a sentence about overlap (the review
prompt asks it to "name overlaps in your reply for the curator"), or when their words say the same thing:
the Jaccard similarity of the words of name, description and body reaches SIMILAR, or SIMILAR_SAME_STEM
when their names also start with the same word (`brew-green-tea`, `brew-black-tea`). Overlap is made
transitive into groups; a group is cut to MAX_GROUP skills so one model call stays small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

SIMILAR = 0.45
SIMILAR_SAME_STEM = 0.25
MAX_GROUP = 5
WORD = re.compile(r"[a-z0-9]{3,}")
OVERLAP_WORDS = re.compile(r"\b(overlap\w*|duplicat\w*|redundant|merg\w*|same as|umbrella)\b", re.IGNORECASE)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STOP = frozenset("the and for with this that from into when then your you are use not its have has was were "
                 "will can all any each step steps skill skills name description".split())


@dataclass(frozen=True)
class Profile:
    """What overlap is judged on for one skill."""

    name: str
    text: str  # description and body

    @cached_property
    def words(self) -> frozenset[str]:
        """Its words, name parts included: read once, compared with every other skill of the user."""
        return words(self.name.replace("-", " ") + " " + self.text)


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in WORD.findall(text.lower()) if w not in STOP)


def similarity(a: Profile, b: Profile) -> float:
    """Jaccard similarity of the two skills' words (name parts included)."""
    left, right = a.words, b.words
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def noted_pairs(summaries: list[str], names: list[str]) -> set[frozenset[str]]:
    """Pairs of `names` that one sentence of a review's reply names together while speaking of overlap."""
    pairs: set[frozenset[str]] = set()
    patterns = {name: re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])") for name in names}
    for summary in summaries:
        for sentence in SENTENCE.split(summary or ""):
            if not OVERLAP_WORDS.search(sentence):
                continue
            named = sorted(n for n, pattern in patterns.items() if pattern.search(sentence))
            pairs.update(frozenset(pair) for pair in combinations(named, 2))
    return pairs


def overlapping(a: Profile, b: Profile, noted: set[frozenset[str]]) -> bool:
    if frozenset((a.name, b.name)) in noted:
        return True
    score = similarity(a, b)
    same_stem = a.name.split("-")[0] == b.name.split("-")[0]
    return score >= SIMILAR or (same_stem and score >= SIMILAR_SAME_STEM)


def groups(profiles: list[Profile], noted: set[frozenset[str]]) -> list[tuple[str, ...]]:
    """Groups of two or more overlapping skills, largest first, each sorted and at most MAX_GROUP long."""
    parent = {p.name: p.name for p in profiles}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for a, b in combinations(profiles, 2):
        if overlapping(a, b, noted):
            parent[root(a.name)] = root(b.name)
    members: dict[str, list[str]] = {}
    for p in profiles:
        members.setdefault(root(p.name), []).append(p.name)
    found = [tuple(sorted(group)[:MAX_GROUP]) for group in members.values() if len(group) > 1]
    return sorted(found, key=lambda group: (-len(group), group))
