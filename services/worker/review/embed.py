"""Provider embeddings off the turn's path: after a turn, send `embed_messages` for its session to queue
`review`; the reviewer embeds the session's messages that lack a vector (shared.search.embeddings).

Only when EMBEDDINGS_MODEL is set. The turn's messages are committed before the after-turn hooks run, so
only the session id travels. A round that fails (provider down) leaves its messages to the session's next
turn, or to `hstack search backfill-embeddings`: nothing is lost, and the turn itself never waits.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shared.errors import ModelError
from shared.queue.app import enqueue
from shared.queue.names import EMBED_MESSAGES
from shared.queue.payloads import EmbedMessages
from shared.search import embeddings as search_embeddings
from services.worker.agent.context import TurnContext

if TYPE_CHECKING:
    from services.worker.runtime import Runtime

log = logging.getLogger(__name__)


def after_turn(ctx: TurnContext, status: str, output: str | None) -> None:
    """After-turn hook: send the session's embedding round when the provider is hybrid search's source."""
    if search_embeddings.configured(ctx.settings):
        enqueue(EMBED_MESSAGES, EmbedMessages(session_id=ctx.session.id))


def embed(runtime: "Runtime", session_id: str) -> int:
    """The task's work: embed what the session lacks; a provider error is logged, never retried here."""
    try:
        done = search_embeddings.embed_session(runtime.db, runtime.settings, session_id)
    except ModelError as exc:
        log.warning("embedding session %s failed; its next turn or a backfill tries again: %s", session_id,
                    exc.message)
        return 0
    if done:
        log.info("embedded %d message(s) of session %s", done, session_id)
    return done
