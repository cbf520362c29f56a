"""recall searches for each turn's own message, once, and nothing after a turn (no search a resend alone could use)."""

from __future__ import annotations

from shared.providers import ProviderContext
from shared.providers.recall import RecallProvider


def test_recall_searches_once_per_turn_for_its_own_message_and_never_after_a_turn(settings, db):
    searched: list[str] = []

    def search(db, user_id, query, **kw):
        searched.append(query)
        return []

    provider = RecallProvider(settings.model_copy(update={"recall_min_terms": 1}), search=search)
    ctx = ProviderContext(provider.settings, db, "u-1", "s-1")
    provider.queue_prefetch("redis password rotation staging", "It failed on auth.", ctx)
    assert searched == []

    provider.prefetch("Staging: redis password rotation?", ctx)
    provider.prefetch("Staging: redis password rotation?", ctx)  # a resend searches again: the answer may differ
    assert searched == ["Staging: redis password rotation?"] * 2

