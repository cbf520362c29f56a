"""The terminal's sandbox: one user's command sees only that user's workspace (bubblewrap).

Not yet wired to a tool: the terminal tool arrives with the approval gate's parking.
"""

from .background import ProcessNotFound, ProcessTable, TooManyProcesses
from .launcher import MOUNT_POINT, Sandbox, SandboxUnavailable, check
from .limits import Limits, clean_env
from .policy import unsandboxed_refusal
from .runner import Result, run

__all__ = ["MOUNT_POINT", "Limits", "ProcessNotFound", "ProcessTable", "Result", "Sandbox",
           "SandboxUnavailable", "TooManyProcesses", "check", "clean_env", "run", "unsandboxed_refusal"]
