"""Tools the agent may call: their schemas, handlers, and the registry services/worker/registrations.py fills."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from shared.config import Settings
from shared.errors import HermesError, InvalidInput
from shared.security.paths import private_paths_hidden

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


@dataclass
class ToolContext:
    """What a running tool knows about its caller."""

    user_id: str
    session_id: str
    turn_id: str
    settings: Settings
    cancelled: Callable[[], bool] = field(default=lambda: False)

    @property
    def workspace(self) -> Path:
        """The user's private working directory, created on first use."""
        path = Path(self.settings.data_dir) / "users" / self.user_id / "workspace"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def hide_paths(self, text: str, *, foreign: bool = False) -> str:
        """`text` fit for the model: workspace-relative paths, no DATA_DIR, no user id (`foreign`: no other path)."""
        return private_paths_hidden(text, data_dir=Path(self.settings.data_dir), user_id=self.user_id,
                                    foreign_paths=foreign)


Handler = Callable[[ToolContext, dict[str, Any]], "str | dict[str, Any]"]


@dataclass(frozen=True)
class Tool:
    """One callable tool and how it may share a batch with others (see agent/toolcalls.plan_segments).

    `read_only` tools run in parallel with each other; a tool with `path_arg` touches the one path
    that argument names and runs in parallel with calls whose paths do not overlap its own;
    an `exclusive` tool (a shell) always runs alone; any other tool is a barrier that runs alone too.
    A tool with `approval_command` passes the approval gate before its handler runs (agent/toolcalls.py),
    so its handler never checks approvals itself; such a call always runs alone.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    read_only: bool = False
    path_arg: str | None = None
    exclusive: bool = False
    toolset: str = "core"
    guidance: tuple[str, ...] = ()  # sentences for the system prompt; shared ones are said once
    # The shell command this call would run, for the approval gate.
    approval_command: Callable[[dict[str, Any]], str | None] | None = None
    # A write with no shell command to judge (an MCP tool's): what the human is shown when the gate asks.
    approval_write: Callable[[dict[str, Any]], str] | None = None
    # Seconds this call may run before its turn gives up on it; None: TOOL_TIMEOUT_SECONDS. For tools whose
    # arguments set their own time limit (terminal's `timeout`), so the batch never cuts them short.
    deadline: Callable[["ToolContext", dict[str, Any]], float] | None = None
    # The call asks the user and waits (clarify): the batch parks the turn on it (agent/questions.py).
    asks_user: bool = False
    # The call starts child agents and waits for them (delegate_task): the batch parks the turn on it
    # (agent/delegation.py).
    delegates: bool = False
    # Whether the stack can serve this tool under these settings (a backend configured); None: always.
    available: Callable[[Settings], bool] | None = None

    def seconds_allowed(self, ctx: "ToolContext", args: dict[str, Any]) -> float:
        """How long the batch waits for this call."""
        if self.deadline is None:
            return ctx.settings.tool_timeout_seconds
        try:
            return self.deadline(ctx, args)
        except HermesError:  # invalid arguments: the handler refuses them at once anyway
            return ctx.settings.tool_timeout_seconds

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def check_arguments(self, args: dict[str, Any]) -> None:
        """Refuse missing required arguments and wrong JSON types before the handler runs."""
        props = self.parameters.get("properties", {})
        missing = [name for name in self.parameters.get("required", []) if name not in args]
        if missing:
            raise InvalidInput(f"{self.name} needs the argument(s): {', '.join(missing)}.")
        for name, value in args.items():
            expected = props.get(name, {}).get("type")
            if value is None or expected not in _JSON_TYPES:
                continue
            wrong_bool = isinstance(value, bool) and expected in {"integer", "number"}
            if wrong_bool or not isinstance(value, _JSON_TYPES[expected]):
                raise InvalidInput(f"{self.name}: argument {name!r} must be of type {expected}.")


class ToolRegistry:
    """Tools by name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add a tool; a second tool with the same name is a programming error."""
        if tool.name in self._tools:
            raise ValueError(f"A tool named {tool.name!r} is already registered.")
        self._tools[tool.name] = tool
        return tool

    def add(self, tool: Tool, *, toolset: str, read_only: bool = False, path_arg: str | None = None,
            exclusive: bool = False) -> Tool:
        """Register `tool` in `toolset` with its parallel rules (see Tool): how a batch may run it."""
        return self.register(replace(tool, toolset=toolset, read_only=read_only, path_arg=path_arg,
                                     exclusive=exclusive))

    def offered(self, settings: Settings) -> "ToolRegistry":
        """The tools these settings can serve: one the stack has no backend for is never shown to the model."""
        return ToolRegistry(t for t in self._tools.values() if t.available is None or t.available(settings))

    def narrowed(self, toolsets: Iterable[str]) -> "ToolRegistry":
        """The read-only tools and those of `toolsets`: what a turn from a less trusted source may call."""
        wanted = set(toolsets)
        return ToolRegistry(t for t in self._tools.values() if t.read_only or t.toolset in wanted)

    def without(self, toolsets: Iterable[str]) -> "ToolRegistry":
        """Every tool but those of `toolsets`: what a child agent may call."""
        unwanted = set(toolsets)
        return ToolRegistry(t for t in self._tools.values() if t.toolset not in unwanted)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's schema, in registration order (stable, so prompts cache)."""
        return [tool.schema() for tool in self._tools.values()]

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

