"""Running one assistant message's tool calls: checked, de-duplicated, planned, executed.

Read-only calls next to each other run in parallel; every other call is a barrier that runs
alone, and a later call never starts before an earlier barrier has finished. Results come back
in call order with exactly one result per call id, whatever order the work finished in.
"""

from __future__ import annotations

import contextvars
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from shared.errors import HermesError
from shared.llm import ToolCall
from services.worker.tools.registry import Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

MAX_TOOL_WORKERS = 8


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


def plan_segments(calls: list[PreparedCall]) -> list[tuple[bool, list[PreparedCall]]]:
    """Ordered (parallel, calls) segments: runs of read-only calls in parallel, the rest one by one."""
    runs: list[tuple[bool, list[PreparedCall]]] = []
    for prepared in calls:
        parallel = prepared.tool is not None and prepared.tool.read_only
        if runs and runs[-1][0] == parallel:
            runs[-1][1].append(prepared)
        else:
            runs.append((parallel, [prepared]))
    segments: list[tuple[bool, list[PreparedCall]]] = []
    for parallel, group in runs:
        parallel = parallel and len(group) > 1  # a lone read gains nothing from a pool
        if segments and not parallel and not segments[-1][0]:
            segments[-1][1].extend(group)
        else:
            segments.append((parallel, group))
    return segments


class ToolBatch:
    """Executes one batch of calls for one turn."""

    def __init__(self, registry: ToolRegistry, ctx: ToolContext, cancelled: Callable[[], bool]) -> None:
        self.registry = registry
        self.ctx = ctx
        self.cancelled = cancelled

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
        for parallel, segment in plan_segments(list(unique.values())):
            if parallel and not self.cancelled():
                outcomes.update(self._parallel(segment))
            else:
                for p in segment:
                    outcomes[p.key] = self._skipped(p) if self.cancelled() else self._execute(p)
                    flush()
            flush()
        return emitted

    def _parallel(self, segment: list[PreparedCall]) -> dict[str, tuple[str, bool]]:
        with ThreadPoolExecutor(max_workers=min(len(segment), MAX_TOOL_WORKERS)) as pool:
            futures = {p.key: pool.submit(contextvars.copy_context().run, self._execute, p) for p in segment}
            return {key: future.result() for key, future in futures.items()}

    @staticmethod
    def _skipped(p: PreparedCall) -> tuple[str, bool]:
        return f"[Tool execution skipped — {p.call.name} was not started: the turn was cancelled.]", False

    def _execute(self, p: PreparedCall) -> tuple[str, bool]:
        """Run one call; a failure becomes an error result the model can read and react to."""
        assert p.tool is not None and p.args is not None
        try:
            p.tool.check_arguments(p.args)
            output = p.tool.handler(self.ctx, p.args)
        except HermesError as exc:
            log.info("tool %s refused: %s", p.call.name, exc.message)
            return error_content(exc.message), False
        except Exception as exc:
            log.exception("tool %s raised", p.call.name)
            return error_content(f"Tool '{p.call.name}' failed: {exc}"), False
        if isinstance(output, str):
            return output, True
        return json.dumps(output, ensure_ascii=False, default=str), True
