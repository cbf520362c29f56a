"""One simple command as the gate sees it: prefixes gone, real program name, canonical options."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .words import has_glob

SHELLS = {"sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "csh", "tcsh", "fish",
          "busybox-sh"}
# An interpreter named with its version runs like the plain one: python3.11, perl5.36, ruby3.1, php8.2.
VERSIONED = re.compile(r"^(python|perl|ruby|php|lua|node)(\d[\d.]*)$")
# Programs whose only job is to run the rest of the line: (name, options taking a value).
PREFIXES = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "nohup": set(), "setsid": set(),
    "time": set(), "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"}, "stdbuf": {"-i", "-o", "-e"},
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--host", "--prompt"},
    "doas": {"-u", "-C"}, "chrt": set(), "taskset": set(), "unbuffer": set(), "caffeinate": set(),
    "timeout": {"-s", "--signal", "-k", "--kill-after"}, "busybox": set(), "chroot": set(), "flock": {"-w", "-E"},
}
# Commands whose clustered short options mean separate flags (-rf == -r -f).
CLUSTERED = {"rm", "cp", "mv", "chmod", "chown", "chgrp", "shred", "ln", "git", "sed"}
LONG_TO_SHORT = {
    "rm": {"--recursive": "-r", "--force": "-f", "-R": "-r", "--dir": "-d", "--interactive=never": "-f"},
    "chmod": {"--recursive": "-R"}, "chown": {"--recursive": "-R"}, "chgrp": {"--recursive": "-R"},
    "cp": {"--recursive": "-r", "-R": "-r", "--force": "-f"}, "mv": {"--force": "-f"},
    "sed": {"--in-place": "-i"},
}
KNOWN_PROGRAMS = ("rm", "mkfs", "dd", "shutdown", "reboot", "halt", "poweroff", "init", "kill", "sudo",
                  "chmod", "chown", "bash", "sh", "curl", "wget", "python", "python3", "perl", "shred")


@dataclass
class Cmd:
    """argv after prefix stripping; redirects as (operator, target); how it gets its stdin."""

    argv: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    sudo_flags: set[str] = field(default_factory=set)
    piped_in: bool = False

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""

    def text(self) -> str:
        """The canonical spelling every pattern is written against."""
        head = " ".join([self.name, *canonical_args(self.name, self.argv[1:])]).strip()
        return " ".join([head, *(f"{op} {target}" for op, target in self.redirects if op != "<<body")])


def program_name(word: str) -> str:
    """`/bin/rm` -> rm, `python3.11` -> python3; a glob such as `/???/r?` resolves to the known program it matches."""
    base = posixpath.basename(word.rstrip("/")) or word
    if m := VERSIONED.match(base):
        return "python3" if m.group(1) == "python" and m.group(2).startswith("3") else m.group(1)
    if has_glob(base):
        for known in KNOWN_PROGRAMS:
            if fnmatchcase(known, base):
                return known
    return base


def canonical_args(name: str, args: list[str]) -> list[str]:
    """Split clustered short flags and spell long ones short, for commands where that is safe."""
    table = LONG_TO_SHORT.get(name, {})
    out: list[str] = []
    for arg in args:
        arg = table.get(arg, arg)
        if name in CLUSTERED and len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and arg[1:].isalpha():
            out += [table.get(f"-{c}", f"-{c}") for c in arg[1:]]
        else:
            out.append(arg)
    if name == "rm":  # the order of rm's options never matters
        flags = sorted({a for a in out if a.startswith("-") and a != "--"})
        return flags + [a for a in out if not a.startswith("-") or a == "--"]
    return out


def split_string(argv: list[str], i: int) -> bool:
    """`env -S 'a b'` (or -S'a b', --split-string=…) runs `a b`: put its words in place of the option."""
    opt = argv[i]
    if opt in ("-S", "--split-string") and i + 1 < len(argv):
        value, used = argv[i + 1], 2
    elif opt.startswith("--split-string="):
        value, used = opt.split("=", 1)[1], 1
    elif opt.startswith("-S") and len(opt) > 2:
        value, used = opt[2:], 1
    else:
        return False
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    argv[i:i + used] = words
    return True


def strip_prefixes(argv: list[str]) -> tuple[list[str], list[str], set[str]]:
    """Remove env/sudo/exec/... wrappers and leading VAR=value words; returns (argv, prefixes, sudo flags)."""
    rest, prefixes, sudo_flags = unwrap(argv)
    return ([program_name(rest[0]), *rest[1:]] if rest else rest), prefixes, sudo_flags


def unwrap(argv: list[str]) -> tuple[list[str], list[str], set[str]]:
    """strip_prefixes, with the program still spelled as the line spells it (`./s.sh`, `/bin/rm`)."""
    prefixes: list[str] = []
    sudo_flags: set[str] = set()
    argv = list(argv)
    i = 0
    while i < len(argv):
        word = argv[i]
        name = program_name(word)
        if "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            i += 1
            continue
        if name not in PREFIXES:
            break
        prefixes.append(name)
        takes_value = PREFIXES[name]
        i += 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
            opt = argv[i]
            if name == "env" and split_string(argv, i):
                break
            if name == "sudo":
                sudo_flags |= ({opt} if opt.startswith("--") else {f"-{c}" for c in opt[1:]})
            i += 2 if opt in takes_value else 1
            if opt == "--":
                break
        if name == "timeout" and i < len(argv):
            i += 1  # the duration
        if name in ("nice", "chrt", "taskset") and i < len(argv) and argv[i].lstrip("-").isdigit():
            i += 1
        if name == "chroot" and i < len(argv):
            i += 1  # the new root
    return argv[i:], prefixes, sudo_flags
