"""How much ranking one search may do, the same on both backends.

BM25 over every match costs time in proportion to the history: the backend scores each matching
row and counts each term's rows for its IDF. So, first by the size of the user's own scope (counted
through the user's indexes, never the search index, and no further than `own_max`):
- an empty scope has no candidates: no full-text query runs at all;
- a scope smaller than `own_max` (and the budget) is searched on its own rows alone, whatever everyone else wrote: a
  user's words may be in every other user's messages, and walking those costs the whole database.
  Where a scope row costs more than a match (SQLite indexes the rows afresh, `own_row_cost` times
  dearer), a query matching fewer rows in the whole index than the scope is worth (a rare word, no
  hit, a small database) takes the plan below instead, which then costs less than the scope, and so
  does a scope above `own_max` (SQLite: indexing 500 rows afresh costs ~7 ms, already the price of
  the plan below for a user whose own messages are among the newest);
then by the query's matches in the whole index:
- a query of required terms only (quoted phrases, AND) lists its newest matches, unranked;
- a query matching fewer than `budget` rows is ranked whole;
- a broader one ranks only its rarest terms (together under `budget` rows) and adds the newest
  matches that hold a term themselves, unranked (score 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from shared.search.query import ParsedQuery, Term
from shared.search.scope import Candidate

Found = dict[int, Candidate]


@dataclass(frozen=True)
class Backend:
    """A backend's primitives over a parsed query (its user scope already bound)."""

    count: Callable[[ParsedQuery, int], int]  # matching rows in the whole index, counting no further than a cap
    ranked: Callable[[ParsedQuery], Found]  # the best candidates by BM25
    newest: Callable[[ParsedQuery, bool], Found]  # the newest matches; True: holding a term themselves
    budget: int
    scope_size: Callable[[int], int]  # the scope's messages, counting no further than the cap given
    own: Callable[[ParsedQuery, bool], Found]  # the scope's rows alone: ranked, or (True) the newest matches
    own_row_cost: int  # matches ranked in the whole index costing what one scope row costs `own` (0: never dearer)
    own_max: int  # the largest scope `own` takes
    # `count` of several queries at once (one statement); None: one `count` each
    count_many: Callable[[list[ParsedQuery], int], list[int]] | None = None


def budgeted(parsed: ParsedQuery, backend: Backend) -> Found:
    """Candidates for `parsed` within the backend's budget of ranked rows."""
    counts = Counts(backend.count, backend.count_many)
    backend = replace(backend, count=counts.count, count_many=counts.many)
    own_cap = min(backend.own_max, backend.budget)
    size = backend.scope_size(own_cap)
    required = all(t.required for t in parsed.terms)
    if size == 0:
        return {}
    if size < own_cap and _own_is_cheaper(parsed, backend, size):
        return backend.own(parsed, required)
    if required:
        return backend.newest(parsed, False)
    if backend.count(parsed, backend.budget) < backend.budget:
        return backend.ranked(parsed)
    rare = _rarest(parsed.terms, backend)
    found = backend.ranked(ParsedQuery(rare)) if rare else {}
    for message_id, candidate in backend.newest(parsed, True).items():
        found.setdefault(message_id, candidate)
    return found


class Counts:
    """`count`, asked once per query: a plan counts the same words up to three times (the whole query,
    then each term, where a one-word query's term is the query itself). A count that reached its cap
    answers any smaller cap; one below its cap is exact. `many` counts what is not known yet in one call
    of the backend's `count_many` when it has one (a broad question's terms: one statement, not eight)."""

    def __init__(self, count: Callable[[ParsedQuery, int], int],
                 count_many: Callable[[list[ParsedQuery], int], list[int]] | None) -> None:
        self._count = count
        self._count_many = count_many
        self._known: dict[ParsedQuery, tuple[int, int]] = {}

    def _answer(self, parsed: ParsedQuery, cap: int) -> int | None:
        n, capped = self._known.get(parsed, (0, 0))
        return min(n, cap) if capped and (n < capped or cap <= capped) else None

    def count(self, parsed: ParsedQuery, cap: int) -> int:
        known = self._answer(parsed, cap)
        if known is None:
            known = self._count(parsed, cap)
            self._known[parsed] = (known, cap)
        return known

    def many(self, queries: list[ParsedQuery], cap: int) -> list[int]:
        unknown = list(dict.fromkeys(q for q in queries if self._answer(q, cap) is None))
        if len(unknown) > 1 and self._count_many is not None:
            for query, n in zip(unknown, self._count_many(unknown, cap)):
                self._known[query] = (n, cap)
        return [self.count(q, cap) for q in queries]


def _own_is_cheaper(parsed: ParsedQuery, backend: Backend, size: int) -> bool:
    """Whether searching the scope's own rows (fewer than `own_max`) costs less than the plan over the
    whole index: a query matching at least what the scope's rows cost in matches (counting
    stops there) or too many rows to rank (the whole-index plan would walk every user's matches)."""
    if not backend.own_row_cost:
        return True
    worth = min(size * backend.own_row_cost, backend.budget)
    return backend.count(parsed, worth) >= worth


def _rarest(terms: tuple[Term, ...], backend: Backend) -> tuple[Term, ...]:
    """The rarest terms, as optional ones, whose rows together stay under the budget. A term no row
    holds adds nothing to any score and is left out: the backend would still evaluate it for every row
    ranked (SQLite: a question's "remember" or "go|gone|went", 15% of ranking 2,000 rows at 1M)."""
    alone = [ParsedQuery((Term(t.atoms),)) for t in terms]
    counted = sorted((n, i) for i, n in enumerate(backend.count_many(alone, backend.budget)))
    chosen, rows = [], 0
    for count, i in counted:
        if rows + count >= backend.budget:
            break
        if not count:
            continue
        chosen.append(Term(terms[i].atoms))
        rows += count
    return tuple(chosen)
