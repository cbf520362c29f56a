"""A gated test tool: it names its command for the approval gate and only records it, never runs it."""

from __future__ import annotations

from services.worker.tools.registry import Tool

GUARDIAN_MARKER = "One word: low, high or uncertain"


def gated_tool(ran: list[str], name: str = "shell") -> Tool:
    """Like the terminal tool as the gate sees it: `approval_command` is its `command` argument."""

    def handler(ctx, args):
        ran.append(args["command"])
        return f"ran: {args['command']}"

    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    return Tool(name=name, description="records a command", parameters=schema, handler=handler, toolset="tests",
                exclusive=True, approval_command=lambda args: args.get("command"))
