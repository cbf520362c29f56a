"""Celery tasks of the worker service (queue `turns`: turns and MCP probes) and the reviewer (queue `review`,
same code: reviews, skill evolutions, the curator's consolidation pass, embeddings).

Run it with `celery -A services.worker.tasks worker -Q turns`; the thread pool and its size
(WORKER_CONCURRENCY) are the defaults set here, and command-line flags override them.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, TypeVar

from celery import signals
from pydantic import BaseModel, ValidationError

from shared.config import get_settings
from shared.ops.logs import setup_logging
from shared.queue.app import get_celery
from shared.queue.names import (
    CONSOLIDATE_SKILLS, EMBED_MESSAGES, EVOLVE_SKILL, PROBE_MCP_SERVER, RESUME_TURN, REVIEW_SESSION, RUN_TURN,
)
from shared.queue.payloads import (
    ConsolidateSkills, EmbedMessages, EvolveSkill, ProbeMcpServer, ResumeTurn, ReviewSession, RunTurn,
)
from services.worker.consolidate import consolidate_user
from services.worker.review import embed
from services.worker.agent.drain import drain_session
from services.worker.review.drain import drain_reviews
from services.worker.mcp_client.probe import probe
from services.worker.agent.outcome import TRANSIENT_ERRORS
from services.worker.runtime import SHUTDOWN, current_runtime, get_runtime, stop_runtime
from shared.stores import turns

log = logging.getLogger(__name__)

MAX_RETRIES = 5
P = TypeVar("P", bound=BaseModel)

app = get_celery()
app.conf.worker_pool = "threads"
app.conf.worker_concurrency = get_settings().worker_concurrency


def _payload(model: type[P], task: str, kwargs: dict[str, Any]) -> P | None:
    """The task's payload, or None after logging that a malformed one was dropped (never retried)."""
    try:
        return model(**kwargs)
    except ValidationError as exc:
        log.error("%s dropped a malformed payload: %s", task, exc.errors(include_url=False))
        return None


@app.task(name=RUN_TURN, bind=True, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, retry_backoff_max=60,
          retry_jitter=True, max_retries=MAX_RETRIES)
def run_turn(self, **kwargs) -> int:
    """Drain the session of the turn named in the payload; retried only when the database or Redis blinked."""
    payload = _payload(RunTurn, RUN_TURN, kwargs)
    if payload is None:
        return 0
    return drain_session(get_runtime(), payload.session_id)


@app.task(name=RESUME_TURN, bind=True, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, retry_backoff_max=60,
          retry_jitter=True, max_retries=MAX_RETRIES)
def resume_turn(self, **kwargs) -> int:
    """Continue a turn whose approval was decided: it is the session's next turn, so draining the session runs it."""
    payload = _payload(ResumeTurn, RESUME_TURN, kwargs)
    if payload is None:
        return 0
    return drain_session(get_runtime(), payload.session_id)


@app.task(name=REVIEW_SESSION, bind=True, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, retry_backoff_max=60,
          retry_jitter=True, max_retries=MAX_RETRIES)
def review_session(self, **kwargs) -> int:
    """Run the due background reviews of the payload's session (queue `review`, service `reviewer`)."""
    payload = _payload(ReviewSession, REVIEW_SESSION, kwargs)
    if payload is None:
        return 0
    return drain_reviews(get_runtime(), payload.session_id)


@app.task(name=PROBE_MCP_SERVER)
def probe_mcp_server(**kwargs) -> bool:
    """Connect to one MCP server and record its health and tools (`hstack mcp test`)."""
    payload = _payload(ProbeMcpServer, PROBE_MCP_SERVER, kwargs)
    if payload is None:
        return False
    return probe(get_runtime().settings, payload.server, payload.user_id)


@app.task(name=EVOLVE_SKILL, bind=True)
def evolve_skill(self, **kwargs) -> str | None:
    """Run one skill evolution (queue `review`, the reviewer pool); never retried: a run spends tokens once."""
    payload = _payload(EvolveSkill, EVOLVE_SKILL, kwargs)
    if payload is None:
        return None
    from services.worker.evolution.run import run_evolution  # gepa loads in ~150 ms: only on a reviewer that runs one

    runtime = get_runtime()
    return run_evolution(runtime.db, runtime.settings, runtime.llm, payload.run_id, runtime.worker_id)


@app.task(name=CONSOLIDATE_SKILLS, bind=True, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True,
          retry_backoff_max=60, retry_jitter=True, max_retries=MAX_RETRIES)
def consolidate_skills(self, **kwargs) -> str:
    """The curator's model pass over one user's skills (queue `review`): umbrellas staged for approval."""
    payload = _payload(ConsolidateSkills, CONSOLIDATE_SKILLS, kwargs)
    if payload is None:
        return ""
    return consolidate_user(get_settings(), payload.user_id)


@app.task(name=EMBED_MESSAGES, bind=True, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, retry_backoff_max=60,
          retry_jitter=True, max_retries=MAX_RETRIES)
def embed_messages(self, **kwargs) -> int:
    """Embed the payload's session's messages for hybrid search (queue `review`); off the turn's path."""
    payload = _payload(EmbedMessages, EMBED_MESSAGES, kwargs)
    if payload is None:
        return 0
    return embed.embed(get_runtime(), payload.session_id)


@signals.celeryd_init.connect
def _configure_logging(**_) -> None:
    """The `celery worker` command logs like every other service (structured, secrets redacted)."""
    settings = get_settings()
    setup_logging(settings.log_level, settings.log_format, settings.secret_values())


@signals.worker_ready.connect
def _start_leases(**_) -> None:
    get_runtime().leases.start()


@signals.worker_shutting_down.connect
def _stop_claiming(**_) -> None:
    """SIGTERM: claim nothing more, hand running turns back at safe points, and be gone within the grace."""
    grace = get_settings().worker_shutdown_grace_seconds
    if SHUTDOWN.begin(grace):
        threading.Thread(target=_force_exit, name="shutdown-watchdog", daemon=True).start()


def _force_exit() -> None:
    """Past the grace's last moment: hand back whatever is still held and leave, rather than be killed."""
    threading.Event().wait(SHUTDOWN.seconds_to_force())
    runtime = current_runtime()
    held = runtime.leases.held() if runtime is not None else []
    log.warning("worker still busy at the end of its shutdown grace: handing back %d turn(s) and exiting", len(held))
    for turn_id in held:
        try:
            released = turns.release_turn(runtime.db, turn_id, runtime.worker_id)
            runtime.send_all([released] if released is not None else [])
        except Exception:
            log.warning("could not hand turn %s back; it is taken over when its lease lapses", turn_id, exc_info=True)
    logging.shutdown()
    os._exit(0)


@signals.worker_shutdown.connect
def _stop_leases(**_) -> None:
    stop_runtime()
