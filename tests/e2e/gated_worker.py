"""A worker process with one extra tool, `shell`, gated like the terminal: it only records its command.

`celery -A tests.e2e.gated_worker worker -Q turns` runs the real worker tasks; the tool appends each
command it is allowed to "run" to DATA_DIR/gated-calls.log, so a test sees what ran and what never did.
Only worker processes import this module: importing it registers the tool into the process's registry.
"""

from __future__ import annotations

from pathlib import Path

from shared.config import get_settings
from services.worker.tasks import app  # noqa: F401  (the real tasks)
from services.worker.tools.registry import Tool, register

CALLS_FILE = "gated-calls.log"


def _record(ctx, args):
    with open(Path(get_settings().data_dir) / CALLS_FILE, "a") as out:
        out.write(args["command"] + "\n")
    return f"ran: {args['command']}"


register(Tool(name="shell", description="Run a shell command (recorded only).",
              parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
              handler=_record, toolset="tests", exclusive=True, approval_command=lambda args: args.get("command")))
