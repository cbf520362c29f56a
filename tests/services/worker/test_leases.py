"""The lease keeper renews held turns, notices cancel requests and survives database errors."""

from __future__ import annotations

import logging

from shared.ops import heartbeats
from shared.db import Database
from shared.stores import turns
from services.worker.leases import LeaseKeeper
from tests.services.worker.helpers import post_turn, wait_until


def test_held_turns_are_renewed_and_cancel_requests_noticed(db, redis_client, user, session):
    posted = post_turn(db, user.id, session.id, "long job")
    claimed = turns.claim_next(db, session.id, "worker@lease-test:1", 30)
    keeper = LeaseKeeper(db, redis_client, "worker@lease-test:1", interval=0.05, service="worker")
    keeper.hold(posted.id)
    keeper.start()
    try:
        wait_until(lambda: turns.get_turn(db, None, posted.id).heartbeat_at > claimed.heartbeat_at,
                   what="the lease to be renewed")
        assert not keeper.is_cancelled(posted.id)
        turns.request_cancel(db, user.id, posted.id)
        wait_until(lambda: keeper.is_cancelled(posted.id), what="the cancel request")
        assert any(s["service"] == "worker" for s in heartbeats.alive(redis_client))
    finally:
        keeper.stop()
    keeper.release(posted.id)
    assert keeper.held() == [] and not keeper.is_cancelled(posted.id)


def test_a_failing_heartbeat_is_logged_and_the_keeper_keeps_going(redis_client, caplog):
    unreachable = Database("postgresql+psycopg://nobody@127.0.0.1:1/nothing")
    keeper = LeaseKeeper(unreachable, redis_client, "worker@lease-test:2", interval=0.05, service="worker")
    keeper.hold("turn_missing")

    with caplog.at_level(logging.WARNING, logger="services.worker.leases"):
        keeper.beat()
        keeper.beat()

    assert sum("heartbeat failed" in r.getMessage() for r in caplog.records) == 2
    unreachable.dispose()
