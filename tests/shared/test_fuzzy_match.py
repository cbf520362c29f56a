"""The shared fuzzy matcher: Hermes Agent's strategy chain, uniqueness at every step, hints, guards, bounds."""

from __future__ import annotations

import pytest

from shared.textmatch import MatchFailure, find_and_replace, unified_diff

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

CODE = "def total(items):\n    s = 0\n    for x in items:\n        s += x\n    return s\n"


def failure(content: str, old: str, new: str = "X", **kw) -> MatchFailure:
    with pytest.raises(MatchFailure) as caught:
        find_and_replace(content, old, new, **kw)
    return caught.value


def test_an_exact_match_is_replaced_as_is():
    result = find_and_replace(CODE, "s += x", "s += 2 * x")

    assert result.strategy == "exact" and result.count == 1
    assert result.content == CODE.replace("s += x", "s += 2 * x")


def test_trailing_whitespace_and_crlf_differences_are_tolerated():
    crlf = CODE.replace("\n", "\r\n")
    result = find_and_replace(crlf, "    s = 0   \n    for x in items:", "    s = 1\n    for x in items:")

    assert result.strategy == "line_trimmed"
    assert result.content == crlf.replace("s = 0", "s = 1")  # the file stays CRLF throughout


def test_indentation_differences_match_and_the_replacement_takes_the_files_indentation():
    """A model that quotes 4-space code with 2 spaces: the block matches and the new lines get 4-space nesting."""
    old = "for x in items:\n  s += x\n"
    new = "for x in items:\n  if x:\n    s += x\n"

    result = find_and_replace(CODE, old, new)

    assert result.strategy == "line_trimmed"
    assert "    for x in items:\n        if x:\n            s += x\n    return s\n" in result.content


def test_collapsed_inner_whitespace_matches_mid_line():
    content = "x  =   compute( a,  b )\n"
    result = find_and_replace(content, "compute( a, b )", "compute(a, b)")

    assert result.strategy == "whitespace_normalized"
    assert result.content == "x  =   compute(a, b)\n"


def test_lines_with_both_indentation_and_inner_whitespace_drift():
    content = "if ok:\n\tvalue  =  1\n\tother = 2\n"
    result = find_and_replace(content, "value = 1\nother  = 2", "value = 3\nother = 4")

    assert result.strategy == "line_collapsed"
    assert result.content == "if ok:\n\tvalue = 3\n\tother = 4\n"


def test_literal_escapes_and_typography_are_understood():
    assert find_and_replace("a\nb\n", "a\\nb", "c").strategy == "escape_normalized"
    typographic = "He said \u201chi\u201d \u2014 then left.\n"
    result = find_and_replace(typographic, 'He said "hi" -- then', 'He said "bye" -- then')

    assert result.strategy == "unicode_normalized"
    assert result.content == "He said \u201cbye\u201d \u2014 then left.\n"  # the file's own quotes and dash survive


def test_similar_blocks_match_as_a_last_resort_but_never_several_at_once():
    content = "start()\nalpha = compute(1)\nbeta = compute(2)\nfinish()\n"
    result = find_and_replace(content, "start()\nalpha = compute(1)\nbeta = compute(3)\nfinish()", "done()")

    assert result.strategy == "block_anchor" and result.content == "done()\n"
    twice = content + content
    assert failure(twice, "start()\nalpha = compute(1)\nbeta = compute(3)\nfinish()", replace_all=True).kind \
        == "ambiguous"


def test_several_matches_are_refused_with_their_count_and_lines():
    content = "a = 1\nb = 2\na = 1\nc = 3\na = 1\n"

    refused = failure(content, "a = 1")

    assert refused.kind == "ambiguous" and refused.count == 3
    assert "Found 3 matches" in refused.message and "replace_all" in refused.message
    assert "L1: a = 1" in refused.message and "L3: a = 1" in refused.message and "L5: a = 1" in refused.message


