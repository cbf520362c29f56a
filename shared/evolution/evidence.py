"""What a run learns from: the sessions that loaded the skill, how each ended, and a split that never mixes one.

The split is decided by a hash of the session id alone, so a session held out once is held out in every
later run of any skill: a candidate is never selected on the sessions that then judge it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from shared.stores.evolution_evidence import SkillSession

HELD_OUT_SHARE = 3  # one session in three is held out
CORRECTED = re.compile(r"\b(no,|wrong|that's not|that is not|didn't work|did not work|doesn't work|does not work|"
                       r"still (?:fails|broken|failing)|not what i|incorrect|you forgot|you missed)", re.I)
RETRIED = re.compile(r"\b(try again|again,|retry|one more time|once more)\b", re.I)
WORKED = re.compile(r"\b(that worked|it works|works now|worked|perfect|thanks|thank you|great|exactly)\b", re.I)


@dataclass(frozen=True)
class Example:
    """One task a run scores a skill text on: from which session, what it asks, what a good answer needs."""

    key: str
    session_id: str
    task: str
    needs: tuple[str, ...]
    outcome: str


def outcome(session: SkillSession) -> str:
    """How the session went after the load, from the user's own words: corrected, retried, worked or unclear."""
    said = [line.text for line in session.lines[1:] if line.role == "user"]
    if any(CORRECTED.search(text) for text in said):
        return "corrected"
    if any(RETRIED.search(text) for text in said):
        return "retried"
    if any(WORKED.search(text) for text in said):
        return "worked"
    return "unclear"


def _rank(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def split(session_ids: list[str]) -> tuple[list[str], list[str]]:
    """(train, held-out) by session: about one in three held out, at least one on each side."""
    ordered = sorted(set(session_ids), key=_rank)
    if len(ordered) < 2:
        return ordered, []
    held = [s for s in ordered if int(_rank(s)[:8], 16) % HELD_OUT_SHARE == 0]
    if not held:
        held = ordered[:1]
    if len(held) == len(ordered):
        held = held[:-1]
    chosen = set(held)
    return [s for s in ordered if s not in chosen], [s for s in ordered if s in chosen]


def excerpt(session: SkillSession) -> str:
    """The session as the task writer reads it."""
    return "\n".join(f"{line.role}: {line.text}" for line in session.lines)
