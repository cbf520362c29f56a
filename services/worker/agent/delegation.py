"""A turn's `delegate_task` calls: answered from its settled children, refused at once, or parked on new children.

The parent parks like an approval (`DelegateParked`, status `awaiting_children`, no worker held); each child
is a turn of its own on the `turns` queue. When a child's turn ends, its worker records the outcome
(`child_finished`) and, for the call's last child, sends the parent back through `send_turn`; the curator's
sweep does the same for children that ended unseen, ran past their deadline or lost their parent.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from shared.messaging import delegate_events
from shared.models.delegations import CHILD_SOURCE, Delegation
from shared.models.turns import Turn
from shared.queue.turns import send_turn
from shared.stores import delegations
from shared.stores.delegations import Limits, Task
from services.worker.runtime import Runtime
from services.worker.tools.delegate import refused_result, result, tasks_of

log = logging.getLogger(__name__)

DEPTH_REFUSED = "delegate_task is not available to a subtask: do the work yourself."


@dataclass(frozen=True)
class Plan:
    """The children one call would start."""

    call_id: str
    tasks: list[Task]


class DelegateParked(Exception):
    """A `delegate_task` call waits for its children: the turn parks on it (after the results before it)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan.call_id)
        self.plan = plan


class TurnDelegations:
    """The delegations of one turn and the children's outcomes it resumed with."""

    def __init__(self, rt: Runtime, turn: Turn, source: str, settled: dict[str, list[Delegation]] | None = None):
        self.rt = rt
        self.turn = turn
        self.source = source
        self.settled = settled or {}

    def check(self, call_id: str, args: dict[str, Any]) -> str | Plan:
        """The call's result when it has one now, else the children to park on."""
        rows = self.settled.pop(call_id, None)
        if rows is not None:
            return result(rows)
        tasks = tasks_of(args)
        if self.source == CHILD_SOURCE:
            return json.dumps({"error": DEPTH_REFUSED}, ensure_ascii=False)
        cap = self.rt.settings.delegate_max_children
        if delegations.started_count(self.rt.db, self.turn.id) >= cap:
            return refused_result(tasks, cap)
        return Plan(call_id, tasks)


def limits(rt: Runtime) -> Limits:
    s = rt.settings
    return Limits(max_children=s.delegate_max_children, max_iterations=s.delegate_max_iterations,
                  timeout_seconds=s.delegate_child_timeout_seconds, max_running=s.max_running_turns_per_user)


def park(rt: Runtime, turn: Turn, plan: Plan, usage: dict) -> bool:
    """Park the turn and start its children, announce each, send those a slot allows; False: the lease was lost."""
    started = delegations.start(rt.db, turn, plan.call_id, plan.tasks, rt.worker_id, usage, limits(rt))
    if started is None:
        return False
    for row in started.rows:
        delegate_events.publish(rt.redis, row)
    for child in started.send:
        send_turn(rt.enqueue, child.id, child.session_id)
    log.info("turn parked: %d subtask(s) started", sum(1 for r in started.rows if r.child_turn_id))
    return True


def child_finished(rt: Runtime, turn: Turn) -> None:
    """A child's turn ended here: record it for its parent, announce it, send the parent on if it was the last."""
    try:
        settled = delegations.settle_child(rt.db, turn.id)
    except Exception:  # the sweep settles it later; the child's own outcome is already stored
        log.warning("could not settle subtask turn %s now; the sweep will", turn.id, exc_info=True)
        return
    if settled is None:
        return
    delegate_events.publish(rt.redis, settled.row)
    if settled.resume is not None:
        send_turn(rt.enqueue, settled.resume.id, settled.resume.session_id)
