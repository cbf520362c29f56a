"""Files in the workspace-as-HOME that programs run without being named on the line.

Python runs the `import` lines of every `.pth` file (and `usercustomize.py`) in the user site folder,
~/.local/lib/pythonX.Y/site-packages, at each start: any python program, pip and pytest included.
ssh runs ~/.ssh/config's ProxyCommand, LocalCommand and `Match exec` for ssh, scp, sftp and git over ssh.
"""

from __future__ import annotations

import re

SSH_CLIENTS = {"ssh", "scp", "sftp", "rsync"}
GIT_OVER_SSH = {"fetch", "pull", "push", "clone", "ls-remote", "submodule", "remote", "archive"}
SSH_COMMAND = re.compile(r"^\s*(?:ProxyCommand|LocalCommand|KnownHostsCommand|Match\s+.*?\bexec)\s*=?\s*(.+)$",
                         re.I | re.M)
PTH_IMPORT = re.compile(r"^(import[ \t].*)$", re.M)


def user_site_files(reader) -> list[str]:
    """The user-site files python would run code from at start-up."""
    out = []
    for version in reader.names_in("~/.local/lib"):
        if not version.startswith("python"):
            continue
        folder = f"~/.local/lib/{version}/site-packages"
        out += [f"{folder}/{n}" for n in reader.names_in(folder) if n.endswith(".pth") or n == "usercustomize.py"]
    return out


def pth_code(name: str, text: str) -> str:
    """What python executes of a file: a .pth's `import` lines, or the whole of usercustomize.py."""
    return "\n".join(PTH_IMPORT.findall(text)) if name.endswith(".pth") else text


def uses_ssh(name: str, git_verb: str | None) -> bool:
    return name in SSH_CLIENTS or (name == "git" and git_verb in GIT_OVER_SSH)


def ssh_commands(text: str) -> list[str]:
    """The local commands an ssh config runs."""
    return [m.group(1).strip() for m in SSH_COMMAND.finditer(text)]
