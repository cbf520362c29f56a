"""Shell commands a program is handed in its options and runs itself: git settings, tar's hooks, vi's `!`,
an alias's value, watch's command. Each is walked like a line of its own."""

from __future__ import annotations

import re

from .gitconfig import git_commands

TAR_COMMAND_OPTIONS = ("--to-command=", "--use-compress-program=", "--checkpoint-action=exec=", "--info-script=",
                       "--new-volume-script=", "--rsh-command=")
EDITORS = {"vi", "vim", "nvim", "ex", "view", "vimdiff", "rvim"}
WATCH_VALUED = {"-n", "--interval", "-d", "--differences", "-q", "--equexit"}


def handed_commands(name: str, args: list[str]) -> list[tuple[str, str]]:
    """(note, shell text) for each command this program would run from its own arguments."""
    if name == "git":
        return [("runs a nested shell command (git config)", value) for value in git_commands(args)]
    if name in ("tar", "gtar", "bsdtar"):
        return [("runs a nested shell command (tar)", value) for value in _tar(args)]
    if name in EDITORS:
        return [("runs a nested shell command (editor)", value) for value in _editor(args)]
    if name == "alias":
        return [("", value) for arg in args if "=" in arg for value in [arg.split("=", 1)[1]] if value]
    if name == "watch":
        rest = skip_options(args, WATCH_VALUED)
        return [("", " ".join(rest))] if rest else []
    return []


def _tar(args: list[str]) -> list[str]:
    out = [a.split("=", 1)[1] if not a.startswith("--checkpoint") else a.split("exec=", 1)[1]
           for a in args if a.startswith(TAR_COMMAND_OPTIONS)]
    out += [args[i + 1] for i in range(len(args) - 1) if args[i] in ("-I", "-F", "--to-command",
                                                                      "--use-compress-program", "--rsh-command")]
    return out


def _editor(args: list[str]) -> list[str]:
    """vi -c '!cmd' / +'!cmd' / -c 'call system(…)': the shell commands an editor's startup runs."""
    scripts = [args[i + 1] for i in range(len(args) - 1) if args[i] in ("-c", "--cmd")]
    scripts += [a[1:] for a in args if a.startswith("+") and len(a) > 1]
    out = []
    for script in scripts:
        m = re.match(r"^\s*:?\s*(?:silent!?\s*)?(?:r(?:ead)?\s*)?!(.*)$", script)
        if m:
            out.append(m.group(1))
        out += re.findall(r"system\s*\(\s*['\"](.+?)['\"]", script)
        if not m and re.search(r"\b(system|!|terminal|py3?|python3?|lua|perl|ruby)\b", script):
            out.append("eval " + "'" + script.replace("'", "") + "'")
    return out


def skip_options(args: list[str], with_value: set[str]) -> list[str]:
    """The arguments after a program's leading options (`with_value` take the next word)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in with_value else 1
    return args[i:]
