"""recall's queue_prefetch: the next turn's recall prepared after a turn, served when the query matches."""

from __future__ import annotations

from shared.providers import ProviderContext
from shared.providers.recall import RecallProvider


def test_a_prepared_recall_serves_the_matching_query_once_and_a_different_one_searches(settings, db):
    searched: list[str] = []

    def search(db, user_id, query, **kw):
        searched.append(query)
        return []

    provider = RecallProvider(settings.model_copy(update={"recall_min_terms": 1}), search=search)
    ctx = ProviderContext(provider.settings, db, "u-1", "s-1")
    provider.queue_prefetch("redis password rotation staging", "It failed on auth.", ctx)
    assert searched == ["redis password rotation staging"]

    provider.prefetch("Staging: redis password rotation?", ctx)  # same terms: served from what was prepared
    assert len(searched) == 1
    provider.prefetch("Staging: redis password rotation?", ctx)  # used once: searches again
    provider.queue_prefetch("redis password rotation staging", "", ctx)
    provider.prefetch("kubernetes ingress timeouts", ctx)  # other terms: a fresh search
    assert len(searched) == 4
    provider.queue_prefetch("redis password rotation staging", "", ctx)
    provider.on_session_end(ctx)
    provider.prefetch("redis password rotation staging", ctx)
    assert len(searched) == 6
