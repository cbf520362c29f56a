"""One claimed turn, from the user's message to an answer: model call, tools, repeat.

Every message is stored as it happens, keyed by (turn_id, turn_position), so a turn that a
dead worker left half done resumes from the transcript without duplicating anything and
without re-running a tool whose effect is unknown. The same holds for a turn a stopping worker
hands back before its next model call (services/worker/shutdown.py).

A command that needs a human's approval parks the turn (status `awaiting_approval`, no worker held);
once decided, the turn is queued again and the next attempt continues from the parked tool call
with the decision (`resume_parked`), then carries on as usual. A `clarify` question parks the same way
(status `awaiting_input`) and resumes with the user's choice, or "no answer" after CLARIFY_TIMEOUT_SECONDS.
A `delegate_task` call parks it too (status `awaiting_children`) while its child turns run, and resumes with
their outcomes once the last one ends (services/worker/agent/delegation.py).
"""

from __future__ import annotations

import logging
from typing import Any

from shared.ops import metrics
from shared.clock import utcnow
from shared.errors import ModelError
from shared.llm import Cancelled, Completion, ToolCall
from shared.llm.wire import WireMessage
from shared.ops.logs import session_id_var, turn_id_var
from shared.models.delegations import CHILD_SOURCE
from shared.models.sessions import ChatSession, Message
from shared.models.turns import Turn, TurnStatus
from shared.stores import approvals, clarifications, delegations, sessions, turns
from services.worker.approval.checkpoint import Parked, TurnGate
from services.worker.approval.guardian_call import model_guardian
from services.worker.agent import compress, media
from services.worker.agent.budget import BUDGET_NOTICE, BUDGET_NOTICE_NAME, IterationBudget
from services.worker.agent import delegation
from services.worker.agent.context import TurnContext, after_turn, user_message_for_model
from services.worker.agent.delegation import DelegateParked, TurnDelegations
from services.worker.agent.events import TurnEvents
from services.worker.agent.history import call_name, interrupted_result, to_wire, unanswered_calls
from services.worker.agent.outcome import (
    CANCELLED_MESSAGE,
    INTERNAL_ERROR_MESSAGE,
    TRANSIENT_ERRORS,
    Outcome,
)
from services.worker.agent.prompt import compose_system_prompt
from services.worker.agent.questions import AskParked, TurnQuestions
from services.worker.agent.turn_start import turn_started
from services.worker.agent.toolcalls import CallResult, ToolBatch
from services.worker.runtime import Runtime
from services.worker.shutdown import Released
from services.worker.tools.registry import ToolContext, ToolRegistry
from services.worker.mcp_client import tools as mcp_tools
from services.worker.tools.toolsets import WEBHOOK_SOURCE, tools_for_session

log = logging.getLogger(__name__)


def run_turn(runtime: Runtime, turn: Turn) -> None:
    """Run a turn this worker has claimed and record how it ended."""
    tokens = (turn_id_var.set(turn.id), session_id_var.set(turn.session_id))
    runtime.leases.hold(turn.id, cancel_requested=turn.cancel_requested)
    try:
        TurnRun(runtime, turn).run()
    finally:
        runtime.leases.release(turn.id)
        turn_id_var.reset(tokens[0])
        session_id_var.reset(tokens[1])


def own_rows(stored: list[Message], turn_id: str) -> list[Message]:
    """The turn's rows: the transcript's tail (one turn of a session runs at a time, its rows after every other's)."""
    start = len(stored)
    while start > 0 and stored[start - 1].turn_id == turn_id:
        start -= 1
    return stored[start:]


