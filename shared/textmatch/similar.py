"""Hermes Agent's similarity strategies (block_anchor, context_aware) and the "did you mean" hint, on a budget.

`difflib` ratios cost far more than a linear scan, so every ratio is paid from a character budget,
identical lines are scored once, and cheap upper bounds (`real_quick_ratio`, `quick_ratio`) turn
most lines away before a ratio is computed. When the budget runs out the strategy gives up and says
so rather than spinning on a hostile file.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from shared.textmatch.lines import CANCEL_EVERY, Cancelled, Span
from shared.textmatch.strategies import Pattern, Subject
from shared.textmatch.views import unicode_ascii

SIMILARITY_BUDGET_CHARS = 2_000_000  # characters handed to difflib per strategy
MAX_SIMILAR_LINE = 400  # longer lines only match when equal
MAX_PATTERN_CHARS = 20_000  # a longer old_string is never matched approximately
MAX_ANCHOR_CANDIDATES = 64
LINE_THRESHOLD = 0.80


class Budget:
    """Characters difflib may still look at; every scored line is paid for, pruned or not."""

    def __init__(self, chars: int = SIMILARITY_BUDGET_CHARS) -> None:
        self.left = chars
        self.exhausted = False

    def pay(self, chars: int) -> bool:
        self.left -= chars
        if self.left < 0:
            self.exhausted = True
        return not self.exhausted

    def ratio(self, a: str, b: str, floor: float = 0.0) -> float:
        """Similarity of a and b, or 0.0 once it cannot reach `floor` (or the budget is gone)."""
        if a == b:
            return 1.0
        if not self.pay(len(a) + len(b)):
            return 0.0
        matcher = SequenceMatcher(None, a, b)
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            return 0.0
        return matcher.ratio()


class LineScorer:
    """Scores content lines against one pattern line: difflib's tables for the target built once, each line once."""

    def __init__(self, target: str, budget: Budget, floor: float) -> None:
        self.target, self.budget, self.floor = target, budget, floor
        self.matcher = SequenceMatcher(None)
        self.matcher.set_seq2(target)
        self.cache: dict[str, float] = {}

    def __call__(self, line: str) -> float:
        got = self.cache.get(line)
        if got is None:
            got = self.cache[line] = self._score(line)
        return got

    def _score(self, line: str) -> float:
        if line == self.target:
            return 1.0
        if len(line) > MAX_SIMILAR_LINE or len(self.target) > MAX_SIMILAR_LINE:
            return 0.0
        if not self.budget.pay(len(line) + len(self.target)):
            return 0.0
        self.matcher.set_seq1(line)
        m = self.matcher
        if m.real_quick_ratio() < self.floor or m.quick_ratio() < self.floor:
            return 0.0
        return m.ratio()


def _too_big(pattern: Pattern) -> bool:
    return len(pattern.text) > MAX_PATTERN_CHARS or len(pattern.lines) < 2


def _where(keys: list[str], wanted: str, cancelled) -> list[int]:
    """Line numbers whose key is `wanted` (one C-speed pass per call)."""
    if cancelled():
        raise Cancelled()
    return [n for n, k in enumerate(keys) if k == wanted]


def block_anchor(subject: Subject, pattern: Pattern, budget: Budget) -> list[Span]:
    """First and last lines equal (stripped, ASCII-fied); the middle at least 50 % similar (70 % if several)."""
    if _too_big(pattern):
        return []
    want = [unicode_ascii(line) for line in pattern.lines]
    first, last, m = want[0].strip(), want[-1].strip(), len(want)
    keys = subject.ascii_stripped
    candidates = [i for i in _where(keys, first, subject.cancelled) if i + m <= len(keys) and keys[i + m - 1] == last]
    if len(candidates) > MAX_ANCHOR_CANDIDATES:
        budget.exhausted = True  # so many look-alike blocks that no approximate choice would be safe
        return []
    threshold = 0.50 if len(candidates) == 1 else 0.70
    middle = "\n".join(want[1:-1])
    spans = []
    for i in candidates:
        here = unicode_ascii("\n".join(subject.index.lines[i + 1:i + m - 1]))
        if m <= 2 or budget.ratio(middle, here, threshold) >= threshold:
            spans.append(subject.index.span(i, m, newline=pattern.newline))
    return spans


