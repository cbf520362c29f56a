"""What git runs from the workspace's own files: command-valued settings in its config files and its hooks.

HOME is the workspace inside the sandbox, so `~/.gitconfig` is a workspace file too; with `.git/config`
and `.git/hooks/*` it is written by the same model that runs `git`, and git runs what they name.
"""

from __future__ import annotations

import posixpath
import re

from .gitconfig import git_commands

USER_CONFIGS = ("~/.gitconfig", "~/.config/git/config")
HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
         "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
         "post-rewrite", "reference-transaction", "post-index-change", "fsmonitor-watchman", "pre-auto-gc",
         "sendemail-validate", "push-to-checkout")
SECTION = re.compile(r'^\s*\[\s*([\w.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
ENTRY = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:=\s*(.*))?$")
GLOBAL_VALUED = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}


def config_pairs(text: str) -> list[tuple[str, str]]:
    """(section[.subsection].key, value) for each entry of a git config file, lower-cased where git ignores case."""
    pairs, section = [], ""
    for raw in text.replace("\\\n", "").split("\n"):
        line = re.sub(r"\s[#;].*$", "", raw)
        if m := SECTION.match(line):
            section = m.group(1).lower() + (f".{m.group(2)}" if m.group(2) is not None else "")
            line = m.group(3)
        if (m := ENTRY.match(line)) and section:
            value = (m.group(2) or "true").strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            pairs.append((f"{section}.{m.group(1).lower()}", value))
    return pairs


def subcommand(args: list[str]) -> tuple[str | None, str | None]:
    """git's subcommand and its -C folder."""
    i, folder = 0, None
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            folder = args[i + 1]
        i += 2 if args[i] in GLOBAL_VALUED else 1
    return (args[i] if i < len(args) else None), folder


def commands_from(pairs: list[tuple[str, str]], used: str | None) -> list[str]:
    """The shell commands the config hands git: every command-valued setting, and only the alias being used."""
    out = []
    for key, value in pairs:
        if key.startswith("alias.") and key[6:] != (used or "").lower():
            continue
        out += git_commands(["-c", f"{key}={value}"])
    return out


def included(pairs: list[tuple[str, str]], config_path: str) -> list[str]:
    """The files a config includes (include.path, includeIf.*.path), relative to its own folder."""
    here = posixpath.dirname(config_path)
    return [value if value.startswith(("/", "~")) else posixpath.join(here, value)
            for key, value in pairs if key.startswith(("include.", "includeif.")) and key.endswith(".path")]


def hooks_folder(pairs: list[tuple[str, str]], repository: str) -> str:
    """core.hooksPath (relative to the work tree), else .git/hooks."""
    custom = [value for key, value in pairs if key == "core.hookspath"]
    if not custom:
        return posixpath.join(repository, ".git", "hooks")
    return custom[-1] if custom[-1].startswith(("/", "~")) else posixpath.join(repository, custom[-1])


def repositories(folder: str, mount: str) -> list[str]:
    """The folder and each parent up to the workspace: where git looks for .git (and pytest for conftest.py)."""
    out = []
    while folder == mount or folder.startswith(mount + "/"):
        out.append(folder)
        folder = posixpath.dirname(folder)
    return out
