"""The gate at work: a tool call's command judged with the user's settings, recorded, refused or parked.

`ToolBatch` asks a gate about every call whose tool names an `approval_command`, before the handler
runs: `run` lets the handler run, `refuse` answers the model with a refusal instead, `ask` parks the
turn (`Parked`). `TurnGate` serves a foreground turn; `UnattendedGate` serves work nobody watches
(background reviews, the curator): it never asks, so what would need a human is refused there.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from shared.config import Settings
from shared.db import Database
from shared.models.approvals import Approval, ApprovalStatus
from shared.models.turns import Turn
from shared.stores import approvals, cron_jobs
from shared.stores.approvals import Verdict

from .gate import Decision, decide, deny_patterns
from .scripts import Workspace

log = logging.getLogger(__name__)

# What the gate records by itself: every step that judged a dangerous or forbidden command.
RECORDED_RULES = frozenset({"hardline", "deny_list", "guardian", "session", "unattended"})


@dataclass(frozen=True)
class Check:
    """run, refuse (with the refusal the model reads) or ask (with what to park)."""

    action: str
    refusal: str | None = None
    verdict: Verdict | None = None


class Parked(Exception):
    """A call needs a human: the turn parks on it (raised after the results before it were handed out)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.command)
        self.verdict = verdict


class CommandGate(Protocol):
    def check(self, call_id: str, tool: str, command: str) -> Check: ...


def refusal(text: str) -> str:
    """The tool result a refused command gets: a clear statement that it did not run."""
    return json.dumps({"error": text, "blocked": True}, ensure_ascii=False)


def refusal_for(decision: Decision) -> str:
    if decision.rule == "hardline":
        return refusal(f"BLOCKED (hard line): {decision.reason}. The command was not run and cannot be run by the "
                       "agent in any approval mode. Do not retry it or a variant of it.")
    if decision.rule == "unattended":
        return refusal(f"BLOCKED: {decision.reason}. This conversation has no way to ask the user for approval, "
                       "so the command was not run. Tell the user it needs their approval in an interactive "
                       "session (for example `hstack chat`), and carry on without it.")
    return refusal(f"BLOCKED: {decision.reason}. The command was not run. Do not retry it; find another way "
                   "or explain to the user what you wanted to do.")


def refusal_for_answer(answer: Approval, timeout_seconds: float) -> str:
    if answer.status == ApprovalStatus.expired.value:
        return refusal(f"BLOCKED: nobody approved this command within {timeout_seconds:g} seconds, so it was not "
                       "run. Silence is not consent: do not retry it without asking the user first.")
    if answer.decided_by == "cancel":
        return refusal("BLOCKED: the turn was cancelled while this command waited for approval; it was not run.")
    return refusal("BLOCKED: the user denied this command, so it was not run. Do NOT retry it; ask the user "
                   "how they want to proceed.")


def _decide(settings: Settings, command: str, *, guardian, interactive: bool, reader: Workspace | None,
            session_approved: frozenset[str] = frozenset(), allowed_kinds: frozenset[str] = frozenset()) -> Decision:
    return decide(command, settings.approval_mode, deny=deny_patterns(settings.approval_deny_patterns),
                  guardian=guardian, interactive=interactive, session_approved=session_approved,
                  allowed_kinds=allowed_kinds, max_chars=settings.approval_max_command_chars, reader=reader)


def _reader(workspace: Path | None) -> Workspace | None:
    return Workspace(workspace) if workspace is not None else None


MCP_WRITE = "a write by an MCP tool"


def write_key(tool: str) -> str:
    """What a session approval of an MCP write remembers: that tool, whatever its arguments."""
    return f"{MCP_WRITE}: {tool}"[:255]


def write_refused(tool: str) -> Check:
    """An MCP write where no human can be asked: refused, the model told it needs approval."""
    reason = f"{MCP_WRITE} ({tool}) needs a human's approval and none can be asked here"
    return Check("refuse", refusal_for(Decision("refuse", reason, "unattended")))


