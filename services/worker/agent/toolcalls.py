"""Running one assistant message's tool calls: checked, de-duplicated, planned, executed.

Calls next to each other run in parallel when each is read-only or touches only its own path
(`Tool.path_arg`: read_file, write_file, patch) and no two of them touch overlapping paths (the
same file, or a folder and something in it); every other call, and any `exclusive` tool, is a
barrier that runs alone, and a later call never starts before an earlier barrier has finished.
Results come back in call order with exactly one result per call id, whatever order the work
finished in.

A call whose tool names an `approval_command` is a barrier too, and the approval gate judges its
command first (services/worker/approval/checkpoint.py): run, refuse (the model reads the refusal, the
handler never runs), or ask, which raises `Parked` once every result before the call is handed out.
Without a gate the batch is unattended: nothing is ever asked, what would need a human is refused.

Every call runs on its own daemon thread while the turn's thread waits, polling the cancel flag:
a cancelled turn, or a call past TOOL_TIMEOUT_SECONDS, stops waiting and answers for the call.
A tool that never returns is abandoned, not joined; its `ctx.cancelled()` turns true so a
cooperative tool can stop.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import posixpath
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from shared.errors import HermesError
from shared.llm import ToolCall
from services.worker.approval.checkpoint import CommandGate, Parked, UnattendedGate
from services.worker.agent.delegation import DelegateParked, TurnDelegations
from services.worker.agent.questions import AskParked, TurnQuestions
from services.worker.tools.registry import Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

MAX_TOOL_WORKERS = 8
MAX_FAILURE_CHARS = 300
POLL_SECONDS = 0.1  # how often a waiting turn looks at its cancel flag
CANCEL_GRACE_SECONDS = 0.3  # a cooperative tool that noticed the cancel may still answer in this time


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call id."""

    id: str
    name: str
    content: str
    ok: bool


@dataclass(frozen=True)
class PreparedCall:
    """A call with its tool and parsed arguments, or the error that stops it from running."""

    call: ToolCall
    tool: Tool | None
    args: dict[str, Any] | None
    error: str | None

    @property
    def key(self) -> str:
        """Identical (name, arguments) pairs share one execution."""
        return self.call.name + "\x00" + json.dumps(self.args, sort_keys=True, ensure_ascii=False)


