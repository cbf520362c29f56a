"""Whether the terminal may run at all with the configured sandbox."""

from __future__ import annotations


def unsandboxed_refusal(kind: str, user_count: int) -> str | None:
    """The refusal the terminal gives when TERMINAL_SANDBOX=none serves more than one user, else None."""
    if kind == "none" and user_count > 1:
        return (f"the terminal is off: TERMINAL_SANDBOX=none runs commands without a sandbox, which is "
                f"allowed on a single-user box only, and this server has {user_count} users; "
                "set TERMINAL_SANDBOX=bwrap (apt-get install bubblewrap)")
    return None
