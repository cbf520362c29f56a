"""The terminal's sandbox: one user's command sees only that user's workspace (bubblewrap).

Used by the `terminal` and `process` tools (services/worker/tools/terminal.py).
"""

from .background import ProcessNotFound, ProcessTable, TooManyProcesses, process_table, stop_background
from .launcher import MOUNT_POINT, Sandbox, SandboxUnavailable, check
from .limits import Limits, clean_env
from .policy import unsandboxed_refusal
from .runner import Result, run

__all__ = ["MOUNT_POINT", "Limits", "ProcessNotFound", "ProcessTable", "Result", "Sandbox",
           "SandboxUnavailable", "TooManyProcesses", "check", "clean_env", "process_table", "run", "stop_background",
           "unsandboxed_refusal"]
