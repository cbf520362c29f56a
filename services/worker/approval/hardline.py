"""The floor: commands never run, in any mode, whatever a human or a model says."""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase

from .commands import Cmd, canonical_args
from .parse import Analysis
from .words import has_glob

SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc",
               "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib", "/usr/local",
               "/usr/sbin", "/var/lib")
HOME_SPELLINGS = {"~", "~/", "~/*", "~/.", "~root", "~root/"}
BLOCK_DEVICE = re.compile(r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|disk/|mapper/|sr\d)")
POWER = {"shutdown", "reboot", "halt", "poweroff"}
# Used only when the command could not be parsed: any mention of these fails closed.
RAW_TOKENS = re.compile(
    r"\b(rm|mkfs\S*|mke2fs|dd|shutdown|reboot|halt|poweroff|init|telinit|kill|sudo|shred|wipefs)\b"
    r"|:\s*\(\s*\)|/dev/(sd|hd|vd|xvd|nvme|mmcblk)|\bfork\b", re.I)
RAW_FORK_BOMB = re.compile(r"(\S+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&|\bfork\s+while\s+fork\b")


def protected(target: str, cwd: str | None = None) -> str | None:
    """What a delete target really names, when that is /, a system folder or the home folder."""
    t = target.strip()
    if t in HOME_SPELLINGS or re.fullmatch(r"~/*(\*|\.)?/*", t):
        return "the home folder"
    if not t.startswith("/") and cwd:
        t = posixpath.join("~" if cwd.startswith("~") else cwd, t)
    if t.startswith("~/"):
        return _in_home(t)
    if not t.startswith("/"):
        return None
    path = re.sub(r"/+", "/", t)
    path = posixpath.normpath(path)
    if path.endswith("/*"):
        path = path[:-2] or "/"
    if path in ("/", "/*", "/.", "/.."):
        return "/"
    if path in SYSTEM_DIRS:
        return path
    if has_glob(path):
        for candidate in ("/", *SYSTEM_DIRS):
            if fnmatchcase(candidate, path) or fnmatchcase(candidate + "/", path):
                return candidate
    return None


def _in_home(target: str) -> str | None:
    """A target under ~ that is the home folder itself, or climbs above it (~/.., ~/a/../..)."""
    if re.fullmatch(r"~/*(\*|\.)?/*", target):
        return "the home folder"
    path = posixpath.normpath("/home-folder/" + target[2:])
    if path == "/home-folder":
        return "the home folder"
    return None if path.startswith("/home-folder/") else "a folder above the home folder"


def _recursive_delete(cmd: Cmd) -> str | None:
    args = canonical_args("rm", cmd.argv[1:])
    flags = {a for a in args if a.startswith("-")}
    if not flags & {"-r", "-R", "--recursive"} and "--no-preserve-root" not in flags:
        return None
    cwd = getattr(cmd, "cwd", None)
    for target in (a for a in args if not a.startswith("-")):
        named = protected(target, cwd)
        if named:
            return f"recursive delete of {named}"
    return None


def _find_delete(cmd: Cmd) -> str | None:
    args = cmd.argv[1:]
    if "-delete" not in args and not any(a in ("-exec", "-execdir") for a in args):
        return None
    runs_rm = "-delete" in args or any(a in ("rm", "/bin/rm", "shred") for a in args)
    roots = [a for a in args if not a.startswith("-")][:1]
    named = protected(roots[0], getattr(cmd, "cwd", None)) if roots and runs_rm else None
    return f"recursive delete of {named}" if named else None


def _kill_all(cmd: Cmd) -> bool:
    """kill -1, kill -9 -1, kill -s KILL -1, kill -- -1, kill -9 -000001: signal every process."""
    args, i, signal_seen = cmd.argv[1:], 0, False
    if len(args) == 1 and _minus_one(args[0]):
        return True
    while i < len(args):
        arg = args[i]
        if arg in ("-s", "-n"):
            i, signal_seen = i + 2, True
            continue
        if arg == "--":
            return any(_minus_one(a) for a in args[i + 1:])
        if arg.startswith("-") and not signal_seen:
            signal_seen = True
        elif _minus_one(arg):
            return True
        i += 1
    return False


def _minus_one(arg: str) -> bool:
    """The pid -1 however it is spelled: kill reads a pid as a decimal integer, so -01 and -000001 are -1 too."""
    return re.fullmatch(r"-0*1", arg.strip()) is not None


def _block_write(cmd: Cmd) -> str | None:
    for op, target in cmd.redirects:
        if ">" in op and BLOCK_DEVICE.match(target):
            return f"raw write to the block device {target}"
    for arg in cmd.argv[1:]:
        if cmd.name == "dd" and arg.startswith("of=") and BLOCK_DEVICE.match(arg[3:]):
            return f"raw write to the block device {arg[3:]}"
        if cmd.name in ("tee", "cp", "shred", "wipefs", "blkdiscard") and BLOCK_DEVICE.match(arg):
            return f"raw write to the block device {arg}"
    return None


def command_floor(cmd: Cmd) -> str | None:
    """Why this one simple command is on the floor, or None."""
    name, args = cmd.name, cmd.argv[1:]
    if "sudo" in cmd.prefixes and cmd.sudo_flags & {"-S", "--stdin"} and cmd.piped_in:
        return "a password piped into sudo -S"
    if name == "rm":
        return _recursive_delete(cmd)
    if name == "find":
        return _find_delete(cmd)
    if name == "mkfs" or name.startswith("mkfs.") or name in ("mke2fs", "mkswap", "newfs"):
        return f"formatting a filesystem ({name})"
    if name in POWER:
        return f"{name} of the machine"
    if name in ("init", "telinit") and args[:1] and args[0] in ("0", "6"):
        return f"{name} {args[0]} (halt or reboot)"
    if name == "systemctl" and any(a in ("poweroff", "reboot", "halt", "kexec", "emergency", "rescue") for a in args):
        return "systemctl power action"
    if name == "kill" and _kill_all(cmd):
        return "kill -1 (signals every process)"
    return _block_write(cmd)


def floor(analysis: Analysis) -> str | None:
    """The first hard-line reason in an analysed command line, or None."""
    if analysis.too_deep:
        return "nesting too deep to check"
    for cmd in analysis.commands:
        reason = command_floor(cmd)
        if reason:
            return reason
    for name in analysis.forking_functions:
        if any(c.name == name for c in analysis.commands):
            return f"fork bomb (function {name} calls itself in the background)"
    for text in analysis.texts:
        if RAW_FORK_BOMB.search(text):
            return "fork bomb"
    if "unbalanced quotes" in analysis.notes:
        for text in analysis.texts:
            m = RAW_TOKENS.search(text)
            if m:
                return f"could not be parsed and mentions {m.group(0)!r}"
    return None
