"""Fuzzy find-and-replace shared by the `patch` tool and `skill_manage(action=patch)`.

    find_and_replace(content, old, new, replace_all=False, cancelled=...) -> Replacement
    MatchFailure.kind: empty | identical | no_match | ambiguous | escape_drift | indentation | cancelled

Strategies, in order (Hermes Agent's chain): exact, line_trimmed, whitespace_normalized,
line_collapsed, escape_normalized, unicode_normalized, block_anchor, context_aware. Each is a
linear scan except the two similarity ones, which run on a fixed character budget.
"""

from shared.textmatch.diff import unified_diff
from shared.textmatch.replace import MatchFailure, Replacement, find_and_replace

__all__ = ["MatchFailure", "Replacement", "find_and_replace", "unified_diff"]
