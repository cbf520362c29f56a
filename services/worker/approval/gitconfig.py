"""The commands a git invocation is handed through its configuration (`git -c`, `git config`)."""

from __future__ import annotations

import re

# git settings whose value is a command git runs; an alias runs git itself, or the shell after `!`.
COMMAND_KEYS = re.compile(r"(?i)^(alias\.[^=]+|core\.(pager|sshcommand|editor|fsmonitor|askpass)|sequence\.editor"
                          r"|diff\.external|diff\.[^=.]+\.(textconv|command)|filter\.[^=.]+\.(clean|smudge|process)"
                          r"|credential\.helper|gpg\.program|pager\.[^=]+|merge\.[^=.]+\.driver"
                          r"|uploadpack\.packobjectshook)=(.*)$", re.S)


def git_commands(args: list[str]) -> list[str]:
    """The shell commands `git -c key=value` (or `git config key value`) hands git to run."""
    pairs = [args[i + 1] for i in range(len(args) - 1) if args[i] == "-c"]
    pairs += [a[2:] for a in args if a.startswith("-c") and len(a) > 2 and "=" in a]
    if "config" in args:
        rest = [a for a in args[args.index("config") + 1:] if not a.startswith("-")]
        if len(rest) >= 2:
            pairs.append(f"{rest[0]}={rest[1]}")
    out = []
    for pair in pairs:
        m = COMMAND_KEYS.match(pair)
        if m is None:
            continue
        value = m.group(m.lastindex).strip()
        if m.group(1).lower().startswith("alias."):
            out.append(value[1:] if value.startswith("!") else f"git {value}")
        else:
            out.append(value)
    return out
