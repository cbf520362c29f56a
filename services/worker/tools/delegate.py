"""`delegate_task`: hand independent subtasks to child agents that run in parallel on the worker pool.

Each task becomes a turn of its own child session (the same user, workspace, sandbox and skills; the child
toolset: no memory writes, no delegation, no questions, no files sent; commands under the unattended
approval gate), with its own iteration budget and deadline. The calling turn parks until the last child
ends (services/worker/agent/delegation.py) and reads each child's status and summary as this call's result.
Offered only when DELEGATE_MAX_CHILDREN > 0.
"""

from __future__ import annotations

import json
from typing import Any

from shared.errors import InvalidInput
from shared.models.delegations import Delegation, DelegationStatus
from shared.stores.delegations import Task
from services.worker.tools.registry import Tool, ToolContext

MAX_TASKS = 16  # past the cap a task is refused and reported; past this the call itself is refused
MAX_GOAL_CHARS = 2000
MAX_CONTEXT_CHARS = 20_000
CHILD_PREAMBLE = ("[Delegated subtask: another agent handed you one part of its work. Nobody can answer questions "
                  "here, and commands that need approval are refused. Work on the goal alone, then end with a "
                  "short summary of what you did and found: that summary is all the other agent reads.]")
NOT_HERE = "delegate_task runs only in a conversation turn, not here."


def tasks_of(args: dict[str, Any]) -> list[Task]:
    """The call's tasks, checked: 1 to MAX_TASKS objects, each with a goal and an optional context string."""
    raw = args.get("tasks")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_TASKS:
        raise InvalidInput(f"delegate_task needs `tasks`: a list of 1 to {MAX_TASKS} objects with a `goal`.")
    return [_task(i, item) for i, item in enumerate(raw, 1)]


def _task(n: int, item: Any) -> Task:
    if not isinstance(item, dict) or set(item) - {"goal", "context"}:
        raise InvalidInput(f"delegate_task: task {n} must be an object with `goal` and optional `context`.")
    goal, context = item.get("goal"), item.get("context")
    if not isinstance(goal, str) or not goal.strip() or len(goal) > MAX_GOAL_CHARS:
        raise InvalidInput(f"delegate_task: task {n} needs a `goal` string of 1 to {MAX_GOAL_CHARS} characters.")
    if context is not None and (not isinstance(context, str) or len(context) > MAX_CONTEXT_CHARS):
        raise InvalidInput(f"delegate_task: task {n}'s `context` must be a string of at most {MAX_CONTEXT_CHARS} "
                           "characters.")
    text = f"{CHILD_PREAMBLE}\n\nGoal: {goal.strip()}"
    if context and context.strip():
        text += f"\n\nContext:\n{context.strip()}"
    return Task(goal=goal.strip(), text=text)


def result(rows: list[Delegation]) -> str:
    """What the parent reads: every task's status, summary and error, in task order."""
    return _report([_entry(row.position + 1, row.goal, row.status, row.summary, row.error) for row in rows])


def refused_result(tasks: list[Task], cap: int) -> str:
    """No room left under the cap: every task refused at once, none started."""
    why = f"Refused: a turn may start at most {cap} subtasks and has no room left; do the work yourself."
    return _report([_entry(i, t.goal, DelegationStatus.refused.value, None, why) for i, t in enumerate(tasks, 1)])


def _entry(task: int, goal: str, status: str, summary: str | None, error: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"task": task, "goal": goal[:200], "status": status, "summary": summary}
    if error:
        entry["error"] = error
    return entry


def _report(entries: list[dict[str, Any]]) -> str:
    done = sum(1 for entry in entries if entry["status"] == DelegationStatus.completed.value)
    return json.dumps({"completed": done, "of": len(entries), "results": entries}, ensure_ascii=False)


def delegate_task(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Outside a foreground turn (a background review): nobody can wait for children here."""
    tasks_of(args)
    raise InvalidInput(NOT_HERE)


DELEGATE_TASK = Tool(
    name="delegate_task",
    description="Run independent subtasks in parallel child agents; returns each one's status and summary.",
    parameters={"type": "object", "properties": {"tasks": {"type": "array", "items": {
        "type": "object", "properties": {"goal": {"type": "string"}, "context": {"type": "string"}},
        "required": ["goal"]}}}, "required": ["tasks"]},
    handler=delegate_task,
    delegates=True,
    available=lambda settings: settings.delegate_max_children > 0,
)