class TurnRun:
    """The state of one attempt at one turn."""

    def __init__(self, runtime: Runtime, turn: Turn) -> None:
        self.rt = runtime
        self.turn = turn
        self.events = TurnEvents(runtime.redis, turn.id, runtime.settings.event_stream_ttl_seconds)
        self.system_prompt = ""
        self.messages: list[dict[str, Any]] = []
        self.position = 0
        self.partial: list[str] = []
        self.session: ChatSession | None = None
        self.start: sessions.TurnStart | None = None  # what the turn read before its first call
        self.start_after: int | None = None  # the newest message the transcript cache held then
        self.last_rows: list[dict[str, Any]] = []
        self.rows: list[Message] | None = None  # the turn's stored rows, once its history is loaded
        self._tools: ToolRegistry | None = None
        self.images: list[dict] = []  # this turn's image parts, when the model takes images
        self.image_text: str | None = None  # the text of the user message they ride on
        self.image_message: WireMessage | None = None
        self.usage: dict[str, Any] = {
            "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "model_calls": 0, "tool_calls": 0,
            "iterations": 0,
            "model": runtime.llm.model,
        }
        self.usage.update({k: v for k, v in (turn.usage or {}).items() if k in self.usage})  # before a park

    def run(self) -> None:
        self.events.start(self.turn.session_id, {"attempt": self.turn.attempts})
        try:
            outcome = self.outcome()
        except Released:
            self.release()
            return
        except Parked as parked:
            self.park(parked)
            return
        except AskParked as parked:
            self.park_question(parked)
            return
        except DelegateParked as parked:
            self.park_children(parked)
            return
        self.finish(outcome)

    def release(self) -> None:
        """Hand the turn back, its stored progress kept; the draining task re-sends it to another worker."""
        if turns.release_turn(self.rt.db, self.turn.id, self.rt.worker_id) is None:
            log.warning("turn finished elsewhere: this worker lost its lease")
        else:
            log.info("worker stopping: turn handed back after %d model call(s)", self.usage["model_calls"])

    def outcome(self) -> Outcome:
        """Converse, and turn whatever stopped the conversation into an outcome."""
        try:
            return Outcome(TurnStatus.completed, output=self.converse())
        except ModelError as err:
            log.warning("turn failed: %s (%s)", err.message, err.code)
            return Outcome(TurnStatus.failed, error_code=err.code, error_message=err.message)
        except (Released, Parked, AskParked, DelegateParked):
            raise
        except Cancelled:
            if self.rt.shutdown.requested and not self.cancelled():
                raise Released() from None  # the call was abandoned to stop in time, not cancelled by the user
            partial = self.keep_partial()
            return Outcome(TurnStatus.cancelled, output=partial, error_code="cancelled",
                           error_message=CANCELLED_MESSAGE)
        except TRANSIENT_ERRORS:
            raise
        except Exception:
            log.exception("turn stopped by an internal error")
            return Outcome(TurnStatus.failed, error_code="internal_error", error_message=INTERNAL_ERROR_MESSAGE)

    def converse(self) -> str:
        """The agent loop; returns the final answer."""
        self.system_prompt = self.frozen_prompt()
        mine = self.load_history()
        self.rows = list(mine)
        budget = IterationBudget(self.turn.max_iterations or self.rt.settings.max_iterations,
                                 used=sum(1 for m in mine if m.role == "assistant" and m.tool_calls))
        last = mine[-1]
        if last.role == "assistant" and not last.tool_calls:
            return last.content or ""  # the previous worker stored the answer, then stopped
        while True:
            self.check_cancel()
            if not budget.consume():
                return self.summary_answer()
            self.usage["iterations"] = budget.used
            completion = self.call(self.tools.schemas() or None)
            if not completion.tool_calls:
                return self.answer(completion.content)
            self.append([{"role": "assistant", "content": completion.content,
                          "tool_calls": [call.to_openai() for call in completion.tool_calls]}])
            self.run_tools(completion.tool_calls)

    def frozen_prompt(self) -> str:
        """The session's system prompt, built and frozen by the first turn that needs it.

        One read brings the session, the transcript's newest messages and the latest compaction. Turn-start
        hooks (the recall search) begin as soon as the session row is read, so they run while the rest is
        read, the prompt built and the history assembled; a turn resumed with its context already stored
        never asks for their result.
        """
        after = self.rt.transcripts.last_id(self.turn.session_id)
        self.start = sessions.turn_start(self.rt.db, self.turn.session_id, after,
                                         self.begin if self.turn.attempts <= 1 else None, self.turn.id)
        self.start_after = after
        session = self.start.session
        self.session = session
        if session.system_prompt is None:
            prompt = compose_system_prompt(session, self.tools, self.rt.settings, utcnow().date(), self.rt.db)
            self.session = sessions.freeze_system_prompt(self.rt.db, session.id, prompt.text, prompt.known)
        return self.session.system_prompt

    @property
    def tools(self) -> ToolRegistry:
        """The tools this turn's source may use (services/worker/tools/toolsets.py), worked out once."""
        if self._tools is None:
            offered = tools_for_session(self.rt.tools, self.rt.settings, self.rt.db, self.session)
            self._tools = mcp_tools.for_turn(offered, self.rt.settings, self.turn.user_id, self.turn.session_id,
                                             writes=self.session.source != WEBHOOK_SOURCE)
        return self._tools

    def begin(self, session: ChatSession) -> None:
        """The turn-start hooks, as soon as the session row is read (the rest of the turn's reads follow)."""
        turn_started(TurnContext(self.rt.settings, self.rt.db, self.rt.redis, session, self.turn))

    def load_history(self) -> list[Message]:
        """Load the session's transcript; close a tool batch a stopped worker left open. Returns this turn's rows."""
        session_id = self.turn.session_id
        stored = self.rt.transcripts.extend(session_id, self.start_after, self.start.messages)
        if stored is None:
            stored = self.rt.transcripts.load(self.rt.db, session_id)
        mine = own_rows(stored, self.turn.id)
        self.position = max(m.turn_position for m in mine) + 1
        self.add_turn_context(mine[0])
        open_calls = unanswered_calls(mine)
        if open_calls and self.resume_parked(open_calls):
            stored = self.rt.transcripts.load(self.rt.db, session_id)
            mine, open_calls = own_rows(stored, self.turn.id), []
            self.messages = compress.working_history(self.rt.db, session_id, stored)
        else:
            compaction = self.start.compaction
            self.messages = (self.rt.transcripts.history(session_id, stored) if compaction is None
                             else compress.assemble(stored, compaction))
        if open_calls:
            log.warning("resuming turn: %d tool call(s) of the stopped worker have unknown effects", len(open_calls))
            rows = [{"role": "tool", "content": interrupted_result(call_name(c)), "tool_call_id": c["id"],
                     "name": call_name(c)} for c in open_calls]
            mine += self.store(rows)  # the working history already holds the same results
        return mine

    def resume_parked(self, open_calls: list[dict[str, Any]]) -> bool:
        """Continue the batch from the call the turn parked on, with its decision; False when it did not park.

        The decision is taken once: an attempt that dies while running an approved command leaves it
        answered as interrupted for the next, never run twice.
        """
        call_id = open_calls[0]["id"]
        children = delegations.results_for(self.rt.db, self.turn.id, call_id)
        gate, questions = self.settled(call_id) if children is None else (None, None)
        if gate is None and questions is None and children is None:
            return False
        if children is not None:
            log.info("resuming parked turn: its %d subtask(s) ended", len(children))
        calls = [ToolCall(c["id"], call_name(c), (c.get("function") or {}).get("arguments") or "") for c in open_calls]
        self.messages = []
        ToolBatch(self.tools, self.tool_context(), self.cancelled, gate or self.gate(),
                  questions or TurnQuestions(self.turn),
                  self.delegations({call_id: children} if children is not None else None)).run(
            calls, self.on_tool_result)
        return True

    def settled(self, call_id: str) -> tuple[TurnGate | None, TurnQuestions | None]:
        """What the turn parked on for this call, taken once: an approval's decision or a question's answer."""
        answer = approvals.answer_for(self.rt.db, self.turn.id, call_id)
        if answer is not None:
            took = approvals.take(self.rt.db, answer.id)
            log.info("resuming parked turn: approval %s was %s", answer.id, answer.status)
            return (self.gate({call_id: answer}) if took else None), None
        asked = clarifications.answer_for(self.rt.db, self.turn.id, call_id)
        if asked is None or not clarifications.take(self.rt.db, asked.id):
            return None, None
        log.info("resuming parked turn: question %s was %s", asked.id, asked.status)
        return None, TurnQuestions(self.turn, {call_id: asked})

    def delegations(self, settled: dict | None = None) -> TurnDelegations:
        """This turn's `delegate_task` calls (`settled`: the children's outcomes it resumed with)."""
        source = self.session.source if self.session is not None else ""
        return TurnDelegations(self.rt, self.turn, source, settled)

    def gate(self, answers: dict | None = None) -> TurnGate:
        """The approval gate of this turn; the guardian is asked only in smart mode."""
        guardian = model_guardian(self.rt.settings, self.rt.redis) if self.rt.settings.approval_mode == "smart" else None
        return TurnGate(self.rt.settings, self.rt.db, self.turn, guardian, answers,
                        workspace=self.tool_context().workspace)

    def tool_context(self) -> ToolContext:
        return ToolContext(user_id=self.turn.user_id, session_id=self.turn.session_id, turn_id=self.turn.id,
                           settings=self.rt.settings, cancelled=self.cancelled)

    def park(self, parked: Parked) -> None:
        """Commit the question and leave the turn parked; its worker goes on with other work."""
        row = approvals.park(self.rt.db, parked.verdict, self.rt.worker_id, self.rt.settings.approval_timeout_seconds,
                             usage=self.usage)
        if row is None:
            log.warning("turn finished elsewhere: this worker lost its lease")
            return
        log.info("turn parked: approval %s awaits a decision", row.id)
        self.events.emit("approval.requested", {"approval_id": row.id, "command": row.command, "reason": row.reason,
                                                "expires_at": row.expires_at.isoformat()})

    def park_question(self, parked: AskParked) -> None:
        """Commit the agent's question and leave the turn waiting for the answer (`awaiting_input`)."""
        row = clarifications.park(self.rt.db, parked.question, self.rt.worker_id,
                                  self.rt.settings.clarify_timeout_seconds, usage=self.usage)
        if row is None:
            log.warning("turn finished elsewhere: this worker lost its lease")
            return
        log.info("turn parked: question %s awaits an answer", row.id)
        self.events.emit("clarify.requested", {"clarification_id": row.id, "question": row.question,
                                               "choices": row.choices, "expires_at": row.expires_at.isoformat()})

    def park_children(self, parked: DelegateParked) -> None:
        """Start the call's children and leave the turn waiting for them (`awaiting_children`)."""
        if not delegation.park(self.rt, self.turn, parked.plan, self.usage):
            log.warning("turn finished elsewhere: this worker lost its lease")

    def add_turn_context(self, user_message: Message) -> None:
        """Fix, once, what the model is sent for this turn's user message (the text, its files, context blocks)."""
        settings, db = self.rt.settings, self.rt.db
        if user_message.api_content is not None:
            self.images = media.images_again(settings, db, self.turn, user_message.api_content)
            self.image_text = user_message.api_content
            return
        has_files = self.start is None or self.start.has_files
        prepared = media.prepare(settings, db, self.turn, user_message) if has_files else None
        ctx = TurnContext(settings, db, self.rt.redis, self.session, self.turn)
        text = user_message_for_model(ctx, prepared.text if prepared else None)
        if text is not None:
            user_message.api_content = sessions.set_api_content(db, user_message.id, text)
        if prepared and prepared.images:
            self.images, self.image_text = prepared.images, user_message.api_content

    def with_images(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history with this turn's user message carrying its images as content parts (built once)."""
        if not self.images:
            return messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.get("role") == "user" and message.get("content") == self.image_text:
                if self.image_message is None:
                    self.image_message = WireMessage(role="user", content=[
                        {"type": "text", "text": message.get("content") or ""}, *self.images])
                return [*messages[:index], self.image_message, *messages[index + 1:]]
        return messages

    def summary_answer(self) -> str:
        """The budget ran out: ask once more, without tools, for a summary."""
        notice = {"role": "user", "content": BUDGET_NOTICE}
        self.usage["budget_exhausted"] = True  # what a parent reads of a child that ran out
        if self.messages[-1] != notice:
            self.append([{**notice, "name": BUDGET_NOTICE_NAME}])
        return self.answer(self.call(None).content)

    def answer(self, text: str | None) -> str:
        """The final answer, stored by `finish` together with the turn's outcome."""
        self.last_rows = self.keyed([{"role": "assistant", "content": text}])
        return text or ""

    def call(self, tools: list[dict] | None) -> Completion:
        """One model call with the frozen system prompt first; deltas go to the event stream.

        A stopping worker starts no new call: this is the safe point where it hands the turn back.
        """
        if self.rt.shutdown.requested:
            raise Released()
        compress.before_call(self, tools)
        self.partial = []
        completion = compress.recovering(self, tools, lambda: self.rt.llm.complete(
            [{"role": "system", "content": self.system_prompt}, *self.with_images(self.messages)], tools=tools,
            on_delta=self.on_delta, cancelled=self.interrupted, kind="turn"))
        self.partial = []
        self.usage["model_calls"] += 1
        self.usage["prompt_tokens"] += completion.usage.prompt_tokens
        self.usage["cached_tokens"] += completion.usage.cached_tokens
        self.usage["completion_tokens"] += completion.usage.completion_tokens
        self.usage["model"] = completion.model or self.usage["model"]
        return completion

    def on_delta(self, text: str) -> None:
        self.partial.append(text)
        self.events.emit("message.delta", {"delta": text})

    def cancelled(self) -> bool:
        return self.rt.leases.is_cancelled(self.turn.id)

    def interrupted(self) -> bool:
        """Stop the model call: the user cancelled, or the worker must leave before it could finish."""
        return self.cancelled() or self.rt.shutdown.overdue()

    def check_cancel(self) -> None:
        if self.cancelled():
            raise Cancelled()

    def keep_partial(self) -> str | None:
        """Store the text streamed before a cancellation, so the transcript shows what the user saw."""
        text = "".join(self.partial)
        self.partial = []
        if not text:
            return None
        return self.answer(text)

    def run_tools(self, calls: list[ToolCall]) -> None:
        """Execute one batch; results are stored and announced in call order."""
        for call in calls:
            self.events.emit("tool.started", {"id": call.id, "name": call.name, "arguments": call.arguments})
        ToolBatch(self.tools, self.tool_context(), self.cancelled, self.gate(), TurnQuestions(self.turn),
                  self.delegations()).run(calls, self.on_tool_result)
        if any(call.name == mcp_tools.NAME for call in calls):
            self._tools = None  # an MCP server's tools were loaded: the next call offers them

    def on_tool_result(self, result: CallResult) -> None:
        self.append([{"role": "tool", "content": result.content, "tool_call_id": result.id, "name": result.name}])
        self.events.emit("tool.completed", {"id": result.id, "name": result.name, "ok": result.ok})
        self.usage["tool_calls"] += 1
        tool = result.name if result.name in self.tools else "unknown"
        metrics.inc(self.rt.redis, "hstack_tool_calls_total", labels={"tool": tool})

    def keyed(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows at the next positions of this turn: a position already stored is kept, never duplicated."""
        out = []
        for row in rows:
            out.append({**row, "turn_id": self.turn.id, "turn_position": self.position})
            self.position += 1
        return out

    def store(self, rows: list[dict[str, Any]]) -> list[Message]:
        """Persist rows now."""
        stored = sessions.append_messages(self.rt.db, self.turn.session_id, self.keyed(rows))
        if self.rows is not None:
            self.rows += stored
        return stored

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Persist rows and add them to the history the model sees next."""
        self.messages += [to_wire(m) for m in self.store(rows)]

    def finish(self, outcome: Outcome) -> None:
        """Record the outcome, then announce it; a worker that lost the lease says nothing more."""
        owned = turns.finish_turn(self.rt.db, self.turn.id, self.rt.worker_id, outcome.status, output=outcome.output,
                                  error_code=outcome.error_code, error_message=outcome.error_message,
                                  usage=self.usage, messages=self.last_rows)
        if not owned:
            log.warning("turn finished elsewhere: this worker lost its lease")
            return
        event, data = outcome.event
        if event == "turn.completed":
            data["usage"] = self.usage
        self.events.emit(event, data)
        self.record_metrics(outcome.status)
        if self.session is None or self.session.source == CHILD_SOURCE:
            # A child's parent hears of it (a no-op for other turns). A child writes no memory, so no after-turn
            # hook runs for it: no review of its session, no provider sync.
            delegation.child_finished(self.rt, self.turn)
            return
        ctx = TurnContext(self.rt.settings, self.rt.db, self.rt.redis, self.session, self.turn, self.stored_rows())
        after_turn(ctx, outcome.status.value, outcome.output)

    def stored_rows(self) -> tuple[Message, ...] | None:
        """The turn's rows as stored, its last ones included: what the after-turn hooks would read back."""
        if self.rows is None:
            return None
        last = [Message(session_id=self.turn.session_id, **row) for row in self.last_rows]
        return (*self.rows, *last)

    def record_metrics(self, status: TurnStatus) -> None:
        seconds = (utcnow() - self.turn.created_at).total_seconds()
        metrics.record(
            self.rt.redis,
            observations=[("hstack_turn_duration_seconds", seconds, None)],
            increments=[
                ("hstack_turns_finished_total", 1, {"status": status.value}),
                ("hstack_tokens_total", self.usage["prompt_tokens"], {"kind": "prompt"}),
                ("hstack_tokens_total", self.usage["completion_tokens"], {"kind": "completion"}),
            ],
        )
