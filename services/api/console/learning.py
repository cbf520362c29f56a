"""Console page for what the agent learned on its own: background reviews and the curator's ledger.

Reviews come from the same store call and public shape as GET /v1/reviews; the ledger from the same calls
as GET /v1/curator/runs; Restore is the same rollback as POST /v1/curator/skills/{name}/restore.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request

from services.api.console.actions import attempt
from services.api.console.deps import ConsoleForm, ConsoleUser
from services.api.console.render import render
from shared import clock
from shared.models.reviews import ReviewPublic
from shared.stores import curator, reviews
from shared.stores.curator_moves import ROLLBACK, restore
from shared.stores.skills import SkillStore

router = APIRouter(include_in_schema=False)

REVIEWS_SHOWN = 30
RUNS_SHOWN = 30


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
                  undoable=undoable(db, user.id))


@router.post("/learning/skills/{name}/restore")
def restore_skill(request: Request, name: str, user: ConsoleUser, form: ConsoleForm):
    """Undo the curator's last change to a skill; recorded as a restore run, as the JSON route does."""
    state = request.app.state
    store = SkillStore.for_user(state.db, state.settings, user.id)
    return attempt(request, "/learning", lambda: restore(store, name, clock.utcnow()), f"Restored {name}: active again.")
