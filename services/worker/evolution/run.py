"""One evolution run on the reviewer pool: claim it, gather evidence, write tasks, run GEPA, store the outcome.

Never on a turn's path: the api only commits the run row and enqueues its id on queue `review`. Every
outcome is stored on the run: proposed (a staged write awaits the owner), no_improvement (said so, with the
scores), cancelled or failed. Progress and a heartbeat are written at most every PROGRESS_SECONDS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from contextlib import contextmanager
from typing import Iterator

from shared import clock
from shared.config import Settings
from shared.db import Database
from shared.errors import HermesError
from shared.evolution import evidence
from shared.evolution.meter import Meter, Stopped
from shared.evolution.model import RunModel
from shared.evolution.optimize import evolve
from shared.evolution.tasks import write_tasks
from shared.files.skill_format import SKILL_FILE
from shared.files.skills import read_text
from shared.llm.client import LLMClient
from shared.models.evolution import EvolutionRun, EvolutionStatus
from shared.stores import evolution_evidence, evolution_runs
from shared.stores.skills import SkillStore

log = logging.getLogger(__name__)
PROGRESS_SECONDS = 1.0
HEARTBEAT_SECONDS = 30.0  # well inside evolution_runs.STALE_AFTER, even while one model call is slow


class _Progress:
    """Writes the meter to the run row, at most once a second (and always when the stage changes)."""

    def __init__(self, db: Database, run_id: str) -> None:
        self.db, self.run_id, self.at, self.stage = db, run_id, 0.0, None

    def __call__(self, meter: Meter) -> None:
        now = time.monotonic()
        if meter.stage == self.stage and now - self.at < PROGRESS_SECONDS:
            return
        self.at, self.stage = now, meter.stage
        evolution_runs.progress(self.db, self.run_id, meter, clock.utcnow())


@contextmanager
def _heartbeat(db: Database, run_id: str, meter: Meter) -> Iterator[None]:
    """Keep the run's heartbeat fresh while it runs, so only a dead worker's run ever looks stale."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            try:
                evolution_runs.progress(db, run_id, meter, clock.utcnow())
            except Exception:  # a database blip skips one beat; the next one tries again
                log.warning("evolution run %s: heartbeat failed", run_id, exc_info=True)

    thread = threading.Thread(target=beat, name=f"evolution-heartbeat-{run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(5)


def run_evolution(db: Database, settings: Settings, llm: LLMClient, run_id: str, worker: str) -> str | None:
    """Run one evolution to its end; the final status, or None when there was nothing to run."""
    run = evolution_runs.claim(db, run_id, worker, clock.utcnow())
    if run is None:
        return None
    meter = Meter(run.budget_metric_calls, run.budget_tokens,
                  stop_requested=lambda: evolution_runs.cancel_requested(db, run_id),
                  on_change=_Progress(db, run_id))
    try:
        with _heartbeat(db, run_id, meter):
            status = _run(db, settings, RunModel(llm, meter), run)
    except Stopped as stop:
        status = EvolutionStatus.cancelled if stop.reason == "cancelled" else EvolutionStatus.no_improvement
        evolution_runs.finish(db, run_id, status, meter, stop.message)
    except HermesError as exc:
        status = EvolutionStatus.failed
        evolution_runs.finish(db, run_id, status, meter, "", error=f"{exc.code}: {exc.message}"[:500])
    except Exception:
        log.exception("evolution run %s failed", run_id)
        status = EvolutionStatus.failed
        evolution_runs.finish(db, run_id, status, meter, "", error="internal_error: the run failed; see the "
                                                                   "reviewer's log.")
    return status.value


def _run(db: Database, settings: Settings, model: RunModel, run: EvolutionRun) -> EvolutionStatus:
    meter = model.meter
    store = SkillStore.for_user(db, settings, run.user_id)
    current = read_text(evolution_runs.evolvable(store, run.skill).path / SKILL_FILE, SKILL_FILE)
    if len(current) > settings.evolve_max_skill_chars:
        evolution_runs.finish(db, run.id, EvolutionStatus.no_improvement, meter,
                              f"SKILL.md is {len(current):,} characters, over the {settings.evolve_max_skill_chars:,} "
                              "a candidate may have (EVOLVE_MAX_SKILL_CHARS); nothing is searched or proposed.")
        return EvolutionStatus.no_improvement
    meter.at("reading the sessions that loaded the skill")
    ids = evolution_evidence.sessions_loading(db, run.user_id, run.skill, settings.evolve_max_sessions)
    train_ids, held_ids = evidence.split(ids)
    facts = {"sessions": len(ids), "train_sessions": train_ids, "heldout_sessions": held_ids}
    evolution_runs.note_evidence(db, run.id, facts, current)
    if len(ids) < settings.evolve_min_sessions:
        evolution_runs.finish(db, run.id, EvolutionStatus.no_improvement, meter,
                              f"Only {len(ids)} session(s) loaded {run.skill!r}; a run needs at least "
                              f"{settings.evolve_min_sessions} (EVOLVE_MIN_SESSIONS). Nothing is proposed.")
        return EvolutionStatus.no_improvement
    meter.at("writing tasks from the sessions")
    train, held = ([e for sid in split for e in write_tasks(model, run.skill,
                                                             evolution_evidence.transcript(db, sid, run.skill))]
                   for split in (train_ids, held_ids))
    evolution_runs.note_evidence(db, run.id, {**facts, "train_tasks": len(train), "heldout_tasks": len(held),
                                              "outcomes": _outcomes(train + held)}, current)
    if not train or not held:
        evolution_runs.finish(db, run.id, EvolutionStatus.no_improvement, meter,
                              "The model wrote no usable task for one of the splits; nothing is proposed.")
        return EvolutionStatus.no_improvement
    outcome = evolve(model, run.skill, current, train, held, settings.evolve_margin, settings.evolve_max_skill_chars)
    if outcome.proposed is None:
        evolution_runs.finish(db, run.id, EvolutionStatus.no_improvement, meter, outcome.summary, outcome.scores)
        return EvolutionStatus.no_improvement
    stored = evolution_runs.propose(db, settings, run.id, meter, outcome.summary, outcome.scores, current,
                                    outcome.proposed)
    return EvolutionStatus(stored.status) if stored is not None else EvolutionStatus.cancelled


def _outcomes(examples) -> dict[str, int]:
    """How many sessions ended each way (a session's tasks share its outcome)."""
    return dict(Counter({e.session_id: e.outcome for e in examples}.values()))
