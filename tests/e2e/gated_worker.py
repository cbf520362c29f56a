"""A worker process with one extra tool, `shell`, gated like the terminal: it only records its command.

`celery -A tests.e2e.gated_worker worker -Q turns` runs the real worker tasks; the tool appends each
command it is allowed to "run" to DATA_DIR/gated-calls.log, so a test sees what ran and what never did.
Only worker processes import this module; the tool joins the process's registry as the worker starts.
"""

from __future__ import annotations

from pathlib import Path

from celery import signals

from shared.config import get_settings
from services.worker.runtime import get_runtime
from services.worker.tasks import app  # noqa: F401  (the real tasks)
from services.worker.tools.registry import Tool

CALLS_FILE = "gated-calls.log"


def _record(ctx, args):
    with open(Path(get_settings().data_dir) / CALLS_FILE, "a") as out:
        out.write(args["command"] + "\n")
    return f"ran: {args['command']}"


SHELL = Tool(name="shell", description="Run a shell command (recorded only).",
             parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
             handler=_record, approval_command=lambda args: args.get("command"))


@signals.worker_init.connect
def _add_shell(**_) -> None:
    """Before the worker takes a task, its runtime's registry gains the shell, as a tool added at run time would."""
    get_runtime().tools.add(SHELL, toolset="tests", exclusive=True)
