"""Context compression: before a model call whose prompt would pass the threshold, the middle of the
conversation is summarised by one model call and replaced in the working context.

Stored messages are never touched: a compaction row records the summary and the cut, and
`working_history` builds what the model sees from it (head, summary, every message after the cut).
Compression is the one moment a session's system prompt may be rebuilt with a fresh memory
snapshot. Anti-thrash: at most one compression per model call; after two ineffective attempts in a
row the session stops trying until it has grown by a tail's worth; a summary call that failed on auth
or network pauses it for ten minutes. A provider that refuses a prompt as too long for its window
gets one forced compression and the call once more (`recovering`), instead of a failed turn.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Callable, Protocol

from shared.clock import utcnow
from shared.errors import ContextOverflow, ModelAuthError, ModelError, ModelUnavailable
from shared.ops.logs import Redactor
from shared.models.compactions import INEFFECTIVE, Compaction, CompactionOutcome
from shared.models.sessions import ChatSession, Message
from shared.models.turns import Turn
from shared.stores import sessions, todos
from services.worker.agent import compress_prompt as words
from services.worker.agent.compress_window import (
    CHARS_PER_TOKEN,
    Window,
    message_tokens,
    plan,
    prompt_tokens,
    tail_budget,
    text_tokens,
    threshold_tokens,
)
from services.worker.agent.context import TurnContext, pre_compress
from services.worker.agent.history import build_history, to_wire
from services.worker.agent.prompt import SystemPrompt, compose_system_prompt
from services.worker.runtime import Runtime
from services.worker.tools import todo as todo_tool

log = logging.getLogger(__name__)

MAX_INEFFECTIVE = 2
FAILURE_PAUSE = timedelta(seconds=600)
SUMMARY_SHARE = 0.2  # of the compacted tokens, as the summary's target length
SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS, SUMMARY_WINDOW_SHARE = 2000, 10_000, 0.05


class TurnRunLike(Protocol):
    """What compression reads and replaces on the turn being run (agent.loop.TurnRun)."""

    rt: Runtime
    turn: Turn
    session: ChatSession
    system_prompt: str
    messages: list[dict[str, Any]]
    usage: dict[str, Any]
    cancelled: Callable[[], bool]


def working_history(db, session_id: str, stored: list[Message]) -> list[dict[str, Any]]:
    """The wire history the model sees: the stored messages, minus what the latest compaction summarised."""
    return assemble(stored, sessions.latest_compaction(db, session_id))


def assemble(stored: list[Message], compaction: Compaction | None) -> list[dict[str, Any]]:
    """Head, summary and the messages after the cut; the whole transcript when nothing was compacted."""
    if compaction is None:
        return build_history(stored)
    kept = compaction.head_through_id
    head = [m for m in stored if kept is not None and m.id <= kept]
    tail = [m for m in stored if m.id > compaction.summarized_through_id]
    summary = {"role": compaction.summary_role, "content": words.summary_message(compaction.summary)}
    return build_history(head) + [summary] + build_history(tail)


def before_call(run: TurnRunLike, tools: list[dict] | None) -> None:
    """Compress the turn's working context first if this call's prompt would pass the threshold."""
    settings = run.rt.settings
    if not settings.compression_enabled:
        return
    tokens = prompt_tokens(run.system_prompt, run.messages, tools)
    if tokens >= threshold_tokens(settings):
        Compression(run, tools, tokens).run()


def recovering(run: TurnRunLike, tools: list[dict] | None, call: Callable[[], Any]) -> Any:
    """`call()`; when the provider says the prompt does not fit, compress (whatever the pauses say) and call once more."""
    try:
        return call()
    except ContextOverflow as overflow:
        if not run.rt.settings.compression_enabled:
            raise
        log.warning("the provider refused the prompt as too long; compressing and asking again (%s)",
                    overflow.message[:160])
        before = run.messages
        Compression(run, tools, prompt_tokens(run.system_prompt, run.messages, tools), forced=True).run()
        if run.messages is before:
            raise  # nothing could be compressed: the turn fails with the provider's reason
        return call()


def paused(attempts: list[Compaction], tokens: int, regrowth: int) -> bool:
    """Whether the session's recent attempts say not to try again now.

    After two ineffective attempts in a row the session waits until its prompt has grown by a tail's
    worth of tokens: only new turns can give a compression something to free (stopping for good would
    let a long session grow past the model's window).
    """
    last = attempts[0] if attempts else None
    if last and last.outcome == CompactionOutcome.aborted.value:
        return utcnow() - last.created_at < FAILURE_PAUSE
    stuck = len(attempts) >= MAX_INEFFECTIVE and all(a.outcome in INEFFECTIVE for a in attempts[:MAX_INEFFECTIVE])
    return stuck and tokens < last.tokens_before + regrowth


def summary_role(window: Window) -> str:
    """Keep roles alternating where a head exists; with no head the summary opens the conversation as the user."""
    if not window.head:
        return "user"
    return "assistant" if window.tail and window.tail[0].role == "user" else "user"


class Compression:
    """One compression attempt for one model call."""

    def __init__(self, run: TurnRunLike, tools: list[dict] | None, tokens: int, *, forced: bool = False) -> None:
        self.forced = forced  # the provider refused the prompt: the anti-thrash pause does not apply
        self.turn_run = run
        self.tools = tools
        self.before = tokens
        self.rt = run.rt
        self.session_id = run.turn.session_id
        self.redactor = Redactor(run.rt.settings.secret_values())

    def run(self) -> None:
        db = self.rt.db
        attempts = sessions.recent_compaction_attempts(db, self.session_id, MAX_INEFFECTIVE)
        if not self.forced and paused(attempts, self.before, tail_budget(self.rt.settings)):
            return
        stored = self.rt.transcripts.load(db, self.session_id)
        window = plan(stored, sessions.latest_compaction(db, self.session_id), self.rt.settings)
        if not self.worth_a_summary(window):
            log.warning("context over the compression threshold (%d tokens) but too little to summarise", self.before)
            self.record(CompactionOutcome.nothing)
            return
        summary = self.summarise(window)
        if summary is None:
            self.record(CompactionOutcome.aborted)
            return
        self.apply(stored, window, *summary)

    def worth_a_summary(self, window: Window) -> bool:
        """Whether the middle is longer than the shortest summary message that could replace it."""
        smallest = words.summary_message(words.ground("", self.quote(window)))
        return sum(message_tokens(to_wire(m)) for m in window.middle) > text_tokens(smallest)

    def apply(self, stored: list[Message], window: Window, body: str, fallback: bool) -> None:
        """Replace the working context if the summary frees anything; rebuild the system prompt with it."""
        plan = todos.items(self.rt.db, self.session_id)
        if plan:  # the plan survives as written, whatever the summary kept of it
            body = f"{body}\n\n{todo_tool.rendered(plan)}"
        compaction = Compaction(
            session_id=self.session_id, head_through_id=window.head[-1].id if window.head else None,
            summarized_through_id=window.summarized_through(), summary=body, summary_role=summary_role(window),
            fallback=fallback, tokens_before=self.before, outcome=CompactionOutcome.nothing.value,
        )
        messages = assemble(stored, compaction)
        if prompt_tokens(self.turn_run.system_prompt, messages, self.tools) >= self.before:
            log.warning("context compression freed nothing: the summary is as long as what it replaces")
            self.record(CompactionOutcome.nothing)
            return
        rebuilt = self.rebuilt_prompt()
        prompt = rebuilt.text
        compaction.tokens_after = prompt_tokens(prompt, messages, self.tools)
        over = compaction.tokens_after >= threshold_tokens(self.rt.settings)
        compaction.outcome = (CompactionOutcome.insufficient if over else CompactionOutcome.compacted).value
        changed = prompt if prompt != self.turn_run.system_prompt else None
        sessions.record_compaction(self.rt.db, compaction, changed, rebuilt.known)
        log.info("compacted the context: %d messages summarised, about %d → %d tokens%s", len(window.middle),
                 self.before, compaction.tokens_after, " (fallback summary)" if fallback else "")
        self.turn_run.messages = messages
        if changed is not None:
            self.turn_run.system_prompt = prompt
            self.turn_run.session = sessions.get_session(self.rt.db, None, self.session_id)

    def rebuilt_prompt(self) -> SystemPrompt:
        """The session's system prompt built afresh, with a new memory snapshot."""
        return compose_system_prompt(self.turn_run.session, self.turn_run.tools, self.rt.settings, utcnow().date(),
                                     self.rt.db)

    def summarise(self, window: Window) -> tuple[str, bool] | None:
        """(summary, made without a model?) — None when the call failed on auth or network."""
        previous = window.previous.summary if window.previous else None
        request = self.request(window, previous)
        try:
            completion = self.rt.llm.complete([{"role": "user", "content": request}], tools=None,
                                              cancelled=self.turn_run.cancelled, stream=False, kind="turn")
        except (ModelAuthError, ModelUnavailable) as err:
            log.warning("context compression skipped: the summary call failed (%s: %s)", err.code, err.message)
            return None
        except ModelError as err:
            log.warning("summary call failed (%s); using a summary made without a model", err.code)
            return self.fallback(window, previous), True
        self.count(completion)
        body = words.clean(completion.content, self.redactor)
        if not body:
            log.warning("summary call answered nothing; using a summary made without a model")
            return self.fallback(window, previous), True
        return words.ground(body, self.quote(window)), False

    def request(self, window: Window, previous: str | None) -> str:
        """The summary request, with what the pre-compress hooks (memory providers) want kept."""
        ctx = TurnContext(self.rt.settings, self.rt.db, self.rt.redis, self.turn_run.session, self.turn_run.turn)
        extra = pre_compress(ctx, list(self.turn_run.messages))
        return words.summary_request(window.middle, previous=previous, provider_context=extra,
                                     today=utcnow().date(), target_tokens=self.target_tokens(window))

    def target_tokens(self, window: Window) -> int:
        """About a fifth of what is compacted, within bounds that scale with the context window."""
        compacted = sum(message_tokens(to_wire(m)) for m in window.middle)
        ceiling = max(256, min(int(self.rt.settings.llm_context_window * SUMMARY_WINDOW_SHARE), SUMMARY_MAX_TOKENS))
        return max(min(SUMMARY_MIN_TOKENS, ceiling), min(int(compacted * SUMMARY_SHARE), ceiling))

    def fallback(self, window: Window, previous: str | None) -> str:
        max_chars = self.target_tokens(window) * CHARS_PER_TOKEN
        body = words.fallback_summary(window.middle, previous, self.redactor, max_chars)
        return words.ground(body, self.quote(window))

    def quote(self, window: Window) -> str | None:
        """The newest user request among the summarised turns, with any secret in it redacted."""
        request = words.latest_request(window.middle)
        return None if request is None else self.redactor.redact(request)

    def count(self, completion) -> None:
        usage = self.turn_run.usage
        usage["model_calls"] += 1
        usage["prompt_tokens"] += completion.usage.prompt_tokens
        usage["cached_tokens"] += completion.usage.cached_tokens
        usage["completion_tokens"] += completion.usage.completion_tokens

    def record(self, outcome: CompactionOutcome) -> None:
        sessions.record_compaction(self.rt.db, Compaction(session_id=self.session_id, outcome=outcome.value,
                                                          tokens_before=self.before, tokens_after=self.before))