class UnattendedGate:
    """No human to ask and no guardian: the floor and deny list apply, and a dangerous command is refused."""

    def __init__(self, settings: Settings, workspace: Path | None = None) -> None:
        self.settings = settings
        self.reader = _reader(workspace)

    def check(self, call_id: str, tool: str, command: str) -> Check:
        decision = _decide(self.settings, command, guardian=None, interactive=False, reader=self.reader)
        if decision.action == "run":
            return Check("run")
        log.info("approval gate refused a %s command in unattended work (%s)", tool, decision.rule)
        return Check("refuse", refusal_for(decision))

    def check_write(self, call_id: str, tool: str, shown: str) -> Check:
        """An MCP write runs unattended only with approvals off."""
        if self.settings.approval_mode == "off":
            return Check("run")
        return write_refused(tool)


class TurnGate:
    """The gate of one foreground turn: its user's settings, the session's approvals, the turn's answers."""

    def __init__(self, settings: Settings, db: Database, turn: Turn, guardian: Callable[[list[dict]], str] | None,
                 answers: dict[str, Approval] | None = None, workspace: Path | None = None) -> None:
        self.settings = settings
        self.db = db
        self.turn = turn
        self.guardian = guardian
        self.answers = answers or {}
        self.reader = _reader(workspace)

    def allowed_kinds(self) -> frozenset[str]:
        """The command kinds an unattended turn's scheduled job was allowed by its owner (none for a chat)."""
        return frozenset() if self.turn.interactive else cron_jobs.allowed(self.db, self.turn.session_id)

    def check(self, call_id: str, tool: str, command: str) -> Check:
        answer = self.answers.pop(call_id, None)
        if answer is not None and answer.status != ApprovalStatus.approved.value:
            return Check("refuse", refusal_for_answer(answer, self.settings.approval_timeout_seconds))
        decision = _decide(self.settings, command, guardian=None if answer else self.guardian,
                           interactive=self.turn.interactive, reader=self.reader,
                           session_approved=approvals.session_keys(self.db, self.turn.session_id),
                           allowed_kinds=self.allowed_kinds())
        if answer is not None:
            decision = self.approved(answer, decision)
        verdict = Verdict(user_id=self.turn.user_id, session_id=self.turn.session_id, turn_id=self.turn.id,
                          tool_call_id=call_id, command=command, reason=decision.reason, rule=decision.rule,
                          key=decision.key)
        if decision.action == "ask":
            return Check("ask", verdict=verdict)
        if answer is not None and decision.action == "run":
            return Check("run")
        if decision.rule in RECORDED_RULES:
            approvals.record(self.db, verdict, approved=decision.action == "run")
        log.info("approval gate: %s a %s command (%s)", decision.action, tool, decision.rule)
        if decision.action == "run":
            return Check("run")
        return Check("refuse", refusal_for(decision))

    def check_write(self, call_id: str, tool: str, shown: str) -> Check:
        """An MCP tool's write: asked unless approvals are off or the session approved this tool already."""
        answer = self.answers.pop(call_id, None)
        if answer is not None:
            if answer.status != ApprovalStatus.approved.value:
                return Check("refuse", refusal_for_answer(answer, self.settings.approval_timeout_seconds))
            return Check("run")
        key = write_key(tool)
        if self.settings.approval_mode == "off" or key in approvals.session_keys(self.db, self.turn.session_id) \
                or MCP_WRITE in self.allowed_kinds():
            return Check("run")
        verdict = Verdict(user_id=self.turn.user_id, session_id=self.turn.session_id, turn_id=self.turn.id,
                          tool_call_id=call_id, command=shown, reason=f"{MCP_WRITE} ({tool})", rule="mcp_write",
                          key=key)
        if not self.turn.interactive:
            approvals.record(self.db, verdict, approved=False)
            return write_refused(tool)
        return Check("ask", verdict=verdict)

    def approved(self, answer: Approval, now: Decision) -> Decision:
        """A human's approval holds for what they saw: a file it runs that changed since is asked about again."""
        if now.action != "ask" or now.key == answer.key:
            return Decision("run", "approved", "human", answer.key) if now.action != "refuse" else now
        return Decision("ask", f"changed since it was approved: {now.reason}", "dangerous", now.key)