def error_content(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def prepare(call: ToolCall, registry: ToolRegistry) -> PreparedCall:
    """Resolve the tool and parse the arguments; unknown tools and non-object JSON never run."""
    tool = registry.get(call.name)
    if tool is None:
        available = ", ".join(registry.names()) or "none"
        return PreparedCall(call, None, None, error_content(f"Unknown tool '{call.name}'. Available: {available}"))
    try:
        args = json.loads(call.arguments) if call.arguments and call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return PreparedCall(call, tool, None, error_content(f"Invalid tool arguments: {exc.msg} (not valid JSON)"))
    if not isinstance(args, dict):
        return PreparedCall(call, tool, None, error_content("Invalid tool arguments: expected a JSON object"))
    return PreparedCall(call, tool, args, None)


def plan_segments(calls: list[PreparedCall], root: Path | None = None) -> list[tuple[bool, list[PreparedCall]]]:
    """Ordered (parallel, calls) segments, Hermes Agent's planner.

    A run of parallel-safe calls grows until a barrier, or until a path-scoped call overlaps a path
    already in the run (that call starts the next run). Paths are compared canonical: resolved
    under `root` (symlinks followed) when given, else normalised. Runs of one call are demoted to
    sequential, and sequential neighbours merge.
    """
    segments: list[tuple[bool, list[PreparedCall]]] = []
    run: list[PreparedCall] = []
    reserved: list[str] = []

    def close_run() -> None:
        if run:
            segments.append((True, run[:]))
            run.clear()
            reserved.clear()

    for prepared in calls:
        kind, path = _concurrency(prepared, root)
        if kind == "barrier":
            close_run()
            segments.append((False, [prepared]))
            continue
        if path is not None:
            if any(_overlaps(path, other) for other in reserved):
                close_run()
            reserved.append(path)
        run.append(prepared)
    close_run()
    merged: list[tuple[bool, list[PreparedCall]]] = []
    for parallel, group in segments:
        parallel = parallel and len(group) > 1  # a lone call gains nothing from a pool
        if merged and not parallel and not merged[-1][0]:
            merged[-1][1].extend(group)
        else:
            merged.append((parallel, group))
    return merged


def _concurrency(prepared: PreparedCall, root: Path | None) -> tuple[str, str | None]:
    """("barrier", None), ("path", canonical path) or ("free", None) for one call."""
    tool, args = prepared.tool, prepared.args
    if tool is None or args is None or tool.exclusive or tool.approval_command is not None:
        return "barrier", None
    if tool.path_arg is not None:
        value = args.get(tool.path_arg)
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            return "barrier", None
        return "path", _canonical(value, root)
    return ("free", None) if tool.read_only else ("barrier", None)


def _canonical(path: str, root: Path | None) -> str:
    if root is None:
        return posixpath.normpath(posixpath.join("/", path))
    return os.path.realpath(os.path.join(root, path))


def _overlaps(a: str, b: str) -> bool:
    """The same path, or one inside the other."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


class ToolBatch:
    """Executes one batch of calls for one turn."""

    def __init__(self, registry: ToolRegistry, ctx: ToolContext, cancelled: Callable[[], bool],
                 gate: CommandGate | None = None, questions: TurnQuestions | None = None,
                 delegations: TurnDelegations | None = None) -> None:
        self.registry = registry
        self.ctx = ctx
        self.cancelled = cancelled
        self.gate = gate if gate is not None else UnattendedGate(ctx.settings, ctx.workspace)
        self.questions = questions  # None: nobody to ask, the tool's own handler answers
        self.delegations = delegations  # None: no turn to park, the tool's own handler refuses

    def run(self, calls: list[ToolCall], on_result: Callable[[CallResult], None]) -> list[CallResult]:
        """Run the calls; `on_result` sees each result in call order as soon as it and all before it are known."""
        prepared = [prepare(call, self.registry) for call in calls]
        unique: dict[str, PreparedCall] = {}
        for p in prepared:
            if p.error is None:
                unique.setdefault(p.key, p)
        outcomes: dict[str, tuple[str, bool]] = {}
        emitted: list[CallResult] = []

        def flush() -> None:
            while len(emitted) < len(prepared):
                p = prepared[len(emitted)]
                if p.error is None and p.key not in outcomes:
                    return
                content, ok = (p.error, False) if p.error is not None else outcomes[p.key]
                emitted.append(CallResult(p.call.id, p.call.name, content, ok))
                on_result(emitted[-1])

        flush()
        for parallel, segment in plan_segments(list(unique.values()), self.ctx.workspace):
            if parallel and not self.cancelled():
                outcomes.update(self._parallel(segment))
            else:
                for p in segment:
                    outcomes[p.key] = self._skipped(p) if self.cancelled() else self._gated(p, flush)
                    flush()
            flush()
        return emitted

    def _gated(self, p: PreparedCall, flush: Callable[[], None]) -> tuple[str, bool]:
        """Run the call, unless the approval gate refuses its command or parks the turn on it."""
        if p.tool is not None and p.tool.asks_user and p.args is not None and self.questions is not None:
            return self._asked(p, flush)
        if p.tool is not None and p.tool.delegates and p.args is not None and self.delegations is not None:
            return self._delegated(p, flush)
        if p.tool is not None and p.tool.approval_write is not None and p.args is not None:
            return self._gated_write(p, flush)
        if p.tool is None or p.tool.approval_command is None or p.args is None:
            return self._run_one(p)
        try:
            p.tool.check_arguments(p.args)
        except HermesError as exc:
            return error_content(exc.message), False
        command = p.tool.approval_command(p.args)
        if not isinstance(command, str) or not command.strip():
            return error_content(f"{p.call.name}: there is no command to run."), False
        check = self.gate.check(p.call.id, p.call.name, command)
        if check.action == "run":
            return self._run_one(p)
        if check.action == "refuse":
            return check.refusal or error_content("The command was refused."), False
        flush()  # every result before the parked call is handed out (and stored) first
        raise Parked(check.verdict)

    def _gated_write(self, p: PreparedCall, flush: Callable[[], None]) -> tuple[str, bool]:
        """A write the gate cannot read as a command (an MCP tool's): run, refused, or the turn parks on it."""
        try:
            p.tool.check_arguments(p.args)
        except HermesError as exc:
            return error_content(exc.message), False
        check_write = getattr(self.gate, "check_write", None)
        if check_write is None:  # a gate that knows only commands cannot judge it: nobody approved it
            return error_content(f"{p.call.name}: a write by an MCP tool needs approval and none can be asked."), False
        check = check_write(p.call.id, p.call.name, p.tool.approval_write(p.args))
        if check.action == "run":
            return self._run_one(p)
        if check.action == "refuse":
            return check.refusal or error_content("The write was refused."), False
        flush()
        raise Parked(check.verdict)

    def _asked(self, p: PreparedCall, flush: Callable[[], None]) -> tuple[str, bool]:
        """A question to the user: its answer when settled, else the turn parks on it."""
        return self._settled_or_parked(p, flush, self.questions, AskParked)

    def _delegated(self, p: PreparedCall, flush: Callable[[], None]) -> tuple[str, bool]:
        """Subtasks for child agents: their outcomes when settled, else the turn parks on new children."""
        return self._settled_or_parked(p, flush, self.delegations, DelegateParked)

    def _settled_or_parked(self, p: PreparedCall, flush: Callable[[], None], waits: Any,
                           parked: type[Exception]) -> tuple[str, bool]:
        """A call that waits on people or other turns: `waits.check` gives its result once settled (a string),
        else what to park on; every result before the call is handed out (and stored) before the turn parks."""
        try:
            p.tool.check_arguments(p.args)
            outcome = waits.check(p.call.id, p.args)
        except HermesError as exc:
            return error_content(exc.message), False
        if isinstance(outcome, str):
            return outcome, True
        flush()
        raise parked(outcome)

    def _parallel(self, segment: list[PreparedCall]) -> dict[str, tuple[str, bool]]:
        outcomes: dict[str, tuple[str, bool]] = {}
        for start in range(0, len(segment), MAX_TOOL_WORKERS):
            outcomes.update(self._run_group(segment[start:start + MAX_TOOL_WORKERS]))
        return outcomes

    def _run_one(self, p: PreparedCall) -> tuple[str, bool]:
        return self._run_group([p])[p.key]

    def _run_group(self, group: list[PreparedCall]) -> dict[str, tuple[str, bool]]:
        """Start the calls together, each on its own thread, and wait for them."""
        woken = threading.Event()
        calls = [RunningCall(p, self.ctx, p.tool.seconds_allowed(self.ctx, p.args), woken) for p in group]
        for call in calls:
            call.start(self._execute)
        return self._wait(calls, woken)

    def _wait(self, calls: list["RunningCall"], woken: threading.Event) -> dict[str, tuple[str, bool]]:
        """Wait for the calls; a cancel or a call's time limit ends the wait for what is still running."""
        outcomes: dict[str, tuple[str, bool]] = {}
        cancelled_at: float | None = None
        while True:
            woken.clear()
            for call in calls:
                if call.key not in outcomes and call.finished.is_set():
                    outcomes[call.key] = call.result()
            running = [call for call in calls if call.key not in outcomes]
            if not running:
                return outcomes
            now = time.monotonic()
            if cancelled_at is None and self.cancelled():
                cancelled_at = now
            for call in running:
                if cancelled_at is not None and now - cancelled_at >= CANCEL_GRACE_SECONDS:
                    outcomes[call.key] = call.abandon(_cancelled_result(call.name))
                elif now >= call.deadline:
                    outcomes[call.key] = call.abandon(_timeout_result(call.name, call.timeout))
            if len(outcomes) < len(calls):
                woken.wait(POLL_SECONDS)

    @staticmethod
    def _skipped(p: PreparedCall) -> tuple[str, bool]:
        return f"[Tool execution skipped — {p.call.name} was not started: the turn was cancelled.]", False

    @staticmethod
    def _execute(p: PreparedCall, ctx: ToolContext) -> tuple[str, bool]:
        """Run one call; a failure becomes an error result the model can read, without server paths or ids."""
        assert p.tool is not None and p.args is not None
        try:
            p.tool.check_arguments(p.args)
            output = p.tool.handler(ctx, p.args)
        except HermesError as exc:
            log.info("tool %s refused: %s", p.call.name, exc.message)
            return error_content(ctx.hide_paths(exc.message)), False
        except Exception as exc:
            log.exception("tool %s raised", p.call.name)
            return error_content(ctx.hide_paths(_failure(p.call.name, exc), foreign=True)), False
        if isinstance(output, str):
            return output, True
        return json.dumps(output, ensure_ascii=False, default=str), True


def _failure(name: str, exc: Exception) -> str:
    """What the model hears of an unexpected exception: its first line, short (the log keeps the rest)."""
    lines = str(exc).strip().splitlines()
    detail = lines[0][:MAX_FAILURE_CHARS] if lines else type(exc).__name__
    return f"Tool '{name}' failed: {detail}"


def _cancelled_result(name: str) -> tuple[str, bool]:
    return f"[cancelled] {name} was still running when the turn was cancelled; its effects are unknown.", False


def _timeout_result(name: str, seconds: float) -> tuple[str, bool]:
    return error_content(f"Tool '{name}' did not finish within {seconds:g} s and was abandoned; its effects are "
                         "unknown. Try a smaller request."), False


class RunningCall:
    """One call on its own daemon thread; the waiting turn may abandon it, never joins it."""

    def __init__(self, p: PreparedCall, ctx: ToolContext, timeout: float, woken: threading.Event) -> None:
        self.p = p
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.finished = threading.Event()
        self._woken = woken  # shared by the calls a turn waits for together
        self.outcome: tuple[str, bool] = error_content(f"Tool '{p.call.name}' stopped without a result."), False
        self._raised: BaseException | None = None
        self._abandoned = threading.Event()
        turn_cancelled = ctx.cancelled
        self.ctx = replace(ctx, cancelled=lambda: self._abandoned.is_set() or turn_cancelled())
        self.thread: threading.Thread | None = None

    @property
    def key(self) -> str:
        return self.p.key

    @property
    def name(self) -> str:
        return self.p.call.name

    def start(self, execute: Callable[[PreparedCall, ToolContext], tuple[str, bool]]) -> None:
        """Run `execute` on a daemon thread, in a copy of the caller's context variables."""
        context = contextvars.copy_context()

        def target() -> None:
            try:
                self.outcome = context.run(execute, self.p, self.ctx)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which re-raises it
                self._raised = exc
            finally:
                self.finished.set()
                self._woken.set()

        self.thread = threading.Thread(target=target, name=f"tool-{self.name}", daemon=True)
        self.thread.start()

    def result(self) -> tuple[str, bool]:
        """The finished call's outcome; what `_execute` does not catch (a worker going away) is raised here."""
        if self._raised is not None:
            raise self._raised
        return self.outcome

    def abandon(self, outcome: tuple[str, bool]) -> tuple[str, bool]:
        """Stop waiting: tell the tool through `ctx.cancelled()` and answer with `outcome` instead."""
        self._abandoned.set()
        log.warning("tool %s abandoned while still running: %s", self.name, outcome[0][:120])
        return outcome