def _similar_lines(keys: list[str], scorer: "LineScorer", cancelled) -> set[str]:
    """The distinct lines `scorer` rates at or above its floor (each distinct line scored once)."""
    close = set()
    for n, line in enumerate(dict.fromkeys(keys)):
        if n % CANCEL_EVERY == 0 and cancelled():
            raise Cancelled()
        if scorer.budget.exhausted:
            break
        if scorer(line) >= scorer.floor:
            close.add(line)
    return close


def context_aware(subject: Subject, pattern: Pattern, budget: Budget) -> list[Span]:
    """First and last lines at least 80 % similar, then every non-blank line at least 80 % similar."""
    if _too_big(pattern):
        return []
    want = [line.strip() for line in pattern.lines]
    m, keys = len(want), subject.stripped
    if not want[0] or not want[-1]:
        return []
    firsts = _similar_lines(keys, LineScorer(want[0], budget, LINE_THRESHOLD), subject.cancelled)
    lasts = firsts if want[-1] == want[0] else \
        _similar_lines(keys, LineScorer(want[-1], budget, LINE_THRESHOLD), subject.cancelled)
    if budget.exhausted:
        return []
    candidates = [i for i, k in enumerate(keys[:len(keys) - m + 1]) if k in firsts and keys[i + m - 1] in lasts]
    if len(candidates) > MAX_ANCHOR_CANDIDATES:
        budget.exhausted = True
        return []
    scorers = [LineScorer(w, budget, LINE_THRESHOLD) if w else None for w in want]
    return [subject.index.span(i, m, newline=pattern.newline) for i in candidates
            if all(s is None or s(keys[i + k]) >= LINE_THRESHOLD for k, s in enumerate(scorers))]


SIMILAR = [("block_anchor", block_anchor), ("context_aware", context_aware)]


def closest_lines(subject: Subject, pattern: Pattern, *, shown: int = 3, context: int = 2) -> str:
    """Numbered content lines around the lines most like old_string's first non-blank line ("" if none is close)."""
    anchor = next((line.strip() for line in pattern.lines if line.strip()), "")
    if not anchor:
        return ""
    anchor = anchor[:MAX_SIMILAR_LINE]
    keys = subject.stripped
    first_at = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
    scorer = LineScorer(anchor, Budget(), 0.3)
    best: list[tuple[float, int]] = []
    for n, line in enumerate(dict.fromkeys(keys)):
        if n % CANCEL_EVERY == 0 and subject.cancelled():
            raise Cancelled()
        if not line or scorer.budget.exhausted:
            continue
        scorer.floor = max(0.3, best[-1][0] if len(best) == shown else 0.0)
        score = scorer(line[:MAX_SIMILAR_LINE])
        if score > scorer.floor:
            best = sorted(best + [(score, first_at[line])], key=lambda s: -s[0])[:shown]
    return _render(subject, pattern, best, context)


def _render(subject: Subject, pattern: Pattern, best: list[tuple[float, int]], context: int) -> str:
    lines = subject.index.lines
    ranges: list[list[int]] = []
    for _, n in sorted(best, key=lambda s: s[1]):
        start, end = max(0, n - context), min(len(lines), n + min(len(pattern.lines), 8) + context)
        if ranges and start <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([start, end])
    if not ranges:
        return ""
    text = "\n---\n".join("\n".join(f"{k + 1:>6}|{lines[k][:200]}" for k in range(a, b)) for a, b in ranges)
    top = lines[best[0][1]]
    first = next((line for line in pattern.lines if line.strip()), "")
    if top.strip() == first.strip() and top != first:
        text += ("\nWhitespace differs (→ tab, · space):\n  file has: " + _visible(top[:200])
                 + "\n  you sent: " + _visible(first[:200]))
    return text


def _visible(line: str) -> str:
    body = line.lstrip(" \t")
    lead = line[:len(line) - len(body)]
    return lead.replace("\t", "→").replace(" ", "·") + body
