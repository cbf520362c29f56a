"""The `terminal` and `process` tools: shell commands in the user's workspace, under the sandbox.

Background processes live in this worker process's one ProcessTable: they belong to the worker
that started them and end with it (a restart or shutdown kills them), after
TERMINAL_BACKGROUND_LIFETIME_SECONDS, or on `process(action=kill)`. There is no session deletion
in the API yet, so nothing kills them per session before that.
"""

from __future__ import annotations

import shlex
from typing import Any

from services.worker.sandbox import Sandbox, process_table, run, unsandboxed_refusal
from services.worker.tools.registry import Tool, ToolContext
from shared.db import get_database
from shared.errors import Forbidden, InvalidInput, NotFound
from shared.security.paths import relative_name, resolve_inside
from shared.stores import users

DEFAULT_TIMEOUT = 180
TOOL_DEADLINE_MARGIN = 5.0  # the batch waits this long past a command's own timeout (kill and report)
DEFAULT_WAIT = 30
ACTIONS = ("list", "poll", "log", "wait", "kill")
BACKGROUND_NOTE = (
    "Runs in the background of this worker process: follow it with process(action=poll|log|wait|kill, "
    "session_id=...). It ends when the worker restarts or stops, after {lifetime:g} s, or when you kill it.")

GUIDANCE = (
    "terminal runs a bash command in your workspace (it is /workspace inside a sandbox that sees nothing "
    "else of the server); long output is cut to its head and tail and stored whole in a file you can page "
    "with read_file.",
    "Start servers and other long jobs with terminal(background=true) and follow them with process; "
    "background processes end when the worker restarts.",
)


class TerminalRefused(Forbidden):
    """The terminal may not run commands on this server as configured."""

    code = "terminal_refused"


def sandbox_for(ctx: ToolContext) -> Sandbox:
    """The configured sandbox, or a refusal when an unsandboxed terminal would serve several users."""
    sandbox = Sandbox.from_settings(ctx.settings)
    if sandbox.kind == "none":
        refusal = unsandboxed_refusal("none", users.count_users(get_database(ctx.settings.sqlalchemy_url)))
        if refusal:
            raise TerminalRefused(refusal)
    return sandbox


def workdir_of(ctx: ToolContext, workdir: Any) -> str:
    """The workspace-relative folder a command starts in ('' for the workspace itself)."""
    if workdir is None or workdir in ("", ".", "/workspace"):
        return ""
    if not isinstance(workdir, str):
        raise InvalidInput("terminal: workdir must be a path relative to the workspace.")
    if workdir.startswith("/workspace/"):
        workdir = workdir[len("/workspace/"):]  # the folder as the command itself sees it
    target = resolve_inside(ctx.workspace, workdir)
    if not target.is_dir():
        raise NotFound(f"No such folder in the workspace: {workdir}")
    name = relative_name(ctx.workspace.resolve(), target)
    return "" if name == "." else name


def timeout_of(ctx: ToolContext, asked: Any) -> tuple[float, str | None]:
    """The timeout a command gets, and a note when it is less than the model asked for."""
    settings = ctx.settings
    ceiling = settings.terminal_max_timeout_seconds
    if asked is None:
        return min(DEFAULT_TIMEOUT, ceiling), None
    if isinstance(asked, bool) or not isinstance(asked, (int, float)) or asked <= 0:
        raise InvalidInput("terminal: timeout must be a positive number of seconds.")
    if asked > ceiling:
        return ceiling, (f"timeout lowered from {asked:g} s to {ceiling:g} s, the most this server allows "
                         "(TERMINAL_MAX_TIMEOUT_SECONDS); use background=true for longer jobs")
    return float(asked), None


def wait_seconds(ctx: ToolContext, args: dict[str, Any]) -> float:
    """How long process(action=wait) waits: what the model asked, at most TERMINAL_MAX_TIMEOUT_SECONDS."""
    return max(0.0, min(float(_int(args.get("timeout"), DEFAULT_WAIT)), ctx.settings.terminal_max_timeout_seconds))


def terminal_deadline(ctx: ToolContext, args: dict[str, Any]) -> float:
    """The batch waits for a foreground command's own timeout, plus the time to kill it and report."""
    if args.get("background"):
        return ctx.settings.tool_timeout_seconds
    return timeout_of(ctx, args.get("timeout"))[0] + TOOL_DEADLINE_MARGIN


def process_deadline(ctx: ToolContext, args: dict[str, Any]) -> float:
    if args.get("action") == "wait":
        return wait_seconds(ctx, args) + TOOL_DEADLINE_MARGIN
    return ctx.settings.tool_timeout_seconds


