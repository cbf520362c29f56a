"""Console page for what the agent learned on its own: background reviews, skill evolution and the curator's ledger.

Reviews come from the same store call and public shape as GET /v1/reviews; the ledger from the same calls
as GET /v1/curator/runs; Restore is the same rollback as POST /v1/curator/skills/{name}/restore. Evolution
runs are those of GET /v1/evolution/runs; their buttons call the same store functions as its routes, and a
proposal's Approve / Deny is the staged-write decision of POST /v1/skills/pending/{id}.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request

from services.api.console.actions import attempt
from services.api.console.deps import ConsoleForm, ConsoleUser
from services.api.console.render import render
from shared.errors import NotFound
from shared import clock
from shared.models.reviews import ReviewPublic
from shared.queue.names import EVOLVE_SKILL
from shared.queue.payloads import EvolveSkill
from shared.stores import curator, evolution_runs, reviews, skill_staged
from shared.stores.curator_moves import ROLLBACK, restore
from shared.stores.skills import SkillStore

router = APIRouter(include_in_schema=False)

REVIEWS_SHOWN = 30
RUNS_SHOWN = 30
EVOLUTIONS_SHOWN = 20


def undoable(db, user_id: str) -> dict[str, str]:
    """skill -> the run whose change to it Restore would undo (its latest change, to stale or archived)."""
    rollback = {state.value for state in ROLLBACK}
    return {skill: t.run_id for skill, t in curator.last_changes(db, user_id).items() if t.to_state in rollback}


@router.get("/learning")
def learning_page(request: Request, user: ConsoleUser):
    """Each review's decision and writes (linked to its session), then the curator's passes and restores."""
    db, settings = request.app.state.db, request.app.state.settings
    found = [ReviewPublic.of(review, calls) for review, calls in reviews.list_reviews(db, user.id, limit=REVIEWS_SHOWN)]
    interval = timedelta(hours=settings.curator_interval_hours)
    return render(request, "learning.html", active="learning", reviews=found,
                  runs=curator.runs(db, user.id, RUNS_SHOWN), curator_state=curator.public_state(db, user.id, interval),
                  undoable=undoable(db, user.id),
                  evolutions=evolution_runs.public(db, evolution_runs.list_runs(db, user.id, EVOLUTIONS_SHOWN)))


@router.post("/learning/skills/{name}/restore")
def restore_skill(request: Request, name: str, user: ConsoleUser, form: ConsoleForm):
    """Undo the curator's last change to a skill; recorded as a restore run, as the JSON route does."""
    state = request.app.state
    store = SkillStore.for_user(state.db, state.settings, user.id)
    return attempt(request, "/learning", lambda: restore(store, name, clock.utcnow()), f"Restored {name}: active again.")


@router.post("/learning/evolution")
def start_evolution(request: Request, user: ConsoleUser, form: ConsoleForm):
    """Queue an evolution run of one skill, as POST /v1/evolution/runs (the reviewer pool runs it)."""
    state = request.app.state
    name = (form.get("skill") or "").strip()

    def start() -> None:
        run = evolution_runs.start(state.db, state.settings, user.id, name)
        state.enqueue(EVOLVE_SKILL, EvolveSkill(run_id=run.id))

    return attempt(request, "/learning", start, f"Evolution of {name} queued; its progress shows below.")


@router.post("/learning/evolution/{run_id}/{action}")
def evolution_action(request: Request, run_id: str, action: str, user: ConsoleUser, form: ConsoleForm):
    """Cancel a run, approve or deny its proposal, or restore the text an approved proposal replaced."""
    state = request.app.state
    run = evolution_runs.get(state.db, user.id, run_id)  # another user's run: 404
    if action == "cancel":
        return attempt(request, "/learning", lambda: evolution_runs.cancel(state.db, user.id, run_id),
                       "Cancelled: nothing it found is staged.")
    if action == "restore":
        return attempt(request, "/learning", lambda: evolution_runs.restore(state.db, state.settings, user.id, run_id),
                       f"Restored the previous text of {run.skill}.")
    if action in ("approve", "deny") and run.staged_id:
        approve = action == "approve"
        return attempt(request, "/learning",
                       lambda: skill_staged.decide(state.db, state.settings, user.id, run.staged_id, approve=approve),
                       f"Approved: {run.skill} now has the evolved text." if approve else "Proposal denied.")
    raise NotFound("No such action.", code="not_found")
