"""Which agent skills overlap (no model call): similar words, a shared name stem, or a review naming them together."""

from __future__ import annotations

import pytest

from shared.curation.overlap import MAX_GROUP, Profile, groups, noted_pairs

pytestmark = pytest.mark.once  # pure functions: see tests/conftest.py

TEA = "Brew {0} tea for the user. Heat the water, warm the teapot, steep the leaves, serve in small cups."


def test_similar_skills_group_and_a_distinct_one_stays_alone():
    found = groups([Profile("brew-green-tea", TEA.format("green")), Profile("brew-black-tea", TEA.format("black")),
                    Profile("file-taxes", "File the yearly tax return before May with the receipts.")], set())
    assert found == [("brew-black-tea", "brew-green-tea")]


def test_a_review_that_names_two_skills_as_overlapping_groups_them_though_their_words_differ():
    names = ["deploy-docs", "publish-site", "file-taxes"]
    notes = ["Patched deploy-docs. deploy-docs overlaps publish-site; the curator could merge them.",
             "file-taxes and deploy-docs were both used."]  # no overlap word: not a note
    noted = noted_pairs(notes, names)
    assert noted == {frozenset({"deploy-docs", "publish-site"})}
    profiles = [Profile("deploy-docs", "Run mkdocs build and rsync."), Profile("publish-site", "Push to pages."),
                Profile("file-taxes", "Collect receipts.")]
    assert groups(profiles, noted) == [("deploy-docs", "publish-site")]


def test_a_name_inside_a_longer_name_is_not_a_mention():
    assert noted_pairs(["tea overlaps tea-brewing-extra"], ["tea", "tea-brewing"]) == set()


def test_overlap_is_transitive_and_a_group_is_capped():
    chain = [Profile(f"brew-{n}", TEA.format(f"kind{n}")) for n in range(MAX_GROUP + 3)]
    [group] = groups(chain, set())
    assert len(group) == MAX_GROUP and list(group) == sorted(group)


def test_odd_inputs_find_nothing():
    assert groups([], set()) == [] and groups([Profile("a-b", "")], set()) == []
    assert groups([Profile("one", ""), Profile("two", "")], set()) == []  # no words: no evidence of overlap
    assert noted_pairs(["", "overlap" * 10_000], ["one"]) == set()