def terminal(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Run one command in the foreground (output, exit code) or start it in the background (its id)."""
    command = args["command"]
    if not isinstance(command, str) or not command.strip():
        raise InvalidInput("terminal needs a non-empty command.")
    sandbox = sandbox_for(ctx)
    workdir = workdir_of(ctx, args.get("workdir"))
    if args.get("background"):
        view = process_table(ctx.settings).start(ctx.user_id, ctx.session_id, command, workspace=ctx.workspace,
                                                 sandbox=sandbox, workdir=workdir)
        view["note"] = BACKGROUND_NOTE.format(lifetime=ctx.settings.terminal_background_lifetime_seconds)
        return view
    timeout, lowered = timeout_of(ctx, args.get("timeout"))
    result = run(command, workspace=ctx.workspace, timeout=timeout, sandbox=sandbox, workdir=workdir,
                 cancelled=ctx.cancelled)
    output = result.output if sandbox.kind == "bwrap" else ctx.hide_paths(result.output)
    out: dict[str, Any] = {"output": output, "exit_code": result.exit_code}
    notes = [lowered] if lowered else []
    if result.cancelled:
        notes.append("the turn was cancelled: the command and all its processes were killed")
    elif result.timed_out:
        notes.append(f"timed out after {timeout:g} s: the command and all its processes were killed")
    if result.truncated:
        out["full_output"] = result.full_output_path
        notes.append(f"output cut to its head and tail; more of it is in {result.full_output_path} "
                     "(page it with read_file)")
    if result.over_quota:
        notes.append(result.over_quota)
    if notes:
        out["note"] = "; ".join(notes)
    return out


def process(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """List, poll, read, wait for or kill the user's background processes."""
    action = args["action"]
    table = process_table(ctx.settings)
    if action == "list":
        return {"processes": table.list(ctx.user_id)}
    if action not in ACTIONS:
        raise InvalidInput(f"process: action must be one of {', '.join(ACTIONS)}.")
    proc_id = args.get("session_id")
    if not isinstance(proc_id, str) or not proc_id:
        raise InvalidInput(f"process(action={action}) needs the session_id terminal(background=true) returned.")
    if action == "poll":
        return table.poll(ctx.user_id, proc_id)
    if action == "log":
        return table.log(ctx.user_id, proc_id, offset=_int(args.get("offset"), 0), limit=_int(args.get("limit"), 50_000))
    if action == "wait":
        return table.wait(ctx.user_id, proc_id, wait_seconds(ctx, args), cancelled=ctx.cancelled)
    return table.kill(ctx.user_id, proc_id)


def _int(value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput("process: offset, limit and timeout must be numbers.")
    return int(value)


def approval_command(args: dict[str, Any]) -> str | None:
    """What the gate judges: the command, run from its workdir (so the files it names are the right ones)."""
    command, workdir = args.get("command"), args.get("workdir")
    if not isinstance(command, str) or not isinstance(workdir, str) or workdir in ("", ".", "/workspace"):
        return command
    folder = workdir if workdir.startswith("/") else f"/workspace/{workdir}"
    return f"cd {shlex.quote(folder)} && {command}"


TERMINAL = Tool(
    name="terminal",
    description=(
        "Run a bash command in your workspace (mounted at /workspace in a sandbox) and return its output "
        "(stdout and stderr together) and exit code. Output past 50,000 characters keeps its head and tail and "
        "is stored whole in a workspace file. A command past its timeout is killed with all its processes. "
        "background=true starts it and returns a process id at once (see the process tool)."),
    parameters={"type": "object", "properties": {
        "command": {"type": "string", "description": "The bash command line to run."},
        "background": {"type": "boolean", "description": "Start it in the background and return its id.",
                       "default": False},
        "timeout": {"type": "number", "description": "Seconds before a foreground command is killed.",
                    "default": DEFAULT_TIMEOUT},
        "workdir": {"type": "string", "description": "Folder to run in, relative to the workspace."},
    }, "required": ["command"]},
    handler=terminal,
    approval_command=approval_command,
    deadline=terminal_deadline,
    guidance=GUIDANCE,
)
PROCESS = Tool(
    name="process",
    description=(
        "Manage your background processes started with terminal(background=true): list them, poll one (status "
        "and the end of its output), read its log (offset, limit; a negative offset counts from the end), wait "
        "for it to end (timeout seconds), or kill it."),
    parameters={"type": "object", "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "session_id": {"type": "string", "description": "The process id terminal(background=true) returned."},
        "offset": {"type": "integer", "description": "log: where to start reading."},
        "limit": {"type": "integer", "description": "log: how many characters at most."},
        "timeout": {"type": "number", "description": "wait: seconds to wait at most.", "default": DEFAULT_WAIT},
    }, "required": ["action"]},
    handler=process,
    deadline=process_deadline,
    guidance=GUIDANCE,
)
