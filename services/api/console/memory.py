"""Memory: MEMORY.md and USER.md with usage, add / edit / remove, and the agent's staged writes.

Edits go through `MemoryStore.write`, the very rules (limits, threat scan, matching) and messages of the
memory tool and `POST /v1/memory`; a refusal is shown as the tool words it, in `role="alert"`. Staged
writes are decided by `memory_staged.decide`, as `POST /v1/memory/pending/{id}` does.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from services.api.console.actions import refused
from services.api.console.deps import ConsoleForm, ConsoleUser, redirect
from services.api.console.render import render
from shared.errors import HermesError, InvalidInput, NotFound
from shared.stores import memory_staged
from shared.stores.memory import MemoryRequest, MemoryStore

router = APIRouter(include_in_schema=False)

TARGETS = {"memory": "MEMORY.md", "user": "USER.md"}
ACTIONS = ("add", "replace", "remove")


@router.get("/memory")
def memory_page(request: Request, user: ConsoleUser):
    state = request.app.state
    store = MemoryStore.for_user(state.settings, user.id)
    stores = [(target, TARGETS[target], store.view(target)) for target in TARGETS]
    return render(request, "memory.html", active="memory", stores=stores,
                  pending=memory_staged.list_pending(state.db, user.id),
                  write_approval=state.settings.memory_write_approval)


@router.post("/memory/pending/{staged_id}")  # before /memory/{target}/{action}, which would match it
def decide_staged(request: Request, staged_id: str, user: ConsoleUser, form: ConsoleForm):
    choice = form.get("decision", "")
    if choice not in ("approve", "deny"):
        raise InvalidInput("Choose Approve or Deny.")
    state = request.app.state
    try:
        _, result = memory_staged.decide(state.db, state.settings, user.id, staged_id, approve=choice == "approve")
    except HermesError as exc:
        return refused(request, "/memory", exc)
    if result is not None and not result.ok:
        return redirect(request, "/memory", result.message, "alert")
    return redirect(request, "/memory", "Approved and written." if choice == "approve" else "Denied.")


@router.post("/memory/{target}/{action}")
def edit_memory(request: Request, target: str, action: str, user: ConsoleUser, form: ConsoleForm):
    if target not in TARGETS or action not in ACTIONS:
        raise NotFound("There is no such page.")
    args = {"target": target, "action": action}
    if action in ("add", "replace"):
        args["content"] = form.get("content", "")
    if action in ("replace", "remove"):
        args["old_text"] = form.get("old_text", "")
    result = MemoryStore.for_user(request.app.state.settings, user.id).write(MemoryRequest.from_args(args))
    return redirect(request, "/memory", result.message or ("Saved." if result.ok else "Refused."),
                    "status" if result.ok else "alert")
