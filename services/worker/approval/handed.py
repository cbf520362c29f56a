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
    if (name == "hash" and "-p" in args) or (name == "enable" and any(a.startswith("-") and "f" in a for a in args)):
        return [(f"runs a file the gate cannot read ({name} {' '.join(args)[:60]}: loaded under another name)", "")]
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


# Variables whose value is a command a program runs, and variables that make programs load other code.
COMMAND_VARIABLES = {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "EDITOR", "VISUAL",
                     "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "BROWSER", "MANPAGER",
                     "LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND", "GIT_PROXY_COMMAND", "RSYNC_RSH"}
LOADING_VARIABLES = {"BASH_ENV", "ENV", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_PRELOAD", "PYTHONSTARTUP", "PYTHONHOME",
                     "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "GIT_CONFIG_GLOBAL",
                     "GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_DIR", "GIT_EXEC_PATH",
                     "GIT_TEMPLATE_DIR", "HOME", "XDG_CONFIG_HOME", "SHELLOPTS", "BASHOPTS", "PS4", "GCONV_PATH",
                     "MAKEFLAGS", "MAKEFILES"}


def environment(assignments: dict[str, str]) -> list[tuple[str, str]]:
    """(note, shell text) for variables set on the line that make programs run or load something else."""
    out = []
    for name, value in assignments.items():
        if name in COMMAND_VARIABLES and value:
            out.append(("", value))
        elif name in LOADING_VARIABLES or (name == "PATH" and not _system_path(value)):
            out.append((f"the line sets a variable that makes programs load other code ({name})", ""))
    return out


def _system_path(value: str) -> bool:
    """A PATH made only of system folders (and the old PATH): no workspace, relative or scratch folder."""
    return all(part in ("$PATH", "${PATH}") or (part.startswith("/") and not part.startswith(("/workspace", "/tmp")))
               for part in value.split(":"))


def skip_options(args: list[str], with_value: set[str]) -> list[str]:
    """The arguments after a program's leading options (`with_value` take the next word)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in with_value else 1
    return args[i:]