def test_the_uniqueness_rule_holds_at_a_tolerant_strategy_too():
    content = "  a = 1\n    a = 1\n"
    assert failure(content, "a = 1 ").kind == "ambiguous"  # no exact match; line_trimmed finds two


def test_replace_all_replaces_every_match():
    content = "a = 1\nb = 2\na = 1\n"
    result = find_and_replace(content, "a = 1", "a = 9", replace_all=True)

    assert result.count == 2 and result.content == "a = 9\nb = 2\na = 9\n"
    overlapping = find_and_replace("x\nx\nx\n", "x\nx  ", "y", replace_all=True)
    assert overlapping.content == "y\nx\n"  # overlapping windows are replaced once, left to right


def test_no_match_names_the_closest_lines_and_the_whitespace_difference():
    refused = failure(CODE, "    for x in things:\n        t -= 1")

    assert refused.kind == "no_match"
    assert "Closest lines:" in refused.message and "     3|    for x in items:" in refused.message
    tabbed = failure("\tvalue = compute()\n", "  value = compute()\n  other()")
    assert "file has: →value = compute()" in tabbed.message and "you sent: ··value" in tabbed.message


@pytest.mark.parametrize("old,new,kind", [
    ("", "x", "empty"), ("   \n ", "x", "empty"), ("s = 0", "s = 0", "identical"),
])
def test_pointless_requests_are_refused(old, new, kind):
    assert failure(CODE, old, new).kind == kind


def test_the_anchors_guards_refuse_transport_artefacts():
    content = "start()\nmsg = 'it is'\nend()\n"
    drift = failure(content, "start()\nmsg = \\'it is\\'\nend()", "start()\nmsg = \\'it was\\'\nend()")
    assert drift.kind == "escape_drift"
    rogue = failure("a = 1\nb = 2\n", "a = 1 \nb = 2", "a = 1\n        b = 3")
    assert rogue.kind == "indentation"


def test_a_cancelled_match_stops():
    assert failure("a\n" * 50_000, "a\na\nb", cancelled=lambda: True).kind == "cancelled"


def test_hostile_inputs_finish_with_an_answer():
    """2 MiB of identical lines against a 500-line near miss: a window-by-window matcher is quadratic here.

    The answer (no match, with a hint) must come back; bench/textmatch.py prints how long it takes.
    """
    content = "a\n" * (1024 * 1024)

    assert failure(content, "a\n" * 500 + "b").kind == "no_match"
    assert failure(content, "a \na").count == len(content) // 2 - 1  # every overlapping pair of lines


def test_the_diff_shows_the_change_with_file_line_numbers_and_is_bounded():
    before = "".join(f"line {n}\n" for n in range(1, 101))
    after = before.replace("line 50\n", "line fifty\n")

    diff = unified_diff(before, after, "notes.txt")

    assert diff.startswith("--- a/notes.txt\n+++ b/notes.txt\n@@ -47,7 +47,7 @@\n")
    assert "-line 50\n+line fifty\n" in diff and "line 10\n" not in diff
    huge = unified_diff("x\n" * 10, "".join(f"y{n}\n" for n in range(50_000)), "big.txt")
    assert "[diff omitted" in huge and len(huge) < 200
    wide = unified_diff("", "z" * 20_000, "wide.txt")
    assert wide.endswith("[diff cut at 6,000 characters]\n")


def test_texts_with_more_distinct_lines_than_code_points_use_the_kmp_search(monkeypatch):
    from shared.textmatch import lines

    content = "".join(f"  row {n}\n" for n in range(50)) + "  row 7\n  row 8\n"
    expected = find_and_replace(content, "row 7\nrow 8 ", "x", replace_all=True)
    monkeypatch.setattr(lines, "_MAX_IDS", 3)

    assert lines.line_runs(["a", "b", "a", "b", "a"], ["a", "b", "a"], lambda: False) == [0, 2]
    assert find_and_replace(content, "row 7\nrow 8 ", "x", replace_all=True) == expected
    assert expected.count == 2 and expected.strategy == "line_trimmed"
